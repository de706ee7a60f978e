"""Plain-language titles and details. Raw transport strings never appear here; they live in evidence."""

from __future__ import annotations

import re
from typing import Final

from ..machine import Activity, Commitment, State
from ._finish import shown_reason
from ._taxonomy import ENDPOINT_AT_ROOT, Facts, FailureClass, ProviderErrorKind, Verdict

WHAT_HAPPENED: Final = {
    # transport
    "refused": "The provider's server refused the connection",
    "dns": "The provider's address could not be looked up",
    "tls": "The secure connection to the provider could not be set up",
    "unreachable": "The provider's network could not be reached",
    "reset": "The connection was reset",
    "closed_before_response": "The provider closed the connection without answering",
    "closed_mid_body": "The connection closed before the response was complete",
    "read_timeout": "The provider stopped sending data and the read timed out",
    "connect_timeout": "The provider did not answer within the connect deadline",
    "protocol": "The provider's HTTP response was malformed",
    "decoding": "The provider's compressed response could not be decoded",
    "unknown": "The connection was lost",
    "disconnected": "The connection was lost",
    "connect_failed": "The connection to the provider could not be made",
    "eof_without_terminal": "The stream ended without the provider's final event",
    # watchdogs
    "first_token_timeout": "The model did not start answering within the first-output deadline",
    "idle_timeout": "The stream went silent for longer than the idle deadline",
    "total_timeout": "The response took longer than the total deadline",
    # local
    "user": "You stopped the response",
    "app": "The app stopped the response",
    "cancelled": "The surrounding code cancelled the run",
    "consumer_stopped": "The code reading the stream stopped early",
    "client": "The client receiving the relayed stream went away",
    "protocol_violation": "The provider sent data that breaks its stream format",
    "consumer_error": "The code reading the stream raised an error",
    # the provider's finish (or the call's end) left a tool call unfinished: tool_input_unfinished
    "length": "The provider stopped at the output token limit",
    "content_filter": "The provider's content filter stopped the response",
    "refusal": "The model declined and ended the response",
    "malformed_tool_call": "The provider ended the response on a tool call it could not parse",
    "paused": "The provider paused the response",
    "background": "The provider accepted the request to answer it in the background",
    "unrecognised": "The provider ended the response for a reason streamfsm does not recognise",
    "unparseable_arguments": "The provider ended the call before its arguments were valid JSON",
}
"""What happened, per cause, for every class but ``provider_error``."""

PROVIDER_SAID: Final = {
    "auth": "The provider rejected the credentials",
    "permission": "The credentials may not use this model or endpoint",
    "rate_limit": "The provider is rate limiting requests",
    "quota_exhausted": "The account's credit, quota or spending limit is used up",
    "overloaded": "The provider is overloaded",
    "server_error": "The provider had an internal error",
    "invalid_request": "The provider rejected the request as invalid",
    "context_overflow": "The conversation is too long for the model's context window",
    "request_too_large": "The request is too large for the provider",
    "content_filter": "The provider's content filter stopped the response",
    "not_found": "The model or endpoint was not found",
    "model_unavailable": "The model cannot be served where the request went",
    "unknown": "The provider returned an error without saying which kind",
}
"""What happened, per provider error kind, for ``provider_error``."""


FINISHED_SAYS: Final = {
    "finished": ("The response finished", "The provider sent its final event; the response is complete."),
    "length": (
        "The answer was cut at the output token limit",
        "The provider stopped at the output token limit, so the answer is incomplete. Raise the limit, or"
        " ask the model to continue.",
    ),
    "content_filter": (
        "The provider's content filter stopped the answer",
        "The provider ended the response early because its content filter (safety, recitation or policy)"
        " stopped it; what was shown may be incomplete.",
    ),
    "refusal": (
        "The model refused to answer",
        "The model declined the request; the response ended normally, with a refusal instead of an answer.",
    ),
    "malformed_tool_call": (
        "The model produced a malformed tool call",
        "The provider ended the response because the model's tool call could not be parsed; no tool was"
        " called.",
    ),
    "unread_content": (
        "The response finished, but its content could not be read",
        "The provider sent its final event, but the answer came in a shape streamfsm does not read (its"
        " field names are in the record's delta_keys), so no answer text or tool call was seen. The"
        " response may hold an answer your code cannot read either.",
    ),
    "paused": (
        "The provider paused the answer",
        "The provider paused a long turn before the answer was complete; send the response back as it is to"
        " let it continue.",
    ),
    "background": (
        "The provider is answering in the background",
        "The provider accepted the request to answer it in the background; fetch the response by its id"
        " (GET /responses/{id}) until its status is completed.",
    ),
    "unrecognised": (
        "The response ended for an unrecognised reason",
        "The provider sent its final event with a finish reason streamfsm does not recognise, so it cannot"
        " tell whether the answer is whole.",
    ),
}
"""(title, detail) per ``FinishCause`` value, for a run that reached its terminal event."""

