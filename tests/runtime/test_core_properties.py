"""The run core without I/O (``RunCore``), driven directly: the catalog's wire bodies cut at random points,
with random faults, watchdog edges, aborts and local ends at random moments, on a fake clock.

Whatever happens, a run ends in exactly one terminal state, leaves a record, gives no event after its
terminal one, and says the same whatever the split points of the bytes.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.classify import AbortSource
from streamfsm.machine import INITIAL_STATE, StreamMachine, Trigger
from streamfsm.runtime import (
    DEADLINE,
    END,
    STOP,
    ConsumerEvent,
    Finish,
    ReadEnd,
    RunCore,
    StreamConfig,
    StreamFailed,
)
from streamfsm.testing import End, Fin, Headers, Rst, Send, Stall, Status, catalog, error_event, text_stream
from streamfsm.wire import adapter_for

# -- the bodies: every catalog scenario that is one response's bytes (SendRaw and Keepalive need a server) ---


@dataclass(frozen=True)
class Body:
    name: str
    fmt: str
    status: int
    headers: tuple[tuple[str, str], ...]
    data: bytes


@functools.cache
def _bodies() -> tuple[Body, ...]:
    found = []
    for scenario in catalog():
        if scenario.format is None or not scenario.streaming:
            continue
        steps = scenario.script
        if not steps or not isinstance(steps[0], (Headers, Status)):
            continue
        if not all(isinstance(step, (Headers, Status, Send, End, Fin, Rst, Stall)) for step in steps):
            continue
        head = steps[0]
        data = (
            head.body if isinstance(head, Status) else b"".join(s.data for s in steps if isinstance(s, Send))
        )
        found.append(Body(scenario.name, scenario.format, head.code, head.headers, data))
    # Built streams too: whole ones, and one broken by an in-band error after its first frames.
    for fmt in ("openai-chat", "openai-responses", "anthropic", "gemini"):
        frames = text_stream(fmt, ["Hel", "lo", " world"], reasoning=["hm"])
        sse = (("content-type", "text/event-stream"),)
        found.append(Body(f"built/{fmt}", fmt, 200, sse, b"".join(frames)))
        broken = [*frames[:2], error_event(fmt, sequence_number=2)]
        found.append(Body(f"built/{fmt}/error", fmt, 200, sse, b"".join(broken)))
    return tuple(found)


# -- one run, driven as a driver would, on a fake clock ------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# What can happen between two reads besides bytes: (kind, argument).
_FAULTS = (httpx.ReadError("reset"), httpx.RemoteProtocolError("peer closed"), OSError("broken"))
_EDGES = (Trigger.IDLE_TIMEOUT, Trigger.FIRST_TOKEN_TIMEOUT, Trigger.TOTAL_TIMEOUT)
interruptions = st.one_of(
    st.tuples(st.just("fault"), st.sampled_from(_FAULTS)),
    st.tuples(st.just("timed_out"), st.sampled_from(_EDGES)),
    st.tuples(st.just("abort"), st.sampled_from(list(AbortSource))),
    st.tuples(st.just("local_end"), st.sampled_from([None, ValueError("consumer"), KeyboardInterrupt()])),
    st.tuples(st.just("cancelled"), st.none()),
)


@dataclass
class Played:
    events: list[ConsumerEvent]
    core: RunCore
    terminal_at: list[int]  # the steps after which the run was over, in order
    failures: list[StreamFailed]


def _pieces(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _interrupt(core: RunCore, kind: str, arg: Any) -> StreamFailed | None:
    if kind == "fault":
        return core.fault(arg)
    if kind == "timed_out":
        return core.timed_out(arg)
    if kind == "abort":
        core.abort("stop", arg)  # the driver interrupts its read, which then ends as that abort
        return core.timed_out(Trigger.LOCAL_ABORT)
    if kind == "local_end":
        return core.local_end(arg)
    return core.local_end(BaseException("cancelled"), cancelled=True)


def play(
    body: Body,
    cuts: Sequence[int],
    interruption: tuple[str, Any] | None = None,
    at: int = 0,
    ticks: Sequence[float] = (0.01,),
) -> Played:
    clock = FakeClock()
    core = RunCore(
        provider=body.fmt,
        model="m",
        body={"model": "m", "stream": True},
        url="http://127.0.0.1/v1/chat/completions",
        config=StreamConfig(history_size=10_000, sinks=()),
        clock=clock,
    )
    played = Played([], core, [], [])

    def step(index: int, events: list[ConsumerEvent], failure: StreamFailed | None = None) -> None:
        if core.done and not played.terminal_at:
            played.terminal_at.append(index)
        elif played.terminal_at:
            assert not events, f"events after the terminal one: {events}"
        played.events.extend(events)
        taken = core.take_failure()
        for each in (failure, taken):
            if each is not None:
                played.failures.append(each)

    core.begin()
    core.headers(body.status, dict(body.headers), core.stream_wire(adapter_for(body.fmt)))
    pieces = _pieces(body.data, cuts)
    for index, piece in enumerate(pieces):
        if interruption is not None and index == at and not core.done:
            step(index, [], _interrupt(core, *interruption))
        clock.now += ticks[index % len(ticks)]
        core.timing.read_began(clock())
        clock.now += ticks[(index + 1) % len(ticks)]
        core.timing.read_ended()
        step(index, core.feed(piece))
    if interruption is not None and at >= len(pieces) and not core.done:
        step(len(pieces), [], _interrupt(core, *interruption))
    step(len(pieces) + 1, core.end())
    return played


def _check_one_end(played: Played) -> None:
    core = played.core
    # Exactly one terminal state, entered once, and the last: replayed through a fresh machine.
    machine = StreamMachine(history_size=10_000, state=INITIAL_STATE)
    terminal_entries = 0
    for trigger in core.history:
        terminal_entries += machine.send(trigger).activity.is_terminal
    assert terminal_entries == 1 and machine.state == core.state and core.state.activity.is_terminal
    assert core.done and len(played.terminal_at) == 1
    # A record, always; a failed run's failure says the same as the record.
    record = core.seal()
    assert record is not None and record is core.record and core.diagnosis is not None
    assert record["outcome"]["summary_key"] == core.diagnosis.summary_key
    assert len(played.failures) <= 1
    if core.finished:
        assert not played.failures and isinstance(played.events[-1], Finish)
        assert sum(isinstance(event, Finish) for event in played.events) == 1
    else:
        assert played.failures and played.failures[0].diagnosis == core.diagnosis
    # Nothing after the end changes it: more bytes, an EOF, a fault, a watchdog, an abort.
    state, history = core.state, core.history
    assert core.feed(b"data: {}\n\n") == [] and core.end() == [] and core.take_failure() is None
    if core.finished:
        with pytest.raises(RuntimeError):
            core.fault(OSError("late"))
    else:
        assert core.fault(OSError("late")).diagnosis == core.diagnosis
        assert core.timed_out(Trigger.IDLE_TIMEOUT).diagnosis == core.diagnosis
    assert not core.abort("late")
    assert (core.state, core.history, core.seal()) == (state, history, record)


bodies = st.sampled_from(_bodies())
cuts = st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=40)


@settings(max_examples=300, deadline=None)
@given(body=bodies, cuts=cuts, interruption=st.none() | interruptions, at=st.integers(0, 50), data=st.data())
def test_a_run_ends_once_with_a_record_and_nothing_after_its_end(
    body: Body, cuts: list[int], interruption: tuple[str, Any] | None, at: int, data: st.DataObject
) -> None:
    if len(body.data):
        cuts = [cut % (len(body.data) + 1) for cut in cuts]
    ticks = data.draw(st.lists(st.floats(0, 5.0), min_size=1, max_size=5))
    _check_one_end(play(body, cuts, interruption, at, ticks))


def _said(played: Played) -> tuple[Any, ...]:
    record = played.core.seal()
    assert record is not None
    what = ("outcome", "summary", "stream_events", "delta_keys", "tokens", "finish_reason", "tools")
    # Bytes after the terminal event are read or not as the chunks fall: the one count that may differ.
    transport = {key: value for key, value in record["transport"].items() if key != "bytes_received"}
    return (played.events, played.core.diagnosis, played.core.state, transport, *(record[k] for k in what))


@settings(max_examples=300, deadline=None)
@given(body=bodies, first=cuts, second=cuts)
def test_the_split_points_change_nothing(body: Body, first: list[int], second: list[int]) -> None:
    size = len(body.data) + 1
    whole = play(body, [])
    assert _said(play(body, [cut % size for cut in first])) == _said(whole)
    assert _said(play(body, [cut % size for cut in second])) == _said(whole)


def test_the_bodies_are_many_and_varied() -> None:
    # Guards against a filter that keeps nothing worth driving: every format, clean ends and failures.
    bodies = _bodies()
    assert len(bodies) > 150
    # Every framing: SSE, Ollama's NDJSON, AWS's binary event stream (Claude on Bedrock).
    sse = {"openai-chat", "openai-responses", "anthropic", "gemini"}
    assert {body.fmt for body in bodies} >= {*sse, "ollama", "anthropic-bedrock"}
    outcomes = {play(body, []).core.finished for body in bodies}
    assert outcomes == {True, False}
    assert any(body.status >= 400 for body in bodies)


# -- the read door: a driver hands the core how each read ended, nothing else --------------------------------


def _outcome(core: RunCore, kind: str, arg: Any) -> Any:
    """The interruption as the read that met it would end: what a watched read returns."""
    if kind == "fault":
        return arg
    if kind == "timed_out":
        core.timing.edge = arg
        return DEADLINE
    if kind == "abort":
        core.abort("stop", arg)  # abort() interrupts the read (DEADLINE) or comes before it (STOP)
        return STOP if arg is AbortSource.USER else DEADLINE
    return None  # a local end is no read's: the driver's block ended


def play_through_the_door(
    body: Body, cuts: Sequence[int], interruption: tuple[str, Any] | None = None, at: int = 0
) -> Played:
    """``play``, with every read handed to the core as its outcome (``RunCore.took``)."""
    clock = FakeClock()
    core = RunCore(
        provider=body.fmt,
        model="m",
        body={"model": "m", "stream": True},
        url="http://127.0.0.1/v1/chat/completions",
        config=StreamConfig(history_size=10_000, sinks=()),
        clock=clock,
    )
    played = Played([], core, [], [])

    def took(index: int, outcome: Any) -> None:
        events = core.took(outcome)
        if core.done and not played.terminal_at:
            played.terminal_at.append(index)
        elif played.terminal_at:
            assert not events, f"events after the terminal one: {events}"
        played.events.extend(events)
        taken = core.take_failure()
        if taken is not None:
            played.failures.append(taken)

    def interrupt(index: int) -> None:
        assert interruption is not None
        outcome = _outcome(core, *interruption)
        if outcome is None:
            played.failures.append(_interrupt(core, *interruption))  # type: ignore[arg-type]
            played.terminal_at.append(index)
        else:
            took(index, outcome)

    core.begin()
    core.headers(body.status, dict(body.headers), core.stream_wire(adapter_for(body.fmt)))
    pieces = _pieces(body.data, cuts)
    for index, piece in enumerate(pieces):
        if interruption is not None and index == at and not core.done:
            interrupt(index)
        clock.now += 0.01
        took(index, piece)
    if interruption is not None and at >= len(pieces) and not core.done:
        interrupt(len(pieces))
    took(len(pieces) + 1, END)
    return played


@settings(max_examples=300, deadline=None)
@given(body=bodies, cuts=cuts, interruption=st.none() | interruptions, at=st.integers(0, 50))
def test_the_read_door_ends_a_run_once_and_says_what_the_direct_calls_say(
    body: Body, cuts: list[int], interruption: tuple[str, Any] | None, at: int
) -> None:
    if len(body.data):
        cuts = [cut % (len(body.data) + 1) for cut in cuts]
    through_the_door = play_through_the_door(body, cuts, interruption, at)
    _check_one_end(through_the_door)
    direct = play(body, cuts, interruption, at, ticks=(0.005,))
    assert _said(through_the_door) == _said(direct)


def test_a_read_outcome_costs_no_allocation() -> None:
    # The three ends are preallocated singletons: a read says how it ended without making anything.
    assert len({id(END), id(DEADLINE), id(STOP)}) == 3
    assert all(type(end) is ReadEnd for end in (END, DEADLINE, STOP))
    assert not hasattr(END, "__dict__")


def test_a_fault_after_an_http_error_status_is_that_error() -> None:
    core = RunCore(provider="openai-chat", model="m", body={}, url="http://127.0.0.1/v1/chat/completions")
    core.begin()
    core.headers(429, {"retry-after": "2"})
    assert core.took(b'{"error": {"message": "slow down"}}') == []
    assert core.took(httpx.ReadError("reset")) == []
    failure = core.take_failure()
    assert failure is not None and failure.diagnosis.edge is Trigger.HTTP_ERROR
    assert core.took(END) == [] and core.take_failure() is None  # nothing after the end
