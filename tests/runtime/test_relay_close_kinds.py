"""A proxy relaying a stream: seed 004's four close kinds, each with its relay facts and correlation ids."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm import StreamFailed
from streamfsm.runtime import TextDelta
from streamfsm.testing import End, FaultServer, Fin, Headers, Send, Stall, error_event, text_stream
from tests.support.runs import BODIES, cut_through, validate_record

pytestmark = pytest.mark.anyio

PROXY_IDS = {
    "context": {"request_id": "rid_42", "account": "acct_7", "tag": "codex", "route": "/v1/responses"}
}


async def proxy(
    steps: tuple[Any, ...], write: Callable[[bytes], Awaitable[None]], *, stop_after: int | None = None
) -> streamfsm.Run:
    """Play the proxy: read upstream through a run, write each event downstream, report what was written."""
    async with FaultServer(steps) as server:
        run = streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], ids=PROXY_IDS
        )
        try:
            async with run:
                sent = 0
                async for event in run:
                    sent += 1
                    data = f"data: {type(event).__name__}\n\n".encode()
                    await write(data)
                    run.relayed(event, len(data))
                    if sent == stop_after:
                        run.abort("downstream client disconnected", source="client")
        except (StreamFailed, BrokenPipeError):
            pass
    return run


async def sink(data: bytes) -> None:
    await anyio.sleep(0)


def relay_of(run: streamfsm.Run) -> dict[str, Any]:
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["ids"]["context"] == PROXY_IDS["context"], "the proxy's correlation ids ride along"
    relay: dict[str, Any] = record["relay"]
    return relay


async def test_completed_relay_sent_the_terminal_event() -> None:
    frames = text_stream("openai-chat", ["a", "b"], reasoning=["r"])
    relay = relay_of(await proxy((Headers(), *(Send(f) for f in frames), End()), sink))
    assert relay["close"] == "completed"
    assert relay["terminal_sent"] is True
    assert relay["reasoning_seen"] is True
    assert relay["last_event_sent"] == "finish"


async def test_client_abort() -> None:
    frames = cut_through("openai-chat", text_stream("openai-chat", ["a", "b", "c"]), TextDelta)
    relay = relay_of(await proxy((Headers(), *(Send(f) for f in frames), Stall()), sink, stop_after=1))
    assert relay["close"] == "client_abort"
    assert relay["events_sent"] == 1
    assert relay["terminal_sent"] is False


async def test_client_write_failed() -> None:
    written: list[bytes] = []

    async def failing(data: bytes) -> None:
        if len(written) == 2:
            raise BrokenPipeError("client socket closed")
        written.append(data)

    frames = text_stream("openai-chat", ["a", "b", "c", "d"])
    relay = relay_of(await proxy((Headers(), *(Send(f) for f in frames), End()), failing))
    assert relay["close"] == "client_write_failed"
    assert relay["events_sent"] == 2
    assert relay["bytes_written"] == sum(map(len, written))
    assert relay["chunks_written"] == 2


async def test_upstream_error() -> None:
    frames = cut_through("openai-chat", text_stream("openai-chat", ["a", "b"], reasoning=["r"]), TextDelta)
    steps = (Headers(), *(Send(f) for f in frames), Send(error_event("openai-chat", "overloaded")), End())
    relay = relay_of(await proxy(steps, sink))
    assert relay["close"] == "upstream_error"
    assert relay["reasoning_seen"] is True
    assert relay["last_event_sent"] == "text_delta"


async def test_upstream_premature_close() -> None:
    frames = cut_through("openai-chat", text_stream("openai-chat", ["a", "b"]), TextDelta)
    run = await proxy((Headers(), *(Send(f) for f in frames), Fin()), sink)
    relay_section = relay_of(run)
    assert relay_section["close"] == "upstream_premature_close"
    assert relay_section["upstream_events"] >= relay_section["events_sent"] >= 1
    assert run.record is not None
    assert run.record["outcome"]["class"] == "mid_generation"


async def test_a_run_that_relays_nothing_has_no_relay_section() -> None:
    frames = text_stream("openai-chat", ["a"])
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        async with streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
        ) as run:
            async for _ in run:
                pass
    assert validate_record(run.record)["relay"] is None  # type: ignore[arg-type]
