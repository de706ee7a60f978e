"""What every wire adapter shares: the per-stream bookkeeping, the open tool call, and the safety net.

An adapter turns one stream's SSE events into normalised events that speak the machine's grammar: at most
one tool input is open, nothing but its own deltas (and usage, metadata, keepalives) may arrive while it is,
and nothing follows the terminal event. Where a wire breaks that shape harmlessly the adapter repairs it
(closes the open call before text, for instance); where it cannot be repaired it raises
``ProtocolViolation`` with a fixed-vocabulary detail and the SSE event's index as position.

A ``ToolCall`` is emitted only for a complete call: its input is complete by its grammar (JSON arguments
parse; a freeform input was ended by the provider), and the provider ended it (an explicit end, the next
item, or a whole-answer finish: ``Adapter.finish``). A finish that is not a whole answer leaves the open call
open, and so does an end on arguments that are not JSON; the runtime then fails the run as
``tool_input_unfinished`` in ``tool_input_open``.

Parallel calls whose events interleave (Responses items, chat indices) are several open calls at once, keyed
by what the wire sends; the machine still sees one input at a time. The front call streams; the others wait
behind it, their input kept, and each is handed over in the order it opened (start, its input so far, its
end and call when the provider already ended them) as soon as the one before it is closed. A cut while any
call is open is therefore still a cut in ``tool_input_open``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, ClassVar, Final

from ...classify import (
    JSON_COMPLETION,
    UNPARSEABLE_ARGUMENTS,
    FinishCause,
    finish_cause,
    finish_error,
    provider_error_from_document,
    provider_error_from_event,
)
from .._events import (
    Finish,
    FinishReason,
    Keepalive,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInput,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
)
from .._sse import Frame

MAX_DELTA_KEYS: Final = 32  # distinct names kept in ``delta_keys``, "other" included
MAX_KEY_CHARS: Final = 64  # a longer "field name" is not a field name
MAX_TOOL_NAMES: Final = 1024
OTHER: Final = "other"

KEEPALIVE_COMMENT: Final = Keepalive("comment")
KEEPALIVE_EMPTY: Final = Keepalive("empty_event")

# Vocabulary of ProtocolViolation.detail raised by adapters.
MALFORMED_JSON: Final = "malformed_json"
NOT_AN_OBJECT: Final = "not_an_object"
UNEXPECTED_SHAPE: Final = "unexpected_shape"
UNEXPECTED_EVENT: Final = "unexpected_event"
SEQUENCE_REGRESSED: Final = "sequence_regressed"
UNKNOWN_TOOL_CALL: Final = "unknown_tool_call"
DATA_AFTER_TERMINAL: Final = "data_after_terminal"
Frames = list[dict[str, Any] | str]
"""A whole answer as its stream's frames: each one's data (an object, dumped; or a string as sent)."""
AnswerFrames = Callable[[dict[str, Any]], Frames | None]
"""A format's reader of a whole (non-streaming) answer: its frames, or None when it is no answer of it."""

ADAPTER_FAULT: Final = "adapter_fault"  # our bug, not the provider's: the safety net below caught it
UNKNOWN_BLOCK: Final = "unknown_block"  # a content-block event for a block that never started
NOT_EVENT_STREAM: Final = "not_event_stream"  # a 2xx body that is a JSON document or an HTML page
# JSON_COMPLETION (from classify): such a body that is a whole answer, generated and billed
# UNPARSEABLE_ARGUMENTS (from classify): the provider ended a tool call whose arguments are not JSON; the
# runtime fails the run with tool_input_unfinished (the call is open, its tool never ran), not as a violation
MAX_DOCUMENT_BYTES: Final = 64 * 1024  # a non-stream body read whole to say what it is; more is junk

# Vocabulary of Adapter.anomalies that a run's record reports as evidence.
DONE_MISSING: Final = "done_missing"  # a chat stream whose every choice finished ended without [DONE]
# Content the adapter could not read: a part, block, delta or field of a kind it does not know, or a known
# one whose value has a shape it does not read. Its name is counted in ``delta_keys`` (``content.<type>``
# for a typed part); the record reports ``wire=unread_content``, and a finish with no answer read at all is
# ``completed.unread_content``, never a whole answer.
UNREAD_CONTENT: Final = "unread_content"
MAX_RAW_CHARS: Final = 256  # a provider's raw finish reason, kept (bounded) until the record redacts it

