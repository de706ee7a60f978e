"""Google Gemini (``models/{model}:streamGenerateContent?alt=sse``): every event is a whole
``GenerateContentResponse`` chunk, and there is no terminal sentinel. What each field, part, tool kind and
finish reason means is decided in ``_gemini_definitions`` (from google-genai's own models); this adapter
follows those tables.

Judgement calls:

* The ``Finish`` is deferred to ``end()``: a chunk with ``finishReason`` may be followed by more chunks
  (trailing usage; gateways put ``STOP`` on every chunk), and the machine accepts nothing after a finish. So
  a clean EOF after a ``finishReason`` is a finish; an EOF without one leaves ``terminal_seen`` false (EOF
  without terminal); a cut after the ``finishReason`` chunk but before EOF is still a disconnect.
* **A call is handed out only with a whole answer.** Gemini sends a call whole in one part, often in the
  chunk that carries its finish, and a finish such as ``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``
  or ``TOO_MANY_TOOL_CALLS`` says that call must not run. So a call's input is announced at once
  (``ToolInputStart``, its arguments, ``ToolInputEnd``: the provider ended it), and its ``ToolCall`` is held
  until a chunk's ``finishReason`` (or, at ``end()``, the last one) is a whole answer: then the calls go out
  in order; with any other finish none does. ``tool_call`` before that therefore means "the call's input is
  whole, and nothing was handed out": a cut there is ``tool_call_interrupted``, and the tool cannot have
  run (the agent can start only a call it was handed).
* **Streamed arguments** (Vertex AI's ``streamFunctionCallArguments``, Gemini 3): a part with a ``name``
  and ``willContinue: true`` starts one call; later ``functionCall`` parts without a name continue it with
  ``partialArgs`` (a value at a JSON path; a string goes on while its fragment says ``willContinue``), until
  a part without ``willContinue`` (often an empty ``functionCall: {}``), or the next call, ends it. The
  arguments are assembled from the fragments; each fragment's value is a ``ToolInputDelta`` (a piece of a
  value, not of the JSON text: the ``ToolCall`` carries the assembled JSON). A call the provider never
  ended stays open, whatever the finish (``tool_input_unfinished``); a path that cannot be followed, or a
  string still awaiting its next piece when the call ends, makes arguments that do not parse. Text while a
  streamed call is open is a protocol violation: the wire keeps a call's parts together.
* ``executableCode`` (code execution) and ``toolCall`` (built-in tools) run at the provider: server-side
  calls (``code_execution``, or the tool's type, as the name), handed out with the others at a whole
  finish but never announced before (the run's state follows the answer, not a tool the agent cannot
  run); ``codeExecutionResult`` and ``toolResponse`` are their outcomes, counted.
* ``promptFeedback.blockReason`` (the prompt itself was refused, nothing generated) is a provider error of
  kind ``content_filter``, not a finish: the request must change before it can succeed.
* Usage: ``input_tokens`` is ``promptTokenCount + toolUsePromptTokenCount`` (hosted tools' results are input
  the model read), ``output_tokens`` is ``candidatesTokenCount + thoughtsTokenCount`` (Gemini counts thoughts
  apart; OpenAI and Anthropic include them), ``reasoning_tokens`` is ``thoughtsTokenCount``.
* Only candidate 0 is followed. A part field not in the tables, or one not understood, or text that is not
  a string, is noted as ``unread_content`` (its field names are in ``delta_keys``).
* An in-band error is an ``error`` object, or a shape ``_base.error_marker`` names (``event: error``, a
  flat ``code`` + ``message`` from a proxy).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import quote

from ...classify import (
    NOT_WHOLE,
    UNPARSEABLE_ARGUMENTS,
    FinishCause,
    ProviderError,
    ProviderErrorKind,
    finish_error,
    is_whole,
)
from .._definitions import Decision
from .._events import (
    FinishReason,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    StreamEvent,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from .._sse import Frame
from ._base import (
    UNEXPECTED_EVENT,
    UNEXPECTED_SHAPE,
    UNKNOWN_TOOL_CALL,
    UNREAD_CONTENT,
    Adapter,
    Frames,
    add,
    as_count,
    as_dict,
    as_str,
    error_marker,
    parses,
    raw_reason,
)
from ._gemini_definitions import CONTENT, DEFINITIONS

__all__ = ["DEFINITIONS", "MODIFIERS", "READERS", "GeminiAdapter", "answer_frames"]

_CHUNK: Final = Metadata("generate_content_chunk")
_UNIFIED: Final = {
    FinishCause.LENGTH: FinishReason.LENGTH,
    FinishCause.CONTENT_FILTER: FinishReason.CONTENT_FILTER,
}
_KNOWN_PARTS: Final = frozenset(
    key for key, d in CONTENT.items() if d.decision is not Decision.NOT_UNDERSTOOD
)
_VERSIONED: Final = ("/v1beta", "/v1", "/v1alpha")
CODE_EXECUTION: Final = "code_execution"  # the name of a code execution call (the provider runs it)


def gemini_finish(raw: str, saw_calls: bool) -> FinishReason:
    if raw == "STOP":
        return FinishReason.TOOL_CALLS if saw_calls else FinishReason.STOP
    return _UNIFIED.get(NOT_WHOLE.get(raw.casefold(), FinishCause.UNRECOGNISED), FinishReason.OTHER)


def gemini_usage(usage: Mapping[str, Any]) -> Usage | None:
    """The chunk's usage, or None when it holds no count (streamed-call chunks carry only a traffic type)."""
    thoughts = as_count(usage.get("thoughtsTokenCount"))
    out = Usage(
        input_tokens=add(
            as_count(usage.get("promptTokenCount")), as_count(usage.get("toolUsePromptTokenCount"))
        ),
        output_tokens=add(as_count(usage.get("candidatesTokenCount")), thoughts),
        reasoning_tokens=thoughts,
        cached_tokens=as_count(usage.get("cachedContentTokenCount")),
        total_tokens=as_count(usage.get("totalTokenCount")),
    )
    return None if out == _NO_USAGE else out


