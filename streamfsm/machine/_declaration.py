"""The stream machine, declared once, as data.

Two orthogonal regions run side by side on the same triggers:

* **Activity** says where the stream is: ``idle → connecting → streaming → generating / tool_input_open /
  tool_call / tool_executing → finished | failed``.
* **Commitment** says what already escaped to the world: ``none → visible → side_effect``. It only moves
  forward, and only two triggers move it: a text delta (visible output) and the start of an effectful tool.

A stream's state is the pair (activity, commitment); the classifier's input is exactly that pair plus the
failure edge. Keeping commitment in its own region (rather than folding it into activity names) keeps both
diagrams small and makes monotonicity a property of the declaration itself.

Rules of the declaration:

* Every failure trigger leads from every non-terminal activity to ``failed``.
* Terminal activities have no outgoing edges; a trigger sent to a closed stream is illegal.
* Parallel tool calls: the adapters hand the machine one call's input at a time (calls whose events
  interleave on the wire wait their turn behind the first), so at most one tool input is open. Tool
  *execution* overlaps with streaming: the agent may run call A while the model writes call B. Activity
  then follows the stream (``tool_input_open``) and the running tool shows in commitment;
  ``tool_executing`` means "a tool runs and the stream has said nothing newer". The machine knows no call
  ids: the run's tool ledger (``runtime``) checks that a started call exists and sends
  ``tool_execution_end`` only when the *last* running tool ends.
* Pings, SSE comments and metadata are not provider progress; they loop on the current activity.
* A tool call is callable only when complete: its arguments parse, and the provider ended it before a
  whole-answer finish. ``finish`` is therefore not an edge out of ``tool_input_open``: the adapters leave a
  call open at a finish that is not a whole answer (the output limit, a filter, a reason nobody here knows)
  and keep a call whose arguments do not parse open, and the runtime then fires the failure edge
  ``tool_input_unfinished`` (the provider ended the response, or the call, before its input was whole).
  The run fails in ``tool_input_open``: the tool never ran, and no ``ToolCall`` was ever emitted for it.
"""

from __future__ import annotations

import enum
from typing import Final


class Activity(enum.Enum):
    """Where a stream is."""

    __hash__ = object.__hash__  # identity hash: members are singletons, and it keeps lookups cheap
    _value_: str

    IDLE = "idle"
    CONNECTING = "connecting"
    STREAMING = "streaming"
    GENERATING = "generating"
    TOOL_INPUT_OPEN = "tool_input_open"
    TOOL_CALL = "tool_call"
    TOOL_EXECUTING = "tool_executing"
    FINISHED = "finished"
    FAILED = "failed"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_ACTIVITIES


class Commitment(enum.Enum):
    """What already escaped a stream: nothing, visible output, or a side effect. Ordered."""

    __hash__ = object.__hash__
    _value_: str

    NONE = "none"
    VISIBLE = "visible"
    SIDE_EFFECT = "side_effect"

    @property
    def rank(self) -> int:
        return _COMMITMENT_RANK[self]


_COMMITMENT_RANK: Final = {Commitment.NONE: 0, Commitment.VISIBLE: 1, Commitment.SIDE_EFFECT: 2}


class Source(enum.Enum):
    """Who may send a trigger. An illegal provider trigger is a protocol violation; an illegal agent or
    runtime trigger is a caller bug."""

    PROVIDER = "provider"
    AGENT = "agent"
    RUNTIME = "runtime"


