"""DESIGN.md §4 invariants of the machine, over random trigger sequences that mix legal and illegal triggers.

Invariants 1, 3, 6 and 7 live here; 2, 4 and 5 (the classifier's) in ``test_classify_properties.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transitions import Machine, MachineError

from streamfsm.machine import (
    COMMITMENT_TRANSITIONS,
    INITIAL_STATE,
    REACHABLE_STATES,
    TABLE,
    TERMINAL_ACTIVITIES,
    TIMEOUT_TRIGGERS,
    Activity,
    Commitment,
    IllegalTransition,
    State,
    StreamMachine,
    Trigger,
    activity_machine,
    commitment_machine,
)
from tests.support.fsm_strategies import ALL_TRIGGERS, FAILURES, accepted, drive, trigger_sequences

ALL_STATES = tuple(State.of(a, c) for a in Activity for c in Commitment)
TIMEOUTS = tuple(t for t in Trigger if t in TIMEOUT_TRIGGERS)
DECLARED_COMMITMENT = {(t, src) for t, src, _ in COMMITMENT_TRANSITIONS}


def _drive_to(triggers: list[Trigger]) -> StreamMachine:
    machine = StreamMachine()
    drive(triggers, machine)
    return machine


# 1. Terminal states absorb; every closed run is in exactly one terminal state.


@given(trigger_sequences(), st.lists(st.sampled_from(ALL_TRIGGERS), max_size=5))
def test_terminal_absorption(triggers: list[Trigger], after: list[Trigger]) -> None:
    steps = drive(triggers + after)
    closed_at = next((i for i, s in enumerate(steps) if s.after.is_terminal), None)
    if closed_at is None:
        return
    closing = steps[closed_at]
    # FINISH is the one progress edge that closes a run; every failure edge closes it as failed.
    expected = Activity.FINISHED if closing.trigger is Trigger.FINISH else Activity.FAILED
    assert closing.trigger is Trigger.FINISH or closing.trigger.is_failure
    assert closing.after.activity is expected
    assert closing.after.commitment is closing.before.commitment
    for step in steps[closed_at + 1 :]:
        assert not step.legal, f"{step.trigger.value} moved closed run out of {step.before}"
        assert step.after is closing.after


@given(trigger_sequences(), st.sampled_from(FAILURES))
def test_every_closed_run_is_in_exactly_one_terminal_state(triggers: list[Trigger], failure: Trigger) -> None:
    machine = _drive_to(triggers)
    if not machine.state.is_terminal:
        machine.send(failure)  # every non-terminal state accepts every failure edge
    state = machine.state
    assert state.is_terminal
    assert [a for a in TERMINAL_ACTIVITIES if state.activity is a] == [state.activity]
    assert state.allowed == frozenset()
    for trigger in ALL_TRIGGERS:
        with pytest.raises(IllegalTransition):
            machine.send(trigger)
    assert machine.state is state


def test_terminal_states_have_no_outgoing_edges_in_the_table() -> None:
    for (source, trigger), _ in TABLE.items():
        assert not source.is_terminal, f"{source} has an edge on {trigger.value}"
    for state in ALL_STATES:
        assert state.is_terminal is (state.activity in TERMINAL_ACTIVITIES)
        if state.is_terminal:
            assert state.allowed == frozenset()


# 3. Commitment is monotone.


@given(trigger_sequences())
def test_commitment_is_monotone(triggers: list[Trigger]) -> None:
    steps = drive(triggers)
    for step in steps:
        assert step.after.commitment.rank >= step.before.commitment.rank, step
    # Only a text delta or an effectful tool start may move it at all.
    for step in steps:
        if step.after.commitment is not step.before.commitment:
            assert step.trigger in (Trigger.TEXT_DELTA, Trigger.TOOL_EXECUTION_START_EFFECTFUL), step


def test_commitment_is_monotone_over_the_whole_table() -> None:
    for (source, trigger), dest in TABLE.items():
        assert dest.commitment.rank >= source.commitment.rank, (source, trigger, dest)


# 6. A watchdog timeout is always a failure, never a silent success.


@given(trigger_sequences())
def test_timeout_is_always_a_failure(triggers: list[Trigger]) -> None:
    steps = drive(triggers)
    for step in steps:
        if step.trigger in TIMEOUT_TRIGGERS and step.legal:
            assert step.after.activity is Activity.FAILED, step
    # Every watchdog firing at every point the run passed through, not just the one it happened to take.
    for state in {INITIAL_STATE, *(s.after for s in steps)}:
        for timeout in TIMEOUTS:
            machine = StreamMachine(state=state)
            if state.is_terminal:
                with pytest.raises(IllegalTransition):
                    machine.send(timeout)
                continue
            after = machine.send(timeout)
            assert after.activity is Activity.FAILED, (state, timeout, after)
            assert after.activity is not Activity.FINISHED
            assert after.commitment is state.commitment


# 7. The compiled table equals the ``transitions`` reference machines on every sequence.


def _reference_step(activity: Machine, commitment: Machine, trigger: Trigger) -> bool:
    """Drive the two reference regions like the compiled machine: the activity region decides legality; the
    commitment region follows only legal moves and ignores triggers it does not declare."""
    try:
        activity.trigger(trigger.value)
    except MachineError:
        return False
    commitment_before = commitment.state
    moved = commitment.trigger(trigger.value)
    declared = (trigger, Commitment(commitment_before)) in DECLARED_COMMITMENT
    assert moved is declared, (trigger, commitment_before)
    if not declared:
        assert commitment.state == commitment_before
    return True


@given(trigger_sequences())
def test_differential_compiled_equals_transitions(triggers: list[Trigger]) -> None:
    activity, commitment = activity_machine(), commitment_machine()
    compiled = StreamMachine(history_size=len(triggers) + 1)
    for trigger in triggers:
        before = compiled.state
        reference_legal = _reference_step(activity, commitment, trigger)
        assert compiled.can_send(trigger) is reference_legal, (before, trigger)
        if reference_legal:
            compiled.send(trigger)
        else:
            with pytest.raises(IllegalTransition):
                compiled.send(trigger)
        reference = State.of(Activity(activity.state), Commitment(commitment.state))
        assert compiled.state is reference, (before, trigger)


def test_differential_every_trigger_is_an_event_of_the_reference() -> None:
    # Otherwise ``trigger()`` raises AttributeError, not MachineError, and the differential would miss it.
    assert set(activity_machine().events) == {t.value for t in Trigger}


def test_differential_exhaustive_single_steps() -> None:
    # Every (state, trigger) pair once, starting the reference regions in that state; the compiled side is
    # checked both as the frozen TABLE and as what ``send`` actually does.
    for state in ALL_STATES:
        for trigger in ALL_TRIGGERS:
            activity, commitment = activity_machine(), commitment_machine()
            activity.set_state(state.activity.value)
            commitment.set_state(state.commitment.value)
            legal = _reference_step(activity, commitment, trigger)
            machine = StreamMachine(state=state)
            assert ((state, trigger) in TABLE) is legal, (state, trigger)
            assert (trigger in state.allowed) is legal
            if legal:
                reference = State.of(Activity(activity.state), Commitment(commitment.state))
                assert TABLE[state, trigger] is reference, (state, trigger)
                assert machine.send(trigger) is reference, (state, trigger)
            else:
                with pytest.raises(IllegalTransition):
                    machine.send(trigger)


# Illegal triggers, history, reachability.


@given(trigger_sequences())
def test_illegal_trigger_raises_and_changes_nothing(triggers: list[Trigger]) -> None:
    # ``drive`` asserts the contract on every step; here, that sequences really do mix both kinds.
    steps = drive(triggers)
    for step in steps:
        assert step.legal is ((step.before, step.trigger) in TABLE)
        if step.legal:
            assert step.after is TABLE[step.before, step.trigger]


def test_illegal_transition_names_state_and_trigger() -> None:
    machine = StreamMachine()
    with pytest.raises(IllegalTransition, match="'text_delta' is not allowed in state idle/none") as info:
        machine.send(Trigger.TEXT_DELTA)
    assert info.value.state is INITIAL_STATE
    assert info.value.trigger is Trigger.TEXT_DELTA
    assert machine.state is INITIAL_STATE
    assert list(machine.history) == []


@given(trigger_sequences(max_steps=60), st.integers(1, 8))
def test_history_is_bounded_by_its_maxlen(triggers: list[Trigger], size: int) -> None:
    machine = StreamMachine(history_size=size)
    steps = drive(triggers, machine)
    assert machine.history.maxlen == size
    assert len(machine.history) <= size
    assert list(machine.history) == accepted(steps)[-size:]


def test_history_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="history_size"):
        StreamMachine(history_size=0)


@given(trigger_sequences())
def test_every_visited_state_is_declared_reachable(triggers: list[Trigger]) -> None:
    for step in drive(triggers):
        assert step.after in REACHABLE_STATES