UNFINISHED_CAUSES: Final = frozenset(
    {
        "length",
        "content_filter",
        "refusal",
        "malformed_tool_call",
        "paused",
        "background",
        "unrecognised",
        "unparseable_arguments",
    }
)
"""The details of ``tool_input_interrupted`` that the provider's own end gave (``tool_input_unfinished``)."""


CLASS_MEANING: Final = {
    FailureClass.COMPLETED: ("The response finished", "The provider sent its final event."),
    FailureClass.BEFORE_CONNECTION: (
        "The connection to the provider failed",
        "No response began: the provider's address, network, TLS or server could not be reached, or the"
        " connection broke before it answered.",
    ),
    FailureClass.EARLY_STREAM: (
        "The stream broke before any output",
        "The stream opened, then broke before any answer was shown.",
    ),
    FailureClass.MID_GENERATION: (
        "The stream broke partway through the answer",
        "Part of the answer was shown, then the connection broke or the stream ended without its final"
        " event.",
    ),
    FailureClass.TOOL_INPUT_INTERRUPTED: (
        "The stream broke while the model was writing a tool call",
        "The tool call was left unfinished (the stream broke, or the provider ended it early); no tool ran.",
    ),
    FailureClass.TOOL_CALL_INTERRUPTED: (
        "The stream broke after a tool call was complete",
        "The model finished a tool call, then the stream broke before the tool ran or while a read-only"
        " tool ran.",
    ),
    FailureClass.TOOL_SIDE_EFFECT: (
        "The stream broke while a tool was running",
        "A tool that may change things had started when the stream broke.",
    ),
    FailureClass.LOCAL_ABORT: (
        "The run was stopped on this side",
        "The user, the app, a cancellation, the code reading the stream or the relay's client stopped it.",
    ),
    FailureClass.WATCHDOG: (
        "A deadline stopped the stream",
        "The connection, the first output, a silence or the whole response took longer than its deadline.",
    ),
    FailureClass.PROVIDER_ERROR: (
        "The provider answered with an error",
        "An error status or error event from the provider: overload, rate limit, quota, credentials,"
        " invalid request, context overflow, content filter, server error and the like; each run's summary"
        " key names its kind.",
    ),
    FailureClass.PROTOCOL_ERROR: (
        "The provider's stream broke its format",
        "The provider sent data that breaks its stream format (a whole JSON answer instead of a stream is"
        " one).",
    ),
    FailureClass.CONSUMER_ERROR: (
        "The code reading the stream raised an error",
        "The failure is in the consumer's code, not the provider or the connection.",
    ),
}
"""(title, description) of each failure class as a whole: what its runs share, whatever their cause (a
run's own title names its cause)."""


def what_happened(klass: FailureClass, cause: str) -> str:
    """The opening phrase for a cause; raises ``KeyError`` for a cause without words."""
    return (PROVIDER_SAID if klass is FailureClass.PROVIDER_ERROR else WHAT_HAPPENED)[cause]


TITLE_BY_CLASS: Final = {
    FailureClass.COMPLETED: "The response finished",
    FailureClass.EARLY_STREAM: "The stream broke before any output",
    FailureClass.MID_GENERATION: "The stream broke partway through the answer",
    FailureClass.TOOL_INPUT_INTERRUPTED: "The stream broke while the model was writing a tool call",
    FailureClass.TOOL_CALL_INTERRUPTED: "The stream broke after a tool call was complete",
    FailureClass.TOOL_SIDE_EFFECT: "The stream broke while a tool was running",
}

