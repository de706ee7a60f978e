"""Wire adapters: one small, pure decoder per provider format, from frames to normalised events.

Each adapter is per stream (it holds the open tool call, the ids, the counters); the registry
(``wire/_formats.py``) names each format's adapter, and ``adapter_for(name)`` makes a fresh one.
"""

from __future__ import annotations

from ._anthropic import AnthropicAdapter
from ._base import Adapter
from ._gemini import GeminiAdapter
from ._openai_chat import OpenAIChatAdapter
from ._openai_responses import OpenAIResponsesAdapter

__all__ = [
    "Adapter",
    "AnthropicAdapter",
    "GeminiAdapter",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
]
