"""Issue 29, root 4: every documented content shape is read; what is not read is evidence, never silence;
an in-band error on another field or event name is a provider error.

Adapter examples per shape, a Hypothesis property over typed-part lists, and runs over real loopback sockets
(FaultServer) per family that check what the record says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfsm
from streamfsm import StreamFailed
from streamfsm.classify import ProviderErrorKind
from streamfsm.testing import End, FaultServer, Headers, Send, find, frame
from streamfsm.wire import (
    Adapter,
    Finish,
    Frame,
    Metadata,
    ProviderErrorEvent,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    adapter_for,
)
from tests.support.runs import BODIES, consume, validate_record

UNREAD = "unread_content"


def sse(data: Any, event: str = "message") -> Frame:
    return Frame(json.dumps(data), event)


def feed(adapter: Adapter, *items: Frame) -> list[StreamEvent]:
    return [e for item in items for e in adapter.feed(item)]


def chat(delta: dict[str, Any], finish: str | None = None) -> Frame:
    return sse({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def texts(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def reasoning(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ReasoningDelta))


def the_error(events: list[StreamEvent]) -> ProviderErrorEvent:
    assert len(events) == 1 and isinstance(events[0], ProviderErrorEvent), events
    return events[0]


# -- OpenAI Chat: content as typed parts, reasoning variants, audio ------------------------------------------


def test_chat_content_as_text_parts_with_extra_fields_is_read_in_order() -> None:
    adapter = adapter_for("openai-chat")
    parts = [{"type": "text", "text": "Hi", "annotations": []}, {"type": "text", "text": " there", "x": 1}]
    events = feed(adapter, chat({"role": "assistant", "content": parts}))
    assert texts(events) == "Hi there"
    assert UNREAD not in adapter.anomalies
    assert adapter.delta_keys == {"role": 1, "content": 1, "content.text": 2}


def test_chat_mistral_thinking_parts_are_reasoning_and_references_carry_no_text() -> None:
    # Mistral (magistral): thinking chunks hold a list of text chunks; reference chunks cite sources.
    adapter = adapter_for("openai-chat")
    content = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Let me see"}]},
        {"type": "text", "text": "Paris"},
        {"type": "reference", "reference_ids": [1, 2]},
    ]
    events = feed(adapter, chat({"content": content}))
    assert (reasoning(events), texts(events)) == ("Let me see", "Paris")
    assert UNREAD not in adapter.anomalies


def test_chat_refusal_part_is_a_refusal() -> None:
    events = feed(adapter_for("openai-chat"), chat({"content": [{"type": "refusal", "refusal": "No."}]}))
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("No.", refusal=True)]


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "output_markdown", "markdown": "Hi"}],  # a type nobody documented
        [{"text": "Hi"}],  # no type
        ["Hi"],  # not a part
        [{"type": "text", "text": {"value": "Hi"}}],  # text of another shape
        {"type": "text", "text": "Hi"},  # one part, not in a list
        42,
    ],
)
def test_chat_content_not_read_is_counted_as_evidence(content: Any) -> None:
    adapter = adapter_for("openai-chat")
    events = feed(adapter, chat({"content": content}))
    assert texts(events) == ""
    assert adapter.anomalies[UNREAD] >= 1


def test_chat_unknown_delta_field_with_a_value_is_evidence_and_known_extras_are_not() -> None:
    adapter = adapter_for("openai-chat")
    feed(
        adapter,
        chat({"content": "Hi", "annotations": [{"type": "url_citation"}], "provider_specific_fields": {}}),
    )
    assert UNREAD not in adapter.anomalies
    feed(adapter, chat({"answer_text": "Hi"}))
    assert adapter.anomalies[UNREAD] == 1
    assert adapter.delta_keys["answer_text"] == 1


def test_chat_choice_fields_beside_the_delta_are_evidence_unless_known() -> None:
    adapter = adapter_for("openai-chat")
    choice = {
        "index": 0,
        "delta": {},
        "finish_reason": "stop",
        "native_finish_reason": "end_turn",
        "stop_reason": 2,
    }
    adapter.feed(sse({"id": "c", "choices": [choice]}))
    assert UNREAD not in adapter.anomalies
    adapter = adapter_for("openai-chat")
    adapter.feed(sse({"id": "c", "choices": [{"index": 0, "text": "Hi", "finish_reason": None}]}))  # legacy
    assert adapter.anomalies == {UNREAD: 1}
    assert adapter.delta_keys == {"choice.text": 1}


def test_chat_openrouter_reasoning_details_are_read_only_without_a_plain_reasoning_string() -> None:
    details = [
        {"type": "reasoning.text", "text": "step one", "format": "anthropic-claude-v1"},
        {"type": "reasoning.summary", "summary": " in short"},
        {"type": "reasoning.encrypted", "data": "gAAAA"},
    ]
    alone = feed(adapter_for("openai-chat"), chat({"reasoning_details": details}))
    assert [e for e in alone if isinstance(e, ReasoningDelta)] == [
        ReasoningDelta("step one"),
        ReasoningDelta(" in short", summary=True),
    ]
    # OpenRouter sends both, with the same text: one piece of reasoning, not two.
    both = feed(adapter_for("openai-chat"), chat({"reasoning": "step one", "reasoning_details": details[:1]}))
    assert reasoning(both) == "step one"


def test_chat_audio_transcript_is_the_answers_text() -> None:
    adapter = adapter_for("openai-chat")
    events = feed(
        adapter, chat({"audio": {"id": "audio_1", "transcript": "Hello"}}), chat({"audio": {"data": "UklG"}})
    )
    assert texts(events) == "Hello"
    assert UNREAD not in adapter.anomalies


# -- in-band errors on other fields and event names ---------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "event", "payload", "kind", "marker"),
    [
        # vLLM's ErrorResponse, sent mid-stream as a chunk of its own
        (
            "openai-chat",
            "message",
            {"object": "error", "message": "boom", "type": "InternalServerError", "param": None, "code": 500},
            ProviderErrorKind.SERVER_ERROR,
            "object=error",
        ),
        # a gateway's "event: error" carrying a chat chunk
        ("openai-chat", "error", {"id": "c", "choices": []}, ProviderErrorKind.UNKNOWN, "event=error"),
        # a flat code + message (one-api/new-api style gateways)
        ("openai-chat", "message", {"code": 429, "message": "slow down"}, ProviderErrorKind.RATE_LIMIT, None),
        # Baidu's error_code / error_msg
        (
            "openai-chat",
            "message",
            {"error_code": 18, "error_msg": "qps limit"},
            ProviderErrorKind.UNKNOWN,
            None,
        ),
        # Anthropic's error type sent flat, on an event named error
        (
            "anthropic",
            "error",
            {"type": "overloaded_error", "message": "Overloaded"},
            ProviderErrorKind.OVERLOADED,
            "event=error",
        ),
        # ... and typeless, without the event name
        ("anthropic", "message", {"message": "x", "code": 529}, ProviderErrorKind.OVERLOADED, None),
        (
            "gemini",
            "message",
            {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"},
            ProviderErrorKind.OVERLOADED,
            "body=code_and_message",
        ),
        ("gemini", "error", {"candidates": []}, ProviderErrorKind.UNKNOWN, "event=error"),
        (
            "openai-responses",
            "error",
            {"type": "response.output_text.delta", "sequence_number": 3, "delta": ""},
            ProviderErrorKind.UNKNOWN,
            "event=error",
        ),
        (
            "openai-responses",
            "message",
            {"code": "server_error", "message": "x"},
            ProviderErrorKind.SERVER_ERROR,
            "body=code_and_message",
        ),
        # a response.failed without its type
        (
            "openai-responses",
            "message",
            {"response": {"id": "r", "status": "failed", "error": {"code": "server_error", "message": "x"}}},
            ProviderErrorKind.SERVER_ERROR,
            "response.error",
        ),
        # an error object inside the choice, its finish_reason not (yet) "error"
        (
            "openai-chat",
            "message",
            {
                "id": "c",
                "choices": [{"index": 0, "delta": {}, "error": {"code": 502, "message": "upstream"}}],
            },
            ProviderErrorKind.SERVER_ERROR,
            "choice.error",
        ),
    ],
)
def test_an_error_on_another_field_or_event_name_is_a_provider_error(
    fmt: str, event: str, payload: dict[str, Any], kind: ProviderErrorKind, marker: str | None
) -> None:
    adapter = adapter_for(fmt)
    error = the_error(adapter.feed(sse(payload, event))).error
    assert error.kind is kind
    if marker is not None:
        assert marker in error.markers
    assert adapter.terminal_seen


@pytest.mark.parametrize(
    "payload",
    [
        {"code": 0, "message": "success", "choices": []},  # a success code
        {"code": 500, "message": "x", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},  # an answer
    ],
)
def test_a_code_and_message_beside_an_answer_or_with_a_success_code_is_not_an_error(
    payload: dict[str, Any],
) -> None:
    events = adapter_for("openai-chat").feed(sse(payload))
    assert not any(isinstance(e, ProviderErrorEvent) for e in events)


# -- Anthropic, Gemini, Responses --------------------------------------------------------------------------


def block_start(index: int, block: dict[str, Any]) -> Frame:
    return sse({"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, delta: dict[str, Any]) -> Frame:
    return sse({"type": "content_block_delta", "index": index, "delta": delta})


def test_anthropic_known_blocks_without_text_are_quiet_and_unknown_ones_are_evidence() -> None:
    adapter = adapter_for("anthropic")
    feed(
        adapter,
        block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgB"}),
        block_start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        block_start(2, {"type": "thinking", "thinking": ""}),
        block_delta(2, {"type": "signature_delta", "signature": "EqQB"}),
    )
    assert UNREAD not in adapter.anomalies
    events = feed(
        adapter, block_start(3, {"type": "markdown", "markdown": ""}), block_delta(3, {"type": "md_delta"})
    )
    assert adapter.anomalies[UNREAD] == 2
    assert adapter.delta_keys["block.markdown"] == 1 and adapter.delta_keys["md_delta"] == 1
    assert all(isinstance(e, Metadata) for e in events)


def test_anthropic_content_in_message_start_is_evidence() -> None:
    # Documented empty; a proxy that puts the whole answer there is not streaming it.
    adapter = adapter_for("anthropic")
    message = {"id": "msg_1", "model": "m", "content": [{"type": "text", "text": "Hi"}]}
    adapter.feed(sse({"type": "message_start", "message": message}))
    assert adapter.anomalies == {UNREAD: 1}
    assert adapter.delta_keys == {"message_start.content": 1}


def test_anthropic_an_event_named_error_is_an_error_whatever_its_type() -> None:
    adapter = adapter_for("anthropic")
    events = adapter.feed(sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, "error"))
    assert "event=error" in the_error(events).error.markers


def test_gemini_part_of_an_unknown_kind_is_evidence_and_known_ones_are_not() -> None:
    adapter = adapter_for("gemini")
    known = [
        {"text": "Hi", "thoughtSignature": "c2ln"},
        {"inlineData": {"mimeType": "image/png", "data": "iV"}},
    ]
    chunk = {"candidates": [{"content": {"parts": known}, "index": 0}]}
    assert texts(adapter.feed(sse(chunk))) == "Hi"
    assert UNREAD not in adapter.anomalies
    adapter.feed(sse({"candidates": [{"content": {"parts": [{"markdown": "Hi"}]}, "index": 0}]}))
    assert adapter.anomalies[UNREAD] == 1
    assert adapter.delta_keys["markdown"] == 1


def test_gemini_thought_parts_are_reasoning() -> None:
    parts = [{"text": "hmm", "thought": True}, {"text": "Hi"}]
    events = adapter_for("gemini").feed(sse({"candidates": [{"content": {"parts": parts}, "index": 0}]}))
    assert (reasoning(events), texts(events)) == ("hmm", "Hi")


def test_responses_audio_transcript_is_text_and_an_unknown_delta_is_evidence() -> None:
    adapter = adapter_for("openai-responses")
    events = feed(
        adapter,
        sse({"type": "response.audio.delta", "sequence_number": 1, "delta": "UklG"}),
        sse({"type": "response.audio.transcript.delta", "sequence_number": 2, "delta": "Hello"}),
        sse({"type": "response.output_text.annotation.added", "sequence_number": 3, "annotation": {}}),
    )
    assert texts(events) == "Hello"
    assert adapter.anomalies == {}
    adapter.feed(sse({"type": "response.output_markdown.delta", "sequence_number": 4, "delta": "Hi"}))
    assert adapter.anomalies == {"unknown_event": 1, UNREAD: 1}


def _responses_part(*deltas: str, whole: str) -> list[Frame]:
    part = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events = [sse({"type": "response.output_text.delta", **part, "delta": d}) for d in deltas]
    return [*events, sse({"type": "response.output_text.done", **part, "text": whole})]


def test_responses_whole_text_of_a_part_is_read_only_when_no_delta_of_it_was() -> None:
    adapter = adapter_for("openai-responses")
    assert texts(feed(adapter, *_responses_part(whole="Hello"))) == "Hello"  # a server that sends no deltas
    assert texts(feed(adapter, *_responses_part("Hel", "lo", whole="Hello"))) == "Hello"  # never twice
    assert texts(feed(adapter, *_responses_part(whole="Again"))) == "Again"
    refusal = sse({"type": "response.refusal.done", "item_id": "msg_1", "refusal": "No."})
    assert feed(adapter, refusal) == [TextDelta("No.", refusal=True)]


def test_a_resumed_responses_stream_does_not_read_a_parts_whole_text_twice() -> None:
    adapter = adapter_for("openai-responses")
    *deltas, done = _responses_part("Hel", "lo", whole="Hello")
    feed(adapter, *deltas)
    resumed = adapter.resumed()  # type: ignore[attr-defined]
    assert texts(resumed.feed(done)) == ""


# -- the property: a typed-part list is read whole, and what is not read is counted ------------------------

_WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_EXTRA = st.dictionaries(
    st.sampled_from(["annotations", "index", "cache_control", "logprobs", "id"]),
    st.one_of(st.none(), st.integers(), st.lists(st.integers(), max_size=2), st.text(max_size=4)),
    max_size=3,
)


@st.composite
def _part(draw: st.DrawFn) -> tuple[dict[str, Any], str | None]:
    """A content part and the answer text it carries (None: a part no adapter knows)."""
    extra = draw(_EXTRA)
    kind = draw(st.sampled_from(["text", "text", "image_url", "reference", "unknown"]))
    if kind == "text":
        text = draw(_WORDS)
        return {**extra, "type": "text", "text": text}, text
    if kind == "image_url":
        return {**extra, "type": "image_url", "image_url": {"url": "data:,"}}, ""
    if kind == "reference":
        return {**extra, "type": "reference", "reference_ids": [1]}, ""
    name = draw(st.sampled_from(["output_markdown", "answer", "text_chunk", "Text", "speech"]))
    return {**extra, "type": name, "text": draw(_WORDS)}, None


@given(st.lists(st.lists(_part(), min_size=1, max_size=5), min_size=1, max_size=5))
def test_chat_typed_parts_are_read_whole_and_an_unknown_part_is_never_dropped_silently(
    chunks: list[list[tuple[dict[str, Any], str | None]]],
) -> None:
    adapter = adapter_for("openai-chat")
    events: list[StreamEvent] = []
    for chunk in chunks:
        events += adapter.feed(chat({"content": [part for part, _ in chunk]}))
    events += adapter.feed(chat({}, "stop")) + adapter.feed(Frame("[DONE]"))
    expected = "".join(text for chunk in chunks for _, text in chunk if text)
    unknown = [part["type"] for chunk in chunks for part, text in chunk if text is None]
    assert texts(events) == expected
    assert adapter.anomalies.get(UNREAD, 0) == len(unknown)
    for name in unknown:
        assert adapter.delta_keys[f"content.{name}"] >= 1
    assert isinstance(events[-1], Finish)


# Names no provider documents (no known type or field starts with "x"); a "*_tool_result" block is known.
_NAMES = st.from_regex(r"x[a-z_]{0,14}", fullmatch=True).filter(lambda n: not n.endswith("_tool_result"))


def _carrying(fmt: str, name: str, text: str) -> Frame:
    """``text`` under a content type or field called ``name`` in ``fmt``'s content carrier."""
    if fmt == "openai-chat":
        return chat({name: text})
    if fmt == "anthropic":
        return block_start(0, {"type": name, name: text})
    if fmt == "gemini":
        return sse({"candidates": [{"content": {"parts": [{name: text}]}}]})
    return sse({"type": f"response.{name}.delta", "sequence_number": 1, "delta": text})


