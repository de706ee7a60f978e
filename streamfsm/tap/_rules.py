"""Which requests are LLM calls, and in which wire format: decided by the path (the rules), never by the
body; whether a call streams is decided by its response (``TapRun.connected``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..wire import ABSENT, FORMAT_NAMES, FORMATS

_MAX_BODY: Final = 1 << 20  # a larger request body is not parsed, only looked at (``_look``)


@dataclass(frozen=True, slots=True)
class Rule:
    """Requests whose URL path matches ``pattern`` (a regular expression, searched) carry ``provider``'s
    format (a registered one, ``streamfsm.wire.FORMAT_NAMES``). A gateway that serves a format under
    another path adds a rule: ``Rule(r"/llm/v2/chat$", "openai-chat")``."""

    pattern: str
    provider: str
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.provider not in FORMAT_NAMES:
            raise ValueError(f"provider must be one of {', '.join(FORMAT_NAMES)}, not {self.provider!r}")
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None
        object.__setattr__(self, "_compiled", compiled)

    def matches(self, path: str) -> bool:
        return self._compiled.search(path) is not None


DEFAULT_RULES: Final = tuple(Rule(path, fmt.name) for fmt in FORMATS.values() for path in fmt.paths)
"""Each format's own paths (``streamfsm.wire.FORMATS``)."""


def check_rules(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    """The caller's rules first (first match wins), then the defaults."""
    own = tuple(rules)
    for rule in own:
        if not isinstance(rule, Rule):
            raise TypeError(f"rules must be streamfsm.tap.Rule objects, not {type(rule).__name__}")
    return own + DEFAULT_RULES


@dataclass(frozen=True, slots=True)
class LlmRequest:
    """A request on a format's path: an LLM call. Whether it streams is the response's to say (its content
    type); ``streams`` is what the request asks for, where a bounded look can tell (None: it cannot)."""

    provider: str
    body: dict[str, Any]  # what the record keeps from the request: its model, its shape (``request_shape``)
    streams: bool | None


def format_of(rules: tuple[Rule, ...], method: str, path: str, query: Mapping[str, str]) -> str | None:
    """The wire format of the LLM call this request is (by its method, path and query alone), or None."""
    provider = next((rule.provider for rule in rules if rule.matches(path)), None)
    if method == "POST" and _RESPONSE_ITEM.search(path) is None:
        return provider
    if method == "GET" and query.get("stream", "").lower() == "true":
        return provider
    return None


def llm_request(
    rules: tuple[Rule, ...], method: str, path: str, query: Mapping[str, str], content: bytes | None
) -> LlmRequest | None:
    """The LLM call this request is, or None. A POST on a format's path is one, whatever its size; a GET is
    one when its query says ``stream=true`` (re-attaching to a Responses stream). The body is never copied:
    see ``_look``."""
    provider = format_of(rules, method, path, query)
    if provider is None:
        return None
    if method == "GET":
        return LlmRequest(provider, {}, True)
    body, flag = _look(content or b"")
    return LlmRequest(provider, body, FORMATS[provider].asks_to_stream(path, flag))


def _look(content: bytes) -> tuple[dict[str, Any], object]:
    """What the record wants from a request body, by a bounded look: a body up to ``_MAX_BODY`` is parsed;
    a larger one (a long prompt, a base64 image) is not, and only its first and last ``_EDGE_BYTES`` are
    searched for a top-level-looking ``"model": "..."`` and ``"stream": true|false`` (the SDKs put the model
    and the options around the messages). Its tools and options are then not known. The body's top-level
    ``"stream"`` comes with it: its value, ``ABSENT``, or None when the look could not tell."""
    if len(content) <= _MAX_BODY:
        try:
            body = json.loads(content) if content else {}
        except (ValueError, RecursionError):
            body = {}
        body = body if isinstance(body, dict) else {}
        return body, body.get("stream", ABSENT)
    # The head is read from the body's start, so its nesting is known: only the body's own keys count (an
    # Anthropic tool_use's input is an object, model output, and may say "model"). The tail's nesting is not
    # known: its last match counts (the SDKs write the top-level options after the messages).
    model, streams = _top_level(content, _EDGE_BYTES)
    tail = len(content) - _EDGE_BYTES
    if model is None:
        found = [match.group(1) for match in _MODEL.finditer(content, tail)]
        model = found[-1].decode("utf-8", "replace") if found else None
    if streams is None:
        flags = [match.group(1) for match in _STREAM.finditer(content, tail)]
        streams = flags[-1] == b"true" if flags else None
    return ({"model": model} if model is not None else {}), streams


def _top_level(content: bytes, end: int) -> tuple[str | None, bool | None]:
    """The body's own ``"model"`` and ``"stream"`` in ``content[:end]``, read from the body's start."""
    model: str | None = None
    streams: bool | None = None
    depth = 0
    for token in _TOKEN.finditer(content, 0, end):
        first = content[token.start()]
        if first == 0x22:  # '"': a string; a key when a colon follows
            if depth != 1:
                continue
            key = token.group()
            if key == b'"model"' and model is None:
                value = _MODEL_VALUE.match(content, token.end(), end)
                if value is not None:
                    model = value.group(1).decode("utf-8", "replace")
            elif key == b'"stream"' and streams is None:
                flag = _STREAM_VALUE.match(content, token.end(), end)
                if flag is not None:
                    streams = flag.group(1) == b"true"
            if model is not None and streams is not None:
                break
        else:
            depth += 1 if first in b"{[" else -1
    return model, streams


_EDGE_BYTES: Final = 64 * 1024
# A POST under a response's own path (``/responses/input_tokens``, ``/responses/{id}/cancel``) generates
# nothing: only ``POST /responses`` does; the path is the re-attaching GET's.
_RESPONSE_ITEM: Final = re.compile(r"/responses/[^/]+$")
# A JSON string value cannot hold an unescaped quote, so these match keys, not text inside a message.
_MODEL: Final = re.compile(rb'"model"\s*:\s*"([^"\\]{1,256})"')
_STREAM: Final = re.compile(rb'"stream"\s*:\s*(true|false)\b')
_MODEL_VALUE: Final = re.compile(rb'\s*:\s*"([^"\\]{1,256})"')
_STREAM_VALUE: Final = re.compile(rb"\s*:\s*(true|false)\b")
# A JSON string, or a bracket. A string always matches (one the window cuts runs to its end), so that no
# hostile body makes the search start again inside one (quadratic over escaped quotes).
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[{}\[\]]', re.DOTALL)
