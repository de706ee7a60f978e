"""``wrap()`` takes openai's ``client.chat.completions.stream(...)`` manager (async and sync), as it takes
anthropic's ``messages.stream()``: the run reads the body itself, sees a cut as a cut, classifies the SDK's
HTTP errors, and closes what the manager opened. The real openai SDK against the FaultServer."""

from __future__ import annotations

import anyio
import pytest

import streamfsm
from streamfsm import FinishReason, SdkRun, StreamFailed, SyncSdkRun, TextDelta, ToolCall
from streamfsm.testing import End, Fin, Status, text_stream, tool_call_stream
from tests.support.runs import check_failure, expect, script
from tests.support.sdk import BOUND_S, SDK_BODIES, serving, sync_serving

BODY = SDK_BODIES["openai-chat"]
RATE_LIMITED = Status(
    429,
    (("content-type", "application/json"), ("retry-after", "2")),
    b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}',
)


@pytest.mark.anyio
async def test_the_async_manager_is_wrapped_and_read_by_the_run() -> None:
    frames = tool_call_stream("openai-chat", [("get_weather", '{"city": "Oslo"}')], text=["Hel", "lo"])
    async with serving("openai-chat", script(frames, End())) as (server, client):
        with anyio.fail_after(BOUND_S):
            async with streamfsm.wrap(client.chat.completions.stream(**BODY)) as run:
                assert isinstance(run, SdkRun) and run.provider == "openai-chat"
                events = [e async for e in run.collect()]
    result = run.result()
    assert result.text == "Hello" and [c.name for c in result.tool_calls] == ["get_weather"]
    assert result.finish_reason is FinishReason.TOOL_CALLS
    assert sum(isinstance(e, ToolCall) for e in events) == 1
    assert run.record is not None and run.record["outcome"]["class"] == "completed"
    assert run.record["transport"]["bytes_received"] > 0
    assert run._reads_body  # the body was read by the run itself, not through the helper's events
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_the_async_manager_cut_mid_answer_is_a_cut_and_its_429_is_diagnosed() -> None:
    frames = text_stream("openai-chat", ["Hello", " wor", "ld"])
    async with serving("openai-chat", script(frames[:3], Fin())) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(client.chat.completions.stream(**BODY)) as run:
                async for _ in run:
                    pass
    expect(
        check_failure(info.value), "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation"
    )
    async with serving("openai-chat", (RATE_LIMITED,)) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(client.chat.completions.stream(**BODY)) as run:
                async for _ in run:
                    pass
    assert info.value.diagnosis.summary_key == "provider_error.rate_limit"


def test_the_sync_manager_is_wrapped_and_read_by_the_run() -> None:
    frames = text_stream("openai-chat", ["Hel", "lo"])
    with sync_serving("openai-chat", script(frames, End())) as (_, client):
        manager = client.chat.completions.stream(**BODY)
        with streamfsm.wrap(manager) as run:
            assert isinstance(run, SyncSdkRun)
            text = "".join(e.text for e in run if isinstance(e, TextDelta))
    assert text == "Hello" and run.finished
    assert run.record is not None and run._reads_body


def test_the_sync_managers_entered_stream_is_wrapped_too() -> None:
    frames = text_stream("openai-chat", ["Hel", "lo"])
    with sync_serving("openai-chat", script(frames, End())) as (_, client):
        with client.chat.completions.stream(**BODY) as stream, streamfsm.wrap(stream) as run:
            text = "".join(e.text for e in run if isinstance(e, TextDelta))
    assert text == "Hello" and run.finished


def test_the_sync_managers_429_is_diagnosed() -> None:
    with sync_serving("openai-chat", (RATE_LIMITED,)) as (_, client):
        with pytest.raises(StreamFailed) as info:
            with streamfsm.wrap(client.chat.completions.stream(**BODY)) as run:
                for _ in run:
                    pass
    failure = check_failure(info.value)
    assert failure.diagnosis.summary_key == "provider_error.rate_limit"
    assert failure.diagnosis.retry_after_s == 2.0
