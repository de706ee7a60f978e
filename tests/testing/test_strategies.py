"""The test kit's Hypothesis strategies: event sequences keep their promise, and the wire oracle reads
prefixes the way the taxonomy says."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm import FailureClass, Phase, Trigger, Verdict
from streamfsm.machine import StreamMachine
from streamfsm.runtime import StreamEvent
from streamfsm.testing import text_stream, tool_call_stream
from streamfsm.testing.strategies import FaultyStream, event_sequences, faulty_streams, oracle


def legal(events: list[StreamEvent]) -> list[bool]:
    machine = StreamMachine()
    machine.send(Trigger.REQUEST_SENT)
    machine.send(Trigger.HEADERS_RECEIVED)
    out = []
    for event in events:
        ok = machine.can_send(event.trigger)
        out.append(ok)
        if ok:
            machine.send(event.trigger)
    return out


@given(event_sequences(valid=True))
def test_valid_event_sequences_are_all_legal(events: list[StreamEvent]) -> None:
    assert all(legal(events))


@given(event_sequences(valid=False))
def test_invalid_event_sequences_break_the_grammar_somewhere(events: list[StreamEvent]) -> None:
    assert not all(legal(events))


@given(event_sequences())
def test_tool_call_ids_are_coherent(events: list[StreamEvent]) -> None:
    opened = {e.call_id for e in events if e.trigger is Trigger.TOOL_INPUT_START}  # type: ignore[union-attr]
    for event in events:
        if event.trigger in (Trigger.TOOL_INPUT_DELTA, Trigger.TOOL_INPUT_END):
            assert event.call_id in opened or event.call_id == "call_none"  # type: ignore[union-attr]


@given(faulty_streams())
def test_faulty_streams_are_playable_and_consistent(stream: FaultyStream) -> None:
    scenario = stream.scenario()
    assert scenario.expected_class is stream.expected_class
    assert 0 <= stream.sent <= len(stream.frames)
    if stream.expected_class is FailureClass.COMPLETED:
        assert stream.expected_edge is None and stream.expected_verdict is Verdict.NO_RETRY
    else:
        assert stream.expected_edge in (Trigger.DISCONNECTED, Trigger.EOF_WITHOUT_TERMINAL)
    if stream.expected_verdict is Verdict.SAFE_AUTO_RETRY:
        assert stream.expected_class is not FailureClass.MID_GENERATION


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_the_oracle_reads_an_open_tool_call_as_tool_input(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("apply_patch", '{"patch": "' + "x" * 40 + '"}')])  # type: ignore[arg-type]
    opened = next(i for i, f in enumerate(frames) if b"apply_patch" in f)
    klass, verdict, edge, phase, cause = oracle(fmt, frames[: opened + 2], "fin", clean_end=True)  # type: ignore[arg-type]
    assert (klass, verdict, edge, phase) == (
        FailureClass.TOOL_INPUT_INTERRUPTED,
        Verdict.SAFE_AUTO_RETRY,
        Trigger.DISCONNECTED,
        Phase.TOOL_INPUT,
    )
    assert cause == "closed_mid_body"


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_the_oracle_on_text_and_on_the_terminal_event(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"], reasoning=["hmm"])  # type: ignore[arg-type]
    first_text = next(i for i, f in enumerate(frames) if b"Hello" in f)
    assert oracle(fmt, frames[:first_text], "rst", clean_end=True)[:2] == (  # type: ignore[arg-type]
        FailureClass.EARLY_STREAM,
        Verdict.SAFE_AUTO_RETRY,
    )
    assert oracle(fmt, frames[: first_text + 1], "eof", clean_end=True)[:3] == (  # type: ignore[arg-type]
        FailureClass.MID_GENERATION,
        Verdict.USER_CONFIRMED_RETRY,
        Trigger.EOF_WITHOUT_TERMINAL,
    )
    whole_then_fin = oracle(fmt, frames, "fin", clean_end=True)[0]  # type: ignore[arg-type]
    # Gemini's terminal signal is the clean end of the body after a finishReason: a FIN instead is a cut.
    assert whole_then_fin is (FailureClass.MID_GENERATION if fmt == "gemini" else FailureClass.COMPLETED)
    assert oracle(fmt, frames, "eof", clean_end=True)[0] is FailureClass.COMPLETED  # type: ignore[arg-type]


@given(st.data())
def test_faulty_streams_respect_the_formats_asked_for(data: st.DataObject) -> None:
    stream = data.draw(faulty_streams(formats=["gemini"], faults=["eof"]))
    assert stream.format == "gemini" and stream.fault == "eof"
