"""The retry executor's rules, without I/O: the policy, and what to do after an attempt failed.

`after_failure` is the whole decision the executor (``_retry``) takes when an attempt fails, from the facts
it saw (`Failed`): stop, go on automatically (a fresh attempt, a re-attach, the same continuation), or ask.
`decide` is its last part, the rule for a failure that is neither a resume nor a refused prefill. The
executor does the waiting, the asking and the opening; the rules themselves are in its docstring.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import random
from dataclasses import KW_ONLY, dataclass
from typing import Final, NamedTuple

from ...classify import (
    LONGEST_AUTOMATIC_WAIT_S,
    MAX_EVIDENCE,
    VERDICT_LEAD,
    AbortSource,
    Action,
    Diagnosis,
    Verdict,
)
from ...wire import ContinueRefusal, ContinueStyle, ResumeRefusal
from ..core._config import MAX_ATTEMPT_LINKS
from ._recovery import ContinuePlan, Recovery, RecoveryPlan, ResumePlan

__all__ = [
    "MAX_ATTEMPTS",
    "Decision",
    "DecisionKind",
    "Failed",
    "RetryPolicy",
    "Step",
    "after_failure",
    "budget_spent",
    "chosen",
    "decide",
    "downgraded",
    "stopped_locally",
]

MAX_ATTEMPTS: Final = MAX_ATTEMPT_LINKS


def _number(name: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'positive' if positive else 'zero or more'}, not {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts, and how long, a stream may take. Attempts and total time are bound together, and
    neither has a default: a policy says both (``RetryPolicy(attempts=4, total_s=90)``).

    * ``attempts``: attempts in all, the first included (1 to 32; 1 never retries).
    * ``total_s``: no attempt starts later than this many seconds after the first (time spent waiting for a
      confirmation excluded).
    * ``initial_delay_s`` (0.5), ``multiplier`` (2), ``max_delay_s`` (10): exponential backoff.
    * ``jitter`` (0.5): the fraction of each backoff that is random; 1 is full jitter, 0.5 equal jitter.
    * ``max_provider_delay_s`` (60): the longest provider-requested delay honoured; a longer one stops.
      The machine never calls a wait longer than ``LONGEST_AUTOMATIC_WAIT_S`` (60) an automatic retry: a
      larger value here lets a *confirmed* retry wait that long.
    * ``retry_possibly_delivered`` (True): whether a request that was sent but never answered (the provider
      may have done, and billed, the work) may be retried automatically. False asks for confirmation instead.
    """

    attempts: int
    total_s: float
    _: KW_ONLY
    initial_delay_s: float = 0.5
    max_delay_s: float = 10.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_provider_delay_s: float = LONGEST_AUTOMATIC_WAIT_S
    retry_possibly_delivered: bool = True

    def __post_init__(self) -> None:
        attempts = self.attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_ATTEMPTS:
            raise ValueError(f"attempts must be an integer from 1 to {MAX_ATTEMPTS}, not {attempts!r}")
        _number("total_s", self.total_s, positive=True)
        _number("initial_delay_s", self.initial_delay_s)
        _number("max_delay_s", self.max_delay_s)
        _number("max_provider_delay_s", self.max_provider_delay_s)
        if self.max_delay_s < self.initial_delay_s:
            raise ValueError(
                f"max_delay_s ({self.max_delay_s!r}) must not be less than initial_delay_s "
                f"({self.initial_delay_s!r})"
            )
        if _number("multiplier", self.multiplier) < 1:
            raise ValueError(f"multiplier must be at least 1, not {self.multiplier!r}")
        if _number("jitter", self.jitter) > 1:
            raise ValueError(f"jitter must be a fraction from 0 to 1, not {self.jitter!r}")
        if not isinstance(self.retry_possibly_delivered, bool):
            raise TypeError(f"retry_possibly_delivered must be a bool, not {self.retry_possibly_delivered!r}")

    def backoff(self, attempt: int, random_unit: float | None = None) -> float:
        """The delay after attempt ``attempt`` failed; ``random_unit`` in [0, 1) (drawn when None)."""
        exponent = min(max(attempt - 1, 0), 64)  # past 64 doublings every cap has long been reached
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier**exponent)
        unit = random.random() if random_unit is None else random_unit
        return base * (1.0 - self.jitter * unit)


