"""AWS event-stream messages for the fault provider (Claude on Bedrock): each Anthropic SSE frame of
``_wire`` re-sent as the ``chunk`` message Bedrock's ``invoke-with-response-stream`` sends, with both CRC32s,
and the damaged ones a test needs.

Messages are written by the wire room's ``encode_message`` (both CRC32s), the one the relay's in-band error
uses too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Final

from ..wire import encode_message, exception_message

message = encode_message  # one message with both CRCs, from the wire room (the relay writes them too)

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
EVENT_HEADERS: Final = (("content-type", CONTENT_TYPE),)


def chunk(event_json: str) -> bytes:
    """The ``chunk`` message carrying one Anthropic stream event (its JSON), base64 as Bedrock sends it."""
    wrapped = json.dumps({"bytes": base64.b64encode(event_json.encode()).decode(), "p": "abcdefgh"})
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, wrapped.encode())


def exception(exception_type: str, text: str) -> bytes:
    """An ``exception`` message (``throttlingException``, ``modelStreamErrorException``, ...)."""
    return exception_message(text, exception_type)


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
