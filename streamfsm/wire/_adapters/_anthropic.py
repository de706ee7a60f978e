"""Anthropic Messages (``/v1/messages``, ``stream: true``): named events, the data repeating the name as
``type``.

Judgement calls:

* The data's ``type`` is trusted over the SSE ``event:`` line (a disagreement is counted in
  ``anomalies``); data without a ``type`` falls back to the ``event:`` name.
* Usage: ``input_tokens`` is the whole prompt (``input_tokens`` + ``cache_read_input_tokens`` +
  ``cache_creation_input_tokens``, as OpenAI and Gemini count it), ``cached_tokens`` the cache reads.
  ``message_delta`` usage is cumulative; its Usage carries the prompt side from ``message_start`` unless it
  restates it. ``message_start``'s ``output_tokens`` is a placeholder (1): its Usage leaves it None, so
  the two usages normalise to one final one (the last). Anthropic gives no total: ``total_tokens`` None.
* Every event, block, delta, tool kind and stop reason the SDK defines (beta included) has a decision in
  ``DEFINITIONS`` (read, informational, not understood); the handlers follow it. ``server_tool_use`` and
  ``mcp_tool_use`` blocks are calls the provider runs: ``server_side=True``. Result blocks (web search, code
  execution, MCP, ...) are informational: counted as ``block.<type>``, and an error result (its content an
  ``*_error`` object) also as ``block.<type>.error``; the model reads it and goes on.
* A tool block that brings its whole ``input`` at its start (Bedrock, proxies) is that input unless deltas
  follow; fine-grained (eager) input streams partial JSON that may parse only at the end, or never.
* Blocks are strictly sequential on this wire. If a block starts (or text arrives) while a tool block is
  still open, the tool call is closed first; its later ``content_block_stop`` is then bookkeeping, and a
  later ``input_json_delta`` for it is ``unknown_tool_call``.
* A ``content_block_delta`` or ``content_block_stop`` whose ``index`` names no block that started is
  ``unknown_block``, a protocol violation at that event (never visible text, whatever it carries): the
  first anomaly wins. Without an ``index`` the event is taken for the current block.
* Text comes from ``text`` blocks and ``text_delta``; reasoning from ``thinking`` blocks and
  ``thinking_delta``; a ``redacted_thinking`` block is reasoning with no text (an empty reasoning delta).
  ``signature_delta``, ``citations_delta`` and ``compaction_delta`` are informational. Any block or delta
  type not in the table, or text that is not a string, is counted and noted as ``unread_content``: never
  dropped silently.
* An ``event: error`` is an error whatever its data says; so is typeless data with an ``error`` object or a
  flat ``code`` + ``message``, and a type ending in ``_error`` (a gateway's flat Anthropic error).
* Stop reasons: ``end_turn`` / ``stop_sequence`` → STOP, ``max_tokens`` and
  ``model_context_window_exceeded`` → LENGTH, ``tool_use`` → TOOL_CALLS, ``refusal`` → CONTENT_FILTER,
  ``pause_turn`` and ``compaction`` (paused: send the turn back) and anything else → OTHER.
* A tool block's ``content_block_stop`` ends the call only when its arguments parse (at ``max_tokens``
  Anthropic closes the block on cut JSON): otherwise the call stays open, and the run fails with it open
  at the stop reason (or at whatever comes next), never with a ``ToolCall``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from .._definitions import Decision, Definitions, informational, read
from .._events import (
    FinishReason,
    Keepalive,
    Metadata,
    ProtocolViolation,
    StreamEvent,
    ToolInputDelta,
    Usage,
)
from .._sse import Frame
from ._base import (
    UNEXPECTED_EVENT,
    UNKNOWN_BLOCK,
    UNKNOWN_TOOL_CALL,
    UNREAD_CONTENT,
    Adapter,
    Frames,
    OpenCall,
    TextTemplate,
    add,
    as_count,
    as_dict,
    as_str,
    error_marker,
    metadata_constants,
    raw_reason,
)

# -- what the provider defines, decided (DESIGN §13.1): the anthropic SDK's types, beta included ----------

_SDK: Final = "anthropic SDK types."
_BETA: Final = "anthropic SDK types.beta."
_STREAMING: Final = "https://docs.anthropic.com/en/docs/build-with-claude/streaming"

# Content blocks and deltas (``content_block_start``'s ``content_block.type``, ``content_block_delta``'s
# ``delta.type``). READ ones have their handlers below (a test checks both agree); INFORMATIONAL ones are
# counted (``block.<type>`` / the delta's type) and carry nothing to read; anything else is unread content.
CONTENT: Final = MappingProxyType(
    {
        "text": read(_SDK + "TextBlock", "answer text (its citations are not text)"),
        "thinking": read(_SDK + "ThinkingBlock", "reasoning"),
        "redacted_thinking": read(
            _SDK + "RedactedThinkingBlock", "reasoning whose text is encrypted: reasoning with no text"
        ),
        "tool_use": read(_SDK + "ToolUseBlock", "a tool call the agent runs (see tools)"),
        "server_tool_use": read(_SDK + "ServerToolUseBlock", "a tool call the provider runs: server_side"),
        "mcp_tool_use": read(_BETA + "BetaMCPToolUseBlock", "an MCP call the provider makes: server_side"),
        **{
            kind: informational(source, "a hosted tool's result for the model; an error one is counted")
            for kind, source in (
                ("web_search_tool_result", _SDK + "WebSearchToolResultBlock"),
                ("web_fetch_tool_result", _SDK + "WebFetchToolResultBlock"),
                ("code_execution_tool_result", _SDK + "CodeExecutionToolResultBlock"),
                ("bash_code_execution_tool_result", _SDK + "BashCodeExecutionToolResultBlock"),
                ("text_editor_code_execution_tool_result", _SDK + "TextEditorCodeExecutionToolResultBlock"),
                ("tool_search_tool_result", _SDK + "ToolSearchToolResultBlock"),
                ("mcp_tool_result", _BETA + "BetaMCPToolResultBlock"),
                ("advisor_tool_result", _BETA + "BetaAdvisorToolResultBlock"),
            )
        },
        "container_upload": informational(_SDK + "ContainerUploadBlock", "a file put in the code container"),
        "mcp_tool_listing": informational(_BETA + "BetaMCPToolListingBlock", "the tools an MCP server lists"),
        "compaction": informational(
            _BETA + "BetaCompactionBlock", "a summary of the earlier context, to send back: not the answer"
        ),
        "fallback": informational(_BETA + "BetaFallbackBlock", "where one model hands over to the next"),
        # deltas
        "text_delta": read(_SDK + "TextDelta", "answer text"),
        "thinking_delta": read(_SDK + "ThinkingDelta", "reasoning"),
        "input_json_delta": read(
            _SDK + "InputJSONDelta", "a fragment of a tool call's input (partial JSON until the block stops)"
        ),
        "signature_delta": informational(_SDK + "SignatureDelta", "a thinking block's signature"),
        "citations_delta": informational(_SDK + "CitationsDelta", "a citation for the text: not text"),
        "compaction_delta": informational(_BETA + "BetaCompactionContentBlockDelta", "the summary, streamed"),
    }
)
# Tool kinds: the blocks that are calls, and the provider's own (server) tools by name.
_SERVER_TOOLS: Final = (
    "web_search",
    "web_fetch",
    "code_execution",
    "bash_code_execution",
    "text_editor_code_execution",
    "tool_search_tool_regex",
    "tool_search_tool_bm25",
    "advisor",  # beta
)
TOOLS: Final = MappingProxyType(
    {
        "tool_use": read(_SDK + "ToolUseBlock", "the agent runs it: a ToolCall once its input parses"),
        "server_tool_use": read(_SDK + "ServerToolUseBlock", "the provider runs it: a server_side ToolCall"),
        "mcp_tool_use": read(_BETA + "BetaMCPToolUseBlock", "the provider calls the MCP server: server_side"),
        **{
            f"server_tool_use.{name}": read(_SDK + "ServerToolUseBlock.name", "the provider runs it")
            for name in _SERVER_TOOLS
        },
    }
)
# Stop reasons (``StopReason``, ``BetaStopReason``): each with the unified reason it reads as. A whole answer
# only for ``whole_answers`` below.
_STOPS: Final = {
    "end_turn": (FinishReason.STOP, read(_SDK + "StopReason", "the model's natural end: a whole answer")),
    "stop_sequence": (
        FinishReason.STOP,
        read(_SDK + "StopReason", "a stop sequence matched: whole"),
    ),
    "tool_use": (FinishReason.TOOL_CALLS, read(_SDK + "StopReason", "the turn ends on tool calls: whole")),
    "max_tokens": (FinishReason.LENGTH, read(_SDK + "StopReason", "the output limit: not whole")),
    "model_context_window_exceeded": (
        FinishReason.LENGTH,
        read(_SDK + "StopReason", "the context window is full: not whole"),
    ),
    "refusal": (FinishReason.CONTENT_FILTER, read(_SDK + "StopReason", "the model declined: not whole")),
    "pause_turn": (
        FinishReason.OTHER,
        read(_SDK + "StopReason", "a server-tool turn paused: send it back"),
    ),
    "compaction": (
        FinishReason.OTHER,
        read(_BETA + "BetaStopReason", "paused after compacting"),
    ),
}
FINISHES: Final = MappingProxyType({raw: decided for raw, (_, decided) in _STOPS.items()})
_FINISH: Final = {raw: reason for raw, (reason, _) in _STOPS.items()}
# Stream events (``RawMessageStreamEvent``; ``ping`` and ``error`` from the streaming reference), and the
# fields inside them that the SDK defines: ``message_start.message.*``, ``message_delta.*``,
# ``message_delta.delta.*`` and ``usage.*`` (the usage of both events).
_READ_USAGE: Final = {
    "input_tokens": "the prompt not cached",
    "output_tokens": "the output (message_delta's, cumulative)",
    "cache_creation_input_tokens": "prompt written to the cache: part of the prompt",
    "cache_read_input_tokens": "prompt read from the cache: part of the prompt, and the cached tokens",
}
EVENTS: Final = MappingProxyType(
    {
        "message_start": read(_SDK + "RawMessageStartEvent", "the message's id, model and prompt usage"),
        "content_block_start": read(_SDK + "RawContentBlockStartEvent", "a block starts: see content"),
        "content_block_delta": read(_SDK + "RawContentBlockDeltaEvent", "a block's delta: see content"),
        "content_block_stop": read(
            _SDK + "RawContentBlockStopEvent", "a block ends; a tool call's input is complete if it parses"
        ),
        "message_delta": read(_SDK + "RawMessageDeltaEvent", "the stop reason, cumulative usage"),
        "message_stop": read(_SDK + "RawMessageStopEvent", "the terminal event: the finish"),
        "ping": read(_STREAMING + "#ping-events", "a keepalive, not progress"),
        "error": read(_STREAMING + "#error-events", "the provider's error (an object, or a string)"),
        "message_start.message.id": read(_SDK + "Message.id", "the response id"),
        "message_start.message.model": read(_SDK + "Message.model", "the model that answered"),
        "message_start.message.usage": read(_SDK + "Message.usage", "the prompt's usage"),
        "message_start.message.content": read(
            _SDK + "Message.content", "empty when streamed; blocks here are unread content"
        ),
        **{
            f"message_start.message.{name}": informational(_SDK + "Message", "bookkeeping, or null here")
            for name in (
                "type",
                "role",
                "container",
                "diagnostics",
                "stop_details",
                "stop_reason",
                "stop_sequence",
                "context_management",
                "input_transformations",
            )
        },
        "message_delta.delta": read(_SDK + "RawMessageDeltaEvent.delta", "the stop reason"),
        "message_delta.usage": read(_SDK + "MessageDeltaUsage", "cumulative usage"),
        "message_delta.context_management": informational(
            _BETA + "BetaRawMessageDeltaEvent", "context edits the API applied"
        ),
        "message_delta.input_transformations": informational(
            _BETA + "BetaRawMessageDeltaEvent", "changes the API made to the input"
        ),
        "message_delta.delta.stop_reason": read(_SDK + "StopReason", "the finish: see finishes"),
        "message_delta.delta.stop_sequence": informational(_SDK + "RawMessageDeltaEvent", "which matched"),
        "message_delta.delta.stop_details": informational(_SDK + "RefusalStopDetails", "why it refused"),
        "message_delta.delta.container": informational(_SDK + "Container", "the code container's id"),
        **{f"usage.{name}": read(_SDK + "Usage", means) for name, means in _READ_USAGE.items()},
        **{
            f"usage.{name}": informational(_SDK + "Usage", "bookkeeping")
            for name in (
                "cache_creation",  # the cache writes by time to live: already in cache_creation_input_tokens
                "server_tool_use",  # hosted tool requests (web searches, fetches)
                "service_tier",
                "inference_geo",
                "output_tokens_details",
                "speed",
                "iterations",  # beta: per-iteration usage of compaction, advisor and fallback turns
                "fallback_credit",  # beta
            )
        },
    }
)
DEFINITIONS: Final = Definitions(events=EVENTS, content=CONTENT, tools=TOOLS, finishes=FINISHES)
_TOOL_BLOCKS: Final = {"tool_use": False, "server_tool_use": True, "mcp_tool_use": True}
_INFORMATIONAL: Final = frozenset(
    kind for kind, decided in CONTENT.items() if decided.decision is Decision.INFORMATIONAL
)
_PING: Final = Keepalive("ping")
_MAX_BLOCKS: Final = 4096
# A text delta's text follows this in a compact event; a stream whose text deltas keep missing their template
# is read the long way after this many templates that read nothing (each block's text has one of its own).
_TEXT_MARKER: Final = '"text_delta","text":'
_MAX_TEMPLATES: Final = 3
_BLOCK_DELTA: Final = "content_block_delta"
_META: Final = metadata_constants(
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
)

_Handler = Callable[["AnthropicAdapter", dict[str, Any], int], list[StreamEvent]]


class AnthropicAdapter(Adapter):
    name = "anthropic"
    whole_answers = frozenset(
        {
            "end_turn",  # Anthropic Messages stop_reason: the model's natural end
            "stop_sequence",  # Anthropic: a custom stop sequence matched
            "tool_use",  # Anthropic: the turn ends on tool calls
        }
    )
    default_headers = MappingProxyType({"accept": "text/event-stream", "anthropic-version": "2023-06-01"})

    __slots__ = ("_blocks", "_cached", "_hit", "_input", "_template", "_templates")

    def __init__(self) -> None:
        super().__init__()
        # The stream's common event (a text delta) as bytes apart from its text, once one was read whole:
        # later ones are read by their text alone (``TextTemplate``).
        self._template: TextTemplate | None = None
        self._templates = 0  # templates that read no event
        self._hit = False  # the template in use read an event
        self._blocks: set[int] | None = set()  # indices of the blocks that started (None: too many to follow)
        self._input: int | None = None
        self._cached: int | None = None

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        out["stream"] = True
        base = base_url.rstrip("/")
        return (f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"), out

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
        template = self._template
        if template is not None and event.event == _BLOCK_DELTA:
            text = template.text(data)
            if text is not None:
                self._hit = True
                return self._templated(text)
        payload = self.load(data, index)
        kind = payload.get("type")
        if event.event == "error" and kind != "error":
            return self.error(payload, "event=error")  # an event named error is one, whatever its data
        if type(kind) is not str:
            if payload.get("error") is not None:
                return self.error(payload)
            marker = error_marker(payload, None)
            if marker is not None:
                return self.error(payload, marker)
            kind = event.event
        elif event.event != kind and event.event != "message":
            self.note("event_name_mismatch")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            out = handler(self, payload, index)
            if kind == _BLOCK_DELTA and event.event == kind and self._templates < _MAX_TEMPLATES:
                self._remember(data, payload)
            return out
        if kind == "message":
            raise ProtocolViolation(UNEXPECTED_EVENT, index)  # neither a type nor an event name
        marker = error_marker(payload, None)
        if marker is not None:
            return self.error(payload, marker)
        # A type in no table may carry the answer (the provider moved it): never a whole answer unread.
        self.note("unknown_event")
        self.note(UNREAD_CONTENT)
        return [Metadata(kind if len(kind) <= 64 else "unknown")]

    # -- handlers -------------------------------------------------------------------------------------------

    def _on_message_start(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        message = as_dict(payload.get("message")) or {}
        self.seen(message.get("id"), message.get("model"))
        out: list[StreamEvent] = [Metadata("message_start", self.response_id, self.model)]
        if message.get("content"):  # documented empty: content here is not streamed, and not read
            self.unread("message_start.content")
        usage = as_dict(message.get("usage"))
        if usage is not None:
            # Its output_tokens is a placeholder (1): the count arrives with message_delta. Never report it.
            out.append(self._usage(usage, output=False))
        return out

    def _usage(self, usage: Mapping[str, Any], *, output: bool = True) -> Usage:
        fresh = as_count(usage.get("input_tokens"))
        cached = as_count(usage.get("cache_read_input_tokens"))
        written = as_count(usage.get("cache_creation_input_tokens"))
        if fresh is not None or cached is not None or written is not None:
            self._input = add(add(fresh, cached), written)
            self._cached = cached if cached is not None else self._cached
        return Usage(
            input_tokens=self._input,
            output_tokens=as_count(usage.get("output_tokens")) if output else None,
            cached_tokens=self._cached,
        )

    def _on_block_start(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        block = as_dict(payload.get("content_block")) or {}
        kind = as_str(block.get("type"))
        out: list[StreamEvent] = []
        if self._call is not None:
            self.close_call(out)
        position = payload.get("index")
        position = position if type(position) is int else 0
        blocks = self._blocks
        if blocks is not None:
            if len(blocks) < _MAX_BLOCKS:
                blocks.add(position)
            else:
                self._blocks = None
        if kind in _TOOL_BLOCKS:
            call_id = as_str(block.get("id")) or self.next_call_id()
            call = OpenCall(position, call_id, as_str(block.get("name")) or "", position, _TOOL_BLOCKS[kind])
            start = block.get("input")
            if start and isinstance(start, dict):
                call.final = json.dumps(start, separators=(",", ":"))  # used only if no delta follows
            self.open_call(out, call)
            return out
        if kind == "text":
            text = block.get("text")
            if text and isinstance(text, str):
                out.append(self.text_delta(text))
            elif text:
                self.note(UNREAD_CONTENT)
        elif kind == "thinking":
            thinking = block.get("thinking")
            if thinking and isinstance(thinking, str):
                out.append(self.reasoning_delta(thinking))
        elif kind == "redacted_thinking":
            out.append(self.reasoning_delta(""))  # the model reasoned; its text is encrypted
        elif kind in _INFORMATIONAL:
            self.count_key(f"block.{kind}")
            result = block.get("content")
            if block.get("is_error") is True or (
                type(result) is dict and str(result.get("type", "")).endswith("_error")
            ):
                self.count_key(f"block.{kind}.error")  # the hosted tool failed; the model reads why
        else:
            self.unread(f"block.{kind}" if isinstance(kind, str) else "block.untyped")
        if not out:
            out.append(_META["content_block_start"])
        return out

    def _remember(self, data: str, payload: dict[str, Any]) -> None:
        """A text delta read whole (its block known, so it stays known): its template. ``_on_text`` reads
        the delta's text alone, so the template need only prove that the text is what changes."""
        delta = payload.get("delta")
        if type(delta) is dict and delta.get("type") == "text_delta":
            text = delta.get("text")
            if text and type(text) is str:
                if not self._hit:
                    self._templates += 1
                self._hit = False
                self._template = TextTemplate.of(data, payload, _TEXT_MARKER, _delta_of, "text")

    def _templated(self, text: str) -> list[StreamEvent]:
        """An event that is the template with another text: what ``_on_block_delta`` makes of such an event
        (its kind counted, the open call closed before text), without the parse."""
        keys = self.delta_keys
        if "text_delta" in keys:
            keys["text_delta"] += 1
        else:
            self.count_key("text_delta")
        if self._call is None:
            return [self.text_delta(text)]
        out: list[StreamEvent] = []
        self.close_call(out)
        out.append(self.text_delta(text))
        return out

    def _check_block(self, payload: dict[str, Any], index: int) -> None:
        position = payload.get("index")
        blocks = self._blocks
        if type(position) is int and blocks is not None and position not in blocks:
            raise ProtocolViolation(UNKNOWN_BLOCK, index)

    def _on_block_delta(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self._check_block(payload, index)
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            delta = {}
        kind = delta.get("type")
        if not kind or not isinstance(kind, str):
            kind = "unknown"
        keys = self.delta_keys
        if kind in keys:
            keys[kind] += 1
        else:
            self.count_key(kind)
        return self.block_delta(kind, delta, payload, index)

    def block_delta(
        self, kind: str, delta: dict[str, Any], payload: dict[str, Any], index: int
    ) -> list[StreamEvent]:
        """A content-block delta of type ``kind`` (already counted in ``delta_keys``)."""
        handler = _DELTAS.get(kind)
        if handler is not None:
            return handler(self, delta, payload, index)
        if kind not in _INFORMATIONAL:
            self.note(UNREAD_CONTENT)
        return [_META["content_block_delta"]]

    def _on_text(self, delta: dict[str, Any], payload: dict[str, Any], index: int) -> list[StreamEvent]:
        text = delta.get("text")
        if not text or not isinstance(text, str):
            if text:
                self.note(UNREAD_CONTENT)
            return [_META["content_block_delta"]]
        if self._call is None:
            return [self.text_delta(text)]
        out: list[StreamEvent] = []
        self.close_call(out)
        out.append(self.text_delta(text))
        return out

    def _on_thinking(self, delta: dict[str, Any], payload: dict[str, Any], index: int) -> list[StreamEvent]:
        text = delta.get("thinking")
        if not text or not isinstance(text, str):
            if text:
                self.note(UNREAD_CONTENT)
            return [_META["content_block_delta"]]
        if self._call is None:
            return [self.reasoning_delta(text)]
        out: list[StreamEvent] = []
        self.close_call(out)
        out.append(self.reasoning_delta(text))
        return out

    def _on_json(self, delta: dict[str, Any], payload: dict[str, Any], index: int) -> list[StreamEvent]:
        call = self._call
        if call is None or payload.get("index", call.key) != call.key:
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        text = delta.get("partial_json")
        if not text or not isinstance(text, str):
            return [_META["content_block_delta"]]
        call.final = None
        call.parts.append(text)
        return [ToolInputDelta(call.call_id, text)]

    def _on_block_stop(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        self._check_block(payload, index)
        call = self._call
        if call is not None and payload.get("index", call.key) == call.key and call.complete():
            out: list[StreamEvent] = []
            self.close_call(out)
            return out
        return [_META["content_block_stop"]]

    def _on_message_delta(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        delta = as_dict(payload.get("delta")) or {}
        reason = raw_reason(delta.get("stop_reason"))
        if reason is not None:
            self.finish_raw = reason
        usage = as_dict(payload.get("usage"))
        if usage is not None:
            return [self._usage(usage)]
        return [_META["message_delta"]]

    def _on_message_stop(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        raw = self.finish_raw
        self.finish(out, _FINISH.get(raw, FinishReason.OTHER) if raw else FinishReason.OTHER, raw)
        return out

    def _on_ping(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        return [_PING]

    def _on_error(self, payload: dict[str, Any], index: int) -> list[StreamEvent]:
        return self.error(payload)


def _delta_of(payload: dict[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = payload["delta"]
    return delta


_DeltaHandler = Callable[[AnthropicAdapter, dict[str, Any], dict[str, Any], int], list[StreamEvent]]

_DELTAS: Final[dict[str, _DeltaHandler]] = {
    "text_delta": AnthropicAdapter._on_text,
    "thinking_delta": AnthropicAdapter._on_thinking,
    "input_json_delta": AnthropicAdapter._on_json,
}

_HANDLERS: Final[dict[str, _Handler]] = {
    "message_start": AnthropicAdapter._on_message_start,
    "content_block_start": AnthropicAdapter._on_block_start,
    "content_block_delta": AnthropicAdapter._on_block_delta,
    "content_block_stop": AnthropicAdapter._on_block_stop,
    "message_delta": AnthropicAdapter._on_message_delta,
    "message_stop": AnthropicAdapter._on_message_stop,
    "ping": AnthropicAdapter._on_ping,
    "error": AnthropicAdapter._on_error,
}


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """A message: its start, each content block started whole and stopped, its stop reason and usage."""
    content = answer.get("content")
    if not isinstance(content, list) or answer.get("type", "message") != "message":
        return None
    start = {key: answer[key] for key in ("id", "model", "role", "usage") if key in answer}
    frames: Frames = [{"type": "message_start", "message": {**start, "content": []}}]
    for index, block in enumerate(content):
        frames.append({"type": "content_block_start", "index": index, "content_block": block})
        frames.append({"type": "content_block_stop", "index": index})
    stop = {key: answer.get(key) for key in ("stop_reason", "stop_sequence")}
    usage = {"usage": answer["usage"]} if type(answer.get("usage")) is dict else {}
    frames.append({"type": "message_delta", "delta": stop, **usage})
    if answer.get("stop_reason") is not None:  # no stop reason: the answer never said it ended
        frames.append({"type": "message_stop"})
    return frames
