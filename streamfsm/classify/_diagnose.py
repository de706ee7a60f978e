"""(state, edge, facts) → Diagnosis. Pure and total.

The rules, in order:

1. The **class** says where and how: a local abort, a consumer error, a watchdog, a provider error and a
   protocol error are named by their edge; any other failure (connect failure, disconnect, EOF without the
   terminal event) is named by the activity it interrupted. A run interrupted in ``tool_input_open`` or
   ``tool_call`` is never a tool execution failure: the tool had not run. ``tool_input_unfinished`` (the
   provider ended the response, or a call, before the call's input was whole: an output limit, a filter, an
   unrecognised finish, arguments that do not parse) is named by the activity too, ``tool_input_interrupted``,
   with the finish's cause as its detail (``unparseable_arguments`` when no finish left it so).
2. The **verdict** comes from the cause first where the cause forbids a retry (a local abort, the consumer's
   own error, credentials, a request the provider rejected, a provider that said not to retry), then from
   commitment (a side effect forbids replay, visible output needs the user), then from a stated wait longer
   than ``LONGEST_AUTOMATIC_WAIT_S`` (asked, never automatic), and only then from the cause's nature
   (transient faults before anything escaped are safe to retry).
"""

from __future__ import annotations

from typing import Final

from ..machine import Activity, Commitment, State, Trigger
from ._finish import shown_reason
from ._summaries import summarize
from ._taxonomy import (
    JSON_COMPLETION,
    LONGEST_AUTOMATIC_WAIT_S,
    AbortSource,
    Action,
    Confidence,
    Diagnosis,
    Facts,
    FailureClass,
    FinishCause,
    Phase,
    ProviderErrorKind,
    TransportKind,
    Verdict,
)

_PHASE: Final = {
    Activity.IDLE: Phase.BEFORE_CONNECTION,
    Activity.CONNECTING: Phase.BEFORE_CONNECTION,
    Activity.STREAMING: Phase.EARLY_STREAM,
    Activity.GENERATING: Phase.MID_GENERATION,
    Activity.TOOL_INPUT_OPEN: Phase.TOOL_INPUT,
    Activity.TOOL_CALL: Phase.TOOL_CALL,
    Activity.TOOL_EXECUTING: Phase.TOOL_EXECUTION,
    Activity.FINISHED: Phase.FINISHED,
    Activity.FAILED: Phase.FINISHED,
}

_CLASS_BY_EDGE: Final = {
    Trigger.LOCAL_ABORT: FailureClass.LOCAL_ABORT,
    Trigger.CONSUMER_ERROR: FailureClass.CONSUMER_ERROR,
    Trigger.CONNECT_TIMEOUT: FailureClass.WATCHDOG,
    Trigger.FIRST_TOKEN_TIMEOUT: FailureClass.WATCHDOG,
    Trigger.IDLE_TIMEOUT: FailureClass.WATCHDOG,
    Trigger.TOTAL_TIMEOUT: FailureClass.WATCHDOG,
    Trigger.HTTP_ERROR: FailureClass.PROVIDER_ERROR,
    Trigger.PROVIDER_ERROR_EVENT: FailureClass.PROVIDER_ERROR,
    Trigger.PROTOCOL_VIOLATION: FailureClass.PROTOCOL_ERROR,
}

_CLASS_BY_ACTIVITY: Final = {
    Activity.IDLE: FailureClass.BEFORE_CONNECTION,
    Activity.CONNECTING: FailureClass.BEFORE_CONNECTION,
    Activity.STREAMING: FailureClass.EARLY_STREAM,
    Activity.GENERATING: FailureClass.MID_GENERATION,
    Activity.TOOL_INPUT_OPEN: FailureClass.TOOL_INPUT_INTERRUPTED,
    Activity.TOOL_CALL: FailureClass.TOOL_CALL_INTERRUPTED,
    Activity.TOOL_EXECUTING: FailureClass.TOOL_CALL_INTERRUPTED,  # a read-only tool; effectful ones below
}

