"""The NDJSON decoder (Ollama's framing): one frame per line, its bound, a torn last line, and chunking
independence (the properties the SSE decoder has, on NDJSON)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.wire import Frame, ProtocolViolation
from streamfsm.wire._ndjson import NDJSONDecoder
from tests.support.runs import split_at


def decode(*chunks: bytes, max_line_bytes: int = 1 << 20) -> tuple[list[Frame], NDJSONDecoder]:
    decoder = NDJSONDecoder(max_line_bytes)
    frames: list[Frame] = []
    for chunk in chunks:
        frames += decoder.feed(chunk)
    frames += decoder.close()
    return frames, decoder


def test_each_line_is_one_frame() -> None:
    frames, decoder = decode(b'{"a":1}\n{"b":2}\r\n\n')
    assert [f.data for f in frames] == ['{"a":1}', '{"b":2}\r', ""]  # "\r" is JSON whitespace; "" a keepalive
    assert (decoder.events_seen, decoder.bytes_seen, decoder.truncated) == (3, 18, False)


@pytest.mark.parametrize(("tail", "truncated"), [(b"", False), (b'{"done":tr', True), (b" \r", False)])
def test_a_last_line_without_its_end_is_no_frame(tail: bytes, truncated: bool) -> None:
    frames, decoder = decode(b'{"a":1}\n', tail)
    assert [f.data for f in frames] == ['{"a":1}']
    assert decoder.truncated is truncated


@pytest.mark.parametrize(
    ("body", "frames", "truncated"),
    [
        (b'{"error":"model not found"}', ['{"error":"model not found"}'], False),  # a document: one line
        (b'{"error":"model not fou', [], True),  # torn
        (b"<html>", [], True),  # no JSON: torn as far as NDJSON can tell (the adapter sees nothing)
    ],
)
def test_a_body_without_any_line_end_is_one_json_document_or_torn(
    body: bytes, frames: list[str], truncated: bool
) -> None:
    got, decoder = decode(body[:5], body[5:])
    assert [f.data for f in got] == frames
    assert decoder.truncated is truncated


def test_a_long_line_is_a_violation_at_its_start_and_stays_one() -> None:
    decoder = NDJSONDecoder(max_line_bytes=8)
    assert [f.data for f in decoder.feed(b"{}\n" + b"x" * 9)] == ["{}"]  # the line before it comes first
    with pytest.raises(ProtocolViolation) as info:
        decoder.feed(b"\n")
    assert (info.value.detail, info.value.position) == ("line_too_long", 3)
    with pytest.raises(ProtocolViolation):
        decoder.close()


def test_a_long_line_is_caught_before_its_end_arrives() -> None:
    decoder = NDJSONDecoder(max_line_bytes=8)
    decoder.feed(b"x" * 5)
    with pytest.raises(ProtocolViolation) as info:
        decoder.feed(b"x" * 5)
    assert info.value.position == 0


def test_exactly_max_line_bytes_is_allowed() -> None:
    frames, _ = decode(b"x" * 8 + b"\n", max_line_bytes=8)
    assert [f.data for f in frames] == ["x" * 8]


# -- properties ----------------------------------------------------------------------------------------------

_LINE = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=12),
    st.sampled_from(['{"done":false}', '{"done":true,"done_reason":"stop"}', '{"error":"x"}', "", "\r"]),
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_LINE, max_size=30))
    torn = draw(st.sampled_from(["", "{", '{"message":{"content":"Hel']))
    return ("".join(line + "\n" for line in lines) + torn).encode()


@given(streams(), st.lists(st.integers(0, 10_000), max_size=20))
def test_decoding_is_independent_of_chunking(data: bytes, cuts: list[int]) -> None:
    whole, whole_decoder = decode(data)
    pieces, pieces_decoder = decode(*split_at(data, cuts))
    bytewise, _ = decode(*[data[i : i + 1] for i in range(len(data))])
    assert pieces == whole
    assert bytewise == whole
    if b"\n" in data:
        assert [f.data.encode() for f in whole] == data.split(b"\n")[:-1]  # every whole line, nothing else
    assert (pieces_decoder.truncated, pieces_decoder.events_seen, pieces_decoder.bytes_seen) == (
        whole_decoder.truncated,
        whole_decoder.events_seen,
        whole_decoder.bytes_seen,
    )


@given(
    st.lists(st.sampled_from([b'{"done":false}\n', b"\n", b'{"q":"' + b"q" * 8 + b'"}\n']), max_size=6),
    st.integers(21, 40),
    st.booleans(),
    st.lists(st.integers(0, 10_000), max_size=8),
)
def test_long_line_outcome_is_independent_of_chunking(
    lines: list[bytes], size: int, ended: bool, cuts: list[int]
) -> None:
    data = b"".join(lines) + b"L" * size + (b"\n" if ended else b"")

    def outcome(chunks: list[bytes]) -> tuple[list[Frame], tuple[str, int]]:
        decoder = NDJSONDecoder(max_line_bytes=20)
        frames: list[Frame] = []
        with pytest.raises(ProtocolViolation) as info:
            for chunk in chunks:
                frames += decoder.feed(chunk)
            decoder.close()
        return frames, (info.value.detail, info.value.position)

    whole = outcome([data])
    assert outcome(split_at(data, cuts)) == whole
    assert whole[1] == ("line_too_long", len(b"".join(lines)))
