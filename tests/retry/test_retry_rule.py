"""Properties of the retry executor's rule, which does no I/O (``_retry_policy.after_failure``): over random
policies, real diagnoses (random states, failure edges and facts through the classifier) and random facts of
a failed attempt, every step keeps the module's promises: nothing the machine forbids, nothing exposed
replayed automatically, no attempt past either budget, provider delays exact, the reported diagnosis never
safer than the machine's, and the same facts always give the same step.
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import event, given
from hypothesis import strategies as st

from streamfsm.classify import (
    AbortSource,
    Diagnosis,
    Facts,
    ProviderError,
    ProviderErrorKind,
    Verdict,
    diagnose,
)
from streamfsm.machine import NON_TERMINAL_ACTIVITIES, Activity, Commitment, State, Trigger
from streamfsm.runtime import DecisionKind, Failed, Recovery, RetryPolicy, after_failure
from streamfsm.runtime.retry._recovery import ContinuePlan, ResumePlan
from streamfsm.runtime.retry._retry_policy import MAX_ATTEMPTS, Step, decide
from streamfsm.wire import Continuation, ContinueRefusal, ContinueStyle, OpenAIResponsesAdapter, ResumeRefusal
from tests.support.fsm_strategies import FAILURES, facts, transport_facts

STATES = tuple(State.of(a, c) for a in NON_TERMINAL_ACTIVITIES for c in Commitment)
_plain_facts = st.builds(Facts, transport=st.none() | transport_facts, request_sent=st.booleans())
_asked_to_wait = st.builds(
    Facts,
    provider=st.builds(
        ProviderError,
        st.sampled_from((ProviderErrorKind.RATE_LIMIT, ProviderErrorKind.OVERLOADED)),
        retry_after_s=st.floats(0, 200, allow_nan=False),
    ),
)
# Any facts (mostly a failure the machine forbids retrying), plain transport faults (mostly allowed), and a
# provider asking to wait.
diagnoses = st.builds(
    diagnose,
    st.sampled_from(STATES),
    st.sampled_from(FAILURES),
    facts | _plain_facts | _asked_to_wait,
)
seconds = st.floats(0, 120, allow_nan=False)


@st.composite
def policies(draw: st.DrawFn) -> RetryPolicy:
    initial = draw(st.floats(0, 10, allow_nan=False))
    return RetryPolicy(
        draw(st.integers(1, MAX_ATTEMPTS)),
        draw(st.floats(0.01, 600, allow_nan=False)),
        initial_delay_s=initial,
        max_delay_s=initial + draw(st.floats(0, 30, allow_nan=False)),
        multiplier=draw(st.floats(1, 4, allow_nan=False)),
        jitter=draw(st.floats(0, 1, allow_nan=False)),
        max_provider_delay_s=draw(seconds),
        retry_possibly_delivered=draw(st.booleans()),
    )


resume_plans = st.builds(
    lambda after, state: ResumePlan("resp_1", after, OpenAIResponsesAdapter(), state),
    st.integers(0, 10_000),
    st.sampled_from(STATES),
)
continue_plans = st.builds(
    lambda text, style: ContinuePlan(Continuation(text), style),
    st.text(max_size=8),
    st.none() | st.sampled_from(ContinueStyle),
)


units = st.floats(0, 1, allow_nan=False, exclude_max=True)


@st.composite
def cases(draw: st.DrawFn) -> tuple[RetryPolicy, Failed, float]:
    """A policy, a failed attempt near its budgets (within them mostly, past them sometimes), a jitter."""
    policy = draw(policies())
    failed = Failed(
        draw(diagnoses),
        draw(st.integers(1, policy.attempts + 1)),
        draw(st.floats(0, policy.total_s * 1.1, allow_nan=False)),
        exposed=draw(st.none() | st.just("events of this attempt already reached the consumer")),
        recovery=draw(st.none() | resume_plans | continue_plans),
        answered=draw(st.booleans()),
        resume_refused=draw(st.none() | st.sampled_from(ResumeRefusal)),
        continue_refused=draw(st.none() | st.sampled_from(ContinueRefusal)),
        resumable=draw(st.none() | resume_plans),
        # The executor's basis is a break it resumed after, so never one the machine forbids retrying.
        basis=draw(st.none() | diagnoses.filter(lambda d: d.verdict is not Verdict.NO_RETRY)),
        continuing=draw(st.booleans()),
    )
    if _refused_prefill(failed):
        # A refused prefill is a 400 before any event of an attempt that opened with nothing held.
        failed = dataclasses.replace(failed, exposed=None)
    return policy, failed, draw(units)


def _refused_prefill(failed: Failed) -> bool:
    """A continuation the model refused as a prefill (a 400: no_retry), sent once more by instruction."""
    return failed.continue_refused is not None and isinstance(failed.recovery, ContinuePlan)


def _refused_resume(failed: Failed) -> bool:
    """A re-attach the provider refused (no_retry), judged by the break it set out to recover from."""
    return failed.resume_refused is not None and failed.basis is not None


@given(cases())
def test_a_step_never_goes_past_the_machine_the_exposure_or_the_budgets(
    case: tuple[RetryPolicy, Failed, float],
) -> None:
    policy, failed, unit = case
    step = after_failure(policy, failed, unit)
    if step.kind is DecisionKind.STOP:
        assert step.stop_reason
        assert step.diagnosis is not None
        return
    assert step.stop_reason is None
    if failed.diagnosis.verdict is Verdict.NO_RETRY:
        assert _refused_prefill(failed) or _refused_resume(failed), "the machine said no_retry"
    # No further attempt starts past either budget.
    assert failed.attempt < policy.attempts
    assert failed.elapsed_s + step.delay_s <= policy.total_s
    assert math.isfinite(step.delay_s)
    assert step.delay_s >= 0
    if step.kind is DecisionKind.ASK:
        assert step.then is None
        assert step.diagnosis is not None
        assert step.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
        return
    assert step.then is not None
    if step.then is Recovery.RESUME:
        assert isinstance(step.plan, ResumePlan)  # the provider's stream: nothing is generated twice
    elif step.plan is None:
        # A fresh attempt, or a continuation of what the consumer has: only if nothing of this one reached it.
        assert failed.exposed is None
        assert step.diagnosis is not None
        assert step.diagnosis.verdict is Verdict.SAFE_AUTO_RETRY
        assert step.then is (Recovery.CONTINUE if failed.continuing else Recovery.RETRY)
    else:
        assert _refused_prefill(failed)
        assert isinstance(step.plan, ContinuePlan)
        assert step.plan.style is ContinueStyle.INSTRUCTION


@given(cases())
def test_the_reported_diagnosis_is_the_failure_never_made_safer(
    case: tuple[RetryPolicy, Failed, float],
) -> None:
    policy, failed, unit = case
    step = after_failure(policy, failed, unit)
    reported = step.diagnosis
    if reported is None:  # a resume under way: the last reported diagnosis stands
        assert step.then is Recovery.RESUME
        return
    # Of this failure, or of the break a refused resume set out to recover from; at most downgraded.
    origins = [failed.diagnosis] + ([failed.basis] if failed.basis is not None else [])
    downgrade = (Verdict.SAFE_AUTO_RETRY, Verdict.USER_CONFIRMED_RETRY)
    assert any(
        origin.summary_key == reported.summary_key
        and (origin.verdict is reported.verdict or (origin.verdict, reported.verdict) == downgrade)
        for origin in origins
    ), "the reported diagnosis is of another failure, or safer than the machine's"
    if failed.exposed is not None and step.then is not Recovery.RESUME:
        assert reported.verdict is not Verdict.SAFE_AUTO_RETRY, "an exposed attempt reported as safe"


@given(cases())
def test_provider_delays_are_exact_and_backoff_stays_under_its_cap(
    case: tuple[RetryPolicy, Failed, float],
) -> None:
    policy, failed, unit = case
    step = after_failure(policy, failed, unit)
    event(step.kind.value)
    if step.kind is DecisionKind.STOP:
        return
    if step.delay_reason == "retry_after":
        asked = [d.retry_after_s for d in (failed.diagnosis, failed.basis) if d is not None]
        assert step.delay_s in asked
        assert step.delay_s <= policy.max_provider_delay_s
    elif step.delay_reason == "backoff":
        assert step.delay_s <= policy.max_delay_s
        assert step.delay_s == policy.backoff(failed.attempt, unit)
    else:
        assert step.delay_reason == "none"
        assert step.delay_s == 0


@given(policies(), st.floats(0.001, 100, allow_nan=False), st.floats(0, 1, allow_nan=False))
def test_a_provider_delay_past_the_cap_stops_rather_than_retrying_early(
    policy: RetryPolicy, extra: float, spent: float
) -> None:
    asked = policy.max_provider_delay_s + extra
    limited = diagnose(
        State.of(Activity.CONNECTING),
        Trigger.HTTP_ERROR,
        Facts(provider=ProviderError(ProviderErrorKind.RATE_LIMIT, retry_after_s=asked)),
    )
    assert limited.verdict is not Verdict.NO_RETRY  # a 429 before any output: a retry may follow
    # Room for the wait in both budgets, so only the cap can stop it.
    roomy = dataclasses.replace(policy, attempts=MAX_ATTEMPTS, total_s=asked + 1)
    step = after_failure(roomy, Failed(limited, 1, spent))
    assert step.kind is DecisionKind.STOP
    assert step.stop_reason is not None
    assert "max_provider_delay_s" in step.stop_reason


@given(cases(), st.sampled_from(AbortSource))
def test_a_local_abort_stops_and_reports_by_rule_2(
    case: tuple[RetryPolicy, Failed, float], source: AbortSource
) -> None:
    policy, failed, unit = case
    step = after_failure(policy, dataclasses.replace(failed, aborted=source), unit)
    assert step.kind is DecisionKind.STOP
    assert step.diagnosis is not None
    assert step.stop_reason is not None
    assert source.value in step.stop_reason
    if failed.exposed is not None:
        assert step.diagnosis.verdict is not Verdict.SAFE_AUTO_RETRY, "an exposed attempt reported as safe"


@given(cases())
def test_the_same_facts_give_the_same_step(case: tuple[RetryPolicy, Failed, float]) -> None:
    policy, failed, unit = case
    first: Step = after_failure(policy, failed, unit)
    assert after_failure(policy, failed, unit) == first


@given(policies(), diagnoses, st.integers(1, MAX_ATTEMPTS + 2), st.floats(0, 700, allow_nan=False), units)
def test_without_a_resume_or_a_continuation_the_step_is_decides_rule(
    policy: RetryPolicy, diagnosis: Diagnosis, attempt: int, elapsed: float, unit: float
) -> None:
    step = after_failure(policy, Failed(diagnosis, attempt, elapsed), unit)
    decision = decide(policy, diagnosis, attempt=attempt, elapsed_s=elapsed, random_unit=unit)
    assert (step.kind, step.diagnosis, step.delay_s, step.delay_reason) == decision[:4]
    assert step.stop_reason == decision.stop_reason