# -- the rule ---------------------------------------------------------------------------------------------


class DecisionKind(str, enum.Enum):
    """What follows a failed attempt. A str, so that a `Decision` reads as the plain tuple it always was."""

    RETRY = "retry"  # another attempt, automatically
    ASK = "ask"  # another attempt once ``confirm`` says so
    STOP = "stop"  # none: the chain ends with this failure


class Decision(NamedTuple):
    """What to do after a failed attempt: retry automatically, ask first or stop; the diagnosis reported
    for the attempt, the delay before the next one and why, and why it stops."""

    kind: DecisionKind
    diagnosis: Diagnosis
    delay_s: float = 0.0
    delay_reason: str = "none"
    stop_reason: str | None = None


def _reported(diagnosis: Diagnosis, reason: str, action: Action, marker: str) -> Diagnosis:
    """The machine said safe, the executor cannot stand behind it: the same facts, reported as needing
    confirmation with the executor's reason."""
    old = f"{VERDICT_LEAD[diagnosis.verdict]}: {diagnosis.reason}."
    new = f"{VERDICT_LEAD[Verdict.USER_CONFIRMED_RETRY]}: {reason}."
    detail = diagnosis.detail
    detail = detail[: -len(old)] + new if detail.endswith(old) else f"{detail} {new}"
    return dataclasses.replace(
        diagnosis,
        verdict=Verdict.USER_CONFIRMED_RETRY,
        action=action,
        reason=reason,
        detail=detail,
        evidence=(*diagnosis.evidence[: MAX_EVIDENCE - 1], marker),
    )


def downgraded(policy: RetryPolicy, diagnosis: Diagnosis, exposed: str | None) -> Diagnosis:
    """Rule 2: the diagnosis reported for a failed attempt. A ``safe_auto_retry`` the executor cannot stand
    behind (the attempt was exposed, or possibly delivered under a policy that does not retry that) becomes
    ``user_confirmed_retry``; any other diagnosis is reported as is. Applies whether or not the chain goes on
    (a local abort stops it, but never reports an exposed attempt as safe)."""
    if diagnosis.verdict is not Verdict.SAFE_AUTO_RETRY:
        return diagnosis
    if exposed is not None:
        return _reported(diagnosis, exposed, Action.CONTINUE_WITH_PARTIAL, "executor=exposed")
    if diagnosis.possibly_delivered and not policy.retry_possibly_delivered:
        reason = (
            "the request was sent and never answered, so the provider may have done (and billed) it; "
            "this policy does not retry that automatically"
        )
        return _reported(diagnosis, reason, Action.ASK_USER, "executor=possibly_delivered")
    return diagnosis


def decide(
    policy: RetryPolicy,
    diagnosis: Diagnosis,
    *,
    attempt: int,
    elapsed_s: float,
    exposed: str | None = None,
    random_unit: float | None = None,
) -> Decision:
    """The executor's rule for one failed attempt (see ``_retry``'s docstring). ``exposed``: why events of the
    attempt already reached the consumer, or None if nothing did."""
    verdict = diagnosis.verdict
    if verdict is Verdict.NO_RETRY:
        return Decision(
            DecisionKind.STOP, diagnosis, stop_reason=f"the attempt must not be retried: {diagnosis.reason}"
        )
    reported = downgraded(policy, diagnosis, exposed)
    automatic = reported.verdict is Verdict.SAFE_AUTO_RETRY
    if attempt >= policy.attempts:
        return Decision(
            DecisionKind.STOP,
            reported,
            stop_reason=f"the attempt budget is used ({attempt} of {policy.attempts})",
        )
    asked = reported.retry_after_s
    if asked is not None:
        if asked > policy.max_provider_delay_s:
            return Decision(
                DecisionKind.STOP,
                reported,
                stop_reason=(
                    f"the provider asked to wait {asked:g} s, longer than max_provider_delay_s "
                    f"({policy.max_provider_delay_s:g} s)"
                ),
            )
        delay, why = asked, "retry_after"
    elif automatic:
        delay, why = policy.backoff(attempt, random_unit), "backoff"
    else:
        delay, why = 0.0, "none"
    if elapsed_s + delay > policy.total_s:
        return Decision(
            DecisionKind.STOP,
            reported,
            stop_reason=(
                f"the time budget is used: {elapsed_s:.3g} s spent, the next attempt would start after "
                f"{elapsed_s + delay:.3g} s (total_s={policy.total_s:g})"
            ),
        )
    return Decision(DecisionKind.RETRY if automatic else DecisionKind.ASK, reported, delay, why)