class Trigger(enum.Enum):
    """Every edge of the machine."""

    __hash__ = object.__hash__
    _value_: str

    # progress edges
    REQUEST_SENT = "request_sent"
    HEADERS_RECEIVED = "headers_received"
    REASONING_DELTA = "reasoning_delta"
    TEXT_DELTA = "text_delta"
    TOOL_INPUT_START = "tool_input_start"
    TOOL_INPUT_DELTA = "tool_input_delta"
    TOOL_INPUT_END = "tool_input_end"
    TOOL_CALL = "tool_call"
    TOOL_EXECUTION_START_READ_ONLY = "tool_execution_start_read_only"
    TOOL_EXECUTION_START_EFFECTFUL = "tool_execution_start_effectful"
    TOOL_EXECUTION_END = "tool_execution_end"
    USAGE = "usage"
    KEEPALIVE = "keepalive"
    METADATA = "metadata"
    FINISH = "finish"
    # failure edges
    CONNECT_FAILED = "connect_failed"
    HTTP_ERROR = "http_error"
    DISCONNECTED = "disconnected"
    EOF_WITHOUT_TERMINAL = "eof_without_terminal"
    PROVIDER_ERROR_EVENT = "provider_error_event"
    CONNECT_TIMEOUT = "connect_timeout"
    FIRST_TOKEN_TIMEOUT = "first_token_timeout"
    IDLE_TIMEOUT = "idle_timeout"
    TOTAL_TIMEOUT = "total_timeout"
    LOCAL_ABORT = "local_abort"
    PROTOCOL_VIOLATION = "protocol_violation"
    CONSUMER_ERROR = "consumer_error"
    TOOL_INPUT_UNFINISHED = "tool_input_unfinished"

    @property
    def is_failure(self) -> bool:
        return self in FAILURE_TRIGGERS

    @property
    def is_timeout(self) -> bool:
        return self in TIMEOUT_TRIGGERS

    @property
    def is_provider_progress(self) -> bool:
        """Resets the idle watchdog. Pings, comments, metadata and usage do not."""
        return self in PROVIDER_PROGRESS

    @property
    def source(self) -> Source:
        return TRIGGER_SOURCE[self]


TERMINAL_ACTIVITIES: Final = frozenset({Activity.FINISHED, Activity.FAILED})
NON_TERMINAL_ACTIVITIES: Final = tuple(a for a in Activity if a not in TERMINAL_ACTIVITIES)

FAILURE_TRIGGERS: Final = frozenset(
    {
        Trigger.CONNECT_FAILED,
        Trigger.HTTP_ERROR,
        Trigger.DISCONNECTED,
        Trigger.EOF_WITHOUT_TERMINAL,
        Trigger.PROVIDER_ERROR_EVENT,
        Trigger.CONNECT_TIMEOUT,
        Trigger.FIRST_TOKEN_TIMEOUT,
        Trigger.IDLE_TIMEOUT,
        Trigger.TOTAL_TIMEOUT,
        Trigger.LOCAL_ABORT,
        Trigger.PROTOCOL_VIOLATION,
        Trigger.CONSUMER_ERROR,
        Trigger.TOOL_INPUT_UNFINISHED,
    }
)
TIMEOUT_TRIGGERS: Final = frozenset(
    {Trigger.CONNECT_TIMEOUT, Trigger.FIRST_TOKEN_TIMEOUT, Trigger.IDLE_TIMEOUT, Trigger.TOTAL_TIMEOUT}
)
PROVIDER_PROGRESS: Final = frozenset(
    {
        Trigger.REASONING_DELTA,
        Trigger.TEXT_DELTA,
        Trigger.TOOL_INPUT_START,
        Trigger.TOOL_INPUT_DELTA,
        Trigger.TOOL_INPUT_END,
        Trigger.TOOL_CALL,
        Trigger.FINISH,
    }
)
_AGENT_TRIGGERS: Final = frozenset(
    {
        Trigger.TOOL_EXECUTION_START_READ_ONLY,
        Trigger.TOOL_EXECUTION_START_EFFECTFUL,
        Trigger.TOOL_EXECUTION_END,
    }
)
_RUNTIME_TRIGGERS: Final = frozenset({Trigger.REQUEST_SENT}) | FAILURE_TRIGGERS
TRIGGER_SOURCE: Final = {
    t: Source.AGENT if t in _AGENT_TRIGGERS else Source.RUNTIME if t in _RUNTIME_TRIGGERS else Source.PROVIDER
    for t in Trigger
}


