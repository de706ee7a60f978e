"""Continuation requests: a request body rewritten so the model writes only what the consumer has not seen.
Pure functions, body in, body out; the caller's body is never changed.

The new conversation carries the partial answer as the assistant's turn, in one of two styles:

* ``INSTRUCTION`` (the default, every format): the partial answer is a finished assistant turn, quoted back,
  followed by a short user message asking to continue exactly where it stopped (`CONTINUE_INSTRUCTION`).
  The conversation ends with a user message, which every current model accepts.
* ``PREFILL`` (only when asked for: ``retrying(..., continue_with=ContinueStyle.PREFILL)``): the partial
  answer *is* the start of the assistant's turn, and the model goes on from its last character. Older
  Anthropic models do this natively; Anthropic's current ones (Claude 4.6 and later) refuse it, HTTP 400
  ``invalid_request_error`` "This model does not support assistant message prefill. The conversation must
  end with a user message." (`prefill_refused` reads that answer; the retry executor then falls back once to
  the instruction form). Anthropic never takes one with extended thinking on, so that is an instruction
  whatever was asked. OpenAI-compatible servers that accept a trailing assistant message (vLLM, llama.cpp,
  DeepSeek and Mistral with their ``prefix`` flag, which a rewrite of your own can add) and Gemini with some
  models prefill too.

Tool calls: complete calls the consumer received are carried in the assistant's turn with their results,
so no complete call is ever requested twice; the model then goes on from there (no prefill or instruction is
needed: the conversation is simply at its next step). A call whose arguments were cut is not carried at
all: it is requested again, whole. Anthropic rejects an assistant prefill that ends in whitespace, so that
format's prefill drops trailing whitespace (the retry executor then drops as much leading whitespace from
what comes back). A caller's own Anthropic prefill (a body ending with an assistant message) is extended
with the delivered text, in either style.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from .._events import ToolCall

__all__ = [
    "CONTINUE_INSTRUCTION",
    "Continuation",
    "ContinueRefusal",
    "ContinueStyle",
    "Rewrite",
    "anthropic_continuation",
    "chat_continuation",
    "gemini_continuation",
    "prefill_refused",
    "responses_continuation",
]

CONTINUE_INSTRUCTION: Final = (
    "Your previous reply was cut off. Continue it from exactly where it stopped: do not repeat any of it, "
    "and begin with the very next character."
)


class ContinueStyle(enum.Enum):
    """How a continuation request carries the partial answer."""

    _value_: str

    PREFILL = "prefill"
    INSTRUCTION = "instruction"


@dataclass(frozen=True, slots=True, repr=False)
class Continuation:
    """What the consumer was given, for a continuation request: the text so far, and the complete tool calls
    with each one's result (``results``: call id -> result; a call without one cannot be carried). Its repr
    shows sizes only."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    results: Mapping[str, object] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Continuation(<{len(self.text)} chars>, calls={len(self.calls)})"


Rewrite: TypeAlias = Callable[[Mapping[str, Any], Continuation], Mapping[str, Any]]
"""A continuation rewrite of one's own: (the original body, what was delivered) -> the new body."""


class ContinueRefusal(enum.Enum):
    """Why the provider refused a continuation request."""

    _value_: str

    PREFILL_UNSUPPORTED = "prefill_unsupported"  # the model takes no assistant prefill


# The words of a refused prefill, as Anthropic's current models (and gateways that forward them, sometimes
# wrapped in their own error) answer: 400 invalid_request_error "This model does not support assistant
# message prefill. The conversation must end with a user message." (anthropics/claude-code#52433,
# vercel/ai#12296, langchain-ai/deepagents#1585).
_PREFILL_WORDS: Final = ("prefill", "must end with a user message")


def prefill_refused(status: int, body: bytes) -> bool:
    """Whether an HTTP error answer to a prefilled continuation refuses the prefill itself: a 400 whose
    error message says so (read as words, never kept)."""
    if status != 400:
        return False
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return False
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = " ".join(message.lower().split()) if isinstance(message, str) else ""
    return any(words in text for words in _PREFILL_WORDS)


def _output(result: object) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except ValueError:
        return {}