@given(st.sampled_from(["openai-chat", "anthropic", "gemini", "openai-responses"]), _NAMES, _WORDS)
def test_content_of_a_kind_no_adapter_knows_is_never_dropped_silently(fmt: str, name: str, text: str) -> None:
    adapter = adapter_for(fmt)
    events = adapter.feed(_carrying(fmt, name, text))
    assert texts(events) == ""
    assert adapter.anomalies.get(UNREAD) == 1
    assert sum(adapter.delta_keys.values()) >= 1  # counted under a name the record can show


# -- over real sockets: what the run and its record say ------------------------------------------------------


async def play_scenario(name: str) -> streamfsm.RunRecord:
    scenario = find(name)
    fmt = scenario.format or "openai-chat"
    async with FaultServer(scenario.script) as server:
        run = streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt])
        try:
            async with run:
                await consume(run)
        except StreamFailed:
            pass
    assert run.record is not None
    validate_record(run.record)
    return run.record


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name",
    [
        "openai-chat/content-parts-unread",
        "anthropic/content-block-unread",
        "gemini/part-unread",
        "openai-responses/unknown-delta-unread",
    ],
)
async def test_a_finish_with_no_content_read_is_never_called_a_whole_answer(name: str) -> None:
    record = await play_scenario(name)
    outcome = record["outcome"]
    assert outcome["summary_key"] == "completed.unread_content"
    assert outcome["confidence"] == "low"
    assert "wire=unread_content" in outcome["evidence"]
    assert record["summary"]["title"] == "The response finished, but its content could not be read"
    assert record["stream_events"].get("text_delta", 0) == 0


