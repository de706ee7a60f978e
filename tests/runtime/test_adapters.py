"""Wire adapters: exact normalised events per format, the machine's grammar, and no crash on any input."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.classify import ProviderErrorKind
from streamfsm.machine import Activity, IllegalTransition, StreamMachine, Trigger
from streamfsm.testing import (
    CACHED_TOKENS,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    REASONING_TOKENS,
    SSE_FORMATS,
    build,
    comment,
    error_event,
    frame,
    refusal_stream,
    text_stream,
    tool_call_stream,
)
from streamfsm.testing._wire import MODELS, NDJSON_FORMATS, RESPONSE_IDS
from streamfsm.wire import (
    FORMAT_NAMES,
    MAX_LINE_BYTES,
    Adapter,
    Finish,
    FinishReason,
    Frame,
    Keepalive,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    SSEDecoder,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
    adapter_for,
    format_named,
)
from streamfsm.wire._adapters._base import KEEPALIVE_COMMENT, MAX_DELTA_KEYS
from tests.support.runs import split_at

EVENT_TYPES = (
    TextDelta,
    ReasoningDelta,
    ToolInputStart,
    ToolInputDelta,
    ToolInputEnd,
    ToolCall,
    Usage,
    Finish,
    Metadata,
    Keepalive,
    ProviderErrorEvent,
)
VIOLATIONS = {
    "malformed_json",
    "not_an_object",
    "unexpected_shape",
    "unexpected_event",
    "sequence_regressed",
    "unknown_tool_call",
    "data_after_terminal",
    "unknown_block",
    "unparseable_arguments",  # a call the provider ended whose arguments are not JSON (the run: tool input)
}
BOOKKEEPING = (Metadata, Keepalive)


def run(fmt: str, frames: list[bytes], *, end: bool = True) -> tuple[Adapter, list[StreamEvent]]:
    adapter = adapter_for(fmt)
    decoder = format_named(fmt).framing(MAX_LINE_BYTES)  # SSE, or Ollama's NDJSON
    events: list[StreamEvent] = []
    for chunk in frames:
        for sse in decoder.feed(chunk):
            events += adapter.feed(sse)
    decoder.close()
    if end:
        events += adapter.end()
    return adapter, events


def drive(events: list[StreamEvent]) -> StreamMachine:
    machine = StreamMachine()
    machine.send(Trigger.REQUEST_SENT)
    machine.send(Trigger.HEADERS_RECEIVED)
    for event in events:
        machine.send(event.trigger)
    return machine


def progress(events: list[StreamEvent]) -> list[StreamEvent]:
    return [e for e in events if not isinstance(e, BOOKKEEPING)]


def sse(data: Any, event: str = "message") -> Frame:
    return Frame(data if isinstance(data, str) else json.dumps(data), event)


def feed_all(adapter: Adapter, items: list[Frame]) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    for item in items:
        out += adapter.feed(item)
    return out


def text_of(events: list[StreamEvent], kind: type[TextDelta] | type[ReasoningDelta] = TextDelta) -> str:
    return "".join(e.text for e in events if isinstance(e, kind))


def usage_of(events: list[StreamEvent]) -> Usage:
    return [e for e in events if isinstance(e, Usage)][-1]


# -- a normal text stream, exactly -------------------------------------------------------------------------

M = Metadata
EXPECTED_TEXT = {
    "openai-chat": [
        M("chat.completion.chunk", RESPONSE_IDS["openai-chat"], MODELS["openai-chat"]),
        TextDelta("Hel"),
        TextDelta("lo"),
        M("chat.completion.chunk"),  # the finish_reason chunk
        Usage(PROMPT_TOKENS, OUTPUT_TOKENS, 0, CACHED_TOKENS, PROMPT_TOKENS + OUTPUT_TOKENS),
        Finish(FinishReason.STOP, "stop"),
    ],
    "openai-responses": [
        M("response.created", RESPONSE_IDS["openai-responses"], MODELS["openai-responses"]),
        M("response.in_progress", RESPONSE_IDS["openai-responses"], MODELS["openai-responses"]),
        M("response.output_item.added"),
        M("response.content_part.added"),
        TextDelta("Hel"),
        TextDelta("lo"),
        M("response.output_text.done"),
        M("response.content_part.done"),
        M("response.output_item.done"),
        Usage(PROMPT_TOKENS, OUTPUT_TOKENS, 0, CACHED_TOKENS, PROMPT_TOKENS + OUTPUT_TOKENS),
        Finish(FinishReason.STOP, "completed"),
    ],
    "anthropic": [
        M("message_start", RESPONSE_IDS["anthropic"], MODELS["anthropic"]),
        Usage(PROMPT_TOKENS, None, None, CACHED_TOKENS),  # message_start's placeholder output (1) dropped
        M("content_block_start"),
        Keepalive("ping"),
        TextDelta("Hel"),
        TextDelta("lo"),
        M("content_block_stop"),
        Usage(PROMPT_TOKENS, OUTPUT_TOKENS, None, CACHED_TOKENS),
        Finish(FinishReason.STOP, "end_turn"),
    ],
    "gemini": [
        M("generate_content_chunk", RESPONSE_IDS["gemini"], MODELS["gemini"]),
        TextDelta("Hel"),
        TextDelta("lo"),
        Usage(PROMPT_TOKENS, OUTPUT_TOKENS, None, CACHED_TOKENS, PROMPT_TOKENS + OUTPUT_TOKENS),
        Finish(FinishReason.STOP, "STOP"),
    ],
}
EXPECTED_TEXT_KEYS = {
    "openai-chat": {"role": 1, "content": 2},
    "openai-responses": {"output_text.delta": 2},
    "anthropic": {"text_delta": 2},
    "gemini": {"text": 2},
}


@pytest.mark.parametrize("fmt", SSE_FORMATS)
def test_text_stream_exact_events(fmt: str) -> None:
    adapter, events = run(fmt, text_stream(fmt, ["Hel", "lo"]))  # type: ignore[arg-type]
    assert events == EXPECTED_TEXT[fmt]
    assert adapter.terminal_seen
    assert (adapter.response_id, adapter.model) == (RESPONSE_IDS[fmt], MODELS[fmt])
    assert adapter.delta_keys == EXPECTED_TEXT_KEYS[fmt]
    assert adapter.tool_names == {}
    assert adapter.anomalies == {}
    assert drive(events).state.activity is Activity.FINISHED


@pytest.mark.parametrize("fmt", SSE_FORMATS)
def test_reasoning_then_text(fmt: str) -> None:
    _, events = run(fmt, text_stream(fmt, ["An", "swer"], reasoning=["Let me ", "think"]))  # type: ignore[arg-type]
    kinds = [type(e) for e in progress(events) if isinstance(e, (TextDelta, ReasoningDelta))]
    assert kinds == [ReasoningDelta, ReasoningDelta, TextDelta, TextDelta]
    assert text_of(events, ReasoningDelta) == "Let me think"
    assert text_of(events) == "Answer"
    summary = {e.summary for e in events if isinstance(e, ReasoningDelta)}
    assert summary == {fmt == "openai-responses"}  # Responses streams reasoning summaries
    expected_reasoning = None if fmt == "anthropic" else REASONING_TOKENS
    total = None if fmt == "anthropic" else PROMPT_TOKENS + OUTPUT_TOKENS
    assert usage_of(events) == Usage(PROMPT_TOKENS, OUTPUT_TOKENS, expected_reasoning, CACHED_TOKENS, total)
    machine = drive(events)
    assert machine.state.activity is Activity.FINISHED
    assert list(machine.history).count(Trigger.REASONING_DELTA) == 2


@pytest.mark.parametrize(
    ("fmt", "keys"),
    [
        ("openai-chat", {"role": 1, "reasoning_content": 1, "content": 1}),
        ("openai-responses", {"reasoning_summary_text.delta": 1, "output_text.delta": 1}),
        ("anthropic", {"thinking_delta": 1, "signature_delta": 1, "text_delta": 1}),
        ("gemini", {"text": 2, "thought": 1}),
    ],
)
def test_delta_keys_name_reasoning_apart_from_content(fmt: str, keys: dict[str, int]) -> None:
    adapter, _ = run(fmt, text_stream(fmt, ["secret answer"], reasoning=["secret thought"]))  # type: ignore[arg-type]
    assert adapter.delta_keys == keys
    assert "secret" not in repr(adapter.delta_keys)


def test_chat_reasoning_key_variants_are_counted_by_their_raw_name() -> None:
    adapter, events = run(
        "openai-chat", text_stream("openai-chat", ["a"], reasoning=["r"], reasoning_key="reasoning")
    )
    assert adapter.delta_keys == {"role": 1, "reasoning": 1, "content": 1}
    assert text_of(events, ReasoningDelta) == "r"


def test_chat_reasoning_content_and_reasoning_together_are_one_delta() -> None:
    adapter = adapter_for("openai-chat")
    events = adapter.feed(
        sse({"choices": [{"index": 0, "delta": {"reasoning_content": "x", "reasoning": "x"}}]})
    )
    assert [e for e in events if isinstance(e, ReasoningDelta)] == [ReasoningDelta("x")]
    assert adapter.delta_keys == {"reasoning_content": 1, "reasoning": 1}


def test_delta_keys_are_bounded() -> None:
    adapter = adapter_for("openai-chat")
    for n in range(100):
        adapter.feed(sse({"choices": [{"index": 0, "delta": {f"field_{n}": 1, "content": "a"}}]}))
    adapter.feed(sse({"choices": [{"index": 0, "delta": {"k" * 100: 1}}]}))  # not a field name: "other"
    assert len(adapter.delta_keys) == MAX_DELTA_KEYS
    assert adapter.delta_keys["content"] == 100
    assert sum(adapter.delta_keys.values()) == 201
    assert adapter.delta_keys["other"] == 201 - 100 - (MAX_DELTA_KEYS - 2)


# -- tool calls ----------------------------------------------------------------------------------------------

WEATHER = '{"city": "Paris", "units": "metric", "days": [1, 2, 3]}'
CLOCK = '{"tz": "Europe/Paris"}'


@pytest.mark.parametrize("fmt", SSE_FORMATS)
def test_one_tool_call(fmt: str) -> None:
    adapter, events = run(fmt, tool_call_stream(fmt, [("get_weather", WEATHER)]))  # type: ignore[arg-type]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 1
    assert (calls[0].name, json.loads(calls[0].arguments)) == ("get_weather", json.loads(WEATHER))
    assert adapter.tool_names == {calls[0].call_id: "get_weather"}
    tool_events = [
        type(e) for e in events if isinstance(e, (ToolInputStart, ToolInputDelta, ToolInputEnd, ToolCall))
    ]
    deltas = [e.arguments_delta for e in events if isinstance(e, ToolInputDelta)]
    # Gemini's call arrives whole: its input is the arguments in one piece, as the adapter dumps them
    assert "".join(deltas) == (calls[0].arguments if fmt == "gemini" else WEATHER)
    assert tool_events == [ToolInputStart, *[ToolInputDelta] * len(deltas), ToolInputEnd, ToolCall]
    finish = events[-1]
    assert isinstance(finish, Finish)
    assert finish.reason is FinishReason.TOOL_CALLS
    assert drive(events).state.activity is Activity.FINISHED


@pytest.mark.parametrize("fmt", SSE_FORMATS)
def test_parallel_tool_calls_carry_their_own_full_arguments(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("get_weather", WEATHER), ("get_time", CLOCK)], text=["Checking."])  # type: ignore[arg-type]
    adapter, events = run(fmt, frames)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", json.loads(WEATHER)),
        ("get_time", json.loads(CLOCK)),
    ]
    assert len({c.call_id for c in calls}) == 2
    assert adapter.tool_names == {c.call_id: c.name for c in calls}
    starts = [e.call_id for e in events if isinstance(e, ToolInputStart)]
    assert starts == [c.call_id for c in calls]
    assert drive(events).state.activity is Activity.FINISHED


def test_gemini_parallel_calls_arrive_in_one_chunk_and_keep_order() -> None:
    frames = tool_call_stream("gemini", [("a", "{}"), ("b", '{"x": 1}')], parallel=True)
    assert len(frames) == 1
    _, events = run("gemini", frames)
    assert [(e.call_id, e.name, e.arguments, e.index) for e in events if isinstance(e, ToolCall)] == [
        ("call_0", "a", "{}", 0),
        ("call_1", "b", '{"x":1}', 1),
    ]


def test_gemini_function_call_id_is_kept() -> None:
    adapter = adapter_for("gemini")
    part = {"functionCall": {"id": "fc-1", "name": "f", "args": {"q": "x"}}}
    candidate = {"content": {"parts": [part]}, "index": 0, "finishReason": "STOP"}
    events = [*adapter.feed(sse({"candidates": [candidate]})), *adapter.end()]
    assert [e for e in events if isinstance(e, ToolCall)] == [ToolCall("fc-1", "f", '{"q":"x"}', 0)]


def test_chat_text_while_a_call_is_open_closes_it_first() -> None:
    adapter = adapter_for("openai-chat")
    frag = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}
    events = feed_all(
        adapter,
        [
            sse({"choices": [{"index": 0, "delta": {"tool_calls": [frag]}}]}),
            sse(
                {
                    "choices": [
                        {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}
                    ]
                }
            ),
            sse({"choices": [{"index": 0, "delta": {"content": "done"}}]}),
            sse("[DONE]"),
        ],
    )
    assert progress(events) == [
        ToolInputStart("call_1", "f", 0),
        ToolInputDelta("call_1", '{"a":'),
        ToolInputDelta("call_1", "1}"),
        ToolInputEnd("call_1"),
        ToolCall("call_1", "f", '{"a":1}', 0),
        TextDelta("done"),
        Finish(FinishReason.OTHER, None),  # [DONE] without any finish_reason
    ]
    drive(events)


def test_chat_fragment_for_a_closed_call_is_a_violation_at_its_event() -> None:
    adapter = adapter_for("openai-chat")
    first = {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": "{}"}}
    second = {"index": 1, "id": "call_b", "function": {"name": "g", "arguments": "{}"}}
    feed_all(
        adapter,
        [
            sse({"choices": [{"index": 0, "delta": {"tool_calls": [first]}}]}),
            sse({"choices": [{"index": 0, "delta": {"tool_calls": [second]}}]}),
        ],
    )
    late = sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]}}]}
    )
    with pytest.raises(ProtocolViolation) as info:
        adapter.feed(late)
    assert (info.value.detail, info.value.position) == ("unknown_tool_call", 2)


def test_chat_arguments_for_a_call_never_started_are_a_violation() -> None:
    adapter = adapter_for("openai-chat")
    orphan = sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 3, "function": {"arguments": "{"}}]}}]}
    )
    with pytest.raises(ProtocolViolation, match="unknown_tool_call at 0"):
        adapter.feed(orphan)


def test_chat_new_id_at_the_same_index_is_a_new_call() -> None:
    adapter = adapter_for("openai-chat")
    frags = [
        {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": '{"n":1}'}},
        {"index": 0, "id": "call_b", "function": {"name": "g", "arguments": '{"n":2}'}},
    ]
    events = feed_all(
        adapter, [sse({"choices": [{"index": 0, "delta": {"tool_calls": [f]}}]}) for f in frags]
    )
    events += adapter.feed(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    assert [(e.call_id, e.arguments) for e in events if isinstance(e, ToolCall)] == [
        ("call_a", '{"n":1}'),
        ("call_b", '{"n":2}'),
    ]


def test_chat_only_choice_zero_is_followed() -> None:
    adapter = adapter_for("openai-chat")
    events = adapter.feed(sse({"choices": [{"index": 1, "delta": {"content": "other"}}]}))
    assert not any(isinstance(e, TextDelta) for e in events)
    assert adapter.anomalies == {"extra_choice": 1}


def test_chat_empty_and_role_only_deltas_are_not_visible_output() -> None:
    adapter = adapter_for("openai-chat")
    events = feed_all(
        adapter,
        [
            sse({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            sse({"choices": [{"index": 0, "delta": {"content": None}}]}),
            sse({"choices": None, "usage": None}),
        ],
    )
    assert all(isinstance(e, Metadata) for e in events)
    assert len(events) == 3  # every SSE event is represented once, none as progress
    assert drive(events).state.commitment.value == "none"


def test_anthropic_server_tool_use_is_server_side_and_results_are_bookkeeping() -> None:
    adapter = adapter_for("anthropic")
    block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    delta = {"type": "input_json_delta", "partial_json": '{"query": "x"}'}
    events = feed_all(
        adapter,
        [
            sse({"type": "content_block_start", "index": 0, "content_block": block}),
            sse({"type": "content_block_delta", "index": 0, "delta": delta}),
            sse({"type": "content_block_stop", "index": 0}),
            sse({"type": "content_block_start", "index": 1, "content_block": result}),
            sse({"type": "content_block_stop", "index": 1}),
        ],
    )
    assert progress(events) == [
        ToolInputStart("srvtoolu_1", "web_search", 0, server_side=True),
        ToolInputDelta("srvtoolu_1", '{"query": "x"}'),
        ToolInputEnd("srvtoolu_1"),
        ToolCall("srvtoolu_1", "web_search", '{"query": "x"}', 0, server_side=True),
    ]
    assert events[-2:] == [Metadata("content_block_start"), Metadata("content_block_stop")]


def test_anthropic_tool_use_without_input_has_empty_object_arguments() -> None:
    adapter = adapter_for("anthropic")
    block = {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}
    events = feed_all(
        adapter,
        [
            sse({"type": "content_block_start", "index": 0, "content_block": block}),
            sse({"type": "content_block_stop", "index": 0}),
        ],
    )
    assert events[-1] == ToolCall("toolu_1", "now", "{}", 0)


def test_anthropic_json_delta_for_a_closed_block_is_a_violation() -> None:
    adapter = adapter_for("anthropic")
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    feed_all(
        adapter,
        [
            sse({"type": "content_block_start", "index": 0, "content_block": block}),
            sse({"type": "content_block_stop", "index": 0}),
        ],
    )
    late = sse(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        }
    )
    with pytest.raises(ProtocolViolation) as info:
        adapter.feed(late)
    assert (info.value.detail, info.value.position) == ("unknown_tool_call", 2)


def test_anthropic_signature_and_citations_are_bookkeeping_but_counted() -> None:
    adapter = adapter_for("anthropic")
    events = feed_all(
        adapter,
        [
            sse({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}),
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "signature_delta", "signature": "s"},
                }
            ),
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "citations_delta", "citation": {}},
                }
            ),
        ],
    )
    assert events[1:] == [Metadata("content_block_delta"), Metadata("content_block_delta")]
    assert adapter.delta_keys == {"signature_delta": 1, "citations_delta": 1}


def test_anthropic_trusts_the_data_type_over_the_event_name() -> None:
    adapter = adapter_for("anthropic")
    events = adapter.feed(sse({"type": "ping"}, event="message_stop"))
    assert events == [Keepalive("ping")]
    assert not adapter.terminal_seen
    assert adapter.anomalies == {"event_name_mismatch": 1}


def test_responses_sequence_must_increase() -> None:
    adapter = adapter_for("openai-responses")
    adapter.feed(sse({"type": "response.created", "sequence_number": 0, "response": {"id": "r"}}))
    adapter.feed(sse({"type": "response.in_progress", "sequence_number": 4, "response": {"id": "r"}}))
    with pytest.raises(ProtocolViolation) as info:
        adapter.feed(sse({"type": "response.output_text.delta", "sequence_number": 4, "delta": "x"}))
    assert (info.value.detail, info.value.position) == ("sequence_regressed", 2)


def test_responses_background_stream_is_queued_first_and_not_an_unknown_event() -> None:
    # A background request's stream (background=true, stream=true) says response.queued before the work.
    frames = text_stream("openai-responses", ["Hel", "lo"], background=True)
    assert b'"type":"response.queued"' in frames[1]
    adapter, events = run("openai-responses", frames)
    ids = (RESPONSE_IDS["openai-responses"], MODELS["openai-responses"])
    assert events[:2] == [Metadata("response.created", *ids), Metadata("response.queued", *ids)]
    assert events[2:] == EXPECTED_TEXT["openai-responses"][1:]
    assert adapter.anomalies == {}
    assert drive(events).state.activity is Activity.FINISHED


def test_responses_completed_with_a_background_status_is_no_whole_answer() -> None:
    # A queued response carried to its end (a non-streaming background call, as _whole hands it over).
    adapter = adapter_for("openai-responses")
    response = {"id": "resp_0", "status": "queued", "output": []}
    events = feed_all(adapter, [sse({"type": "response.completed", "response": response})])
    assert events == [Finish(FinishReason.OTHER, "queued")]
    assert adapter.finish_raw == "queued"


def test_responses_unknown_types_are_forward_compatible_bookkeeping() -> None:
    # An unknown *.delta may be answer content: counted by name and noted as unread, never silent.
    adapter = adapter_for("openai-responses")
    events = feed_all(
        adapter,
        [sse({"type": "response.novel_text.delta", "delta": "AAAA"}), sse({"type": "response.novel_thing"})],
    )
    assert events == [Metadata("response.novel_text.delta"), Metadata("response.novel_thing")]
    assert adapter.anomalies == {"unknown_event": 2, "unread_content": 1}
    assert adapter.delta_keys == {"novel_text.delta": 1}


def test_responses_function_call_done_without_added_is_a_whole_call() -> None:
    adapter = adapter_for("openai-responses")
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}
    events = adapter.feed(sse({"type": "response.output_item.done", "output_index": 0, "item": item}))
    assert events == [ToolCall("call_1", "f", '{"a":1}', 0)]
    events += adapter.feed(sse({"type": "response.completed", "response": {"status": "completed"}}))
    assert events[-1] == Finish(FinishReason.TOOL_CALLS, "completed")


def test_responses_arguments_for_an_unknown_item_are_a_violation() -> None:
    adapter = adapter_for("openai-responses")
    with pytest.raises(ProtocolViolation, match="unknown_tool_call at 0"):
        adapter.feed(sse({"type": "response.function_call_arguments.delta", "item_id": "fc_x", "delta": "{"}))


def test_responses_text_while_a_call_is_open_closes_it_with_what_arrived() -> None:
    adapter = adapter_for("openai-responses")
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    events = feed_all(
        adapter,
        [
            sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
            sse({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{}"}),
            sse({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "hi"}),
            sse({"type": "response.output_item.done", "output_index": 0, "item": item}),  # late: bookkeeping
        ],
    )
    assert progress(events) == [
        ToolInputStart("call_1", "f", 0),
        ToolInputDelta("call_1", "{}"),
        ToolInputEnd("call_1"),
        ToolCall("call_1", "f", "{}", 0),
        TextDelta("hi"),
    ]
    drive(events)


# -- refusals, errors, finish reasons -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
def test_refusal_is_visible_text_flagged_as_refusal(fmt: str) -> None:
    _, events = run(fmt, refusal_stream(fmt, ["I can't ", "help with that."]))  # type: ignore[arg-type]
    refusals = [e for e in events if isinstance(e, TextDelta)]
    assert [e.refusal for e in refusals] == [True, True]
    assert text_of(events) == "I can't help with that."
    assert drive(events).state.commitment.value == "visible"


def test_anthropic_refusal_is_a_content_filter_finish() -> None:
    _, events = run("anthropic", refusal_stream("anthropic", ["No."]))
    assert events[-1] == Finish(FinishReason.CONTENT_FILTER, "refusal")


ERROR_CASES = [
    ("openai-chat", "nested"),
    ("openai-responses", "flat"),
    ("openai-responses", "nested"),
    ("openai-responses", "failed"),
    ("anthropic", "nested"),
    ("gemini", "nested"),
]


@pytest.mark.parametrize(("fmt", "shape"), ERROR_CASES)
@pytest.mark.parametrize("after_text", [False, True])
def test_in_band_error_before_and_after_text(fmt: str, shape: str, after_text: bool) -> None:
    frames = text_stream(fmt, ["Partial ", "answer"])  # type: ignore[arg-type]
    visible_at = next(i for i, f in enumerate(frames) if b"Partial" in f)
    prefix = frames[: visible_at + 1] if after_text else frames[:visible_at]
    error = error_event(fmt, "rate_limit", shape=shape, sequence_number=len(prefix))  # type: ignore[arg-type]
    adapter, events = run(fmt, [*prefix, error], end=False)
    assert isinstance(events[-1], ProviderErrorEvent)
    assert events[-1].error.kind is ProviderErrorKind.RATE_LIMIT
    assert adapter.terminal_seen
    assert (text_of(events) == "Partial ") is after_text
    machine = StreamMachine()
    machine.send(Trigger.REQUEST_SENT)
    machine.send(Trigger.HEADERS_RECEIVED)
    for event in events[:-1]:
        machine.send(event.trigger)
    assert machine.state.activity is (Activity.GENERATING if after_text else Activity.STREAMING)
    assert machine.send(events[-1].trigger).activity is Activity.FAILED


def test_anthropic_overload_is_overloaded() -> None:
    _, events = run("anthropic", [error_event("anthropic", "overloaded")], end=False)
    assert isinstance(events[0], ProviderErrorEvent)
    assert events[0].error.kind is ProviderErrorKind.OVERLOADED


def test_second_error_event_is_dropped_and_counted() -> None:
    adapter = adapter_for("openai-responses")
    events = feed_all(
        adapter,
        [
            SSEDecoder().feed(error_event("openai-responses", "server_error", shape="flat"))[0],
            sse(
                {
                    "type": "response.failed",
                    "response": {"status": "failed", "error": {"code": "server_error"}},
                }
            ),
        ],
    )
    assert [type(e) for e in events] == [ProviderErrorEvent]
    assert adapter.anomalies == {"data_after_error": 1}


def test_gemini_usage_counts_hosted_tool_input_and_thoughts() -> None:
    """A recorded Gemini 3 usage with a hosted tool: input is the prompt and the tool-use prompt, output the
    candidates and the thoughts, so together they are the provider's total."""
    usage = {
        "promptTokenCount": 55,
        "candidatesTokenCount": 51,
        "toolUsePromptTokenCount": 89,
        "thoughtsTokenCount": 56,
        "cachedContentTokenCount": 20,
        "totalTokenCount": 251,
        "trafficType": "ON_DEMAND",
    }
    adapter = adapter_for("gemini")
    candidate = {"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}
    events = adapter.feed(sse({"candidates": [candidate], "usageMetadata": usage}))
    assert usage_of(events) == Usage(144, 107, 56, 20, 251)
    # A streamed call's chunks carry only the traffic type: no Usage, so the final count is not overwritten.
    only_traffic = {
        "candidates": [{"content": {"parts": [{"text": "x"}]}}],
        "usageMetadata": {"trafficType": "ON_DEMAND"},
    }
    assert not [e for e in adapter_for("gemini").feed(sse(only_traffic)) if isinstance(e, Usage)]


def test_gemini_blocked_prompt_is_a_content_filter_error() -> None:
    adapter = adapter_for("gemini")
    events = adapter.feed(sse({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "responseId": "r"}))
    assert isinstance(events[-1], ProviderErrorEvent)
    assert (events[-1].error.kind, events[-1].error.code) == (
        ProviderErrorKind.CONTENT_FILTER,
        "PROHIBITED_CONTENT",
    )
    assert adapter.terminal_seen
    assert adapter.end() == []


FINISH_CASES = [
    ("openai-chat", "stop", FinishReason.STOP),
    ("openai-chat", "length", FinishReason.LENGTH),
    ("openai-chat", "tool_calls", FinishReason.TOOL_CALLS),
    ("openai-chat", "function_call", FinishReason.TOOL_CALLS),
    ("openai-chat", "content_filter", FinishReason.CONTENT_FILTER),
    ("openai-chat", "eos", FinishReason.STOP),  # a whole answer (vLLM, TGI), as completed.finished says
    ("openai-chat", "sensitive", FinishReason.CONTENT_FILTER),  # Zhipu's own name for a filter stop
    ("openai-chat", "model_length", FinishReason.LENGTH),  # Mistral's own name for a length stop
    ("openai-responses", "max_output_tokens", FinishReason.LENGTH),
    ("openai-responses", "content_filter", FinishReason.CONTENT_FILTER),
    ("openai-responses", "something_new", FinishReason.OTHER),
    ("anthropic", "end_turn", FinishReason.STOP),
    ("anthropic", "stop_sequence", FinishReason.STOP),
    ("anthropic", "max_tokens", FinishReason.LENGTH),
    ("anthropic", "model_context_window_exceeded", FinishReason.LENGTH),
    ("anthropic", "tool_use", FinishReason.TOOL_CALLS),
    ("anthropic", "refusal", FinishReason.CONTENT_FILTER),
    ("anthropic", "pause_turn", FinishReason.OTHER),
    ("gemini", "STOP", FinishReason.STOP),
    ("gemini", "MAX_TOKENS", FinishReason.LENGTH),
    *[
        ("gemini", raw, FinishReason.CONTENT_FILTER)
        for raw in ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY")
    ],
    ("gemini", "MALFORMED_FUNCTION_CALL", FinishReason.OTHER),
]


@pytest.mark.parametrize(("fmt", "raw", "unified"), FINISH_CASES)
def test_finish_reason_mapping(fmt: str, raw: str, unified: FinishReason) -> None:
    _, events = run(fmt, build(fmt, [("text", "x")], finish=raw))  # type: ignore[arg-type]
    assert events[-1] == Finish(unified, raw)


def test_gemini_stop_after_function_calls_is_tool_calls() -> None:
    _, events = run("gemini", tool_call_stream("gemini", [("f", "{}")]))
    assert events[-1] == Finish(FinishReason.TOOL_CALLS, "STOP")


def test_gemini_finish_waits_for_a_clean_eof() -> None:
    adapter = adapter_for("gemini")
    chunk = {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP", "index": 0}]}
    events = adapter.feed(sse(chunk))
    events += adapter.feed(sse({"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}))
    assert not adapter.terminal_seen  # a cut here is a cut, not a finish
    assert not any(isinstance(e, Finish) for e in events)
    events += adapter.end()
    assert adapter.terminal_seen
    assert events[-2:] == [Usage(3, 1, None, None), Finish(FinishReason.STOP, "STOP")]
    drive(events)


def test_gemini_eof_without_finish_reason_is_not_terminal() -> None:
    frames = text_stream("gemini", ["a", "b", "c"])
    adapter, events = run("gemini", frames[:-1])
    assert not adapter.terminal_seen
    assert not any(isinstance(e, Finish) for e in events)


def test_chat_clean_end_after_every_finish_reason_without_done_is_a_finish_noted_as_done_missing() -> None:
    # Issue 16, item 4: llama.cpp-style servers and some gateways never send [DONE].
    frames = text_stream("openai-chat", ["a"])
    adapter, events = run("openai-chat", frames[:-1])  # everything but [DONE], then a clean end
    assert adapter.terminal_seen
    assert events[-1] == Finish(FinishReason.STOP, "stop")
    assert adapter.anomalies == {"done_missing": 1}
    assert adapter.end() == []  # once


def test_chat_clean_end_before_a_finish_reason_or_with_a_choice_unfinished_is_not_terminal() -> None:
    frames = text_stream("openai-chat", ["a"])
    adapter, events = run("openai-chat", frames[:-3])  # no finish_reason chunk
    assert not adapter.terminal_seen and adapter.finish_raw is None
    assert not any(isinstance(e, Finish) for e in events)
    second = frame({"id": "x", "choices": [{"index": 1, "delta": {"content": "b"}, "finish_reason": None}]})
    adapter, events = run("openai-chat", [*frames[:-3], second, frames[-3]])  # choice 1 never finished
    assert not adapter.terminal_seen and adapter.finish_raw == "stop"


def test_chat_finish_reason_error_during_tool_arguments_is_a_provider_error_not_a_complete_call() -> None:
    # Issue 16, item 9: the call was never finished, so it must not become a ToolCall the agent could run.
    frames = tool_call_stream("openai-chat", [("apply_patch", '{"patch": "' + "x" * 40 + '"}')])
    cut = [f for f in frames if b'"finish_reason":null' in f][:3]
    error = frame({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]})
    adapter, events = run("openai-chat", [*cut, error])
    assert not any(isinstance(e, (ToolCall, ToolInputEnd)) for e in events)
    assert isinstance(events[-1], ProviderErrorEvent)
    assert events[-1].error.markers == ("finish_reason=error",)
    assert adapter.finish_raw == "error"


# -- violations and bookkeeping common to all formats --------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@pytest.mark.parametrize(
    ("data", "detail"),
    [
        ("{not json", "malformed_json"),
        ("[1, 2]", "not_an_object"),
        ("3", "not_an_object"),
        ('"x"', "not_an_object"),
    ],
)
def test_malformed_payloads_are_violations_with_position(fmt: str, data: str, detail: str) -> None:
    adapter = adapter_for(fmt)
    adapter.feed(Frame("keepalive", comment=True))
    adapter.feed(Frame("  "))
    with pytest.raises(ProtocolViolation) as info:
        adapter.feed(Frame(data))
    assert (info.value.detail, info.value.position) == (detail, 2)


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_comments_are_keepalives_and_empty_events_are_not_progress(fmt: str) -> None:
    adapter = adapter_for(fmt)
    assert adapter.feed(Frame("hi", comment=True)) == [KEEPALIVE_COMMENT]
    empty = adapter.feed(Frame(""))
    assert [e.trigger for e in empty] == [Trigger.KEEPALIVE]


@pytest.mark.parametrize("fmt", SSE_FORMATS)  # the SSE streams: the test kit builds them
def test_data_after_finish_is_a_violation_but_comments_are_ignored(fmt: str) -> None:
    frames = text_stream(fmt, ["a"])  # type: ignore[arg-type]
    adapter, events = run(fmt, frames)
    assert isinstance(events[-1], Finish)
    count = adapter.events_seen
    assert adapter.feed(Frame("late", comment=True)) == []
    with pytest.raises(ProtocolViolation) as info:
        adapter.feed(Frame('{"type": "ping"}'))
    assert (info.value.detail, info.value.position) == ("data_after_terminal", count + 1)


def test_the_sse_stream_with_keepalive_comments_decodes_the_same() -> None:
    frames = text_stream("openai-chat", ["a", "b"])
    with_comments = [piece for f in frames for piece in (comment(), f)]
    _, plain = run("openai-chat", frames)
    _, commented = run("openai-chat", with_comments)
    assert [e for e in commented if e != KEEPALIVE_COMMENT] == plain
    assert commented.count(KEEPALIVE_COMMENT) == len(frames)


def test_adapter_for_names_the_valid_formats() -> None:
    with pytest.raises(ValueError, match="'openai-chat', 'openai-responses', 'anthropic', 'gemini'"):
        adapter_for("openai")
    assert adapter_for("gemini") is not adapter_for("gemini")  # one per stream


# -- requests ------------------------------------------------------------------------------------------------


def test_chat_request_forces_streaming_and_usage_without_touching_the_callers_body() -> None:
    body = {"model": "m", "messages": [], "stream_options": {"include_obfuscation": False}}
    url, sent = adapter_for("openai-chat").request("https://api.openai.com/v1/", body)
    assert url == "https://api.openai.com/v1/chat/completions"
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_obfuscation": False, "include_usage": True}
    assert "stream" not in body and body["stream_options"] == {"include_obfuscation": False}
    _, kept = adapter_for("openai-chat").request("http://x", {"stream_options": {"include_usage": False}})
    assert kept["stream_options"] == {"include_usage": False}


def test_responses_request() -> None:
    url, sent = adapter_for("openai-responses").request(
        "https://api.openai.com/v1", {"model": "m", "input": "hi"}
    )
    assert (url, sent) == (
        "https://api.openai.com/v1/responses",
        {"model": "m", "input": "hi", "stream": True},
    )


@pytest.mark.parametrize(
    "base", ["https://api.anthropic.com", "https://api.anthropic.com/", "https://api.anthropic.com/v1"]
)
def test_anthropic_request(base: str) -> None:
    adapter = adapter_for("anthropic")
    url, sent = adapter.request(base, {"model": "claude", "max_tokens": 10})
    assert url == "https://api.anthropic.com/v1/messages"
    assert sent == {"model": "claude", "max_tokens": 10, "stream": True}
    assert adapter.default_headers["anthropic-version"] == "2023-06-01"


@pytest.mark.parametrize(
    ("base", "model"),
    [
        ("https://generativelanguage.googleapis.com", "gemini-2.5-flash"),
        ("https://generativelanguage.googleapis.com/", "models/gemini-2.5-flash"),
        ("https://generativelanguage.googleapis.com/v1beta", "gemini-2.5-flash"),
    ],
)
def test_gemini_request_takes_the_model_from_the_body(base: str, model: str) -> None:
    body = {"model": model, "contents": []}
    url, sent = adapter_for("gemini").request(base, body)
    assert url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert sent == {"contents": []}
    assert body["model"] == model


def test_gemini_request_without_model_is_refused() -> None:
    with pytest.raises(ValueError, match="model"):
        adapter_for("gemini").request("https://g", {"contents": []})


# -- properties ----------------------------------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
_ARGS = st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=8)), max_size=3).map(
    json.dumps
)
_PART = st.one_of(
    st.tuples(st.just("text"), _TEXT),
    st.tuples(st.just("reasoning"), _TEXT),
    st.tuples(st.just("tool"), st.sampled_from(["get_weather", "search", "run"]), _ARGS),
)


