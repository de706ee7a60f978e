"""Wire adapters: one small, pure decoder per provider format, from SSE events to normalised events.

Each adapter is per stream (it holds the open tool call, the ids, the counters). ``adapter_for(name)`` makes
a fresh one.
"""

from __future__ import annotations

from typing import Final

from ._anthropic import AnthropicAdapter
from ._base import Adapter
from ._gemini import GeminiAdapter
from ._ollama import OllamaAdapter
from ._openai_chat import OpenAIChatAdapter
from ._openai_responses import OpenAIResponsesAdapter

ADAPTERS: Final[dict[str, type[Adapter]]] = {
    cls.name: cls
    for cls in (OpenAIChatAdapter, OpenAIResponsesAdapter, AnthropicAdapter, GeminiAdapter, OllamaAdapter)
}
"""Format name → adapter class."""

PROVIDERS: Final = tuple(ADAPTERS)


def adapter_for(provider: str) -> Adapter:
    """A fresh adapter for one stream of ``provider`` (one of ``PROVIDERS``)."""
    try:
        cls = ADAPTERS[provider]
    except (KeyError, TypeError):
        valid = ", ".join(repr(name) for name in PROVIDERS)
        raise ValueError(f"unknown provider format {provider!r}; expected one of {valid}") from None
    return cls()


__all__ = [
    "ADAPTERS",
    "PROVIDERS",
    "Adapter",
    "AnthropicAdapter",
    "GeminiAdapter",
    "OllamaAdapter",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "adapter_for",
]
