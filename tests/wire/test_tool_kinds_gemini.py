"""Gemini's tool kinds, by property (DESIGN §12.3, §13.1): over random sequences of parts (text, thoughts,
whole calls, calls whose arguments stream in fragments, code execution), cut into random chunks, with a
random finish and a clean end or a cut, a ``ToolCall`` is handed out only for a complete call, exactly once
per call, with arguments that parse (the ones the fragments assemble), and never when the finish is not a
whole answer (a malformed or unexpected call, too many calls, the output limit, a filter, none at all).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.machine import Activity, StreamMachine, Trigger
from streamfsm.wire import Finish, Frame, ProtocolViolation, StreamEvent, ToolCall, adapter_for
from streamfsm.wire._adapters._gemini import CODE_EXECUTION, json_path

WHOLE = "STOP"
NOT_WHOLE = (
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MAX_TOKENS",
    "SAFETY",
    "OTHER",
    "FINISH_REASON_UNSPECIFIED",
)
SIGNATURE = "CiIBVKhc7oDPpCaXyJKKssjqr4hmExxq5ZXmXsvxLNdVgvVL"


@dataclass
class Call:
    """One call the model makes: what a ToolCall for it must carry, and the parts that send it."""

    name: str
    arguments: dict[str, Any]
    parts: list[dict[str, Any]]
    complete: bool = True
    server_side: bool = False


@dataclass
class Plan:
    parts: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)


_KEYS = st.sampled_from(["location", "unit", "path", "text", "n", "a b"])
_STRINGS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_SCALARS = st.one_of(_STRINGS, st.integers(-1000, 1000), st.booleans(), st.none())
_ARGS = st.dictionaries(
    _KEYS,
    st.one_of(_SCALARS, st.dictionaries(_KEYS, _STRINGS, max_size=2), st.lists(_STRINGS, max_size=2)),
    max_size=3,
)


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _leaves(value: Any, path: str = "$") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for key, inner in value.items() for leaf in _leaves(inner, _member(path, key))]
    if isinstance(value, list):
        return [leaf for i, inner in enumerate(value) for leaf in _leaves(inner, f"{path}[{i}]")]
    return [(path, value)]


def _fragments(draw: st.DrawFn, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The fragments of ``arguments`` as Vertex streams them: a value per leaf path, a string in pieces
    (each but the last says willContinue; the last piece may be an empty string)."""
    out: list[dict[str, Any]] = []
    for path, value in _leaves(arguments):
        if isinstance(value, str):
            cuts = sorted(draw(st.lists(st.integers(0, len(value)), max_size=2)))
            pieces = [value[a:b] for a, b in zip([0, *cuts], [*cuts, len(value)], strict=True)]
            if draw(st.booleans()):
                pieces.append("")  # Vertex ends a streamed string with an empty piece
            for i, piece in enumerate(pieces):
                fragment: dict[str, Any] = {"jsonPath": path, "stringValue": piece}
                if i < len(pieces) - 1:
                    fragment["willContinue"] = True
                out.append(fragment)
        elif isinstance(value, bool):
            out.append({"jsonPath": path, "boolValue": value})
        elif value is None:
            out.append({"jsonPath": path, "nullValue": None})
        else:
            out.append({"jsonPath": path, "numberValue": value})
    return out


@st.composite
def _streamed(draw: st.DrawFn, name: str, ended: bool) -> Call:
    arguments = draw(_ARGS.filter(lambda a: all(v != [] and v != {} for v in a.values())))
    fragments = _fragments(draw, arguments)
    start: dict[str, Any] = {"functionCall": {"name": name, "willContinue": True}}
    if draw(st.booleans()):
        start["thoughtSignature"] = SIGNATURE
    parts = [start]
    while fragments:
        take = draw(st.integers(1, 2))
        parts.append({"functionCall": {"partialArgs": fragments[:take], "willContinue": True}})
        fragments = fragments[take:]
        if draw(st.integers(0, 4)) == 0:
            parts.append({"functionCall": {"willContinue": True}})  # a part that only says "more"
    if ended:
        if len(parts) > 1 and draw(st.booleans()):
            del parts[-1]["functionCall"]["willContinue"]  # the last fragments end the call
        else:
            parts.append({"functionCall": {}})  # an empty functionCall ends it
    return Call(name, arguments, parts, complete=ended)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    plan = Plan()
    count = draw(st.integers(1, 5))
    for position in range(count):
        kind = draw(st.sampled_from(["text", "thought", "call", "streamed", "code"]))
        name = f"tool_{position}"
        if kind in ("text", "thought"):
            part: dict[str, Any] = {"text": draw(st.text(min_size=1, max_size=8))}
            if kind == "thought":
                part["thought"] = True
            plan.parts.append(part)
            continue
        if kind == "call":
            arguments = draw(_ARGS)
            call: dict[str, Any] = {"name": name, "args": arguments}
            if draw(st.booleans()):
                call["id"] = f"fc-{position}"
            part = {"functionCall": call}
            if draw(st.booleans()):
                part["thoughtSignature"] = SIGNATURE
            made = Call(name, arguments, [part])
        elif kind == "code":
            code = {"language": "PYTHON", "code": draw(st.text(max_size=10))}
            result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}
            made = Call(CODE_EXECUTION, code, [{"executableCode": code}, result], server_side=True)
        else:  # a call the provider may leave unended only as the stream's last thing
            made = draw(_streamed(name, ended=position < count - 1 or draw(st.booleans())))
        plan.parts += made.parts
        plan.calls.append(made)
    return plan


