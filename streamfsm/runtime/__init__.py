"""All I/O: the streaming client, the tap's and the relay's runs, watchdogs, sinks, the run record.

Besides the public API it exports what the rooms above it (tap, relay, store, cli, testing) drive a run and
read records with; they import from here, never from a private module."""

from typing import TYPE_CHECKING, Any

from ..wire import (
    CONTINUE_INSTRUCTION,
    ConsumerEvent,
    Continuation,
    Continued,
    ContinueStyle,
    Finish,
    FinishReason,
    Keepalive,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    Restarted,
    Result,
    ResumeRefusal,
    Rewrite,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInput,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
    continuation_body,
)
from ._breaker import BREAKERS, Breaker, Breakers, BreakerState, Transition
from ._config import MAX_ATTEMPT_LINKS, AttemptLink, Ids, RouteTag, StreamConfig
from ._core import DEADLINE, END, STOP, ReadEnd, RunCore, SseWire, Wire
from ._decoding import as_bytes, content_decoder
from ._delivery import Partial, RetryingEvent, ToolResult
from ._errors import NoRoute, StreamError, StreamFailed
from ._handle import RunHandle
from ._labels import BoundedLabel
from ._logs import LogProblem, OnProblem, log_files, read_records
from ._reads import LoopReads
from ._record import SCHEMA, RelayClose, RunRecord
from ._recovery import Offer, Recovery
from ._report import SIGNATURE, Group, field_value, group_failures, iso, request_id, started
from ._retry import RetryingRun, retrying
from ._retry_policy import DecisionKind, Failed, RetryPolicy, after_failure
from ._routes import Help, Hop, Need, Route, Routing, helps, hop
from ._sdk import SdkRun, SyncSdkRun, wrap
from ._sinks import (
    AuditLog,
    BackgroundSink,
    Backlog,
    ErrorLog,
    JsonlSink,
    count_sink_failure,
    deliver,
    recent_records,
    sink_failures,
)
from ._stream import HttpRun, Run, ToolScope, open_stream
from ._sync_reads import ThreadReads, socket_of
from ._urls import check_base_url
from ._watchdog import loop_time, plain_scope_class, running_trio
from ._whole import WholeBody
from .drivers.sync_http import SyncHttpRun, open_sync_stream

if TYPE_CHECKING:
    from ._otel import OtelLogSink, OtelSink

__all__ = [
    "BREAKERS",
    "CONTINUE_INSTRUCTION",
    "DEADLINE",
    "END",
    "MAX_ATTEMPT_LINKS",
    "SCHEMA",
    "SIGNATURE",
    "STOP",
    "AttemptLink",
    "AuditLog",
    "BackgroundSink",
    "Backlog",
    "BoundedLabel",
    "Breaker",
    "BreakerState",
    "Breakers",
    "ConsumerEvent",
    "Continuation",
    "ContinueStyle",
    "Continued",
    "DecisionKind",
    "ErrorLog",
    "Failed",
    "Finish",
    "FinishReason",
    "Group",
    "Help",
    "Hop",
    "HttpRun",
    "Ids",
    "JsonlSink",
    "Keepalive",
    "LogProblem",
    "LoopReads",
    "Metadata",
    "Need",
    "NoRoute",
    "Offer",
    "OnProblem",
    "OtelLogSink",
    "OtelSink",
    "Partial",
    "ProtocolViolation",
    "ProviderErrorEvent",
    "ReadEnd",
    "ReasoningDelta",
    "Recovery",
    "RelayClose",
    "Restarted",
    "Result",
    "ResumeRefusal",
    "RetryPolicy",
    "RetryingEvent",
    "RetryingRun",
    "Rewrite",
    "Route",
    "RouteTag",
    "Routing",
    "Run",
    "RunCore",
    "RunHandle",
    "RunRecord",
    "SdkRun",
    "SseWire",
    "StreamConfig",
    "StreamError",
    "StreamEvent",
    "StreamFailed",
    "SyncHttpRun",
    "SyncSdkRun",
    "TextDelta",
    "ThreadReads",
    "ToolCall",
    "ToolInput",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResult",
    "ToolScope",
    "Transition",
    "Usage",
    "WholeBody",
    "Wire",
    "after_failure",
    "as_bytes",
    "check_base_url",
    "content_decoder",
    "continuation_body",
    "count_sink_failure",
    "deliver",
    "field_value",
    "group_failures",
    "helps",
    "hop",
    "iso",
    "log_files",
    "loop_time",
    "open_stream",
    "open_sync_stream",
    "plain_scope_class",
    "read_records",
    "recent_records",
    "request_id",
    "retrying",
    "running_trio",
    "sink_failures",
    "socket_of",
    "started",
    "wrap",
]

# The WebSocket source needs the websocket extra: its names load on first use, as an import would.
_WEBSOCKET = ("MessageWire", "WebSocketConnection", "WebSocketRun", "websocket_url")

if TYPE_CHECKING:
    from .drivers.websocket import MessageWire as MessageWire
    from .drivers.websocket import WebSocketConnection as WebSocketConnection
    from .drivers.websocket import WebSocketRun as WebSocketRun
    from .drivers.websocket import websocket_url as websocket_url


def __getattr__(name: str) -> Any:
    if name in _WEBSOCKET:
        from .drivers import websocket

        return getattr(websocket, name)
    # OpenTelemetry (the ``otel`` extra) loads only when its sinks are asked for: ``streamfsm.otel``.
    if name in ("OtelLogSink", "OtelSink"):
        from . import _otel

        return getattr(_otel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