@pytest.mark.anyio
async def test_content_as_typed_parts_over_a_socket_is_a_whole_answer_with_its_text() -> None:
    scenario = find("openai-chat/content-as-typed-parts")
    async with FaultServer(scenario.script) as server:
        run = streamfsm.open_stream("openai-chat", base_url=server.base_url, json=BODIES["openai-chat"])
        async with run:
            events = await consume(run)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello world, again"
    assert run.record is not None
    assert run.record["outcome"]["summary_key"] == "completed.finished"
    assert run.record["outcome"]["confidence"] == "high"
    assert "wire=unread_content" not in run.record["outcome"]["evidence"]
    assert run.record["delta_keys"]["content.text"] == 3


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("openai-chat/vllm-object-error-after-output", "server_error"),
        ("openai-chat/error-event-name-before-output", "unknown"),
        ("anthropic/flat-error-type-before-output", "overloaded"),
        ("gemini/flat-error-after-output", "overloaded"),
        ("openai-responses/typeless-error-event-after-output", "server_error"),
    ],
)
async def test_an_error_on_another_field_or_event_name_ends_the_run_as_a_provider_error(
    name: str, kind: str
) -> None:
    record = await play_scenario(name)
    assert record["outcome"]["summary_key"] == f"provider_error.{kind}"