@given(
    st.sampled_from((*SSE_FORMATS, *NDJSON_FORMATS)),
    st.lists(_PART, max_size=8),
    st.booleans(),
    st.booleans(),
    st.lists(st.integers(0, 100_000), max_size=12),
)
def test_adapters_speak_the_machines_grammar(
    fmt: str, parts: list[tuple[str, ...]], usage: bool, parallel: bool, cuts: list[int]
) -> None:
    frames = build(fmt, parts, usage=usage, parallel=parallel)  # type: ignore[arg-type]
    adapter, events = run(fmt, split_at(b"".join(frames), cuts))
    try:
        machine = drive(events)
    except IllegalTransition as exc:  # pragma: no cover - the assertion message is the point
        raise AssertionError(f"{fmt}: {exc} after {events}") from exc
    assert machine.state.activity is Activity.FINISHED
    assert adapter.terminal_seen
    assert text_of(events) == "".join(p[1] for p in parts if p[0] == "text")
    assert text_of(events, ReasoningDelta) == "".join(p[1] for p in parts if p[0] == "reasoning")
    calls = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCall)]
    assert calls == [(p[1], json.loads(p[2])) for p in parts if p[0] == "tool"]
    assert adapter.tool_names == {e.call_id: e.name for e in events if isinstance(e, ToolCall)}
    assert all(isinstance(e, EVENT_TYPES) for e in events)


