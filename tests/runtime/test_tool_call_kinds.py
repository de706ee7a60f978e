"""A tool call is handed out only when its input is complete by its kind's own grammar, once, and a whole
answer hands out every call it completed: one property per tool kind, over 1-3 parallel calls whose events
interleave at random (Responses by ``item_id`` / ``output_index``, chat by ``index``), each call complete or
cut, and the stream ended whole, short or cut. Played through the run core (the machine's grammar checked
on every event) from the bytes the provider would send.

* function calls: JSON arguments, complete when they parse and the provider ended them;
* custom (freeform) tools: raw text, complete when its done event (Responses) or a whole finish (chat) came;
* client actions (Responses ``computer_call`` ...): a call once its done item says ``completed``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.runtime import RunCore, StreamConfig, ToolCall
from streamfsm.testing import frame
from streamfsm.wire import adapter_for

ACTIONS = ("computer_call", "local_shell_call", "shell_call", "apply_patch_call")


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Call:
    kind: str  # "function", "custom" or one of ACTIONS
    name: str
    full: str  # the whole input (JSON arguments, raw text, or the action as JSON)
    sent: list[str]  # the fragments sent: all of the input, or a strict prefix of it
    complete: bool  # the provider ended it (its done events came, all of its input sent)
    grammar: str  # "json" or "text"

    @property
    def handed_out_as(self) -> str:
        return self.full


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=24)
json_inputs = st.dictionaries(
    st.text("abcxyz", min_size=1, max_size=4), st.integers(-9, 99) | st.text('ab {}"', max_size=5), min_size=1
).map(lambda d: json.dumps(d))


_mostly_complete = st.sampled_from([True, True, True, False])


@st.composite
def calls(draw: st.DrawFn, kinds: tuple[str, ...]) -> Call:
    kind = draw(st.sampled_from(kinds))
    if kind in ACTIONS:
        action = {"type": "click", "x": draw(st.integers(0, 99)), "y": 1}
        full = json.dumps({"action": action}, separators=(",", ":"), sort_keys=True)
        return Call(kind, kind, full, [], draw(_mostly_complete), "json")
    full = draw(json_inputs if kind == "function" else texts)
    # mostly several fragments, so that calls interleave
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(full) - 1)), min_size=1, max_size=3))))
    pieces = [full[a:b] for a, b in zip([0, *cuts], [*cuts, len(full)], strict=True) if full[a:b]]
    complete = draw(_mostly_complete)
    if not complete:  # a cut input: a strict, non-empty prefix of it
        if len(full) < 2:
            complete = True
        else:
            keep = draw(st.integers(1, len(full) - 1))
            pieces = [full[:keep]]
    grammar = "json" if kind == "function" else "text"
    name = draw(st.sampled_from(["read_file", "apply_patch", "grep"]))
    return Call(kind, name, full, pieces, complete, grammar)


def _interleave(draw: st.DrawFn, streams: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursors = [0] * len(streams)
    while any(c < len(s) for c, s in zip(cursors, streams, strict=True)):
        ready = [i for i, s in enumerate(streams) if cursors[i] < len(s)]
        i = draw(st.sampled_from(ready))
        out.append(streams[i][cursors[i]])
        cursors[i] += 1
    return out


def _play(fmt: str, payloads: list[Any], starts: list[int] | None = None) -> tuple[list[Any], RunCore]:
    """The events of the run fed ``payloads`` (``starts``: where each payload's events begin)."""
    starts = [] if starts is None else starts
    core = RunCore(
        provider=fmt,
        model="m",
        body={"model": "m", "stream": True},
        url="http://127.0.0.1/v1/x",
        config=StreamConfig(history_size=10_000, sinks=()),
        clock=_Clock(),
    )
    core.begin()
    core.headers(200, {"content-type": "text/event-stream"}, core.stream_wire(adapter_for(fmt)))
    events: list[Any] = []
    for payload in payloads:
        if core.done:
            break
        starts.append(len(events))
        if isinstance(payload, str):
            events += core.feed(frame(payload))
        else:
            events += core.feed(frame(payload, payload.get("type")))
    if not core.done:
        events += core.end()
    core.take_failure()
    return events, core


def _check(played: tuple[list[Any], RunCore], specs: list[Call], ids: list[str], whole: bool) -> None:
    events, core = played
    handed = [e for e in events if isinstance(e, ToolCall)]
    by_id = dict(zip(ids, specs, strict=True))
    seen: set[str] = set()
    for call in handed:
        spec = by_id[call.call_id]
        assert call.call_id not in seen, "a call handed out twice"
        seen.add(call.call_id)
        assert spec.complete, f"an incomplete {spec.kind} call was handed out"
        assert call.arguments == spec.handed_out_as and call.name == spec.name
    if whole and all(s.complete for s in specs):
        # A whole answer whose every call the provider completed: finished, with every call, once.
        assert core.finished, core.diagnosis.summary_key if core.diagnosis else None
        assert seen == set(ids)
    if not all(s.complete for s in specs):
        # Some call never completed: the run never ends finished, and it fails with a call open.
        assert not core.finished
        assert core.diagnosis is not None and core.diagnosis.state.activity.value == "tool_input_open"
    for call in handed:  # the grammar it was handed out under is its kind's
        assert getattr(getattr(call, "input", None), "value", None) == by_id[call.call_id].grammar


# -- Responses --------------------------------------------------------------------------------------


def _responses_call(n: int, spec: Call) -> list[dict[str, Any]]:
    item_id, call_id = f"it_{n}", f"call_{n}"
    if spec.kind in ACTIONS:
        base = {
            "type": spec.kind,
            "id": item_id,
            "call_id": call_id,
            "action": json.loads(spec.full)["action"],
        }
        out = [
            {
                "type": "response.output_item.added",
                "output_index": n,
                "item": {**base, "status": "in_progress"},
            }
        ]
        status = "completed" if spec.complete else "incomplete"
        return [
            *out,
            {"type": "response.output_item.done", "output_index": n, "item": {**base, "status": status}},
        ]
    field = "arguments" if spec.kind == "function" else "input"
    item_type = "function_call" if spec.kind == "function" else "custom_tool_call"
    event = "function_call_arguments" if spec.kind == "function" else "custom_tool_call_input"
    item = {"type": item_type, "id": item_id, "call_id": call_id, "name": spec.name, field: ""}
    out = [
        {"type": "response.output_item.added", "output_index": n, "item": {**item, "status": "in_progress"}}
    ]
    for piece in spec.sent:
        out.append({"type": f"response.{event}.delta", "item_id": item_id, "output_index": n, "delta": piece})
    if spec.complete:
        out.append(
            {"type": f"response.{event}.done", "item_id": item_id, "output_index": n, field: spec.full}
        )
        done = {**item, field: spec.full, "status": "completed"}
        out.append({"type": "response.output_item.done", "output_index": n, "item": done})
    elif n % 2 == 0:  # all of its input came, but its done item says it did not complete
        rest = spec.full[len("".join(spec.sent)) :]
        if rest:
            out.append(
                {"type": f"response.{event}.delta", "item_id": item_id, "output_index": n, "delta": rest}
            )
        done = {**item, field: spec.full, "status": "incomplete"}
        out.append({"type": "response.output_item.done", "output_index": n, "item": done})
    return out


def _responses(draw: st.DrawFn, kinds: tuple[str, ...]) -> tuple[list[Any], list[Call], list[str], bool]:
    specs = draw(st.lists(calls(kinds), min_size=1, max_size=3))
    body = _interleave(draw, [_responses_call(n, s) for n, s in enumerate(specs)])
    end = draw(st.sampled_from(["completed", "incomplete", "cut"]))
    created = {
        "type": "response.created",
        "response": {"id": "resp_1", "model": "m", "status": "in_progress"},
    }
    terminal: list[dict[str, Any]] = []
    if end == "completed":
        terminal = [{"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}]
    elif end == "incomplete":
        details = {"reason": "max_output_tokens"}
        response = {"id": "resp_1", "status": "incomplete", "incomplete_details": details}
        terminal = [{"type": "response.incomplete", "response": response}]
    payloads = [created, *body, *terminal]
    for number, payload in enumerate(payloads):
        payload["sequence_number"] = number
    return payloads, specs, [f"call_{n}" for n in range(len(specs))], end == "completed"


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_responses_function_calls_interleaved(data: st.DataObject) -> None:
    payloads, specs, ids, whole = _responses(data.draw, ("function",))
    _check(_play("openai-responses", payloads), specs, ids, whole)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_responses_custom_tool_calls_raw_text(data: st.DataObject) -> None:
    payloads, specs, ids, whole = _responses(data.draw, ("custom", "function"))
    _check(_play("openai-responses", payloads), specs, ids, whole)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_responses_client_actions(data: st.DataObject) -> None:
    payloads, specs, ids, whole = _responses(data.draw, (*ACTIONS, "function"))
    _check(_play("openai-responses", payloads), specs, ids, whole)


# -- chat -------------------------------------------------------------------------------------------------


def _chat_call(n: int, spec: Call) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for position, piece in enumerate(spec.sent or [""]):
        fragment: dict[str, Any] = {"index": n}
        body_key = "function" if spec.kind == "function" else "custom"
        body: dict[str, Any] = {"arguments" if spec.kind == "function" else "input": piece}
        if position == 0:
            fragment |= {"id": f"call_{n}", "type": spec.kind}
            body["name"] = spec.name
        fragment[body_key] = body
        out.append(fragment)
    return out


def _chunk(fragment: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    delta = {"tool_calls": [fragment]} if fragment else {}
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chat(draw: st.DrawFn, kinds: tuple[str, ...]) -> tuple[list[Any], list[Call], list[str], bool]:
    specs = draw(st.lists(calls(kinds), min_size=1, max_size=3))
    # malformed_function_call: the provider says the model's call was malformed (Gemini's compatible API)
    end = draw(st.sampled_from(["tool_calls", "length", "malformed_function_call", "cut"]))
    for spec in specs:
        if spec.kind == "custom":  # no done event: free text is whole exactly when the answer is
            spec.full, spec.complete = "".join(spec.sent), end == "tool_calls"
        else:  # JSON is whole when all of it was sent
            spec.complete = "".join(spec.sent) == spec.full
    fragments = _interleave(draw, [_chat_call(n, s) for n, s in enumerate(specs)])
    payloads: list[Any] = [_chunk(f) for f in fragments]
    if end != "cut":
        payloads += [_chunk(None, end), "[DONE]"]
    return payloads, specs, [f"call_{n}" for n in range(len(specs))], end == "tool_calls"


def _check_chat(payloads: list[Any], specs: list[Call], ids: list[str], whole: bool) -> None:
    """``_check``, and a finish that says the call was malformed never finishes the run nor hands out a
    call itself."""
    starts: list[int] = []
    events, core = played = _play("openai-chat", payloads, starts)
    _check(played, specs, ids, whole)
    finish = payloads[-2]["choices"][0]["finish_reason"] if payloads[-1] == "[DONE]" else None
    if finish == "malformed_function_call":
        assert not core.finished
        if len(starts) >= len(payloads) - 1:  # the finish chunk was fed
            assert not [e for e in events[starts[len(payloads) - 2] :] if isinstance(e, ToolCall)]


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_chat_function_calls_interleaved(data: st.DataObject) -> None:
    _check_chat(*_chat(data.draw, ("function",)))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_chat_custom_tool_calls_raw_text(data: st.DataObject) -> None:
    _check_chat(*_chat(data.draw, ("custom", "function")))
