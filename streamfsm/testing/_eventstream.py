"""AWS event-stream messages for the fault provider (Claude on Bedrock): each Anthropic SSE frame of
``_wire`` re-sent as the ``chunk`` message Bedrock's ``invoke-with-response-stream`` sends, with both CRC32s,
and the damaged ones a test needs.

Messages are written by the wire room's ``encode_message`` (both CRC32s), the one the relay's in-band error
uses too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

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


# -- Bedrock ConverseStream: each event its own message, named by :event-type --------------------------------


def converse_event(name: str, body: dict[str, Any]) -> bytes:
    """One ConverseStream event (``messageStart``, ``contentBlockDelta``, ...) as Bedrock sends it."""
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps({**body, "p": "abcdefgh"}).encode())


def converse(
    parts: Sequence[tuple[str, ...]], usage: tuple[int, int, int] | None, finish: str | None
) -> list[bytes]:
    """A whole ConverseStream of ``parts`` (("text", s), ("reasoning", s), ("tool", name, arguments)),
    ended by ``messageStop`` (``finish``, default the whole-answer reason) and ``metadata`` (``usage``: input,
    cached, output tokens)."""
    out = [converse_event("messageStart", {"role": "assistant"})]
    calls = 0
    for position, part in enumerate(parts):
        at = {"contentBlockIndex": position}
        if part[0] == "tool":
            start = {"toolUse": {"toolUseId": f"tooluse_{calls:02d}kq3x", "name": part[1]}}
            out.append(converse_event("contentBlockStart", {**at, "start": start}))
            for i in range(0, len(part[2]), 12):
                out.append(
                    converse_event(
                        "contentBlockDelta", {**at, "delta": {"toolUse": {"input": part[2][i : i + 12]}}}
                    )
                )
            calls += 1
        elif part[0] == "reasoning":
            out.append(
                converse_event("contentBlockDelta", {**at, "delta": {"reasoningContent": {"text": part[1]}}})
            )
        else:
            out.append(converse_event("contentBlockDelta", {**at, "delta": {"text": part[1]}}))
        out.append(converse_event("contentBlockStop", at))
    out.append(converse_event("messageStop", {"stopReason": finish or ("tool_use" if calls else "end_turn")}))
    metadata: dict[str, Any] = {"metrics": {"latencyMs": 412}}
    if usage is not None:
        prompt, cached, output = usage
        metadata["usage"] = {
            "inputTokens": prompt - cached,
            "outputTokens": output,
            "totalTokens": prompt + output,
            "cacheReadInputTokens": cached,
            "cacheWriteInputTokens": 0,
        }
    out.append(converse_event("metadata", metadata))
    return out
