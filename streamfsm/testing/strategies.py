"""Hypothesis strategies for property tests of streams, runs and the agents that consume them.

(a) Machine level: random valid and invalid sequences of triggers (`trigger_sequences`) and of the normalised
    events a consumer iterates (`event_sequences`), plus classifier facts (`facts`, `transport_facts`,
    `provider_errors`).
(b) Wire level: `faulty_streams` draws a realistic stream in one of the SSE formats (reasoning, text, tool
    calls), cuts it after a random number of frames (or inside a frame) and ends the connection with a FIN,
    an RST or a clean end of body without the terminal event. Each example carries the outcome a small
    oracle reads off the prefix that was delivered (nothing or only reasoning → ``early_stream``; visible
    text → ``mid_generation``; a tool call's arguments still open → ``tool_input_interrupted``; a complete
    call → ``tool_call_interrupted``; the terminal event delivered → ``completed``). The oracle decodes the
    frames with ``json`` and the formats' rules; it never calls the runtime or the classifier.

How an agent author uses `faulty_streams` to test that their agent retries only what is safe, over real
sockets: the README's "Test kit" section, which runs as ``tests/testing/test_user_kit_example.py``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from hypothesis import strategies as st

from ..classify import (
    AbortSource,
    Confidence,
    Facts,
    FailureClass,
    FinishCause,
    Phase,
    ProviderError,
    ProviderErrorKind,
    TransportFacts,
    TransportKind,
    Verdict,
)
from ..machine import FAILURE_TRIGGERS, IllegalTransition, State, StreamMachine, Trigger
from ..wire import (
    Finish,
    FinishReason,
    Keepalive,
    Metadata,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from ._kit import meaning_of
from ._script import End, Fin, Headers, Rst, Scenario, Send, Step
from ._wire import SSE_FORMATS, Format, build

__all__ = [
    "ALL_TRIGGERS",
    "FAILURES",
    "DriveStep",
    "FaultyStream",
    "accepted",
    "drive",
    "event_sequences",
    "facts",
    "faulty_streams",
    "oracle",
    "provider_errors",
    "tool_names",
    "transport_facts",
    "trigger_sequences",
    "wire_parts",
]

ALL_TRIGGERS: Final = tuple(Trigger)
FAILURES: Final = tuple(t for t in Trigger if t in FAILURE_TRIGGERS)
_EVENT_TRIGGERS: Final = tuple(
    event.trigger
    for event in (
        ReasoningDelta,
        TextDelta,
        ToolInputStart,
        ToolInputDelta,
        ToolInputEnd,
        ToolCall,
        Usage,
        Keepalive,
        Metadata,
        Finish,
    )
)
"""The triggers normalised provider events drive (headers and failures have no event)."""


# -- (a) machine level ---------------------------------------------------------------------------------------


def _in_order(triggers: frozenset[Trigger]) -> list[Trigger]:
    # Declaration order, so a failing example replays and shrinks the same way every time.
    return [t for t in ALL_TRIGGERS if t in triggers]


@st.composite
def trigger_sequences(draw: st.DrawFn, max_steps: int = 40) -> list[Trigger]:
    """Valid and invalid trigger sequences from ``idle``. At each step: usually a legal progress trigger (so
    runs get deep: tools, side effects), sometimes any legal trigger (failures, finish), sometimes any
    trigger at all (mostly illegal ones). Mode 0 shrinks first, so a minimal counterexample is a plain
    progress run plus the step that broke."""
    machine = StreamMachine()
    steps: list[Trigger] = []
    for _ in range(draw(st.integers(0, max_steps))):
        allowed = machine.state.allowed
        # FINISH ends the run; keep it with the failures so runs live long enough to reach tool states.
        progress = _in_order(frozenset(t for t in allowed if not t.is_failure and t is not Trigger.FINISH))
        mode = draw(st.integers(0, 29))
        if mode <= 26 and progress:
            trigger = draw(st.sampled_from(progress))
        elif mode == 27 and allowed:
            trigger = draw(st.sampled_from(_in_order(allowed)))
        else:
            trigger = draw(st.sampled_from(ALL_TRIGGERS))
        steps.append(trigger)
        if machine.can_send(trigger):
            machine.send(trigger)
    return steps


@dataclass(frozen=True)
class DriveStep:
    before: State
    trigger: Trigger
    after: State
    legal: bool


def drive(triggers: Sequence[Trigger], machine: StreamMachine | None = None) -> list[DriveStep]:
    """Send every trigger; an illegal one must raise `IllegalTransition` naming state and trigger and change
    nothing (neither state nor history). Returns what each step did; raises AssertionError on a breach."""
    machine = machine or StreamMachine()
    steps = []
    for trigger in triggers:
        before = machine.state
        history = list(machine.history)
        legal = trigger in before.allowed
        assert machine.can_send(trigger) is legal
        if legal:
            returned = machine.send(trigger)
            assert returned is machine.state
        else:
            caught: IllegalTransition | None = None
            try:
                machine.send(trigger)
            except IllegalTransition as illegal:
                caught = illegal
            if caught is None:
                raise AssertionError(f"{trigger} was accepted in {before}, which does not allow it")
            assert caught.state is before
            assert caught.trigger is trigger
            assert machine.state is before
            assert list(machine.history) == history
        steps.append(DriveStep(before, trigger, machine.state, legal))
    return steps


def accepted(steps: Sequence[DriveStep]) -> list[Trigger]:
    return [s.trigger for s in steps if s.legal]


_TEXT: Final = st.text(alphabet="abcdefghij klmnop.,!?", min_size=1, max_size=12)
_TOOL_NAMES: Final = ("read_file", "write_file", "apply_patch", "run_shell", "search")


@st.composite
def event_sequences(draw: st.DrawFn, max_events: int = 30, *, valid: bool | None = None) -> list[StreamEvent]:
    """Normalised provider events as an adapter emits them after the response headers.

    ``valid=True``: every event is legal where it arrives (a well-behaved provider, ending or not in a
    ``Finish``); ``valid=False``: at least one event breaks the grammar (a tool delta with no open call,
    text after the finish, …); None: either. Tool call ids are coherent within a sequence.
    """
    machine = StreamMachine()
    machine.send(Trigger.REQUEST_SENT)
    machine.send(Trigger.HEADERS_RECEIVED)
    events: list[StreamEvent] = []
    open_call: tuple[str, str] | None = None
    calls = 0
    count = draw(st.integers(1 if valid is False else 0, max_events))
    break_at = draw(st.integers(0, max(0, count - 1))) if valid is False else -1
    for index in range(count):
        allowed = [t for t in _EVENT_TRIGGERS if machine.can_send(t)]
        if index == break_at or (valid is None and draw(st.integers(0, 19)) == 0):
            # Every state refuses some provider trigger (a tool delta with no open call, text while one is
            # open, anything after the finish).
            trigger = draw(st.sampled_from([t for t in _EVENT_TRIGGERS if t not in allowed]))
        else:
            # A finish only as the last event, so sequences get deep (and an illegal one is still to come).
            choices: list[Trigger] = [t for t in allowed if t is not Trigger.FINISH]
            if index == count - 1 and Trigger.FINISH in allowed and draw(st.booleans()):
                choices = [Trigger.FINISH]
            trigger = draw(st.sampled_from(choices))
        event: StreamEvent
        if trigger is Trigger.TEXT_DELTA:
            event = TextDelta(draw(_TEXT))
        elif trigger is Trigger.REASONING_DELTA:
            event = ReasoningDelta(draw(_TEXT))
        elif trigger is Trigger.TOOL_INPUT_START:
            calls += 1
            open_call = (f"call_{calls}", draw(st.sampled_from(_TOOL_NAMES)))
            event = ToolInputStart(open_call[0], open_call[1], calls - 1)
        elif trigger is Trigger.TOOL_INPUT_DELTA:
            event = ToolInputDelta(open_call[0] if open_call else "call_none", draw(_TEXT))
        elif trigger is Trigger.TOOL_INPUT_END:
            event = ToolInputEnd(open_call[0] if open_call else "call_none")
        elif trigger is Trigger.TOOL_CALL:
            if open_call is None:
                calls += 1
                open_call = (f"call_{calls}", draw(st.sampled_from(_TOOL_NAMES)))
            event = ToolCall(open_call[0], open_call[1], json.dumps({"arg": draw(_TEXT)}), calls - 1)
            open_call = None
        elif trigger is Trigger.USAGE:
            event = Usage(draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5)))
        elif trigger is Trigger.KEEPALIVE:
            event = Keepalive(draw(st.sampled_from(["comment", "ping"])))
        elif trigger is Trigger.METADATA:
            event = Metadata(
                draw(st.sampled_from(["message_start", "response.created", "content_block_stop"]))
            )
        else:
            assert trigger is Trigger.FINISH
            event = Finish(draw(st.sampled_from(FinishReason)))
        events.append(event)
        if machine.can_send(trigger):
            machine.send(trigger)
    return events


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=12)

transport_facts = st.builds(
    TransportFacts,
    kind=st.sampled_from(TransportKind),
    chain=st.lists(_names, max_size=4).map(tuple),
    errno=st.none() | st.sampled_from([104, 111, 32, 110, 113, 101]),
    markers=st.lists(_names, max_size=3).map(tuple),
    confidence=st.sampled_from(Confidence),
)
"""Transport facts of every kind, with plausible chains and errnos."""

provider_errors = st.builds(
    ProviderError,
    kind=st.sampled_from(ProviderErrorKind),
    status=st.none() | st.sampled_from([200, 400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 529]),
    type=st.none() | _names,
    code=st.none() | _names,
    retry_after_s=st.none() | st.floats(0, 600, allow_nan=False),
    should_retry=st.none() | st.booleans(),
    markers=st.lists(_names, max_size=3).map(tuple),
    confidence=st.sampled_from(Confidence),
)
"""Provider errors of every kind."""

# Tool names are caller data and may be anything; summaries must cope (backticks, spaces, unicode).
tool_names = st.none() | st.sampled_from(["apply_patch", "read_file", "x" * 80]) | st.text(max_size=20)

facts = st.builds(
    Facts,
    transport=st.none() | transport_facts,
    provider=st.none() | provider_errors,
    abort_source=st.none() | st.sampled_from(AbortSource),
    request_sent=st.booleans(),
    tool_name=tool_names,
    tool_ran=st.booleans(),
    tool_effectful=st.none() | st.booleans(),
    detail=st.none() | _names,
    finish=st.none() | st.sampled_from(FinishCause),
)
"""Everything the classifier may be told besides (state, edge)."""


# -- (b) wire level ------------------------------------------------------------------------------------------

Fault: TypeAlias = Literal["fin", "rst", "eof"]
_LABELS: Final = itertools.count()
_FAULT_EDGE: Final = {
    "fin": Trigger.DISCONNECTED,
    "rst": Trigger.DISCONNECTED,
    "eof": Trigger.EOF_WITHOUT_TERMINAL,
}
_FAULT_CAUSE: Final = {"fin": "closed_mid_body", "rst": "reset", "eof": "eof_without_terminal"}
_CLASS: Final = {
    "streaming": FailureClass.EARLY_STREAM,
    "generating": FailureClass.MID_GENERATION,
    "tool_input_open": FailureClass.TOOL_INPUT_INTERRUPTED,
    "tool_call": FailureClass.TOOL_CALL_INTERRUPTED,
}
_COMPLETED: Final = (FailureClass.COMPLETED, Verdict.NO_RETRY, None, Phase.FINISHED, "finished")
_PHASE: Final = {
    "streaming": Phase.EARLY_STREAM,
    "generating": Phase.MID_GENERATION,
    "tool_input_open": Phase.TOOL_INPUT,
    "tool_call": Phase.TOOL_CALL,
}


@st.composite
def wire_parts(draw: st.DrawFn, max_parts: int = 5) -> list[tuple[str, ...]]:
    """Parts for `streamfsm.testing.build`: reasoning and text first or interleaved, tool calls anywhere."""
    part = st.one_of(
        st.tuples(st.just("reasoning"), _TEXT),
        st.tuples(st.just("text"), _TEXT),
        st.tuples(
            st.just("tool"),
            st.sampled_from(_TOOL_NAMES),
            st.dictionaries(st.sampled_from(["path", "text", "n"]), _TEXT, max_size=3).map(json.dumps),
        ),
    )
    return draw(st.lists(part, max_size=max_parts))


@dataclass(frozen=True)
class FaultyStream:
    """A stream cut by a fault, and what the oracle says the run's outcome must be."""

    format: Format
    parts: tuple[tuple[str, ...], ...]
    frames: tuple[bytes, ...]  # the whole stream as built
    sent: int  # frames delivered whole
    partial: bytes  # then the start of the next frame (never a complete event), or b""
    fault: Fault
    expected_class: FailureClass
    expected_verdict: Verdict
    expected_edge: Trigger | None  # None: the run completes
    expected_phase: Phase
    expected_cause: str
    script: tuple[Step, ...] = field(repr=False)

    def scenario(self, name: str | None = None) -> Scenario:
        """The stream as a `Scenario` (for `run_scenario` or the ``fault_provider`` fixture)."""
        label = name or f"strategy/{self.format}/{self.sent}+{len(self.partial)}/{self.fault}/{next(_LABELS)}"
        return Scenario(
            label,
            self.script,
            format=self.format,
            expected_class=self.expected_class,
            expected_verdict=self.expected_verdict,
            expected_edge=self.expected_edge,
            expected_phase=self.expected_phase,
            expected_cause=self.expected_cause,
        )


