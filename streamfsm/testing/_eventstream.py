"""AWS event-stream messages for the fault provider (Claude on Bedrock): each Anthropic SSE frame of
``_wire`` re-sent as the ``chunk`` message Bedrock's ``invoke-with-response-stream`` sends, with both CRC32s,
and the damaged ones a test needs.

A message is ``[total length][headers length][prelude CRC32][headers][payload][message CRC32]`` (big-endian
uint32s; the message CRC covers everything before it, prelude CRC included). Headers here are strings (type
7): ``:message-type``, ``:event-type`` or ``:exception-type``, ``:content-type``.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Final

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
EVENT_HEADERS: Final = (("content-type", CONTENT_TYPE),)
_STRING: Final = 7  # the header value type of a UTF-8 string


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", _STRING, len(raw_value)) + raw_value
    )


def message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One whole event-stream message with both CRCs."""
    head = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", zlib.crc32(body))


def chunk(event_json: str) -> bytes:
    """The ``chunk`` message carrying one Anthropic stream event (its JSON), base64 as Bedrock sends it."""
    wrapped = json.dumps({"bytes": base64.b64encode(event_json.encode()).decode(), "p": "abcdefgh"})
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return message(headers, wrapped.encode())


def exception(exception_type: str, text: str) -> bytes:
    """An ``exception`` message (``throttlingException``, ``modelStreamErrorException``, ...)."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return message(headers, json.dumps({"message": text}).encode())


def from_sse(frames: Iterable[bytes]) -> list[bytes]:
    """Anthropic SSE frames (``_wire``'s) as the Bedrock messages that carry the same events."""
    out: list[bytes] = []
    for frame in frames:
        data = [line[6:] for line in frame.decode().splitlines() if line.startswith("data: ")]
        out.append(chunk("\n".join(data)))
    return out


def damaged(whole: bytes, where: str = "message") -> bytes:
    """``whole`` with one CRC broken: its message CRC (``"message"``), or its prelude CRC (``"prelude"``)."""
    at = len(whole) - 1 if where == "message" else 11
    return whole[:at] + bytes([whole[at] ^ 0xFF]) + whole[at + 1 :]
