"""The common chunk's fast path (``TextTemplate``) reads exactly what json and the whole adapter read.

A chunk read by its template must give the events, counts and state the whole read gives, for any text
(escapes, lone surrogates, control characters) and any chunk beside it (NaN, integers past 64 bits,
duplicate keys, another id, a finish, usage, tool calls, an empty text): the adapter with its templates
and one with them refused are fed the same events and compared after each.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.wire import Frame, format_named
from streamfsm.wire._adapters import _openai_chat
from streamfsm.wire._adapters._base import TextTemplate

_HEAD = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",'
_CHOICE = '"choices":[{"index":0,"delta":{"content":%s},"logprobs":null,"finish_reason":null}],"usage":null}'


def _chunk(token: str, head: str = _HEAD) -> str:
    return head + _CHOICE % token


def _delta(payload: dict[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = payload["choices"][0]["delta"]
    return delta


def _template(data: str) -> TextTemplate | None:
    return TextTemplate.of(data, json.loads(data), _openai_chat._CONTENT_MARKER, _delta, "content")


# JSON string tokens, well formed or not: what a provider might put where the text goes.
_ESCAPES = st.sampled_from(['\\"', "\\\\", "\\n", "\\u0000", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\x"])
_PIECES = st.one_of(st.text(max_size=6), _ESCAPES, st.sampled_from(['"', "\\", "\x00", "\n", "}", "]"]))
_TOKENS = st.one_of(
    st.text().map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.text().map(json.dumps),
    st.lists(_PIECES, max_size=6).map(lambda ps: '"' + "".join(ps) + '"'),
    st.lists(_PIECES, max_size=6).map("".join),
    st.sampled_from(["NaN", "1e400", "123456789012345678901234567890", "null", '"a","content":"b"', "[]"]),
)


@settings(max_examples=400, deadline=None)
@given(_TOKENS)
def test_a_templated_text_is_what_json_loads_reads(token: str) -> None:
    template = _template(_chunk('"hello"'))
    assert template is not None
    data = _chunk(token)
    text = template.text(data)
    try:
        whole = json.loads(data)
    except ValueError:
        assert text is None  # a chunk json refuses is never read by its template
        return
    if text is not None:
        expected = json.loads(_chunk('"hello"'))
        _delta(expected)["content"] = text
        assert whole == expected and _delta(whole)["content"] == text


@given(st.sampled_from(["NaN", "1" * 30, "-0.0", "1e400"]))
def test_a_template_beside_numbers_json_reads_loosely_and_none_with_two_texts(created: str) -> None:
    head = _HEAD.replace("1730000000", created)
    template = _template(_chunk('"hi"', head))
    assert template is not None  # json reads each alike every time (its NaN is one shared object)
    whole = json.loads(_chunk('"yo"', head))
    assert template.text(_chunk('"yo"', head)) == "yo" == _delta(whole)["content"]
    assert repr(whole["created"]) == repr(json.loads(_chunk('"hi"', head))["created"])
    # duplicate keys: the last wins in json, so the text after the marker is not the one read
    twice = _chunk('"a"').replace('{"content":"a"}', '{"content":"a","content":"b"}')
    assert _template(twice) is None


def _event(kind: str, text: str, token: str) -> str:
    if kind == "text":
        return _chunk(json.dumps(text))
    if kind == "raw":
        return _chunk(token)
    if kind == "other-id":
        return _chunk(json.dumps(text), _HEAD.replace("chatcmpl-1", "chatcmpl-2"))
    if kind == "finish":
        return _chunk('""').replace('"finish_reason":null', '"finish_reason":"stop"')
    if kind == "usage":
        return _HEAD + '"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}'
    if kind == "tool":
        return _chunk('""').replace(
            '"delta":{"content":""}',
            '"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}',
        )
    if kind == "extra":
        return _chunk(json.dumps(text)).replace(
            '"usage":null', '"usage":null,"obfuscation":"' + text[:3] + '"'
        )
    return "[DONE]"


_KINDS = st.sampled_from(
    ["text", "text", "text", "raw", "other-id", "finish", "usage", "tool", "extra", "done"]
)


def _state(adapter: Any) -> tuple[Any, ...]:
    calls = [(c.call_id, c.name, c.arguments()) for c in adapter.open_calls()]
    return (
        dict(adapter.delta_keys),
        dict(adapter.anomalies),
        adapter.finish_raw,
        adapter.terminal_seen,
        adapter.response_id,
        adapter.model,
        adapter._unfinished,
        dict(adapter._closed),
        calls,
    )


def _fed(adapter: Any, data: str) -> Any:
    try:
        return adapter.feed(Frame(data))
    except Exception as exc:  # the violation itself is compared
        return (type(exc).__name__, str(exc))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_KINDS, st.text(max_size=8), _TOKENS), min_size=1, max_size=12))
def test_the_adapter_reads_every_stream_alike_with_and_without_its_templates(
    chunks: list[tuple[str, str, str]],
) -> None:
    fmt = format_named("openai-chat")
    fast, whole = fmt.adapter(), fmt.adapter()
    whole._templates = _openai_chat._MAX_TEMPLATES  # never takes a template: every chunk read whole
    for adapter in (fast, whole):
        adapter.lean()
    for kind, text, token in [("text", "first", ""), *chunks]:
        data = _event(kind, text, token)
        assert repr(_fed(fast, data)) == repr(_fed(whole, data))
        assert _state(fast) == _state(whole)
    assert whole._template is None


def test_a_stream_of_text_is_read_by_its_template() -> None:
    adapter = format_named("openai-chat").adapter()
    for text in ["a", "b", "c"]:
        adapter.feed(Frame(_chunk(json.dumps(text))))
    assert adapter._template is not None and adapter._templates == 1
    assert adapter._template.text(_chunk('"\\ud800"')) == "\ud800"  # a lone surrogate, as json reads it
    assert adapter.delta_keys == {"content": 3}


_A_HEAD = '{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}'


def _anthropic_event(kind: str, text: str, token: str) -> tuple[str, str]:
    if kind == "text":
        return "content_block_delta", _A_HEAD % (0, json.dumps(text))
    if kind == "raw":
        return "content_block_delta", _A_HEAD % (0, token)
    if kind == "other-block":
        return "content_block_delta", _A_HEAD % (1, json.dumps(text))
    if kind == "start":
        return (
            "content_block_start",
            '{"type":"content_block_start","index":1,"content_block":{"type":"text"}}',
        )
    if kind == "tool":
        block = '{"type":"tool_use","id":"t1","name":"f","input":{}}'
        return "content_block_start", f'{{"type":"content_block_start","index":2,"content_block":{block}}}'
    if kind == "json":
        delta = '{"type":"input_json_delta","partial_json":"{}"}'
        return "content_block_delta", f'{{"type":"content_block_delta","index":2,"delta":{delta}}}'
    if kind == "named":  # the same bytes under another event name
        return "message", _A_HEAD % (0, json.dumps(text))
    if kind == "extra":
        return "content_block_delta", (_A_HEAD % (0, json.dumps(text)))[:-2] + ',"x":' + json.dumps(
            text
        ) + "}}"
    return "message_stop", '{"type":"message_stop"}'


_A_KINDS = st.sampled_from(
    ["text", "text", "text", "raw", "other-block", "start", "tool", "json", "named", "extra", "stop"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_A_KINDS, st.text(max_size=8), _TOKENS), min_size=1, max_size=12))
def test_the_anthropic_adapter_reads_every_stream_alike_with_and_without_its_templates(
    chunks: list[tuple[str, str, str]],
) -> None:
    from streamfsm.wire._adapters import _anthropic

    fmt = format_named("anthropic")
    fast, whole = fmt.adapter(), fmt.adapter()
    whole._templates = _anthropic._MAX_TEMPLATES
    start = '{"type":"message_start","message":{"id":"msg_1","model":"claude","content":[]}}'
    block = '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
    opening = [("message_start", start), ("content_block_start", block)]
    for name, data in opening + [_anthropic_event(*each) for each in chunks]:
        fed = [_fed_named(adapter, name, data) for adapter in (fast, whole)]
        assert repr(fed[0]) == repr(fed[1])
        states = [
            (
                dict(a.delta_keys),
                dict(a.anomalies),
                a.terminal_seen,
                a._blocks,
                [c.call_id for c in a.open_calls()],
            )
            for a in (fast, whole)
        ]
        assert states[0] == states[1]
    assert whole._template is None


def _fed_named(adapter: Any, name: str, data: str) -> Any:
    try:
        return adapter.feed(Frame(data, name))
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def test_an_anthropic_stream_of_text_is_read_by_its_template() -> None:
    adapter = format_named("anthropic").adapter()
    adapter.feed(
        Frame(
            '{"type":"content_block_start","index":0,"content_block":{"type":"text"}}', "content_block_start"
        )
    )
    for text in ["a", "b", "c"]:
        adapter.feed(Frame(_A_HEAD % (0, json.dumps(text)), "content_block_delta"))
    assert adapter._template is not None and adapter._templates == 1
    assert adapter.delta_keys == {"text_delta": 3}