def _chunk(parts: list[dict[str, Any]], finish: str | None = None, usage: bool = False) -> Frame:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-3-pro"}
    if usage:
        body["usageMetadata"] = {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12}
    return Frame(json.dumps(body), "message")


@dataclass
class Played:
    plan: Plan
    finish: str | None
    clean: bool  # the stream reached its clean end (and the finish chunk arrived, when there is one)
    events: list[StreamEvent]
    violation: ProtocolViolation | None

    @property
    def calls(self) -> list[ToolCall]:
        return [e for e in self.events if isinstance(e, ToolCall)]


@st.composite
def played(draw: st.DrawFn) -> Played:
    plan = draw(plans())
    finish = draw(st.sampled_from([WHOLE, WHOLE, WHOLE, None, *NOT_WHOLE[:3], st.sampled_from(NOT_WHOLE)]))
    if not isinstance(finish, str | None):
        finish = draw(finish)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(plan.parts) - 1, 1)), max_size=3))))
    groups = [plan.parts[a:b] for a, b in zip([0, *cuts], [*cuts, len(plan.parts)], strict=True)]
    chunks = [_chunk(group) for group in groups if group] or [_chunk([])]
    if draw(st.booleans()):  # the finish on the last chunk of parts, or on a trailing one with usage
        last = json.loads(chunks[-1].data)
        chunks[-1] = _chunk(last["candidates"][0]["content"]["parts"], finish, usage=True)
    else:
        chunks.append(_chunk([], finish, usage=True))
    cut = draw(st.sampled_from([None, None, st.integers(0, len(chunks) - 1)]))  # chunks that arrive, when cut
    if cut is not None:
        cut = draw(cut)
    arrived = chunks if cut is None else chunks[:cut]
    adapter = adapter_for("gemini")
    events: list[StreamEvent] = []
    violation = None
    try:
        for chunk in arrived:
            events += adapter.feed(chunk)
        if cut is None:
            events += adapter.end()
    except ProtocolViolation as exc:
        violation = exc
        events += exc.before
    return Played(plan, finish, cut is None, events, violation)


def _expected(call: Call) -> tuple[str, Any, bool]:
    return (call.name, call.arguments, call.server_side)


def _got(call: ToolCall) -> tuple[str, Any, bool]:
    return (call.name, json.loads(call.arguments), call.server_side)


@settings(max_examples=120, deadline=None)
@given(played())
def test_a_whole_answer_hands_out_each_complete_call_once_with_its_assembled_arguments(run: Played) -> None:
    calls = run.plan.calls
    if not run.clean or run.finish != WHOLE or not all(c.complete for c in calls):
        return
    assert run.violation is None
    assert [_got(c) for c in run.calls] == [_expected(c) for c in calls]
    assert len({c.call_id for c in run.calls}) == len(run.calls)


@settings(max_examples=120, deadline=None)
@given(played())
def test_no_call_is_handed_out_without_a_whole_answer_finish(run: Played) -> None:
    """A malformed or unexpected call, too many calls, the output limit, a filter, no finish or a cut before
    the finish: the calls that came with it are never handed out."""
    finish_arrived = run.clean or run.finish is None
    if run.finish == WHOLE and finish_arrived:
        return
    assert run.calls == []


@settings(max_examples=120, deadline=None)
@given(played())
def test_a_call_is_handed_out_only_when_complete(run: Played) -> None:
    """Every ToolCall is one of the complete calls, and every event is one the machine accepts where it
    arrives (parallel calls, text after calls, code execution); a call the provider never ended is still
    open at the finish, which the runtime then fails as tool_input_unfinished."""
    complete = [_expected(c) for c in run.plan.calls if c.complete]
    for call in run.calls:
        assert _got(call) in complete  # arguments that parse: the whole call's, never a part of one
    machine = StreamMachine()
    machine.send(Trigger.REQUEST_SENT)
    machine.send(Trigger.HEADERS_RECEIVED)
    for event in run.events:
        if isinstance(event, Finish) and machine.state.activity is Activity.TOOL_INPUT_OPEN:
            break
        machine.send(event.trigger)
    unfinished = [c for c in run.plan.calls if not c.complete]
    if unfinished and run.clean and run.finish is not None and run.violation is None:
        assert run.calls == []
        assert machine.state.activity is Activity.TOOL_INPUT_OPEN


