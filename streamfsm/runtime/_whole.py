"""A non-streaming call's body: one JSON answer, read whole, then handed to the format's own adapter as the
frames its stream would have carried. One decoder per format, streaming or not: the text, reasoning, tool
calls (complete only when their arguments parse), usage and finish reason (read against the same
whole-answer tables) come out of the same adapter code.

What the body can say, beside a whole answer:

* cut mid-body (a transport fault) or stalled (a watchdog): the run's usual faults, nothing read yet;
* a clean end inside the JSON (``Content-Length`` honoured, the document unfinished): no terminal event,
  detail ``incomplete_body``; an empty body: detail ``empty_body``;
* an error object at 2xx (``{"error": {...}}``, ``{"type": "error", ...}``, a Responses ``status: failed``):
  the provider's error, marked ``body=whole_answer``;
* a Responses background request's first answer (``status`` ``queued`` or ``in_progress``): the call's end,
  ``completed.background`` (the answer is fetched later by its id);
* JSON that is not an answer of the format: ``unexpected_shape``; not JSON at all (an HTML page):
  ``malformed_json``; a body over ``MAX_ANSWER_BYTES``: ``answer_too_large``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..classify._provider import provider_error_from_document
from ._adapters import Adapter
from ._adapters._base import MALFORMED_JSON, UNEXPECTED_SHAPE, as_dict
from ._core import SseWire as _Wire
from ._events import ProtocolViolation, ProviderErrorEvent, StreamEvent
from ._record import Recorder
from ._sse import SSEEvent

MAX_ANSWER_BYTES: Final = 64 << 20  # a bigger "answer" is kept no further: the run fails, the SDK reads on
ANSWER_TOO_LARGE: Final = "answer_too_large"
INCOMPLETE_BODY: Final = "incomplete_body"
EMPTY_BODY: Final = "empty_body"
WHOLE_ANSWER_MARKER: Final = "body=whole_answer"  # the evidence of an error object in a 2xx answer's body
_BLANKS: Final = b" \t\r\n\xef\xbb\xbf"

Frames = list[dict[str, Any] | str]


class WholeBody(_Wire):
    """The body of a non-streaming answer: kept (bounded) as it arrives, read at its clean end."""

    __slots__ = ("_body", "_detail")

    def __init__(self, adapter: Adapter, rec: Recorder) -> None:  # no SSE decoder: not an event stream
        self.adapter, self.rec, self.feed = adapter, rec, adapter.feed
        rec.adapter = adapter
        rec.delta_keys = adapter.delta_keys
        self._head = None
        self._body = bytearray()
        self._detail: str | None = None

    def frames(self, chunk: bytes) -> list[Any]:
        self.rec.bytes_received += len(chunk)
        if len(self._body) + len(chunk) > MAX_ANSWER_BYTES:
            self._body = bytearray()  # the run outlives this (its response holds it): keep nothing
            raise ProtocolViolation(ANSWER_TOO_LARGE, 0)
        self._body += chunk
        return []

    def end(self) -> list[StreamEvent]:
        body, self._body = bytes(self._body), bytearray()
        text = body.strip(_BLANKS)
        if not text:
            self._detail = EMPTY_BODY
            return []
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            if _unfinished(exc):
                self._detail = INCOMPLETE_BODY
                return []
            raise ProtocolViolation(MALFORMED_JSON, 0) from None
        except (ValueError, RecursionError):
            raise ProtocolViolation(MALFORMED_JSON, 0) from None
        error = provider_error_from_document(payload, WHOLE_ANSWER_MARKER)
        if error is not None:
            return [ProviderErrorEvent(error)]
        adapter = self.adapter
        frames = _FRAMES[adapter.name](payload) if isinstance(payload, dict) else None
        if frames is None:
            raise ProtocolViolation(UNEXPECTED_SHAPE, 0)
        events: list[StreamEvent] = []
        for frame in frames:
            data = frame if isinstance(frame, str) else json.dumps(frame, separators=(",", ":"))
            events += adapter.feed(SSEEvent(data))
        return events + adapter.end()

    def eof_detail(self) -> str | None:
        return self._detail


def _unfinished(exc: json.JSONDecodeError) -> bool:
    """Whether the JSON failed only because it stopped: the error is at its very end, or in a string that
    never closed."""
    return exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string")


# -- each format's answer as the frames of its stream --------------------------------------------------------


def _chat(answer: dict[str, Any]) -> Frames | None:
    """A chat completion: each choice's ``message`` as one delta, then its ``finish_reason``, the usage, and
    ``[DONE]``."""
    choices = answer.get("choices")
    if not isinstance(choices, list):
        return None
    head: dict[str, Any] = {key: answer[key] for key in ("id", "model") if key in answer}
    deltas: Frames = []
    finishes: Frames = []
    for position, choice in enumerate(choices):
        if type(choice) is not dict:
            return None
        index = choice.get("index", position)
        message = choice.get("message")
        if type(message) is dict and isinstance(message.get("tool_calls"), list):
            calls = [
                {"index": n, **call} if type(call) is dict and "index" not in call else call
                for n, call in enumerate(message["tool_calls"])
            ]
            message = {**message, "tool_calls": calls}
        rest = {key: value for key, value in choice.items() if key not in ("message", "finish_reason")}
        deltas.append(
            {**head, "choices": [{**rest, "index": index, "delta": message, "finish_reason": None}]}
        )
        finish = {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
        finishes.append({**head, "choices": [finish]})
    usage = {"usage": answer["usage"]} if type(answer.get("usage")) is dict else {}
    return [*deltas, *finishes, {**head, "choices": [], **usage}, "[DONE]"]


def _anthropic(answer: dict[str, Any]) -> Frames | None:
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


# A background request's first answer (queued, in_progress) ends its call too: response.completed reads
# the status as sent, and that status is no whole answer (completed.background).
_TERMINALS: Final = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "queued": "response.completed",
    "in_progress": "response.completed",
}
_RESPONSE_TOOLS: Final = frozenset({"function_call", "custom_tool_call"})


def _responses(answer: dict[str, Any]) -> Frames | None:
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


def _gemini(answer: dict[str, Any]) -> Frames | None:
    """A ``GenerateContentResponse``: the very shape of one stream chunk."""
    return [answer] if "candidates" in answer or "promptFeedback" in answer else None


_FRAMES: Final[Mapping[str, Callable[[dict[str, Any]], Frames | None]]] = {
    "openai-chat": _chat,
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "gemini": _gemini,
}
