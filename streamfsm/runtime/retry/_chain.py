"""The chain record of a retried stream: every attempt that ended, as an `AttemptLink`, their records, and the
`Ids` that link the next attempt to the earlier ones. No I/O; the executor (``_retry``) appends to it.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from typing import Protocol

from ...classify import Diagnosis
from ...wire import ContinueRefusal, ResumeRefusal
from ..core._config import MAX_ATTEMPT_LINKS, AttemptLink, Ids
from ..records._record import RunRecord
from ._recovery import ContinuePlan, Recovery, RecoveryPlan, ResumePlan

__all__ = ["Attempt", "Chain", "LinkDecision", "link"]


class LinkDecision(enum.Enum):
    """What the executor did after an attempt (``AttemptLink.decision``)."""

    AUTO_RETRY = "auto_retry"
    RACED = "raced"  # it raced another route's attempt for the first token, and was stopped when it lost
    CONFIRMED_RETRY = "confirmed_retry"
    SDK_RETRY = "sdk_retry"  # the SDK client retried the request itself before the run saw it
    COMPLETED = "completed"
    STOPPED = "stopped"


class Attempt(Protocol):
    """What the chain reads of an attempt's run."""

    @property
    def run_id(self) -> str: ...
    @property
    def ids(self) -> Ids: ...
    @property
    def diagnosis(self) -> Diagnosis | None: ...


class Chain:
    """``links``: the attempts that were retried, oldest first; ``end``: the last one once the chain ended;
    ``records``: every ended attempt's record (each also went to the attempt's sinks, once)."""

    def __init__(self, base: Ids) -> None:
        self.base = base
        self.trace_id = base.trace_id or uuid.uuid4().hex
        self.links: list[AttemptLink] = []
        self.end: AttemptLink | None = None
        self.records: list[RunRecord] = []
        self._numbered = 0  # the latest attempt's number: a raced attempt is numbered before its rival ends

    @property
    def attempts(self) -> tuple[AttemptLink, ...]:
        tail = (self.end,) if self.end is not None else ()
        return (*self.links, *tail)

    @property
    def requests(self) -> int:
        """The requests made so far, the SDK's own retries included: the latest attempt's number."""
        return len(self.links) + 1

    def next_ids(self, plan: RecoveryPlan | None) -> Ids:
        """The `Ids` the next attempt opens with: the chain's trace, its number, the attempts before it."""
        self._numbered = attempt = max(len(self.links), self._numbered) + 1
        return dataclasses.replace(
            self.base,
            trace_id=self.trace_id,
            attempt=attempt,
            previous_run_id=self.links[-1].run_id if self.links else None,
            attempts=tuple(self.links),
            recovery=plan,
        )

    def sdk_retried(self, link: AttemptLink, count: int) -> None:
        """The SDK retried the attempt's request ``count`` times: those requests are attempts of the chain too
        (with the attempt's outcome: the SDK retried what it got), as many as the record can list."""
        room = max(0, MAX_ATTEMPT_LINKS - 1 - len(self.links))
        self.links.extend([link] * min(count, room))

    def unlink(self, run_id: str) -> None:
        """The attempt ``run_id`` is not retried after all: the chain stopped while waiting for the next."""
        if self.links and self.links[-1].run_id == run_id:
            self.links.pop()


def link(
    run: Attempt,
    decision: LinkDecision,
    delay_s: float = 0.0,
    delay_reason: str = "none",
    *,
    then: Recovery | None = None,
    plan: RecoveryPlan | None = None,
    resume_refused: ResumeRefusal | None = None,
    continue_refused: ContinueRefusal | None = None,
    breaker: str | None = None,
) -> AttemptLink:
    """How an ended attempt is linked: what was decided after it, how the next one began, and (over
    routes) the attempt's route and its breaker's state once it ended."""
    diagnosis = run.diagnosis
    route = run.ids.route
    assert diagnosis is not None
    return AttemptLink(
        run_id=run.run_id,
        attempt=run.ids.attempt,
        summary_key=diagnosis.summary_key,
        verdict=diagnosis.verdict.value,
        decision=decision.value,
        delay_s=round(delay_s, 4),
        delay_reason=delay_reason,
        next=then.value if then is not None else None,
        resume_from=plan.starting_after if isinstance(plan, ResumePlan) else None,
        continue_after_chars=plan.after_chars if isinstance(plan, ContinuePlan) else None,
        resume_refused=resume_refused.value if resume_refused is not None else None,
        continue_refused=continue_refused.value if continue_refused is not None else None,
        route=route.name if route is not None else None,
        breaker=breaker if route is not None else None,
    )
