"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``), fed raw bytes: Claude on Amazon
Bedrock (``POST /model/{model}/invoke-with-response-stream``) streams it, not SSE.

Each message is a prelude (total length, headers length, prelude CRC32), typed headers, a payload and a
message CRC32. The framing is botocore's own ``EventStreamBuffer`` (the decoder ``anthropic``'s Bedrock
client and boto3 read it with), in the ``bedrock`` extra; the core imports without it.

What a message says, as the frames an Anthropic stream carries (so the Anthropic adapter reads them as it
reads SSE):

* ``:message-type`` ``event``, ``:event-type`` ``chunk``: the JSON ``{"bytes": "<base64>"}``, whose bytes are
  one Anthropic stream event: that event's JSON;
* ``:message-type`` ``exception`` (``:exception-type`` ``throttlingException``, ``validationException``, ...)
  or ``error`` (``:error-code``): an Anthropic ``error`` event naming that type, read as words by classify;
* a damaged message (a CRC that does not match, a prelude or headers that cannot be read, a chunk whose bytes
  are not base64 JSON): ``ProtocolViolation`` with a detail in plain words, at the byte offset of the
  message; every later call raises it again;
* a last message cut short: ``truncated`` at ``close()`` (never a clean end).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any, Final

from ._events import ProtocolViolation
from ._sse import Frame

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
EXTRA_HINT: Final = "pip install 'streamfsm[bedrock]'"
# ProtocolViolation details (fixed vocabulary).
CHECKSUM_MISMATCH: Final = "event_stream_checksum_mismatch"  # a prelude or message CRC32 does not match
BAD_PRELUDE: Final = "event_stream_bad_prelude"  # lengths that cannot be a message
BAD_HEADERS: Final = "event_stream_bad_headers"  # headers that cannot be read (repeated, cut, unknown type)
BAD_CHUNK: Final = "event_stream_bad_chunk"  # a chunk whose payload is not {"bytes": base64 of JSON}
TOO_LARGE: Final = "event_stream_message_too_large"  # a message over the run's bound on one frame
STREAM_FAILED: Final = "modelStreamErrorException"  # Bedrock's exception for a stream that failed mid-way


@functools.cache
def _botocore() -> Any:
    """botocore's event-stream module, or an ImportError that names the extra."""
    try:
        from botocore import eventstream
    except ImportError:
        raise ImportError(
            f"the AWS event-stream framing (Bedrock formats) needs botocore: {EXTRA_HINT}"
        ) from None
    return eventstream


def require_botocore() -> None:
    """Raise the ImportError naming the extra now, when botocore is missing."""
    _botocore()


class EventStreamDecoder:
    """Feed it the body's bytes as they arrive; it returns the frames each chunk completed (as ``SSEDecoder``
    does, so the run drives either the same way)."""

    __slots__ = (
        "_broken",
        "_buffer",
        "_consumed",
        "bytes_seen",
        "events_seen",
        "max_frame_bytes",
        "truncated",
    )

    def __init__(self, max_frame_bytes: int = 24 << 20) -> None:
        """``max_frame_bytes``: the largest message kept (botocore bounds a payload at 24 MiB itself)."""
        self.max_frame_bytes = max_frame_bytes
        self._buffer = _botocore().EventStreamBuffer()
        self.bytes_seen = 0
        self.events_seen = 0
        self._consumed = 0  # bytes of the whole messages read so far: the next message's offset
        self.truncated = False
        # (detail, offset) once a message was damaged: the stream is over, and every later call raises again.
        self._broken: tuple[str, int] | None = None

    def feed(self, chunk: bytes) -> list[Frame]:
        if self._broken is not None:
            raise ProtocolViolation(*self._broken)
        if not chunk:
            return []
        self.bytes_seen += len(chunk)
        self._buffer.add_data(chunk)
        frames: list[Frame] = []
        parser_error = _botocore().ParserError
        try:
            for message in self._buffer:
                if message.prelude.total_length > self.max_frame_bytes:
                    return self._fail(frames, TOO_LARGE)
                frames.append(_frame(message.headers, message.payload, self._consumed))
                self._consumed += message.prelude.total_length
                self.events_seen += 1
        except parser_error as exc:
            return self._fail(frames, _detail(exc))
        except ProtocolViolation as violation:
            return self._fail(frames, violation.detail)
        except Exception:  # a header botocore cannot unpack (cut short, an unknown type byte)
            return self._fail(frames, BAD_HEADERS)
        if self.bytes_seen - self._consumed > self.max_frame_bytes:  # the pending message is over the bound
            return self._fail(frames, TOO_LARGE)
        return frames

    def close(self) -> list[Frame]:
        """End of stream: bytes of a message that never completed make the body ``truncated``."""
        if self._broken is not None:
            raise ProtocolViolation(*self._broken)
        self.truncated = self.bytes_seen > self._consumed
        self._buffer = _botocore().EventStreamBuffer()
        return []

    def _fail(self, frames: list[Frame], detail: str) -> list[Frame]:
        self._broken = (detail, self._consumed)
        self._buffer = _botocore().EventStreamBuffer()  # keep none of the damaged bytes
        if frames:
            # Hand over what came before the damaged message and raise on the next call, so that the outcome
            # does not depend on where the network split the bytes.
            return frames
        raise ProtocolViolation(detail, self._consumed)