_NO_USAGE: Final = Usage()


# -- streamed arguments: values at JSON paths ----------------------------------------------------------------

Step = str | int


def json_path(path: object) -> list[Step] | None:
    """The steps of a ``partialArgs`` JSON path (RFC 9535's singular queries: ``$.a.b[0]``, ``$['a b']``),
    or None for one that is not such a path (a wildcard, a slice, a filter, the root alone)."""
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    steps: list[Step] = []
    at, end = 1, len(path)
    while at < end:
        if path[at] == ".":
            stop = at + 1
            while stop < end and path[stop] not in ".[":
                stop += 1
            name = path[at + 1 : stop]
            if not name or name == "*":
                return None
            steps.append(name)
            at = stop
        elif path.startswith("['", at) or path.startswith('["', at):
            quote_char = path[at + 1]
            stop = at + 2
            while stop < end and path[stop] != quote_char:
                stop += 2 if path[stop] == "\\" else 1
            if path[stop + 1 : stop + 2] != "]":
                return None
            text = path[at + 2 : stop]
            try:
                steps.append(json.loads('"' + text.replace("\\'", "'") + '"'))
            except ValueError:
                return None
            at = stop + 2
        elif path[at] == "[":
            stop = path.find("]", at)
            digits = path[at + 1 : stop] if stop > 0 else ""
            if not digits.isascii() or not digits.isdigit():
                return None
            steps.append(int(digits))
            at = stop + 1
        else:
            return None
    return steps or None


def _put(root: dict[str, Any], steps: list[Step], value: Any, append: bool) -> bool:
    """Write ``value`` at ``steps`` (appending to the string there when ``append``); False when the path
    does not fit what is already there. Lists grow in order: an index is at most the list's length."""
    here: Any = root
    for at, step in enumerate(steps):
        last = at == len(steps) - 1
        fresh: Any = value if last else ({} if isinstance(steps[at + 1], str) else [])
        if isinstance(step, str):
            if type(here) is not dict:
                return False
            if last or step not in here:
                if last and append:
                    before = here.get(step)
                    if not (isinstance(before, str) and isinstance(value, str)):
                        return False
                    fresh = before + value
                here[step] = fresh
            here = here[step]
        else:
            if type(here) is not list or step > len(here):
                return False
            if step == len(here):
                if last and append:
                    return False
                here.append(fresh)
            elif last:
                if append:
                    before = here[step]
                    if not (isinstance(before, str) and isinstance(value, str)):
                        return False
                    fresh = before + value
                here[step] = fresh
            here = here[step]
    return True


