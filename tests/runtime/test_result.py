"""``run.result()``: what a finished run produced (text, reasoning, refusal, tool calls, usage, finish
reason), from what the run counted; the text is kept only once ``collect()`` asked before iteration, so a
run whose result nobody wants pays nothing per event. Over real sockets: open_stream, wrap() (async and
sync) and the retry executor."""

from __future__ import annotations

import anyio
import pytest

import streamfsm
from streamfsm import FinishReason, TextDelta, ToolCall
from streamfsm.runtime.core._run_core import _ON_EVENT
from streamfsm.testing import End, FaultServer, Fin, Headers, Send, text_stream, tool_call_stream
from streamfsm.testing._wire import NDJSON_FORMATS
from tests.support.runs import BODIES, SSE_FORMATS, cut_before, script
from tests.support.sdk import FMTS, create, serving, sync_serving

pytestmark = pytest.mark.anyio
BOUND_S = 20.0


@pytest.mark.parametrize("fmt", [*SSE_FORMATS, *NDJSON_FORMATS])
async def test_a_finished_run_gives_its_text_reasoning_calls_usage_and_finish(fmt: str) -> None:
    frames = tool_call_stream(
        fmt, [("get_weather", '{"city": "Oslo"}')], text=["Let me ", "look."], reasoning=["Hm", "m."]
    )  # type: ignore[arg-type]
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        with anyio.fail_after(BOUND_S):
            async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
                seen = [e async for e in run.collect()]
    result = run.result()
    assert result.text == "Let me look." == "".join(e.text for e in seen if isinstance(e, TextDelta))
    assert result.reasoning == "Hmm."
    assert [(c.name, c.arguments.replace(" ", "")) for c in result.tool_calls] == [
        ("get_weather", '{"city":"Oslo"}')
    ]
    assert result.tool_calls == tuple(e for e in seen if isinstance(e, ToolCall))
    assert result.finish_reason is FinishReason.TOOL_CALLS and result.raw_finish_reason
    assert result.usage is not None and result.usage.input_tokens and result.usage.output_tokens
    # The caller's own data never shows in the repr, nor in the record.
    assert "look" not in repr(result) and "Oslo" not in repr(result) and "Hm" not in repr(result)
    assert run.record is not None and "look." not in run.record.to_json()


async def test_result_needs_collect_before_the_first_event_and_a_run_that_ended() -> None:
    frames = text_stream("openai-chat", ["a", "b"])
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        body = BODIES["openai-chat"]
        async with streamfsm.open_stream("openai-chat", base_url=server.base_url, json=body) as run:
            with pytest.raises(RuntimeError, match="ended"):
                run.result()
            async for _ in run:
                pass
            with pytest.raises(RuntimeError, match="collect"):
                run.collect()  # too late: events were already applied
        with pytest.raises(RuntimeError, match=r"collect\(\)"):
            run.result()


async def test_without_collect_the_per_event_path_keeps_nothing() -> None:
    frames = text_stream("openai-chat", ["x" * 10] * 50)
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        body = BODIES["openai-chat"]
        async with streamfsm.open_stream("openai-chat", base_url=server.base_url, json=body) as run:
            assert run._core._on_event is _ON_EVENT  # the same dispatch table as before result() existed
            async for _ in run:
                pass
    assert run._core.ledger.kept is None


async def test_a_failed_run_gives_what_arrived_and_no_finish_reason() -> None:
    frames = text_stream("anthropic", ["Hello", " wor"])
    steps = (Headers(), *(Send(f) for f in cut_before("anthropic", frames, streamfsm.Finish)), Fin())
    async with FaultServer(steps) as server:
        with pytest.raises(streamfsm.StreamFailed):
            async with streamfsm.open_stream(
                "anthropic", base_url=server.base_url, json=BODIES["anthropic"]
            ) as run:
                async for _ in run.collect():
                    pass
    result = run.result()
    assert result.text == "Hello wor" and result.finish_reason is None


@pytest.mark.parametrize("fmt", FMTS)
async def test_an_sdk_run_gives_its_result(fmt: str) -> None:
    frames = text_stream(fmt, ["Hel", "lo"], reasoning=["th"])  # type: ignore[arg-type]
    async with serving(fmt, script(frames, End())) as (_, client):
        with anyio.fail_after(BOUND_S):
            async with streamfsm.wrap(create(fmt, client)) as run:
                async for _ in run.collect():
                    pass
    result = run.result()
    assert (result.text, result.finish_reason) == ("Hello", FinishReason.STOP)
    assert result.usage is not None and result.usage.output_tokens


@pytest.mark.parametrize("fmt", FMTS)
def test_a_sync_sdk_run_gives_its_result(fmt: str) -> None:
    frames = text_stream(fmt, ["Hel", "lo"])  # type: ignore[arg-type]
    with sync_serving(fmt, script(frames, End())) as (_, client):
        with streamfsm.wrap(lambda: create(fmt, client)) as run:
            for _ in run.collect():
                pass
    assert run.result().text == "Hello" and run.result().finish_reason is FinishReason.STOP


async def test_a_retrying_run_gives_the_delivered_result() -> None:
    frames = text_stream("openai-chat", ["Hello", " world"], reasoning=["think"])
    first = (Headers(), *(Send(f) for f in frames[:1]), Fin())  # cut before any text: retried automatically
    second = (Headers(), *(Send(f) for f in frames), End())
    scripts = [first, second]
    async with FaultServer(lambda request: scripts[min(request.seq, 1)]) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], ids=ids
            )

        with anyio.fail_after(BOUND_S):
            async with streamfsm.retrying(
                streamfsm.RetryPolicy(3, 10), open_attempt, sleep=lambda s: anyio.sleep(0)
            ) as run:
                async for _ in run.collect():
                    pass
    result = run.result()
    assert len(run.attempts) == 2
    assert (result.text, result.reasoning, result.finish_reason) == (
        "Hello world",
        "think",
        FinishReason.STOP,
    )
    assert result.usage is not None and result.usage.output_tokens