def oracle(
    fmt: Format, delivered: Sequence[bytes], fault: Fault, clean_end: bool
) -> tuple[FailureClass, Verdict, Trigger | None, Phase, str]:
    """(class, verdict, edge, phase, cause) for a stream whose ``delivered`` whole frames arrived before
    ``fault``; ``clean_end``: no partial frame was pending at a clean end of body."""
    activity = "streaming"
    visible = open_call = held = False
    for frame in delivered:
        for meaning in meaning_of(fmt, frame):
            if meaning == "terminal":
                return _COMPLETED
            if meaning in ("text", "reasoning", "tool_start", "call") and open_call:
                activity, open_call = "tool_call", False  # the open call is closed first
            if meaning == "text":
                activity, visible = "generating", True
            elif meaning == "tool_start":
                activity, open_call = "tool_input_open", True
            elif meaning in ("tool_end", "call"):
                activity, held = "tool_call", meaning == "call" or held
            elif meaning == "release" and held:
                activity, held = "tool_call", False  # Gemini's held calls go out with a whole finish
            elif meaning == "call_done" and open_call:
                activity, open_call = "tool_call", False
    # Gemini has no sentinel, and a chat stream may lack [DONE]: a clean end after the finish reason finishes.
    finish_seen = any("finish_seen" in meaning_of(fmt, f) for f in delivered)
    if fault == "eof" and clean_end and finish_seen:
        return _COMPLETED
    verdict = Verdict.USER_CONFIRMED_RETRY if visible else Verdict.SAFE_AUTO_RETRY
    return _CLASS[activity], verdict, _FAULT_EDGE[fault], _PHASE[activity], _FAULT_CAUSE[fault]


