"""The OpenAI formats decide every member the installed openai SDK defines (DESIGN §13.1).

The walk reads the SDK's own typed models: the Responses stream-event union and output-item union (each
model's ``type`` Literal), the content parts, the response statuses and incomplete reasons; the chat chunk's
fields, its choice's and delta's, usage's, the ``finish_reason`` Literal and the tool call kinds. A member
with no decision fails the test by name, so a new SDK release that adds one is a failing test, not silence.
Whatever the installed SDK does not define (an older openai 2.x) is not walked.
"""

from __future__ import annotations

import importlib
import json
import types
import typing
from typing import Any

import pytest

from streamfsm.wire import Decision, Frame, Metadata, format_named, undecided
from streamfsm.wire._adapters import _openai_chat, _openai_responses

pytest.importorskip("openai")


def _members(alias: object) -> list[Any]:
    """The classes and Literal values a typing alias (Union, Annotated, Optional, List, Literal) names."""
    origin = typing.get_origin(alias)
    if origin is typing.Annotated:
        return _members(typing.get_args(alias)[0])
    if origin is typing.Union or origin is types.UnionType or origin in (list, typing.List):  # noqa: UP006
        return [m for arg in typing.get_args(alias) for m in _members(arg)]
    if origin is typing.Literal:
        return list(typing.get_args(alias))
    return [] if alias is type(None) else [alias]


def _types(alias: object, field: str = "type") -> list[str]:
    """Each model's ``type`` Literal values, for the models a union names."""
    out: list[str] = []
    for model in _members(alias):
        fields = getattr(model, "model_fields", None)
        if fields and field in fields:
            out += [v for v in _members(fields[field].annotation) if isinstance(v, str)]
    return out