def test_json_paths_are_rfc_9535_singular_queries() -> None:
    assert json_path("$.recipe.ingredients[0].amount") == ["recipe", "ingredients", 0, "amount"]
    assert json_path("$['a b'][\"c\"]") == ["a b", "c"]
    for path in ("$", "", "a.b", "$.*", "$[*]", "$[0:2]", "$[?@.a]", "$[-1]", "$.a[", None, 3):
        assert json_path(path) is None, path


def _feed(chunks: list[Frame]) -> list[StreamEvent]:
    adapter = adapter_for("gemini")
    events = [event for chunk in chunks for event in adapter.feed(chunk)]
    return events + adapter.end()


def _streamed_call(name: str, fragments: list[dict[str, Any]]) -> list[Frame]:
    """Vertex's recorded shape: the name, each fragment in a part of its own, then an empty functionCall."""
    return [
        _chunk([{"functionCall": {"name": name, "willContinue": True}, "thoughtSignature": SIGNATURE}]),
        *(_chunk([{"functionCall": {"partialArgs": [f], "willContinue": True}}]) for f in fragments),
        _chunk([{"functionCall": {}}]),
    ]


def test_two_streamed_calls_in_turn_are_two_calls_with_their_own_arguments() -> None:
    boston = [
        {"jsonPath": "$.location", "stringValue": "Boston", "willContinue": True},
        {"jsonPath": "$.location", "stringValue": ""},
    ]
    events = _feed(
        [
            *_streamed_call("getWeather", boston),
            *_streamed_call("getWeather", [{"jsonPath": "$.location", "stringValue": "San Francisco"}]),
            _chunk([], "STOP", usage=True),
        ]
    )
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("call_0", "getWeather", {"location": "Boston"}),
        ("call_1", "getWeather", {"location": "San Francisco"}),
    ]
    assert isinstance(events[-1], Finish) and events[-1].raw_reason == "STOP"


def test_fragments_build_nested_objects_and_lists_in_order() -> None:
    fragments = [
        {"jsonPath": "$.recipe.ingredients[0].amount", "stringValue": "16 oz", "willContinue": True},
        {"jsonPath": "$.recipe.ingredients[0].amount", "stringValue": ""},
        {"jsonPath": "$.recipe.ingredients[0].name", "stringValue": "noodles"},
        {"jsonPath": "$.recipe.ingredients[1].price", "numberValue": 0.5},
        {"jsonPath": "$.recipe.vegan", "boolValue": False},
        {"jsonPath": "$['recipe']['note']", "nullValue": None},
    ]
    calls = [
        e for e in _feed([*_streamed_call("cook", fragments), _chunk([], "STOP")]) if isinstance(e, ToolCall)
    ]
    assert [json.loads(c.arguments) for c in calls] == [
        {
            "recipe": {
                "ingredients": [{"amount": "16 oz", "name": "noodles"}, {"price": 0.5}],
                "vegan": False,
                "note": None,
            }
        }
    ]


def test_the_last_fragments_may_end_the_call_without_an_empty_part() -> None:
    start = _chunk([{"functionCall": {"name": "writeItems", "willContinue": True}}])
    last = _chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.n", "numberValue": 3}]}}])
    events = _feed([start, last, _chunk([{"text": ""}], "STOP")])
    assert [(c.name, c.arguments) for c in events if isinstance(e := c, ToolCall) and e] == [
        ("writeItems", '{"n":3}')
    ]


def test_a_path_that_cannot_be_followed_makes_arguments_that_do_not_parse() -> None:
    bad = [{"jsonPath": "$.items[3]", "stringValue": "skips three items"}]
    adapter = adapter_for("gemini")
    for chunk in _streamed_call("f", bad)[:-1]:
        adapter.feed(chunk)
    with pytest.raises(ProtocolViolation, match="unparseable_arguments"):
        adapter.feed(_streamed_call("f", bad)[-1])


def test_text_inside_a_streamed_call_is_a_protocol_violation() -> None:
    adapter = adapter_for("gemini")
    adapter.feed(_chunk([{"functionCall": {"name": "f", "willContinue": True}}]))
    with pytest.raises(ProtocolViolation, match="unexpected_event"):
        adapter.feed(_chunk([{"text": "meanwhile"}]))


def test_code_execution_and_built_in_tools_are_server_side_calls() -> None:
    code = {"language": "PYTHON", "code": "print(2 + 2)"}
    events = _feed(
        [
            _chunk(
                [{"executableCode": code}, {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4"}}]
            ),
            _chunk([{"toolCall": {"id": "t1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"q": "x"}}}]),
            _chunk([{"toolResponse": {"id": "t1", "response": {}}}, {"text": "4."}], "STOP"),
        ]
    )
    calls = [
        (c.call_id, c.name, json.loads(c.arguments), c.server_side) for c in events if isinstance(c, ToolCall)
    ]
    assert calls == [("call_0", CODE_EXECUTION, code, True), ("t1", "google_search_web", {"q": "x"}, True)]
