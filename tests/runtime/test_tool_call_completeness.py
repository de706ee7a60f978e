"""A tool call is handed out only complete, and a finish is a whole answer only when its format says so
(issue 29, roots 1 and 2), shown on the run sources over real sockets (``open_stream``, ``wrap()``) and on
the adapters' call bookkeeping (one call under two ids, empty ids on continuations)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import openai
import pytest

import streamfsm
from streamfsm import StreamFailed, ToolCall
from streamfsm.testing import End, FaultServer, Headers, Send, build, frame
from streamfsm.wire import Finish, FinishReason, Frame, SdkOpenAIChat, ToolInputStart, adapter_for
from tests.support.runs import BODIES, script, validate_record
from tests.support.sdk import create, serving

pytestmark = pytest.mark.anyio
BOUND_S = 20.0
CUT_ARGUMENTS = '{"path": "src/app.py", "patch": "@@ -1'  # the output limit hit mid-arguments
LENGTH = {"openai-chat": "length", "anthropic": "max_tokens", "openai-responses": "max_output_tokens"}


def _cut_call_stream(fmt: str) -> list[bytes]:
    """Text, then a call whose arguments stop short, then the provider's end at the output limit. Chat and
    Anthropic end the call (``finish_reason``, ``content_block_stop``) on the cut JSON; Responses, which sends
    no ``done`` for a cut item, ends with ``response.incomplete``."""
    frames = build(fmt, [("text", "Patching."), ("tool", "apply_patch", CUT_ARGUMENTS)], finish=LENGTH[fmt])  # type: ignore[arg-type]
    if fmt == "openai-responses":
        frames = [
            f for f in frames if b"function_call_arguments.done" not in f and b'"status":"completed"' not in f
        ]
    return frames


@pytest.mark.parametrize("fmt", sorted(LENGTH))
async def test_a_call_cut_at_the_output_limit_is_interrupted_tool_input_not_a_call(fmt: str) -> None:
    steps = (Headers(), *(Send(f) for f in _cut_call_stream(fmt)), End())
    seen: list[Any] = []
    async with FaultServer(steps) as server:
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
                async for event in run.collect():
                    seen.append(event)
    d = info.value.diagnosis
    assert d.summary_key == "tool_input_interrupted.length"
    assert "apply_patch" in d.title and "did not run" in d.detail
    assert d.verdict.value == "no_retry" and d.action.value == "fix_request"
    assert not [e for e in seen if isinstance(e, ToolCall)] and run.result().tool_calls == ()
    record = validate_record(info.value.record)
    assert dict(record["finish_reason"]) == {"raw": LENGTH[fmt], "unified": "length"}  # the terminal event's
    assert run.result().finish_reason is FinishReason.LENGTH
    assert record["outcome"]["edge"] == "tool_input_unfinished"


@pytest.mark.parametrize("fmt", sorted(LENGTH))
async def test_wrap_agrees_on_a_call_cut_at_the_output_limit(fmt: str) -> None:
    seen: list[Any] = []
    async with serving(fmt, script(_cut_call_stream(fmt), End())) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(create(fmt, client)) as run:
                async for event in run.collect():
                    seen.append(event)
    assert info.value.diagnosis.summary_key == "tool_input_interrupted.length"
    assert not [e for e in seen if isinstance(e, ToolCall)] and run.result().tool_calls == ()


def test_the_sdk_item_path_agrees_on_a_chat_call_cut_at_the_output_limit() -> None:
    """The SDK's own chunk objects (what ``wrap()`` translates when it cannot read the body): the finish
    leaves the cut call open, so no ``ToolCall`` is ever emitted."""
    chunk_type = openai.types.chat.ChatCompletionChunk
    translator = SdkOpenAIChat()
    events: list[Any] = []
    for sse in _sse(_cut_call_stream("openai-chat")):
        if sse.data != "[DONE]":
            events += translator.feed_item(chunk_type.model_validate(json.loads(sse.data)))
    events += translator.end()
    assert not [e for e in events if isinstance(e, ToolCall)]
    assert isinstance(events[-1], Finish) and events[-1].raw_reason == "length"


def _sse(frames: list[bytes]) -> list[Frame]:
    from streamfsm.wire import SSEDecoder

    decoder = SSEDecoder()
    return [event for f in frames for event in decoder.feed(f)]


async def test_an_unrecognised_finish_is_named_and_never_whole() -> None:
    frames = build("openai-chat", [("text", "Half an ans")], finish="engine_overloaded_stop")
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        with anyio.fail_after(BOUND_S):
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
            ) as run:
                async for _ in run:
                    pass
    d = run.diagnosis
    assert d is not None and d.summary_key == "completed.unrecognised"
    assert "engine_overloaded_stop" in d.title and d.confidence.value == "low"
    assert (d.verdict.value, d.action.value) == ("user_confirmed_retry", "continue_with_partial")
    assert validate_record(run.record)["finish_reason"]["raw"] == "engine_overloaded_stop"  # type: ignore[arg-type]


async def test_a_finish_reason_that_reads_as_an_abort_is_a_provider_error_there() -> None:
    frames = build("openai-chat", [("text", "Half")], finish="abort")  # vLLM, SGLang: the engine aborted
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
            ) as run:
                async for _ in run:
                    pass
    d = info.value.diagnosis
    assert d.summary_key == "provider_error.unknown" and d.state.activity.value == "generating"
    assert "finish_reason=abort" in d.evidence and d.verdict.value == "user_confirmed_retry"


def _chat_chunk(tool_calls: list[dict[str, Any]], finish: str | None = None) -> bytes:
    delta = {"role": "assistant", "tool_calls": tool_calls}
    return frame({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def _call(index: int, name: str, arguments: str) -> dict[str, Any]:
    return {
        "index": index,
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


@pytest.mark.parametrize(
    "chunks",
    [
        # Ollama and vLLM without incremental parsing: the whole call and its finish in one chunk
        [_chat_chunk([_call(0, "apply_patch", '{"path": "a.py", "patch": "@@')], "tool_calls")],
        # several calls in one chunk, the first one's arguments cut, then the finish
        [
            _chat_chunk(
                [_call(0, "apply_patch", '{"path": "a.py", "patch": "@@'), _call(1, "read_file", "{}")]
            ),
            _chat_chunk([], "tool_calls"),
        ],
    ],
    ids=["call-and-finish", "two-calls"],
)
async def test_a_call_ended_on_unparseable_arguments_in_the_chunk_that_started_it_is_interrupted_tool_input(
    chunks: list[bytes],
) -> None:
    steps = (Headers(), *(Send(c) for c in chunks), Send(b"data: [DONE]\n\n"), End())
    seen: list[Any] = []
    async with FaultServer(steps) as server:
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
            ) as run:
                async for event in run.collect():
                    seen.append(event)
    d = info.value.diagnosis
    # The call's start came in the same chunk as its end: it is still the call that was cut, not a break
    # of the stream before any output.
    assert d.summary_key == "tool_input_interrupted.unparseable_arguments", d.summary_key
    assert d.state.activity.value == "tool_input_open" and "apply_patch" in d.title
    assert not [e for e in seen if isinstance(e, ToolCall)] and run.result().tool_calls == ()


async def test_wrap_agrees_on_a_call_ended_on_unparseable_arguments_in_the_chunk_that_started_it() -> None:
    chunk = _chat_chunk([_call(0, "apply_patch", '{"path": "a.py", "patch": "@@')], "tool_calls")
    async with serving("openai-chat", script([chunk, b"data: [DONE]\n\n"], End())) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(create("openai-chat", client)) as run:
                async for _ in run:
                    pass
    assert info.value.diagnosis.summary_key == "tool_input_interrupted.unparseable_arguments"


def _feed(fmt: str, payloads: list[dict[str, Any]]) -> list[Any]:
    adapter = adapter_for(fmt)
    return [e for p in payloads for e in adapter.feed(Frame(json.dumps(p), p.get("type", "message")))]


def test_one_responses_call_under_an_item_id_and_a_call_id_is_one_call() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    events = _feed(
        "openai-responses",
        [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"a":'},
            {"type": "response.function_call_arguments.delta", "item_id": "call_1", "delta": "1}"},
            {"type": "response.function_call_arguments.done", "item_id": "call_1", "arguments": '{"a":1}'},
            # a gateway's done item without its item id, and the same call announced again
            {"type": "response.output_item.done", "item": {**item, "id": None, "arguments": '{"a":1}'}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"status": "completed"}},
        ],
    )
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.call_id, c.arguments) for c in calls] == [("call_1", '{"a":1}')]
    assert len([e for e in events if isinstance(e, ToolInputStart)]) == 1


@pytest.mark.parametrize("empty", ["", " "])
def test_an_empty_id_or_name_on_a_chat_continuation_continues_the_open_call(empty: str) -> None:
    def chunk(fragment: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        delta = {"tool_calls": [fragment]} if fragment else {}
        return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    start = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    more = {"id": empty, "type": "function", "function": {"name": empty, "arguments": '{"a":'}}
    adapter = adapter_for("openai-chat")
    payloads = [start, {**more, "index": 0}, {**more, "function": {"arguments": "1}"}}]
    events = [e for p in payloads for e in adapter.feed(Frame(json.dumps(chunk(p))))]
    events += adapter.feed(Frame(json.dumps(chunk({}, "tool_calls")))) + adapter.feed(Frame("[DONE]"))
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("call_1", "f", '{"a":1}')]
