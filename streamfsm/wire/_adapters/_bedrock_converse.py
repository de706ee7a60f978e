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
* A ``toolUse`` block's input streams as text (``delta.toolUse.input``); ``contentBlockStop`` ends the call
  only when it parses. Reasoning is ``delta.reasoningContent.text``; its ``signature`` and
  ``redactedContent`` carry nothing to read. Any other delta is counted as ``unread_content``.
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

from .._events import FinishReason, Metadata, ProtocolViolation, StreamEvent, ToolInputDelta, Usage
from .._eventstream import CONTENT_TYPE, require_botocore
from .._sse import SSEEvent
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

_FINISH: Final = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
    "content_filtered": FinishReason.CONTENT_FILTER,
}
_QUIET_REASONING: Final = frozenset({"signature", "redactedContent"})  # nothing to read, by design
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

    __slots__ = ("_stopped",)

    def __init__(self) -> None:
        require_botocore()  # say which extra is missing before anything is sent
        super().__init__()
        self._stopped = False  # messageStop arrived: the finish follows the usage (or the clean end)

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

    def _on_data(self, event: SSEEvent, data: str, index: int) -> list[StreamEvent]:
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
        if name == "error":  # an exception message (the framing names its type: read as words)
            return self.error(body)
        self.note("unknown_event")
        return [Metadata(name if len(name) <= 64 else "unknown")]

    # -- handlers -------------------------------------------------------------------------------------------

    def _on_message_start(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        return [_META["messageStart"]]

    def _on_block_start(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._call is not None:
            self.close_call(out)
        position = body.get("contentBlockIndex")
        position = position if type(position) is int else 0
        tool = as_dict((as_dict(body.get("start")) or {}).get("toolUse"))
        if tool is None:
            return [_META["contentBlockStart"]]
        call_id = as_str(tool.get("toolUseId")) or self.next_call_id()
        self.open_call(out, OpenCall(position, call_id, as_str(tool.get("name")) or "", position))
        return out

    def _on_block_delta(self, body: dict[str, Any], index: int) -> list[StreamEvent]:
        delta = as_dict(body.get("delta"))
        if delta is None:  # required; botocore reads a payload that is no JSON as an item without it
            raise ProtocolViolation(UNEXPECTED_SHAPE, index)
        out: list[StreamEvent] = []
        for kind, value in delta.items():
            self.count_key(kind)
            if kind == "text" and isinstance(value, str):
                if self._call is not None:
                    self.close_call(out)
                if value:
                    out.append(self.text_delta(value))
            elif kind == "toolUse":
                out += self._tool_input(as_dict(value) or {}, body, index)
            elif kind == "reasoningContent" and isinstance(value, dict):
                text = value.get("text")
                if isinstance(text, str) and text:
                    out.append(self.reasoning_delta(text))
                elif not _QUIET_REASONING.intersection(value):
                    self.note(UNREAD_CONTENT)
            else:
                self.note(UNREAD_CONTENT)
        return out or [_META["contentBlockDelta"]]

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
            self.close_call(out)
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
        out: list[StreamEvent] = []
        raw = self.finish_raw
        self.finish(out, _FINISH.get(raw, FinishReason.OTHER) if raw else FinishReason.OTHER, raw)
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
