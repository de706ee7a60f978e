"""``wrap()`` runs, sync and async, on the raw path and on the item path (a ``MessageStream``), however they
end, leave nothing of ours to CPython's cyclic collector (see ``tests/runtime/test_garbage.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.runtime import TextDelta
from streamfsm.testing import End, FaultServerThread, Fin, Headers, Send, Stall, Status, text_stream
from tests.support.runs import cut_through, left_to_the_collector, script
from tests.support.sdk import SDK_BODIES, client_for, create

SOURCES = ("openai-chat", "openai-responses", "anthropic", "anthropic-message-stream")
MALFORMED = b"data: {not json\n\n"
ERROR_BODY = b'{"error": {"type": "api_error", "message": "boom"}}'
ENDINGS: dict[str, Callable[[str, list[bytes]], tuple[Any, ...]]] = {
    "finished": lambda fmt, frames: script(frames, End()),
    "cut": lambda fmt, frames: script(frames[:3], Fin()),
    "stalled": lambda fmt, frames: script(frames[:3], Stall()),
    # Output and a fault in one network chunk: on the raw path the fault is held back until the output is
    # delivered, and the consumer reads on to it or leaves first (the item path reads one item at a time).
    "held-back": lambda fmt, frames: _held_back(fmt, frames),
    "held-back-left-early": lambda fmt, frames: _held_back(fmt, frames),
    # The stream never opens: the run (or, sync, its helper thread) sees the SDK raise.
    "http-500": lambda fmt, frames: (Status(500, (("content-type", "application/json"),), ERROR_BODY),),
    "closed-before-headers": lambda fmt, frames: (Fin(),),
}
NEVER_OPENS = ("http-500", "closed-before-headers")
# The stalled runs end by their watchdog, before or after the first output, whichever the cut leaves.
CONFIG = StreamConfig(first_token_timeout=0.5, idle_timeout=0.5, total_timeout=10)  # room for a loaded CI


def _held_back(fmt: str, frames: list[bytes]) -> tuple[Any, ...]:
    return (Headers(), Send(b"".join(cut_through(fmt, frames, TextDelta)) + MALFORMED), End())


def _steps(source: str, ending: str) -> tuple[Any, ...]:
    fmt = source.removesuffix("-message-stream")
    return ENDINGS[ending](fmt, text_stream(fmt, ["one ", "two ", "three"]))  # type: ignore[arg-type]


def _call(source: str, client: Any) -> Any:
    if source == "anthropic-message-stream":
        return client.messages.stream(**SDK_BODIES["anthropic"])
    return create(source, client)


def _play_sync(source: str, ending: str) -> None:
    with FaultServerThread(_steps(source, ending)) as server:
        client = client_for(source.removesuffix("-message-stream"), server.base_url, sync=True)
        run = streamfsm.wrap(_call(source, client), config=CONFIG)
        try:
            with run:
                for _ in run:
                    if ending.endswith("left-early"):
                        break
        except StreamFailed:
            assert ending != "finished"
        finally:
            client.close()
        assert run.finished == (ending == "finished")


async def _play_async(source: str, ending: str) -> None:
    with FaultServerThread(_steps(source, ending)) as server, anyio.fail_after(10):
        client = client_for(source.removesuffix("-message-stream"), server.base_url)
        run = streamfsm.wrap(_call(source, client), config=CONFIG)
        try:
            async with run:
                async for _ in run:
                    if ending.endswith("left-early"):
                        break
        except StreamFailed:
            assert ending != "finished"
        finally:
            await client.close()
        assert run.finished == (ending == "finished")


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """The SDKs import parts of themselves on first use, and those imports leave cycles of their own."""
    for source in SOURCES:
        _play_sync(source, "finished")
        for backend in ("asyncio", "trio"):
            anyio.run(_play_async, source, "finished", backend=backend)


# A sync SDK call that fails raises before wrap() has it, except a MessageStream manager, which wrap() opens.
SYNC_CASES = [
    (source, ending)
    for source in SOURCES
    for ending in ENDINGS
    if ending not in NEVER_OPENS or source == "anthropic-message-stream"
]


@pytest.mark.parametrize(("source", "ending"), SYNC_CASES)
def test_a_sync_run_leaves_no_cyclic_garbage(source: str, ending: str) -> None:
    assert not left_to_the_collector(lambda: _play_sync(source, ending))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("source", SOURCES)
def test_an_async_run_leaves_no_cyclic_garbage(source: str, ending: str, backend: str) -> None:
    assert not left_to_the_collector(lambda: anyio.run(_play_async, source, ending, backend=backend))
