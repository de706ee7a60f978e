"""The stream state machine: declared as data, validated by ``transitions``, run from a compiled table.

No IO here, and nothing imports ``httpx`` or ``anyio``.
"""

from ._compiled import INITIAL_STATE, REACHABLE_STATES, TABLE, IllegalTransition, State, StreamMachine
from ._declaration import (
    ACTIVITY_TRANSITIONS,
    COMMITMENT_TRANSITIONS,
    FAILURE_TRIGGERS,
    NON_TERMINAL_ACTIVITIES,
    PROVIDER_PROGRESS,
    TERMINAL_ACTIVITIES,
    TIMEOUT_TRIGGERS,
    Activity,
    Commitment,
    Source,
    Trigger,
)
from ._reference import DeclarationError, activity_machine, commitment_machine

__all__ = [
    "ACTIVITY_TRANSITIONS",
    "COMMITMENT_TRANSITIONS",
    "FAILURE_TRIGGERS",
    "INITIAL_STATE",
    "NON_TERMINAL_ACTIVITIES",
    "PROVIDER_PROGRESS",
    "REACHABLE_STATES",
    "TABLE",
    "TERMINAL_ACTIVITIES",
    "TIMEOUT_TRIGGERS",
    "Activity",
    "Commitment",
    "DeclarationError",
    "IllegalTransition",
    "Source",
    "State",
    "StreamMachine",
    "Trigger",
    "activity_machine",
    "commitment_machine",
]
