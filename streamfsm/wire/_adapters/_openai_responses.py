"""OpenAI Responses (``/responses``, ``stream: true``): typed events, each with a ``sequence_number``.

Dispatch is one dictionary lookup on the event's ``type``; bookkeeping events map to shared ``Metadata``.

Judgement calls:

* ``sequence_number`` must strictly increase (gaps are fine); an event without one is not checked, nor is an
  ``error`` or ``response.failed`` event (a gateway may inject one numbered afresh): flat or nested, its
  kind comes from its type and code. A
  resumed stream (`OpenAIResponsesAdapter.resumed`) must go on from the cursor with no gap: a missing
  number is an event the consumer would never see.
* The data's ``type`` is trusted over the SSE ``event:`` line; a disagreement is counted in ``anomalies``.
  A typeless ``{"error": {...}}`` (what some proxies send) is an error event.
* Function calls (and custom tool calls) are keyed by ``item_id``; an event naming the call by its
  ``call_id`` instead names the same call (one call, announced under two ids, is one call).
  ``...arguments.done`` emits ``ToolInputEnd`` when its ``arguments`` (which become the call's) parse;
  ``output_item.done`` emits ``ToolCall`` with the item's own ``arguments`` when present, and only when they
  parse. A new call, text, reasoning or a whole-answer terminal event while a call is still open closes it
  first; ``response.incomplete`` leaves a call whose input had not ended open. Deltas for a call that is
  closed or unknown are ``unknown_tool_call``; late ``done`` events for a call already closed (or a repeated
  ``added``) are bookkeeping.
* Hosted tools (web search, file search, code interpreter, MCP, image generation) are run by the provider:
  their events are bookkeeping, not tool calls.
* ``response.completed`` finishes with ``TOOL_CALLS`` when a function call was seen, else ``STOP`` (``OTHER``
  for a status other than ``completed``, e.g. a background request's ``queued`` answer); the raw reason is
  the response's ``status``. ``response.queued`` (a background request's stream, before the work starts)
  and ``response.in_progress`` are read as ``response.created``. ``response.incomplete`` maps
  ``max_output_tokens`` to ``LENGTH`` and ``content_filter`` to ``CONTENT_FILTER``. Unknown types are
  bookkeeping too (forward compatible), counted; an unknown ``*.delta`` type may be answer content, so it is
  also noted as ``unread_content``, as is a text delta that is not a string.
  ``response.audio.transcript.delta`` is the text of an audio answer. ``response.output_text.done``
  (``refusal.done``) carries the part's whole text: it is read only when no delta of that part was (a server
  that streams no deltas), else it is bookkeeping.
* An event named ``error`` (SSE ``event:`` line) is an error whatever its data; so is typeless data with an
  ``error`` object or a flat ``code`` + ``message``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from .._events import (
    FinishReason,
    Metadata,
    ProtocolViolation,
    StreamEvent,
    ToolInputDelta,
    ToolInputEnd,
    Usage,
)
from .._sse import SSEEvent
from ._base import (
    SEQUENCE_REGRESSED,
    UNEXPECTED_EVENT,
    UNKNOWN_TOOL_CALL,
    UNREAD_CONTENT,
    Adapter,
    Frames,
    OpenCall,
    as_arguments,
    as_count,
    as_dict,
    as_str,
    error_marker,
    metadata_constants,
    raw_reason,
)
from ._resume import SEQUENCE_GAP

_TOOL_ITEMS: Final = frozenset({"function_call", "custom_tool_call"})
_INCOMPLETE: Final = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}
_PREFIX: Final = "response."
_ERROR_EVENTS: Final = frozenset({"error", "response.failed"})

_BOOKKEEPING: Final = metadata_constants(
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.annotation.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
    "response.web_search_call.completed",
    "response.file_search_call.in_progress",
    "response.file_search_call.searching",
    "response.file_search_call.completed",
    "response.code_interpreter_call.in_progress",
    "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call.completed",
    "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done",
    "response.image_generation_call.in_progress",
    "response.image_generation_call.generating",
    "response.image_generation_call.partial_image",
    "response.image_generation_call.completed",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_list_tools.in_progress",
    "response.mcp_list_tools.completed",
    "response.mcp_list_tools.failed",
    "response.reasoning_summary.delta",
    "response.reasoning_summary.done",
    "response.audio.delta",  # audio bytes: no text (its transcript has events of its own)
    "response.audio.done",
    "response.audio.transcript.done",
)


def responses_usage(usage: Mapping[str, Any]) -> Usage:
    output = as_dict(usage.get("output_tokens_details")) or {}
    cached = as_dict(usage.get("input_tokens_details")) or {}
    return Usage(
        input_tokens=as_count(usage.get("input_tokens")),
        output_tokens=as_count(usage.get("output_tokens")),
        reasoning_tokens=as_count(output.get("reasoning_tokens")),
        cached_tokens=as_count(cached.get("cached_tokens")),
        total_tokens=as_count(usage.get("total_tokens")),
    )


_Handler = Callable[["OpenAIResponsesAdapter", dict[str, Any], int], list[StreamEvent]]


class OpenAIResponsesAdapter(Adapter):
    name = "openai-responses"
    whole_answers = frozenset({"completed"})  # response.completed; the adapter sends its status

    __slots__ = ("_closed", "_contiguous", "_last_sequence", "_part_read", "_saw_function_call")

    def __init__(self) -> None:
        super().__init__()
        self._last_sequence = -1
        self._saw_function_call = False
        self._closed: set[str] = set()  # item ids of calls whose ToolCall was emitted
        self._contiguous = False  # a resumed stream: every sequence number is the last one plus one
        self._part_read = False  # text or refusal deltas were read since the last text part ended

    @property
    def last_sequence(self) -> int:
        """The sequence number of the last event fed (-1 before any): where a resumed stream starts after."""
        return self._last_sequence

    def resumed(self) -> OpenAIResponsesAdapter:
        """A fresh adapter for the rest of this stream (``starting_after=last_sequence``): it knows the ids,
        the open call and its arguments so far, and the calls already closed, and it counts on its own."""
        other = OpenAIResponsesAdapter()
        other.response_id, other.model = self.response_id, self.model
        other.tool_names = dict(self.tool_names)
        other._tool_count = self._tool_count
        other._last_sequence = self._last_sequence
        other._saw_function_call = self._saw_function_call
        other._closed = set(self._closed)
        other._contiguous = True
        other._part_read = self._part_read
        call = self._call
        if call is not None:
            copy = OpenCall(call.key, call.call_id, call.name, call.index, call.server_side)
            copy.parts, copy.final, copy.ended = list(call.parts), call.final, call.ended
            other._call = copy
        return other

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        out["stream"] = True
        return f"{base_url.rstrip('/')}/responses", out

    def _on_data(self, event: SSEEvent, data: str, index: int) -> list[StreamEvent]:
        payload = self.load(data, index)
        kind = payload.get("type")
        if event.event == "error" and (type(kind) is not str or kind not in _ERROR_EVENTS):
            return self.error(payload, "event=error")  # an event named error is one, whatever its data
        if type(kind) is not str:
            if payload.get("error") is not None:
                return self.error(payload)
            marker = error_marker(payload, None)
            if marker is not None:
                return self.error(payload, marker)
            raise ProtocolViolation(UNEXPECTED_EVENT, index)
        if event.event != kind and event.event != "message":
            self.note("event_name_mismatch")
        sequence = payload.get("sequence_number")
        # An error event is read whatever its number: gateways inject one numbered afresh (0), and the
        # provider's error must not hide behind a sequence fault.
        if type(sequence) is int and kind not in _ERROR_EVENTS:
            if sequence <= self._last_sequence:
                raise ProtocolViolation(SEQUENCE_REGRESSED, index)
            if self._contiguous and sequence != self._last_sequence + 1:
                raise ProtocolViolation(SEQUENCE_GAP, index)
            self._last_sequence = sequence
        handler = _HANDLERS.get(kind)
        if handler is not None:
            return handler(self, payload, index)
        constant = _BOOKKEEPING.get(kind)
        if constant is not None:
            return [constant]
        return self._unknown(kind)

    def _unknown(self, kind: str) -> list[StreamEvent]:
        self.note("unknown_event")
        if kind.endswith(".delta"):  # a delta of a kind not known may be answer content: never silent
            self.unread(kind[len(_PREFIX) :] if kind.startswith(_PREFIX) else kind)
        return [Metadata(kind if len(kind) <= 64 else "unknown")]

    # -- handlers -------------------------------------------------------------------------------------------

    def _on_created(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        response = as_dict(payload.get("response")) or {}
        self.seen(response.get("id"), response.get("model"))
        return [Metadata(payload["type"], self.response_id, self.model)]

    def _on_text(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self.count_key("output_text.delta")
        return self._visible(payload, False)

    def _on_transcript(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        # An audio answer's transcript is its text (as chat's delta.audio.transcript).
        self.count_key("audio.transcript.delta")
        return self._visible(payload, False)

    def _on_refusal(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self.count_key("refusal.delta")
        return self._visible(payload, True)

    def _visible(self, payload: dict[str, Any], refusal: bool, field: str = "delta") -> list[StreamEvent]:
        text = payload.get(field)
        if not text or not isinstance(text, str):
            if text:
                self.note(UNREAD_CONTENT)
            return [_BOOKKEEPING_DELTA]
        self._part_read = True
        if self._call is None:
            return [self.text_delta(text, refusal)]
        out: list[StreamEvent] = []
        self.close_call(out)
        out.append(self.text_delta(text, refusal))
        return out

    def _on_text_done(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        """The part's whole text (``text``; ``refusal`` for a refusal): read only when no delta of it was
        (a server that sends no deltas), else bookkeeping."""
        kind = payload["type"]
        refusal = kind == "response.refusal.done"
        if self._part_read:
            self._part_read = False
            return [_DONE[kind]]
        self.count_key(kind[len(_PREFIX) :])
        out = self._visible(payload, refusal, "refusal" if refusal else "text")
        self._part_read = False
        return out

    def _on_summary(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self.count_key("reasoning_summary_text.delta")
        return self._reasoning(payload, True)

    def _on_reasoning(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self.count_key("reasoning_text.delta")
        return self._reasoning(payload, False)

    def _reasoning(self, payload: dict[str, Any], summary: bool) -> list[StreamEvent]:
        text = payload.get("delta")
        if not text or not isinstance(text, str):
            if text:
                self.note(UNREAD_CONTENT)
            return [_BOOKKEEPING_DELTA]
        if self._call is None:
            return [self.reasoning_delta(text, summary)]
        out: list[StreamEvent] = []
        self.close_call(out)
        out.append(self.reasoning_delta(text, summary))
        return out

    def _names_open_call(self, *idents: object) -> bool:
        call = self._call
        return call is not None and any(i is not None and i in (call.key, call.call_id) for i in idents)

    def _on_item_added(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        item = as_dict(payload.get("item"))
        if item is None or as_str(item.get("type")) not in _TOOL_ITEMS:
            return [_BOOKKEEPING["response.output_item.added"]]
        self._saw_function_call = True
        item_id = as_str(item.get("id")) or as_str(item.get("call_id")) or self.next_call_id()
        call_id = as_str(item.get("call_id")) or item_id
        if self._names_open_call(item_id, call_id) or item_id in self._closed or call_id in self._closed:
            return [_BOOKKEEPING["response.output_item.added"]]  # the same call announced again
        position = payload.get("output_index")
        out: list[StreamEvent] = []
        first = as_arguments(item.get("arguments")) or as_arguments(item.get("input"))
        call = OpenCall(
            item_id, call_id, as_str(item.get("name")) or "", position if type(position) is int else 0
        )
        self.open_call(out, call, first)
        return out

    def _on_arguments_delta(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self.count_key(payload["type"][len(_PREFIX) :])
        call = self._call
        if call is None or call.ended or not self._names_open_call(payload.get("item_id")):
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        text = payload.get("delta")
        if not text or not isinstance(text, str):
            return [_BOOKKEEPING_DELTA]
        call.parts.append(text)
        return [ToolInputDelta(call.call_id, text)]

    def _on_arguments_done(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        item_id = as_str(payload.get("item_id"))
        call = self._call
        if call is None or not self._names_open_call(item_id) or call.ended:
            if item_id in self._closed or self._names_open_call(item_id):
                return [_BOOKKEEPING[payload["type"]]]  # a late or repeated "done": nothing new
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        call.final = as_arguments(payload.get("arguments")) or as_arguments(payload.get("input")) or None
        if not call.complete():
            return [_BOOKKEEPING[payload["type"]]]  # not JSON: the call stays open, its input never ended
        call.ended = True
        return [ToolInputEnd(call.call_id)]

    def _on_item_done(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        item = as_dict(payload.get("item"))
        if item is None or as_str(item.get("type")) not in _TOOL_ITEMS:
            return [_BOOKKEEPING["response.output_item.done"]]
        item_id = as_str(item.get("id")) or as_str(item.get("call_id"))
        call = self._call
        out: list[StreamEvent] = []
        if call is not None and self._names_open_call(item_id, as_str(item.get("call_id"))):
            call.final = as_arguments(item.get("arguments")) or as_arguments(item.get("input")) or call.final
            self.close_call(out)
            return out
        if item_id in self._closed or as_str(item.get("call_id")) in self._closed:
            return [_BOOKKEEPING["response.output_item.done"]]
        # A call never announced by output_item.added: it arrives whole.
        self._saw_function_call = True
        call_id = as_str(item.get("call_id")) or item_id or self.next_call_id()
        arguments = as_arguments(item.get("arguments")) or as_arguments(item.get("input")) or "{}"
        position = payload.get("output_index")
        self.whole_call(
            out, call_id, as_str(item.get("name")) or "", arguments, position if type(position) is int else 0
        )
        return out

    def _on_completed(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        out, response = self._terminal(payload)
        # The event's own name when the response has no status; a status it does send is read as sent.
        raw = self.finish_raw = raw_reason(response["status"]) if "status" in response else "completed"
        reason = FinishReason.TOOL_CALLS if self._saw_function_call else FinishReason.STOP
        self.finish(out, reason if raw == "completed" else FinishReason.OTHER, raw)
        return out

    def _on_incomplete(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        out, response = self._terminal(payload)
        details = as_dict(response.get("incomplete_details")) or {}
        raw = self.finish_raw = raw_reason(details.get("reason"))
        self.finish(out, _INCOMPLETE.get(raw, FinishReason.OTHER) if raw else FinishReason.OTHER, raw)
        return out

    def _terminal(self, payload: dict[str, Any]) -> tuple[list[StreamEvent], dict[str, Any]]:
        out: list[StreamEvent] = []
        response = as_dict(payload.get("response")) or {}
        self.seen(response.get("id"), response.get("model"))
        usage = as_dict(response.get("usage"))
        if usage is not None:
            out.append(responses_usage(usage))
        return out, response

    def _on_error(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        return self.error(payload)

    def close_call(self, out: list[StreamEvent]) -> OpenCall | None:
        call = super().close_call(out)
        if call is not None:
            self._closed.update(i for i in (call.key, call.call_id) if isinstance(i, str))
        return call


_BOOKKEEPING_DELTA: Final = Metadata("empty_delta")
_DONE: Final = metadata_constants("response.output_text.done", "response.refusal.done")

_HANDLERS: Final[dict[str, _Handler]] = {
    "response.created": OpenAIResponsesAdapter._on_created,
    "response.in_progress": OpenAIResponsesAdapter._on_created,
    "response.queued": OpenAIResponsesAdapter._on_created,
    "response.output_text.delta": OpenAIResponsesAdapter._on_text,
    "response.audio.transcript.delta": OpenAIResponsesAdapter._on_transcript,
    "response.refusal.delta": OpenAIResponsesAdapter._on_refusal,
    "response.output_text.done": OpenAIResponsesAdapter._on_text_done,
    "response.refusal.done": OpenAIResponsesAdapter._on_text_done,
    "response.reasoning_summary_text.delta": OpenAIResponsesAdapter._on_summary,
    "response.reasoning_text.delta": OpenAIResponsesAdapter._on_reasoning,
    "response.output_item.added": OpenAIResponsesAdapter._on_item_added,
    "response.output_item.done": OpenAIResponsesAdapter._on_item_done,
    "response.function_call_arguments.delta": OpenAIResponsesAdapter._on_arguments_delta,
    "response.function_call_arguments.done": OpenAIResponsesAdapter._on_arguments_done,
    "response.custom_tool_call_input.delta": OpenAIResponsesAdapter._on_arguments_delta,
    "response.custom_tool_call_input.done": OpenAIResponsesAdapter._on_arguments_done,
    "response.completed": OpenAIResponsesAdapter._on_completed,
    "response.incomplete": OpenAIResponsesAdapter._on_incomplete,
    "response.failed": OpenAIResponsesAdapter._on_error,
    "error": OpenAIResponsesAdapter._on_error,
}


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


# A background request's first answer (queued, in_progress) ends its call too: response.completed reads
# the status as sent, and that status is no whole answer (completed.background).
_TERMINALS: Final = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "queued": "response.completed",
    "in_progress": "response.completed",
}
_RESPONSE_TOOLS: Final = frozenset({"function_call", "custom_tool_call"})


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """A response: each output item's text, refusal and reasoning as their events, each tool call as its
    item done, then the terminal event its ``status`` names (none for a status that is not an end)."""
    output = answer.get("output")
    if not isinstance(output, list):
        return None
    head = {key: answer[key] for key in ("id", "model") if key in answer}
    frames: Frames = [{"type": "response.created", "response": head}]
    for index, item in enumerate(output):
        item = as_dict(item) or {}
        kind = item.get("type")
        if kind in _RESPONSE_TOOLS:
            frames.append({"type": "response.output_item.done", "output_index": index, "item": item})
        elif kind == "message":
            for part in item.get("content") or ():
                part = as_dict(part) or {}
                if part.get("type") == "output_text":
                    frames.append({"type": "response.output_text.done", "text": part.get("text")})
                elif part.get("type") == "refusal":
                    frames.append({"type": "response.refusal.done", "refusal": part.get("refusal")})
        elif kind == "reasoning":
            for field, event in (("summary", "reasoning_summary_text"), ("content", "reasoning_text")):
                for part in item.get(field) or ():
                    text = (as_dict(part) or {}).get("text")
                    frames.append({"type": f"response.{event}.delta", "delta": text})
    terminal = _TERMINALS.get(str(answer.get("status", "completed")))
    if terminal is not None:
        frames.append({"type": terminal, "response": answer})
    return frames
