"""The compiled table that runs the hot path, and the per-stream machine that uses it.

The table is built by walking the ``transitions`` reference machines, so the declaration stays the single
source of truth; a per-event step is then one attribute read and one dictionary lookup.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ._declaration import INITIAL_ACTIVITY, INITIAL_COMMITMENT, Activity, Commitment, Trigger
from ._reference import ACTIVITY_EDGES, COMMITMENT_EDGES


class State:
    """A stream's state: the pair (activity, commitment). Interned: compare with ``is`` or ``==``."""

    __slots__ = ("_next", "_str", "activity", "commitment")

    activity: Activity
    commitment: Commitment
    _next: dict[Trigger, State]
    _str: str

    def __init__(self, activity: Activity, commitment: Commitment) -> None:
        object.__setattr__(self, "activity", activity)
        object.__setattr__(self, "commitment", commitment)
        object.__setattr__(self, "_next", {})
        object.__setattr__(self, "_str", f"{activity.value}/{commitment.value}")  # every record prints states

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("State is immutable")

    @staticmethod
    def of(activity: Activity, commitment: Commitment = Commitment.NONE) -> State:
        return _STATES[activity, commitment]

    @property
    def is_terminal(self) -> bool:
        return self.activity.is_terminal

    @property
    def allowed(self) -> frozenset[Trigger]:
        """Triggers this state accepts."""
        return frozenset(self._next)

    def __repr__(self) -> str:
        return f"State({self.activity.value}, {self.commitment.value})"

    def __str__(self) -> str:
        return self._str

    def __reduce__(self) -> tuple[object, tuple[Activity, Commitment]]:
        return (State.of, (self.activity, self.commitment))


_STATES: Final = {(a, c): State(a, c) for a in Activity for c in Commitment}
INITIAL_STATE: Final = _STATES[INITIAL_ACTIVITY, INITIAL_COMMITMENT]


def _compile() -> Mapping[tuple[State, Trigger], State]:
    activity_next = {(Activity(s), Trigger(t)): Activity(d) for (s, t), d in ACTIVITY_EDGES.items()}
    commitment_next = {(Commitment(s), Trigger(t)): Commitment(d) for (s, t), d in COMMITMENT_EDGES.items()}
    table: dict[tuple[State, Trigger], State] = {}
    for (activity, trigger), activity_dest in activity_next.items():
        for commitment in Commitment:
            source = _STATES[activity, commitment]
            dest = _STATES[activity_dest, commitment_next.get((commitment, trigger), commitment)]
            table[source, trigger] = dest
            source._next[trigger] = dest
    return MappingProxyType(table)


TABLE: Final = _compile()
"""``{(state, trigger): next_state}``, frozen. Missing keys are illegal moves."""


def _reachable_states() -> frozenset[State]:
    seen = {INITIAL_STATE}
    frontier = [INITIAL_STATE]
    while frontier:
        for dest in frontier.pop()._next.values():
            if dest not in seen:
                seen.add(dest)
                frontier.append(dest)
    return frozenset(seen)


REACHABLE_STATES: Final = _reachable_states()


class IllegalTransition(Exception):
    """A trigger the current state does not allow.

    From the provider (``trigger.source is Source.PROVIDER``) this is a protocol violation; from the agent or
    the runtime it is a bug in the caller.
    """

    def __init__(self, state: State, trigger: Trigger) -> None:
        self.state = state
        self.trigger = trigger
        super().__init__(f"trigger {trigger.value!r} is not allowed in state {state}")


class StreamMachine:
    """One stream's machine: the current state and a bounded history of the triggers it took."""

    __slots__ = ("_state", "history")

    def __init__(self, *, history_size: int = 64, state: State = INITIAL_STATE) -> None:
        if history_size < 1:
            raise ValueError("history_size must be at least 1")
        self._state = state
        self.history: deque[Trigger] = deque(maxlen=history_size)

    @property
    def state(self) -> State:
        return self._state

    def send(self, trigger: Trigger) -> State:
        try:
            dest = self._state._next[trigger]
        except KeyError:
            raise IllegalTransition(self._state, trigger) from None
        self.history.append(trigger)
        self._state = dest
        return dest

    def can_send(self, trigger: Trigger) -> bool:
        return trigger in self._state._next

    def __repr__(self) -> str:
        return f"<StreamMachine {self._state}>"