# The C scanner behind json.loads (typeshed does not declare the attribute).
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class TextTemplate:
    """A stream's common event, its bytes apart from one string: ``prefix`` + a JSON string + ``suffix``.

    Providers send every text delta of a stream as the same document with only the text changed (the id,
    model, fingerprint and the rest repeat byte for byte). Once one such event was parsed whole and read as
    a text delta alone, ``text(data)`` reads a later event with the same prefix and suffix by scanning only
    its string: JSON's grammar is context-free, so a document that is the template with one string token
    replaced parses to the same object with that one value replaced, and ``json.loads`` would say nothing
    else about it. The string itself is read by the standard library's own scanner (escapes, lone
    surrogates, control characters alike). Anything else (another prefix or suffix, another token, an empty
    text) is None: the caller reads the event the long way.
    """

    __slots__ = ("prefix", "start", "suffix")

    def __init__(self, prefix: str, suffix: str) -> None:
        self.prefix, self.start, self.suffix = prefix, len(prefix), suffix

    @classmethod
    def of(
        cls, data: str, payload: dict[str, Any], marker: str, path: Callable[[Any], dict[str, Any]], key: str
    ) -> TextTemplate | None:
        """The template of ``data`` (parsed as ``payload``), whose text is ``path(payload)[key]`` and whose
        string token follows the last ``marker`` in it; None unless substituting that token is proven to
        change that value and nothing else (probed with another string, the object compared whole)."""
        at = data.rfind(marker)
        if at < 0:
            return None
        start = at + len(marker)
        try:
            text, end = _scan_once(data, start)
            original = path(payload)[key]
            if type(text) is not str or text != original or data[start] != '"':
                return None
            probe = "a" if original != "a" else "b"
            probed = json.loads(data[:start] + '"' + probe + '"' + data[end:])
            holder = path(probed)
            if holder.get(key) != probe:
                return None
            holder[key] = original
            if probed != payload:
                return None
        except (StopIteration, ValueError, RecursionError, LookupError, TypeError, AttributeError):
            return None
        return cls(data[:start], data[end:])

    def text(self, data: str) -> str | None:
        """The text of an event that is this template with another string, or None."""
        if not data.startswith(self.prefix):
            return None
        try:
            text, end = _scan_once(data, self.start)
        except (StopIteration, ValueError, RecursionError):
            return None
        suffix = self.suffix
        if type(text) is not str or not text or end + len(suffix) != len(data) or not data.endswith(suffix):
            return None
        return text


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


MAX_COUNT: Final = 2**53 - 1  # a token count past this is garbage (and would not survive a float or an int64)


def as_count(value: object) -> int | None:
    """A token count: a non-negative int (bools are not counts) no larger than ``MAX_COUNT``; anything else
    (a 400-digit number included) is no count at all."""
    return value if type(value) is int and 0 <= value <= MAX_COUNT else None


def raw_reason(value: object) -> str | None:
    """A raw finish reason as sent, bounded: it is provider-controlled (the record redacts it again)."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= MAX_RAW_CHARS else value[:MAX_RAW_CHARS]


def as_dict(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def as_arguments(value: object) -> str | None:
    """Tool arguments as a JSON string; a few servers send the object itself."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return None


def parses(arguments: str) -> bool:
    """Tool arguments that ``json.loads`` accepts: the only ones a ``ToolCall`` may carry."""
    try:
        json.loads(arguments)
    except (ValueError, RecursionError):
        return False
    return True


# The unified reason each finish cause stands for; a whole answer keeps the adapter's STOP or TOOL_CALLS.
_UNIFIED: Final[Mapping[FinishCause, FinishReason]] = MappingProxyType(
    {
        FinishCause.LENGTH: FinishReason.LENGTH,
        FinishCause.CONTENT_FILTER: FinishReason.CONTENT_FILTER,
        FinishCause.REFUSAL: FinishReason.CONTENT_FILTER,
    }
)