_WHERE: Final = {
    Activity.IDLE: "before the request was sent",
    Activity.CONNECTING: "before the provider answered",
    Activity.STREAMING: "after the stream opened, before any output was shown",
    Activity.GENERATING: "after part of the answer was shown",
    Activity.TOOL_INPUT_OPEN: "while the model was still writing the call to {tool}",
    Activity.TOOL_CALL: "after the model finished the call to {tool}, before the tool started",
    Activity.TOOL_EXECUTING: "while {tool} was running",
}

VERDICT_LEAD: Final = {
    Verdict.SAFE_AUTO_RETRY: "Retrying is safe",
    Verdict.USER_CONFIRMED_RETRY: "Retry only with confirmation",
    Verdict.NO_RETRY: "Do not retry automatically",
}

_NO_VERSION_HINT: Final = (
    "The request went to an OpenAI endpoint at the server's root: did you mean a base_url ending in /v1"
    " (e.g. http://localhost:8000/v1)?"
)

_SAFE_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _tool(facts: Facts) -> str:
    name = facts.tool_name
    if name and _SAFE_TOOL_NAME.fullmatch(name):
        return f"`{name}`"
    return "a tool"


def _tool_sentence(state: State, facts: Facts) -> str:
    activity, commitment = state.activity, state.commitment
    earlier = " An earlier tool had already started and may have changed things."
    if activity is Activity.TOOL_INPUT_OPEN or (activity is Activity.TOOL_CALL and not facts.tool_ran):
        sentence = "The tool did not run."
        return sentence + earlier if commitment is Commitment.SIDE_EFFECT else sentence
    if activity in (Activity.TOOL_CALL, Activity.TOOL_EXECUTING):
        if facts.tool_effectful is False:
            sentence = "That tool only reads, so it changed nothing."
            return sentence + earlier if commitment is Commitment.SIDE_EFFECT else sentence
        if commitment is Commitment.SIDE_EFFECT:
            if activity is Activity.TOOL_CALL:
                return "The tool had run and may have changed things."
            return "The tool had started and may already have changed things."
        return "The tool only reads, so nothing was changed."
    if commitment is Commitment.SIDE_EFFECT:
        return "A tool had already started and may have changed things."
    return ""


def summarize(
    klass: FailureClass,
    cause: str,
    state: State,
    verdict: Verdict,
    reason: str,
    facts: Facts,
    *,
    http_status: bool = False,
    finish_raw: str | None = None,
) -> tuple[str, str]:
    """(title, detail) for a diagnosis. Never contains raw exception text. ``http_status``: the provider
    answered with an error status, so there is no stream position to tell. ``finish_raw``: a completed
    run's finish reason as sent, named (redacted, bounded) when it is unrecognised."""
    if klass is FailureClass.COMPLETED:
        title, detail = FINISHED_SAYS.get(cause, FINISHED_SAYS["finished"])
        if cause != "unrecognised":
            return title, detail
        return f"{title} ({shown_reason(finish_raw)})", f"{detail} {VERDICT_LEAD[verdict]}: {reason}."
    what = what_happened(klass, cause)
    tool = _tool(facts)
    title = TITLE_BY_CLASS.get(klass, what)
    if klass is FailureClass.TOOL_INPUT_INTERRUPTED and cause in UNFINISHED_CAUSES:
        title = f"The response ended before the model finished the call to {tool}"
    elif klass is FailureClass.TOOL_INPUT_INTERRUPTED and tool != "a tool":
        title = f"The stream broke while the model was writing the call to {tool}"
    where_template = _WHERE.get(state.activity, "")
    if state.activity is Activity.TOOL_CALL and facts.tool_ran:
        where_template = "after {tool} had run"
    where = "" if http_status else where_template.format(tool=tool)
    if state.activity is Activity.CONNECTING and facts.request_sent and not http_status:
        where = "after the request was sent, before the provider answered (it may have started on it)"
    parts = [f"{what} {where}." if where else f"{what}."]
    if (
        facts.detail == ENDPOINT_AT_ROOT
        and facts.provider is not None
        and facts.provider.kind is ProviderErrorKind.NOT_FOUND
    ):
        parts.append(_NO_VERSION_HINT)
    tool_sentence = _tool_sentence(state, facts)
    if tool_sentence:
        parts.append(tool_sentence)
    parts.append(f"{VERDICT_LEAD[verdict]}: {reason}.")
    return title, " ".join(parts)