@pytest.mark.anyio
async def test_an_error_on_the_nonstandard_sse_error_field_is_a_provider_error_not_a_finish() -> None:
    # llama.cpp's server (2025 builds): "error: {...}" where an SSE field name goes, then [DONE].
    error = b'error: {"code":500,"message":"slot unavailable","type":"server_error"}\n\n'
    async with FaultServer((Headers(), Send(error), Send(b"data: [DONE]\n\n"), End())) as server:
        run = streamfsm.open_stream("openai-chat", base_url=server.base_url, json=BODIES["openai-chat"])
        with pytest.raises(StreamFailed) as info:
            async with run:
                await consume(run)
    outcome = info.value.record["outcome"]
    assert (outcome["summary_key"], outcome["edge"]) == (
        "provider_error.server_error",
        "provider_error_event",
    )


@pytest.mark.anyio
async def test_text_then_unread_content_is_finished_with_the_evidence_at_high_confidence() -> None:
    # Some content was read: the answer is what was read, and the record says something else came too.
    frames = [
        frame({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}),
        frame(
            {
                "id": "c",
                "choices": [{"index": 0, "delta": {"content": [{"type": "x"}]}, "finish_reason": None}],
            }
        ),
        frame({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        b"data: [DONE]\n\n",
    ]
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        run = streamfsm.open_stream("openai-chat", base_url=server.base_url, json=BODIES["openai-chat"])
        async with run:
            await consume(run)
    assert run.record is not None
    outcome = run.record["outcome"]
    assert (outcome["summary_key"], outcome["confidence"]) == ("completed.finished", "high")
    assert "wire=unread_content" in outcome["evidence"]
    assert run.record["delta_keys"]["content.x"] == 1
