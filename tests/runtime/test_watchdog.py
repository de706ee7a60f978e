"""The loop's watchdog: every registered time is called back once, at or after it, in order; a forgotten one
never is; its task ends when nothing is left to watch. And through real runs: a stream that keeps producing
is looked at lazily and never times out, a stall after it does, and no task outlives the runs."""

from __future__ import annotations

import asyncio
import gc
import math
import sys
import threading
import time
import warnings
import weakref
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm
from streamfsm import Finish, Run, StreamConfig, StreamFailed, ToolCall, ToolInputStart
from streamfsm.runtime import LoopReads, plain_scope_class
from streamfsm.runtime.drivers._sync_reads import ReadWatchdog as _SyncWatchdog
from streamfsm.runtime.drivers._watchdog import (
    ARRIVAL_LOOKS,
    LoopWatchdog,
    TaskScope,
    TrioWatchdog,
    loop_watchdog,
    new_watchdog,
)
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Headers,
    Send,
    Sleep,
    Stall,
    text_stream,
    tool_call_stream,
)
from tests.support.runs import BODIES, cut_before, cut_through

# One op: register a callback due in `delay` seconds, forget it (or not) after `forget_after` seconds, and
# wait `pause` seconds before the next op. Times are milliseconds: each example is over in well under 0.1 s.
_OP = st.tuples(
    st.integers(0, 8).map(lambda ms: ms / 1000),
    st.none() | st.integers(0, 8).map(lambda ms: ms / 1000),
    st.integers(0, 3).map(lambda ms: ms / 1000),
)


async def _play(ops: list[tuple[float, float | None, float]]) -> tuple[LoopWatchdog, dict[int, Any]]:
    watchdog = new_watchdog()
    due: dict[int, float] = {}
    calls: list[tuple[int, float]] = []
    forgotten: set[int] = set()

    async def forget_later(entry: Any, index: int, after: float) -> None:
        await anyio.sleep(after)
        if entry.callback is not None:  # not called back yet: from now on it must never be
            forgotten.add(index)
        watchdog.forget(entry)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for index, (delay, forget_after, pause) in enumerate(ops):
                due[index] = time.monotonic() + delay
                entry = watchdog.watch(due[index], lambda now, i=index: calls.append((i, now)))
                if forget_after is not None:
                    tg.start_soon(forget_later, entry, index, forget_after)
                await anyio.sleep(pause)
        while watchdog.running:
            await anyio.sleep(0.001)
    return watchdog, {"due": due, "calls": calls, "forgotten": forgotten}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40)
@given(ops=st.lists(_OP, min_size=1, max_size=12))
def test_every_registered_time_is_called_back_once_at_or_after_it(
    backend: str, ops: list[tuple[float, float | None, float]]
) -> None:
    watchdog, seen = anyio.run(_play, ops, backend=backend)
    called = [index for index, _ in seen["calls"]]
    assert len(called) == len(set(called)), "a callback ran twice"
    assert not set(called) & seen["forgotten"], "a forgotten callback ran"
    assert set(called) | seen["forgotten"] == set(range(len(ops))), "a callback never ran"
    for index, now in seen["calls"]:
        assert now >= seen["due"][index], "called back before its time"
    whens = [seen["due"][index] for index in called]
    assert whens == sorted(whens), "called back out of order"
    assert not watchdog.running


@pytest.mark.anyio
async def test_a_callback_may_watch_again_and_a_failing_one_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = new_watchdog()
    calls: list[str] = []

    def again(now: float) -> None:
        calls.append("first")
        watchdog.watch(now + 0.01, lambda _: calls.append("again"))

    def broken(now: float) -> None:
        raise RuntimeError("boom")

    start = time.monotonic()
    watchdog.watch(start + 0.01, broken)
    watchdog.watch(start + 0.02, again)
    watchdog.watch(start + 0.05, lambda _: calls.append("last"))
    with anyio.fail_after(5):
        while watchdog.running:
            await anyio.sleep(0.005)
    assert calls == ["first", "again", "last"]
    assert "a watchdog callback failed" in caplog.text


@pytest.mark.anyio
async def test_an_earlier_time_wakes_a_watchdog_asleep_until_a_later_one() -> None:
    watchdog = new_watchdog()
    fired = anyio.Event()
    late = watchdog.watch(time.monotonic() + 60, lambda _: None)
    await anyio.sleep(0.01)  # asleep until the late entry
    start = time.monotonic()
    watchdog.watch(start + 0.02, lambda _: fired.set())
    with anyio.fail_after(5):
        await fired.wait()
    assert time.monotonic() - start < 2  # not the 60 s it was asleep for
    watchdog.forget(late)
    with anyio.fail_after(5):
        while watchdog.running:
            await anyio.sleep(0.005)


