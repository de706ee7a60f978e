"""The property oracle's reading of the kit's frames, per format: what one frame means, in the oracle's words
(``strategies.faulty_streams``): text, reasoning, tool_start, tool_end, call_done, call (a whole call),
terminal, finish_seen (Gemini, and chat without [DONE]: terminal at a clean end of body), release (Gemini: a
whole-answer finish hands out the calls held since they arrived). Each is its format's kit's ``meaning``."""

from __future__ import annotations

import json
from typing import Any


def _data(frame: bytes) -> tuple[str | None, str]:
    """(event name, data) of one complete SSE frame."""
    event: str | None = None
    data: list[str] = []
    for line in frame.decode().splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return event, "\n".join(data)


def chat_meaning(frame: bytes) -> list[str]:
    _name, data = _data(frame)
    if data == "[DONE]":
        return ["call_done", "terminal"]
    out: list[str] = []
    for choice in json.loads(data).get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("reasoning_content") or delta.get("reasoning"):
            out.append("reasoning")
        if delta.get("content") or delta.get("refusal"):
            out.append("text")
        out += ["tool_start" for f in delta.get("tool_calls") or [] if f.get("id")]
        if choice.get("finish_reason"):
            out += ["call_done", "finish_seen"]
    return out


def responses_meaning(frame: bytes) -> list[str]:
    _name, data = _data(frame)
    payload: dict[str, Any] = json.loads(data)
    kind = payload.get("type", "")
    item_type = (payload.get("item") or {}).get("type")
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        return ["text"]
    if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        return ["reasoning"]
    if kind == "response.output_item.added" and item_type == "function_call":
        return ["tool_start"]
    if kind == "response.function_call_arguments.done":
        return ["tool_end"]
    if kind == "response.output_item.done" and item_type == "function_call":
        return ["call_done"]
    return ["call_done", "terminal"] if kind in ("response.completed", "response.incomplete") else []


def anthropic_meaning(frame: bytes) -> list[str]:
    name, data = _data(frame)
    payload: dict[str, Any] = json.loads(data)
    kind = payload.get("type", name)
    if kind == "content_block_start" and payload["content_block"]["type"] == "tool_use":
        return ["tool_start"]
    if kind == "content_block_delta":
        delta_type = payload["delta"]["type"]
        return {"text_delta": ["text"], "thinking_delta": ["reasoning"]}.get(delta_type, [])
    if kind == "content_block_stop":
        return ["call_done"]
    return ["terminal"] if kind == "message_stop" else []


def gemini_meaning(frame: bytes) -> list[str]:
    _name, data = _data(frame)
    payload: dict[str, Any] = json.loads(data)
    out: list[str] = []
    for candidate in payload.get("candidates") or []:
        for part in (candidate.get("content") or {}).get("parts") or []:
            if "functionCall" in part:
                out.append("call")
            elif part.get("text"):
                out.append("reasoning" if part.get("thought") else "text")
        if candidate.get("finishReason"):
            out.append("finish_seen")
            if candidate["finishReason"] == "STOP":
                out.append("release")  # the calls held so far are handed out: the answer is whole
    return out
