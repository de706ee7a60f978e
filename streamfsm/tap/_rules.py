"""Which requests carry a streaming LLM response, and in which wire format."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..runtime._adapters import PROVIDERS

_MAX_BODY: Final = 1 << 20  # a larger request body is not parsed: its run has no model or request shape


@dataclass(frozen=True, slots=True)
class Rule:
    """Requests whose URL path matches ``pattern`` (a regular expression, searched) carry ``provider``'s
    format ("openai-chat", "openai-responses", "anthropic" or "gemini"). A gateway that serves a format under
    another path adds a rule: ``Rule(r"/llm/v2/chat$", "openai-chat")``."""

    pattern: str
    provider: str
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, not {self.provider!r}")
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None
        object.__setattr__(self, "_compiled", compiled)

    def matches(self, path: str) -> bool:
        return self._compiled.search(path) is not None


DEFAULT_RULES: Final = (
    Rule(r"/chat/completions$", "openai-chat"),
    Rule(r"/responses(/[^/]+)?$", "openai-responses"),  # also GET /responses/{id}?stream=true (resume)
    Rule(r"/messages$", "anthropic"),
    Rule(r":streamGenerateContent$", "gemini"),
)


def check_rules(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    """The caller's rules first (first match wins), then the defaults."""
    own = tuple(rules)
    for rule in own:
        if not isinstance(rule, Rule):
            raise TypeError(f"rules must be streamfsm.tap.Rule objects, not {type(rule).__name__}")
    return own + DEFAULT_RULES


def stream_request(
    rules: tuple[Rule, ...], method: str, path: str, query: Mapping[str, str], content: bytes | None
) -> tuple[str, dict[str, Any]] | None:
    """(format, request body) when this request asks for a streaming LLM response, else None.

    A POST streams when its JSON body says ``"stream": true`` (Gemini: the ``streamGenerateContent`` path
    alone says it); a GET streams when its query says ``stream=true`` (re-attaching to a Responses stream).
    """
    provider = next((rule.provider for rule in rules if rule.matches(path)), None)
    if provider is None:
        return None
    if method == "GET":
        return (provider, {}) if query.get("stream", "").lower() == "true" else None
    if method != "POST":
        return None
    body = _json_body(content)
    if provider == "gemini" or body.get("stream") is True:
        return provider, body
    return None


def _json_body(content: bytes | None) -> dict[str, Any]:
    if not content or len(content) > _MAX_BODY:
        return {}
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):
        return {}
    return body if isinstance(body, dict) else {}