@pytest.mark.parametrize("anyio_backend", ["trio"])  # on asyncio they are the loop's timers
async def test_forgotten_entries_do_not_pile_up(anyio_backend: str) -> None:
    watchdog = new_watchdog()
    assert isinstance(watchdog, TrioWatchdog)
    keep = watchdog.watch(time.monotonic() + 60, lambda _: None)
    for _ in range(10_000):  # runs that ended long before their deadlines
        watchdog.forget(watchdog.watch(time.monotonic() + 30, lambda _: None))
    assert len(watchdog._heap) < 100
    watchdog.forget(keep)


def _steady(frames: list[bytes], gap: float) -> tuple[Any, ...]:
    return (Headers(), *(step for f in frames[:-1] for step in (Send(f), Sleep(gap))), Send(frames[-1]))


@pytest.mark.anyio
async def test_a_stream_that_keeps_producing_outlives_many_idle_timeouts_and_then_a_stall_fires() -> None:
    # 30 deltas 0.05 s apart under a 0.5 s idle timeout (room for a loaded CI): 1.5 s of stream, three idle
    # timeouts long.
    config = StreamConfig(idle_timeout=0.5)
    async with FaultServer((*_steady(text_stream("openai-chat", ["a"] * 30), 0.05), End())) as server:
        with anyio.fail_after(10):
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
            ) as run:
                async for _ in run:
                    pass
    assert run.finished

    frames = cut_before("openai-chat", text_stream("openai-chat", ["a"] * 20), Finish)
    async with FaultServer((*_steady(frames, 0.05), Stall())) as server:
        with anyio.fail_after(10), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
            ) as run:
                async for _ in run:
                    pass
    record = info.value.record
    assert record["watchdog"]["fired"] == "idle_timeout"
    assert record["stream_events"]["text_delta"] == 20  # every delta before the stall arrived
    with anyio.fail_after(5):
        while loop_watchdog().running:  # the loop's watchdog ended with the last run
            await anyio.sleep(0.005)


def _stalled_script() -> tuple[Any, ...]:
    frames = cut_before("openai-chat", text_stream("openai-chat", ["a", "b"]), Finish)
    return (Headers(), *(Send(f) for f in frames), Stall())


async def _stalled_run(
    config: StreamConfig, during: Any = None, slow_consumer: float = 0, blocking_consumer: float = 0
) -> StreamFailed:
    """``slow_consumer`` sleeps on each event; ``blocking_consumer`` blocks the event loop as long."""
    async with FaultServer(_stalled_script()) as server, anyio.create_task_group() as tg:
        with anyio.fail_after(5), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
            ) as run:
                if during is not None:
                    tg.start_soon(during)
                async for _ in run:
                    if blocking_consumer:
                        time.sleep(blocking_consumer)  # no checkpoint: the watchdog cannot look meanwhile
                    else:
                        await anyio.sleep(slow_consumer)
    return info.value


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_on_asyncio_a_run_starts_no_task_that_others_could_cancel(anyio_backend: str) -> None:
    def runtime_tasks() -> list[str]:  # the fault server's own tasks are not the runtime's
        return [
            t.get_name()
            for t in asyncio.all_tasks()
            if "streamfsm/runtime" in t.get_coro().cr_code.co_filename
        ]

    async def no_new_task() -> None:
        await anyio.sleep(0.1)  # the run now waits on the stall, its deadline registered
        assert loop_watchdog().running
        assert runtime_tasks() == []

    failure = await _stalled_run(StreamConfig(idle_timeout=0.3), during=no_new_task)
    assert failure.record["watchdog"]["fired"] == "idle_timeout"


def test_an_asyncio_loop_that_ends_with_a_run_still_open_is_freed() -> None:
    async def leave_a_run_open(base_url: str) -> None:
        run = streamfsm.open_stream(
            "openai-chat", base_url=base_url, json=BODIES["openai-chat"], config=StreamConfig(idle_timeout=30)
        )
        await run.__aenter__()
        await run.__anext__()  # one read done: its deadline is registered; the run is never exited
        loops.append(weakref.ref(asyncio.get_running_loop()))

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []
    with FaultServerThread(_stalled_script()) as server:
        for _ in range(3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)
                asyncio.run(leave_a_run_open(server.base_url))
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]


