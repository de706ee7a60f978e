"""Every tool kind of Bedrock's ConverseStream, read as botocore's model defines it, by property over random
messages: ``toolUse`` blocks (the agent's, or ``type: server_tool_use``, the provider's) whose input streams
as text in fragments (complete, or cut so that it never parses), server ``toolResult`` blocks (success or
error), among text (with citations) and reasoning (text, signature, redacted), ended by any stop reason the
model defines (``malformed_tool_use`` and ``malformed_model_output`` included).

The invariant: a ``ToolCall`` is handed out only when every call's input parses, the provider ended it, and
the finish does not say the output was malformed; then all of them, in order, ``server_side`` for the
provider's tools. Nothing documented is unread content."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.wire import (
    UNREAD_CONTENT,
    Frame,
    ProtocolViolation,
    SdkBedrockConverse,
    ToolCall,
    adapter_for,
)

botocore_session = pytest.importorskip(
    "botocore.session", reason="the bedrock extra (botocore) is not installed"
)
STOPS = sorted(
    botocore_session.get_session().get_service_model("bedrock-runtime").shape_for("StopReason").enum
)
MALFORMED = {"malformed_tool_use", "malformed_model_output"}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def tool_block(draw: st.DrawFn) -> dict[str, Any]:
    server = draw(st.booleans())
    text = json.dumps(draw(st.dictionaries(st.text(max_size=4), JSON, max_size=3)))
    cut = draw(st.booleans()) and draw(st.integers(1, len(text) - 1))
    text = text[:cut] if cut else text
    splits = sorted(draw(st.sets(st.integers(1, max(len(text) - 1, 1)), max_size=4)))
    fragments = [text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=True) if text[a:b]]
    return {"kind": "tool", "server": server, "text": text, "fragments": fragments}


BLOCK = st.one_of(
    st.builds(lambda t: {"kind": "text", "text": t}, st.text(min_size=1, max_size=8)),
    st.just({"kind": "reasoning"}),
    st.builds(lambda s: {"kind": "result", "status": s}, st.sampled_from(["success", "error"])),
    tool_block(),
)


def _message(blocks: list[dict[str, Any]], stop: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for index, one in enumerate(blocks):
        at = {"contentBlockIndex": index}
        kind = one["kind"]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            deltas = [{"text": one["text"]}, {"citation": {"title": "t", "location": {}}}]
        elif kind == "reasoning":
            deltas = [
                {"reasoningContent": {"text": "Hm."}},
                {"reasoningContent": {"signature": "c2ln"}},
                {"reasoningContent": {"redactedContent": "ZW5j"}},
            ]
        elif kind == "result":
            start = {
                "toolResult": {"toolUseId": f"srv_{index}", "type": "web_search", "status": one["status"]}
            }
            events.append({"contentBlockStart": {**at, "start": start}})
            deltas = [{"toolResult": [{"text": "found"}]}]
        else:
            tool = {"toolUseId": f"tooluse_{index}", "name": "lookup"}
            if one["server"]:
                tool["type"] = "server_tool_use"
            events.append({"contentBlockStart": {**at, "start": {"toolUse": tool}}})
            deltas = [{"toolUse": {"input": fragment}} for fragment in one["fragments"]]
        events.extend({"contentBlockDelta": {**at, "delta": delta}} for delta in deltas)
        events.append({"contentBlockStop": at})
    events.append({"messageStop": {"stopReason": stop}})
    events.append({"metadata": {"usage": {"inputTokens": 3, "outputTokens": 2}}})
    return events


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("path", ["wire", "sdk"])
@settings(max_examples=100, deadline=None)
@given(blocks=st.lists(BLOCK, max_size=6), stop=st.sampled_from(STOPS))
def test_a_call_is_handed_out_only_complete_and_never_at_a_malformed_finish(
    path: str, blocks: list[dict[str, Any]], stop: str
) -> None:
    """On the wire (event-stream frames) and through boto3 (botocore's ``{name: body}`` items) alike."""
    adapter = adapter_for("bedrock-converse") if path == "wire" else SdkBedrockConverse()
    events: list[Any] = []
    try:
        for event in _message(blocks, stop):
            if isinstance(adapter, SdkBedrockConverse):
                events += adapter.feed_item(event)
            else:
                events += adapter.feed(Frame(json.dumps(event)))
    except ProtocolViolation as violation:
        detail = violation.detail
        events += violation.before  # what the event that failed carried before the call it ended
    else:
        detail = None
    assert detail in (None, "unparseable_arguments")
    tools = [one for one in blocks if one["kind"] == "tool"]
    calls = [event for event in events if isinstance(event, ToolCall)]
    if stop in MALFORMED or not all(_parses(one["text"]) for one in tools):
        assert calls == []
    else:
        assert [json.loads(call.arguments) for call in calls] == [json.loads(one["text"]) for one in tools]
        assert [call.server_side for call in calls] == [one["server"] for one in tools]
    assert UNREAD_CONTENT not in adapter.anomalies
