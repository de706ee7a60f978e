"""The public vocabulary of a diagnosis, and the facts it is derived from.

Every value here is stable: it appears in run records, logs and dashboards.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from ..machine import State, Trigger

JSON_COMPLETION: Final = "json_completion"
"""The protocol-violation detail of a 2xx body that is a whole JSON answer instead of an event stream: it was
generated (and billed), so it is ``possibly_delivered`` and never retried automatically."""

ENDPOINT_AT_ROOT: Final = "endpoint_at_root"
"""The detail of an HTTP error whose request went to an OpenAI endpoint at the server's root
(``/chat/completions``, ``/responses``): with a 404, the base URL most likely lacks its ``/v1``."""


class FailureClass(enum.Enum):
    _value_: str

    COMPLETED = "completed"
    BEFORE_CONNECTION = "before_connection"
    EARLY_STREAM = "early_stream"
    MID_GENERATION = "mid_generation"
    TOOL_INPUT_INTERRUPTED = "tool_input_interrupted"
    TOOL_CALL_INTERRUPTED = "tool_call_interrupted"
    TOOL_SIDE_EFFECT = "tool_side_effect"
    LOCAL_ABORT = "local_abort"
    WATCHDOG = "watchdog"
    PROVIDER_ERROR = "provider_error"
    PROTOCOL_ERROR = "protocol_error"
    CONSUMER_ERROR = "consumer_error"


class Verdict(enum.Enum):
    """Whether the failed run may be replayed.

    ``SAFE_AUTO_RETRY`` means nothing visible reached the user and no effectful tool started. A consumer that
    retries by itself must still drop what it received from the failed attempt that was not visible
    (reasoning, tool-argument fragments, a complete call nobody ran); ``retrying()`` holds such events back so
    that they never reach the consumer at all.
    """

    _value_: str

    SAFE_AUTO_RETRY = "safe_auto_retry"
    USER_CONFIRMED_RETRY = "user_confirmed_retry"
    NO_RETRY = "no_retry"


class Action(enum.Enum):
    _value_: str

    RETRY = "retry"
    RETRY_AFTER_BACKOFF = "retry_after_backoff"
    CONTINUE_WITH_PARTIAL = "continue_with_partial"
    ASK_USER = "ask_user"
    FIX_REQUEST = "fix_request"
    STOP = "stop"
    NONE = "none"


class Phase(enum.Enum):
    """Where a run was when it ended, in the words users asked for."""

    _value_: str

    BEFORE_CONNECTION = "before_connection"
    EARLY_STREAM = "early_stream"
    MID_GENERATION = "mid_generation"
    TOOL_INPUT = "tool_input"
    TOOL_CALL = "tool_call"
    TOOL_EXECUTION = "tool_execution"
    FINISHED = "finished"


class Confidence(enum.Enum):
    _value_: str

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return {"high": 2, "medium": 1, "low": 0}[self.value]


class TransportKind(enum.Enum):
    _value_: str

    REFUSED = "refused"
    DNS = "dns"
    TLS = "tls"
    UNREACHABLE = "unreachable"
    RESET = "reset"
    CLOSED_BEFORE_RESPONSE = "closed_before_response"
    CLOSED_MID_BODY = "closed_mid_body"
    READ_TIMEOUT = "read_timeout"
    CONNECT_TIMEOUT = "connect_timeout"
    PROTOCOL = "protocol"
    DECODING = "decoding"  # the body's content encoding (gzip, br, ...) could not be decoded
    UNKNOWN = "unknown"


class ProviderErrorKind(enum.Enum):
    _value_: str

    AUTH = "auth"
    PERMISSION = "permission"
    RATE_LIMIT = "rate_limit"
    QUOTA_EXHAUSTED = "quota_exhausted"
    OVERLOADED = "overloaded"
    SERVER_ERROR = "server_error"
    INVALID_REQUEST = "invalid_request"
    CONTEXT_OVERFLOW = "context_overflow"
    REQUEST_TOO_LARGE = "request_too_large"
    CONTENT_FILTER = "content_filter"
    NOT_FOUND = "not_found"
    MODEL_UNAVAILABLE = "model_unavailable"  # no route, deployment or memory for the model where it was sent
    UNKNOWN = "unknown"


class FinishCause(enum.Enum):
    """How a run that reached its terminal event ended, in the user's eyes: the detail of its summary key
    (``completed.<cause>``), and of ``tool_input_interrupted.<cause>`` when that end left a tool call
    unfinished. Only ``FINISHED`` is a whole answer (see ``streamfsm.classify._finish``)."""

    _value_: str

    FINISHED = "finished"
    LENGTH = "length"  # cut at the output token limit
    CONTENT_FILTER = "content_filter"  # the provider's filter (safety, recitation, policy) stopped it
    REFUSAL = "refusal"  # the model declined
    MALFORMED_TOOL_CALL = "malformed_tool_call"  # the provider ended it on a tool call it could not parse
    UNREAD_CONTENT = "unread_content"  # it finished, but its content came in shapes not read: no answer seen
    PAUSED = "paused"  # the provider paused a long turn (Anthropic pause_turn); it goes on if sent back
    BACKGROUND = "background"  # the provider answers later, in the background (Responses background mode)
    UNRECOGNISED = "unrecognised"  # a reason nobody here knows, or none: never taken for a whole answer


class AbortSource(enum.Enum):
    """Who stopped a run locally."""

    _value_: str

    USER = "user"
    APP = "app"
    CANCELLED = "cancelled"  # a cancel scope or task cancellation from outside
    CONSUMER_STOPPED = "consumer_stopped"  # the consumer left the loop early
    CLIENT = "client"  # a proxy's downstream client went away


@dataclass(frozen=True, slots=True)
class TransportFacts:
    """What an exception chain says about the transport, without the exception itself."""

    kind: TransportKind
    chain: tuple[str, ...] = ()  # qualified class names, outermost first
    errno: int | None = None
    markers: tuple[str, ...] = ()  # the facts that decided the kind
    confidence: Confidence = Confidence.HIGH


@dataclass(frozen=True, slots=True)
class ProviderError:
    """A provider's error, from an HTTP status, headers and body, or an in-band error event."""

    kind: ProviderErrorKind
    status: int | None = None
    type: str | None = None  # the body's error type, e.g. "overloaded_error"
    code: str | None = None  # the body's error code, e.g. "context_length_exceeded"
    retry_after_s: float | None = None
    should_retry: bool | None = None  # x-should-retry, when the provider said
    markers: tuple[str, ...] = ()
    confidence: Confidence = Confidence.HIGH