def unified_reason(cause: FinishCause, hinted: FinishReason) -> FinishReason:
    """The unified finish reason of a finish whose cause is ``cause``: one voice with the summary key. The
    adapter's own reading (``hinted``) decides only between STOP and TOOL_CALLS for a whole answer; a vendor's
    own name for a length or filter stop reads as that, and every other cause is OTHER."""
    if cause is FinishCause.FINISHED:
        return hinted if hinted is FinishReason.TOOL_CALLS else FinishReason.STOP
    return _UNIFIED.get(cause, FinishReason.OTHER)


# Typed content parts a chat ``content`` list may hold, and what each carries: the field whose string is
# answer text, reasoning, or a refusal; None for a part recognised as carrying no text.
TEXT: Final = "text"
REASONING: Final = "reasoning"
REFUSAL: Final = "refusal"
CONTENT_PARTS: Final[Mapping[str, tuple[str, str] | None]] = MappingProxyType(
    {
        "text": (TEXT, "text"),  # OpenAI content part; Gemini's and Mistral's OpenAI-compatible chat
        "refusal": (REFUSAL, "refusal"),  # OpenAI ChatCompletionContentPartRefusal
        "thinking": (REASONING, "thinking"),  # Mistral ThinkChunk (magistral): a list of text chunks
        "image_url": None,  # OpenAI, Mistral ImageURLChunk: an image, no text
        "input_audio": None,  # OpenAI audio part
        "file": None,  # OpenAI file part
        "document_url": None,  # Mistral DocumentURLChunk
        "reference": None,  # Mistral ReferenceChunk: the ids of sources cited, no text
    }
)
MAX_PARTS: Final = 1024  # parts read from one content list; more is junk (counted, not read)


def read_parts(
    parts: list[Any], note: Callable[[str], None], count: Callable[[str], None]
) -> list[tuple[str, str]]:
    """The (carrier, text) pieces of a typed-part list, in order (``TEXT``, ``REASONING`` or ``REFUSAL``).
    Each part's type is counted as ``content.<type>``; a part that is not a mapping, has no string type, is
    of a type not in ``CONTENT_PARTS``, or carries its text in a shape not read, is ``UNREAD_CONTENT``."""
    out: list[tuple[str, str]] = []
    for position, part in enumerate(parts):
        if position >= MAX_PARTS:
            note(UNREAD_CONTENT)
            break
        kind = part.get("type") if type(part) is dict else None
        if type(kind) is not str:
            note(UNREAD_CONTENT)
            count("content.untyped")
            continue
        count(f"content.{kind}")
        if kind not in CONTENT_PARTS:
            note(UNREAD_CONTENT)
            continue
        carried = CONTENT_PARTS[kind]
        if carried is None:
            continue
        carrier, field_name = carried
        value = part.get(field_name)
        if isinstance(value, list):  # Mistral's thinking: a list of text chunks
            nested = read_parts(value, note, count)
            out += [(carrier, text) for inner, text in nested if inner == TEXT]
        elif isinstance(value, str):
            if value:
                out.append((carrier, value))
        elif value is not None:
            note(UNREAD_CONTENT)
    return out


# Shapes of a decoded event that say "this is an error", whatever the format, beyond the ``error`` key
# every adapter reads: an SSE ``event: error`` (OpenAI-compatible servers and gateways put it on chat
# streams); ``"object": "error"`` (the shape of vLLM's ErrorResponse); ``{"response": {"error": {...}}}``
# (a ``response.failed`` without its type); ``"type": "error"`` (Anthropic's
# and Responses' own, sent by gateways on other formats); a flat ``code`` + ``message`` with no answer in it
# (gateways such as one-api/new-api, Chinese providers' compatible APIs); Baidu's ``error_code`` /
# ``error_msg``. A success code (0, 200, "ok", "success") is not an error.
_SUCCESS_CODES: Final = frozenset({0, 200, "0", "200", "ok", "OK", "success", "SUCCESS"})
_ANSWER_FIELDS: Final = frozenset({"choices", "candidates", "delta", "content_block", "content", "output"})


