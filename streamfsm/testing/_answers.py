"""Whole JSON answers of non-streaming calls, per format, as the providers send them (the shapes the
official SDKs parse): for the fault provider's non-streaming scenarios and the tests. Each format's builder
is its kit's ``answer`` (``_kits.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._kit import kit_of
from ._wire import Format


def whole_answer(
    fmt: Format,
    text: str = "Hello",
    *,
    tools: Sequence[tuple[str, str]] = (),
    finish: str | None = None,
    usage: bool = True,
) -> bytes:
    """One non-streaming answer of ``fmt``: ``text``, then ``tools`` ((name, arguments JSON) pairs), ended
    by ``finish`` (default: the format's whole-answer reason; Responses: the response's ``status``)."""
    kit = kit_of(fmt)
    reason = finish or (kit.tool_finish if tools else None) or kit.finish
    if kit.answer is None or reason is None:
        raise ValueError(f"the test kit builds no whole answer of format {fmt!r}")
    return kit.answer(text, tools, reason, usage)


def chat_answer(text: str, tools: Sequence[tuple[str, str]], reason: str, usage: bool) -> bytes:
    body: dict[str, Any]
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if tools:
        message["tool_calls"] = [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for n, (name, arguments) in enumerate(tools)
        ]
    body = {
        "id": "chatcmpl-0",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reason}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    return json.dumps(body).encode()


def anthropic_answer(text: str, tools: Sequence[tuple[str, str]], reason: str, usage: bool) -> bytes:
    body: dict[str, Any]
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": json.loads(arguments)}
        for n, (name, arguments) in enumerate(tools)
    ]
    body = {
        "id": "msg_0",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-model",
        "content": content,
        "stop_reason": reason,
        "stop_sequence": None,
    }
    if usage:
        body["usage"] = {"input_tokens": 5, "output_tokens": 7}
    return json.dumps(body).encode()


def responses_answer(text: str, tools: Sequence[tuple[str, str]], reason: str, usage: bool) -> bytes:
    body: dict[str, Any]
    output: list[dict[str, Any]] = []
    if text:
        part = {"type": "output_text", "text": text, "annotations": []}
        output.append(
            {
                "type": "message",
                "id": "msg_0",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": name,
            "arguments": arguments,
            "status": "completed",
        }
        for n, (name, arguments) in enumerate(tools)
    ]
    body = {
        "id": "resp_0",
        "object": "response",
        "created_at": 0,
        "model": "gpt-5-mini",
        "status": reason,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if reason == "incomplete" else None,
        "output": output,
    }
    if usage:
        body["usage"] = {
            "input_tokens": 5,
            "output_tokens": 7,
            "total_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
    return json.dumps(body).encode()


def ollama_answer(text: str, tools: Sequence[tuple[str, str]], reason: str, usage: bool) -> bytes:
    body: dict[str, Any]
    calls = [{"function": {"name": name, "arguments": json.loads(arguments)}} for name, arguments in tools]
    body = {
        "model": "llama3.2",
        "created_at": "2025-10-01T12:00:00.000000Z",
        "message": {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})},
        "done_reason": reason,
        "done": True,
    }
    if usage:
        body.update(prompt_eval_count=5, eval_count=7)
    return json.dumps(body).encode()


def gemini_answer(text: str, tools: Sequence[tuple[str, str]], reason: str, usage: bool) -> bytes:
    body: dict[str, Any]
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": name, "args": json.loads(arguments)}} for name, arguments in tools]
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": reason, "index": 0}],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r0",
    }
    if usage:
        body["usageMetadata"] = {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12}
    return json.dumps(body).encode()
