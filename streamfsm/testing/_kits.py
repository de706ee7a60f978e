"""The test kit's builders, one ``FormatKit`` per registered format, each named by its ``Format.kit``: the
one place a format's kit is made. A new format's kit is one entry here beside its scenarios."""

from __future__ import annotations

from typing import Any, Final

from ._answers import anthropic_answer, chat_answer, gemini_answer, ollama_answer, responses_answer
from ._kit import FormatKit
from ._meanings import anthropic_meaning, chat_meaning, gemini_meaning, responses_meaning
from ._wire import (
    ANTHROPIC_ID,
    ANTHROPIC_MODEL,
    CHAT_ID,
    CHAT_MODEL,
    GEMINI_ID,
    GEMINI_MODEL,
    OLLAMA_MODEL,
    RESPONSES_ID,
    RESPONSES_MODEL,
    anthropic_bedrock_stream,
    anthropic_error,
    anthropic_stream,
    bedrock_converse_stream,
    chat_error,
    chat_stream,
    comment,
    frame,
    gemini_error,
    gemini_stream,
    ollama_error,
    ollama_stream,
    responses_error,
    responses_stream,
)

__all__ = ["ANTHROPIC", "ANTHROPIC_BEDROCK", "BEDROCK_CONVERSE", "CHAT", "GEMINI", "OLLAMA", "RESPONSES"]

_COMMENT: Final = comment()
_CLAUDE_ON_BEDROCK: Final = "anthropic.claude-haiku-4-5-20251001-v1:0"


def _hi() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "hi"}]


def _chat_call(client: Any, body: dict[str, Any], streaming: bool, generate: bool) -> Any:
    if not streaming:
        return client.chat.completions.create(**body)
    return client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True})


def _responses_call(client: Any, body: dict[str, Any], streaming: bool, generate: bool) -> Any:
    return client.responses.create(**body, stream=True) if streaming else client.responses.create(**body)


def _anthropic_call(client: Any, body: dict[str, Any], streaming: bool, generate: bool) -> Any:
    return client.messages.create(**body, stream=True) if streaming else client.messages.create(**body)


def _ollama_call(client: Any, body: dict[str, Any], streaming: bool, generate: bool) -> Any:
    """A coroutine; awaited with stream=True, an async generator of the parts. ``generate``: Ollama's
    ``/api/generate`` rather than its chat."""
    if generate:
        return client.generate(model=body["model"], prompt="hi", stream=streaming)
    return client.chat(**body, stream=streaming)


def _chat_text(item: Any) -> bool:
    choices = getattr(item, "choices", None) or ()
    return any(getattr(getattr(choice, "delta", None), "content", None) for choice in choices)


def _responses_text(item: Any) -> bool:
    return getattr(item, "type", None) == "response.output_text.delta"


def _anthropic_text(item: Any) -> bool:
    return (
        getattr(item, "type", None) == "content_block_delta"
        and getattr(getattr(item, "delta", None), "type", None) == "text_delta"
    )


def _ollama_text(item: Any) -> bool:
    return bool(getattr(getattr(item, "message", None), "content", None) or getattr(item, "response", None))


CHAT: Final = FormatKit(
    chat_stream,
    _COMMENT,
    chat_error,
    chat_answer,
    finish="stop",
    tool_finish="tool_calls",
    model=CHAT_MODEL,
    response_id=CHAT_ID,
    body={"model": "gpt-4o-mini", "messages": _hi()},
    harness_sdk="openai",
    sdk_call=_chat_call,
    shows_text=_chat_text,
    meaning=chat_meaning,
)
RESPONSES: Final = FormatKit(
    responses_stream,
    _COMMENT,
    responses_error,
    responses_answer,
    finish="completed",
    model=RESPONSES_MODEL,
    response_id=RESPONSES_ID,
    body={"model": "gpt-5-mini", "input": "hi"},
    harness_sdk="openai",
    sdk_call=_responses_call,
    shows_text=_responses_text,
    error_shapes=("flat", "nested", "failed"),
    meaning=responses_meaning,
)
ANTHROPIC: Final = FormatKit(
    anthropic_stream,
    frame({"type": "ping"}, "ping"),
    anthropic_error,
    anthropic_answer,
    finish="end_turn",
    tool_finish="tool_use",
    model=ANTHROPIC_MODEL,
    response_id=ANTHROPIC_ID,
    body={"model": "claude-haiku-4-5", "max_tokens": 64, "messages": _hi()},
    harness_sdk="anthropic",
    sdk_call=_anthropic_call,
    shows_text=_anthropic_text,
    meaning=anthropic_meaning,
)
GEMINI: Final = FormatKit(
    gemini_stream,
    _COMMENT,
    gemini_error,
    gemini_answer,
    finish="STOP",
    tool_finish="STOP",
    model=GEMINI_MODEL,
    response_id=GEMINI_ID,
    body={"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    meaning=gemini_meaning,
)
OLLAMA: Final = FormatKit(
    ollama_stream,
    _COMMENT,
    ollama_error,
    ollama_answer,
    finish="stop",
    model=OLLAMA_MODEL,
    body={"model": "llama3.2", "messages": _hi()},
    harness_sdk="ollama",
    sdk_call=_ollama_call,
    shows_text=_ollama_text,
)
ANTHROPIC_BEDROCK: Final = FormatKit(
    anthropic_bedrock_stream,
    _COMMENT,
    body={"model": _CLAUDE_ON_BEDROCK, "max_tokens": 64, "messages": _hi()},
)
BEDROCK_CONVERSE: Final = FormatKit(
    bedrock_converse_stream,
    _COMMENT,
    body={"modelId": _CLAUDE_ON_BEDROCK, "messages": [{"role": "user", "content": [{"text": "hi"}]}]},
)
