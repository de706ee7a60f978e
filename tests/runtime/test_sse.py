"""The SSE decoder against the WHATWG event-stream rules, its bounds, and chunking independence."""

from __future__ import annotations

import json

import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.wire import Frame, ProtocolViolation, SSEDecoder
from tests.support.runs import split_at


def decode(*chunks: bytes, max_line_bytes: int = 1 << 20) -> tuple[list[Frame], SSEDecoder]:
    decoder = SSEDecoder(max_line_bytes)
    events: list[Frame] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.close()
    return events, decoder


def data_of(events: list[Frame]) -> list[str]:
    return [e.data for e in events if not e.comment]


def test_one_event() -> None:
    events, decoder = decode(b"data: hello\n\n")
    assert events == [Frame("hello")]
    assert events[0].event == "message"
    assert (decoder.events_seen, decoder.bytes_seen, decoder.truncated) == (1, 13, False)


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b"data: x", "x"),
        (b"data:x", "x"),
        (b"data:  x", " x"),  # only one space is removed
        (b"data", ""),  # a field with no colon has an empty value
        (b"data:", ""),
        (b"data: a: b", "a: b"),
    ],
)
def test_field_forms(line: bytes, value: str) -> None:
    events, _ = decode(line + b"\n\n")
    assert data_of(events) == [value]


def test_multi_line_data_is_joined_with_newlines() -> None:
    events, _ = decode(b"data: a\ndata:\ndata: c\n\n")
    assert data_of(events) == ["a\n\nc"]


def test_event_name_and_reset_after_dispatch() -> None:
    events, _ = decode(b"event: ping\ndata: 1\n\ndata: 2\n\n")
    assert [(e.event, e.data) for e in events] == [("ping", "1"), ("message", "2")]


def test_block_without_data_is_not_dispatched() -> None:
    events, decoder = decode(b"event: lonely\n\nid: 7\n\ndata: x\n\n")
    assert [(e.event, e.data, e.id) for e in events] == [("message", "x", "7")]
    assert decoder.events_seen == 1


def test_id_persists_is_cleared_by_empty_and_ignored_with_nul() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\x003\ndata: c\n\nid\ndata: d\n\n"
    events, decoder = decode(stream)
    assert [e.id for e in events] == ["1", "1", "1", ""]
    assert decoder.last_event_id == ""


def test_retry_digits_only() -> None:
    events, decoder = decode(b"retry: 3000\ndata: a\n\nretry: 3s\ndata: b\n\nretry: -1\ndata: c\n\n")
    assert [e.retry for e in events] == [3000, None, None]
    assert decoder.retry == 3000


def test_unknown_fields_are_ignored() -> None:
    events, _ = decode(b"foo: bar\ndata: x\nDATA: y\n\n")
    assert data_of(events) == ["x"]


def test_an_error_line_is_an_event_named_error() -> None:
    # Not an SSE field: llama.cpp's server sent mid-stream failures on it; ignored, an error is silence.
    events, _ = decode(b'error: {"code":400}\n\ndata: [DONE]\n\n')
    assert events == [Frame('{"code":400}', "error"), Frame("[DONE]")]


def test_comments_surface_in_order_and_do_not_end_a_block() -> None:
    events, decoder = decode(b": keepalive\n\ndata: a\n:\n: mid\ndata: b\n\n")
    assert [(e.comment, e.data) for e in events] == [
        (True, "keepalive"),
        (True, ""),
        (True, "mid"),
        (False, "a\nb"),
    ]
    assert decoder.events_seen == 1  # comments are not events


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_each_line_end(end: bytes) -> None:
    events, _ = decode(b"data: a" + end + b"data: b" + end + end + b"data: c" + end + end)
    assert data_of(events) == ["a\nb", "c"]


def test_mixed_line_ends() -> None:
    events, _ = decode(b"data: a\r\ndata: b\rdata: c\n\r\n")
    assert data_of(events) == ["a\nb\nc"]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    # Read as two line ends, the LF would be a blank line and dispatch "a" alone.
    events, _ = decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert data_of(events) == ["a\nb"]


def test_cr_at_chunk_end_dispatches_without_waiting() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [Frame("a")]
    assert decoder.feed(b"\ndata: b\n\n") == [Frame("b")]  # the LF closed the CR before it: not a line