# After headers, before any terminal: the activities where the provider may speak.
_OPEN: Final = (
    Activity.STREAMING,
    Activity.GENERATING,
    Activity.TOOL_INPUT_OPEN,
    Activity.TOOL_CALL,
    Activity.TOOL_EXECUTING,
)
# Where the model may begin something new (not in the middle of writing a tool call's arguments).
_BETWEEN: Final = (Activity.STREAMING, Activity.GENERATING, Activity.TOOL_CALL, Activity.TOOL_EXECUTING)
# Where a tool can already be complete, so the agent may start running it.
_CALL_KNOWN: Final = (
    Activity.GENERATING,
    Activity.TOOL_INPUT_OPEN,
    Activity.TOOL_CALL,
    Activity.TOOL_EXECUTING,
)


def _progress_edges() -> list[tuple[Trigger, Activity, Activity]]:
    edges: list[tuple[Trigger, Activity, Activity]] = [
        (Trigger.REQUEST_SENT, Activity.IDLE, Activity.CONNECTING),
        (Trigger.HEADERS_RECEIVED, Activity.CONNECTING, Activity.STREAMING),
    ]
    for here in _BETWEEN:
        edges += [
            (Trigger.REASONING_DELTA, here, here),
            (Trigger.TEXT_DELTA, here, Activity.GENERATING),
            (Trigger.TOOL_INPUT_START, here, Activity.TOOL_INPUT_OPEN),
            (
                Trigger.TOOL_CALL,
                here,
                Activity.TOOL_CALL,
            ),  # a whole call at once (Gemini), or the call after its input
            (Trigger.FINISH, here, Activity.FINISHED),
        ]
    edges += [
        (Trigger.TOOL_INPUT_DELTA, Activity.TOOL_INPUT_OPEN, Activity.TOOL_INPUT_OPEN),
        (Trigger.TOOL_INPUT_END, Activity.TOOL_INPUT_OPEN, Activity.TOOL_CALL),
        (Trigger.TOOL_CALL, Activity.TOOL_INPUT_OPEN, Activity.TOOL_CALL),
    ]
    for here in _CALL_KNOWN:
        # The stream's position wins over a tool that starts in the background; only when the model was
        # idle on a finished call does the run move to tool_executing.
        after_start = (
            Activity.TOOL_EXECUTING if here in (Activity.TOOL_CALL, Activity.TOOL_EXECUTING) else here
        )
        edges += [
            (Trigger.TOOL_EXECUTION_START_READ_ONLY, here, after_start),
            (Trigger.TOOL_EXECUTION_START_EFFECTFUL, here, after_start),
            (
                Trigger.TOOL_EXECUTION_END,
                here,
                Activity.TOOL_CALL if here is Activity.TOOL_EXECUTING else here,
            ),
        ]
    for here in _OPEN:
        edges += [
            (Trigger.USAGE, here, here),
            (Trigger.KEEPALIVE, here, here),
            (Trigger.METADATA, here, here),
        ]
    return edges


def _failure_edges() -> list[tuple[Trigger, Activity, Activity]]:
    return [
        (t, here, Activity.FAILED)
        for here in NON_TERMINAL_ACTIVITIES
        for t in Trigger
        if t in FAILURE_TRIGGERS
    ]


ACTIVITY_TRANSITIONS: Final[tuple[tuple[Trigger, Activity, Activity], ...]] = tuple(
    _progress_edges() + _failure_edges()
)
"""(trigger, source, destination) for the activity region."""

COMMITMENT_TRANSITIONS: Final[tuple[tuple[Trigger, Commitment, Commitment], ...]] = (
    (Trigger.TEXT_DELTA, Commitment.NONE, Commitment.VISIBLE),
    (Trigger.TOOL_EXECUTION_START_EFFECTFUL, Commitment.NONE, Commitment.SIDE_EFFECT),
    (Trigger.TOOL_EXECUTION_START_EFFECTFUL, Commitment.VISIBLE, Commitment.SIDE_EFFECT),
)
"""(trigger, source, destination) for the commitment region; any other trigger leaves commitment as it is."""

INITIAL_ACTIVITY: Final = Activity.IDLE
INITIAL_COMMITMENT: Final = Commitment.NONE
