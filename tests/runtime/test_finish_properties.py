"""Issue 29, roots 1 and 2, as Hypothesis properties over every format's stream (DESIGN §12.1 and §12.3).

(a) A finish reason is a whole answer only if it is in its format's whole-answer set: a random raw reason is
    never ``completed.finished`` otherwise, and an unrecognised one after visible output is never
    ``safe_auto_retry``.
(b) A ``ToolCall`` is handed out only complete: over random fragmentations, cut points and finish reasons,
    every ``ToolCall`` (the events and ``run.result()``) carries arguments ``json.loads`` accepts, and a call
    left open at a finish that is not a whole answer, or at a cut, is ``tool_input_interrupted`` (or the
    provider's error), never a ``ToolCall`` and never ``completed``.

The runs are the tap's (`TapRun`): the run core every source shares (adapter, machine, classifier, record),
fed in memory, chunk by chunk, as the tap feeds what the SDK reads. The SDK item path (``wrap()`` on a
stream it cannot read the body of) is checked to hand out the same calls as the wire adapters, from the
objects the SDKs build. The same streams over real sockets, for ``open_stream`` and ``wrap()``, are catalog
scenarios and the examples in ``test_tool_call_completeness.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from anthropic._models import construct_type as anthropic_construct
from anthropic.types import RawMessageStreamEvent
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai._models import construct_type as openai_construct
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from streamfsm.classify import FINISHED_SAYS, NOT_WHOLE
from streamfsm.runtime import Ids, StreamConfig
from streamfsm.tap._run import TapRun
from streamfsm.testing import SSE_FORMATS, build, frame
from streamfsm.wire import (
    Finish,
    ProtocolViolation,
    ProviderErrorEvent,
    SdkAnthropic,
    SdkOpenAIChat,
    SdkOpenAIResponses,
    SSEDecoder,
    TextDelta,
    ToolCall,
    ToolInputEnd,
    ToolInputStart,
    adapter_for,
)

# The specification, from the providers' documentation and source (see streamfsm/classify/_finish.py for the
# sources): the reasons that mean a whole answer, per format, case-folded.
WHOLE = {
    "openai-chat": {"stop", "tool_calls", "function_call", "eos_token", "stop_sequence", "eos"},
    "openai-responses": {"completed"},
    "anthropic": {"end_turn", "stop_sequence", "tool_use"},
    "gemini": {"stop"},
}
# Reasons that read as an error or abort, by their words.
ERROR_LIKE = ("error", "abort", "network_error", "engine_error", "ABORTED", "request-cancelled", "Timeout")
KNOWN = [
    *sorted({r for s in WHOLE.values() for r in s}),
    "length",
    "max_tokens",
    "MAX_TOKENS",
    "content_filter",
    "SAFETY",
    "refusal",
    "pause_turn",
    "sensitive",
    "model_length",
    "OTHER",
    "FINISH_REASON_UNSPECIFIED",
]
SDK_TRANSLATORS = {
    "openai-chat": SdkOpenAIChat,
    "openai-responses": SdkOpenAIResponses,
    "anthropic": SdkAnthropic,
}
_SENTINEL = "finish-reason-goes-here"
_CONFIG = StreamConfig(idle_timeout=None, first_token_timeout=None, total_timeout=None)
_TEXT = st.text(alphabet="abcdefghij klmnop.,", min_size=1, max_size=10)
reasons = st.sampled_from(KNOWN) | st.sampled_from(ERROR_LIKE) | st.text(max_size=20)


def _whole(fmt: str, raw: str | None) -> bool:
    return isinstance(raw, str) and raw.casefold() in WHOLE[fmt]


def _errorish(raw: str) -> bool:
    words = set(raw.casefold().replace("-", "_").replace(".", "_").replace(" ", "_").split("_"))
    return not words.isdisjoint({"error", "abort", "aborted", "cancelled", "timeout"})


def stream(fmt: str, parts: Sequence[tuple[str, ...]], raw: str | None) -> list[bytes]:
    """``parts`` ending with the raw finish reason ``raw`` (None: the format's own whole-answer end).
    Responses: ``response.completed`` carries a reason in its ``status``."""
    if raw is None:
        return build(fmt, parts)  # type: ignore[arg-type]
    if fmt != "openai-responses":  # the builders take an empty reason for none: put the reason in after
        frames = build(fmt, parts, finish=_SENTINEL)  # type: ignore[arg-type]
        sent = json.dumps(raw).encode()
        return [f.replace(json.dumps(_SENTINEL).encode(), sent) for f in frames]
    frames = build(fmt, parts)  # type: ignore[arg-type]
    last = json.loads(frames[-1].decode().split("data: ", 1)[1])
    last["response"]["status"] = raw
    return [*frames[:-1], frame(last, last["type"])]


def play(
    fmt: str, frames: Sequence[bytes], cuts: Sequence[int], stop_at: int | None, fault: str
) -> tuple[TapRun, list[Any]]:
    """Feed the stream's bytes in pieces split at ``cuts``; stop after ``stop_at`` bytes (None: all of them),
    then end cleanly (``eof``) or with a reset (``rst``). Returns the ended run and every event it gave."""
    body = b"".join(frames)
    if stop_at is not None:
        body = body[:stop_at]
    run = TapRun(fmt, body={}, url="http://127.0.0.1/", config=_CONFIG, ids=Ids())
    run.collect()
    events = run.keep_events()
    run.begin()
    run.connected(200, {"content-type": "text/event-stream"})
    seen: list[Any] = []
    start = 0
    for cut in [*sorted(c for c in set(cuts) if 0 < c < len(body)), len(body)]:
        if run.chunk(body[start:cut]) is not None:
            break
        seen += events
        events.clear()
        start = cut
    else:
        if stop_at is not None and fault == "rst":
            run.read_failed(ConnectionResetError(104, "Connection reset by peer"))
        else:
            run.chunk(None)
    seen += events
    run.end()
    return run, seen


@st.composite
def pieces(draw: st.DrawFn, size: int) -> list[int]:
    return draw(st.lists(st.integers(1, max(1, size - 1)), max_size=6))


# -- (a) finish reasons ------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SSE_FORMATS), reasons, st.booleans(), st.data())
def test_a_finish_is_whole_only_if_its_format_says_so(
    fmt: str, raw: str, visible: bool, data: st.DataObject
) -> None:
    parts = [("text", "Hello")] if visible else [("reasoning", "thinking")]
    frames = stream(fmt, parts, raw)
    run, events = play(fmt, frames, data.draw(pieces(len(b"".join(frames)))), None, "eof")
    d = run.diagnosis
    assert d is not None and run.record is not None
    if d.summary_key == "completed.finished":
        assert _whole(fmt, raw), (fmt, raw)
    if not _whole(fmt, raw):
        assert d.summary_key != "completed.finished", (fmt, raw, d.summary_key)
        if visible and any(isinstance(e, TextDelta) for e in events):
            assert d.verdict.value != "safe_auto_retry", (fmt, raw, d.summary_key)
    if _errorish(raw) and not _whole(fmt, raw):
        assert d.failure_class.value == "provider_error", (fmt, raw, d.summary_key)
    if d.cause == "unrecognised":
        assert d.confidence.value == "low"
        assert d.verdict.value != "safe_auto_retry"
    assert run.record["finish_reason"]["raw"] is None or len(run.record["finish_reason"]["raw"]) <= 64


# -- (c) one voice per record ----------------------------------------------------------------------------

# What each summary detail says of the finish, in the unified reason (DESIGN §13.3); a whole answer is STOP
# or TOOL_CALLS, and any other detail (paused, background, a malformed call, an unrecognised reason) OTHER.
_SAYS = {"finished": {"stop", "tool_calls"}, "length": {"length"}}
_SAYS |= {detail: {"content_filter"} for detail in ("content_filter", "refusal")}
_VENDOR_NAMES = sorted(NOT_WHOLE) + [name.upper() for name in sorted(NOT_WHOLE)]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(SSE_FORMATS),
    st.sampled_from(_VENDOR_NAMES) | reasons,
    st.sampled_from(["text", "reasoning", "tool"]),
    st.lists(st.integers(1, 2000), max_size=6),
)
@example("openai-chat", "blocklist", "text", [])
def test_c_the_summary_key_the_unified_finish_the_title_and_the_verdict_agree(
    fmt: str, raw: str, kind: str, cuts: list[int]
) -> None:
    """Whatever the finish reason, the record speaks with one voice: ``finish_reason.unified`` says what the
    summary key says, the title is the key's own, and a whole answer is never retried."""
    parts = [("tool", "read_file", '{"path": "a"}')] if kind == "tool" else [(kind, "Hello")]
    frames = stream(fmt, parts, raw)
    run, _ = play(fmt, frames, cuts, None, "eof")
    d, record = run.diagnosis, run.record
    assert d is not None and record is not None
    unified = record["finish_reason"]["unified"]
    family, _, detail = d.summary_key.partition(".")
    if unified is not None and family in ("completed", "tool_input_interrupted"):
        assert unified in _SAYS.get(detail, {"other"}), (fmt, raw, d.summary_key, unified)
    if unified in ("stop", "tool_calls"):
        assert d.summary_key == "completed.finished", (fmt, raw, d.summary_key, unified)
    if family == "completed":
        title = FINISHED_SAYS[detail][0]
        assert record["summary"]["title"].startswith(title), (d.summary_key, record["summary"]["title"])
    if d.summary_key == "completed.finished":  # nothing to retry: the answer is whole
        assert record["retry"]["verdict"] == "no_retry", (d.summary_key, record["retry"])


# -- (b) tool-call completeness ----------------------------------------------------------------------------

_ARGS = st.dictionaries(st.sampled_from(["path", "text", "n"]), _TEXT, min_size=1, max_size=3).map(json.dumps)


@st.composite
def tool_streams(draw: st.DrawFn) -> tuple[str, list[tuple[str, ...]], str | None, bool]:
    """A format, parts ending in a tool call (whose arguments may be cut short: the output limit reached
    while the model wrote them), and the raw finish reason (None: the format's own whole-answer end)."""
    fmt = draw(st.sampled_from(SSE_FORMATS))
    parts: list[tuple[str, ...]] = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("text"), _TEXT),
                st.tuples(st.just("reasoning"), _TEXT),
                st.tuples(st.just("tool"), st.sampled_from(["read_file", "apply_patch"]), _ARGS),
            ),
            max_size=3,
        )
    )
    arguments = draw(_ARGS)
    truncated = fmt != "gemini" and draw(st.booleans())  # Gemini sends every call whole
    if truncated:
        arguments = arguments[: draw(st.integers(1, len(arguments) - 1))]
    parts.append(("tool", "apply_patch", arguments))
    raw = draw(st.none() | reasons)
    return fmt, parts, raw, truncated


