"""The SDK translators decide OpenAI's tool kinds as the wire adapters do: every tool-kind catalog scenario
of ``openai-responses`` and ``openai-chat``, its frames built into the openai SDK's own objects the way the
SDK builds them, gives the same tool events and finish through ``feed_item`` as through ``feed``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamfsm.testing import Send
from streamfsm.testing._tool_kinds import rows
from streamfsm.wire import (
    Finish,
    ProtocolViolation,
    ProviderErrorEvent,
    SdkOpenAIChat,
    SdkOpenAIResponses,
    SSEDecoder,
    ToolCall,
    ToolInputStart,
    adapter_for,
)

openai = pytest.importorskip("openai")
from openai._models import construct_type  # noqa: E402


def _frames(script: tuple[Any, ...]) -> list[Any]:
    decoder = SSEDecoder()
    return [event for step in script if isinstance(step, Send) for event in decoder.feed(step.data)]


def _seen(events: list[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, ToolCall):
            out.append(("call", e.call_id, e.name, e.arguments, e.input))
        elif isinstance(e, ToolInputStart):
            out.append(("start", e.call_id, e.input))
        elif isinstance(e, Finish):
            out.append(("finish", e.reason, e.raw_reason))
        elif isinstance(e, ProviderErrorEvent):
            out.append(("error", e.error.kind))
    return out


def _through(feed: Any, items: list[Any]) -> list[tuple[Any, ...]]:
    events: list[Any] = []
    try:
        for item in items:
            events += feed(item)
    except ProtocolViolation as exc:
        events.append(("violation", exc.detail))
    return _seen(events)


@pytest.mark.parametrize(
    ("fmt", "slug"),
    [(fmt, slug) for fmt in ("openai-responses", "openai-chat") for slug, *_ in rows(fmt)],
)
def test_the_sdk_translator_reads_each_tool_kind_as_the_wire_adapter(fmt: str, slug: str) -> None:
    script = next(s for name, _, s, *_ in rows(fmt) if name == slug)
    frames = [f for f in _frames(script) if f.data != "[DONE]"]
    wire = adapter_for(fmt)
    expected = _through(wire.feed, frames)
    if fmt == "openai-chat":
        translator: Any = SdkOpenAIChat()
        kind: Any = openai.types.chat.ChatCompletionChunk
    else:
        translator = SdkOpenAIResponses()
        kind = openai.types.responses.ResponseStreamEvent
    items = [construct_type(type_=kind, value=json.loads(f.data)) for f in frames]
    got = _through(translator.feed_item, items)
    if fmt == "openai-chat":  # the SDK swallows [DONE]: its translator finishes at the iteration's end
        done = [f for f in _frames(script) if f.data == "[DONE]"]
        if done:
            got += _seen(translator.end())
            expected += _through(wire.feed, done)
    assert got == expected
    assert any(e[0] in ("start", "call", "finish", "error") for e in expected)