@pytest.mark.anyio
async def test_a_read_that_starts_after_its_deadline_fails_without_waiting_for_the_watchdog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The consumer takes longer than the whole budget over the first event; the next read is already due.
    # It must fail at once, not through the watchdog (which may even call back inside watch(), under an
    # eager task factory, before the read's scope exists).
    overdue: list[float] = []
    kind = type(loop_watchdog())
    watch = kind.watch

    def spy(self: LoopWatchdog, when: float, callback: Any) -> Any:
        if when <= time.monotonic():
            overdue.append(when)
        return watch(self, when, callback)

    monkeypatch.setattr(kind, "watch", spy)
    failure = await _stalled_run(StreamConfig(total_timeout=0.3), slow_consumer=0.5)
    assert failure.record["watchdog"]["fired"] == "total_timeout"
    assert overdue == []


@pytest.mark.anyio
async def test_a_read_after_a_consumer_that_blocked_the_loop_past_its_deadline_fails_after_a_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The consumer blocks the event loop past the whole budget, so the deadline has passed when the next
    # read starts. What arrived is looked at first (issue 25): the socket holds nothing (the upstream
    # stalls), so a few looks later the read fails, as of when the deadline was found passed.
    looked: list[float] = []
    arrival_looked = LoopReads._arrival_looked

    def spy(self: LoopReads, now: float, edge: Any) -> bool:
        looked.append(now)
        return arrival_looked(self, now, edge)

    monkeypatch.setattr(LoopReads, "_arrival_looked", spy)
    failure = await _stalled_run(StreamConfig(total_timeout=0.3), blocking_consumer=0.5)
    assert failure.record["watchdog"]["fired"] == "total_timeout"
    assert len(looked) >= ARRIVAL_LOOKS + 1


@pytest.mark.anyio
async def test_an_effectful_tool_ending_between_reads_restarts_the_idle_watchdog_at_once() -> None:
    # A tool runs in the background (the idle clock paused) while a read waits, so the watchdog looks only
    # at the far total deadline; the tool ends while the consumer handles an event, between reads. The
    # stall after that must fire idle_timeout about idle_timeout later, not when the total deadline looks.
    frames = tool_call_stream("anthropic", [("first", "{}"), ("second", '{"x": 1}')])
    steps = (Headers(), *(Send(f) for f in frames[:5]), Sleep(0.6), Send(frames[5]), Stall())
    config = StreamConfig(idle_timeout=0.3, total_timeout=6.0, pause_idle_during_tools=True)
    resumed = math.inf
    async with FaultServer(steps) as server:
        with anyio.fail_after(10), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "anthropic", base_url=server.base_url, json=BODIES["anthropic"], config=config
            ) as run:
                first = ""
                async for event in run:
                    if isinstance(event, ToolCall) and event.name == "first":
                        first = event.call_id
                        run.tool_started(first, effect="effectful")
                    elif isinstance(event, ToolInputStart) and event.name == "second":
                        run.tool_finished(first)
                        resumed = time.monotonic()
    assert info.value.record["watchdog"]["fired"] == "idle_timeout"
    assert time.monotonic() - resumed < 3.0  # about 0.3 s; the total deadline's look would be at 6 s


def test_an_effectful_tool_ending_after_the_run_asks_nothing_of_the_watchdog() -> None:
    # The agent finishes a tool after the run's block (and its event loop) ended: the run is over.
    frames = tool_call_stream("openai-chat", [("write_file", "{}")])
    config = StreamConfig(idle_timeout=0.3, pause_idle_during_tools=True)

    async def main(base_url: str) -> Run:
        async with streamfsm.open_stream(
            "openai-chat", base_url=base_url, json=BODIES["openai-chat"], config=config
        ) as run:
            async for event in run:
                if isinstance(event, ToolCall):
                    run.tool_started(event.call_id, effect="effectful")
        return run

    with FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as server:
        run = anyio.run(main, server.base_url)
    assert run.finished
    run.tool_finished(next(iter(run._core.ledger.running)))  # no event loop here: nothing to register with
    assert run._reads._entry is None