@given(st.sampled_from((*SSE_FORMATS, *NDJSON_FORMATS)), st.lists(_PART, min_size=1, max_size=6), st.data())
def test_a_cut_stream_is_never_terminal(fmt: str, parts: list[tuple[str, ...]], data: st.DataObject) -> None:
    frames = build(fmt, parts)  # type: ignore[arg-type]
    cut = data.draw(st.integers(0, len(frames) - 1))
    adapter, events = run(fmt, frames[:cut], end=False)  # a cut, not a clean end of the body
    assert not adapter.terminal_seen
    assert drive(events).state.activity is not Activity.FINISHED


# Fuzzing: realistic payloads with parts replaced by arbitrary JSON, and arbitrary data strings.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


EXTRA_PAYLOADS: list[tuple[str, str, Any]] = [
    ("gemini", "message", {"promptFeedback": {"blockReason": "SAFETY"}, "responseId": "r"}),
    (
        "gemini",
        "message",
        {"candidates": [{"content": {"parts": [{"functionCall": {"id": "i", "name": "f"}}]}}]},
    ),
    (
        "anthropic",
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "q"},
            },
        },
    ),
    (
        "anthropic",
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        },
    ),
    (
        "anthropic",
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "citations_delta", "citation": {"type": "char_location"}},
        },
    ),
    (
        "openai-responses",
        "response.output_item.added",
        {
            "type": "response.output_item.added",
            "output_index": 3,
            "item": {
                "type": "custom_tool_call",
                "id": "ctc_1",
                "call_id": "call_c",
                "name": "sh",
                "input": "",
            },
        },
    ),
    (
        "openai-responses",
        "response.custom_tool_call_input.delta",
        {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "delta": "ls"},
    ),
    (
        "openai-responses",
        "response.custom_tool_call_input.done",
        {"type": "response.custom_tool_call_input.done", "item_id": "ctc_1", "input": "ls"},
    ),
    ("openai-responses", "message", {"error": {"code": "server_error"}}),
]


