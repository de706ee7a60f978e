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
* The decisions are data (``EVENTS``, ``CONTENT``, ``TOOLS``, ``FINISHES``: one per member of the openai
  SDK's definitions, with its source): the handlers are the events read, the bookkeeping the informational
  ones, and an event or output item decided not understood (or of a kind not decided at all) is
  ``unread_content``.
* Function calls and custom tool calls are keyed by ``item_id`` (``output_index`` when an event has none);
  an event naming the call by its ``call_id`` instead names the same call (one call, announced under two
  ids, is one call). A function's input is JSON; a custom tool's is raw text (``ToolInput.TEXT``), complete
  at its ``custom_tool_call_input.done`` or its item's done. ``...arguments.done`` emits ``ToolInputEnd``
  when its ``arguments`` (which become the call's) parse; ``output_item.done`` emits ``ToolCall`` with the
  item's own input when present, and only when complete, never for an item ``incomplete`` or ``failed``.
  Calls whose events interleave are open at once (``_base``: the first streams, the others follow in
  order). Text, reasoning or a whole-answer terminal event while calls are open closes them first;
  ``response.incomplete`` leaves a call whose input had not ended open. Deltas for a call that is closed or
  unknown are ``unknown_tool_call``; late ``done`` events for a call already closed (or a repeated
  ``added``) are bookkeeping.
* Client actions (``computer_call``, ``local_shell_call``, a ``shell_call`` in a local environment,
  ``apply_patch_call``, ``mcp_approval_request``, a ``tool_search_call`` the client executes) are calls the
  agent performs: opened at their ``added`` item, a ``ToolCall`` named by the item kind (its action fields as
  JSON) once their done item says ``completed``.
* Hosted tools (web search, file search, code interpreter, MCP, image generation, a shell in the provider's
  container) are run by the provider: their events are bookkeeping, not tool calls; a failed one is noted
  (``hosted_tool_failed``).
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

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from .._definitions import Decision, Definitions, Table, informational, not_understood, read
from .._events import (
    FinishReason,
    Metadata,
    ProtocolViolation,
    StreamEvent,
    ToolInput,
    Usage,
)
from .._sse import Frame
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
    parses,
    raw_reason,
)
from ._resume import SEQUENCE_GAP

_SDK: Final = "openai.types.responses"
_REF: Final = "https://platform.openai.com/docs/api-reference/responses-streaming"


def _ev(cls: str) -> str:
    return f"{_SDK}.ResponseStreamEvent: {cls}"


def _item(cls: str) -> str:
    return f"{_SDK}.ResponseOutputItem: {cls}"


_HOSTED: Final = "run by the provider; its progress is bookkeeping"
EVENTS: Final[Table] = MappingProxyType(
    {
        "response.created": read(_ev("ResponseCreatedEvent"), "the response's id and model"),
        "response.in_progress": read(_ev("ResponseInProgressEvent"), "as response.created"),
        "response.queued": read(
            _ev("ResponseQueuedEvent"), "a background request, queued: as response.created"
        ),
        "response.output_text.delta": read(_ev("ResponseTextDeltaEvent"), "answer text"),
        "response.output_text.done": read(
            _ev("ResponseTextDoneEvent"), "the part's whole text: read only when no delta of it was"
        ),
        "response.refusal.delta": read(_ev("ResponseRefusalDeltaEvent"), "refusal text (visible)"),
        "response.refusal.done": read(_ev("ResponseRefusalDoneEvent"), "as output_text.done, for a refusal"),
        "response.audio.transcript.delta": read(
            _ev("ResponseAudioTranscriptDeltaEvent"), "an audio answer's transcript: its text"
        ),
        "response.reasoning_summary_text.delta": read(
            _ev("ResponseReasoningSummaryTextDeltaEvent"), "reasoning (summary)"
        ),
        "response.reasoning_text.delta": read(_ev("ResponseReasoningTextDeltaEvent"), "reasoning (raw)"),
        "response.output_item.added": read(
            _ev("ResponseOutputItemAddedEvent"), "a tool call's start (by item kind, see tools)"
        ),
        "response.output_item.done": read(
            _ev("ResponseOutputItemDoneEvent"), "a tool call's end, with its whole input and status"
        ),
        "response.function_call_arguments.delta": read(
            _ev("ResponseFunctionCallArgumentsDeltaEvent"), "a function call's JSON arguments, by item_id"
        ),
        "response.function_call_arguments.done": read(
            _ev("ResponseFunctionCallArgumentsDoneEvent"), "its whole arguments: the input ends if they parse"
        ),
        "response.custom_tool_call_input.delta": read(
            _ev("ResponseCustomToolCallInputDeltaEvent"), "a custom tool's raw text input, by item_id"
        ),
        "response.custom_tool_call_input.done": read(
            _ev("ResponseCustomToolCallInputDoneEvent"), "its whole input: the input ends (text, not JSON)"
        ),
        "response.completed": read(_ev("ResponseCompletedEvent"), "the end; its status is the finish"),
        "response.incomplete": read(_ev("ResponseIncompleteEvent"), "the end; incomplete_details.reason"),
        "response.failed": read(_ev("ResponseFailedEvent"), "the provider's error (response.error)"),
        "error": read(_ev("ResponseErrorEvent"), "the provider's error (code, message)"),
        "response.content_part.added": informational(_ev("ResponseContentPartAddedEvent")),
        "response.content_part.done": informational(_ev("ResponseContentPartDoneEvent")),
        "response.output_text.annotation.added": informational(
            _ev("ResponseOutputTextAnnotationAddedEvent"), "a citation: about the text, not text"
        ),
        "response.reasoning_summary_part.added": informational(_ev("ResponseReasoningSummaryPartAddedEvent")),
        "response.reasoning_summary_part.done": informational(_ev("ResponseReasoningSummaryPartDoneEvent")),
        "response.reasoning_summary_text.done": informational(
            _ev("ResponseReasoningSummaryTextDoneEvent"), "repeats the deltas"
        ),
        "response.reasoning_text.done": informational(
            _ev("ResponseReasoningTextDoneEvent"), "repeats the deltas"
        ),
        "response.audio.delta": informational(_ev("ResponseAudioDeltaEvent"), "audio bytes, no text"),
        "response.audio.done": informational(_ev("ResponseAudioDoneEvent")),
        "response.audio.transcript.done": informational(
            _ev("ResponseAudioTranscriptDoneEvent"), "repeats the deltas"
        ),
        "response.web_search_call.in_progress": informational(
            _ev("ResponseWebSearchCallInProgressEvent"), _HOSTED
        ),
        "response.web_search_call.searching": informational(
            _ev("ResponseWebSearchCallSearchingEvent"), _HOSTED
        ),
        "response.web_search_call.completed": informational(
            _ev("ResponseWebSearchCallCompletedEvent"), _HOSTED
        ),
        "response.file_search_call.in_progress": informational(
            _ev("ResponseFileSearchCallInProgressEvent"), _HOSTED
        ),
        "response.file_search_call.searching": informational(
            _ev("ResponseFileSearchCallSearchingEvent"), _HOSTED
        ),
        "response.file_search_call.completed": informational(
            _ev("ResponseFileSearchCallCompletedEvent"), _HOSTED
        ),
        "response.code_interpreter_call.in_progress": informational(
            _ev("ResponseCodeInterpreterCallInProgressEvent"), _HOSTED
        ),
        "response.code_interpreter_call.interpreting": informational(
            _ev("ResponseCodeInterpreterCallInterpretingEvent"), _HOSTED
        ),
        "response.code_interpreter_call.completed": informational(
            _ev("ResponseCodeInterpreterCallCompletedEvent"), _HOSTED
        ),
        "response.code_interpreter_call_code.delta": informational(
            _ev("ResponseCodeInterpreterCallCodeDeltaEvent"), "the code the provider runs"
        ),
        "response.code_interpreter_call_code.done": informational(
            _ev("ResponseCodeInterpreterCallCodeDoneEvent"), "the code the provider runs"
        ),
        "response.image_generation_call.in_progress": informational(
            _ev("ResponseImageGenCallInProgressEvent"), _HOSTED
        ),
        "response.image_generation_call.generating": informational(
            _ev("ResponseImageGenCallGeneratingEvent"), _HOSTED
        ),
        "response.image_generation_call.partial_image": informational(
            _ev("ResponseImageGenCallPartialImageEvent"), "image bytes, no text"
        ),
        "response.image_generation_call.completed": informational(
            _ev("ResponseImageGenCallCompletedEvent"), _HOSTED
        ),
        "response.mcp_call.in_progress": informational(_ev("ResponseMcpCallInProgressEvent"), _HOSTED),
        "response.mcp_call.completed": informational(_ev("ResponseMcpCallCompletedEvent"), _HOSTED),
        "response.mcp_call.failed": informational(
            _ev("ResponseMcpCallFailedEvent"), "a hosted MCP call failed: noted; the model goes on"
        ),
        "response.mcp_call_arguments.delta": informational(
            _ev("ResponseMcpCallArgumentsDeltaEvent"), "arguments of a call the provider makes"
        ),
        "response.mcp_call_arguments.done": informational(_ev("ResponseMcpCallArgumentsDoneEvent"), _HOSTED),
        "response.mcp_list_tools.in_progress": informational(
            _ev("ResponseMcpListToolsInProgressEvent"), _HOSTED
        ),
        "response.mcp_list_tools.completed": informational(
            _ev("ResponseMcpListToolsCompletedEvent"), _HOSTED
        ),
        "response.mcp_list_tools.failed": informational(
            _ev("ResponseMcpListToolsFailedEvent"), "listing an MCP server's tools failed: noted"
        ),
        "response.compaction.compacting": informational(
            _ev("ResponseCompactionCompactingEvent"), "context compaction: carries no content"
        ),
        "response.shell_call_command.added": informational(
            _ev("ResponseShellCallCommandAddedEvent"),
            "a shell call's command; the done item carries them all",
        ),
        "response.shell_call_command.delta": informational(
            _ev("ResponseShellCallCommandDeltaEvent"), "as above"
        ),
        "response.shell_call_command.done": informational(
            _ev("ResponseShellCallCommandDoneEvent"), "as above"
        ),
        "response.shell_call_output_content.delta": informational(
            _ev("ResponseShellCallOutputContentDeltaEvent"), "a hosted shell's output: no answer text"
        ),
        "response.shell_call_output_content.done": informational(
            _ev("ResponseShellCallOutputContentDoneEvent"), "as above"
        ),
        # Sent by the API before the SDK's union named them (reasoning summaries under earlier names).
        "response.reasoning_summary.delta": informational(_REF, "an earlier name of a reasoning summary"),
        "response.reasoning_summary.done": informational(_REF, "an earlier name of a reasoning summary"),
    }
)

CONTENT: Final[Table] = MappingProxyType(
    {
        # ResponseOutputMessage.content and the content_part events' part
        "output_text": read(f"{_SDK}.ResponseOutputText", "answer text (output_text events)"),
        "refusal": read(f"{_SDK}.ResponseOutputRefusal", "a refusal (refusal events)"),
        "reasoning_text": read(f"{_SDK}.response_content_part_added_event.PartReasoningText", "reasoning"),
        # output items that are no tool call
        "message": read(_item("ResponseOutputMessage"), "its parts arrive as their own events"),
        "reasoning": read(_item("ResponseReasoningItem"), "its text arrives as reasoning events"),
        "compaction": informational(_item("ResponseCompactionItem"), "encrypted compacted context"),
        "additional_tools": informational(_item("AdditionalTools"), "tools made available: no output"),
        "function_call_output": informational(_item("ResponseFunctionToolCallOutputItem"), "a tool's result"),
        "custom_tool_call_output": informational(
            _item("ResponseCustomToolCallOutputItem"), "a tool's result"
        ),
        "computer_call_output": informational(_item("ResponseComputerToolCallOutputItem"), "a tool's result"),
        "local_shell_call_output": informational(_item("LocalShellCallOutput"), "a tool's result"),
        "shell_call_output": informational(_item("ResponseFunctionShellToolCallOutput"), "a tool's result"),
        "apply_patch_call_output": informational(
            _item("ResponseApplyPatchToolCallOutput"), "a tool's result"
        ),
        "tool_search_output": informational(_item("ResponseToolSearchOutputItem"), "a tool's result"),
        "program_output": informational(_item("ProgramOutput"), "a program's result"),
        "mcp_approval_response": informational(_item("McpApprovalResponse"), "the client's answer, echoed"),
    }
)

TOOLS: Final[Table] = MappingProxyType(
    {
        "function_call": read(
            _item("ResponseFunctionToolCall"), "the agent's call: JSON arguments, complete when they parse"
        ),
        "custom_tool_call": read(
            _item("ResponseCustomToolCall"), "the agent's call: raw text input, complete at its done event"
        ),
        "computer_call": read(
            _item("ResponseComputerToolCall"), "an action the client runs: a call once its item is completed"
        ),
        "local_shell_call": read(_item("LocalShellCall"), "a command the client runs: as computer_call"),
        "shell_call": read(
            _item("ResponseFunctionShellToolCall"),
            "commands the client runs (a local environment): as computer_call; in a container, hosted",
        ),
        "apply_patch_call": read(
            _item("ResponseApplyPatchToolCall"), "a patch the client applies: as computer_call"
        ),
        "mcp_approval_request": read(
            _item("McpApprovalRequest"), "the client must approve an MCP call: a call it answers"
        ),
        "tool_search_call": read(
            _item("ResponseToolSearchCall"), "execution client: as computer_call; server: hosted"
        ),
        "web_search_call": informational(_item("ResponseFunctionWebSearch"), _HOSTED + "; failed: noted"),
        "file_search_call": informational(_item("ResponseFileSearchToolCall"), _HOSTED + "; failed: noted"),
        "code_interpreter_call": informational(
            _item("ResponseCodeInterpreterToolCall"), _HOSTED + "; failed: noted"
        ),
        "image_generation_call": informational(_item("ImageGenerationCall"), _HOSTED + "; failed: noted"),
        "mcp_call": informational(_item("McpCall"), _HOSTED + "; failed: noted"),
        "mcp_list_tools": informational(_item("McpListTools"), _HOSTED + "; an error: noted"),
        "program": not_understood(
            _item("Program"), "programmatic tool calling's source: not read, so never a whole answer"
        ),
    }
)

FINISHES: Final[Table] = MappingProxyType(
    {
        # Response.status, the raw reason of response.completed
        "completed": read(f"{_SDK}.Response.status", "a whole answer"),
        "incomplete": read(f"{_SDK}.Response.status", "ended short: incomplete_details.reason says why"),
        "failed": read(f"{_SDK}.Response.status", "response.failed: the provider's error"),
        "cancelled": read(f"{_SDK}.Response.status", "cancelled: no whole answer"),
        "queued": read(f"{_SDK}.Response.status", "a background request's first answer: no whole answer"),
        "in_progress": read(f"{_SDK}.Response.status", "as queued"),
        # Response.incomplete_details.reason
        "max_output_tokens": read(f"{_SDK}.response.IncompleteDetails.reason", "the output limit: length"),
        "content_filter": read(f"{_SDK}.response.IncompleteDetails.reason", "a content filter"),
        "max_messages": read(f"{_SDK}.response.IncompleteDetails.reason", "a message limit: no whole answer"),
        "steered": read(f"{_SDK}.response.IncompleteDetails.reason", "steered away: no whole answer"),
    }
)

DEFINITIONS: Final = Definitions(EVENTS, CONTENT, TOOLS, FINISHES)

# Output items by what the adapter does with them.
_TOOL_ITEMS: Final = {"function_call": ToolInput.JSON, "custom_tool_call": ToolInput.TEXT}
# Actions the client runs: each a call once its done item says completed; their action fields are its input.
_ACTION_ITEMS: Final = frozenset(
    {
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_approval_request",
        "tool_search_call",
    }
)
_ITEM_FIELDS_SKIPPED: Final = frozenset({"id", "type", "status", "call_id", "created_by", "caller"})
_FAILED_STATUSES: Final = frozenset({"failed", "incomplete"})
_INCOMPLETE: Final = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}
_PREFIX: Final = "response."
_ERROR_EVENTS: Final = frozenset({"error", "response.failed"})
_UNREAD_ITEMS: Final = frozenset(
    k for k, d in (*TOOLS.items(), *CONTENT.items()) if d.decision is Decision.NOT_UNDERSTOOD
)

