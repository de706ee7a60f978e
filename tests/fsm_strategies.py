"""Hypothesis strategies shared by the property suites: trigger sequences and classifier facts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import strategies as st

from streamfsm.classify import (
    AbortSource,
    Confidence,
    Facts,
    ProviderError,
    ProviderErrorKind,
    TransportFacts,
    TransportKind,
)
from streamfsm.machine import FAILURE_TRIGGERS, IllegalTransition, State, StreamMachine, Trigger

ALL_TRIGGERS = tuple(Trigger)
FAILURES = tuple(t for t in Trigger if t in FAILURE_TRIGGERS)


def _in_order(triggers: frozenset[Trigger]) -> list[Trigger]:
    # Declaration order, so a failing example replays and shrinks the same way every time.
    return [t for t in ALL_TRIGGERS if t in triggers]


@st.composite
def trigger_sequences(draw: st.DrawFn, max_steps: int = 40) -> list[Trigger]:
    """At each step: usually a legal progress trigger (so runs get deep: tools, side effects), sometimes any
    legal trigger (failures, finish), sometimes any trigger at all (mostly illegal ones).

    Mode 0 shrinks first, so a minimal counterexample is a plain progress run plus the step that broke."""
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
class Step:
    before: State
    trigger: Trigger
    after: State
    legal: bool


def drive(triggers: list[Trigger], machine: StreamMachine | None = None) -> list[Step]:
    """Send every trigger; an illegal one must raise IllegalTransition naming state and trigger, and change
    nothing (neither state nor history)."""
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
            with pytest.raises(IllegalTransition) as info:
                machine.send(trigger)
            assert info.value.state is before
            assert info.value.trigger is trigger
            assert machine.state is before
            assert list(machine.history) == history
        steps.append(Step(before, trigger, machine.state, legal))
    return steps


def accepted(steps: list[Step]) -> list[Trigger]:
    return [s.trigger for s in steps if s.legal]


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=12)

transport_facts = st.builds(
    TransportFacts,
    kind=st.sampled_from(TransportKind),
    chain=st.lists(_names, max_size=4).map(tuple),
    errno=st.none() | st.sampled_from([104, 111, 32, 110, 113, 101]),
    markers=st.lists(_names, max_size=3).map(tuple),
    confidence=st.sampled_from(Confidence),
)

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

# Tool names are caller data and may be anything; the summaries must cope (backticks, spaces, unicode).
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
)
