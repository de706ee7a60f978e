"""Google Gemini (``models/{model}:streamGenerateContent?alt=sse``): every event is a whole
``GenerateContentResponse`` chunk, and there is no terminal sentinel.

Judgement calls:

* The ``Finish`` is deferred to ``end()``: a chunk with ``finishReason`` may be followed by more chunks
  (trailing usage), and the machine accepts nothing after a finish. So a clean EOF after a ``finishReason``
  is a finish; an EOF without one leaves ``terminal_seen`` false (EOF without terminal); a cut after the
  ``finishReason`` chunk but before EOF is still a disconnect, as the stream had not ended.
* ``promptFeedback.blockReason`` (the prompt itself was refused, nothing generated) is a provider error of
  kind ``content_filter``, not a finish: the request must change before it can succeed.
* Usage: ``output_tokens`` is ``candidatesTokenCount + thoughtsTokenCount`` (Gemini counts thoughts apart;
  OpenAI and Anthropic include them), ``reasoning_tokens`` is ``thoughtsTokenCount``.
* Only candidate 0 is followed; ``functionCall`` parts are whole calls (``call_id`` is the part's ``id`` or
  ``call_{n}``); a ``STOP`` after function calls is ``TOOL_CALLS``. Parts with only a ``thoughtSignature``
  (or inline data, code execution) are bookkeeping; a part with a field not in ``_PART_KEYS``, or text that
  is not a string, is noted as ``unread_content`` (its field names are in ``delta_keys``).
* An in-band error is an ``error`` object, or a shape ``_base.error_marker`` names (``event: error``, a
  flat ``code`` + ``message`` from a proxy).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from ...classify import ProviderError, ProviderErrorKind
from .._events import (
    FinishReason,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    StreamEvent,
    Usage,
)
from .._sse import SSEEvent
from ._base import (
    UNEXPECTED_SHAPE,
    UNREAD_CONTENT,
    Adapter,
    Frames,
    as_count,
    as_dict,
    as_str,
    error_marker,
    raw_reason,
)

_CHUNK: Final = Metadata("generate_content_chunk")
_FILTERED: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
# Part fields read or known to carry no text (Gemini API ``Part``): anything else is UNREAD_CONTENT.
_PART_KEYS: Final = frozenset(
    {
        "text",
        "thought",  # true: the text is a thought summary (reasoning)
        "thoughtSignature",
        "functionCall",
        "functionResponse",
        "inlineData",  # images, audio: no text
        "fileData",
        "executableCode",  # code execution: the code the model ran, not answer text
        "codeExecutionResult",
        "videoMetadata",
        "partMetadata",
        "mediaResolution",
    }
)
_VERSIONED: Final = ("/v1beta", "/v1", "/v1alpha")


def gemini_finish(raw: str, saw_calls: bool) -> FinishReason:
    if raw == "STOP":
        return FinishReason.TOOL_CALLS if saw_calls else FinishReason.STOP
    if raw == "MAX_TOKENS":
        return FinishReason.LENGTH
    return FinishReason.CONTENT_FILTER if raw in _FILTERED else FinishReason.OTHER


def gemini_usage(usage: Mapping[str, Any]) -> Usage:
    thoughts = as_count(usage.get("thoughtsTokenCount"))
    candidates = as_count(usage.get("candidatesTokenCount"))
    output = candidates if thoughts is None or candidates is None else candidates + thoughts
    return Usage(
        input_tokens=as_count(usage.get("promptTokenCount")),
        output_tokens=output if output is not None else thoughts,
        reasoning_tokens=thoughts,
        cached_tokens=as_count(usage.get("cachedContentTokenCount")),
        total_tokens=as_count(usage.get("totalTokenCount")),
    )


class GeminiAdapter(Adapter):
    name = "gemini"
    whole_answers = frozenset({"stop"})  # Gemini / Vertex finishReason STOP (after calls: tool calls)

    __slots__ = ("_saw_calls", "_started")

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._saw_calls = False

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        model = out.pop("model", None)
        if not isinstance(model, str) or not model.removeprefix("models/"):
            raise ValueError("a gemini request body needs 'model' (e.g. 'gemini-2.5-flash')")
        model = quote(model.removeprefix("models/"), safe="-._~@")
        base = base_url.rstrip("/")
        if not base.endswith(_VERSIONED):
            base += "/v1beta"
        return f"{base}/models/{model}:streamGenerateContent?alt=sse", out

    def end(self) -> list[StreamEvent]:
        raw = self.finish_raw
        if raw is None or self.terminal_seen:
            return []
        out: list[StreamEvent] = []
        self.finish(out, gemini_finish(raw, self._saw_calls), raw)
        return out

    def _on_data(self, event: SSEEvent, data: str, index: int) -> list[StreamEvent]:
        payload = self.load(data, index)
        if payload.get("error") is not None:
            return self.error(payload)
        if event.event != "message" or "candidates" not in payload:  # every shape it names is one of these
            marker = error_marker(payload, event.event)
            if marker is not None:
                return self.error(payload, marker)
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            self.seen(payload.get("responseId"), payload.get("modelVersion"))
            out.append(Metadata("generate_content_chunk", self.response_id, self.model))
        feedback = as_dict(payload.get("promptFeedback"))
        if feedback is not None:
            blocked = as_str(feedback.get("blockReason"))
            if blocked:
                out.append(self._blocked(blocked))
                return out
        candidates = payload.get("candidates")
        if candidates:
            if not isinstance(candidates, list):
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            for candidate in candidates:
                if type(candidate) is not dict:
                    raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                position = candidate.get("index")
                if type(position) is int and position != 0:
                    self.note("extra_choice")
                    continue
                content = as_dict(candidate.get("content"))
                if content is not None:
                    parts = content.get("parts")
                    if parts:
                        if not isinstance(parts, list):
                            raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                        self._parts(parts, out, index)
                finish = raw_reason(candidate.get("finishReason"))
                if finish:
                    self.finish_raw = finish
        usage = as_dict(payload.get("usageMetadata"))
        if usage is not None:
            out.append(gemini_usage(usage))
        if not out:
            out.append(_CHUNK)
        return out

    def _parts(self, parts: list[Any], out: list[StreamEvent], index: int) -> None:
        count = self.count_key
        for part in parts:
            if type(part) is not dict:
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            unknown = False
            for key in part:
                count(key)
                if key not in _PART_KEYS:
                    unknown = True
            text = part.get("text")
            if text and isinstance(text, str):
                out.append(
                    self.reasoning_delta(text) if part.get("thought") is True else self.text_delta(text)
                )
                continue
            if unknown or (text is not None and text != ""):
                self.note(UNREAD_CONTENT)  # a part of a kind not read, or text that is not a string
            call = as_dict(part.get("functionCall"))
            if call is not None:
                self._saw_calls = True
                args = call.get("args")
                arguments = json.dumps(args, separators=(",", ":")) if isinstance(args, dict) else "{}"
                call_id = as_str(call.get("id")) or self.next_call_id()
                self.whole_call(out, call_id, as_str(call.get("name")) or "", arguments, self._tool_count)

    def _blocked(self, reason: str) -> ProviderErrorEvent:
        self.terminal_seen = True
        self._errored = True
        error = ProviderError(
            ProviderErrorKind.CONTENT_FILTER,
            type="prompt_blocked",
            code=reason,
            markers=("promptFeedback.blockReason",),
        )
        return ProviderErrorEvent(error)


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """A ``GenerateContentResponse``: the very shape of one stream chunk."""
    return [answer] if "candidates" in answer or "promptFeedback" in answer else None