def _realistic_payloads() -> list[tuple[str, str, Any]]:
    out = list(EXTRA_PAYLOADS)
    finish = {"openai-chat": "length", "openai-responses": "max_output_tokens", "anthropic": "max_tokens"}
    for fmt in SSE_FORMATS:
        parts = [("reasoning", "r"), ("text", "t"), ("tool", "f", '{"a": 1}'), ("refusal", "no")]
        frames = build(fmt, parts) + build(fmt, parts[:2], finish=finish.get(fmt, "SAFETY"))  # type: ignore[arg-type]
        frames += [error_event(fmt, shape=shape) for shape in ("flat", "nested", "failed")]  # type: ignore[arg-type]
        for f in frames:
            for event in SSEDecoder().feed(f):
                if event.data != "[DONE]":
                    out.append((fmt, event.event, json.loads(event.data)))
    return out


REALISTIC = _realistic_payloads()


@st.composite
def _mutated(draw: st.DrawFn, value: Any) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(_JSON)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if draw(st.integers(0, 4)) != 0:  # else: drop the key
                out[key] = draw(_mutated(item))
        return out
    if isinstance(value, list):
        return [draw(_mutated(item)) for item in value]
    return value


@st.composite
def _fuzz_items(draw: st.DrawFn, fmt: str) -> list[Frame]:
    # Pick a wire type first, so a rare one (response.incomplete) is drawn as often as a text delta.
    pool = [(name, payload) for f, name, payload in REALISTIC if f == fmt]
    by_type: dict[str, list[tuple[str, Any]]] = {}
    for name, payload in pool:
        by_type.setdefault(f"{name}/{payload.get('type')}/{sorted(payload)}", []).append((name, payload))
    groups = sorted(by_type.values(), key=lambda group: json.dumps(group[0]))
    items = []
    for n in range(draw(st.integers(1, 30))):
        kind = draw(st.integers(0, 19))
        if kind == 0:
            items.append(
                Frame(draw(st.text(max_size=20)), draw(st.sampled_from(["message", "error", "ping"])))
            )
        elif kind == 1:
            items.append(Frame(json.dumps(draw(_JSON))))
        else:
            name, payload = draw(st.sampled_from(draw(st.sampled_from(groups))))
            mutated = draw(_mutated(payload))
            if isinstance(mutated, dict) and type(mutated.get("sequence_number")) is int:
                mutated["sequence_number"] = n  # keep Responses streams going past the sequence check
            items.append(Frame(json.dumps(mutated), name))
    return items