_NO_VALUE: Final = object()


def _fragment_value(fragment: Mapping[str, Any]) -> Any:
    """A fragment's one value (None for ``nullValue``), ``_NO_VALUE`` when it carries none, or raises
    ValueError for one that carries two or a value of the wrong type."""
    values = [
        (key, fragment[key])
        for key in ("stringValue", "numberValue", "boolValue")
        if fragment.get(key) is not None
    ]
    if not values:
        return None if "nullValue" in fragment else _NO_VALUE
    if len(values) > 1:
        raise ValueError("two values")
    key, value = values[0]
    kind = type(value)
    if (key, kind) in (
        ("stringValue", str),
        ("numberValue", int),
        ("numberValue", float),
        ("boolValue", bool),
    ):
        return value
    raise ValueError("a value of the wrong type")


class _Streamed:
    """A call whose arguments arrive in fragments, across parts, until the provider ends it."""

    __slots__ = ("arguments", "broken", "call_id", "index", "name", "pending")

    def __init__(self, call_id: str, name: str, index: int) -> None:
        self.call_id, self.name, self.index = call_id, name, index
        self.arguments: dict[str, Any] = {}
        self.pending: set[str] = set()  # paths whose string goes on in a later fragment
        self.broken = False  # a fragment that could not be placed: the arguments are not whole

    def apply(self, fragments: object, out: list[StreamEvent]) -> None:
        if not isinstance(fragments, list):
            self.broken = fragments is not None or self.broken
            return
        for fragment in fragments:
            path = fragment.get("jsonPath") if type(fragment) is dict else None
            steps = json_path(path)
            if steps is None:
                self.broken = True
                continue
            assert isinstance(path, str)
            try:
                value = _fragment_value(fragment)
            except ValueError:
                self.broken = True
                continue
            if value is not _NO_VALUE:
                if not _put(self.arguments, steps, value, path in self.pending):
                    self.broken = True
                out.append(
                    ToolInputDelta(self.call_id, value if isinstance(value, str) else json.dumps(value))
                )
            if fragment.get("willContinue") is True:
                self.pending.add(path)
            else:
                self.pending.discard(path)

    def whole(self) -> str | None:
        """The assembled arguments, or None when they are not whole."""
        if self.broken or self.pending:
            return None
        return json.dumps(self.arguments, separators=(",", ":"), ensure_ascii=False)