@dataclass(frozen=True, slots=True)
class Facts:
    """Everything the classifier may use besides the state and the edge."""

    transport: TransportFacts | None = None
    provider: ProviderError | None = None
    abort_source: AbortSource | None = None
    request_sent: bool = False  # the request left this process, so the provider may have acted on it
    tool_name: str | None = None  # the tool whose call was being written or run, for the summary
    tool_ran: bool = False  # that tool had started running
    tool_effectful: bool | None = None  # and was declared effectful (None: not known or not started)
    detail: str | None = None  # a short, already redacted note, e.g. a protocol violation's position
    finish: FinishCause | None = None  # tool_input_unfinished: the finish that left the call unfinished


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The classifier's verdict on one ended run."""

    state: State  # the state the run was in when the edge fired
    edge: Trigger | None  # None for a run that finished
    phase: Phase
    cause: str  # the detail of summary_key: a transport kind, provider kind, watchdog or abort source
    failure_class: FailureClass
    summary_key: str  # "<class>.<cause>"
    verdict: Verdict
    reason: str
    action: Action
    title: str
    detail: str
    retry_after_s: float | None = None
    possibly_delivered: bool = False  # the request was sent, so the provider may have done (and billed) it
    confidence: Confidence = Confidence.HIGH
    evidence: tuple[str, ...] = field(default=())


LONGEST_AUTOMATIC_WAIT_S: Final = 60.0
"""The longest provider-stated wait an automatic retry sits out. Past it the limit is an hourly, daily or
plan window rather than a transient fault, so the verdict asks first. The official openai and anthropic SDKs
honour a retry-after of at most 60 s; ``RetryPolicy.max_provider_delay_s`` defaults to this value and bounds
how long ``retrying()`` waits at all, confirmed or not."""
