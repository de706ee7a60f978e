"""``wrap()`` runs, sync and async, on the raw path and on the item path (a ``MessageStream``), however they
end, leave nothing of ours to CPython's cyclic collector (see ``tests/runtime/test_garbage.py``)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from runsupport import left_to_the_collector
from test_sdk_wrap import SDK_BODIES, client_for, create, script

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Fin, Headers, Send, Stall
from streamfsm.testing._server import FaultServerThread

SOURCES = ("openai-chat", "openai-responses", "anthropic", "anthropic-message-stream")
MALFORMED = b"data: {not json\n\n"
ENDINGS = {
    "finished": lambda frames: script(frames, End()),
    "cut": lambda frames: script(frames[:3], Fin()),
    "stalled": lambda frames: script(frames[:3], Stall()),
    # Output and a fault in one network chunk: the fault is held back until the output is delivered; the
    # consumer reads on to it, or leaves first.
    "held-back": lambda frames: (Headers(), Send(b"".join(frames[:4]) + MALFORMED), End()),
    "held-back-left-early": lambda frames: (Headers(), Send(b"".join(frames[:4]) + MALFORMED), End()),
}
# The stalled runs end by their watchdog, before or after the first output, whichever the cut leaves.
CONFIG = StreamConfig(first_token_timeout=0.1, idle_timeout=0.1, total_timeout=10)


def _steps(source: str, ending: str) -> tuple[Any, ...]:
    fmt = source.removesuffix("-message-stream")
    return ENDINGS[ending](text_stream(fmt, ["one ", "two ", "three"]))


def _call(source: str, client: Any) -> Any:
    if source == "anthropic-message-stream":
        return client.messages.stream(**SDK_BODIES["anthropic"])
    return create(source, client)


def _play_sync(source: str, ending: str) -> None:
    with FaultServerThread(_steps(source, ending)) as server:
        client = client_for(source.removesuffix("-message-stream"), server.base_url, sync=True)
        try:
            with streamfsm.wrap(_call(source, client), config=CONFIG) as run:
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
        try:
            async with streamfsm.wrap(_call(source, client), config=CONFIG) as run:
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


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("source", SOURCES)
def test_a_sync_run_leaves_no_cyclic_garbage(source: str, ending: str) -> None:
    assert not left_to_the_collector(lambda: _play_sync(source, ending))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("source", SOURCES)
def test_an_async_run_leaves_no_cyclic_garbage(source: str, ending: str, backend: str) -> None:
    assert not left_to_the_collector(lambda: anyio.run(_play_async, source, ending, backend=backend))