def budget_spent(policy: RetryPolicy, attempt: int, elapsed_s: float, delay_s: float) -> str | None:
    """Why no further attempt may start (rules 3 and 4's bounds), or None."""
    if attempt >= policy.attempts:
        return f"the attempt budget is used ({attempt} of {policy.attempts})"
    if elapsed_s + delay_s > policy.total_s:
        return f"the time budget is used: {elapsed_s:.3g} s spent (total_s={policy.total_s:g})"
    return None


def _refused(basis: Diagnosis, refusal: ResumeRefusal) -> Diagnosis:
    """The break a refused resume tried to recover from, saying why resuming was not possible."""
    detail = f"{basis.detail} Resuming the stream was refused: {refusal.reason}."
    evidence = (*basis.evidence[: MAX_EVIDENCE - 1], f"resume_refused={refusal.value}")
    return dataclasses.replace(basis, detail=detail, evidence=evidence)


def stopped_locally(source: AbortSource, where: str) -> str:
    """The stop reason of a chain that ``abort()`` ended ``where``."""
    return f"the chain was stopped locally (source: {source.value}) {where}"


@dataclass(frozen=True, slots=True)
class Failed:
    """The facts of a failed attempt, as the executor saw them.

    ``attempt``: the requests made so far (the SDK's own retries included); ``elapsed_s``: time since the
    first attempt opened, waits for confirmation excluded; ``exposed``: why events of the attempt already
    reached the consumer (None: nothing did); ``aborted``: who called ``abort()``, if anyone did;
    ``recovery``: the plan the attempt opened with; ``answered``: whether its response began; the
    provider's refusals of a resume or a continuation; ``resumable``: how the provider's stream can be
    re-attached, when it can; ``basis``: the break an earlier resume set out to recover from;
    ``continuing``: whether the chain is continuing a delivered answer.
    """

    diagnosis: Diagnosis
    attempt: int
    elapsed_s: float
    _: KW_ONLY
    exposed: str | None = None
    aborted: AbortSource | None = None
    recovery: RecoveryPlan | None = None
    answered: bool = True
    resume_refused: ResumeRefusal | None = None
    continue_refused: ContinueRefusal | None = None
    resumable: ResumePlan | None = None
    basis: Diagnosis | None = None
    continuing: bool = False


@dataclass(frozen=True, slots=True)
class Step:
    """What the executor does after a failed attempt.

    ``kind``: stop, go on automatically (`DecisionKind.RETRY`) or ask. ``diagnosis``: the one reported for
    the attempt (None while a resume is under way: the last reported one stands). ``then``: how an automatic
    next attempt begins; ``plan``: its plan when the rule knows it (a re-attach, the same continuation by
    instruction), None when the executor builds a continuation of what was delivered. ``basis``: what to
    fall back on if the provider refuses a re-attach. ``prefill_refused``: the model refused a prefilled
    continuation, so every later continuation is an instruction.
    """

    kind: DecisionKind
    diagnosis: Diagnosis | None
    stop_reason: str | None = None
    delay_s: float = 0.0
    delay_reason: str = "none"
    then: Recovery | None = None
    plan: RecoveryPlan | None = None
    basis: Diagnosis | None = None
    prefill_refused: bool = False


