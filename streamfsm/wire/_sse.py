"""An incremental Server-Sent Events decoder (WHATWG "event stream interpretation"), fed raw bytes.

Why our own and not ``httpx-sse``: it drops comments (we need them: keepalives are evidence of a stall kept
alive), it cannot bound a line, and it is slower (``python -m benchmarks.sse`` measures both).

One departure from the spec: a line ``error: ...`` (no such SSE field) is read as ``event: error`` with that
line as its data, as llama.cpp's server sent mid-stream failures; ignored, an error would read as a clean end.

Work per chunk is a handful of C-level bytes operations: one ``splitlines`` (SSE's three line ends are
exactly ``bytes.splitlines``'s), then one branch per line; data is decoded once per event.
"""

from __future__ import annotations

import json
from typing import Final

from ._events import ProtocolViolation

_BOM: Final = b"\xef\xbb\xbf"
MAX_LINE_BYTES: Final = 64 << 20
"""The default bound on one line: a Responses event that carries generated images runs to several MB."""


class Frame:
    """One dispatched event, or a comment line (``comment=True``, ``data`` holds the comment's text).

    ``event`` is ``"message"`` when the stream named none; ``id`` is the last event id seen so far (spec:
    it persists across events); ``retry`` is the reconnection time this event's block set, if any.
    """

    __slots__ = ("comment", "data", "event", "id", "retry")

    def __init__(
        self,
        data: str,
        event: str = "message",
        id: str = "",
        retry: int | None = None,
        comment: bool = False,
    ) -> None:
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry
        self.comment = comment

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frame):
            return NotImplemented
        return (self.data, self.event, self.id, self.retry, self.comment) == (
            other.data,
            other.event,
            other.id,
            other.retry,
            other.comment,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable-looking value object: equality only

    def __repr__(self) -> str:
        # Sizes only: data may be model output.
        if self.comment:
            return f"Frame(comment, <{len(self.data)} chars>)"
        return f"Frame({self.event!r}, <{len(self.data)} chars>, id={self.id!r}, retry={self.retry!r})"


def _completes(data: str) -> bool:
    """Whether an event's data, at the end of the stream without its blank line, is whole anyway."""
    if data == "[DONE]":
        return True
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


# The providers' event names, decoded once; any other name is decoded per event.
_NAMES: Final[dict[bytes, str]] = {
    name.encode(): name
    for name in (
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
        "error",
        "response.output_text.delta",
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.delta",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    )
}


class SSEDecoder:
    """Feed it the body's bytes as they arrive; it returns the events each chunk completed.

    A line longer than ``max_line_bytes`` raises ``ProtocolViolation("line_too_long", offset)`` where
    ``offset`` is the byte offset of the line's start; the partial line is never buffered past the bound.
    ``close()`` at EOF dispatches a pending event whose data is whole, discards a torn one and sets
    ``truncated`` (see ``close``).
    """

    __slots__ = (
        "_at_start",
        "_block_open",
        "_data",
        "_event",
        "_more",
        "_more_len",
        "_pending",
        "_retry",
        "_skip_lf",
        "_too_long_at",
        "bytes_seen",
        "events_seen",
        "last_event_id",
        "max_line_bytes",
        "retry",
        "truncated",
    )

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self.max_line_bytes = max_line_bytes
        self.bytes_seen = 0
        self.events_seen = 0  # dispatched events, comments not included
        self.last_event_id = ""
        self.retry: int | None = None  # the stream's latest reconnection time (ms)
        self.truncated = False
        self._pending = b""  # the unterminated tail of the stream; never holds a line end
        self._more: list[bytes] = []  # chunks that continued the tail without ending it, joined once it ends
        self._more_len = 0
        self._at_start = True  # a BOM may still arrive (possibly split across chunks)
        self._skip_lf = False  # the last chunk ended in CR: a LF opening the next one belongs to it
        self._block_open = False  # a field line arrived since the last blank line
        self._data: list[bytes] = []
        self._event = b""
        self._retry: int | None = None
        # Where a line ran too long: the stream is over, and every later call raises again. The offset, not
        # the exception: a raised exception keeps the frames it passed, and they keep this decoder (a cycle).
        self._too_long_at: int | None = None

    def feed(self, chunk: bytes) -> list[Frame]:
        if self._too_long_at is not None:
            raise ProtocolViolation("line_too_long", self._too_long_at)
        if not chunk:
            return []
        self.bytes_seen += len(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 10:
                chunk = chunk[1:]
        if not self._at_start and (self._pending or self._more) and 10 not in chunk and 13 not in chunk:
            # Still inside one long line (an event carrying an image, say): keep its parts, and join them once
            # it ends; joining per chunk would copy the line over and over.
            self._more.append(chunk)
            self._more_len += len(chunk)
            size = len(self._pending) + self._more_len
            if size > self.max_line_bytes:
                return self._fail([], self.bytes_seen - size)
            return []
        if self._more:
            buf = b"".join((self._pending, *self._more, chunk))
            self._more = []
            self._more_len = 0
        else:
            buf = self._pending + chunk if self._pending else chunk
        if self._at_start:
            if len(buf) < 3 and _BOM.startswith(buf):
                self._pending = buf
                return []
            self._at_start = False
            if buf.startswith(_BOM):
                buf = buf[3:]
        if not buf:
            self._pending = b""
            return []
        lines = buf.splitlines()
        last = buf[-1]
        if last == 13:
            self._skip_lf = True
            self._pending = b""
        elif last == 10:
            self._pending = b""
        else:
            self._pending = lines.pop()
        # buf is always a tail of the stream, so offsets are computable on the (rare) error path only.
        limit = self.max_line_bytes
        if len(buf) > limit:
            for i, line in enumerate(lines):
                if len(line) > limit:
                    offset = self.bytes_seen - len(buf) + sum(map(len, buf.splitlines(keepends=True)[:i]))
                    return self._fail(self._process(lines[:i]), offset)
            if len(self._pending) > limit:
                return self._fail(self._process(lines), self.bytes_seen - len(self._pending))
        return self._process(lines) if lines else []

    def close(self) -> list[Frame]:
        """End of stream. An event whose blank line never came is dispatched when its data is whole: a JSON
        value (or ``[DONE]``), whether or not its last line ended: gateways close right after the last field,
        and openai-node dispatches such an event (openai/openai-node#2725) where the spec and the Python SDKs
        drop it, losing the finish. Any other pending event (its data cut after a line end, or mid-line) is
        torn: dropped, and ``truncated`` says one was due."""
        if self._too_long_at is not None:
            raise ProtocolViolation("line_too_long", self._too_long_at)
        pending = b"".join((self._pending, *self._more))
        if self._at_start and _BOM.startswith(pending):
            pending = b""  # a lone (partial) BOM is not an event
        events: list[Frame] = []
        due = bool(pending) or self._block_open
        if due:
            whole = [e for e in self._process([pending, b""] if pending else [b""]) if not e.comment]
            if whole and _completes(whole[-1].data):
                events = whole
        self.truncated = due and not events
        self._pending = b""
        self._more = []
        self._more_len = 0
        self._data = []
        self._event = b""
        self._retry = None
        self._block_open = False
        return events

    def _fail(self, events: list[Frame], offset: int) -> list[Frame]:
        self._pending = b""
        self._more = []
        self._more_len = 0
        self._too_long_at = offset
        if events:
            # Hand over what the chunk completed before the bad line and raise on the next call, so the
            # outcome does not depend on where the network split the bytes.
            return events
        raise ProtocolViolation("line_too_long", offset)

    def _process(self, lines: list[bytes]) -> list[Frame]:
        events: list[Frame] = []
        data = self._data
        # The block's fields as locals, written back once: an attribute store per line costs more than the
        # line's own work on the hot path.
        name, retry, block_open = self._event, self._retry, self._block_open
        for line in lines:
            if not line:
                if data:
                    raw = data[0] if len(data) == 1 else b"\n".join(data)
                    events.append(
                        Frame(
                            raw.decode("utf-8", "replace"),  # _decode, inlined: once per event
                            (_NAMES.get(name) or _decode(name)) if name else "message",
                            self.last_event_id,
                            retry,
                        )
                    )
                    data.clear()
                    self.events_seen += 1
                name, retry, block_open = b"", None, False
                continue
            if line.startswith(b"data:"):  # the hot path
                data.append(line[6:] if line[5:6] == b" " else line[5:])
                block_open = True
                continue
            if line.startswith(b"event:"):  # the other line of most events (anthropic, responses)
                name = line[7:] if line[6:7] == b" " else line[6:]
                block_open = True
                continue
            colon = line.find(b":")
            if colon == 0:
                remark = line[2:] if line[1:2] == b" " else line[1:]
                events.append(Frame(_decode(remark), "", "", None, True))
                continue
            if colon < 0:
                field, value = line, b""
            else:
                field = line[:colon]
                value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
            block_open = True
            if field == b"event":
                name = value
            elif field == b"id":
                if b"\0" not in value:
                    self.last_event_id = _decode(value)
            elif field == b"retry":
                if value and value.isdigit():
                    retry = self.retry = int(value)
            elif field == b"data":
                data.append(value)
            elif field == b"error":
                # Not an SSE field: llama.cpp's server (2025 builds) sent mid-stream failures on it. The spec
                # says ignore it, which would turn an error into silence: it is an event named "error".
                data.append(value)
                name = b"error"
            # any other field is ignored (spec)
        self._event, self._retry, self._block_open = name, retry, block_open
        return events
