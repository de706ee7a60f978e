"""Ollama's tool calls, read as its API defines them, by property over random streams: whole calls in a
message's ``tool_calls``, several in one line, arguments an object (or a string, as some servers send it,
that may not parse), with or without an ``id``, among content and thinking lines, ended by any
``done_reason`` the API reference gives, or cut.

The invariant: each call whose arguments parse is handed out whole, in order, up to the first that does not
parse (the run then fails with that call open); nothing documented is unread content."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.wire import UNREAD_CONTENT, Frame, ProtocolViolation, ToolCall, adapter_for

DONE_REASONS = ("stop", "length", "load", "unload", "connection_closed")  # the API reference's
ARGS = st.dictionaries(st.text(max_size=4), st.integers(-3, 3) | st.text(max_size=4), max_size=3)


@st.composite
def call(draw: st.DrawFn) -> dict[str, Any]:
    arguments: Any = draw(ARGS)
    if draw(st.booleans()):  # as a string: whole, or cut short
        text = json.dumps(arguments)
        arguments = text[: draw(st.integers(1, len(text)))]
    out: dict[str, Any] = {"function": {"name": "lookup", "arguments": arguments}}
    if draw(st.booleans()):
        out["id"] = f"call_{draw(st.integers(0, 99))}"
        out["function"]["index"] = draw(st.integers(0, 3))
    return out


LINE = st.one_of(
    st.builds(lambda t: {"content": t}, st.text(min_size=1, max_size=6)),
    st.builds(lambda t: {"thinking": t}, st.text(min_size=1, max_size=6)),
    st.builds(lambda calls: {"content": "", "tool_calls": calls}, st.lists(call(), min_size=1, max_size=3)),
)


def _parses(arguments: Any) -> bool:
    if not isinstance(arguments, str):
        return True
    try:
        json.loads(arguments)
    except ValueError:
        return False
    return True


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(LINE, max_size=5), done=st.none() | st.sampled_from(DONE_REASONS))
def test_whole_calls_are_handed_out_in_order_up_to_the_first_that_does_not_parse(
    lines: list[dict[str, Any]], done: str | None
) -> None:
    adapter = adapter_for("ollama")
    frames = [
        {"model": "llama3.2", "message": {"role": "assistant", **line}, "done": False} for line in lines
    ]
    if done is not None:
        frames.append({"model": "llama3.2", "message": {"role": "assistant", "content": ""}, "done": True})
        frames[-1] |= {"done_reason": done, "prompt_eval_count": 3, "eval_count": 2}
    events: list[Any] = []
    try:
        for frame in frames:
            events += adapter.feed(Frame(json.dumps(frame)))
    except ProtocolViolation as violation:
        detail = violation.detail
        events += violation.before  # what the event that failed carried before the call it ended
    else:
        detail = None
    assert detail in (None, "unparseable_arguments")
    expected: list[Any] = []
    for one in (c for line in lines for c in line.get("tool_calls", [])):
        if not _parses(one["function"]["arguments"]):
            break
        arguments = one["function"]["arguments"]
        expected.append(json.loads(arguments) if isinstance(arguments, str) else arguments)
    calls = [event for event in events if isinstance(event, ToolCall)]
    assert [json.loads(c.arguments) for c in calls] == expected
    assert UNREAD_CONTENT not in adapter.anomalies
