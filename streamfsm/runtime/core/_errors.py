"""The exceptions a caller of the runtime sees.

    StreamError
    ├── StreamFailed        a run ended in ``failed``; carries ``.diagnosis`` and ``.record``
    │                       (from the retry executor also ``.partial``, ``.attempts``, ``.stop_reason``)
    └── NoRoute             a chain over routes could not start: no route's circuit breaker admits it

Raw transport exceptions never escape a run: they are the ``__cause__`` of a ``StreamFailed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...classify import Diagnosis
    from ..records._record import RunRecord
    from ..retry._breaker import Breaker
    from ..retry._delivery import Partial
    from ._config import AttemptLink


class StreamError(Exception):
    """Base of every error the runtime raises."""


class StreamFailed(StreamError):
    """A run failed. ``str()`` is the plain-language summary; the raw cause is ``__cause__``.

    Raised by a `RetryingRun` (``streamfsm.retrying``), it is the last attempt's failure and also carries
    ``partial`` (what the consumer was given: text, complete tool calls, finished tool results), ``attempts``
    (every attempt, the last one ``"stopped"``) and ``stop_reason`` (why no further attempt was made). A
    plain run leaves them ``None``, ``()`` and ``None``.
    """

    def __init__(self, diagnosis: Diagnosis, record: RunRecord) -> None:
        self.diagnosis = diagnosis
        self.record = record
        self.partial: Partial | None = None
        self.attempts: tuple[AttemptLink, ...] = ()
        self.stop_reason: str | None = None
        # Most details open with the title's words; say them once.
        detail = diagnosis.detail
        super().__init__(detail if detail.startswith(diagnosis.title) else f"{diagnosis.title}. {detail}")

    def __repr__(self) -> str:
        return f"StreamFailed({self.diagnosis.summary_key!r}, verdict={self.diagnosis.verdict.value!r})"


class NoRoute(StreamError):
    """A chain over routes could not send its first attempt anywhere: every route's circuit breaker is open
    (or its probe is out). Nothing was sent, so there is no run and no record; ``breakers`` holds the
    routes' breakers as they stood, and ``str()`` names them."""

    def __init__(self, reason: str, breakers: tuple[Breaker, ...]) -> None:
        self.reason = reason
        self.breakers = breakers
        states = ", ".join(f"{b.route}: {b.state.value}" for b in breakers) or "none"
        super().__init__(f"No route can take the stream now: {reason} ({states}).")