_REJECTED: Final = {
    ProviderErrorKind.AUTH: Action.FIX_REQUEST,
    ProviderErrorKind.PERMISSION: Action.FIX_REQUEST,
    ProviderErrorKind.INVALID_REQUEST: Action.FIX_REQUEST,
    ProviderErrorKind.CONTEXT_OVERFLOW: Action.FIX_REQUEST,
    ProviderErrorKind.REQUEST_TOO_LARGE: Action.FIX_REQUEST,
    ProviderErrorKind.CONTENT_FILTER: Action.FIX_REQUEST,
    ProviderErrorKind.NOT_FOUND: Action.FIX_REQUEST,
    ProviderErrorKind.MODEL_UNAVAILABLE: Action.FIX_REQUEST,
    ProviderErrorKind.QUOTA_EXHAUSTED: Action.STOP,
}
# What to change, where the kind says it: waiting never helps these.
_REJECTED_REASON: Final = {
    ProviderErrorKind.REQUEST_TOO_LARGE: (
        "the request alone is larger than the provider accepts, even with a fresh rate-limit budget, so"
        " waiting will not help; shorten the request (fewer or smaller messages, files or tools)"
    ),
    ProviderErrorKind.CONTEXT_OVERFLOW: (
        "the conversation does not fit the model's context window, so the same request would fail again;"
        " shorten or summarise it, or use a model with a larger window"
    ),
    ProviderErrorKind.MODEL_UNAVAILABLE: (
        "the model cannot be served where the request went (no route or deployment for it, not loaded, or"
        " more memory than the server has), so waiting will not help; use another model or route, or free"
        " the server's memory"
    ),
}
_BACKOFF: Final = frozenset(
    {ProviderErrorKind.RATE_LIMIT, ProviderErrorKind.OVERLOADED, ProviderErrorKind.SERVER_ERROR}
)
_EDGE_CONFIDENCE: Final = {
    # Edges the runtime raises from its own typed facts need no corroboration.
    Trigger.LOCAL_ABORT,
    Trigger.CONSUMER_ERROR,
    Trigger.CONNECT_TIMEOUT,
    Trigger.FIRST_TOKEN_TIMEOUT,
    Trigger.IDLE_TIMEOUT,
    Trigger.TOTAL_TIMEOUT,
    Trigger.EOF_WITHOUT_TERMINAL,
    Trigger.PROTOCOL_VIOLATION,
}
MAX_EVIDENCE: Final = 16
UNPARSEABLE_ARGUMENTS: Final = "unparseable_arguments"
"""The detail of ``tool_input_interrupted`` when the provider ended a call whose arguments do not parse."""
# A finish that left a call unfinished and would leave it so again: the request must change.
_UNFINISHED_FIX: Final = {
    FinishCause.LENGTH: (
        "the provider stopped at the output token limit while the model was writing a tool call, and the"
        " same request would stop there again; raise the output limit or ask for less"
    ),
    FinishCause.CONTENT_FILTER: (
        "the provider's content filter stopped the tool call, and the same request would be stopped again"
    ),
    FinishCause.REFUSAL: "the model declined partway through a tool call; the request must change",
}


def failure_class(state: State, edge: Trigger) -> FailureClass:
    by_edge = _CLASS_BY_EDGE.get(edge)
    if by_edge is not None:
        return by_edge
    if state.activity is Activity.TOOL_EXECUTING and state.commitment is Commitment.SIDE_EFFECT:
        return FailureClass.TOOL_SIDE_EFFECT
    return _CLASS_BY_ACTIVITY[state.activity]


def _cause(edge: Trigger, facts: Facts) -> str:
    if edge is Trigger.TOOL_INPUT_UNFINISHED:
        finish = facts.finish
        # A finish that looks whole (unread content is one) left arguments that do not parse.
        if finish is None or finish is FinishCause.FINISHED or finish is FinishCause.UNREAD_CONTENT:
            return UNPARSEABLE_ARGUMENTS
        return str(finish.value)  # str(): see below
    if edge is Trigger.LOCAL_ABORT:
        return (facts.abort_source or AbortSource.APP).value
    if edge in (Trigger.HTTP_ERROR, Trigger.PROVIDER_ERROR_EVENT):
        return facts.provider.kind.value if facts.provider else ProviderErrorKind.UNKNOWN.value
    # str(): mypy loses the value type of enum members narrowed by the `is` tests above
    if edge in _CLASS_BY_EDGE:
        return str(edge.value)
    transport = facts.transport
    if transport is not None and transport.kind is not TransportKind.UNKNOWN:
        return str(transport.kind.value)
    return str(edge.value)


