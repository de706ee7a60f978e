"""SDK item translators: the objects an ``openai`` / ``anthropic`` SDK stream yields, into normalised events.

The SDKs decode the SSE frames themselves and hand out pydantic models built without validation, whose
attributes mirror the JSON field names. Each translator here is the wire adapter of its format with one more
entry point, ``feed_item(obj)``: it reads the object's attributes instead of parsing JSON, then calls the
adapter's own per-payload handlers, so the open tool call, key counting, repairs, violations and finish
mapping are the wire adapter's, not a copy. No item is ``model_dump``-ed:

* scalar-only items (text, reasoning and argument deltas, block stops) hand the handler the model's own
  ``__dict__``, which *is* the flat payload;
* items whose handler looks into a nested object (a tool item, a content block, usage, the final response)
  get a small dict of the fields that handler reads, built by ``plain`` / ``pick``. Those items are few per
  stream.

``wrap()`` reads a stream's body itself whenever it can; these translators serve the rest (a
``MessageStream``, a stream the caller already started to iterate, a body that is not SSE served as
``text/event-stream``). Differences from the wire, all forced by what the SDKs hide (see
``streamfsm.runtime.drivers._sdk``):

* openai swallows ``data: [DONE]`` and stops the same way at a clean EOF, so through the SDK a Chat
  Completions stream counts as finished when the iteration ends *after a* ``finish_reason``; an end without
  one is ``eof_without_terminal``. A cut between ``finish_reason`` and ``[DONE]`` (which the wire adapter
  calls a disconnect, telling it from a clean end without ``[DONE]``) is indistinguishable from a finished
  stream here.
* openai raises in-band ``{"error": ...}`` data (Chat, and the nested Responses ``error``), anthropic
  raises ``event: error``; those never reach a translator: the run classifies the exception. The flat
  Responses ``error`` event and ``response.failed`` are yielded, and translated here.
* Comments and Anthropic pings are dropped by the SDKs' decoders: no ``Keepalive`` is seen.
* ``anthropic``'s ``MessageStream`` adds helper events (``text``, ``thinking``, ``input_json``, ``citation``,
  ``signature``; the beta stream's ``compaction``) beside the raw ones; they repeat what a raw event said
  and are skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ...classify import finish_error
from .._events import Metadata, ProtocolViolation, StreamEvent
from ._anthropic import _PING, AnthropicAdapter
from ._base import (
    ADAPTER_FAULT,
    DATA_AFTER_TERMINAL,
    SEQUENCE_REGRESSED,
    UNEXPECTED_EVENT,
    Adapter,
    as_str,
    error_marker,
)
from ._openai_chat import _CHUNK, OpenAIChatAdapter, chat_usage
from ._openai_responses import _BOOKKEEPING, OpenAIResponsesAdapter

__all__ = [
    "NO_FINISH_REASON",
    "SdkAnthropic",
    "SdkOpenAIChat",
    "SdkOpenAIResponses",
    "SdkTranslator",
    "pick",
    "plain",
]

NO_FINISH_REASON: Final = (
    "no_finish_reason"  # eof detail: an openai chat stream ended before any finish_reason
)
_MAX_DEPTH: Final = 8
_SCALARS: Final = (str, int, float, bool, type(None))
_GUARDED: Final = (LookupError, TypeError, AttributeError, ValueError, RecursionError)


def fields(obj: Any) -> dict[str, Any]:
    """A model's field values as the flat payload it was built from: its ``__dict__`` (declared fields) with
    pydantic's extras (undeclared wire fields, e.g. ``reasoning_content``) merged in when there are any."""
    values: dict[str, Any] = obj.__dict__
    extra = getattr(obj, "__pydantic_extra__", None)
    return {**values, **extra} if extra else values


def plain(value: Any, depth: int = 0) -> Any:
    """An SDK object as the JSON-shaped data it mirrors (dicts, lists, scalars). For small, rare objects."""
    if isinstance(value, _SCALARS):
        return value
    if depth >= _MAX_DEPTH:
        return None
    if isinstance(value, dict):
        return {k: plain(v, depth + 1) for k, v in value.items() if isinstance(k, str)}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    values = getattr(value, "__dict__", None)
    if not isinstance(values, dict):
        return None
    return {k: plain(v, depth + 1) for k, v in fields(value).items() if not k.startswith("_")}


