"""The anthropic format decides every member the installed anthropic SDK defines (beta included): its raw
stream events, the blocks a ``content_block_start`` may carry, the deltas, the tool kinds and server tools,
the stop reasons, and the fields of messages, deltas and usage. A new SDK release that adds one fails here,
naming it. The adapter and the SDK translator follow the table: a READ member has a handler, an
INFORMATIONAL one is counted and never unread content, anything else is unread content."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest

from streamfsm.wire import (
    FORMATS,
    HELPER_EVENTS,
    UNREAD_CONTENT,
    Decision,
    Frame,
    SdkAnthropic,
    adapter_for,
    undecided,
)
from streamfsm.wire._adapters import _anthropic
from streamfsm.wire._adapters._sdk_items import _ITEMS

anthropic = pytest.importorskip("anthropic")
T = anthropic.types
B = getattr(T, "beta", None)


def _hints(model: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(model, include_extras=True)
    except Exception:  # an older SDK's forward reference: its own annotations are enough to walk
        return dict(getattr(model, "__annotations__", {}))


def _models(tp: Any) -> list[Any]:
    """The model classes in a (possibly annotated, nested) union."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _models(args[0])
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return [model for arg in args for model in _models(arg)]
    if origin in (list, typing.List):  # noqa: UP006  # the SDK's own spelling
        return [model for arg in args for model in _models(arg)]
    return [tp] if isinstance(tp, type) and hasattr(tp, "__annotations__") else []


def _literals(tp: Any) -> set[str]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _literals(args[0])
    if origin is typing.Literal:
        return {arg for arg in args if isinstance(arg, str)}
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return {value for arg in args for value in _literals(arg)}
    return set()


def _types(tp: Any) -> set[str]:
    """The ``type`` literals of every model in a union."""
    return {kind for model in _models(tp) for kind in _literals(_hints(model).get("type"))}


def _fields(model: Any) -> set[str]:
    return {name for name in _hints(model) if not name.startswith("_")}


def _both(name: str) -> list[Any]:
    """The SDK's definition called ``name`` and its beta twin (``Beta<name>``), where they exist."""
    out = [getattr(T, name, None), getattr(B, f"Beta{name}", None) if B is not None else None]
    return [tp for tp in out if tp is not None]


def _events() -> set[str]:
    members = {"ping", "error"}  # the streaming reference's, outside the SDK's union
    for union in _both("RawMessageStreamEvent"):
        members |= _types(union)
    for message in _both("Message"):
        members |= {f"message_start.message.{name}" for name in _fields(message)}
    for event in _both("RawMessageDeltaEvent"):
        hints = _hints(event)
        members |= {f"message_delta.{name}" for name in _fields(event) - {"type"}}
        for delta in _models(hints["delta"]):
            members |= {f"message_delta.delta.{name}" for name in _fields(delta)}
    for usage in (*_both("Usage"), *_both("MessageDeltaUsage")):
        members |= {f"usage.{name}" for name in _fields(usage)}
    return members


def _block_union() -> list[Any]:
    return [_hints(event)["content_block"] for event in _both("RawContentBlockStartEvent")]


def _content() -> set[str]:
    members: set[str] = set()
    for union in (*_block_union(), *_both("ContentBlock"), *_both("RawContentBlockDelta")):
        members |= _types(union)
    return members


def _tools() -> set[str]:
    members: set[str] = set()
    for union in _block_union():
        for model in _models(union):
            fields = _fields(model)
            if {"name", "input"} <= fields:  # a block that is a call
                members |= _literals(_hints(model)["type"])
                for name in _literals(_hints(model)["name"]):
                    members.add(f"server_tool_use.{name}")
    return members


def _finishes() -> set[str]:
    return {value for tp in _both("StopReason") for value in _literals(tp)}


WALKS = {"events": _events, "content": _content, "tools": _tools, "finishes": _finishes}


@pytest.mark.parametrize("name", ["anthropic", "anthropic-bedrock"])
@pytest.mark.parametrize("table", sorted(WALKS))
def test_every_member_the_sdk_defines_has_a_decision(name: str, table: str) -> None:
    members = WALKS[table]()
    assert members, f"the walk found no {table} in anthropic {anthropic.__version__}"
    missing = undecided(members, FORMATS[name].definitions.tables()[table])
    assert not missing, f"anthropic {anthropic.__version__} defines {table} with no decision: {missing}"


def test_every_decision_names_its_source() -> None:
    for table in _anthropic.DEFINITIONS.tables().values():
        assert table and all(decided.source and decided.means for decided in table.values())


def _read(table: str) -> set[str]:
    return {
        member
        for member, decided in _anthropic.DEFINITIONS.tables()[table].items()
        if decided.decision is Decision.READ
    }


def test_a_read_member_has_a_handler_and_a_handler_reads_a_member() -> None:
    events = {member for member in _read("events") if "." not in member}
    assert events == set(_anthropic._HANDLERS) == set(_ITEMS)
    blocks = {"text", "thinking", "redacted_thinking", *_anthropic._TOOL_BLOCKS}
    assert _read("content") == blocks | set(_anthropic._DELTAS)
    assert {member for member in _read("tools") if "." not in member} == set(_anthropic._TOOL_BLOCKS)
    assert set(_anthropic._FINISH) == _read("finishes") == set(_anthropic.FINISHES)
    assert _anthropic.AnthropicAdapter.whole_answers < set(_anthropic._FINISH)


