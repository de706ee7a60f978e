"""However a run ends, what it held is freed by reference counting once the caller lets go: nothing of ours
waits for CPython's cyclic collector. A proxy relays thousands of streams at once; what each leaves in cycles
waits for a full collection, and a full collection over thousands of live streams stalls the event loop for
longer than the watchdog's accuracy. (The SDK paths' own ends: ``tests/sdk/test_sdk_garbage.py``.)"""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator

import anyio
import httpx
import pytest

from streamfsm import Ids, Run, StreamFailed, open_stream
from streamfsm.runtime import Breakers, RetryPolicy, Route, TextDelta, retrying
from streamfsm.runtime.core._cycles import release_traceback_cycles
from streamfsm.testing import (
    End,
    FaultServer,
    Fin,
    Headers,
    Request,
    Scenario,
    Send,
    Stall,
    catalog,
    error_event,
    run_catalog,
    text_stream,
)
from tests.support.runs import BODIES, left_to_the_collector

CATALOG = catalog()
BOUND = 30.0  # seconds: the whole catalog takes about one


@pytest.mark.parametrize("via", [None, "openai", "anthropic"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_no_catalog_run_leaves_cyclic_garbage(backend: str, via: str | None) -> None:
    mismatched: list[str] = []

    async def play(scenarios: list[Scenario]) -> None:
        with anyio.fail_after(BOUND):
            outcomes = await run_catalog(scenarios, sdk=via, concurrency=64)
        # Only names leave: the records stay in here, not in the loop's last result.
        mismatched.extend(outcome.name for outcome in outcomes if not outcome.matched)

    # A process's first client leaves import-time cycles (httpx looking for optional packages) that hold the
    # frames that made it: a few runs first.
    anyio.run(play, CATALOG[:4], backend=backend)
    # The responses open_stream reads are its own to free; an SDK's are the SDK's.
    also = (httpx.Response,) if via is None else ()
    left = left_to_the_collector(lambda: anyio.run(play, CATALOG, backend=backend), also=also)
    assert not mismatched
    assert not left, left


def _open(base_url: str, ids: Ids | None = None) -> Run:
    return open_stream("openai-chat", base_url=base_url, json=BODIES["openai-chat"], ids=ids)


def _in_one_chunk(frames: list[bytes], *tail: object) -> tuple[object, ...]:
    return (Headers(), Send(b"".join(frames)), *tail)


GOOD = text_stream("openai-chat", ["one ", "two"])
# A fault in the same network chunk as output before it: the run delivers that output first and raises the
# failure it held back on the next read.
HELD_BACK = {
    "malformed-after-text": _in_one_chunk([*GOOD[:3], b"data: {not json\n\n"], End()),
    "error-after-text": _in_one_chunk([*GOOD[:3], error_event("openai-chat", "overloaded")], End()),
}


@pytest.mark.parametrize("leave_early", [False, True], ids=["read-to-the-end", "leave-with-it-held"])
@pytest.mark.parametrize("script", HELD_BACK)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_failure_held_back_behind_output_leaves_no_cyclic_garbage(
    backend: str, script: str, leave_early: bool
) -> None:
    async def play() -> None:
        async with FaultServer(HELD_BACK[script]) as server:
            with anyio.fail_after(BOUND), contextlib.suppress(StreamFailed):
                async with _open(server.base_url) as run:
                    async for _ in run:
                        if leave_early:
                            break
            assert run.record is not None and run.record["outcome"]["state"].startswith("failed/")

    anyio.run(play, backend=backend)
    assert not left_to_the_collector(lambda: anyio.run(play, backend=backend), also=(httpx.Response,))


RETRIED = {
    "retried-then-finished": [(Fin(),), (Headers(), *(Send(frame) for frame in GOOD), End())],
    "gave-up": [(Fin(),)],
}


@pytest.mark.parametrize("chain", RETRIED)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_retrying_run_leaves_no_cyclic_garbage(backend: str, chain: str) -> None:
    scripts = RETRIED[chain]

    def route(request: Request) -> tuple[object, ...]:
        return scripts[min(request.seq, len(scripts) - 1)]

    async def play() -> None:
        async with FaultServer(route) as server:

            def attempt(ids: Ids) -> Run:
                return _open(server.base_url, ids)

            policy = RetryPolicy(attempts=2, total_s=10, initial_delay_s=0.001)
            with anyio.fail_after(BOUND):
                try:
                    async with retrying(policy, attempt) as run:
                        async for _ in run:
                            pass
                except StreamFailed:
                    assert chain == "gave-up"
                else:
                    assert chain == "retried-then-finished"

    anyio.run(play, backend=backend)
    assert not left_to_the_collector(lambda: anyio.run(play, backend=backend), also=(httpx.Response,))


def test_an_error_mapped_by_a_context_manager_leaves_no_cycle_once_released() -> None:
    # httpcore's and httpx's map_exceptions in small: on Python 3.12+ the mapped exception, the manager's
    # __exit__ frame and the generator's frame are a cycle (CPython gh-129280), and through f_back it holds
    # the caller's frames (a run's, in the library).
    class Held:
        pass

    @contextlib.contextmanager
    def mapped() -> Iterator[None]:
        try:
            yield
        except KeyError as exc:
            raise ValueError("mapped") from exc

    def call(held: Held) -> None:
        with mapped():
            raise KeyError(held)

    def fail(held: Held) -> None:
        try:
            call(held)
        except ValueError as exc:
            release_traceback_cycles(exc)

    held = Held()
    alive = weakref.ref(held)
    gc.disable()
    try:
        fail(held)
        del held
        assert alive() is None
    finally:
        gc.enable()


@pytest.mark.anyio
async def test_a_client_whose_request_hook_rebuilds_the_extensions_still_streams() -> None:
    # The run drops its trace callback once the response is in; a hook may have replaced the dict it was in.
    async def rebuild(request: httpx.Request) -> None:
        request.extensions = {k: v for k, v in request.extensions.items() if k != "trace"}

    steps = (Headers(), *(Send(frame) for frame in GOOD), End())
    async with FaultServer(steps) as server, httpx.AsyncClient(event_hooks={"request": [rebuild]}) as client:
        with anyio.fail_after(BOUND):
            async with open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], client=client
            ) as run:
                texts = [event.text async for event in run if isinstance(event, TextDelta)]
    assert run.finished and "".join(texts) == "one two"


@pytest.mark.parametrize("race", [False, True], ids=["fallback", "raced"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_chain_over_routes_leaves_no_cyclic_garbage(backend: str, race: bool) -> None:
    """A first route that fails (or, raced, says nothing by its deadline) and a second that answers."""
    first = (Headers(), Stall()) if race else (Fin(),)

    async def play() -> None:
        async with (
            FaultServer(first) as down,
            FaultServer((Headers(), *(Send(frame) for frame in GOOD), End())) as up,
        ):
            routes = [
                Route("down", lambda ids: _open(down.base_url, ids), tries=1, first_token_s=0.1, race=race),
                Route("up", lambda ids: _open(up.base_url, ids)),
            ]
            policy = RetryPolicy(attempts=3, total_s=10, initial_delay_s=0.001)
            with anyio.fail_after(BOUND):
                async with retrying(policy, routes, breakers=Breakers()) as run:
                    async for _ in run:
                        pass
            assert [link.route for link in run.attempts] == ["down", "up"]

    anyio.run(play, backend=backend)
    assert not left_to_the_collector(lambda: anyio.run(play, backend=backend), also=(httpx.Response,))