@pytest.mark.anyio
async def test_a_tool_starting_after_the_watchdog_fired_does_not_change_which_watchdog_fired(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The idle watchdog cancels the read; before the reader resumes, the agent starts an effectful tool,
    # which pauses the idle clock. The run must still fail as idle_timeout (there is no total timeout).
    frames = cut_through("openai-chat", tool_call_stream("openai-chat", [("write_file", "{}")]), ToolCall)
    calls: list[str] = []
    watch_due = LoopReads._due

    def due_then_tool(self: LoopReads, now: float) -> None:
        watch_due(self, now)
        if calls and self.scope is not None and self.scope.cancel_called:
            self.tool_started(calls[0], effect="effectful")

    monkeypatch.setattr(LoopReads, "_due", due_then_tool)
    config = StreamConfig(idle_timeout=0.3, pause_idle_during_tools=True)
    async with FaultServer((Headers(), *(Send(f) for f in frames), Stall())) as server:
        with anyio.fail_after(5), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
            ) as run:
                async for event in run:
                    if isinstance(event, ToolCall):
                        calls.append(event.call_id)
    assert info.value.record["watchdog"]["fired"] == "idle_timeout"


def test_the_sync_watchdog_moves_only_the_deadline_of_a_read_in_progress() -> None:
    # A tool thread pausing or resuming the idle clock just after the read ended must not arm the thread
    # watchdog: it would fire later, while no read runs, and shut the next read down.
    interrupted = threading.Event()
    watchdog = _SyncWatchdog(interrupted.set)
    try:
        watchdog.arm(time.monotonic() + 60)
        watchdog.disarm()
        watchdog.move(time.monotonic() + 0.05)  # too late: the read is over
        assert not interrupted.wait(0.3)
        assert not watchdog.fired
        watchdog.arm(time.monotonic() + 60)
        watchdog.move(time.monotonic() + 0.05)  # the read in progress: its deadline moves
        assert interrupted.wait(5)
        assert watchdog.fired
    finally:
        watchdog.stop()


class _SlowToUnwindBody(httpx.AsyncByteStream):
    def __init__(self, inner: Any, cleanup_s: float) -> None:
        self._inner, self._cleanup_s = inner, cleanup_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.sleep(self._cleanup_s)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class _SlowToUnwind(httpx.AsyncBaseTransport):
    """The real transport, whose bodies take ``cleanup_s`` (shielded) to unwind a cancelled read, as an HTTP
    client closing a connection does on a busy event loop (a scheduler pass per await of its cleanup)."""

    def __init__(self, cleanup_s: float) -> None:
        self._inner, self._cleanup_s = httpx.AsyncHTTPTransport(), cleanup_s

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        body = _SlowToUnwindBody(response.stream, self._cleanup_s)
        return httpx.Response(response.status_code, headers=response.headers, stream=body)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _chat(base_url: str, client: httpx.AsyncClient, config: StreamConfig) -> Run:
    return streamfsm.open_stream(
        "openai-chat", base_url=base_url, json=BODIES["openai-chat"], client=client, config=config
    )


@pytest.mark.anyio
async def test_a_watchdog_failure_ends_when_it_fired_not_when_the_client_had_unwound() -> None:
    idle, cleanup = 0.2, 0.5
    config = StreamConfig(idle_timeout=idle)
    async with (
        FaultServer(_stalled_script()) as server,
        httpx.AsyncClient(transport=_SlowToUnwind(cleanup)) as client,
    ):
        started = time.monotonic()
        with anyio.fail_after(5), pytest.raises(StreamFailed) as info:
            async with _chat(server.base_url, client, config) as run:
                async for _ in run:
                    pass
        seen_after = time.monotonic() - started
    record = info.value.record
    assert record["watchdog"]["fired"] == "idle_timeout"
    assert seen_after >= idle + cleanup  # the consumer hears of it once the client has unwound
    # The record says when the stream ended: when the watchdog fired (bounds generous for a shared machine).
    assert idle <= record["timings"]["last_progress_age_s"] < idle + cleanup / 2
    assert record["timings"]["total_s"] <= seen_after - cleanup / 2
    last = record["timeline"]["entries"][-1]
    assert last["event"] == "idle_timeout" and last["t"] == record["timings"]["total_s"]