@settings(max_examples=200, deadline=None)
@given(tool_streams(), st.data())
def test_b_a_tool_call_is_handed_out_only_complete(
    case: tuple[str, list[tuple[str, ...]], str | None, bool], data: st.DataObject
) -> None:
    fmt, parts, raw, truncated = case
    frames = stream(fmt, parts, raw)
    body = b"".join(frames)
    stop_at = data.draw(st.none() | st.integers(0, len(body) - 1))
    fault = data.draw(st.sampled_from(["eof", "rst"]))
    run, events = play(fmt, frames, data.draw(pieces(len(body))), stop_at, fault)
    d = run.diagnosis
    assert d is not None
    calls = [e for e in events if isinstance(e, ToolCall)]
    for call in [*calls, *run.result().tool_calls]:
        json.loads(call.arguments)  # every call handed out parses
    started = [e.call_id for e in events if isinstance(e, ToolInputStart)]
    ended = {c.call_id for c in calls} | {e.call_id for e in events if isinstance(e, ToolInputEnd)}
    open_calls = [c for c in started if c not in ended]  # input never ended by the provider
    if open_calls:  # a call left open: never completed, never a callable call
        assert d.failure_class.value in ("tool_input_interrupted", "provider_error"), (d.summary_key, raw)
    last_whole = raw is None or _whole(fmt, raw)
    if stop_at is None and (truncated or (fmt == "openai-chat" and not last_whole)):
        # The last call was open (or not JSON) at the provider's end: interrupted, or the provider's error.
        interrupted = d.failure_class.value in ("tool_input_interrupted", "provider_error")
        assert interrupted, (fmt, raw, d.summary_key)
    if stop_at is None and not truncated and last_whole:
        assert d.summary_key == "completed.finished", (fmt, raw, d.summary_key)
        assert calls and calls[-1].name == "apply_patch"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["read_file", "apply_patch"]), _ARGS, st.booleans()), min_size=1, max_size=3
    ),
    st.none() | reasons,
    st.booleans(),
    st.data(),
)
def test_b_calls_that_start_and_end_in_one_chunk_are_handed_out_only_complete(
    calls: list[tuple[str, str, bool]], raw: str | None, text_first: bool, data: st.DataObject
) -> None:
    """Chat servers that parse tool calls whole (Ollama; vLLM without incremental parsing) send every call,
    and often the finish, in one chunk: a cut call there fails where it was cut, naming its tool."""
    fragments = []
    for position, (name, arguments, cut) in enumerate(calls):
        if cut:
            arguments = arguments[: data.draw(st.integers(1, len(arguments) - 1))]
        function = {"name": name, "arguments": arguments}
        fragments.append(
            {"index": position, "id": f"call_{position}", "type": "function", "function": function}
        )
    delta: dict[str, Any] = {"role": "assistant", "tool_calls": fragments}
    if text_first:
        delta["content"] = "Let me look."
    reason = "tool_calls" if raw is None else raw
    chunk = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
    run, events = play("openai-chat", [frame(chunk), b"data: [DONE]\n\n"], [], None, "eof")
    d = run.diagnosis
    assert d is not None
    for call in [e for e in events if isinstance(e, ToolCall)]:
        json.loads(call.arguments)
    if any(cut for _, _, cut in calls) or not _whole("openai-chat", reason):
        assert d.failure_class.value in ("tool_input_interrupted", "provider_error"), (reason, d.summary_key)
    if d.failure_class.value == "tool_input_interrupted":  # where the cut call was: its tool is named
        assert d.state.activity.value == "tool_input_open" and "`" in d.title, (d.state, d.title)


