"""``failure_of`` for an exception chained to nothing of ours (one a framework makes itself after a stream
that ended quietly): the last failed run of the same place, within moments, never across callers it cannot
tell apart. Raw tapped requests over loopback; the frameworks themselves are in tests/frameworks."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm.tap import _notes, default_library
from streamfsm.testing import End, FaultServer, FaultServerThread, Headers, Send, Sleep, text_stream

pytestmark = pytest.mark.anyio
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
FRAMES = text_stream("openai-chat", ["Hel", "lo"])
WHOLE = (Headers(), *(Send(f) for f in FRAMES), End())
QUIET_CUT = (Headers(), *(Send(f) for f in FRAMES[:2]), End())  # text, then a clean end
# The clean end raises nothing with strict_eof=False (by default the read fails there, with the failure).
QUIET = {"http": default_library(), "strict_eof": False}
CUT_KEY = "mid_generation.eof_without_terminal"
BOUND_S = 10.0


class FrameworksOwn(Exception):
    """What a framework raises itself after a stream that ended quietly: chained to nothing."""


def client() -> Any:
    return streamfsm.async_http_client(**QUIET)


async def stream(url: str, *, stop_early: bool = False) -> None:
    """One streaming request read to its end (or closed after its first chunk), on a new tapped client."""
    async with client() as http, http.stream("POST", url + "/v1/chat/completions", json=BODY) as response:
        async for _ in response.aiter_bytes():
            if stop_early:
                break


def sync_stream(url: str) -> None:
    with (
        streamfsm.http_client(**QUIET) as http,
        http.stream("POST", url + "/v1/chat/completions", json=BODY) as response,
    ):
        for _ in response.iter_bytes():
            pass


def key(failure: streamfsm.StreamFailed | None) -> str | None:
    return None if failure is None else failure.diagnosis.summary_key


async def test_an_exception_chained_to_nothing_gets_the_failed_run_before_it() -> None:
    async with FaultServer(QUIET_CUT) as server:
        with anyio.fail_after(BOUND_S):
            await stream(server.base_url)
    own = FrameworksOwn()
    failure = streamfsm.failure_of(own)
    assert key(failure) == CUT_KEY
    assert streamfsm.failure_of(own) is failure, "asking again finds the same one"
    assert streamfsm.failure_of(RuntimeError("another")) is None, "one failure explains one exception"
    wrapper = RuntimeError("wraps it")
    wrapper.__cause__ = own
    assert streamfsm.failure_of(wrapper) is failure, "and what wraps that exception"


async def test_a_later_run_that_ended_well_supersedes_the_failure() -> None:
    async with FaultServer(QUIET_CUT) as bad, FaultServer(WHOLE) as good:
        with anyio.fail_after(BOUND_S):
            await stream(bad.base_url)
            await stream(good.base_url)
    assert streamfsm.failure_of(FrameworksOwn()) is None


async def test_a_failure_older_than_the_window_explains_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_notes, "ATTRIBUTION_WINDOW_S", 0.05)
    async with FaultServer(QUIET_CUT) as server:
        with anyio.fail_after(BOUND_S):
            await stream(server.base_url)
    await anyio.sleep(0.1)
    assert streamfsm.failure_of(FrameworksOwn()) is None


async def test_a_local_abort_and_a_cancellation_are_never_explained_by_a_failure() -> None:
    cancelled: list[BaseException] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep(BOUND_S)
        except anyio.get_cancelled_exc_class() as exc:
            cancelled.append(exc)
            raise
    async with FaultServer(QUIET_CUT) as bad, FaultServer(WHOLE) as good:
        with anyio.fail_after(BOUND_S):
            await stream(bad.base_url)
            assert streamfsm.failure_of(cancelled[0]) is None
            assert streamfsm.failure_of(KeyboardInterrupt()) is None
            assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY, "neither took it"
            await stream(bad.base_url)
            await stream(good.base_url, stop_early=True)  # the caller's own doing: a local abort
    assert streamfsm.failure_of(FrameworksOwn()) is None, "it explains nothing, and ends the failure's turn"


async def test_a_failure_in_a_task_the_caller_started_is_found_by_the_caller() -> None:
    """The Agents SDK streams in a task of its own and raises in the caller's."""
    async with FaultServer(QUIET_CUT) as server:
        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                group.start_soon(stream, server.base_url)
    assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY


async def test_streams_of_other_tasks_side_by_side_leave_nothing_to_attribute() -> None:
    """Without blocks: a failed stream of a task other than the asking one is attributed only where no stream
    of a third task ran beside it (a framework's task per call, one call after another, is fine)."""

    async def in_tasks(*urls: str) -> None:
        async with anyio.create_task_group() as group:
            for url in urls:
                group.start_soon(stream, url)

    slow_whole = (Headers(), Send(FRAMES[0]), Sleep(0.2), *(Send(f) for f in FRAMES[1:]), End())
    slow_cut = (Headers(), Send(FRAMES[0]), Sleep(1.0), Send(FRAMES[1]), End())
    endless = (Headers(), Send(FRAMES[0]), Sleep(BOUND_S))
    async with (
        FaultServer(QUIET_CUT) as bad,
        FaultServer(WHOLE) as good,
        FaultServer(slow_cut) as slow_bad,
        FaultServer(slow_whole) as slow_good,
        FaultServer(endless) as running,
    ):
        with anyio.fail_after(BOUND_S):
            await in_tasks(good.base_url)
            await in_tasks(bad.base_url)
            assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY, "one call after another"

            await in_tasks(slow_good.base_url, slow_bad.base_url)  # the good one ends while the bad one runs
            assert streamfsm.failure_of(FrameworksOwn()) is None

            async with anyio.create_task_group() as group:
                group.start_soon(stream, running.base_url)
                await in_tasks(bad.base_url)  # fails while another task's stream is still running
                assert streamfsm.failure_of(FrameworksOwn()) is None
                await stream(bad.base_url)  # in the asking task itself: certain
                assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY
                group.cancel_scope.cancel()


async def test_callers_side_by_side_are_told_apart_by_their_context_blocks() -> None:
    """Two callers in one loop, each streaming in a task of its own: the first one's stream ends well, the
    other's starts and fails after it, before the first raises. Only blocks tell whose failure it was."""
    found: dict[str, str | None] = {}

    async def caller(name: str, url: str, turn: anyio.Event, done: anyio.Event) -> None:
        if name == "bad":
            await turn.wait()
        with streamfsm.context(session_id=name):
            async with anyio.create_task_group() as group:
                group.start_soon(stream, url)
            if name == "good":
                turn.set()
                await done.wait()  # the other caller's stream fails meanwhile
            found[name] = key(streamfsm.failure_of(FrameworksOwn()))
            if name == "bad":
                done.set()

    async with FaultServer(QUIET_CUT) as bad, FaultServer(WHOLE) as good:
        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as group:
                turn, done = anyio.Event(), anyio.Event()
                group.start_soon(caller, "good", good.base_url, turn, done)
                group.start_soon(caller, "bad", bad.base_url, turn, done)
    assert found == {"good": None, "bad": CUT_KEY}


async def test_an_outer_block_sees_the_runs_of_the_blocks_inside_it() -> None:
    async with FaultServer(QUIET_CUT) as server:
        with anyio.fail_after(BOUND_S), streamfsm.context(session_id="s"):
            with streamfsm.context(message_id="m"):
                await stream(server.base_url)
            assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY


async def test_a_run_of_another_block_is_not_seen() -> None:
    async with FaultServer(QUIET_CUT) as server:
        with anyio.fail_after(BOUND_S):
            with streamfsm.context(message_id="one"):
                await stream(server.base_url)
            with streamfsm.context(message_id="two"):
                assert streamfsm.failure_of(FrameworksOwn()) is None


def test_sync_runs_are_found_in_their_thread_or_their_block() -> None:
    with FaultServerThread(QUIET_CUT) as server:
        sync_stream(server.base_url)
        assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY

        # In another thread, without a block: not seen.
        thread = threading.Thread(target=sync_stream, args=(server.base_url,))
        thread.start()
        thread.join(BOUND_S)
        assert streamfsm.failure_of(FrameworksOwn()) is None

        # The block's context copied into the thread (as anyio.to_thread and asyncio.to_thread do): seen.
        with streamfsm.context(session_id="s"):
            copied = contextvars.copy_context()
            thread = threading.Thread(target=copied.run, args=(sync_stream, server.base_url))
            thread.start()
            thread.join(BOUND_S)
            assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY


async def test_a_sync_client_in_a_worker_thread_of_a_block() -> None:
    async with FaultServer(QUIET_CUT) as server:
        with anyio.fail_after(BOUND_S), streamfsm.context(session_id="s"):
            await anyio.to_thread.run_sync(sync_stream, server.base_url)
            assert key(streamfsm.failure_of(FrameworksOwn())) == CUT_KEY