@settings(max_examples=300)
@given(st.sampled_from(SSE_FORMATS).flatmap(lambda fmt: st.tuples(st.just(fmt), _fuzz_items(fmt))))
def test_no_input_crashes_an_adapter(case: tuple[str, list[Frame]]) -> None:
    fmt, items = case
    adapter = adapter_for(fmt)
    for item in items:
        outcome = _outcome(adapter, item)
        if isinstance(outcome, ProtocolViolation):
            assert outcome.detail in VIOLATIONS  # never "adapter_fault": the handlers saw this shape coming
            assert outcome.position == adapter.events_seen - 1
            adapter = adapter_for(fmt)  # a stream ends at its first violation; go on with a fresh one
            continue
        assert isinstance(outcome, list)
        assert all(isinstance(e, EVENT_TYPES) for e in outcome)
    assert all(isinstance(e, EVENT_TYPES) for e in adapter.end())


def _outcome(adapter: Adapter, item: Frame, *, end: bool = False) -> list[StreamEvent] | ProtocolViolation:
    """What feeding ``item`` gives: the events, or the violation. Any other exception escapes (a crash)."""
    try:
        events = adapter.feed(item)
        return events + adapter.end() if end else events
    except ProtocolViolation as violation:
        return violation


_ODD_VALUES: tuple[Any, ...] = (None, 0, -1, True, 1.5, "", "x", [], [1], {}, {"a": 1}, "\x00")


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((*path, key))
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.append((*path, i))
            out += _paths(item, (*path, i))
    return out