@st.composite
def faulty_streams(
    draw: st.DrawFn, formats: Sequence[str] = SSE_FORMATS, faults: Sequence[Fault] = ("fin", "rst", "eof")
) -> FaultyStream:
    """A random stream in a random format, cut at a random point by a random fault (see the module doc)."""
    fmt: Format = draw(st.sampled_from(list(formats)))
    parts = draw(wire_parts())
    frames = build(fmt, parts)
    sent = draw(st.integers(0, len(frames)))
    partial = b""
    if sent < len(frames) and draw(st.booleans()):
        frame = frames[sent]
        # Never a complete event: a frame ends with a blank line, and a trailing CR already ends a line.
        partial = frame[: draw(st.integers(1, len(frame) - 3))]
    fault: Fault = draw(st.sampled_from(list(faults)))
    tail: Step = Fin() if fault == "fin" else Rst() if fault == "rst" else End()
    script = (Headers(), *(Send(f) for f in frames[:sent]), *((Send(partial),) if partial else ()), tail)
    klass, verdict, edge, phase, cause = oracle(fmt, frames[:sent], fault, clean_end=not partial)
    return FaultyStream(
        format=fmt,
        parts=tuple(tuple(p) for p in parts),
        frames=tuple(frames),
        sent=sent,
        partial=partial,
        fault=fault,
        expected_class=klass,
        expected_verdict=verdict,
        expected_edge=edge,
        expected_phase=phase,
        expected_cause=cause,
        script=script,
    )