def _stop(diagnosis: Diagnosis, reason: str, *, prefill_refused: bool = False) -> Step:
    return Step(DecisionKind.STOP, diagnosis, stop_reason=reason, prefill_refused=prefill_refused)


def after_failure(policy: RetryPolicy, failed: Failed, random_unit: float | None = None) -> Step:
    """What follows a failed attempt: a local abort stops; then *Resume comes first*; then rules 1 to 5 (see
    ``_retry``'s docstring). ``random_unit`` in [0, 1): the backoff's jitter (drawn when None)."""
    attempt, elapsed = failed.attempt, failed.elapsed_s
    if failed.aborted is not None:
        # Stopped locally, but the attempt is reported by the same rule 2 as any other: an exposed or
        # possibly delivered attempt is never reported as safe to replay.
        reported = downgraded(policy, failed.diagnosis, failed.exposed)
        return _stop(reported, stopped_locally(failed.aborted, "before a retry"))
    resuming = failed.recovery
    if isinstance(resuming, ResumePlan) and failed.resume_refused is None and not failed.answered:
        # The re-attach itself failed before any answer (a refused connection, a 503): a GET of a stored
        # stream generates nothing, so it is tried again like any safe request.
        decision = decide(
            policy, failed.diagnosis, attempt=attempt, elapsed_s=elapsed, random_unit=random_unit
        )
        if decision.kind is not DecisionKind.STOP:
            delay = decision.delay_s or policy.backoff(attempt, random_unit)
            if elapsed + delay <= policy.total_s:
                why = decision.delay_reason if decision.delay_s else "backoff"
                return Step(DecisionKind.RETRY, None, None, delay, why, then=Recovery.RESUME, plan=resuming)
    if failed.continue_refused is not None and isinstance(resuming, ContinuePlan):
        # The model takes no prefill (Anthropic's current ones): the same continuation, once, by
        # instruction. Nothing of the refused request reached the consumer; no later one is a prefill.
        stop = budget_spent(policy, attempt, elapsed, 0.0)
        if stop is not None:
            return _stop(failed.diagnosis, stop, prefill_refused=True)
        plan = dataclasses.replace(resuming, style=ContinueStyle.INSTRUCTION)
        return Step(
            DecisionKind.RETRY, failed.diagnosis, then=Recovery.CONTINUE, plan=plan, prefill_refused=True
        )
    if failed.resumable is not None and failed.diagnosis.verdict is not Verdict.NO_RETRY:
        # Re-attach when the provider allows it, whatever reached the consumer: nothing is generated twice.
        reported = downgraded(policy, failed.diagnosis, failed.exposed)
        stop = budget_spent(policy, attempt, elapsed, 0.0)
        if stop is not None:
            return _stop(reported, stop)
        # What to fall back on if the provider refuses: this break, as the executor reports it.
        return Step(DecisionKind.RETRY, None, then=Recovery.RESUME, plan=failed.resumable, basis=reported)
    diagnosis = failed.diagnosis
    if failed.resume_refused is not None and failed.basis is not None:
        # The provider would not resume: fall back to what the broken stream itself allowed, and say why.
        diagnosis = _refused(failed.basis, failed.resume_refused)
    decision = decide(
        policy, diagnosis, attempt=attempt, elapsed_s=elapsed, exposed=failed.exposed, random_unit=random_unit
    )
    if decision.kind is DecisionKind.STOP:
        assert decision.stop_reason is not None
        return _stop(decision.diagnosis, decision.stop_reason)
    then = None
    if decision.kind is DecisionKind.RETRY:
        # Nothing of this attempt reached the consumer: try again as the delivered answer stands, a fresh
        # request, or (after a continuation) the same continuation.
        then = Recovery.CONTINUE if failed.continuing else Recovery.RETRY
    return Step(decision.kind, decision.diagnosis, None, decision.delay_s, decision.delay_reason, then)


def chosen(answer: object, offered: tuple[Recovery, ...]) -> Recovery | None:
    """What ``confirm``'s answer takes: True the first recovery offered, one on offer that one, else none."""
    choice = offered[0] if answer is True else answer
    return choice if isinstance(choice, Recovery) and choice in offered else None
