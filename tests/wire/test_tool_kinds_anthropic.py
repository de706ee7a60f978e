"""Every tool kind of the Anthropic stream, read as the API defines it, by property over random messages:
client ``tool_use`` (input streamed as partial JSON, in fragments that parse only at the end or never, as
fine-grained streaming sends it, or whole at ``content_block_start`` as Bedrock and proxies send it), the
provider's own ``server_tool_use`` and ``mcp_tool_use`` with their result blocks (error results included),
among text, thinking, redacted thinking and the informational blocks (compaction, fallback, MCP listings,
container uploads), ended by any stop reason the SDK defines, or cut.

The invariant: a ``ToolCall`` is handed out only for a call whose input parses and whose block the
provider ended, in order, with ``server_side`` for the provider's tools; the first call whose input does not
parse ends what is handed out (the run fails with it open, or at the next block); nothing documented is
unread content. Claude on Bedrock is read by the same adapter."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.wire import UNREAD_CONTENT, Frame, ProtocolViolation, SdkAnthropic, ToolCall, adapter_for

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
anthropic = pytest.importorskip("anthropic")
# Every stop reason the SDK defines (beta included).
STOPS = sorted(
    {
        value
        for tp in (anthropic.types.StopReason, getattr(anthropic.types.beta, "BetaStopReason", None))
        if tp is not None
        for value in typing.get_args(tp)
    }
)
INFORMATIONAL = ["compaction", "fallback", "mcp_tool_listing", "container_upload"]
RESULTS = {"server_tool_use": "web_search_tool_result", "mcp_tool_use": "mcp_tool_result"}


@st.composite
def tool_block(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["tool_use", "server_tool_use", "mcp_tool_use"]))
    text = json.dumps(draw(st.dictionaries(st.text(max_size=4), JSON, max_size=3)))
    cut = draw(st.booleans()) and draw(st.integers(1, len(text) - 1))
    text = text[:cut] if cut else text  # a cut input: never parses (an object's text, short of its end)
    whole_at_start = not cut and draw(st.booleans())
    splits = sorted(draw(st.sets(st.integers(1, max(len(text) - 1, 1)), max_size=4)))
    fragments = [text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=True) if text[a:b]]
    return {"kind": kind, "text": text, "whole_at_start": whole_at_start, "fragments": fragments}


BLOCK = st.one_of(
    st.builds(lambda t: {"kind": "text", "text": t}, st.text(min_size=1, max_size=8)),
    st.just({"kind": "thinking"}),
    st.just({"kind": "redacted_thinking"}),
    st.builds(lambda k: {"kind": k}, st.sampled_from(INFORMATIONAL)),
    tool_block(),
)


def _message(blocks: list[dict[str, Any]], stop: str | None, error_results: bool) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "msg_1", "content": []}}]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
        index += 1

    for one in blocks:
        kind = one["kind"]
        if kind == "text":
            block({"type": "text", "text": ""}, [{"type": "text_delta", "text": one["text"]}])
        elif kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": "Hm."},
                {"type": "signature_delta", "signature": "s"},
            ]
            block({"type": "thinking", "thinking": ""}, deltas)
        elif kind == "redacted_thinking":
            block({"type": "redacted_thinking", "data": "ZW5j"}, [])
        elif kind == "compaction":
            block({"type": "compaction", "content": None}, [{"type": "compaction_delta", "content": "Sum."}])
        elif kind in INFORMATIONAL:
            block({"type": kind, "file_id": "f", "mcp_server_name": "m", "tools": []}, [])
        else:
            start: dict[str, Any] = {"type": kind, "id": f"toolu_{index}", "name": "web_search"}
            if one["whole_at_start"]:
                block({**start, "input": json.loads(one["text"])}, [])
            else:
                deltas = [{"type": "input_json_delta", "partial_json": f} for f in one["fragments"]]
                block({**start, "input": {}}, deltas)
            if kind in RESULTS:
                result = RESULTS[kind]
                content: Any = [] if not error_results else {"type": f"{result}_error", "error_code": "x"}
                block(
                    {
                        "type": result,
                        "tool_use_id": start["id"],
                        "content": content,
                        "is_error": error_results,
                    },
                    [],
                )
    if stop is not None:
        events.append(
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}}
        )
        events.append({"type": "message_stop"})
    return events


def _expected(blocks: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """The calls handed out: each complete one, in order, up to the first whose input does not parse."""
    out: list[tuple[str, bool]] = []
    for one in blocks:
        if one["kind"] in ("tool_use", "server_tool_use", "mcp_tool_use"):
            try:
                json.loads(one["text"])
            except ValueError:
                break
            out.append((one["text"], one["kind"] != "tool_use"))
    return out


@pytest.mark.parametrize("path", ["wire", "sdk"])
@settings(max_examples=100, deadline=None)
@given(
    blocks=st.lists(BLOCK, max_size=6),
    stop=st.none() | st.sampled_from(STOPS),
    error_results=st.booleans(),
)
def test_a_call_is_handed_out_only_complete_and_every_documented_block_is_read(
    path: str, blocks: list[dict[str, Any]], stop: str | None, error_results: bool
) -> None:
    """On the wire (SSE) and through the SDK (its own objects, built as its decoder builds them) alike."""
    from anthropic._models import construct_type

    union = getattr(anthropic.types.beta, "BetaRawMessageStreamEvent", anthropic.types.RawMessageStreamEvent)
    adapter = adapter_for("anthropic") if path == "wire" else SdkAnthropic()
    events: list[Any] = []
    try:
        for event in _message(blocks, stop, error_results):
            if isinstance(adapter, SdkAnthropic):
                events += adapter.feed_item(construct_type(type_=union, value=event))
            else:
                events += adapter.feed(Frame(json.dumps(event), event=event["type"]))
    except ProtocolViolation as violation:
        detail = violation.detail
        events += violation.before  # what the event that failed carried before the call it ended
    else:
        detail = None
    assert detail in (None, "unparseable_arguments")  # a call ended on input that is not JSON, or none
    calls = [event for event in events if isinstance(event, ToolCall)]
    expected = _expected(blocks)
    assert [json.loads(call.arguments) for call in calls] == [json.loads(text) for text, _ in expected]
    assert [call.server_side for call in calls] == [server for _, server in expected]
    assert UNREAD_CONTENT not in adapter.anomalies  # every block and delta here is documented