# -- the SDK item path agrees ------------------------------------------------------------------------------


def _sdk_item(fmt: str, payload: dict[str, Any]) -> Any:
    """The object the SDK hands out for ``payload``: built as the SDKs build them, without validation."""
    if fmt == "anthropic":
        return anthropic_construct(type_=RawMessageStreamEvent, value=payload)
    kind = ChatCompletionChunk if fmt == "openai-chat" else ResponseStreamEvent
    return openai_construct(type_=kind, value=payload)


def _decisive(events: Sequence[Any]) -> list[tuple[Any, ...]]:
    """What the sources must agree on: the calls started and handed out, the finish, the error."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, (ToolInputStart, ToolCall)):
            out.append((type(e).__name__, e.call_id, getattr(e, "arguments", None)))
        elif isinstance(e, (Finish, ProviderErrorEvent)):
            out.append((type(e).__name__,))
    return out


def _translate(fmt: str, frames: Sequence[bytes], sdk: bool) -> tuple[list[Any], str | None]:
    adapter: Any = SDK_TRANSLATORS[fmt]() if sdk else adapter_for(fmt)
    events: list[Any] = []
    try:
        for sse in SSEDecoder().feed(b"".join(frames)):
            if not sdk:
                events += adapter.feed(sse)
            elif sse.data != "[DONE]":  # openai swallows the sentinel; the iteration's end stands for it
                events += adapter.feed_item(_sdk_item(fmt, json.loads(sse.data)))
        events += adapter.end()
    except ProtocolViolation as violation:
        return events, violation.detail
    return events, None


@settings(max_examples=200, deadline=None)
@given(tool_streams())
def test_b_the_sdk_item_path_hands_out_the_same_calls(
    case: tuple[str, list[tuple[str, ...]], str | None, bool],
) -> None:
    fmt, parts, raw, _ = case
    if fmt == "gemini":
        return  # no SDK item path: wrap() serves openai and anthropic streams
    frames = stream(fmt, parts, raw)
    wire, wire_fault = _translate(fmt, frames, sdk=False)
    items, item_fault = _translate(fmt, frames, sdk=True)
    assert wire_fault == item_fault
    assert _decisive(wire) == _decisive(items)
    for call in [e for e in items if isinstance(e, ToolCall)]:
        json.loads(call.arguments)


def test_the_specification_is_the_library_table() -> None:
    from streamfsm.wire import FORMATS

    assert {name: set(FORMATS[name].whole_answers) for name in WHOLE} == WHOLE