class GeminiAdapter(Adapter):
    name = "gemini"
    whole_answers = frozenset({"stop"})  # Gemini / Vertex finishReason STOP (after calls: tool calls)

    __slots__ = ("_held", "_saw_calls", "_started", "_streamed")

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._saw_calls = False
        self._held: list[ToolCall] = []  # complete calls, handed out only before a whole-answer finish
        self._streamed: _Streamed | None = None

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        model = out.pop("model", None)
        if not isinstance(model, str) or not model.removeprefix("models/"):
            raise ValueError("a gemini request body needs 'model' (e.g. 'gemini-2.5-flash')")
        model = quote(model.removeprefix("models/"), safe="-._~@")
        base = base_url.rstrip("/")
        if not base.endswith(_VERSIONED):
            base += "/v1beta"
        return f"{base}/models/{model}:streamGenerateContent?alt=sse", out

    def end(self) -> list[StreamEvent]:
        raw = self.finish_raw
        if raw is None or self.terminal_seen:
            return []
        out: list[StreamEvent] = []
        self._release(out, raw)
        self._held = []  # a finish that is not a whole answer hands out none of them
        self.finish(out, gemini_finish(raw, self._saw_calls), raw)
        return out

    def _release(self, out: list[StreamEvent], raw: str) -> None:
        """The calls held so far go out when ``raw`` is a whole answer and no call is still open."""
        if (
            self._held
            and self._streamed is None
            and finish_error(raw) is None
            and is_whole(self.whole_answers, raw)
        ):
            out += self._held
            self._held = []

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
        payload = self.load(data, index)
        if payload.get("error") is not None:
            return self.error(payload)
        if event.event != "message" or "candidates" not in payload:  # every shape it names is one of these
            marker = error_marker(payload, event.event)
            if marker is not None:
                return self.error(payload, marker)
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            self.seen(payload.get("responseId"), payload.get("modelVersion"))
            out.append(Metadata("generate_content_chunk", self.response_id, self.model))
        feedback = as_dict(payload.get("promptFeedback"))
        if feedback is not None:
            blocked = as_str(feedback.get("blockReason"))
            if blocked:
                out.append(self._blocked(blocked))
                return out
        candidates = payload.get("candidates")
        if candidates:
            if not isinstance(candidates, list):
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            for candidate in candidates:
                if type(candidate) is not dict:
                    raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                position = candidate.get("index")
                if type(position) is int and position != 0:
                    self.note("extra_choice")
                    continue
                content = as_dict(candidate.get("content"))
                if content is not None:
                    parts = content.get("parts")
                    if parts:
                        if not isinstance(parts, list):
                            raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                        self._parts(parts, out, index)
                finish = raw_reason(candidate.get("finishReason"))
                if finish:
                    self.finish_raw = finish
                    self._release(out, finish)  # the chunk that says the answer is whole hands its calls out
        usage = as_dict(payload.get("usageMetadata"))
        if usage is not None:
            counted = gemini_usage(usage)
            if counted is not None:
                out.append(counted)
        if not out:
            out.append(_CHUNK)
        return out

    def _parts(self, parts: list[Any], out: list[StreamEvent], index: int) -> None:
        count, readers, known = self.count_key, READERS, _KNOWN_PARTS
        for part in parts:
            if type(part) is not dict:
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            unread = False
            for key in part:
                count(key)
                reader = readers.get(key)
                if reader is not None:
                    reader(self, part, out, index)
                elif key not in known:
                    unread = True  # a field not in the tables, or one not understood
            if unread:
                self.note(UNREAD_CONTENT)

    # -- the readers of the part fields the tables READ -----------------------------------------------------

    def _text(self, part: Mapping[str, Any], out: list[StreamEvent], index: int) -> None:
        text = part["text"]
        if not isinstance(text, str):
            if text is not None:
                self.note(UNREAD_CONTENT)  # text that is not a string
            return
        if not text:
            return
        if self._streamed is not None:
            raise ProtocolViolation(UNEXPECTED_EVENT, index)  # text inside a streamed call's parts
        out.append(self.reasoning_delta(text) if part.get("thought") is True else self.text_delta(text))

    def _function_call(self, part: Mapping[str, Any], out: list[StreamEvent], index: int) -> None:
        call = as_dict(part["functionCall"])
        if call is None:
            self.note(UNREAD_CONTENT)
            return
        name = as_str(call.get("name"))
        streamed = self._streamed
        goes_on = call.get("willContinue") is True
        if not name:  # a streamed call's later part
            call_id = as_str(call.get("id"))
            if streamed is None or (call_id is not None and call_id != streamed.call_id):
                raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
            if call.get("args") is not None:
                streamed.broken = True  # whole arguments inside a streamed call: not the API's shape
            streamed.apply(call.get("partialArgs"), out)
            if not goes_on:
                self._end_streamed(out, index)
            return
        if streamed is not None:
            self._end_streamed(out, index)  # the next call ends the one before
        self._saw_calls = True
        call_id = as_str(call.get("id")) or self.next_call_id()
        fragments = call.get("partialArgs")
        if not goes_on and fragments is None:
            self._announce(out, index, call_id, name, call.get("args"))
            return
        begun = _Streamed(call_id, name, self._tool_count)
        self._tool_count += 1
        self.remember_tool(call_id, name)
        out.append(ToolInputStart(call_id, name, begun.index))
        self._streamed = begun
        args = call.get("args")
        if isinstance(args, dict):
            begun.arguments = copy.deepcopy(args)  # the fragments write into it; the payload stays as sent
        elif args is not None:
            begun.broken = True
        begun.apply(fragments, out)
        if not goes_on:
            self._end_streamed(out, index)

    def _code(self, part: Mapping[str, Any], out: list[StreamEvent], index: int) -> None:
        code = as_dict(part["executableCode"])
        if code is None:
            self.note(UNREAD_CONTENT)
            return
        arguments = {key: code[key] for key in ("language", "code") if key in code}
        call_id = as_str(code.get("id")) or self.next_call_id()
        self._announce(out, index, call_id, CODE_EXECUTION, arguments, server_side=True)

    def _tool_call(self, part: Mapping[str, Any], out: list[StreamEvent], index: int) -> None:
        call = as_dict(part["toolCall"])
        if call is None:
            self.note(UNREAD_CONTENT)
            return
        name = (as_str(call.get("toolType")) or "tool").lower()
        call_id = as_str(call.get("id")) or self.next_call_id()
        self._announce(out, index, call_id, name, call.get("args"), server_side=True)

    # -- calls -----------------------------------------------------------------------------------------------

    def _announce(
        self,
        out: list[StreamEvent],
        index: int,
        call_id: str,
        name: str,
        args: object,
        server_side: bool = False,
    ) -> None:
        """A call whose input arrived whole: announced and ended now, handed out at a whole finish. A
        server-side call (the provider runs it, often before the answer goes on) is only held: announcing
        it would put the run in ``tool_call``, where a cut reads as a tool that never ran."""
        if self._streamed is not None:
            self._end_streamed(out, index)
        position = self._tool_count
        arguments = _arguments(args)
        if server_side:
            if arguments is None or not parses(arguments):
                self.note(UNREAD_CONTENT)  # a hosted tool's input in a shape not read
                return
            self._tool_count += 1
            self._held.append(ToolCall(call_id, name, arguments, position, server_side=True))
            return
        self._tool_count += 1
        self.remember_tool(call_id, name)
        out.append(ToolInputStart(call_id, name, position))
        if arguments is None or not parses(arguments):
            if arguments:
                out.append(ToolInputDelta(call_id, arguments))
            # Not JSON: no call; the run fails with it open (``out``: what this chunk gave before it).
            raise ProtocolViolation(UNPARSEABLE_ARGUMENTS, index, tuple(out))
        out += [ToolInputDelta(call_id, arguments), ToolInputEnd(call_id)]
        self._held.append(ToolCall(call_id, name, arguments, position))

    def _end_streamed(self, out: list[StreamEvent], index: int) -> None:
        streamed = self._streamed
        assert streamed is not None
        arguments = streamed.whole()
        if arguments is None:  # the pieces do not make whole arguments: the run fails with the call open
            raise ProtocolViolation(UNPARSEABLE_ARGUMENTS, index, tuple(out))
        self._streamed = None
        out.append(ToolInputEnd(streamed.call_id))
        self._held.append(ToolCall(streamed.call_id, streamed.name, arguments, streamed.index))

    def _blocked(self, reason: str) -> ProviderErrorEvent:
        self.terminal_seen = True
        self._errored = True
        error = ProviderError(
            ProviderErrorKind.CONTENT_FILTER,
            type="prompt_blocked",
            code=reason,
            markers=("promptFeedback.blockReason",),
        )
        return ProviderErrorEvent(error)


def _arguments(args: object) -> str | None:
    """A whole call's arguments as JSON text: an object (absent: none, "{}"); a few gateways send the JSON
    text itself. Anything else is not arguments (None)."""
    if args is None:
        return "{}"
    if isinstance(args, dict):
        return json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    return args if isinstance(args, str) else None


PartReader = Callable[[GeminiAdapter, Mapping[str, Any], list[StreamEvent], int], None]
READERS: Final[Mapping[str, PartReader]] = {
    "text": GeminiAdapter._text,
    "functionCall": GeminiAdapter._function_call,
    "executableCode": GeminiAdapter._code,
    "toolCall": GeminiAdapter._tool_call,
}
"""The reader of each part field the tables READ (``tests/wire/test_definitions_gemini.py`` checks it)."""
MODIFIERS: Final = frozenset({"thought"})
"""Part fields READ by another field's reader (``thought`` by the text's)."""


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """A ``GenerateContentResponse``: the very shape of one stream chunk."""
    return [answer] if "candidates" in answer or "promptFeedback" in answer else None
