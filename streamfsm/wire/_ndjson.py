"""An incremental newline-delimited JSON decoder (NDJSON, JSON Lines), fed raw bytes: Ollama's own API.

Each line is one frame, handed to the format's adapter as an ``Frame`` of that line's text (one frame type
for every framing, so the adapters read any of them the same way); the adapter parses it. A line ends at
``\\n``; a ``\\r`` before it is JSON whitespace and left to the parser. A line longer than ``max_line_bytes``
raises ``ProtocolViolation("line_too_long", offset)`` as the SSE decoder does. At EOF a last line without
its ``\\n`` is never a frame: ``close()`` sets ``truncated`` (a torn line is not a finish; Ollama ends every
line it streams). One exception: a body with no line end at all that parses as JSON is a JSON document where
NDJSON was due (an error object, an answer to ``"stream": false``): it is handed over as the one line it is,
as Ollama's client reads it.
"""

from __future__ import annotations

import json

from ._events import ProtocolViolation
from ._sse import MAX_LINE_BYTES, Frame


class NDJSONDecoder:
    """Feed it the body's bytes as they arrive; it returns the lines each chunk completed, as frames."""

    __slots__ = (
        "_lines_ended",
        "_more",
        "_more_len",
        "_too_long_at",
        "bytes_seen",
        "events_seen",
        "max_line_bytes",
        "truncated",
    )

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self.max_line_bytes = max_line_bytes
        self.bytes_seen = 0
        self.events_seen = 0
        self.truncated = False
        self._more: list[bytes] = []  # the unterminated tail, in the pieces it came in (joined once it ends)
        self._more_len = 0
        self._too_long_at: int | None = None  # the offset of a line past the bound: every later call raises
        self._lines_ended = False  # a line end arrived: the body is NDJSON, not one JSON document

    def feed(self, chunk: bytes) -> list[Frame]:
        if self._too_long_at is not None:
            raise ProtocolViolation("line_too_long", self._too_long_at)
        if not chunk:
            return []
        self.bytes_seen += len(chunk)
        if 10 not in chunk:
            self._more.append(chunk)
            self._more_len += len(chunk)
            if self._more_len > self.max_line_bytes:
                return self._fail([], self.bytes_seen - self._more_len)
            return []
        self._lines_ended = True
        buf = b"".join((*self._more, chunk)) if self._more else chunk
        lines = buf.split(b"\n")
        tail = lines.pop()
        self._more = [tail] if tail else []
        self._more_len = len(tail)
        limit = self.max_line_bytes
        start = self.bytes_seen - len(buf)  # the stream offset of buf's first byte
        frames: list[Frame] = []
        for line in lines:
            if len(line) > limit:
                return self._fail(frames, start)
            frames.append(Frame(line.decode("utf-8", "replace")))
            start += len(line) + 1
        if len(tail) > limit:
            return self._fail(frames, start)
        self.events_seen += len(frames)
        return frames

    def close(self) -> list[Frame]:
        """End of stream: a last line without its line end is no frame; ``truncated`` tells if one was due."""
        if self._too_long_at is not None:
            raise ProtocolViolation("line_too_long", self._too_long_at)
        tail = b"".join(self._more)
        self._more = []
        self._more_len = 0
        if not self._lines_ended and tail.strip():
            try:
                json.loads(tail)
            except (ValueError, RecursionError):
                pass
            else:  # a JSON document, not a torn line
                self.events_seen += 1
                return [Frame(tail.decode("utf-8", "replace"))]
        self.truncated = bool(tail.strip())
        return []

    def _fail(self, frames: list[Frame], offset: int) -> list[Frame]:
        self._more = []
        self._more_len = 0
        self._too_long_at = offset
        if frames:
            # The lines before the long one first; raise on the next call (split-point invariance).
            self.events_seen += len(frames)
            return frames
        raise ProtocolViolation("line_too_long", offset)
