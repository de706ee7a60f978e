"""Every run reaches each sink exactly once: finished, failed, aborted, cancelled, or failed on entry."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.runtime import RunRecord, TextDelta
from streamfsm.testing import End, FaultServer, Fin, Headers, Send, Stall, text_stream, unused_port
from tests.support.runs import BODIES, validate_record

pytestmark = pytest.mark.anyio

FRAMES = text_stream("openai-chat", ["Hello", " world"])


async def consume_normally(run: streamfsm.Run) -> None:
    async for _ in run:
        pass


async def leave_early(run: streamfsm.Run) -> None:
    async for event in run:
        if isinstance(event, TextDelta):
            break


async def raise_inside(run: streamfsm.Run) -> None:
    async for _ in run:
        raise RuntimeError("consumer bug")


async def cancel_from_outside(run: streamfsm.Run) -> None:
    with anyio.move_on_after(0.2):
        async for _ in run:
            pass


CASES: dict[str, tuple[tuple[Any, ...], Callable[[streamfsm.Run], Awaitable[None]], str]] = {
    "finished": ((Headers(), *(Send(f) for f in FRAMES), End()), consume_normally, "completed"),
    "failed": ((Headers(), Send(FRAMES[0]), Fin()), consume_normally, "early_stream"),
    "left early": ((Headers(), *(Send(f) for f in FRAMES), End()), leave_early, "local_abort"),
    "consumer error": ((Headers(), *(Send(f) for f in FRAMES), End()), raise_inside, "consumer_error"),
    "cancelled": ((Headers(), Stall()), cancel_from_outside, "local_abort"),
    "failed on entry": ((Fin(),), consume_normally, "before_connection"),
}


@pytest.mark.parametrize("case", CASES)
async def test_each_sink_gets_the_run_exactly_once(case: str, caplog: pytest.LogCaptureFixture) -> None:
    steps, consumer, klass = CASES[case]
    first: list[RunRecord] = []
    second: list[RunRecord] = []

    def broken(record: RunRecord) -> None:
        raise OSError("disk full")

    config = StreamConfig(sinks=(first.append, broken, second.append))
    async with FaultServer(steps) as server:
        run = streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
        )
        with caplog.at_level(logging.DEBUG, logger="streamfsm"):
            try:
                async with run:
                    await consumer(run)
            except (StreamFailed, RuntimeError):
                pass
    assert [r.run_id for r in first] == [run.run_id]
    assert [r.run_id for r in second] == [run.run_id], "a raising sink does not stop the next one"
    assert first[0] is run.record
    assert validate_record(first[0])["outcome"]["class"] == klass
    run_logs = [r for r in caplog.records if r.name == "streamfsm" and run.run_id in r.getMessage()]
    assert len(run_logs) == 1, "one structured log record per run"
    assert any(r.name == "streamfsm.sinks" for r in caplog.records), "the broken sink is reported"


async def test_connection_refused_still_reaches_the_sink() -> None:
    records: list[RunRecord] = []
    url = f"http://127.0.0.1:{unused_port()}/v1"
    with pytest.raises(StreamFailed):
        async with streamfsm.open_stream(
            "openai-chat",
            base_url=url,
            json=BODIES["openai-chat"],
            config=StreamConfig(sinks=(records.append,)),
        ):
            pass
    assert len(records) == 1
    assert records[0].failure_class == "before_connection"


def test_a_sink_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        StreamConfig(sinks=("errors.jsonl",))  # type: ignore[arg-type]


def test_the_timeline_bound_cannot_exceed_the_schema() -> None:
    with pytest.raises(ValueError, match="at most 256"):
        StreamConfig(timeline_head=200, timeline_tail=100)
