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
* Line and message fields other than those read or known to carry no text (timings, ``context``,
  ``logprobs``; ``images``, ``tool_name``) are counted in ``delta_keys`` and noted as ``unread_content``
  (a generated ``image``, say).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from .._events import FinishReason, Metadata, ProtocolViolation, StreamEvent, Usage
from .._sse import SSEEvent
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
# Message fields read (role, content, thinking, tool_calls) or known to carry no answer text.
_MESSAGE_KEYS: Final = frozenset({"role", "content", "thinking", "tool_calls", "images", "tool_name"})
# Line fields read, or known to carry no answer text (timings, the generate context, logprobs, a cloud model's
# remote, an image generation's progress). Anything else (a generated "image") is content not read.
_LINE_KEYS: Final = frozenset(
    {
        *("model", "created_at", "message", "response", "thinking", "done", "done_reason", "error"),
        *("total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration"),
        *("eval_count", "eval_duration", "context", "logprobs", "remote_model", "remote_host"),
        *("completed", "total"),
    }
)
_FINISHES: Final = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


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

    def _on_data(self, event: SSEEvent, data: str, index: int) -> list[StreamEvent]:
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
