"""The format registry (``streamfsm.wire.FORMATS``): each format is whole, and what the house reads from it
(the tap's rules, the OTel names, the relay's in-band error, the whole-answer reader) agrees with it."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.runtime.records._otel import PROVIDER_NAMES
from streamfsm.tap import DEFAULT_RULES
from streamfsm.tap._rules import llm_request
from streamfsm.testing import SSE_FORMATS as SCENARIO_FORMATS
from streamfsm.testing import whole_answer
from streamfsm.wire import (
    ABSENT,
    FORMAT_NAMES,
    FORMATS,
    Continuation,
    Finish,
    Frame,
    ProviderErrorEvent,
    adapter_for,
    continuation_body,
    format_named,
)

NAMES = sorted(FORMATS)


@pytest.mark.parametrize("name", NAMES)
def test_a_format_is_named_as_its_adapter_and_its_paths_compile(name: str) -> None:
    fmt = FORMATS[name]
    assert fmt.name == name == fmt.adapter.name == adapter_for(name).name
    assert fmt.paths and all(re.compile(path) for path in fmt.paths)
    assert fmt.whole_answers and all(reason == reason.casefold() for reason in fmt.whole_answers)
    assert fmt.stream_types and PROVIDER_NAMES[name] == fmt.otel_name


def test_the_taps_default_rules_are_the_formats_paths() -> None:
    assert [(rule.pattern, rule.provider) for rule in DEFAULT_RULES] == [
        (path, fmt.name) for fmt in FORMATS.values() for path in fmt.paths
    ]
    assert tuple(FORMATS) == FORMAT_NAMES


def test_an_unknown_format_is_refused_in_plain_words() -> None:
    with pytest.raises(ValueError, match="unknown provider format 'ollama-x'; expected one of 'openai-chat'"):
        format_named("ollama-x")
    with pytest.raises(ValueError, match="no continuation rewrite for format 'nope'"):
        continuation_body("nope", {}, Continuation("partial"))


def _read(name: str, body: bytes) -> list[object]:
    """A streamed body read as the run reads it: the format's framing, then its adapter."""
    fmt = FORMATS[name]
    framing, adapter = fmt.framing(1 << 20), fmt.adapter()
    frames = framing.feed(body) + framing.close()
    return [event for frame in frames for event in adapter.feed(frame)]


@pytest.mark.parametrize("name", NAMES)
@given(message=st.text(max_size=200))
def test_the_in_band_error_is_read_by_its_own_format_as_the_providers_error(name: str, message: str) -> None:
    fmt = FORMATS[name]
    events = _read(name, fmt.in_band_error(message))
    assert [type(event) for event in events] == [ProviderErrorEvent]


@pytest.mark.parametrize("name", [name for name in NAMES if name in SCENARIO_FORMATS])
def test_a_whole_answer_is_read_as_its_streams_frames(name: str) -> None:
    fmt = FORMATS[name]
    frames = fmt.answer_frames(json.loads(whole_answer(name)))
    assert frames is not None
    adapter = fmt.adapter()
    data = [frame if isinstance(frame, str) else json.dumps(frame) for frame in frames]
    events = [event for one in data for event in adapter.feed(Frame(one))] + adapter.end()
    finishes = [event for event in events if isinstance(event, Finish)]
    assert len(finishes) == 1 and (finishes[0].raw_reason or "").casefold() in fmt.whole_answers
    assert fmt.answer_frames({"not": "an answer"}) is None


@pytest.mark.parametrize(
    ("name", "path", "flag", "streams"),
    [
        ("openai-chat", "/v1/chat/completions", True, True),
        ("openai-chat", "/v1/chat/completions", ABSENT, False),  # absent: the format's default
        ("openai-chat", "/v1/chat/completions", None, None),  # a body too large to look at
        ("anthropic", "/v1/messages", False, False),
        ("gemini", "/v1beta/models/g:streamGenerateContent", ABSENT, True),  # the path says it
        ("gemini", "/v1beta/models/g:generateContent", True, False),
    ],
)
def test_how_a_request_asks_for_a_stream(name: str, path: str, flag: object, streams: bool | None) -> None:
    assert FORMATS[name].asks_to_stream(path, flag) is streams


def test_the_tap_asks_the_format_whether_a_request_streams() -> None:
    body = json.dumps({"model": "m", "messages": []}).encode()
    call = llm_request(DEFAULT_RULES, "POST", "/v1/chat/completions", {}, body)
    assert call is not None and call.provider == "openai-chat" and call.streams is False
    call = llm_request(DEFAULT_RULES, "POST", "/v1beta/models/g:streamGenerateContent", {}, body)
    assert call is not None and call.provider == "gemini" and call.streams is True


@pytest.mark.parametrize("name", NAMES)
def test_a_stream_is_known_by_its_content_type(name: str) -> None:
    fmt = FORMATS[name]
    assert fmt.is_stream(" " + fmt.stream_types[0].upper() + "; charset=utf-8")
    assert not fmt.is_stream("application/json")


@pytest.mark.parametrize("name", list(FORMATS))
def test_the_format_page_shows_every_decision(name: str) -> None:
    from streamfsm._docsite import _DECIDED, _format_page

    page = _format_page(FORMATS[name])
    tables = FORMATS[name].definitions.tables().values()
    assert any(tables), f"{name}: no decisions on what its provider defines"
    for table in tables:
        for member, decided in table.items():
            assert f"| `{member}` | {_DECIDED[decided.decision]} | " in page, member