_BOOKKEEPING: Final = metadata_constants(
    *(kind for kind, d in EVENTS.items() if d.decision is Decision.INFORMATIONAL),
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
)
_UNREAD_EVENTS: Final = frozenset(kind for kind, d in EVENTS.items() if d.decision is Decision.NOT_UNDERSTOOD)


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
        calls = [call.copy() for call in self.open_calls()]
        if calls:
            other._call, other._queued = calls[0], calls[1:]
        return other

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        out["stream"] = True
        return f"{base_url.rstrip('/')}/responses", out

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
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
        if kind in _UNREAD_EVENTS:  # known, and not read: evidence
            self.unread(kind[len(_PREFIX) :] if kind.startswith(_PREFIX) else kind)
            return [Metadata(kind)]
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
        self.close_calls(out)
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
        self.close_calls(out)
        out.append(self.reasoning_delta(text, summary))
        return out

    def _call_named(self, payload: Mapping[str, Any]) -> OpenCall | None:
        """The open call an event names: by ``item_id`` (or a call id under it), else by ``output_index``."""
        item_id = payload.get("item_id")
        if item_id is not None:
            return self.find_call(item_id)
        position = payload.get("output_index")
        if type(position) is int:
            return next((c for c in reversed(self.open_calls()) if c.index == position), None)
        return None

    def _on_item_added(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        item = as_dict(payload.get("item"))
        kind = as_str(item.get("type")) if item is not None else None
        if item is None or kind is None or not (kind in _TOOL_ITEMS or self._is_action(item, kind)):
            return [_BOOKKEEPING["response.output_item.added"]]
        self._saw_function_call = True
        item_id = as_str(item.get("id")) or as_str(item.get("call_id")) or self.next_call_id()
        call_id = as_str(item.get("call_id")) or item_id
        if self.find_call(item_id, call_id) is not None or item_id in self._closed or call_id in self._closed:
            return [_BOOKKEEPING["response.output_item.added"]]  # the same call announced again
        position = payload.get("output_index")
        position = position if type(position) is int else 0
        out: list[StreamEvent] = []
        if kind in _TOOL_ITEMS:
            grammar = _TOOL_ITEMS[kind]
            first = _input(item, grammar)
            call = OpenCall(item_id, call_id, as_str(item.get("name")) or "", position, grammar=grammar)
        else:  # a client action: its input is its done item's action
            first, call = None, OpenCall(item_id, call_id, kind, position, needs_end=True)
        self.open_call(out, call, first, parallel=True)
        return out

    def _is_action(self, item: Mapping[str, Any], kind: str) -> bool:
        """An item the client runs: the action kinds, but a shell in a container and a tool search the
        server executes are hosted."""
        if kind not in _ACTION_ITEMS:
            return False
        if kind == "shell_call":
            environment = as_dict(item.get("environment"))
            return environment is None or environment.get("type") in (None, "local")
        if kind == "tool_search_call":
            return item.get("execution") == "client"
        return True

    def _on_arguments_delta(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self.count_key(payload["type"][len(_PREFIX) :])
        call = self._call_named(payload)
        if call is None or call.ended:
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        text = payload.get("delta")
        if not text or not isinstance(text, str):
            return [_BOOKKEEPING_DELTA]
        out: list[StreamEvent] = []
        self.add_input(out, call, text)
        return out or [_WAITING]

    def _on_arguments_done(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        item_id = as_str(payload.get("item_id"))
        call = self._call_named(payload)
        if call is None or call.ended:
            if item_id in self._closed or call is not None:
                return [_BOOKKEEPING[payload["type"]]]  # a late or repeated "done": nothing new
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        final = _input(payload, call.grammar)
        if final is not None and (final or call.grammar is ToolInput.TEXT):
            call.final = final
        if call.grammar is ToolInput.JSON and not parses(call.arguments()):
            return [_BOOKKEEPING[payload["type"]]]  # not JSON: the call stays open, its input never ended
        out: list[StreamEvent] = []
        self.end_input(out, call)
        return out or [_BOOKKEEPING[payload["type"]]]

    def _on_item_done(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        item = as_dict(payload.get("item"))
        kind = as_str(item.get("type")) if item is not None else None
        if item is None or kind is None:
            return [_BOOKKEEPING["response.output_item.done"]]
        status = as_str(item.get("status"))
        action = kind not in _TOOL_ITEMS and self._is_action(item, kind)
        if kind not in _TOOL_ITEMS and not action:
            if kind in _UNREAD_ITEMS or (kind not in TOOLS and kind not in CONTENT):
                self.unread(f"item.{kind}" if len(kind) <= 48 else "item.unknown")  # never silent
            elif kind in TOOLS and (status in _FAILED_STATUSES or as_dict(item.get("error"))):
                self.note("hosted_tool_failed")  # the provider's tool failed; the model goes on without it
            return [_BOOKKEEPING["response.output_item.done"]]
        item_id = as_str(item.get("id")) or as_str(item.get("call_id"))
        call_id = as_str(item.get("call_id"))
        call = self.find_call(item_id, call_id)
        out: list[StreamEvent] = []
        if call is None and (item_id in self._closed or call_id in self._closed):
            return [_BOOKKEEPING["response.output_item.done"]]
        if status in _FAILED_STATUSES or (action and status not in (None, "completed")):
            # A call that did not complete is no call to run: it stays open (never handed out).
            self.note("tool_call_incomplete")
            if call is None:
                position = payload.get("output_index")
                call = OpenCall(
                    item_id or self.next_call_id(), call_id or item_id or "", kind, 0, needs_end=True
                )
                call.index = position if type(position) is int else 0
                self.open_call(out, call, parallel=True)
            else:  # announced and streamed: whatever its input says, it never becomes complete
                call.needs_end, call.ended = True, False
            return out or [_BOOKKEEPING["response.output_item.done"]]
        grammar = _TOOL_ITEMS.get(kind, ToolInput.JSON)
        final = _action(item) if action else _input(item, grammar)
        if call is None:  # a call never announced by output_item.added: it arrives whole
            self._saw_function_call = True
            position = payload.get("output_index")
            name = kind if action else as_str(item.get("name")) or ""
            self.whole_call(
                out,
                call_id or item_id or self.next_call_id(),
                name,
                final if final is not None else ("{}" if grammar is ToolInput.JSON else ""),
                position if type(position) is int else 0,
                parallel=True,
                grammar=grammar,
            )
            return out
        if final is not None and (final or grammar is ToolInput.TEXT):
            call.final = final
        if call.grammar is ToolInput.TEXT or call.needs_end or call.complete():
            self.end_input(out, call)
        if call in self.open_calls():
            self.end_call(out, call)
        return out or [_BOOKKEEPING["response.output_item.done"]]

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
        response = payload.get("response")
        if type(response) is dict and isinstance(response.get("error"), str):
            # an error said in words only, as some gateways send it
            return self.error({**payload, "error": {"message": response["error"]}})
        return self.error(payload)

    def closed(self, call: OpenCall) -> None:
        self._closed.update(i for i in (call.key, call.call_id) if isinstance(i, str))


def _input(holder: Mapping[str, Any], grammar: ToolInput) -> str | None:
    """A call's input as sent: JSON ``arguments`` (a string, or the object), or a freeform ``input``."""
    if grammar is ToolInput.TEXT:
        value = holder.get("input")
        return value if isinstance(value, str) else None
    return as_arguments(holder.get("arguments")) or as_arguments(holder.get("input"))


def _action(item: Mapping[str, Any]) -> str:
    """A client action's input: its item's fields beside the bookkeeping ones, as JSON, without nulls (an
    absent field and a null one say the same; the SDK's objects fill in the nulls the wire leaves out)."""
    fields = {k: v for k, v in item.items() if k not in _ITEM_FIELDS_SKIPPED}
    return json.dumps(_no_nulls(fields), separators=(",", ":"), sort_keys=True)


def _no_nulls(value: Any, depth: int = 0) -> Any:
    if depth > 16:
        return value
    if isinstance(value, dict):
        return {k: _no_nulls(v, depth + 1) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v, depth + 1) for v in value]
    return value


_BOOKKEEPING_DELTA: Final = Metadata("empty_delta")
_WAITING: Final = Metadata("tool_input_waiting")  # input of a call behind another, kept until its turn
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
_RESPONSE_TOOLS: Final = frozenset(TOOLS)


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
