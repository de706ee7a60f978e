"""DESIGN.md §4 invariants of the classifier (2, 4, 5, 6), exhaustive where the product is finite and over
random trigger sequences and random facts where it is not; plus the seed reports as example tests."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.classify import (
    AbortSource,
    Action,
    Confidence,
    Diagnosis,
    Facts,
    FailureClass,
    Phase,
    ProviderError,
    ProviderErrorKind,
    TransportFacts,
    TransportKind,
    Verdict,
    diagnose,
    diagnose_finished,
    failure_class,
    what_happened,
)
from streamfsm.classify._provider import (
    provider_error_from_document,
    provider_error_from_event,
    provider_error_from_http,
)
from streamfsm.classify._taxonomy import LONGEST_AUTOMATIC_WAIT_S
from streamfsm.machine import (
    NON_TERMINAL_ACTIVITIES,
    TIMEOUT_TRIGGERS,
    Activity,
    Commitment,
    State,
    StreamMachine,
    Trigger,
)
from tests.support.fsm_strategies import FAILURES, drive, facts, trigger_sequences

NON_TERMINAL_STATES = tuple(State.of(a, c) for a in NON_TERMINAL_ACTIVITIES for c in Commitment)
TIMEOUTS = tuple(t for t in FAILURES if t in TIMEOUT_TRIGGERS)
INITIAL = StreamMachine().state
RAW_STRINGS = ("terminated", "incomplete chunked read", "Connection error.")

# A fixed spread of facts for the exhaustive checks: nothing, each transport kind, each provider kind, each
# abort source, and the raw strings planted where a careless summary would copy them from.
SAMPLE_FACTS = (
    Facts(),
    Facts(request_sent=True, tool_name="apply_patch"),
    *(
        Facts(
            transport=TransportFacts(
                kind=kind,
                chain=("TypeError", "SocketError"),
                markers=("message=terminated", "incomplete chunked read", "Connection error."),
            ),
            tool_name="bash",
        )
        for kind in TransportKind
    ),
    *(
        Facts(
            provider=ProviderError(kind=kind, status=500, type="terminated", code="Connection error."),
            detail="incomplete chunked read",
        )
        for kind in ProviderErrorKind
    ),
    *(Facts(abort_source=source) for source in AbortSource),
)


def _check_diagnosis(d: Diagnosis, state: State, edge: Trigger) -> None:
    assert d.state is state
    assert d.edge is edge
    assert isinstance(d.failure_class, FailureClass)
    assert d.failure_class is failure_class(state, edge)
    assert d.failure_class is not FailureClass.COMPLETED
    assert isinstance(d.verdict, Verdict)
    assert isinstance(d.action, Action)
    assert isinstance(d.phase, Phase)
    assert d.phase is not Phase.FINISHED
    assert isinstance(d.title, str)
    assert d.title.strip()
    assert isinstance(d.detail, str)
    assert d.detail.strip()
    assert d.reason.strip()
    assert d.cause
    assert d.summary_key == f"{d.failure_class.value}.{d.cause}"
    # Every cause has its own words (what_happened raises KeyError otherwise), and a provider error never
    # borrows the transport's "connection lost".
    assert d.detail.startswith(what_happened(d.failure_class, d.cause)), d.cause
    if d.failure_class is FailureClass.PROVIDER_ERROR:
        assert "connection was lost" not in d.detail


# 2. Classification is total: every (non-terminal state, failure edge) has exactly one class and one verdict.


def test_classification_totality_exhaustive() -> None:
    seen = set()
    for state, edge, sample in itertools.product(NON_TERMINAL_STATES, FAILURES, SAMPLE_FACTS):
        first = diagnose(state, edge, sample)
        _check_diagnosis(first, state, edge)
        # Exactly one: the same input always gives the same answer.
        assert diagnose(state, edge, sample) == first
        seen.add((state, edge))
    assert len(seen) == len(NON_TERMINAL_STATES) * len(FAILURES) == 7 * 3 * 13


@given(st.sampled_from(NON_TERMINAL_STATES), st.sampled_from(FAILURES), facts)
def test_classification_totality(state: State, edge: Trigger, sample: Facts) -> None:
    d = diagnose(state, edge, sample)
    _check_diagnosis(d, state, edge)
    assert diagnose(state, edge, sample) == d
    if sample.provider is not None:
        assert d.retry_after_s == sample.provider.retry_after_s


@given(trigger_sequences(), st.sampled_from(FAILURES), facts)
def test_classification_totality_along_runs(triggers: list[Trigger], edge: Trigger, sample: Facts) -> None:
    for step in drive(triggers):
        if not step.after.is_terminal:
            _check_diagnosis(diagnose(step.after, edge, sample), step.after, edge)


def test_classification_refuses_what_it_cannot_classify() -> None:
    for activity in (Activity.FINISHED, Activity.FAILED):
        with pytest.raises(ValueError, match="terminal"):
            diagnose(State.of(activity), Trigger.DISCONNECTED, Facts())
    with pytest.raises(ValueError, match="not a failure edge"):
        diagnose(State.of(Activity.STREAMING), Trigger.TEXT_DELTA, Facts())
    with pytest.raises(ValueError, match="not finished"):
        diagnose_finished(State.of(Activity.GENERATING, Commitment.VISIBLE))
    done = diagnose_finished(State.of(Activity.FINISHED, Commitment.VISIBLE))
    assert (done.failure_class, done.summary_key, done.verdict) == (
        FailureClass.COMPLETED,
        "completed.finished",
        Verdict.NO_RETRY,
    )


# 4. Soundness: safe_auto_retry implies nothing visible was delivered and no effectful tool started.


@given(trigger_sequences(), facts)
def test_soundness_of_safe_auto_retry(triggers: list[Trigger], sample: Facts) -> None:
    # diagnose() is pure, so each state a run passes through is judged once: a run of 40 steps otherwise
    # makes a thousand calls, and on a loaded machine an example overran Hypothesis' 200 ms deadline.
    safe_edges: dict[State, list[Trigger]] = {}
    led_there: list[Trigger] = []
    for step in drive(triggers):
        state = step.after
        if state.is_terminal:
            break
        if step.legal:
            led_there.append(step.trigger)
        if state not in safe_edges:
            safe_edges[state] = [
                edge
                for edge in FAILURES
                for used in (sample, Facts())
                if diagnose(state, edge, used).verdict is Verdict.SAFE_AUTO_RETRY
            ]
        for edge in safe_edges[state]:
            assert state.commitment is Commitment.NONE, (state, edge)
            assert Trigger.TEXT_DELTA not in led_there, (led_there, edge)
            assert Trigger.TOOL_EXECUTION_START_EFFECTFUL not in led_there, (led_there, edge)


def test_soundness_of_safe_auto_retry_exhaustive() -> None:
    for state, edge, sample in itertools.product(NON_TERMINAL_STATES, FAILURES, SAMPLE_FACTS):
        d = diagnose(state, edge, sample)
        if d.verdict is Verdict.SAFE_AUTO_RETRY:
            assert state.commitment is Commitment.NONE, (state, edge, sample)
            assert edge not in (Trigger.LOCAL_ABORT, Trigger.CONSUMER_ERROR)


# 5. A failure in tool_input_open or tool_call is never a tool execution failure.


@given(trigger_sequences(), facts)
def test_tool_input_failure_is_never_tool_side_effect(triggers: list[Trigger], sample: Facts) -> None:
    states = [INITIAL] + [s.after for s in drive(triggers)]
    for state in states:
        if state.activity not in (Activity.TOOL_INPUT_OPEN, Activity.TOOL_CALL):
            continue
        for edge in FAILURES:
            d = diagnose(state, edge, sample)
            assert d.failure_class is not FailureClass.TOOL_SIDE_EFFECT, (state, edge)
            assert d.phase is not Phase.TOOL_EXECUTION


def test_tool_input_failure_is_never_tool_side_effect_exhaustive() -> None:
    for commitment, edge in itertools.product(Commitment, FAILURES):
        for activity in (Activity.TOOL_INPUT_OPEN, Activity.TOOL_CALL):
            klass = failure_class(State.of(activity, commitment), edge)
            assert klass is not FailureClass.TOOL_SIDE_EFFECT, (activity, commitment, edge)


# 6. A watchdog timeout is always a failure, never a silent success.


@given(trigger_sequences(), st.sampled_from(TIMEOUTS), facts)
def test_timeout_is_classified_watchdog(triggers: list[Trigger], timeout: Trigger, sample: Facts) -> None:
    machine = StreamMachine()
    drive(triggers, machine)
    state = machine.state
    if state.is_terminal:
        return
    d = diagnose(state, timeout, sample)
    assert d.failure_class is FailureClass.WATCHDOG
    assert d.summary_key == f"watchdog.{timeout.value}"
    assert machine.send(timeout).activity is Activity.FAILED


# Plain words: the raw transport strings never reach a title or detail.


def test_summaries_never_show_raw_transport_strings() -> None:
    for state, edge, sample in itertools.product(NON_TERMINAL_STATES, FAILURES, SAMPLE_FACTS):
        d = diagnose(state, edge, sample)
        for raw in RAW_STRINGS:
            assert raw.lower() not in d.title.lower(), (state, edge, sample, d.title)
            assert raw.lower() not in d.detail.lower(), (state, edge, sample, d.detail)
        assert "{" not in d.detail, d.detail  # no unfilled template


def test_raw_strings_stay_available_as_evidence() -> None:
    d = diagnose(State.of(Activity.GENERATING, Commitment.VISIBLE), Trigger.DISCONNECTED, SAMPLE_FACTS[2])
    assert "message=terminated" in d.evidence
    assert "chain=TypeError <- SocketError" in d.evidence


# The seed reports (DESIGN.md §1, shared/seeds/), as example runs.


def _run(*names: str) -> State:
    machine = StreamMachine()
    for name in names:
        machine.send(Trigger(name))
    return machine.state


UNDICI_CUT = TransportFacts(
    kind=TransportKind.CLOSED_MID_BODY,
    chain=("TypeError", "SocketError"),
    markers=("message=terminated", "cause_code=UND_ERR_SOCKET"),
)


def test_seed_000_early_stream_disconnect_is_safe_to_retry() -> None:
    # Provider progress (reasoning) but no text, no tool call: the socket closed.
    state = _run("request_sent", "headers_received", "reasoning_delta", "reasoning_delta")
    d = diagnose(state, Trigger.DISCONNECTED, Facts(transport=UNDICI_CUT, request_sent=True))
    assert d.failure_class is FailureClass.EARLY_STREAM
    assert d.summary_key == "early_stream.closed_mid_body"
    assert d.verdict is Verdict.SAFE_AUTO_RETRY
    assert d.action is Action.RETRY
    assert "terminated" not in d.title + d.detail


def test_seed_001_cut_while_writing_tool_call_is_not_a_tool_failure() -> None:
    # Text was shown, then tool_input_start and deltas, no tool_input_end, no tool_call, nothing executed.
    state = _run("request_sent", "headers_received", "text_delta", "tool_input_start", "tool_input_delta")
    d = diagnose(state, Trigger.DISCONNECTED, Facts(transport=UNDICI_CUT, tool_name="apply_patch"))
    assert d.failure_class is FailureClass.TOOL_INPUT_INTERRUPTED
    assert d.failure_class is not FailureClass.TOOL_SIDE_EFFECT
    assert d.phase is Phase.TOOL_INPUT
    assert d.summary_key == "tool_input_interrupted.closed_mid_body"
    assert "The tool did not run." in d.detail
    assert "`apply_patch`" in d.title
    assert d.verdict is Verdict.USER_CONFIRMED_RETRY  # the text before the call was already shown
    assert "message=terminated" in d.evidence  # the low-level evidence survives for debugging


def test_seed_002_terminated_during_tool_input_gets_plain_words() -> None:
    # reasoning, tool_input_start, 5 tool_input_delta, then the upstream closed: the UI showed "terminated".
    deltas = ["tool_input_delta"] * 5
    state = _run("request_sent", "headers_received", "reasoning_delta", "tool_input_start", *deltas)
    d = diagnose(state, Trigger.DISCONNECTED, Facts(transport=UNDICI_CUT, tool_name="apply_patch"))
    assert d.failure_class is FailureClass.TOOL_INPUT_INTERRUPTED
    assert d.detail.startswith("The connection closed before the response was complete")
    assert "terminated" not in (d.title + d.detail).lower()
    assert d.verdict is Verdict.SAFE_AUTO_RETRY  # nothing shown, nothing run


def test_seed_user_abort_is_local_not_a_disconnect() -> None:
    state = _run("request_sent", "headers_received", "text_delta")
    d = diagnose(state, Trigger.LOCAL_ABORT, Facts(abort_source=AbortSource.USER))
    assert d.failure_class is FailureClass.LOCAL_ABORT
    assert d.cause == "user"
    assert d.summary_key == "local_abort.user"
    assert d.verdict is Verdict.NO_RETRY
    cut = diagnose(state, Trigger.DISCONNECTED, Facts(transport=UNDICI_CUT))
    assert cut.failure_class is FailureClass.MID_GENERATION  # and the reverse: a cut never looks local


def test_seed_silent_stall_after_output_is_a_watchdog_failure() -> None:
    # The agent app ended this as a success (DESIGN.md §8); here it is a failure the user must confirm.
    machine = StreamMachine()
    for name in ("request_sent", "headers_received", "text_delta", "keepalive", "keepalive"):
        machine.send(Trigger(name))
    d = diagnose(machine.state, Trigger.IDLE_TIMEOUT, Facts())
    assert machine.send(Trigger.IDLE_TIMEOUT) is State.of(Activity.FAILED, Commitment.VISIBLE)
    assert d.failure_class is FailureClass.WATCHDOG
    assert d.summary_key == "watchdog.idle_timeout"
    assert d.verdict is Verdict.USER_CONFIRMED_RETRY
    assert d.action is Action.CONTINUE_WITH_PARTIAL


def test_seed_004_premature_close_is_not_completion() -> None:
    # The proxy's "premature close": events then a clean EOF without the terminal event.
    state = _run("request_sent", "headers_received", "reasoning_delta", "text_delta", "usage")
    d = diagnose(state, Trigger.EOF_WITHOUT_TERMINAL, Facts())
    assert d.failure_class is FailureClass.MID_GENERATION
    assert d.summary_key == "mid_generation.eof_without_terminal"
    assert d.verdict is Verdict.USER_CONFIRMED_RETRY


def test_seed_000_post_tool_call_disconnect_after_side_effect_never_retries() -> None:
    state = _run("request_sent", "headers_received", "tool_call", "tool_execution_start_effectful")
    d = diagnose(state, Trigger.DISCONNECTED, Facts(transport=UNDICI_CUT, tool_name="bash"))
    assert d.failure_class is FailureClass.TOOL_SIDE_EFFECT
    assert d.verdict is Verdict.NO_RETRY
    assert "may already have changed things" in d.detail


# -- error wording (issue 29, root 3): words, not exact codes -----------------------------------------------
# Money, quota and plan limits decide quota_exhausted (no retry) under any status and in any position; rate
# limits without money words stay rate limits; a code means the same whatever its separators and case.

MONEY_CODES = (
    "insufficient_quota",  # OpenAI
    "credit_balance_exhausted",  # OpenAI
    "billing_hard_limit_reached",  # OpenAI
    "project_spend_limit_exceeded",  # OpenAI
    "organization_usage_limit_exceeded",  # OpenAI
    "enforced_spend_limit_reached",  # Anthropic details.error_code
    "billing_error",  # Anthropic 402
    "BILLING_DISABLED",  # Gemini ErrorInfo
    "payment_required",  # OpenRouter, Mistral
    "insufficient_balance",  # gateways in front of DeepSeek and others
    "exceeded_current_quota_error",  # Moonshot
    "budget_exceeded",  # LiteLLM proxy
)
MONEY_MESSAGES = (
    "You exceeded your current quota, please check your plan and billing details.",  # OpenAI, Moonshot
    "Insufficient Balance",  # DeepSeek 402
    "Your credit balance is too low to access the Anthropic API.",  # Anthropic 400
    "Insufficient credits. Add more using https://openrouter.ai/credits",  # OpenRouter 402
    "Your team t1 has either used all available credits or reached its monthly spending limit.",  # xAI
    "You have reached your specified API usage limits. You will regain access on 2026-12-01.",  # Anthropic
    "Billing hard limit has been reached",  # OpenAI
    "Budget has been exceeded! Current cost: 10.2, Max budget: 10.0",  # LiteLLM proxy
    "The account associated with the API key has reached its maximum allowed monthly spending limit.",
    "You've reached your usage limit for this billing cycle.",  # Kimi 403
    "已达到 5 小时的使用上限。您的限额将在 2026-07-05 14:21:10 重置。",  # Zhipu 1308 (coding plan)
)
RATE_CODES = (
    "rate_limit_exceeded",
    "too_many_requests",
    "RESOURCE_EXHAUSTED",
    "rate_limit_error",
    "throttling_rate_quota",  # Alibaba Model Studio Throttling.RateQuota
)
# Rate-limit wording that mentions billing only as a place to raise the limit (OpenAI, Groq): not money.
RATE_MESSAGES = (
    "",
    "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try"
    " again in 20s. You can increase your rate limit by adding a payment method to your account at"
    " https://platform.openai.com/account/billing.",
    "Too many requests. Please retry shortly.",
    "Resource has been exhausted (e.g. check quota).",
    # a token budget per window is not money
    "Per-minute token budget exceeded. Please retry shortly.",
    # a usage limit or quota per short window is a rate limit
    "Usage limit exceeded: 60 requests per minute (RPM).",
)
STATUSES = (400, 401, 402, 403, 404, 408, 422, 429, 500, 502, 503, 529)
POSITIONS = ("http", "chat_event", "anthropic_event", "responses_nested", "responses_failed", "json_at_200")
SEPARATORS = ("_", "-", ".", " ")


@st.composite
def respelled(draw: st.DrawFn, code: str) -> str:
    """``code`` with other separators and case (``too_many_requests`` as ``Too-Many-Requests``)."""
    words = code.lower().replace("_", " ").split()
    style = draw(st.sampled_from(("lower", "upper", "title", "camel", "pascal")))
    if style in ("camel", "pascal"):
        joined = "".join(w.capitalize() for w in words)
        return joined[0].lower() + joined[1:] if style == "camel" else joined
    cased = [w.upper() if style == "upper" else w.capitalize() if style == "title" else w for w in words]
    return draw(st.sampled_from(SEPARATORS)).join(cased)


def _provider_error(position: str, status: int, error: dict[str, object]) -> ProviderError:
    if position == "http":
        return provider_error_from_http(status, {}, json.dumps({"error": error}).encode())
    if position == "chat_event":
        return provider_error_from_event({"error": error})
    if position in ("anthropic_event", "responses_nested"):
        return provider_error_from_event({"type": "error", "error": error})
    if position == "responses_failed":
        return provider_error_from_event({"type": "response.failed", "response": {"error": error}})
    found = provider_error_from_document({"error": error})
    assert found is not None
    return found


def _verdict_of(position: str, provider: ProviderError) -> Verdict:
    edge = Trigger.HTTP_ERROR if position == "http" else Trigger.PROVIDER_ERROR_EVENT
    state = State.of(Activity.CONNECTING) if position == "http" else State.of(Activity.STREAMING)
    return diagnose(state, edge, Facts(provider=provider)).verdict


@given(
    position=st.sampled_from(POSITIONS),
    status=st.sampled_from(STATUSES),
    money=st.one_of(
        st.sampled_from(MONEY_CODES).flatmap(lambda c: st.tuples(st.just("code"), respelled(c))),
        st.sampled_from(MONEY_MESSAGES).map(lambda m: ("message", m)),
    ),
    where=st.sampled_from(("code", "type")),
    rate=st.sampled_from(RATE_CODES),
)
def test_money_words_decide_quota_exhausted_under_any_status_and_position(
    position: str, status: int, money: tuple[str, str], where: str, rate: str
) -> None:
    said, words = money
    # A rate-limit code sits beside the money words (Anthropic's 429 rate_limit_error with a spend-limit
    # error_code, Gemini's RESOURCE_EXHAUSTED with quota words): money still decides.
    error: dict[str, object] = {"type": rate, "message": words} if said == "message" else {where: words}
    if said == "code" and where == "code":
        error["type"] = rate
    got = _provider_error(position, status, error)
    assert got.kind is ProviderErrorKind.QUOTA_EXHAUSTED, (error, got)
    assert _verdict_of(position, got) is Verdict.NO_RETRY
    if said == "message" and not (position == "http" and status == 402):
        # told only in words: the last fallback, recorded and low confidence
        assert got.confidence is Confidence.LOW
        assert any(m.startswith("message=money:") for m in got.markers), got.markers


@given(
    position=st.sampled_from(POSITIONS),
    status=st.sampled_from(tuple(s for s in STATUSES if s != 402)),
    code=st.sampled_from(RATE_CODES).flatmap(respelled),
    where=st.sampled_from(("code", "type", "status")),
    message=st.sampled_from(RATE_MESSAGES),
)
def test_rate_limit_words_without_money_are_a_rate_limit(
    position: str, status: int, code: str, where: str, message: str
) -> None:
    got = _provider_error(position, status, {where: code, "message": message})
    assert got.kind is ProviderErrorKind.RATE_LIMIT, (code, message, got)
    assert _verdict_of(position, got) is Verdict.SAFE_AUTO_RETRY


@given(
    position=st.sampled_from(POSITIONS),
    status=st.sampled_from(STATUSES),
    code=st.sampled_from(
        (
            *MONEY_CODES,
            *RATE_CODES,
            "context_length_exceeded",
            "overloaded_error",
            "invalid_api_key",
            "not_found_error",
            "permission_error",
            "content_policy_violation",
            "server_is_overloaded",
        )
    ),
    data=st.data(),
)
def test_a_code_means_the_same_whatever_its_separators_and_case(
    position: str, status: int, code: str, data: st.DataObject
) -> None:
    spelled = data.draw(respelled(code))
    canonical = _provider_error(position, status, {"code": code})
    other = _provider_error(position, status, {"code": spelled})
    assert other.kind is canonical.kind, (code, spelled)


@given(
    status=st.sampled_from((429, 503, 529)),
    wait=st.one_of(st.integers(0, 60), st.integers(61, 86_400)),
    said=st.sampled_from(("header", "message")),
)
def test_a_stated_wait_past_an_automatic_retry_is_never_automatic(status: int, wait: int, said: str) -> None:
    headers = {"retry-after": str(wait)} if said == "header" else {}
    message = "Rate limit reached." + (f" Please try again in {wait}s." if said == "message" else "")
    got = provider_error_from_http(status, headers, {"error": {"message": message, "type": "requests"}})
    assert got.retry_after_s == wait
    verdict = _verdict_of("http", got)
    assert (verdict is Verdict.SAFE_AUTO_RETRY) is (wait <= LONGEST_AUTOMATIC_WAIT_S), (wait, verdict)


def test_every_class_has_a_meaning_of_its_own() -> None:
    """The errors page's view by class names each class by what its runs share: every class has words, none
    shared with another class, and provider_error's are none of its members' (one kind's title is not what
    the class means)."""
    from streamfsm.classify import CLASS_MEANING, PROVIDER_SAID

    assert set(CLASS_MEANING) == set(FailureClass)
    titles = [title for title, _ in CLASS_MEANING.values()]
    assert len(set(titles)) == len(titles)
    assert all(title and description.endswith(".") for title, description in CLASS_MEANING.values())
    assert CLASS_MEANING[FailureClass.PROVIDER_ERROR][0] not in PROVIDER_SAID.values()
