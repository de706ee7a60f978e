"""The tap's runs build no text events (``Adapter.lean``: shared stand-ins of the same kind), and their
records are exactly what runs building every event record: over the whole scenario catalog fed as the tap
feeds it (one chunk per read), and over random streams cut at random points."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.runtime import Ids, StreamConfig
from streamfsm.tap._run import TapRun
from streamfsm.testing import SSE_FORMATS, End, Fin, Headers, Keepalive, Rst, Send, Sleep, build, catalog
from streamfsm.testing._wire import NDJSON_FORMATS
from streamfsm.wire import ReasoningDelta, TextDelta

# What differs between two runs of the same bytes: their ids and the clock.
_VOLATILE = frozenset({"trace_id", "run_id", "started_at", "timings", "t", "at_s"})


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _play(fmt: str, status: int, chunks: list[bytes], end: str, *, lean: bool) -> tuple[Any, list[Any]]:
    """A tap run fed ``chunks`` then ended (``eof``, ``rst`` or ``stop``), on an event loop (its watchdog's):
    its record without ids and times, and the events it kept."""
    return anyio.run(_fed_run, fmt, status, chunks, end, lean)


async def _fed_run(fmt: str, status: int, chunks: list[bytes], end: str, lean: bool) -> tuple[Any, list[Any]]:
    records: list[Any] = []
    run = TapRun(
        fmt,
        body={"model": "m"},
        url="http://127.0.0.1/",
        config=StreamConfig(sinks=(records.append,)),
        ids=Ids(),
    )
    if not lean:
        run._adapter.lean(False)
    events = run.keep_events()
    run.begin()
    run.connected(status, {"content-type": "text/event-stream"})
    for chunk in chunks:
        if run.done:
            break
        run.chunk(chunk)
    if not run.done:
        if end == "eof":
            run.chunk(None)
        elif end == "rst":
            run.read_failed(ConnectionResetError(104, "Connection reset by peer"))
        else:
            run.stopped(None)
    run.end()
    assert len(records) == 1
    return _plain(dict(records[0])), list(events)


def _fed(script: Iterable[Any]) -> tuple[int, list[bytes], str] | None:
    """What the tap would feed the run from a scenario's script: (status, body chunks, how it ends); None
    for a script that is no streamed response."""
    status, chunks = 0, []
    for step in script:
        if isinstance(step, Headers):
            status = step.code
        elif isinstance(step, Send):
            chunks.append(step.data)
        elif isinstance(step, Keepalive):
            chunks += [step.frame] * step.count
        elif isinstance(step, (End, Fin)):
            return status, chunks, "eof"
        elif isinstance(step, Rst):
            return status, chunks, "rst"
        elif not isinstance(step, Sleep):
            break  # a stall, raw bytes on the socket, ...: the consumer stops there
    return (status, chunks, "stop") if status else None


CASES = [
    (scenario.name, scenario.format, fed)
    for scenario in catalog()
    if scenario.format is not None and (fed := _fed(scenario.script)) is not None
]


def test_every_catalog_scenario_records_the_same_with_and_without_text_events() -> None:
    assert len(CASES) > 100
    stood_in = 0
    for name, fmt, (status, chunks, end) in CASES:
        lean, kept = _play(fmt, status, chunks, end, lean=True)
        full, _ = _play(fmt, status, chunks, end, lean=False)
        assert lean == full, name
        stood_in += sum(isinstance(e, (TextDelta, ReasoningDelta)) and not e.text for e in kept)
    assert stood_in > 100  # the lean runs did hand out stand-ins


_PART = st.one_of(
    st.tuples(st.just("text"), st.text(min_size=1, max_size=8)),
    st.tuples(st.just("reasoning"), st.text(min_size=1, max_size=8)),
    st.tuples(st.just("tool"), st.sampled_from(["get", "put"]), st.sampled_from(['{"a":1}', "{}"])),
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from((*SSE_FORMATS, *NDJSON_FORMATS)), st.lists(_PART, min_size=1, max_size=6), st.data())
def test_random_streams_cut_anywhere_record_the_same_with_and_without_text_events(
    fmt: str, parts: list[tuple[str, ...]], data: st.DataObject
) -> None:
    body = b"".join(build(fmt, parts))  # type: ignore[arg-type]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body) - 1), max_size=8))))
    stop = data.draw(st.none() | st.integers(0, len(body)))
    end = data.draw(st.sampled_from(["eof", "rst", "stop"]))
    if stop is not None:
        body = body[:stop]
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True) if body[a:b]]
    lean, _ = _play(fmt, 200, chunks, end, lean=True)
    full, _ = _play(fmt, 200, chunks, end, lean=False)
    assert lean == full