def pick(obj: Any, *names: str) -> dict[str, Any]:
    """The named attributes of ``obj`` (absent ones left out), as plain data."""
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            out[name] = plain(value)
    return out


class SdkTranslator(Adapter):
    """What every SDK translator adds to its wire adapter: ``feed_item``, with ``Adapter.feed``'s guards."""

    __slots__ = ()

    def feed_item(self, item: Any) -> list[StreamEvent]:
        index = self.events_seen
        self.events_seen = index + 1
        if self.terminal_seen:
            return self._after_terminal(index)
        try:
            return self._on_item(item, index)
        except ProtocolViolation:
            raise
        except _GUARDED as exc:
            # A shape the handlers did not foresee (construct() leaves absent required fields unset) still
            # ends as a classified violation, never a crash.
            raise ProtocolViolation(ADAPTER_FAULT, index) from exc

    def _after_terminal(self, index: int) -> list[StreamEvent]:
        if self._errored:
            self.note("data_after_error")
            return []
        raise ProtocolViolation(DATA_AFTER_TERMINAL, index)

    def _on_item(self, item: Any, index: int) -> list[StreamEvent]:
        raise NotImplementedError


# -- OpenAI Chat Completions -------------------------------------------------------------------------------


def _fragment(fragment: Any) -> dict[str, Any]:
    function = getattr(fragment, "function", None)
    out = pick(fragment, "index", "id", "type", "custom")  # custom: an undeclared field in the SDK's delta
    if function is not None:
        out["function"] = pick(function, "name", "arguments")
    return out


class SdkOpenAIChat(SdkTranslator, OpenAIChatAdapter):
    """``ChatCompletionChunk`` objects. Only choice 0 is followed, as on the wire."""

    __slots__ = ()

    def _on_item(self, chunk: Any, index: int) -> list[StreamEvent]:
        top = fields(chunk)
        marker = error_marker(top, None)  # openai raises only for an "error" key; vLLM's shape is yielded
        if marker is not None:
            return self.error(plain(top), marker)
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            self.seen(getattr(chunk, "id", None), getattr(chunk, "model", None))
            out.append(Metadata("chat.completion.chunk", self.response_id, self.model))
        choices = chunk.choices
        if choices:
            for choice in choices:
                position = getattr(choice, "index", None)
                if type(position) is int and position != 0:
                    self.note("extra_choice")
                    continue
                finish = getattr(choice, "finish_reason", None)
                if isinstance(finish, str) and finish_error(finish) is not None:
                    return self._error_finish(plain(chunk), {}, finish)
                delta = getattr(choice, "delta", None)
                if delta is not None:
                    # Unset fields dropped, as on the wire: a text chunk is then _delta's one-key fast path.
                    payload = {k: v for k, v in fields(delta).items() if v is not None}
                    if payload.get("tool_calls"):
                        payload = {**payload, "tool_calls": [_fragment(f) for f in payload["tool_calls"]]}
                    if payload.get("function_call") is not None:
                        payload = {**payload, "function_call": pick(delta.function_call, "name", "arguments")}
                    self._delta(payload, out, index)
                extras = getattr(choice, "__pydantic_extra__", None)  # undeclared wire fields
                if extras:
                    error = extras.get("error")
                    if (type(error) is dict or isinstance(error, str)) and error:
                        return self.error({"error": plain(error)}, "choice.error")
                    if type(extras.get("usage")) is dict:
                        out.append(chat_usage(extras["usage"]))  # usage inside the choice
                    self.choice_extras(extras)
                if isinstance(finish, str):
                    self._finish_reason(finish, out)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            out.append(chat_usage(plain(usage)))
        if not out:
            out.append(_CHUNK)
        return out

    def end(self) -> list[StreamEvent]:
        """The SDK's iteration ended cleanly: finished only if a ``finish_reason`` was seen (see above)."""
        if self.terminal_seen or self.finish_raw is None:
            return []
        return self._done()


# -- OpenAI Responses --------------------------------------------------------------------------------------