def event_stream_violation(exc: BaseException) -> str | None:
    """The violation detail of botocore's error for a damaged message (boto3's own stream read it), or None
    for anything else."""
    for klass in type(exc).__mro__:
        if klass.__name__ == "ParserError" and klass.__module__ == "botocore.eventstream":
            return _detail(exc)
    return None


def _detail(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "ChecksumMismatch":
        return CHECKSUM_MISMATCH
    if name in ("InvalidHeadersLength", "InvalidPayloadLength"):
        return BAD_PRELUDE
    return BAD_HEADERS  # DuplicateHeader, and any other parser error


def _frame(headers: dict[str, Any], payload: bytes, offset: int) -> Frame:
    """One message as the Anthropic frame it carries."""
    kind = headers.get(":message-type")
    if kind == "event":
        event = headers.get(":event-type")
        if event == "chunk":
            return Frame(_chunk_text(payload, offset))
        # Not in Bedrock's ResponseStream: handed on under its name, for the adapter to note, not dropped.
        return Frame(payload.decode("utf-8", "replace"), str(event))
    if kind in ("exception", "error"):
        code = headers.get(":exception-type") or headers.get(":error-code") or "unknown"
        message = headers.get(":error-message") or _message(payload)
        error = {"type": str(code), "message": message} if message is not None else {"type": str(code)}
        return Frame(json.dumps({"type": "error", "error": error}), "error")
    raise ProtocolViolation(BAD_HEADERS, offset)  # no message type: nothing says how to read it


def _chunk_text(payload: bytes, offset: int) -> str:
    """The Anthropic event a chunk's ``{"bytes": "<base64>"}`` carries, as JSON text."""
    try:
        wrapper = json.loads(payload)
        inner = base64.b64decode(wrapper["bytes"], validate=True) if isinstance(wrapper, dict) else b""
        text = inner.decode("utf-8")
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ProtocolViolation(BAD_CHUNK, offset) from None
    if not text.lstrip().startswith("{"):
        raise ProtocolViolation(BAD_CHUNK, offset)
    return text


def _message(payload: bytes) -> str | None:
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    message = body.get("message") or body.get("Message") if isinstance(body, dict) else None
    return message if isinstance(message, str) else None


# -- writing messages (the relay's in-band error; the test kit's fault provider) -----------------------------

_STRING: Final = 7  # the header value type of a UTF-8 string


def _header(name: bytes, value: bytes) -> bytes:
    return struct.pack(">B", len(name)) + name + struct.pack(">BH", _STRING, len(value)) + value


def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message with both CRC32s: ``[total length][headers length][prelude CRC]``, string
    headers, the payload, ``[message CRC]`` (big-endian; the message CRC covers all before it)."""
    head = b"".join(_header(name.encode(), value.encode()) for name, value in headers.items())
    prelude = struct.pack(">II", 12 + len(head) + len(payload) + 4, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", zlib.crc32(body))


def exception_message(message: str, exception_type: str = STREAM_FAILED) -> bytes:
    """An ``exception`` message as Bedrock sends one (the anthropic SDK raises it as an API error)."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())