def test_bom_is_stripped_at_start_even_when_split() -> None:
    events, _ = decode(b"\xef", b"\xbb", b"\xbfdata: x\n\n")
    assert data_of(events) == ["x"]


def test_bom_later_in_the_stream_is_not_stripped() -> None:
    events, _ = decode(b"data: x\n\n\xef\xbb\xbfdata: y\n\n")
    assert data_of(events) == ["x"]  # "\ufeffdata" is an unknown field


def test_invalid_utf8_is_replaced_not_raised() -> None:
    events, _ = decode(b"data: \xff\xfe ok\n\n")
    assert data_of(events) == ["\ufffd\ufffd ok"]


@pytest.mark.parametrize(
    ("chunks", "dispatched", "truncated"),
    [
        ((b"data: x\n\n",), 1, False),
        ((b'data: {"a": 1}\n',), 1, False),  # whole JSON, the blank line never came: dispatched
        ((b'data: {"a": 1}\r',), 1, False),
        ((b'event: e\ndata: {"a": 1}\r\n',), 1, False),
        ((b'data: {"a": 1}',), 1, False),  # an unterminated last line that completes its JSON
        ((b"data: [DONE]",), 1, False),
        ((b"data: x",), 0, True),  # no JSON: it may be cut short
        ((b"data: x\n",), 0, True),
        ((b'data: {"choices":[{"ind\n',), 0, True),  # cut mid-value, just after a line end
        ((b'data: {"a": ',), 0, True),  # cut mid-value
        ((b'data: x\ndata: {"a": 1}',), 0, True),  # the event's data is not that line alone
        ((b'data: {"a":\ndata: ',), 0, True),  # a multi-line value cut after its first line
        ((b"data: x\n\n: ping\n",), 1, False),  # a comment is complete on its own
        ((b"event: e\n",), 0, True),  # a block without data is never an event
        ((b"",), 0, False),
        ((b"\xef\xbb",), 0, False),  # a lone partial BOM
    ],
)
def test_close_dispatches_a_whole_last_event_and_reports_a_torn_one(
    chunks: tuple[bytes, ...], dispatched: int, truncated: bool
) -> None:
    events, decoder = decode(*chunks)
    assert decoder.truncated is truncated
    assert len(data_of(events)) == dispatched


def test_long_line_is_a_violation_at_its_start() -> None:
    with pytest.raises(ProtocolViolation) as info:
        decode(b"data: ok\n\n" + b"data: " + b"x" * 40 + b"\n\n", max_line_bytes=32)
    assert (info.value.detail, info.value.position) == ("line_too_long", 10)


def test_long_line_is_caught_before_it_is_buffered() -> None:
    decoder = SSEDecoder(max_line_bytes=32)
    decoder.feed(b"data: ok\n\n")
    fed = 0
    with pytest.raises(ProtocolViolation) as info:
        for _ in range(1000):
            decoder.feed(b"y" * 7)
            fed += 7
    assert info.value.position == 10
    assert fed <= 32  # raised on the chunk that crossed the bound, never buffering past it


def test_events_before_a_long_line_in_the_same_chunk_are_delivered_first() -> None:
    decoder = SSEDecoder(max_line_bytes=16)
    assert data_of(decoder.feed(b"data: a\n\ndata: " + b"z" * 30 + b"\n")) == ["a"]
    with pytest.raises(ProtocolViolation, match="line_too_long at 9"):
        decoder.close()


def test_exactly_max_line_bytes_is_allowed() -> None:
    events, _ = decode(b"data: " + b"x" * 10 + b"\n\n", max_line_bytes=16)
    assert data_of(events) == ["x" * 10]


# -- properties ----------------------------------------------------------------------------------------------

_VALUE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12)
_LINE = st.one_of(
    _VALUE.map(lambda v: "data: " + v),
    _VALUE.map(lambda v: "data:" + v),
    st.just("data"),
    st.sampled_from(["event: ping", "event: message_start", "id: 9", "id", "retry: 150", "x: y", "error: e"]),
    _VALUE.map(lambda v: ": " + v),
    st.just(""),
)
_END = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_LINE, _END), max_size=30))
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + "".join(line + end for line, end in lines)).encode()