def _variants(payload: dict[str, Any]) -> list[Any]:
    """Every path deleted, and every path set to each odd value."""
    out: list[Any] = []
    for path in _paths(payload):
        for replacement in (_DELETE, *_ODD_VALUES):
            copy = json.loads(json.dumps(payload))
            holder = copy
            for step in path[:-1]:
                holder = holder[step]
            if replacement is _DELETE:
                del holder[path[-1]]
            else:
                holder[path[-1]] = replacement
            out.append(copy)
    return out


_DELETE = object()


@pytest.mark.parametrize("fmt", SSE_FORMATS)
def test_every_field_removed_or_retyped_never_crashes(fmt: str) -> None:
    # Exhaustive where the Hypothesis fuzz is random: each payload of realistic streams, at its place in the
    # stream (so a tool call may be open), with each field deleted or replaced by each odd value.
    parts = [
        ("reasoning", "r"),
        ("text", "t"),
        ("tool", "f", '{"a": 1}'),
        ("tool", "g", "{}"),
        ("refusal", "no"),
    ]
    finish = {"openai-chat": "length", "openai-responses": "max_output_tokens", "anthropic": "max_tokens"}
    streams = [
        build(fmt, parts),  # type: ignore[arg-type]
        build(fmt, parts[:2], finish=finish.get(fmt, "SAFETY")),  # type: ignore[arg-type]
        [error_event(fmt, shape=s) for s in ("flat", "failed")],  # type: ignore[arg-type]
        [
            frame(payload, None if name == "message" else name)
            for f, name, payload in EXTRA_PAYLOADS
            if f == fmt
        ],
    ]
    checked = 0
    for frames in streams:
        items = [e for f in frames for e in SSEDecoder().feed(f) if e.data != "[DONE]"]
        adapter = adapter_for(fmt)
        for item in items:
            for variant in _variants(json.loads(item.data)):
                outcome = _outcome(copy.deepcopy(adapter), Frame(json.dumps(variant), item.event), end=True)
                if isinstance(outcome, ProtocolViolation):
                    assert outcome.detail in VIOLATIONS, (item.data, variant)
                else:
                    assert all(isinstance(e, EVENT_TYPES) for e in outcome)
                    checked += 1
            adapter.feed(item)
    assert checked > 500


def test_ollama_content_it_cannot_read_is_evidence_not_silence() -> None:
    image = b'{"model":"x","created_at":"t","image":"iVBORw0KGgo=","done":false}\n'
    done = b'{"model":"x","created_at":"t","response":"","done":true,"done_reason":"stop"}\n'
    adapter, events = run("ollama", [image, done])
    assert adapter.anomalies == {"unread_content": 1} and adapter.delta_keys["image"] == 1
    assert [type(e).__name__ for e in events] == ["Metadata", "Finish"]
    known, _ = run("ollama", build("ollama", [("text", "Hi")], generate=True))
    assert known.anomalies == {}  # every field of a real generate stream is known