def error_marker(payload: Mapping[str, Any], event_name: str | None) -> str | None:
    """How an event is an in-band error on a field or event name other than ``error`` (see above): a marker
    for the provider error, or None when it is not one."""
    if event_name == "error":
        return "event=error"
    if payload.get("object") == "error":
        return "object=error"
    response = payload.get("response")
    if type(response) is dict and type(response.get("error")) is dict and response["error"]:
        return "response.error"  # a Responses failure's shape, without its type
    kind = payload.get("type")
    if kind == "error" or (isinstance(kind, str) and kind.endswith("_error")):
        return "type=error"  # Anthropic's error types (overloaded_error, ...) sent flat by gateways
    code = payload.get("code", payload.get("error_code"))
    if code is None or isinstance(code, (dict, list, bool)) or code in _SUCCESS_CODES:
        return None
    message = payload.get("message", payload.get("error_msg"))
    if isinstance(message, str) and message and _ANSWER_FIELDS.isdisjoint(payload):
        return "body=code_and_message"
    return None


def add(left: int | None, right: int | None) -> int | None:
    if left is None:
        return right
    return left if right is None else left + right


class OpenCall:
    """A tool call whose input is streaming. ``key`` is the wire's handle for it (a chat index, a Responses
    item id, an Anthropic block index); ``grammar`` what its input is (``ToolInput.JSON`` arguments, or a
    freeform tool's raw ``TEXT``). ``ended``: the provider ended its input (``ToolInputEnd`` is emitted, or
    owed while the call waits behind another); ``done``: the provider ended the call itself (its ``ToolCall``
    is owed). ``needs_end``: the call is complete only once ended, whatever its input (freeform input, or a
    client action read from its done item)."""

    __slots__ = (
        "call_id",
        "done",
        "ended",
        "final",
        "grammar",
        "index",
        "key",
        "name",
        "needs_end",
        "parts",
        "server_side",
    )

    def __init__(
        self,
        key: object,
        call_id: str,
        name: str,
        index: int,
        server_side: bool = False,
        grammar: ToolInput = ToolInput.JSON,
        needs_end: bool = False,
    ) -> None:
        self.key = key
        self.call_id = call_id
        self.name = name
        self.index = index
        self.server_side = server_side
        self.grammar = grammar
        self.needs_end = needs_end or grammar is ToolInput.TEXT
        self.parts: list[str] = []
        self.final: str | None = None  # the wire's own full input, when it sends it at the end
        self.ended = False
        self.done = False

    def arguments(self) -> str:
        if self.grammar is ToolInput.TEXT:  # raw text: empty is an input like any other
            return self.final if self.final is not None else "".join(self.parts)
        # A call the provider ended with no argument text at all takes no arguments: "{}". (A finish that
        # is not a whole answer never ends a call, so a cut call is never turned into "{}".)
        return self.final or "".join(self.parts) or "{}"

    def complete(self) -> bool:
        """Complete by its grammar: JSON that parses; freeform text (and a client action) once ended."""
        if self.needs_end and not self.ended:
            return False
        return self.grammar is ToolInput.TEXT or parses(self.arguments())

    def copy(self) -> OpenCall:
        other = OpenCall(self.key, self.call_id, self.name, self.index, self.server_side, self.grammar)
        other.needs_end, other.parts, other.final = self.needs_end, list(self.parts), self.final
        other.ended, other.done = self.ended, self.done
        return other

    def names(self, ident: object) -> bool:
        return ident is not None and (ident == self.key or ident == self.call_id)