def _verdict(state: State, edge: Trigger, facts: Facts) -> tuple[Verdict, Action, str]:
    provider = facts.provider
    transport = facts.transport
    if edge is Trigger.LOCAL_ABORT:
        who = (facts.abort_source or AbortSource.APP).value
        return Verdict.NO_RETRY, Action.NONE, f"the run was stopped locally (source: {who})"
    if edge is Trigger.CONSUMER_ERROR:
        return Verdict.NO_RETRY, Action.STOP, "the code reading the stream raised; a retry would hit it again"
    if provider is not None and provider.kind in _REJECTED:
        reason = _REJECTED_REASON.get(
            provider.kind,
            f"the provider rejected the request ({provider.kind.value}); the same request would fail again",
        )
        return Verdict.NO_RETRY, _REJECTED[provider.kind], reason
    if edge is Trigger.TOOL_INPUT_UNFINISHED and facts.finish in _UNFINISHED_FIX:
        return Verdict.NO_RETRY, Action.FIX_REQUEST, _UNFINISHED_FIX[facts.finish]
    if provider is not None and provider.should_retry is False:
        return Verdict.NO_RETRY, Action.STOP, "the provider asked not to retry (x-should-retry: false)"
    if transport is not None and transport.kind is TransportKind.TLS:
        return (
            Verdict.NO_RETRY,
            Action.STOP,
            "the secure connection could not be set up; retrying will not fix it",
        )
    if state.commitment is Commitment.SIDE_EFFECT:
        return (
            Verdict.NO_RETRY,
            Action.CONTINUE_WITH_PARTIAL,
            "an effectful tool already started; replaying the request could repeat its effect",
        )
    if state.commitment is Commitment.VISIBLE:
        return (
            Verdict.USER_CONFIRMED_RETRY,
            Action.CONTINUE_WITH_PARTIAL,
            "part of the answer was already shown; a retry would show it again",
        )
    if edge is Trigger.TOTAL_TIMEOUT:
        return Verdict.USER_CONFIRMED_RETRY, Action.ASK_USER, "the run used its whole time budget"
    if edge is Trigger.TOOL_INPUT_UNFINISHED:
        return (
            Verdict.USER_CONFIRMED_RETRY,
            Action.ASK_USER,
            "the provider ended the response before the tool call was whole, for a reason that does not say"
            " a retry would go better",
        )
    if edge is Trigger.PROTOCOL_VIOLATION and facts.detail == JSON_COMPLETION:
        return (
            Verdict.USER_CONFIRMED_RETRY,
            Action.ASK_USER,
            "the provider answered with a whole JSON response instead of a stream; it was generated (and"
            " billed), and a retry would generate it again",
        )
    if edge is Trigger.PROTOCOL_VIOLATION:
        return (
            Verdict.USER_CONFIRMED_RETRY,
            Action.ASK_USER,
            "the provider broke its own stream format; a retry may meet the same fault",
        )
    if edge in (Trigger.HTTP_ERROR, Trigger.PROVIDER_ERROR_EVENT) and (
        provider is None or provider.kind is ProviderErrorKind.UNKNOWN
    ):
        return Verdict.USER_CONFIRMED_RETRY, Action.ASK_USER, "the provider's error could not be identified"
    if (
        transport is not None
        and transport.kind is TransportKind.UNKNOWN
        and transport.confidence is Confidence.LOW
    ):
        # No transport error streamfsm knows (a parser's ValueError, an SDK's own exception): it may be
        # deterministic, so it is not called transient (DESIGN §12: unknown is never safe).
        return (
            Verdict.USER_CONFIRMED_RETRY,
            Action.ASK_USER,
            "the read failed with an error streamfsm does not recognise; a retry may meet it again",
        )
    if provider is not None and (provider.retry_after_s or 0.0) > LONGEST_AUTOMATIC_WAIT_S:
        return (
            Verdict.USER_CONFIRMED_RETRY,
            Action.ASK_USER,
            "the provider asks to wait longer than an automatic retry waits"
            f" ({LONGEST_AUTOMATIC_WAIT_S:g} s); retry after that time only if the user agrees",
        )
    backoff = provider is not None and (provider.kind in _BACKOFF or provider.retry_after_s is not None)
    action = Action.RETRY_AFTER_BACKOFF if backoff else Action.RETRY
    return (
        Verdict.SAFE_AUTO_RETRY,
        action,
        "nothing reached the user or the world yet, and the fault is transient",
    )


def _confidence(edge: Trigger, facts: Facts) -> Confidence:
    if edge is Trigger.TOOL_INPUT_UNFINISHED:
        return Confidence.LOW if facts.finish is FinishCause.UNRECOGNISED else Confidence.HIGH
    if edge in _EDGE_CONFIDENCE:
        return Confidence.HIGH
    used = [f.confidence for f in (facts.transport, facts.provider) if f is not None]
    if not used:
        return Confidence.LOW if edge in (Trigger.DISCONNECTED, Trigger.CONNECT_FAILED) else Confidence.MEDIUM
    return min(used, key=lambda c: c.rank)


def _evidence(state: State, edge: Trigger, facts: Facts) -> tuple[str, ...]:
    items = [f"state={state}", f"edge={edge.value}"]
    if facts.request_sent:
        items.append("request_sent")
    if facts.abort_source is not None:
        items.append(f"abort_source={facts.abort_source.value}")
    if facts.transport is not None:
        transport = facts.transport
        items.append(f"transport={transport.kind.value}")
        if transport.chain:
            items.append("chain=" + " <- ".join(transport.chain))
        if transport.errno is not None:
            items.append(f"errno={transport.errno}")
        items.extend(transport.markers)
    if facts.provider is not None:
        provider = facts.provider
        items.append(f"provider={provider.kind.value}")
        items.extend(provider.markers)
    if facts.detail:
        items.append(f"detail={facts.detail}")
    return tuple(dict.fromkeys(items))[:MAX_EVIDENCE]


