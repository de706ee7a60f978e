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
from typing import Any, Final

from ...classify import provider_error_from_document
from ...wire import (
    MALFORMED_JSON,
    UNEXPECTED_SHAPE,
    Adapter,
    Frame,
    ProtocolViolation,
    ProviderErrorEvent,
    StreamEvent,
    format_named,
)
from ..records._record import Recorder
from ._run_core import StreamWire

MAX_ANSWER_BYTES: Final = 64 << 20  # a bigger "answer" is kept no further: the run fails, the SDK reads on
ANSWER_TOO_LARGE: Final = "answer_too_large"
INCOMPLETE_BODY: Final = "incomplete_body"
EMPTY_BODY: Final = "empty_body"
WHOLE_ANSWER_MARKER: Final = "body=whole_answer"  # the evidence of an error object in a 2xx answer's body
_BLANKS: Final = b" \t\r\n\xef\xbb\xbf"


class WholeBody(StreamWire):
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
        frames = format_named(adapter.name).answer_frames(payload) if isinstance(payload, dict) else None
        if frames is None:
            raise ProtocolViolation(UNEXPECTED_SHAPE, 0)
        events: list[StreamEvent] = []
        for frame in frames:
            data = frame if isinstance(frame, str) else json.dumps(frame, separators=(",", ":"))
            events += adapter.feed(Frame(data))
        return events + adapter.end()

    def eof_detail(self) -> str | None:
        return self._detail


def _unfinished(exc: json.JSONDecodeError) -> bool:
    """Whether the JSON failed only because it stopped: the error is at its very end, or in a string that
    never closed."""
    return exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string")
