"""The benchmarks still measure what they say, at a tiny size: every contender does the whole work, and every
row has its value, baseline and target. No figure is asserted: speed is the benchmarks' business."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks import __main__ as cli
from benchmarks import concurrency, memory, overhead, routes, tap
from benchmarks._payloads import CHUNKINGS, make
from benchmarks._report import Row

pytest.importorskip("httpx2", reason="the SDK contenders run on httpx2, which needs Python 3.11")

TINY: dict[str, int] = {"text": 30, "reasoning": 3, "tool_args": 60}


def _whole(rows: list[Row]) -> None:
    names = [r.name for r in rows]
    assert len(names) == len(set(names)), "two rows of one name"
    for r in rows:
        assert math.isfinite(r.value) and r.value >= 0, r
        if r.baseline is not None:
            assert math.isfinite(r.baseline) and r.baseline >= 0, r


def _targets(rows: list[Row]) -> dict[str, float]:
    return {r.name: r.target for r in rows if r.target is not None}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_section_1_contenders_read_the_whole_stream(fmt: str, chunking: str, backend: str) -> None:
    payload = make(fmt, **TINY)
    json_lines = sum(
        1
        for frame in payload.frames
        for line in frame.split(b"\n")
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
    )

    async def each() -> dict[str, Any]:
        warnings.simplefilter("ignore")
        return {name: await run() for name, run in overhead._contenders(payload, chunking, backend).items()}

    counts = anyio.run(each, backend=backend)
    assert counts["floor"] == json_lines
    expected = {"floor", "ours"} | ({"sdk", "wrap"} if backend == "asyncio" else set())
    if backend == "asyncio" and fmt == "anthropic":
        expected |= {"sdk_items", "wrap_items"}
    assert set(counts) == expected
    # wrap() reads the same events as open_stream, whether from the body (wrap) or from the SDK's items.
    assert counts["ours"] > 0
    for wrapped in ("wrap", "wrap_items"):
        if wrapped in counts:
            assert counts[wrapped] == counts["ours"], wrapped
    for sdk in ("sdk", "sdk_items"):
        if sdk in counts:
            assert counts[sdk] >= json_lines - 2, sdk  # the SDKs skip [DONE] and Anthropic's ping


def _check_scope_rows(rows: list[Row]) -> None:
    """A scope's cost per read is the difference of two noisy timings: its sign means nothing, so the row says
    the difference of what it measured, and "within noise" where that is not above zero."""
    for r in rows:
        scope_us, bare_us = r.extra["scope_us"], r.extra["bare_us"]
        assert scope_us > 0 and bare_us == r.baseline and bare_us > 0, r
        assert r.value == max(0.0, scope_us - bare_us), r
        assert (r.value == 0) is ("within noise" in r.note), r


def test_section_1_rows_and_targets() -> None:
    rows = overhead.measure(1, sizes=TINY)
    _whole(rows)
    scopes = [r for r in rows if r.name.startswith("cancel scope")]
    assert len(scopes) == 4
    _check_scope_rows(scopes)
    contenders = [r for r in rows if r not in scopes]
    assert all(r.value > 0 and (r.baseline or 0) > 0 for r in contenders), "a contender did no work"
    targets = _targets(rows)
    for fmt in ("openai-chat", "anthropic"):
        sdk = "openai SDK" if fmt == "openai-chat" else "anthropic SDK"
        for chunking in CHUNKINGS:
            label = f"{fmt} {chunking}"
            assert targets[f"{label}: open_stream vs httpx floor"] == 2.0
            assert targets[f"{label} [trio]: open_stream vs httpx floor"] == 2.0
            assert targets[f"{label}: wrap({sdk}) vs bare"] == 1.10
            if fmt == "openai-chat":
                assert targets[f"{label}: open_stream vs {sdk}"] == 0.5
            else:
                assert targets[f"{label}: wrap(MessageStream) vs bare"] == 1.10
    assert len(targets) == 16


def test_section_1_a_scope_cost_below_the_noise_is_said_so() -> None:
    """As on a loaded machine: the plain scope measured cheaper than the bare checkpoint."""
    rows = overhead.scope_rows("asyncio", {"bare": 2.0e-6, "plain": 1.01e-6, "deadline": 3.5e-6})
    _whole(rows)
    _check_scope_rows(rows)
    plain, deadline = rows
    assert plain.value == 0.0 and math.isclose(deadline.value, 1.5)
    assert "within noise" in plain.note and "-0.99" in plain.note
    assert "within noise" not in deadline.note


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_section_6_contenders_read_the_whole_stream(fmt: str, chunking: str) -> None:
    payload = make(fmt, **TINY)
    counts, seen = anyio.run(tap.read_once, payload, chunking)
    assert set(counts) == set(tap.CONTENDERS)
    assert tap.problems(payload, counts, seen) == []
    # Spelled out: the SDK read every item under every layer, and every layer saw every byte.
    data_lines = sum(
        1
        for frame in payload.frames
        for line in frame.split(b"\n")
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
    )
    assert counts["sdk"] >= data_lines - 2  # the SDKs skip [DONE] and Anthropic's ping
    for name in set(tap.CONTENDERS) - {"sdk", "alone"}:
        assert counts[name] == counts["sdk"], name
    assert (seen["relay"].bytes, seen["parse"].bytes) == (payload.size, payload.size)
    assert seen["parse"].data_lines == data_lines
    for name in ("scopeless", "wrapper", "sse", "adapter", "tap", "alone"):
        assert seen[name].record["transport"]["bytes_received"] == payload.size, name
    # The whole tap (as a user builds it, and fed directly) drove the machine to the terminal event.
    for name in ("tap", "alone"):
        record = seen[name].record
        assert record["outcome"]["class"] == "completed", name
        assert sum(record["stream_events"].values()) > 0, name
    # The check itself catches a contender that fell short.
    assert tap.problems(payload, {**counts, "adapter": counts["sdk"] - 1}, seen)
    seen["sse"].record = None
    assert tap.problems(payload, counts, seen) == ["sse: no record reached the sink"]


def test_section_6_rows_and_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    measure = tap.measure
    monkeypatch.setattr(tap, "measure", lambda repeat, sizes=None: measure(repeat, sizes=TINY))
    path = tmp_path / "results.json"
    assert cli.main(["--only", "6", "--repeat", "1", "--json", str(path)]) == 0
    assert tap.SECTION in capsys.readouterr().out
    results = json.loads(path.read_text())["results"]
    rows = [Row(**{k: v for k, v in r.items() if k not in ("ratio", "met")}) for r in results]
    _whole(rows)
    assert all(r.value > 0 and (r.baseline or 0) > 0 for r in rows), "a contender did no work"
    assert len(rows) == 4 * (3 + len(tap.LAYERS))  # per payload: the target, least parse, each layer, alone
    targets = _targets(rows)
    assert targets == {
        f"{fmt} {chunking}: {sdk} + tap vs bare": {"openai-chat": 1.10, "anthropic": 1.20}[fmt]
        for fmt, sdk in tap.SDKS.items()
        for chunking in CHUNKINGS
    }
    for r in rows:
        assert r.extra["cpu_us_per_event"].keys() == set(tap.CONTENDERS), r.name
        assert len(r.extra["tap_ratio_per_round"]) == 1, r.name


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_section_7_contenders_read_the_same_stream(backend: str) -> None:
    payload = make("anthropic", **TINY)

    async def each() -> dict[str, int]:
        return {name: await run() for name, run in routes.contenders(payload).items()}

    counts = anyio.run(each, backend=backend)
    assert set(counts) == {"bare", "plain", "routes"}
    assert counts["bare"] > 0 and len(set(counts.values())) == 1, counts


def test_section_7_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    measure = routes.measure
    small = {"formats": ("anthropic",), "sizes": TINY}
    monkeypatch.setattr(routes, "measure", lambda repeat, sizes=None: measure(repeat, **small))
    monkeypatch.setattr(routes, "BATCH_S", 0.0)  # one stream a sample
    path = tmp_path / "results.json"
    assert cli.main(["--only", "7", "--repeat", "1", "--json", str(path)]) == 0
    assert routes.SECTION in capsys.readouterr().out
    results = json.loads(path.read_text())["results"]
    rows = [Row(**{k: v for k, v in r.items() if k not in ("ratio", "met")}) for r in results]
    _whole(rows)
    assert all(r.value > 0 and (r.baseline or 0) > 0 for r in rows), "a contender did no work"
    assert len(rows) == 2 * 2 * 3  # sizes, backends; CPU, wall, what retrying() adds
    targets = _targets(rows)
    assert len(targets) == 4 and set(targets.values()) == {routes.TARGET}
    assert all("Routes vs one open_attempt" in name for name in targets)


def test_sections_3_and_5_complete_every_stream_and_fire_every_watchdog() -> None:
    backends = ("asyncio", "trio")
    with concurrency.provider() as base_url:
        rows_3, raw_3 = concurrency.concurrency_rows(base_url, (10,), backends, steps=2, traced=False)
        rows_5, raw_5 = concurrency.watchdog_rows(base_url, 20, backends, idle_timeout=0.3, steps=2)
    _whole(rows_3 + rows_5)
    # Section 5 counts a run as completed when its idle watchdog fired once the stall began, and anything
    # else (a watchdog that fired in a gap between chunks too) as a failure.
    for result in raw_3 + raw_5:
        streams = result["config"]["streams"]
        assert (result["completed"], result["failed"]) == (streams, 0), result
        assert result["events"] > 0, result
    assert [len(r["lateness_ms"]) > 0 for r in raw_5] == [True] * 4
    met = {r.name: r.met for r in rows_3 + rows_5}
    for backend in backends:
        assert met[f"10 streams [{backend}]: completed"] is True
        assert met[f"20 streams [{backend}]: idle timeouts fired"] is True


def test_section_5_does_not_count_a_watchdog_that_fired_before_the_stall() -> None:
    # Chunks come 250 ms apart: an idle timeout of 0.1 s fires in the first gap, never at the stall it times.
    with concurrency.provider() as base_url:
        rows, raw = concurrency.watchdog_rows(base_url, 20, ("asyncio",), idle_timeout=0.1, steps=3)
    assert [r["failures"] for r in raw] == [{"idle_timeout_before_the_stall": n} for n in (10, 20)]
    met = {r.name: r.met for r in rows}
    assert met["20 streams [asyncio]: idle timeouts fired"] is False
    assert met["20 streams [asyncio]: lateness max"] is False  # none timed: nan, never 0 ms


def test_section_4_record_stays_the_same_size() -> None:
    rows = memory.measure((1_000, 5_000), traced_max=5_000)
    _whole(rows)
    sizes = [r for r in rows if r.name.endswith("record size")]
    assert [r.extra["text_delta_count"] for r in sizes] == [1_000, 5_000]
    assert all(r.met for r in sizes), sizes


def test_the_command_writes_every_row_to_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.json"
    assert cli.main(["--quick", "--only", "2", "--repeat", "1", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2. machine per event" in out and "targets met" in out
    written = json.loads(path.read_text())
    assert written["quick"] is True
    assert written["machine"]["packages"]["streamfsm"]
    names = [row["name"] for row in written["results"]]
    assert names == ["compiled table, per event", "build one machine"]
    compiled = written["results"][0]
    assert compiled["target"] == 0.05 and compiled["ratio"] is not None and compiled["met"] is not None


def test_relay_section_records_every_stream() -> None:
    pytest.importorskip("uvicorn", reason="the relay section needs uvicorn (the relay extra)")
    from benchmarks import relay

    rows = {row.name: row for row in relay.measure(12, deltas=6, steps=2, interval_ms=5, rounds=2)}
    assert rows["completed streams"].value == rows["completed streams"].baseline == 24
    assert rows["streams recorded (audit log)"].value == 48  # the long rounds and the fit's short ones
    for name in ("CPU per stream (fit)", "CPU per event (fit)"):
        assert "added by streamfsm" in rows[name].note
        assert (rows[name].baseline is not None) == rows["CPU per relayed event (median)"].extra["valid"]
    cpu = rows["CPU per relayed event (median)"]
    assert cpu.value > 0 and cpu.target == (1.3 if cpu.extra["valid"] else None)
    assert "min / median / max over 2 rounds" in cpu.note
    # a ratio is printed only when it can be read: else the note says why not
    assert (cpu.baseline is not None) == cpu.extra["valid"]
    assert (cpu.baseline is None) == ("INVALID" in cpu.note)


def test_logs_section_counts_every_record_of_every_writer() -> None:
    from benchmarks import logs

    rows = {row.name: row for row in logs.measure(3, 40, 16 << 10)}
    assert (rows["records lost"].value, rows["lines torn"].value, rows["records doubled"].value) == (0, 0, 0)
    stall = rows["event loop's longest stall"]
    assert stall.value >= 0 and stall.baseline is not None and stall.baseline >= 0


def test_store_rows_at_a_tiny_size() -> None:
    from benchmarks import store

    rows = store.measure((300,), ("sqlite",), repeat=1, sink_records=20, default_records=30)
    _whole(rows)
    names = {r.name for r in rows}
    assert "sqlite 300: errors page: groups, all runs" in names
    assert "sqlite: keeping the index, CPU per record" in names
    # the default setup: its indexing against the two ways before it, its first view against the old one
    first = next(r for r in rows if r.name == "sqlite 300: default setup, first view of the errors page")
    assert first.baseline is not None and first.baseline > 0
    assert sum("default setup, indexing CPU per run" in name for name in names) == 2
    assert all(r.value > 0 for r in rows), "a query did no work"
    # the commands over a log are the baseline at the smallest size
    assert {r.name for r in rows if r.baseline is not None} >= {
        "sqlite 300: report --json",
        "sqlite 300: diagnose --request-id",
    }
    assert _targets(rows)["sqlite 300: errors page: groups, all runs"] == store.TARGET_MS


def test_store_synthetic_rows_are_whole_records() -> None:
    import json
    import zlib

    from benchmarks import store
    from streamfsm.store._backends import COLUMNS

    rows = list(store.synthetic_rows(50))
    assert all(len(row) == len(COLUMNS) + 1 for row in rows)  # and the record
    assert len({row[0] for row in rows}) == 50
    assert [row[1] for row in rows] == sorted(row[1] for row in rows)
    record = json.loads(zlib.decompress(rows[0][-1]))
    assert record["schema"].startswith("streamfsm.run/")


def test_records_section_reads_against_the_json_floor() -> None:
    from benchmarks import records

    rows = records.measure(12, rounds=1)
    assert [row.name for row in rows] == [
        "json.loads per line (floor), CPU per record",
        "read_records, CPU per record",
        "streamfsm report, CPU per record",
        "streamfsm diagnose (the last record), CPU per record",
    ]
    assert all(row.value > 0 for row in rows)
    assert rows[0].baseline is None and all(row.baseline == rows[0].value for row in rows[1:])


def test_relay_layers_rows_at_a_tiny_size() -> None:
    from benchmarks import relay_layers

    rows = relay_layers.measure(5, rounds=1)
    assert [row.name for row in rows] == [
        "httpx client, in-memory upstream (floor)",
        "+ the tap (run and record, no sink)",
        "+ the relay's ASGI exchange (no sink, metrics or journal)",
        "+ the metrics",
        "+ the audit log's record line",
        "+ the journal's begin line (the whole relay)",
        "+ a run store's index as runs end (StoreSink)",
        "the relay as built with an audit log (streamfsm relay --audit-log)",
    ]
    assert all(row.value > 0 for row in rows)
