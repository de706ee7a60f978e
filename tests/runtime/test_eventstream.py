"""AWS event-stream framing (Claude on Bedrock): botocore's decoder under our framing, the fault provider's
encoder checked against the anthropic SDK's own decoder, damaged and torn bodies, chunking independence."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.classify import ProviderErrorKind
from streamfsm.testing import text_stream, tool_call_stream
from streamfsm.testing._eventstream import chunk, damaged, exception, from_sse, message
from streamfsm.wire import (
    Finish,
    Frame,
    ProtocolViolation,
    ProviderErrorEvent,
    SdkBedrockConverse,
    StreamEvent,
    ToolCall,
    Usage,
    adapter_for,
)
from streamfsm.wire._eventstream import (
    BAD_CHUNK,
    BAD_HEADERS,
    CHECKSUM_MISMATCH,
    EventStreamDecoder,
)

TEXT = ("Hello", " world")


def decode(*chunks: bytes) -> tuple[list[Frame], EventStreamDecoder]:
    decoder = EventStreamDecoder()
    frames: list[Frame] = []
    for piece in chunks:
        frames += decoder.feed(piece)
    frames += decoder.close()
    return frames, decoder


def events_of(*chunks: bytes) -> list[StreamEvent]:
    """The normalised events of a Bedrock body, as a run reads it (a torn body gives no adapter end)."""
    adapter = adapter_for("anthropic-bedrock")
    frames, decoder = decode(*chunks)
    events = [event for frame in frames for event in adapter.feed(frame)]
    return events if decoder.truncated else events + adapter.end()


def sse_data(frames: list[bytes]) -> list[str]:
    return [line[6:] for f in frames for line in f.decode().splitlines() if line.startswith("data: ")]


def test_chunks_carry_the_anthropic_events_and_the_stream_finishes() -> None:
    sse = tool_call_stream("anthropic", [("read_file", '{"path": "a.txt"}')], text=TEXT)
    frames, decoder = decode(b"".join(from_sse(sse)))
    assert [f.data for f in frames] == sse_data(sse)
    assert (decoder.truncated, decoder.events_seen) == (False, len(sse))
    assert isinstance(events_of(*from_sse(sse))[-1], Finish)


def test_the_sdk_decoder_reads_what_the_fault_provider_sends() -> None:
    """The encoder is checked by the anthropic SDK's own Bedrock decoder (botocore's parser)."""
    decoder_module = pytest.importorskip("anthropic.lib.bedrock._stream_decoder")
    sse = text_stream("anthropic", TEXT)
    read = list(decoder_module.AWSEventStreamDecoder().iter_bytes(iter(from_sse(sse))))
    assert [e.data for e in read] == sse_data(sse)
    throttled = exception("throttlingException", "Too many requests")
    said: list[str] = []
    try:  # anthropic 2.x yields an error event
        said = [e.data for e in decoder_module.AWSEventStreamDecoder().iter_bytes(iter([throttled]))]
    except ValueError as exc:  # 0.x raises, quoting the message
        said = [str(exc)]
    (text,) = said
    assert "throttlingException" in text and "Too many requests" in text


@pytest.mark.parametrize(
    ("exception_type", "kind"),
    [
        ("throttlingException", ProviderErrorKind.RATE_LIMIT),
        ("modelStreamErrorException", ProviderErrorKind.SERVER_ERROR),
        ("validationException", ProviderErrorKind.INVALID_REQUEST),
        ("internalServerException", ProviderErrorKind.SERVER_ERROR),
        ("serviceUnavailableException", ProviderErrorKind.OVERLOADED),
        ("modelTimeoutException", ProviderErrorKind.SERVER_ERROR),
    ],
)
def test_exception_messages_are_provider_errors_read_as_words(
    exception_type: str, kind: ProviderErrorKind
) -> None:
    head = from_sse(text_stream("anthropic", TEXT))[:2]
    events = events_of(*head, exception(exception_type, "the words of the message"))
    error = events[-1]
    assert isinstance(error, ProviderErrorEvent)
    assert (error.error.kind, error.error.type) == (kind, exception_type)


@pytest.mark.parametrize("where", ["message", "prelude"])
def test_a_damaged_message_is_a_violation_at_its_offset_after_the_messages_before_it(where: str) -> None:
    body = from_sse(text_stream("anthropic", TEXT))
    decoder = EventStreamDecoder()
    frames = decoder.feed(body[0] + damaged(body[1], where))
    assert len(frames) == 1  # the whole message before the damage is handed over first
    for again in (lambda: decoder.feed(body[2]), decoder.close):
        with pytest.raises(ProtocolViolation) as caught:
            again()
        assert (caught.value.detail, caught.value.position) == (CHECKSUM_MISMATCH, len(body[0]))


def test_a_chunk_that_is_not_base64_json_and_a_message_without_a_type_are_violations() -> None:
    not_base64 = message({":message-type": "event", ":event-type": "chunk"}, b'{"bytes": "%%%"}')
    untyped = message({":event-type": "chunk"}, b"{}")
    for bad, detail in ((not_base64, BAD_CHUNK), (untyped, BAD_HEADERS)):
        with pytest.raises(ProtocolViolation) as caught:
            decode(bad)
        assert caught.value.detail == detail


def test_a_torn_last_message_is_truncated_and_never_a_finish() -> None:
    body = b"".join(from_sse(text_stream("anthropic", TEXT)))
    _, decoder = decode(body[:-3])
    assert decoder.truncated
    assert not any(isinstance(e, Finish) for e in events_of(body[:-3]))
    assert not decode(body)[1].truncated


def test_the_core_imports_without_botocore_and_the_format_names_the_extra() -> None:
    script = (
        "import sys; sys.modules['botocore'] = None\n"
        "import streamfsm, streamfsm.tap, streamfsm.testing\n"
        "try:\n"
        "    streamfsm.wire.adapter_for('anthropic-bedrock')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "streamfsm[bedrock]" in out.stdout


# -- properties ----------------------------------------------------------------------------------------------

_TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_MESSAGES = st.lists(
    st.one_of(
        _TEXTS.map(lambda text: chunk(json.dumps({"type": "ping", "note": text}))),
        st.tuples(st.sampled_from(["throttlingException", "validationException"]), _TEXTS).map(
            lambda pair: exception(*pair)
        ),
    ),
    max_size=8,
)


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _outcome(chunks: list[bytes]) -> tuple[list[tuple[str, str]], bool, tuple[str, int] | None]:
    decoder = EventStreamDecoder()
    frames: list[Frame] = []
    try:
        for piece in chunks:
            frames += decoder.feed(piece)
        frames += decoder.close()
    except ProtocolViolation as violation:
        return [(f.event, f.data) for f in frames], decoder.truncated, (violation.detail, violation.position)
    return [(f.event, f.data) for f in frames], decoder.truncated, None


@given(_MESSAGES, st.integers(0, 64), st.lists(st.integers(0, 10_000), max_size=20))
def test_framing_is_independent_of_chunking(messages: list[bytes], cut_tail: int, cuts: list[int]) -> None:
    data = b"".join(messages)
    data = data[: max(0, len(data) - cut_tail)]  # sometimes a torn last message
    assert _outcome(_split(data, cuts)) == _outcome([data])


@given(
    st.sampled_from(["anthropic-bedrock", "bedrock-converse"]), st.data(), st.lists(st.integers(0, 10_000))
)
def test_damaged_or_torn_bytes_never_yield_a_finish(fmt: str, data: st.DataObject, cuts: list[int]) -> None:
    """One byte changed anywhere, or the body cut inside a message (at a clean end): never a finish."""
    messages = text_stream(fmt, TEXT)  # type: ignore[arg-type]
    body = b"".join(messages)
    if data.draw(st.booleans(), "flip"):
        at = data.draw(st.integers(0, len(body) - 1), "at")
        body = body[:at] + bytes([body[at] ^ data.draw(st.integers(1, 255), "mask")]) + body[at + 1 :]
    else:
        torn = data.draw(st.integers(0, len(messages) - 1), "message")
        inside = data.draw(st.integers(1, len(messages[torn]) - 1), "inside")
        body = b"".join(messages[:torn]) + messages[torn][:inside]
    adapter = adapter_for(fmt)
    decoder = EventStreamDecoder()
    try:
        events = [e for piece in _split(body, cuts) for f in decoder.feed(piece) for e in adapter.feed(f)]
        events += [e for f in decoder.close() for e in adapter.feed(f)]
    except ProtocolViolation:
        return
    assert decoder.truncated
    assert not any(isinstance(e, Finish) for e in events)


# -- Bedrock ConverseStream: each event its own message ------------------------------------------------------


def converse_events(*chunks: bytes) -> list[StreamEvent]:
    adapter = adapter_for("bedrock-converse")
    frames, decoder = decode(*chunks)
    events = [event for frame in frames for event in adapter.feed(frame)]
    return events if decoder.truncated else events + adapter.end()


def test_a_converse_stream_reads_text_reasoning_a_tool_call_usage_and_its_finish() -> None:
    frames = tool_call_stream(
        "bedrock-converse", [("read_file", '{"path": "a.txt"}')], text=TEXT, reasoning=["r"]
    )
    events = converse_events(*frames)
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("TextDelta") == 2 and kinds.count("ReasoningDelta") == 1
    assert [e.arguments for e in events if isinstance(e, ToolCall)] == ['{"path": "a.txt"}']
    usage, finish = next(e for e in events if isinstance(e, Usage)), events[-1]
    assert isinstance(usage, Usage) and (usage.input_tokens, usage.cached_tokens) == (25, 5)
    assert isinstance(finish, Finish) and finish.raw_reason == "tool_use"


def test_a_converse_stream_cut_after_message_stop_before_metadata_still_finishes_at_a_clean_end() -> None:
    frames = text_stream("bedrock-converse", TEXT)
    assert isinstance(converse_events(*frames[:-1])[-1], Finish)  # metadata (usage) never came
    assert not any(isinstance(e, Finish) for e in converse_events(*frames[:-2]))  # nor messageStop


def test_a_converse_exception_message_is_the_provider_error_it_names() -> None:
    frames = text_stream("bedrock-converse", TEXT)
    error = converse_events(*frames[:2], exception("serviceUnavailableException", "try later"))[-1]
    assert isinstance(error, ProviderErrorEvent) and error.error.kind is ProviderErrorKind.OVERLOADED


def test_botocores_items_read_as_the_wire_does() -> None:
    """``wrap()`` of boto3's converse_stream hands the run botocore's items ({name: body}): same events."""
    frames = tool_call_stream("bedrock-converse", [("read_file", '{"path": "a.txt"}')], text=TEXT)
    items = [{f.event: json.loads(f.data)} for f in decode(*frames)[0]]
    translator = SdkBedrockConverse()
    from_items = [e for item in items for e in translator.feed_item(item)] + translator.end()
    assert from_items == converse_events(*frames)
