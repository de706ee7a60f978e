"""Test helpers: realistic wire streams for the four provider formats."""

from ._wire import (
    CACHED_TOKENS,
    FORMATS,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    REASONING_TOKENS,
    build,
    comment,
    error_event,
    frame,
    keepalive,
    refusal_stream,
    text_stream,
    tool_call_stream,
)

__all__ = [
    "CACHED_TOKENS",
    "FORMATS",
    "OUTPUT_TOKENS",
    "PROMPT_TOKENS",
    "REASONING_TOKENS",
    "build",
    "comment",
    "error_event",
    "frame",
    "keepalive",
    "refusal_stream",
    "text_stream",
    "tool_call_stream",
]