def _frames(block: dict[str, Any], delta: dict[str, Any] | None = None) -> list[Frame]:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": block},
    ]
    if delta is not None:
        events.append({"type": "content_block_delta", "index": 0, "delta": delta})
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    return [Frame(json.dumps(event), event=event["type"]) for event in events]


def _informational(kinds: str) -> list[str]:
    return sorted(
        member
        for member, decided in _anthropic.CONTENT.items()
        if decided.decision is Decision.INFORMATIONAL and member.endswith("_delta") == (kinds == "deltas")
    )


@pytest.mark.parametrize("kind", _informational("blocks"))
def test_an_informational_block_is_counted_never_unread(kind: str) -> None:
    adapter = adapter_for("anthropic")
    for frame in _frames({"type": kind, "tool_use_id": "srvtoolu_1", "content": []}):
        adapter.feed(frame)
    assert adapter.delta_keys.get(f"block.{kind}") == 1
    assert UNREAD_CONTENT not in adapter.anomalies


@pytest.mark.parametrize("kind", _informational("deltas"))
def test_an_informational_delta_is_counted_never_unread(kind: str) -> None:
    adapter = adapter_for("anthropic")
    for frame in _frames({"type": "text", "text": "Hi"}, {"type": kind}):
        adapter.feed(frame)
    assert adapter.delta_keys.get(kind) == 1
    assert UNREAD_CONTENT not in adapter.anomalies


def test_a_block_or_delta_nobody_decided_is_unread_content() -> None:
    text = {"type": "text", "text": ""}
    for block, delta in (({"type": "hologram"}, None), (text, {"type": "smell_delta"})):
        adapter = adapter_for("anthropic")
        for frame in _frames(block, delta):
            adapter.feed(frame)
        assert adapter.anomalies.get(UNREAD_CONTENT) == 1


def test_the_helper_events_of_the_sdks_message_streams_are_the_ones_skipped() -> None:
    streaming = pytest.importorskip("anthropic.lib.streaming")
    raw = {kind for union in _both("RawMessageStreamEvent") for kind in _types(union)}
    helpers: set[str] = set()
    for name in ("MessageStreamEvent", "BetaMessageStreamEvent"):
        union = getattr(streaming, name, None)
        if union is not None:
            helpers |= _types(union) - raw
    assert helpers and helpers <= HELPER_EVENTS


def _items(block: dict[str, Any]) -> list[Any]:
    """The SDK's own objects for a stream with ``block``, built as its decoder builds them."""
    from anthropic._models import construct_type

    union = B.BetaRawMessageStreamEvent if B is not None else T.RawMessageStreamEvent
    return [construct_type(type_=union, value=json.loads(frame.data)) for frame in _frames(block)]


@pytest.mark.parametrize("kind", _informational("blocks"))
def test_the_sdk_translator_follows_the_same_decisions(kind: str) -> None:
    block: dict[str, Any] = {"type": kind, "tool_use_id": "srvtoolu_1"}
    if kind == "mcp_tool_result":
        block |= {"is_error": True, "content": "the MCP server refused"}
    elif kind.endswith("_tool_result"):  # a hosted tool's error object
        block["content"] = {"type": f"{kind}_error", "error_code": "max_uses_exceeded"}
    translator, wire = SdkAnthropic(), adapter_for("anthropic")
    for item in _items(block):
        translator.feed_item(item)
    for frame in _frames(block):
        wire.feed(frame)
    assert translator.delta_keys == wire.delta_keys
    assert wire.delta_keys.get(f"block.{kind}.error") == (1 if kind.endswith("_tool_result") else None)
    assert UNREAD_CONTENT not in translator.anomalies


@pytest.mark.parametrize("error", ["Overloaded", {"type": "overloaded_error", "message": "Overloaded"}])
def test_an_error_event_is_read_whether_its_error_is_an_object_or_a_string(error: object) -> None:
    from streamfsm.classify import ProviderErrorKind
    from streamfsm.wire import ProviderErrorEvent

    events = adapter_for("anthropic").feed(Frame(json.dumps({"type": "error", "error": error}), "error"))
    assert [type(e) for e in events] == [ProviderErrorEvent]
    assert events[0].error.kind is ProviderErrorKind.OVERLOADED  # type: ignore[attr-defined]


def _result_contents() -> list[tuple[str, str]]:
    """(result block, content type) for every hosted tool result the SDK defines and each of its contents."""
    out: set[tuple[str, str]] = set()
    for union in _block_union():
        for model in _models(union):
            hints = _hints(model)
            for kind in _literals(hints.get("type")):
                if kind.endswith("_tool_result") and "content" in hints:
                    out |= {(kind, inner) for m in _models(hints["content"]) for inner in _types(m)}
    return sorted(out)


def test_the_walk_finds_the_hosted_tools_results_and_their_errors() -> None:
    contents = _result_contents()
    assert ("web_search_tool_result", "web_search_tool_result_error") in contents
    assert all(kind in _anthropic.CONTENT for kind, _ in contents)


@pytest.mark.parametrize(("kind", "content"), _result_contents())
def test_a_hosted_tools_error_result_is_counted_as_one_and_a_result_is_not(kind: str, content: str) -> None:
    adapter = adapter_for("anthropic")
    block = {"type": kind, "tool_use_id": "srvtoolu_1", "content": {"type": content, "error_code": "x"}}
    for frame in _frames(block):
        adapter.feed(frame)
    error = content.endswith("_error")  # every error content the SDK defines is named so
    assert adapter.delta_keys.get(f"block.{kind}.error") == (1 if error else None)
    assert UNREAD_CONTENT not in adapter.anomalies
