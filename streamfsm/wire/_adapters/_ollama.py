"""Ollama's own API (``/api/chat``, ``/api/generate``): NDJSON, one JSON object per line, no SSE.

Wire (https://github.com/ollama/ollama/blob/main/docs/api.md): lines ``{"model", "created_at", "message":
{"role", "content", "thinking", "tool_calls"}, "done": false}`` (chat) or ``{"model", "created_at",
"response", "thinking", "done": false}`` (generate); the last line has ``"done": true``, ``done_reason`` and
the counts (``prompt_eval_count`` in, ``eval_count`` out). A failure mid-stream is a line
``{"error": "..."}``; before the stream, an HTTP status with an ``{"error": "..."}`` body. Ollama streams
unless the request says ``"stream": false``; then its answer is one JSON object of the same shape as the
last line (read by the non-streaming path as one frame).

Judgement calls:

* The ``done: true`` line is terminal: its counts, then the finish. Its ``done_reason`` is read against the
  whole-answer set (``stop``); anything else (``length``, ``load``, ``unload``, none at all as older servers
  sent) is not a whole answer. A ``stop`` after tool calls is ``TOOL_CALLS``.
* Tool calls arrive whole, arguments as an object (usually in one line): each is a whole call (``call_id``
  is its ``id``, else ``call_{n}``); arguments that are a string that does not parse stay an open call, so
  the run fails as ``tool_input_unfinished``.
* A first line that is not JSON and does not open like an object (an HTML page, garbage) is no NDJSON
  stream at all: ``not_event_stream``, as an SSE format fails such a body; any other line that does not
  parse (a pretty-printed document's first line ``{`` included) is ``malformed_json``.
* Every line, message and tool-call field the client's types define, and every ``done_reason`` the API
  reference gives, has a decision in ``DEFINITIONS``. Fields neither read nor informational (a generated
  ``image``), and fields no decision names, are counted in ``delta_keys`` and noted as ``unread_content``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from .._definitions import Decision, Definitions, informational, not_understood, read
from .._events import FinishReason, Metadata, ProtocolViolation, StreamEvent, Usage
from .._sse import Frame
from ._base import (
    MALFORMED_JSON,
    NOT_EVENT_STREAM,
    UNEXPECTED_SHAPE,
    Adapter,
    Frames,
    as_arguments,
    as_count,
    as_dict,
    as_str,
    error_marker,
    raw_reason,
)

_CHUNK: Final = Metadata("ollama_chunk")

# -- what the provider defines, decided (DESIGN §13.1): the ollama client's types and the API reference ------

_T: Final = "ollama client ollama._types."
_API: Final = "https://github.com/ollama/ollama/blob/main/docs/api.md"
# A line's fields (``ChatResponse``, ``GenerateResponse``; ``error`` and a cloud model's ``remote_*`` from the
# API reference).
EVENTS: Final = MappingProxyType(
    {
        "model": read(_T + "BaseGenerateResponse", "the model that answered"),
        "done": read(_T + "BaseGenerateResponse", "true on the last line: its counts, then the finish"),
        "done_reason": read(_T + "BaseGenerateResponse", "the finish: see finishes"),
        "prompt_eval_count": read(_T + "BaseGenerateResponse", "the prompt's tokens"),
        "eval_count": read(_T + "BaseGenerateResponse", "the output's tokens"),
        "message": read(_T + "ChatResponse", "the chat line's message: see content"),
        "response": read(_T + "GenerateResponse", "the generate line's text"),
        "thinking": read(_T + "GenerateResponse", "the generate line's reasoning"),
        "error": read(_API + "#errors", "a failure mid-stream: the provider's error (a string)"),
        "image": not_understood(_T + "GenerateResponse", "a generated image: content not read"),
        **{
            name: informational(_T + "BaseGenerateResponse", "timings and bookkeeping")
            for name in (
                "created_at",
                "total_duration",
                "load_duration",
                "prompt_eval_duration",
                "eval_duration",
            )
        },
        "context": informational(_T + "GenerateResponse", "the generate context, to send back"),
        "logprobs": informational(_T + "ChatResponse", "log probabilities"),
        "completed": informational(_T + "GenerateResponse", "an image generation's progress"),
        "total": informational(_T + "GenerateResponse", "an image generation's progress"),
        "remote_model": informational(_API, "a cloud model's name"),
        "remote_host": informational(_API, "a cloud model's host"),
    }
)
# A chat message's fields (``Message``).
CONTENT: Final = MappingProxyType(
    {
        "content": read(_T + "Message", "answer text"),
        "thinking": read(_T + "Message", "reasoning"),
        "tool_calls": read(_T + "Message", "whole calls, arguments as an object; several in one line"),
        "role": informational(_T + "Message", "always the assistant"),
        "images": informational(_T + "Message", "images sent in, echoed: no answer"),
        "tool_name": informational(_T + "Message", "a tool result's tool: no answer"),
    }
)
# A tool call's fields (``Message.ToolCall``; ``id`` and ``function.index`` from the API reference).
TOOLS: Final = MappingProxyType(
    {
        "function": read(_T + "Message.ToolCall", "a function the agent runs: a whole call"),
        "function.name": read(_T + "Message.ToolCall.Function", "its name"),
        "function.arguments": read(_T + "Message.ToolCall.Function", "an object (a string that parses, too)"),
        "id": read(_API + "#chat-request-with-tools", "its id, when the server sends one"),
        "function.index": informational(_API + "#chat-request-with-tools", "its position"),
    }
)
# ``done_reason`` values (the API reference; the server's DoneReason strings).
_STOPS: Final = {
    "stop": (
        FinishReason.STOP,
        read(_API, "the natural end: whole (TOOL_CALLS after calls)"),
    ),
    "length": (FinishReason.LENGTH, read(_API, "the output limit: not whole")),
    "load": (FinishReason.OTHER, read(_API, "a request that only loaded the model: no answer")),
    "unload": (FinishReason.OTHER, read(_API, "a request that only unloaded the model: no answer")),
    "connection_closed": (FinishReason.OTHER, read(_API, "the runner's connection closed: not whole")),
}
FINISHES: Final = MappingProxyType({raw: decided for raw, (_, decided) in _STOPS.items()})
_FINISHES: Final = {raw: reason for raw, (reason, _) in _STOPS.items()}
DEFINITIONS: Final = Definitions(events=EVENTS, content=CONTENT, tools=TOOLS, finishes=FINISHES)
# The fields known to exist and not unread content: read, or informational.
_LINE_KEYS: Final = frozenset(k for k, d in EVENTS.items() if d.decision is not Decision.NOT_UNDERSTOOD)
_MESSAGE_KEYS: Final = frozenset(k for k, d in CONTENT.items() if d.decision is not Decision.NOT_UNDERSTOOD)


def ollama_usage(payload: Mapping[str, Any]) -> Usage | None:
    prompt, output = as_count(payload.get("prompt_eval_count")), as_count(payload.get("eval_count"))
    if prompt is None and output is None:
        return None
    return Usage(input_tokens=prompt, output_tokens=output)


class OllamaAdapter(Adapter):
    name = "ollama"
    default_headers = MappingProxyType({"accept": "application/x-ndjson"})
    whole_answers = frozenset({"stop"})  # done_reason "stop" (after tool calls too: then TOOL_CALLS)

    __slots__ = ("_saw_calls", "_started")

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._saw_calls = False

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """``/api/chat`` for a body with ``messages``, else ``/api/generate``."""
        out = dict(body)
        if not isinstance(out.get("model"), str) or not out["model"]:
            raise ValueError("an ollama request body needs 'model' (e.g. 'llama3.2')")
        out["stream"] = True
        base = base_url.rstrip("/").removesuffix("/api")
        return f"{base}/api/{'chat' if 'messages' in out else 'generate'}", out

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
        try:
            payload = self.load(data, index)
        except ProtocolViolation as exc:
            if exc.detail == MALFORMED_JSON and not self._started and not data.lstrip().startswith("{"):
                raise ProtocolViolation(NOT_EVENT_STREAM, index) from None
            raise
        if payload.get("error") is not None:
            return self.error(payload)
        if "done" not in payload:
            marker = error_marker(payload, event.event)
            if marker is not None:
                return self.error(payload, marker)
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            self.seen(None, payload.get("model"))
            out.append(Metadata("ollama_chunk", None, self.model))
        for key in payload:
            if key not in _LINE_KEYS:
                self.unread(key)
        message = payload.get("message")
        if message is not None:
            message = as_dict(message)
            if message is None:
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            self._message(message, out, index)
        else:  # /api/generate
            self._text(payload.get("thinking"), "thinking", out, reasoning=True)
            self._text(payload.get("response"), "response", out)
        if payload.get("done") is True:
            usage = ollama_usage(payload)
            if usage is not None:
                out.append(usage)
            raw = raw_reason(payload.get("done_reason"))
            self.finish_raw = raw
            reason = _FINISHES.get(raw or "", FinishReason.OTHER)
            if reason is FinishReason.STOP and self._saw_calls:
                reason = FinishReason.TOOL_CALLS
            self.finish(out, reason, raw)
        if not out:
            out.append(_CHUNK)
        return out

    def _text(self, value: object, key: str, out: list[StreamEvent], reasoning: bool = False) -> None:
        if value is None or value == "":
            return
        self.count_key(key)
        if not isinstance(value, str):
            self.unread(key)
        elif reasoning:
            out.append(self.reasoning_delta(value))
        else:
            out.append(self.text_delta(value))

    def _message(self, message: dict[str, Any], out: list[StreamEvent], index: int) -> None:
        for key in message:
            if key not in _MESSAGE_KEYS:
                self.unread(f"message.{key}")
        self._text(message.get("thinking"), "message.thinking", out, reasoning=True)
        self._text(message.get("content"), "message.content", out)
        calls = message.get("tool_calls")
        if not calls:
            return
        if not isinstance(calls, list):
            raise ProtocolViolation(UNEXPECTED_SHAPE, index)
        self.count_key("message.tool_calls")
        for call in calls:
            function = as_dict((as_dict(call) or {}).get("function"))
            if function is None:
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            self._saw_calls = True
            arguments = function.get("arguments")
            text = "{}" if arguments is None else as_arguments(arguments)
            if text is None:
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            call_id = as_str(call.get("id")) or self.next_call_id()
            self.whole_call(out, call_id, as_str(function.get("name")) or "", text, self._tool_count)


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """The answer to ``"stream": false``: the shape of its stream's last line."""
    return [answer] if "done" in answer else None