def _attr(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _literals(model: Any, field: str) -> list[str]:
    if model is None or field not in model.model_fields:
        return []
    return [v for v in _members(model.model_fields[field].annotation) if isinstance(v, str)]


def _responses_members() -> dict[str, list[str]]:
    R = "openai.types.responses"
    items = _types(_attr(f"{R}.response_output_item", "ResponseOutputItem"))
    parts = _types(_attr(f"{R}.response_content_part_added_event", "Part"))
    parts += _types(_attr(R, "ResponseOutputMessage").model_fields["content"].annotation)
    reasons = _literals(_attr(f"{R}.response", "IncompleteDetails"), "reason")
    return {
        "events": _types(_attr(f"{R}.response_stream_event", "ResponseStreamEvent")),
        "items": items,
        "content": parts,
        "finishes": _literals(_attr(R, "Response"), "status") + reasons,
    }


def _chat_members() -> dict[str, list[str]]:
    C = "openai.types.chat.chat_completion_chunk"
    chunk, choice, delta = (_attr(C, n) for n in ("ChatCompletionChunk", "Choice", "ChoiceDelta"))
    usage = _attr("openai.types.completion_usage", "CompletionUsage")
    union = _attr("openai.types.chat.chat_completion_message_tool_call", "ChatCompletionMessageToolCallUnion")
    tools = _types(union) if union is not None else []
    tools += _literals(_attr(C, "ChoiceDeltaToolCall"), "type")
    return {
        "events": [
            *chunk.model_fields,
            *(f"choice.{f}" for f in choice.model_fields),
            *(f"delta.{f}" for f in delta.model_fields),
            *(f"usage.{f}" for f in usage.model_fields),
        ],
        "tools": tools,
        "finishes": _literals(choice, "finish_reason"),
    }


def test_every_responses_member_the_sdk_defines_has_a_decision() -> None:
    d = format_named("openai-responses").definitions
    members = _responses_members()
    assert len(members["events"]) >= 50 and len(members["items"]) >= 10  # the walk found the unions
    missing = {
        "events": undecided(members["events"], d.events),
        "items": undecided(members["items"], {**d.tools, **d.content}),
        "content": undecided(members["content"], d.content),
        "finishes": undecided(members["finishes"], d.finishes),
    }
    assert missing == {k: [] for k in missing}, missing


def test_every_chat_member_the_sdk_defines_has_a_decision() -> None:
    d = format_named("openai-chat").definitions
    members = _chat_members()
    assert "choice.finish_reason" in members["events"] and "function" in members["tools"]
    missing = {
        "events": undecided(members["events"], d.events),
        "tools": undecided(members["tools"], d.tools),
        "finishes": undecided(members["finishes"], d.finishes),
    }
    assert missing == {k: [] for k in missing}, missing


# -- the adapters follow their tables --------------------------------------------------------------


def test_every_responses_event_read_has_a_handler_and_every_other_one_none() -> None:
    handlers = _openai_responses._HANDLERS
    for kind, decided in _openai_responses.EVENTS.items():
        if decided.decision is Decision.READ:
            assert kind in handlers, kind
        else:
            assert kind not in handlers, kind
    assert set(handlers) <= set(_openai_responses.EVENTS)


def _feed(kind: str) -> tuple[list[Any], dict[str, int]]:
    adapter = _openai_responses.OpenAIResponsesAdapter()
    payload = {"type": kind, "sequence_number": 1, "item_id": "x", "output_index": 0}
    return adapter.feed(Frame(json.dumps(payload), kind)), adapter.anomalies


def test_a_responses_event_informational_is_bookkeeping() -> None:
    informational = [k for k, d in _openai_responses.EVENTS.items() if d.decision is Decision.INFORMATIONAL]
    assert len(informational) > 30
    for kind in informational:
        events, anomalies = _feed(kind)
        assert events and all(isinstance(e, Metadata) for e in events), kind
        assert not anomalies, kind  # decided: neither "unknown" nor unread


def test_a_responses_event_not_understood_is_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    # No event of today's SDK is decided so; the adapter's rule is checked on one that would be.
    kind = "response.some_part.delta"
    monkeypatch.setattr(_openai_responses, "_UNREAD_EVENTS", frozenset({kind}))
    events, anomalies = _feed(kind)
    assert all(isinstance(e, Metadata) for e in events)
    assert anomalies == {"unread_content": 1}  # evidence, and not "unknown": it is decided


def test_every_tool_kind_read_is_a_call_and_no_other_is() -> None:
    calls = set(_openai_responses._TOOL_ITEMS) | _openai_responses._ACTION_ITEMS
    read_kinds = {k for k, d in _openai_responses.TOOLS.items() if d.decision is Decision.READ}
    assert calls == read_kinds
    assert set(_openai_chat.TOOLS) == {"function", "custom"}


def test_an_output_item_not_understood_is_evidence_never_a_silent_whole_answer() -> None:
    not_understood = [k for k, d in _openai_responses.TOOLS.items() if d.decision is Decision.NOT_UNDERSTOOD]
    for kind in [*not_understood, "some_future_item"]:
        adapter = _openai_responses.OpenAIResponsesAdapter()
        item = {"type": kind, "id": "it_1"}
        adapter.feed(Frame(json.dumps({"type": "response.output_item.done", "item": item})))
        assert adapter.anomalies.get("unread_content") == 1, kind


def test_the_chat_fields_read_are_the_tables() -> None:
    events = _openai_chat.EVENTS
    assert {k[6:] for k in events if k.startswith("delta.")} == _openai_chat._READ
    assert {k[7:] for k in events if k.startswith("choice.")} == _openai_chat._CHOICE_KEYS
    assert set(_openai_chat.FINISHES) >= {"stop", "tool_calls", "length"}
    whole = {k for k, d in _openai_chat.FINISHES.items() if d.means.startswith("a whole answer")}
    assert whole == {"stop", "tool_calls"} and whole <= _openai_chat.OpenAIChatAdapter.whole_answers


def test_the_responses_finishes_whole_are_the_adapters() -> None:
    finishes = _openai_responses.FINISHES
    assert {k for k, d in finishes.items() if d.means == "a whole answer"} == set(
        _openai_responses.OpenAIResponsesAdapter.whole_answers
    )
