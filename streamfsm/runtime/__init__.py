"""A run: ``core/`` tracks one call without I/O; ``drivers/`` connect, read and time and feed the core;
``retry/`` runs a logical stream as a chain of attempts; ``records/`` keeps, sinks and reads back the
run records.

Besides the public API it exports what the rooms above it (tap, relay, store, cli, testing) drive a run and
read records with; they import from here, never from a private module."""

import warnings
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
from .core._config import MAX_ATTEMPT_LINKS, AttemptLink, Ids, RouteTag, StreamConfig
from .core._errors import NoRoute, StreamError, StreamFailed
from .core._run_core import DEADLINE, END, STOP, ReadEnd, RunCore, StreamWire, Wire
from .core._urls import check_base_url
from .core._whole import WholeBody
from .drivers._decoding import as_bytes, content_decoder
from .drivers._handle import RunHandle
from .drivers._reads import LoopReads
from .drivers._sdk import SdkRun, SyncSdkRun, wrap
from .drivers._stream import HttpRun, Run, ToolScope, open_stream
from .drivers._sync_reads import ThreadReads, socket_of
from .drivers._watchdog import loop_time, plain_scope_class, running_trio
from .drivers.sync_http import SyncHttpRun, open_sync_stream
from .records._labels import BoundedLabel
from .records._logs import LogProblem, OnProblem, log_files, read_records
from .records._record import SCHEMA, RelayClose, RunRecord
from .records._report import SIGNATURE, Group, field_value, group_failures, iso, request_id, started
from .records._sinks import (
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
from .retry._breaker import BREAKERS, Breaker, Breakers, BreakerState, Transition
from .retry._delivery import Partial, RetryingEvent, ToolResult
from .retry._recovery import Offer, Recovery
from .retry._retry import RetryingRun, retrying
from .retry._retry_policy import DecisionKind, Failed, RetryPolicy, after_failure
from .retry._routes import Help, Hop, Need, Route, Routing, helps, hop

if TYPE_CHECKING:
    from .records._otel import OtelLogSink, OtelSink

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
    "StreamConfig",
    "StreamError",
    "StreamEvent",
    "StreamFailed",
    "StreamWire",
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
    if name in _RENAMED:  # an old name, kept for code written against it
        warnings.warn(f"{__name__}.{name} is now {_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    if name in _WEBSOCKET:
        from .drivers import websocket

        return getattr(websocket, name)
    # OpenTelemetry (the ``otel`` extra) loads only when its sinks are asked for: ``streamfsm.otel``.
    if name in ("OtelLogSink", "OtelSink"):
        from .records import _otel

        return getattr(_otel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_RENAMED: dict[str, str] = {"SseWire": "StreamWire"}