@given(streams(), st.lists(st.integers(0, 10_000), max_size=20))
def test_decoding_is_independent_of_chunking(data: bytes, cuts: list[int]) -> None:
    whole, whole_decoder = decode(data)
    pieces, pieces_decoder = decode(*split_at(data, cuts))
    bytewise, _ = decode(*[data[i : i + 1] for i in range(len(data))])
    assert pieces == whole
    assert bytewise == whole
    assert (pieces_decoder.truncated, pieces_decoder.events_seen, pieces_decoder.bytes_seen) == (
        whole_decoder.truncated,
        whole_decoder.events_seen,
        whole_decoder.bytes_seen,
    )


@given(
    st.lists(st.sampled_from([b"data: a\n\n", b": c\n", b"data: " + b"q" * 10 + b"\n"]), max_size=6),
    st.integers(17, 40),
    st.lists(st.integers(0, 10_000), max_size=8),
)
def test_long_line_outcome_is_independent_of_chunking(
    frames: list[bytes], size: int, cuts: list[int]
) -> None:
    data = b"".join(frames) + b"data: " + b"L" * size + b"\n\n"

    def outcome(chunks: list[bytes]) -> tuple[list[Frame], tuple[str, int]]:
        decoder = SSEDecoder(max_line_bytes=20)
        events: list[Frame] = []
        with pytest.raises(ProtocolViolation) as info:
            for chunk in chunks:
                events += decoder.feed(chunk)
            decoder.close()
        return events, (info.value.detail, info.value.position)

    whole = outcome([data])
    assert outcome(split_at(data, cuts)) == whole
    assert whole[1] == ("line_too_long", data.rindex(b"data: L"))


_DATA_BLOCK = st.lists(
    st.one_of(_VALUE.map(lambda v: "data: " + v), st.sampled_from(["event: e", "id: 4", "retry: 20"])),
    min_size=1,
    max_size=4,
).filter(lambda lines: any(line.startswith("data") for line in lines))


@given(st.lists(st.tuples(_DATA_BLOCK, _END), max_size=12), st.lists(st.integers(0, 10_000), max_size=10))
def test_agrees_with_httpx_sse_on_data_events(blocks: list[tuple[list[str], str]], cuts: list[int]) -> None:
    # httpx-sse as an oracle where the two agree by design: every block has data (it also dispatches
    # data-less blocks, which the spec does not), and it has no comments to compare.
    data = "".join(end.join(lines) + end + end for lines, end in blocks).encode()
    chunks = split_at(data, cuts)
    ours, _ = decode(*chunks)
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))
    theirs = [Frame(e.data, e.event or "message", e.id, e.retry) for e in EventSource(response).iter_sse()]
    assert ours == theirs


_JSON_BLOCK = st.tuples(
    st.lists(st.sampled_from(["event: e", "id: 4", "retry: 20"]), max_size=2),
    st.dictionaries(st.text("abc", max_size=3), _VALUE, max_size=3).map(json.dumps) | st.just("[DONE]"),
).map(lambda block: [*block[0], "data: " + block[1]])


@given(
    st.lists(st.tuples(_JSON_BLOCK, _END), min_size=1, max_size=6),
    st.lists(st.integers(0, 10_000), max_size=6),
)
def test_a_last_event_whose_blank_line_never_came_is_dispatched_whatever_the_chunking(
    blocks: list[tuple[list[str], str]], cuts: list[int]
) -> None:
    """Gateways close right after the last field: an event whose data is whole (JSON, or ``[DONE]``) is
    read, the same as with its blank line, however the bytes were split."""
    data = "".join(end.join(lines) + end + end for lines, end in blocks).encode()
    unended = data[: -len(blocks[-1][1])]  # the last blank line dropped
    whole, _ = decode(data)
    events, decoder = decode(*split_at(unended, cuts))
    assert events == whole
    assert not decoder.truncated


@given(_VALUE, st.integers(1, 40))
def test_a_last_line_cut_mid_json_is_never_dispatched(text: str, cut: int) -> None:
    """An unterminated last line is dispatched only when it completes a JSON value: one cut short is torn."""
    line = ("data: " + '{"type": "response.completed", "text": ' + json.dumps(text) + "}").encode()
    cut = min(cut, len(line) - len(b"data: ") - 1)
    events, decoder = decode(line[: len(line) - cut])
    assert events == [] and decoder.truncated