class Adapter:
    """One stream's decoder from SSE events to normalised events. Create one per stream.

    After ``feed`` has returned a ``Finish`` or a ``ProviderErrorEvent`` (``terminal_seen``), further data
    events are a protocol violation, except after an error, where providers often add a second error-shaped
    event (Responses: ``error`` then ``response.failed``); those are counted in ``anomalies`` and dropped.
    """

    name: ClassVar[str] = ""
    # The finish reasons that mean a whole answer in this format (case-folded; DESIGN §12.1): anything else
    # is not one, said as sent.
    whole_answers: ClassVar[frozenset[str]] = frozenset()
    default_headers: ClassVar[Mapping[str, str]] = MappingProxyType({"accept": "text/event-stream"})

    __slots__ = (
        "_call",
        "_errored",
        "_queued",
        "_tool_count",
        "anomalies",
        "delta_keys",
        "events_seen",
        "finish_raw",
        "model",
        "reasoning_delta",
        "response_id",
        "terminal_seen",
        "text_delta",
        "tool_names",
    )

    def __init__(self) -> None:
        # What each text and reasoning delta is made by: the event classes, or after ``lean()`` stand-ins.
        self.text_delta: Callable[..., TextDelta]
        self.reasoning_delta: Callable[..., ReasoningDelta]
        self.lean(False)
        self.terminal_seen = False
        self.response_id: str | None = None
        self.model: str | None = None
        self.delta_keys: dict[str, int] = {}
        self.tool_names: dict[str, str] = {}
        self.anomalies: dict[str, int] = {}  # fixed vocabulary: wire oddities we tolerated
        self.events_seen = 0  # SSE events fed, comments included; a violation's position is an index here
        self.finish_raw: str | None = None  # the raw finish reason once it arrived, terminal event or not
        self._call: OpenCall | None = None  # the front call: the one whose input the machine sees
        self._queued: list[OpenCall] = []  # open calls behind it, in the order they opened
        self._errored = False
        self._tool_count = 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__} events_seen={self.events_seen} terminal_seen={self.terminal_seen}>"

    # -- the interface the runtime drives -----------------------------------------------------------------

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The URL to POST and the body to send (a copy; the caller's mapping is not touched)."""
        raise NotImplementedError

    def feed(self, event: Frame) -> list[StreamEvent]:
        index = self.events_seen
        self.events_seen = index + 1
        if event.comment:
            return [] if self.terminal_seen else [KEEPALIVE_COMMENT]
        if self.terminal_seen:
            if self._errored:
                self.note("data_after_error")
                return []
            raise ProtocolViolation(DATA_AFTER_TERMINAL, index)
        data = event.data
        if not data or data.isspace():
            return [KEEPALIVE_EMPTY]  # an empty event says nothing; it is not worth failing a stream for
        try:
            return self._on_data(event, data, index)
        except ProtocolViolation:
            raise
        except (LookupError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            # Never a crash: a shape the handlers did not foresee still ends as a classified violation.
            raise ProtocolViolation(ADAPTER_FAULT, index) from exc

    def end(self) -> list[StreamEvent]:
        """A clean EOF. Formats with a terminal sentinel have nothing to add: ``terminal_seen`` tells."""
        return []

    def lean(self, lean: bool = True) -> None:
        """For a run whose events nobody reads for their text (the tap, the relay): text and reasoning deltas
        are shared stand-ins of the same kind without the text, since building a frozen event per delta
        costs more than the machine step and the record it drives. Everything else is the same."""
        if lean:
            self.text_delta, self.reasoning_delta = _stand_in_text, _stand_in_reasoning
        else:
            self.text_delta, self.reasoning_delta = TextDelta, ReasoningDelta

    # -- for subclasses -------------------------------------------------------------------------------------

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
        raise NotImplementedError

    @staticmethod
    def load(data: str, index: int) -> dict[str, Any]:
        # json.loads is this scanner call wrapped in two regex matches for surrounding whitespace and a
        # few Python frames; a compact payload (what every provider sends) skips them. Anything else, a
        # leading or trailing blank included, takes json.loads itself, so the accepted language is the same.
        try:
            payload, end = _scan_once(data, 0)
        except StopIteration:
            end = -1
        except (ValueError, RecursionError):
            raise ProtocolViolation(MALFORMED_JSON, index) from None
        if end != len(data):
            try:
                payload = json.loads(data)
            except (ValueError, RecursionError):
                raise ProtocolViolation(MALFORMED_JSON, index) from None
        if type(payload) is not dict:
            raise ProtocolViolation(NOT_AN_OBJECT, index)
        return payload

    def count_key(self, key: str) -> None:
        keys = self.delta_keys
        if key in keys:
            keys[key] += 1
        elif len(keys) < MAX_DELTA_KEYS - 1 and len(key) <= MAX_KEY_CHARS:
            keys[key] = 1
        else:
            keys[OTHER] = keys.get(OTHER, 0) + 1

    def note(self, what: str) -> None:
        self.anomalies[what] = self.anomalies.get(what, 0) + 1

    def seen(self, response_id: object, model: object) -> None:
        if self.response_id is None and isinstance(response_id, str):
            self.response_id = response_id
        if self.model is None and isinstance(model, str):
            self.model = model

    def unread(self, name: str) -> None:
        """Content the adapter cannot read: counted under its name and as ``UNREAD_CONTENT``."""
        self.count_key(name)
        self.note(UNREAD_CONTENT)

    def error(self, payload: Mapping[str, Any], marker: str | None = None) -> list[StreamEvent]:
        self.terminal_seen = True
        self._errored = True
        error = provider_error_from_event(payload)
        if marker is not None:
            error = replace(error, markers=(*error.markers, marker))
        return [ProviderErrorEvent(error)]

    def next_call_id(self) -> str:
        return f"call_{self._tool_count}"

    def open_call(
        self,
        out: list[StreamEvent],
        call: OpenCall,
        first_arguments: str | None = None,
        parallel: bool = False,
    ) -> None:
        """Start a call's input. Sequential (the default): the calls still open are closed first. Parallel
        (the wire keys each call): a front call whose input ended is closed first; one still streaming stays
        in front and this call waits behind it."""
        if not parallel:
            self.close_calls(out)
        elif self._call is not None and self._call.ended:
            self.close_call(out)
        self._tool_count += 1
        self.remember_tool(call.call_id, call.name)
        if first_arguments:
            call.parts.append(first_arguments)
        if self._call is not None:
            self._queued.append(call)
            return
        self._call = call
        self._start(out, call)

    def _start(self, out: list[StreamEvent], call: OpenCall) -> None:
        out.append(ToolInputStart(call.call_id, call.name, call.index, call.server_side, call.grammar))
        if call.parts:
            out.append(ToolInputDelta(call.call_id, "".join(call.parts)))
        if call.ended:
            out.append(ToolInputEnd(call.call_id))

    def open_calls(self) -> list[OpenCall]:
        """Every open call, front first, in the order they opened."""
        return [self._call, *self._queued] if self._call is not None else []

    def find_call(self, *idents: object) -> OpenCall | None:
        """The open call any of ``idents`` names (its key or call id), the latest opened first."""
        front = self._call
        if front is None:
            return None
        if not self._queued:  # the common case: one call at a time
            return front if any(front.names(ident) for ident in idents) else None
        for call in reversed(self.open_calls()):
            if any(call.names(ident) for ident in idents):
                return call
        return None

    def add_input(self, out: list[StreamEvent], call: OpenCall, text: str) -> None:
        """More of an open call's input: streamed when it is the front call, kept while it waits."""
        call.parts.append(text)
        if call is self._call:
            out.append(ToolInputDelta(call.call_id, text))

    def end_input(self, out: list[StreamEvent], call: OpenCall) -> None:
        """The provider ended an open call's input. A front call with others behind it is closed now, so the
        next one streams."""
        if call.ended:
            return
        call.ended = True
        if call is self._call:
            out.append(ToolInputEnd(call.call_id))
            if self._queued:
                self.close_call(out)

    def end_call(self, out: list[StreamEvent], call: OpenCall) -> None:
        """The provider ended an open call (its done item): closed now in front, else when its turn comes."""
        if call is self._call:
            self.close_call(out)
        else:
            call.done = True

    def finish(self, out: list[StreamEvent], reason: FinishReason, raw: str | None) -> None:
        """The terminal event, the one way every format ends: a reason that reads as an error is the
        provider's error here; a whole-answer reason closes the open call (whose arguments must parse); any
        other reason leaves it open (only a call whose input the provider ended is closed first, and not even
        that when the finish says the call was malformed), so that the run fails as ``tool_input_unfinished``
        instead of handing out a cut or malformed call. The unified reason is the one the finish's cause
        gives (``unified_reason``): the record's ``finish_reason.unified`` says what its summary key says."""
        self.terminal_seen = True
        error = finish_error(raw)
        if error is not None:
            self._errored = True
            out.append(ProviderErrorEvent(error))
            return
        cause = finish_cause(self.whole_answers, raw)
        if cause is FinishCause.FINISHED:
            self.close_calls(out)
        elif cause is not FinishCause.MALFORMED_TOOL_CALL:
            while self._call is not None and self._call.ended:
                self.close_call(out)
        out.append(Finish(unified_reason(cause, reason), raw))

    def close_call(self, out: list[StreamEvent]) -> OpenCall | None:
        """Emit what the front call still owes (its end, then the complete call) and forget it; then hand
        over the next waiting call (and close it too when the provider already ended it). Input that is not
        complete by its grammar never makes a ``ToolCall``: the run fails with the call open."""
        call = self._call
        if call is None:
            return None
        first = call
        while call is not None:
            if not call.complete():  # ``out``: the call's start, when the same SSE event carried it
                raise ProtocolViolation(UNPARSEABLE_ARGUMENTS, max(self.events_seen - 1, 0), tuple(out))
            if not call.ended:
                call.ended = True
                out.append(ToolInputEnd(call.call_id))
            out.append(
                ToolCall(
                    call.call_id, call.name, call.arguments(), call.index, call.server_side, call.grammar
                )
            )
            self.closed(call)
            call = self._call = self._queued.pop(0) if self._queued else None
            if call is None:
                break
            self._start(out, call)
            if not call.done:
                break
        return first

    def close_calls(self, out: list[StreamEvent]) -> None:
        """Close every open call, in order (text after them, a whole-answer finish)."""
        while self._call is not None:
            self.close_call(out)

    def closed(self, call: OpenCall) -> None:
        """A call's ``ToolCall`` was emitted (for adapters that remember closed calls)."""

    def whole_call(
        self,
        out: list[StreamEvent],
        call_id: str,
        name: str,
        arguments: str,
        index: int,
        parallel: bool = False,
        grammar: ToolInput = ToolInput.JSON,
    ) -> None:
        """A call that arrives complete in one piece (Ollama; a Responses item never announced). Arguments
        that do not parse are no call: it is opened with them and stays open, so the run fails as
        ``tool_input_unfinished``. ``parallel``: calls still open stay open, and this one waits its turn."""
        if parallel and self._call is not None:
            call = OpenCall(call_id, call_id, name, index, grammar=grammar)
            self.open_call(out, call, arguments, parallel=True)
            if call.complete() or grammar is ToolInput.TEXT:
                call.ended = call.done = True
                if call is self._call:
                    self.close_call(out)
            return
        self.close_calls(out)
        if grammar is ToolInput.JSON and arguments and not parses(arguments):
            self.open_call(out, OpenCall(call_id, call_id, name, index), arguments)
            return
        self._tool_count += 1
        self.remember_tool(call_id, name)
        out.append(
            ToolCall(
                call_id, name, arguments or ("{}" if grammar is ToolInput.JSON else ""), index, False, grammar
            )
        )

    def remember_tool(self, call_id: str, name: str) -> None:
        names = self.tool_names
        if call_id in names or len(names) < MAX_TOOL_NAMES:
            names[call_id] = name
        else:
            self.note("tool_names_dropped")


# Top-level keys of a whole answer in each format: chat "choices", Anthropic "content", Gemini "candidates",
# Responses "output".
_ANSWER_KEYS: Final = frozenset({"choices", "content", "candidates", "output"})


_TEXT: Final = TextDelta("")
_REFUSAL: Final = TextDelta("", refusal=True)
_REASONING: Final = ReasoningDelta("")
_SUMMARY: Final = ReasoningDelta("", summary=True)


def _stand_in_text(text: str, refusal: bool = False) -> TextDelta:
    return _REFUSAL if refusal else _TEXT


def _stand_in_reasoning(text: str, summary: bool = False) -> ReasoningDelta:
    return _SUMMARY if summary else _REASONING


def document_events(body: bytes) -> list[StreamEvent]:
    """A 2xx body that is one JSON document (or an HTML page) where an event stream was due, read whole: the
    provider error it names (an auth error stays an auth error), else a protocol violation at its start,
    ``json_completion`` for a whole answer (it was generated and billed), ``not_event_stream`` otherwise.
    Never half an SSE event."""
    try:
        payload: object = json.loads(body)
    except (ValueError, RecursionError):
        raise ProtocolViolation(NOT_EVENT_STREAM, 0) from None
    error = provider_error_from_document(payload)
    if error is not None:
        return [ProviderErrorEvent(error)]
    first = payload[0] if isinstance(payload, list) and payload else payload
    if isinstance(first, dict) and not _ANSWER_KEYS.isdisjoint(first):
        raise ProtocolViolation(JSON_COMPLETION, 0)
    raise ProtocolViolation(NOT_EVENT_STREAM, 0)


def metadata_constants(*types: str) -> dict[str, Metadata]:
    """Shared, immutable Metadata per bookkeeping type: nothing is allocated for them per event."""
    return {t: Metadata(t) for t in types}