def _listed(value: object, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ValueError(f"a continuation needs the body's {name!r} as a list")
    return list(value)


# -- OpenAI Chat Completions ---------------------------------------------------------------------------------


def chat_continuation(body: Mapping[str, Any], c: Continuation, style: ContinueStyle) -> dict[str, Any]:
    messages = _listed(body.get("messages"), "messages")
    assistant: dict[str, Any] = {"role": "assistant", "content": c.text or None}
    if c.calls:
        assistant["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in c.calls
        ]
    messages.append(assistant)
    for call in c.calls:
        messages.append(
            {"role": "tool", "tool_call_id": call.call_id, "content": _output(c.results[call.call_id])}
        )
    if not c.calls and style is ContinueStyle.INSTRUCTION:
        messages.append({"role": "user", "content": CONTINUE_INSTRUCTION})
    return {**body, "messages": messages}


# -- OpenAI Responses ----------------------------------------------------------------------------------------


def responses_continuation(body: Mapping[str, Any], c: Continuation, style: ContinueStyle) -> dict[str, Any]:
    given = body.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else _listed(given, "input")
    if c.text:
        content = [{"type": "output_text", "text": c.text}]
        items.append({"type": "message", "role": "assistant", "content": content})
    for call in c.calls:
        items.append(
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": _output(c.results[call.call_id]),
            }
        )
    if not c.calls and style is ContinueStyle.INSTRUCTION:
        items.append({"role": "user", "content": CONTINUE_INSTRUCTION})
    return {**body, "input": items}


# -- Anthropic Messages --------------------------------------------------------------------------------------


def anthropic_continuation(body: Mapping[str, Any], c: Continuation, style: ContinueStyle) -> dict[str, Any]:
    messages = _listed(body.get("messages"), "messages")
    if not c.calls and not c.text.strip():
        return {**body, "messages": messages}  # whitespace alone: Anthropic takes no blank text to carry it
    prefill = not c.calls and style is ContinueStyle.PREFILL
    # A prefill's text may not end in whitespace ("final assistant content cannot end with trailing
    # whitespace"); quoted back before an instruction, the turn is not final and keeps it.
    text = c.text.rstrip() if prefill else c.text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
    blocks += [
        {"type": "tool_use", "id": call.call_id, "name": call.name, "input": _arguments(call)}
        for call in c.calls
    ]
    last = messages[-1] if messages else None
    if isinstance(last, Mapping) and last.get("role") == "assistant":  # the caller's own prefill: extended
        before = last.get("content")
        content: Any = (
            before + text if isinstance(before, str) and not c.calls else [*_blocks(before), *blocks]
        )
        messages[-1] = {**last, "content": content}
    else:
        messages.append({"role": "assistant", "content": text if prefill else blocks})
    if c.calls:
        results = [
            {"type": "tool_result", "tool_use_id": call.call_id, "content": _output(c.results[call.call_id])}
            for call in c.calls
        ]
        messages.append({"role": "user", "content": results})
    elif not prefill:
        messages.append({"role": "user", "content": CONTINUE_INSTRUCTION})
    return {**body, "messages": messages}


def _blocks(content: object) -> list[Any]:
    """Anthropic message content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return _listed(content, "content")


# -- Gemini --------------------------------------------------------------------------------------------------


def gemini_continuation(body: Mapping[str, Any], c: Continuation, style: ContinueStyle) -> dict[str, Any]:
    contents = _listed(body.get("contents"), "contents")
    parts: list[dict[str, Any]] = [{"text": c.text}] if c.text else []
    parts += [{"functionCall": {"name": call.name, "args": _arguments(call)}} for call in c.calls]
    contents.append({"role": "model", "parts": parts})
    if c.calls:
        responses = [
            {
                "functionResponse": {
                    "name": call.name,
                    "response": {"result": _output(c.results[call.call_id])},
                }
            }
            for call in c.calls
        ]
        contents.append({"role": "user", "parts": responses})
    elif style is ContinueStyle.INSTRUCTION:
        contents.append({"role": "user", "parts": [{"text": CONTINUE_INSTRUCTION}]})
    return {**body, "contents": contents}
