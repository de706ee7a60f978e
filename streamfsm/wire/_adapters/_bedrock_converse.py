"""Amazon Bedrock ``ConverseStream`` (``POST /model/{modelId}/converse-stream``): AWS event-stream messages
named by their ``:event-type`` (``messageStart``, ``contentBlockStart``/``Delta``/``Stop``, ``messageStop``,
``metadata``), each payload that event's JSON; errors as ``exception`` messages. boto3's
``bedrock-runtime`` client reads it with botocore and yields each event as ``{name: body}``: the same
shape a frame without a name carries here (a whole ``Converse`` answer as frames, and ``wrap()``'s items).

Judgement calls:

* ``messageStop`` names the stop reason; ``metadata`` (usage) follows it, so the finish is given after the
  usage, or at a clean end when no ``metadata`` came.
* Usage: ``input_tokens`` is the whole prompt (``inputTokens`` + ``cacheReadInputTokens`` +
  ``cacheWriteInputTokens``, as the other formats count it), ``cached_tokens`` the cache reads.
* A ``contentBlockDelta`` without its ``delta`` (botocore's item for a payload that is no JSON) is
  ``unexpected_shape``: the content it carried is lost, so the answer is not whole.
* Every member botocore's model defines has a decision in ``DEFINITIONS``; the handlers follow it. A
  ``toolUse`` block's input streams as text (``delta.toolUse.input``); a ``type`` of ``server_tool_use`` is
  a tool the provider runs (``server_side``); ``toolResult`` blocks and ``citation`` deltas are
  informational (an error result counted as ``toolResult.error``); ``image`` blocks are not read
  (``unread_content``). Reasoning is ``reasoningContent.text``; ``redactedContent`` is reasoning with no
  text; ``signature`` is informational.
* A call is ended by its ``contentBlockStop`` (or the next block) when its input parses, and handed out at
  the finish: ``malformed_tool_use`` and ``malformed_model_output`` say the message's calls are malformed,
  so none of them is handed out (the anomaly ``calls_withheld``); a call still open at a finish that is
  not a whole answer fails the run with it open, and the calls before it are not handed out either.
* Stop reasons: ``end_turn`` / ``stop_sequence`` → STOP, ``tool_use`` → TOOL_CALLS, ``max_tokens`` and
  ``model_context_window_exceeded`` → LENGTH, ``guardrail_intervened`` / ``content_filtered`` →
  CONTENT_FILTER, anything else → OTHER (and never a whole answer).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from ...classify import is_whole
from .._definitions import Decision, Definitions, informational, not_understood, read
from .._events import (
    FinishReason,
    Metadata,
    ProtocolViolation,
    StreamEvent,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    Usage,
)
from .._eventstream import CONTENT_TYPE, require_botocore
from .._sse import Frame
from ._base import (
    UNEXPECTED_EVENT,
    UNEXPECTED_SHAPE,
    UNKNOWN_TOOL_CALL,
    UNREAD_CONTENT,
    Adapter,
    Frames,
    OpenCall,
    add,
    as_count,
    as_dict,
    as_str,
    raw_reason,
)
from ._sdk_items import SdkTranslator

# -- what the provider defines, decided (DESIGN §13.1): botocore's bedrock-runtime service model ---------

_M: Final = "botocore bedrock-runtime "
_EXCEPTIONS: Final = (
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
)
_READ_USAGE: Final = (
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "cacheReadInputTokens",
    "cacheWriteInputTokens",
)
# ``ConverseStreamOutput``'s members, and each event's members (``<event>.<member>``, ``usage.<member>``).
EVENTS: Final = MappingProxyType(
    {
        "messageStart": read(_M + "MessageStartEvent", "the message starts"),
        "contentBlockStart": read(_M + "ContentBlockStartEvent", "a block starts: see content"),
        "contentBlockDelta": read(_M + "ContentBlockDeltaEvent", "a block's delta: see content"),
        "contentBlockStop": read(_M + "ContentBlockStopEvent", "a block ends; a call's input if it parses"),
        "messageStop": read(_M + "MessageStopEvent", "the stop reason; the finish follows the usage"),
        "metadata": read(_M + "ConverseStreamMetadataEvent", "the usage, then the finish"),
        **{
            name: read(_M + "ConverseStreamOutput", "the stream's error, its type read as words")
            for name in _EXCEPTIONS
        },
        "messageStart.role": informational(_M + "MessageStartEvent", "always the assistant"),
        "contentBlockStart.contentBlockIndex": read(_M + "ContentBlockStartEvent", "the block's key"),
        "contentBlockStart.start": read(_M + "ContentBlockStart", "what the block is: see content"),
        "contentBlockDelta.contentBlockIndex": read(_M + "ContentBlockDeltaEvent", "the block's key"),
        "contentBlockDelta.delta": read(_M + "ContentBlockDelta", "see content"),
        "contentBlockStop.contentBlockIndex": read(_M + "ContentBlockStopEvent", "the block's key"),
        "messageStop.stopReason": read(_M + "StopReason", "see finishes"),
        "messageStop.additionalModelResponseFields": informational(_M + "MessageStopEvent", "model extras"),
        "metadata.usage": read(_M + "TokenUsage", "the usage"),
        **{
            f"metadata.{name}": informational(_M + "ConverseStreamMetadataEvent", "bookkeeping")
            for name in ("metrics", "trace", "performanceConfig", "serviceTier")
        },
        **{f"usage.{name}": read(_M + "TokenUsage", "counted") for name in _READ_USAGE},
        "usage.cacheDetails": informational(_M + "CacheDetail", "the cache reads by time to live"),
    }
)
# ``ContentBlockStart`` (``start.*``), ``ContentBlockDelta`` (``delta.*``) and ``ReasoningContentBlockDelta``
# (``delta.reasoningContent.*``) members.
CONTENT: Final = MappingProxyType(
    {
        "start.toolUse": read(_M + "ToolUseBlockStart", "a tool call starts (see tools)"),
        "start.toolResult": informational(
            _M + "ToolResultBlockStart", "a server tool's result, for the model"
        ),
        "start.image": not_understood(_M + "ImageBlockStart", "a generated image: content not read"),
        "delta.text": read(_M + "ContentBlockDelta", "answer text"),
        "delta.toolUse": read(_M + "ToolUseBlockDelta", "a fragment of the call's input (JSON as text)"),
        "delta.toolResult": informational(_M + "ToolResultBlockDelta", "a server tool's result, streamed"),
        "delta.reasoningContent": read(_M + "ReasoningContentBlockDelta", "reasoning: see its members"),
        "delta.citation": informational(_M + "CitationsDelta", "a citation for the text: not text"),
        "delta.image": not_understood(_M + "ImageBlockDelta", "a generated image: content not read"),
        "delta.reasoningContent.text": read(_M + "ReasoningContentBlockDelta", "reasoning"),
        "delta.reasoningContent.redactedContent": read(
            _M + "ReasoningContentBlockDelta", "encrypted reasoning: reasoning with no text"
        ),
        "delta.reasoningContent.signature": informational(_M + "ReasoningContentBlockDelta", "its signature"),
    }
)
TOOLS: Final = MappingProxyType(
    {
        "toolUse": read(_M + "ToolUseBlockStart", "the agent runs it: a ToolCall once its input parses"),
        "toolUse.server_tool_use": read(_M + "ToolUseType", "the provider runs it: a server_side ToolCall"),
        "toolResult.success": informational(_M + "ToolResultStatus", "a server tool's result"),
        "toolResult.error": informational(_M + "ToolResultStatus", "a server tool failed: counted"),
    }
)
_STOPS: Final = {
    "end_turn": (FinishReason.STOP, read(_M + "StopReason", "the model's natural end: whole")),
    "stop_sequence": (FinishReason.STOP, read(_M + "StopReason", "a stop sequence matched: whole")),
    "tool_use": (FinishReason.TOOL_CALLS, read(_M + "StopReason", "the turn ends on tool calls: whole")),
    "max_tokens": (FinishReason.LENGTH, read(_M + "StopReason", "the output limit: not whole")),
    "model_context_window_exceeded": (FinishReason.LENGTH, read(_M + "StopReason", "the window is full")),
    "guardrail_intervened": (FinishReason.CONTENT_FILTER, read(_M + "StopReason", "a guardrail stopped it")),
    "content_filtered": (FinishReason.CONTENT_FILTER, read(_M + "StopReason", "a filter stopped it")),
    "malformed_tool_use": (
        FinishReason.OTHER,
        read(_M + "StopReason", "a malformed call: no call of the message is handed out"),
    ),
    "malformed_model_output": (
        FinishReason.OTHER,
        read(_M + "StopReason", "malformed output: no call of the message is handed out"),
    ),
}
FINISHES: Final = MappingProxyType({raw: decided for raw, (_, decided) in _STOPS.items()})
_FINISH: Final = {raw: reason for raw, (reason, _) in _STOPS.items()}
DEFINITIONS: Final = Definitions(events=EVENTS, content=CONTENT, tools=TOOLS, finishes=FINISHES)
_MALFORMED: Final = frozenset({"malformed_tool_use", "malformed_model_output"})
_INFORMATIONAL: Final = frozenset(
    name for name, decided in CONTENT.items() if decided.decision is Decision.INFORMATIONAL
)
_EVENTS: Final = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
)
_META: Final = {name: Metadata(name) for name in _EVENTS}

_Handler = Callable[["BedrockConverseAdapter", dict[str, Any], int], list[StreamEvent]]


class BedrockConverseAdapter(Adapter):
    name = "bedrock-converse"
    whole_answers = frozenset(
        {
            "end_turn",  # Converse stopReason: the model's natural end
            "stop_sequence",  # a stop sequence matched
            "tool_use",  # the turn ends on tool calls
        }
    )
    default_headers = MappingProxyType({"accept": CONTENT_TYPE})

    __slots__ = ("_ended", "_stopped")

    def __init__(self) -> None:
        require_botocore()  # say which extra is missing before anything is sent
        super().__init__()
        self._stopped = False  # messageStop arrived: the finish follows the usage (or the clean end)
        self._ended: list[OpenCall] = []  # calls whose input the provider ended, held until the finish

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """boto3's shape: the model (``modelId``) goes in the path, the rest is the body."""
        out = dict(body)
        model = urllib.parse.quote(str(out.pop("modelId", None) or out.pop("model", "")), safe=":")
        return f"{base_url.rstrip('/')}/model/{model}/converse-stream", out

    def end(self) -> list[StreamEvent]:
        """A clean end after ``messageStop`` with no ``metadata``: the answer ended all the same."""
        if self.terminal_seen or not self._stopped:
            return []
        return self._finish()

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
        payload = self.load(data, index)
        if event.event == "message":  # no name: the event is the payload's one key ({name: body})
            if len(payload) != 1:
                raise ProtocolViolation(UNEXPECTED_EVENT, index)
            ((name, body),) = payload.items()
            return self.on_event(name, as_dict(body) or {}, index)
        return self.on_event(event.event, payload, index)

    def on_event(self, name: str, body: dict[str, Any], index: int) -> list[StreamEvent]:
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, body, index)
        if name == "error" or name in _EXCEPTIONS:  # an exception message: its type is read as words
            return self.error(body if name == "error" else {"error": {"type": name, **body}})
        # A type in no table may carry the answer (the provider moved it): never a whole answer unread.
        self.note("unknown_event")
        self.note(UNREAD_CONTENT)
        return [Metadata(name if len(name) <= 64 else "unknown")]

    # -- handlers -------------------------------------------------------------------------------------------

    def _on_message_start(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        return [_META["messageStart"]]

    def _end_call(self, out: list[StreamEvent]) -> None:
        """The provider ended the open call (its block stopped, or the next began): an input that parses is
        ended and held for the finish, which may still say it was malformed; any other fails the run."""
        call = self._call
        if call is None:
            return
        if not call.complete():
            self.close_call(out)  # raises: the provider ended a call whose input is not JSON
            return
        self._call = None
        call.ended = True
        out.append(ToolInputEnd(call.call_id))
        self._ended.append(call)

    def _on_block_start(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        self._end_call(out)
        position = body.get("contentBlockIndex")
        position = position if type(position) is int else 0
        start = as_dict(body.get("start")) or {}
        for kind, value in start.items():
            if kind == "toolUse" and type(value) is dict:
                call_id = as_str(value.get("toolUseId")) or self.next_call_id()
                server = value.get("type") == "server_tool_use"  # a tool the provider runs
                call = OpenCall(position, call_id, as_str(value.get("name")) or "", position, server)
                self.open_call(out, call)
            elif f"start.{kind}" in _INFORMATIONAL:
                self.count_key(f"start.{kind}")
                if (as_dict(value) or {}).get("status") == "error":
                    self.count_key(f"{kind}.error")  # a server tool failed; the model reads why
            else:
                self.unread(f"start.{kind}")
        return out or [_META["contentBlockStart"]]

    def _on_block_delta(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        delta = as_dict(body.get("delta"))
        if delta is None:  # required; botocore reads a payload that is no JSON as an item without it
            raise ProtocolViolation(UNEXPECTED_SHAPE, index)
        out: list[StreamEvent] = []
        for kind, value in delta.items():
            self.count_key(kind)
            if kind == "text" and isinstance(value, str):
                self._end_call(out)
                if value:
                    out.append(self.text_delta(value))
            elif kind == "toolUse":
                out += self._tool_input(as_dict(value) or {}, body, index)
            elif kind == "reasoningContent" and isinstance(value, dict):
                self._reasoning(value, out)
            elif f"delta.{kind}" not in _INFORMATIONAL:
                self.note(UNREAD_CONTENT)
        return out or [_META["contentBlockDelta"]]

    def _reasoning(self, value: dict[str, Any], out: list[StreamEvent]) -> None:
        for member, part in value.items():
            if member == "text" and isinstance(part, str):
                if part:
                    out.append(self.reasoning_delta(part))
            elif member == "redactedContent":
                out.append(self.reasoning_delta(""))  # the model reasoned; its text is encrypted
            elif f"delta.reasoningContent.{member}" not in _INFORMATIONAL:
                self.note(UNREAD_CONTENT)

    def _tool_input(self, tool: dict[str, Any], body: dict[str, Any], index: int) -> list[StreamEvent]:
        call = self._call
        if call is None or body.get("contentBlockIndex", call.key) != call.key:
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        text = tool.get("input")
        if not text or not isinstance(text, str):
            return []
        call.parts.append(text)
        return [ToolInputDelta(call.call_id, text)]

    def _on_block_stop(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        call = self._call
        if call is not None and body.get("contentBlockIndex", call.key) == call.key and call.complete():
            out: list[StreamEvent] = []
            self._end_call(out)
            return out
        return [_META["contentBlockStop"]]

    def _on_message_stop(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        self.finish_raw = raw_reason(body.get("stopReason"))
        self._stopped = True
        return [_META["messageStop"]]

    def _on_metadata(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        usage = as_dict(body.get("usage"))
        if usage is not None:
            cached = as_count(usage.get("cacheReadInputTokens"))
            written = as_count(usage.get("cacheWriteInputTokens"))
            out.append(
                Usage(
                    input_tokens=add(add(as_count(usage.get("inputTokens")), cached), written),
                    output_tokens=as_count(usage.get("outputTokens")),
                    cached_tokens=cached,
                    total_tokens=as_count(usage.get("totalTokens")),
                )
            )
        if self._stopped:
            out += self._finish()
        return out or [_META["metadata"]]

    def _finish(self) -> list[StreamEvent]:
        """The calls the provider ended are handed out now, unless the finish says the output was malformed
        or a call is still open at a finish that is not a whole answer (the run then fails with it open)."""
        out: list[StreamEvent] = []
        raw = self.finish_raw
        reason = _FINISH.get(raw, FinishReason.OTHER) if raw else FinishReason.OTHER
        if raw in _MALFORMED:
            if self._ended:
                self.note("calls_withheld")  # the finish says the message's calls are malformed
            self._ended = []
        elif self._call is not None and is_whole(self.whole_answers, raw):
            self._end_call(out)
        if self._ended and self._call is None:
            for call in self._ended:
                out.append(ToolCall(call.call_id, call.name, call.arguments(), call.index, call.server_side))
        self._ended = []
        self.finish(out, reason, raw)
        return out


_HANDLERS: Final[dict[str, _Handler]] = {
    "messageStart": BedrockConverseAdapter._on_message_start,
    "contentBlockStart": BedrockConverseAdapter._on_block_start,
    "contentBlockDelta": BedrockConverseAdapter._on_block_delta,
    "contentBlockStop": BedrockConverseAdapter._on_block_stop,
    "messageStop": BedrockConverseAdapter._on_message_stop,
    "metadata": BedrockConverseAdapter._on_metadata,
}


class SdkBedrockConverse(SdkTranslator, BedrockConverseAdapter):
    """boto3's ``converse_stream()['stream']`` items: ``{name: body}`` dicts, botocore's parse of each
    message (an exception message is raised by botocore, not yielded)."""

    __slots__ = ()

    def _on_item(self, item: Any, index: int) -> list[StreamEvent]:
        if not isinstance(item, dict) or len(item) != 1:
            raise ProtocolViolation(UNEXPECTED_EVENT, index)
        ((name, body),) = item.items()
        return self.on_event(str(name), as_dict(body) or {}, index)


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """A ``Converse`` answer: its message's blocks as the events that would have streamed them, then its
    stop reason and usage."""
    output = as_dict(answer.get("output"))
    message = as_dict(output.get("message")) if output is not None else None
    content = message.get("content") if message is not None else None
    if message is None or not isinstance(content, list):
        return None
    frames: Frames = [{"messageStart": {"role": message.get("role", "assistant")}}]
    for position, block in enumerate(content):
        block = as_dict(block) or {}
        tool = as_dict(block.get("toolUse"))
        if tool is not None:
            start = {key: tool[key] for key in ("toolUseId", "name") if key in tool}
            frames.append({"contentBlockStart": {"contentBlockIndex": position, "start": {"toolUse": start}}})
            arguments = json.dumps(tool.get("input", {}), separators=(",", ":"))
            delta: dict[str, Any] = {"toolUse": {"input": arguments}}
        elif "reasoningContent" in block:
            reasoning = (as_dict(block["reasoningContent"]) or {}).get("reasoningText")
            delta = {"reasoningContent": {"text": (as_dict(reasoning) or {}).get("text")}}
        else:
            delta = {key: value for key, value in block.items() if key == "text"} or block
        frames.append({"contentBlockDelta": {"contentBlockIndex": position, "delta": delta}})
        frames.append({"contentBlockStop": {"contentBlockIndex": position}})
    if answer.get("stopReason") is not None:  # no stop reason: the answer never said it ended
        frames.append({"messageStop": {"stopReason": answer["stopReason"]}})
    frames.append({"metadata": {"usage": answer["usage"]} if type(answer.get("usage")) is dict else {}})
    return frames