_ItemHandler = Callable[["SdkOpenAIResponses", Any, int], list[StreamEvent]]
_RESPONSE_FIELDS: Final = ("id", "model", "status", "usage", "incomplete_details", "error")
_TEXT_ITEMS: Final = frozenset({"message", "reasoning"})  # their content arrives as events of their own


class SdkOpenAIResponses(SdkTranslator, OpenAIResponsesAdapter):
    """Responses stream events (``ResponseTextDeltaEvent`` and friends), dispatched on ``type``."""

    __slots__ = ()

    def _on_item(self, item: Any, index: int) -> list[StreamEvent]:
        kind = getattr(item, "type", None)
        if type(kind) is not str:
            raise ProtocolViolation(UNEXPECTED_EVENT, index)
        sequence = getattr(item, "sequence_number", None)
        if type(sequence) is int:
            if sequence <= self._last_sequence:
                raise ProtocolViolation(SEQUENCE_REGRESSED, index)
            self._last_sequence = sequence
        flat = _FLAT.get(kind)
        if flat is not None:  # the handler reads only top-level scalars: the model's fields are the payload
            return flat(self, item.__dict__, index)
        nested = _NESTED.get(kind)
        if nested is not None:
            return nested(self, item, index)
        constant = _BOOKKEEPING.get(kind)
        if constant is not None:
            return [constant]
        return self._unknown(kind)

    def _response(self, item: Any, index: int) -> dict[str, Any]:
        response = getattr(item, "response", None)
        return {"type": item.type, "response": pick(response, *_RESPONSE_FIELDS) if response else {}}

    def _item_created(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_created(self._response(item, index), index)

    def _item_completed(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_completed(self._response(item, index), index)

    def _item_incomplete(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_incomplete(self._response(item, index), index)

    def _item_failed(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_error(self._response(item, index), index)

    def _item_error(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_error(plain(item), index)  # the flat shape; the nested one is raised by the SDK

    def _output_item(self, item: Any) -> dict[str, Any] | None:
        """The output item, as data; None for messages and reasoning (bookkeeping, as on the wire)."""
        output = getattr(item, "item", None)
        if output is None or getattr(output, "type", None) in _TEXT_ITEMS:
            return None
        return {"type": item.type, "output_index": getattr(item, "output_index", None), "item": plain(output)}

    def _item_added(self, item: Any, index: int) -> list[StreamEvent]:
        payload = self._output_item(item)
        if payload is None:
            return [_BOOKKEEPING["response.output_item.added"]]
        return self._on_item_added(payload, index)

    def _item_done(self, item: Any, index: int) -> list[StreamEvent]:
        payload = self._output_item(item)
        if payload is None:
            return [_BOOKKEEPING["response.output_item.done"]]
        return self._on_item_done(payload, index)


_FlatHandler = Callable[[OpenAIResponsesAdapter, dict[str, Any], int], list[StreamEvent]]

_FLAT: Final[dict[str, _FlatHandler]] = {
    "response.output_text.delta": OpenAIResponsesAdapter._on_text,
    "response.audio.transcript.delta": OpenAIResponsesAdapter._on_transcript,
    "response.refusal.delta": OpenAIResponsesAdapter._on_refusal,
    "response.output_text.done": OpenAIResponsesAdapter._on_text_done,
    "response.refusal.done": OpenAIResponsesAdapter._on_text_done,
    "response.reasoning_summary_text.delta": OpenAIResponsesAdapter._on_summary,
    "response.reasoning_text.delta": OpenAIResponsesAdapter._on_reasoning,
    "response.function_call_arguments.delta": OpenAIResponsesAdapter._on_arguments_delta,
    "response.function_call_arguments.done": OpenAIResponsesAdapter._on_arguments_done,
    "response.custom_tool_call_input.delta": OpenAIResponsesAdapter._on_arguments_delta,
    "response.custom_tool_call_input.done": OpenAIResponsesAdapter._on_arguments_done,
}
_NESTED: Final[dict[str, _ItemHandler]] = {
    "response.created": SdkOpenAIResponses._item_created,
    "response.in_progress": SdkOpenAIResponses._item_created,
    "response.queued": SdkOpenAIResponses._item_created,
    "response.output_item.added": SdkOpenAIResponses._item_added,
    "response.output_item.done": SdkOpenAIResponses._item_done,
    "response.completed": SdkOpenAIResponses._item_completed,
    "response.incomplete": SdkOpenAIResponses._item_incomplete,
    "response.failed": SdkOpenAIResponses._item_failed,
    "error": SdkOpenAIResponses._item_error,
}


# -- Anthropic Messages ------------------------------------------------------------------------------------

HELPER_EVENTS: Final = frozenset({"text", "thinking", "input_json", "citation", "signature", "compaction"})
"""Types ``anthropic``'s ``MessageStream`` (and ``BetaMessageStream``) add beside the raw events; each repeats
a raw event."""

_BLOCK_FIELDS: Final = ("type", "id", "name", "input", "text", "thinking", "is_error")


class SdkAnthropic(SdkTranslator, AnthropicAdapter):
    """Raw message stream events (``RawContentBlockDeltaEvent`` and friends), dispatched on ``type``."""

    __slots__ = ()

    def feed_item(self, item: Any) -> list[StreamEvent]:
        # SdkTranslator.feed_item with the dispatch inlined: this runs once per item of the cheapest SDK
        # stream to iterate, where a call more is a measurable share.
        index = self.events_seen
        self.events_seen = index + 1
        if self.terminal_seen:
            return self._after_terminal(index)
        try:
            handler = _ITEMS.get(item.type)
            if handler is not None:
                return handler(self, item, index)
            return self._on_item(item, index)
        except ProtocolViolation:
            raise
        except _GUARDED as exc:
            raise ProtocolViolation(ADAPTER_FAULT, index) from exc

    def _on_item(self, item: Any, index: int) -> list[StreamEvent]:
        """An item of a type with no handler."""
        kind = getattr(item, "type", None)
        if type(kind) is not str:
            raise ProtocolViolation(UNEXPECTED_EVENT, index)
        self.note("unknown_event")
        return [Metadata(kind if len(kind) <= 64 else "unknown")]

    def _item_block_delta(self, item: Any, index: int) -> list[StreamEvent]:
        delta = fields(item.delta)
        kind = as_str(delta.get("type")) or "unknown"
        self.count_key(kind)
        return self.block_delta(kind, delta, item.__dict__, index)

    def _item_message_start(self, item: Any, index: int) -> list[StreamEvent]:
        message = getattr(item, "message", None)
        payload = {"message": pick(message, "id", "model", "usage", "content") if message is not None else {}}
        return self._on_message_start(payload, index)

    def _item_block_start(self, item: Any, index: int) -> list[StreamEvent]:
        block = getattr(item, "content_block", None)
        picked = pick(block, *_BLOCK_FIELDS) if block is not None else {}
        result = getattr(block, "content", None)
        if result is not None and not isinstance(result, (list, str)):  # a hosted tool's error object
            picked["content"] = pick(result, "type", "error_code")
        payload = {"index": getattr(item, "index", None), "content_block": picked}
        return self._on_block_start(payload, index)

    def _item_block_stop(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_block_stop(item.__dict__, index)

    def _item_message_delta(self, item: Any, index: int) -> list[StreamEvent]:
        delta = getattr(item, "delta", None)
        payload = {"delta": pick(delta, "stop_reason") if delta is not None else {}}
        usage = getattr(item, "usage", None)
        if usage is not None:
            payload["usage"] = plain(usage)
        return self._on_message_delta(payload, index)

    def _item_message_stop(self, item: Any, index: int) -> list[StreamEvent]:
        return self._on_message_stop({}, index)

    def _item_ping(self, item: Any, index: int) -> list[StreamEvent]:
        return [_PING]

    def _item_error(self, item: Any, index: int) -> list[StreamEvent]:
        return self.error(plain(item))


_AnthropicHandler = Callable[[SdkAnthropic, Any, int], list[StreamEvent]]

_ITEMS: Final[dict[str, _AnthropicHandler]] = {
    "message_start": SdkAnthropic._item_message_start,
    "content_block_start": SdkAnthropic._item_block_start,
    "content_block_delta": SdkAnthropic._item_block_delta,
    "content_block_stop": SdkAnthropic._item_block_stop,
    "message_delta": SdkAnthropic._item_message_delta,
    "message_stop": SdkAnthropic._item_message_stop,
    "ping": SdkAnthropic._item_ping,
    "error": SdkAnthropic._item_error,
}