@pytest.mark.anyio
async def test_a_tool_ending_while_the_client_unwinds_falls_inside_the_run() -> None:
    # The agent finishes a tool after the watchdog fired, while the HTTP client still unwinds the read: the
    # record must not end before what it records.
    frames = cut_through("openai-chat", tool_call_stream("openai-chat", [("read_file", "{}")]), ToolCall)
    config = StreamConfig(idle_timeout=0.2)
    calls: list[str] = []

    async def finish_the_tool_once_fired(run: Run) -> None:
        with anyio.fail_after(5):
            while not (calls and run._reads.scope is not None and run._reads.scope.cancel_called):
                await anyio.sleep(0.01)
        run.tool_finished(calls[0])

    async with (
        FaultServer((Headers(), *(Send(f) for f in frames), Stall())) as server,
        httpx.AsyncClient(transport=_SlowToUnwind(0.5)) as client,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(5), pytest.raises(StreamFailed) as info:
            async with _chat(server.base_url, client, config) as run:
                tg.start_soon(finish_the_tool_once_fired, run)
                async for event in run:
                    if isinstance(event, ToolCall):
                        run.tool_started(event.call_id, effect="read_only")
                        calls.append(event.call_id)
    record = info.value.record
    assert record["watchdog"]["fired"] == "idle_timeout" and record["tools"]["finished"] == 1
    times = [entry.get("t_last", entry["t"]) for entry in record["timeline"]["entries"]]
    assert times == sorted(times) and times[-1] <= record["timings"]["total_s"]
    assert record["timings"]["last_progress_age_s"] >= 0.2 + 0.2  # it ended after the tool, mid-unwinding


# -- the read's scope on asyncio (Python 3.11+): the task's own cancellation, taken back on the way out ------

needs_task_scope = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="before 3.11 a read waits in anyio's own scope (no Task.uncancel)"
)
on_asyncio = pytest.mark.parametrize("anyio_backend", ["asyncio"])


@needs_task_scope
@on_asyncio
async def test_on_asyncio_a_read_scope_is_the_tasks_own_and_a_cancel_ends_its_wait(
    anyio_backend: str,
) -> None:
    scope = plain_scope_class()()
    assert isinstance(scope, TaskScope)
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().call_later(0.01, scope.cancel)
    with scope:
        await anyio.sleep(5)
    assert scope.cancel_called and scope.cancelled_caught
    assert task.cancelling() == 0  # taken back: the task is not left cancelled
    await anyio.sleep(0)  # and goes on


@needs_task_scope
@on_asyncio
async def test_a_read_scope_waits_out_a_shield_entered_inside_it_then_cancels(anyio_backend: str) -> None:
    scope = plain_scope_class()()
    shielded_done = False
    asyncio.get_running_loop().call_later(0.01, scope.cancel)
    with anyio.fail_after(5), scope:
        with anyio.CancelScope(shield=True):  # an HTTP client's cleanup: not interrupted
            await anyio.sleep(0.05)
            shielded_done = True
        await anyio.sleep(5)  # the next wait is cancelled
    assert shielded_done and scope.cancelled_caught


@needs_task_scope
@on_asyncio
async def test_a_read_scope_inside_a_shield_is_still_cancelled(anyio_backend: str) -> None:
    scope = plain_scope_class()()
    with anyio.fail_after(5), anyio.CancelScope(shield=True):  # the consumer's shield, around the read
        asyncio.get_running_loop().call_later(0.01, scope.cancel)
        with scope:
            await anyio.sleep(5)
    assert scope.cancelled_caught


@needs_task_scope
@on_asyncio
@pytest.mark.parametrize("outer_first", [True, False])
async def test_an_outer_cancellation_at_the_same_time_still_cancels_the_outer_scope(
    outer_first: bool, anyio_backend: str
) -> None:
    # As with asyncio.timeout: the read's own cancellation is swallowed only when nothing else is pending;
    # when it came first, anyio delivers the outer scope's at the next wait.
    scope = plain_scope_class()()
    loop = asyncio.get_running_loop()
    with anyio.CancelScope() as outer:

        def both() -> None:
            first, second = (outer.cancel, scope.cancel) if outer_first else (scope.cancel, outer.cancel)
            first()
            second()

        loop.call_later(0.01, both)
        with scope:
            await anyio.sleep(5)
        await anyio.sleep(5)
        pytest.fail("the outer scope's cancellation was lost")
    assert outer.cancelled_caught
    assert scope.cancelled_caught is not outer_first
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


@needs_task_scope
@on_asyncio
async def test_a_read_scope_entered_cancelled_whose_read_does_not_wait_leaves_no_cancellation(
    anyio_backend: str,
) -> None:
    # The watchdog finds a read due as it starts (cancel before enter), and the read returns what the HTTP
    # client had buffered without waiting: no cancellation may be left for the task's next wait.
    async def buffered() -> bytes:
        return b"chunk"

    scope = plain_scope_class()()
    scope.cancel()
    with scope:
        chunk = await buffered()
    assert chunk == b"chunk" and not scope.cancelled_caught
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # the consumer's own next wait is not cancelled


@needs_task_scope
@on_asyncio
async def test_a_read_scope_entered_cancelled_cancels_the_read_once_it_waits(anyio_backend: str) -> None:
    scope = plain_scope_class()()
    scope.cancel()
    with anyio.fail_after(5), scope:
        await anyio.sleep(5)
    assert scope.cancelled_caught
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