def diagnose(state: State, edge: Trigger, facts: Facts | None = None) -> Diagnosis:
    """Classify a failure edge fired in a non-terminal state."""
    if state.is_terminal:
        raise ValueError(f"cannot diagnose an edge fired in terminal state {state}")
    if not edge.is_failure:
        raise ValueError(f"{edge.value!r} is not a failure edge")
    facts = facts or Facts()
    klass = failure_class(state, edge)
    cause = _cause(edge, facts)
    verdict, action, reason = _verdict(state, edge, facts)
    # An HTTP error status is an answer: the provider declined the work rather than maybe doing it. A whole
    # JSON answer where a stream was due was done.
    possibly_delivered = (
        facts.request_sent and state.activity is Activity.CONNECTING and edge is not Trigger.HTTP_ERROR
    ) or (edge is Trigger.PROTOCOL_VIOLATION and facts.detail == JSON_COMPLETION)
    title, detail = summarize(
        klass, cause, state, verdict, reason, facts, http_status=edge is Trigger.HTTP_ERROR
    )
    return Diagnosis(
        state=state,
        edge=edge,
        phase=_PHASE[state.activity],
        cause=cause,
        failure_class=klass,
        summary_key=f"{klass.value}.{cause}",
        verdict=verdict,
        reason=reason,
        action=action,
        title=title,
        detail=detail,
        retry_after_s=facts.provider.retry_after_s if facts.provider else None,
        possibly_delivered=possibly_delivered,
        confidence=_confidence(edge, facts),
        evidence=_evidence(state, edge, facts),
    )


_UNKNOWN_END: Final = {
    Commitment.NONE: (
        Verdict.USER_CONFIRMED_RETRY,
        Action.ASK_USER,
        "the provider ended the response for a reason streamfsm does not recognise, so it may not be whole",
    ),
    Commitment.VISIBLE: (
        Verdict.USER_CONFIRMED_RETRY,
        Action.CONTINUE_WITH_PARTIAL,
        "the provider ended the response for a reason streamfsm does not recognise, after part of it was"
        " shown; it may not be whole, and a retry would show it again",
    ),
    Commitment.SIDE_EFFECT: (
        Verdict.NO_RETRY,
        Action.CONTINUE_WITH_PARTIAL,
        "the provider ended the response for a reason streamfsm does not recognise, and an effectful tool"
        " already started; replaying the request could repeat its effect",
    ),
}


def diagnose_finished(
    state: State,
    finish: FinishCause = FinishCause.FINISHED,
    evidence: tuple[str, ...] = (),
    raw: str | None = None,
) -> Diagnosis:
    """The diagnosis of a run that reached its terminal event. ``finish`` says whether that was a whole
    answer (see ``finish_cause``); ``evidence`` adds the wire facts the runtime noted (e.g. a missing
    ``[DONE]``), in its fixed vocabulary; ``raw`` is the reason as sent, named (redacted, bounded) when it
    is unrecognised. An unrecognised end is never a whole answer and never safe to retry on its own."""
    if state.activity is not Activity.FINISHED:
        raise ValueError(f"run is not finished: {state}")
    verdict, action, reason = Verdict.NO_RETRY, Action.NONE, "the response finished"
    confidence = Confidence.HIGH
    items = [f"state={state}", f"finish={finish.value}"]
    if finish is FinishCause.UNRECOGNISED:
        verdict, action, reason = _UNKNOWN_END[state.commitment]
        confidence = Confidence.LOW
        items.append(f"finish_reason={shown_reason(raw)}")
    elif finish is FinishCause.UNREAD_CONTENT:
        confidence = Confidence.LOW  # the run ended, but what it said could not be read
    elif finish is FinishCause.BACKGROUND:
        # Nothing failed: the provider holds the job. A retry would start a second one (and bill it).
        reason = "the provider is answering in the background; a retry would start a second job"
    title, detail = summarize(
        FailureClass.COMPLETED, finish.value, state, verdict, reason, Facts(), finish_raw=raw
    )
    return Diagnosis(
        state=state,
        edge=None,
        phase=Phase.FINISHED,
        cause=finish.value,
        failure_class=FailureClass.COMPLETED,
        summary_key=f"completed.{finish.value}",
        verdict=verdict,
        reason=reason,
        action=action,
        title=title,
        detail=detail,
        confidence=confidence,
        evidence=tuple(dict.fromkeys((*items, *evidence)))[:MAX_EVIDENCE],
    )
