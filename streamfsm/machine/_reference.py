"""The ``transitions`` reference machines, built from the declaration at import.

They validate the declaration, draw the diagrams, and serve as the oracle in the differential test. They are
never driven per event: the compiled table in ``_compiled`` is.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final, TypeVar

from transitions import Machine

from ._declaration import (
    ACTIVITY_TRANSITIONS,
    COMMITMENT_TRANSITIONS,
    FAILURE_TRIGGERS,
    INITIAL_ACTIVITY,
    INITIAL_COMMITMENT,
    NON_TERMINAL_ACTIVITIES,
    Activity,
    Commitment,
    Trigger,
)

E = TypeVar("E", bound=enum.Enum)


class DeclarationError(Exception):
    """The declared machine breaks one of its own rules."""


def build_machine(
    states: type[E],
    transitions: Sequence[tuple[Trigger, E, E]],
    initial: E,
    *,
    machine_class: type[Machine] = Machine,
    **options: Any,
) -> Machine:
    """A ``transitions`` machine for one region, without auto transitions."""
    return machine_class(
        states=[s.value for s in states],
        transitions=[[t.value, src.value, dst.value] for t, src, dst in transitions],
        initial=initial.value,
        auto_transitions=False,
        **options,
    )


def edges_of(machine: Machine) -> dict[tuple[str, str], str]:
    """Walk ``machine.events`` into ``{(state, trigger): destination}``; refuse ambiguous edges."""
    edges: dict[tuple[str, str], str] = {}
    for trigger, event in machine.events.items():
        for source, transitions in event.transitions.items():
            for transition in transitions:
                key = (source, trigger)
                if transition.dest is None:
                    raise DeclarationError(f"trigger {trigger!r} from {source!r} has no destination")
                if key in edges and edges[key] != transition.dest:
                    raise DeclarationError(f"trigger {trigger!r} from {source!r} has two destinations")
                if transition.conditions:
                    raise DeclarationError(f"trigger {trigger!r} from {source!r} is conditional")
                edges[key] = transition.dest
    return edges


def _reachable(edges: dict[tuple[str, str], str], start: str) -> set[str]:
    seen = {start}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for (source, _), dest in edges.items():
            if source == here and dest not in seen:
                seen.add(dest)
                queue.append(dest)
    return seen


def validate(
    machine: Machine,
    states: Iterable[enum.Enum],
    initial: enum.Enum,
    *,
    must_fail_from: Iterable[enum.Enum] = (),
    failed: enum.Enum | None = None,
) -> dict[tuple[str, str], str]:
    """Check the declaration's rules and return its edges."""
    names = {s.value for s in states}
    edges = edges_of(machine)
    for (source, trigger_name), dest in edges.items():
        for name in (source, dest):
            if name not in names:
                raise DeclarationError(f"trigger {trigger_name!r} names unknown state {name!r}")
    unreachable = names - _reachable(edges, initial.value)
    if unreachable:
        raise DeclarationError(f"states unreachable from {initial.value!r}: {sorted(unreachable)}")
    if failed is not None:
        for state in must_fail_from:
            for failure in FAILURE_TRIGGERS:
                if edges.get((state.value, failure.value)) != failed.value:
                    raise DeclarationError(
                        f"no {failure.value!r} edge from {state.value!r} to {failed.value!r}"
                    )
    return edges


def activity_machine(**options: Any) -> Machine:
    return build_machine(Activity, ACTIVITY_TRANSITIONS, INITIAL_ACTIVITY, **options)


def commitment_machine(**options: Any) -> Machine:
    # Triggers a region does not declare leave it where it is.
    return build_machine(
        Commitment, COMMITMENT_TRANSITIONS, INITIAL_COMMITMENT, ignore_invalid_triggers=True, **options
    )


ACTIVITY_MACHINE: Final = activity_machine()
COMMITMENT_MACHINE: Final = commitment_machine()

ACTIVITY_EDGES: Final = validate(
    ACTIVITY_MACHINE,
    Activity,
    INITIAL_ACTIVITY,
    must_fail_from=NON_TERMINAL_ACTIVITIES,
    failed=Activity.FAILED,
)
COMMITMENT_EDGES: Final = validate(COMMITMENT_MACHINE, Commitment, INITIAL_COMMITMENT)


def _check_monotone(edges: dict[tuple[str, str], str]) -> None:
    for (source, trigger), dest in edges.items():
        if Commitment(dest).rank < Commitment(source).rank:
            raise DeclarationError(f"commitment moves backwards on {trigger!r}: {source!r} -> {dest!r}")


_check_monotone(COMMITMENT_EDGES)
