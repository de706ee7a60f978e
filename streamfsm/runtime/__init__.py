"""All IO: the streaming client, SSE decoding, wire adapters, watchdogs, the run record."""

from ._config import AttemptLink, Ids, StreamConfig
from ._errors import StreamError, StreamFailed
from ._events import (
    ConsumerEvent,
    Finish,
    FinishReason,
    Keepalive,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    Restarted,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from ._logs import read_records
from ._record import SCHEMA, RunRecord
from ._retry import Partial, RetryingEvent, RetryingRun, RetryPolicy, ToolResult, retrying
from ._sdk import SdkRun, SyncSdkRun, wrap
from ._sinks import AuditLog, ErrorLog, JsonlSink
from ._stream import HttpRun, Run, open_stream

__all__ = [
    "SCHEMA",
    "AttemptLink",
    "AuditLog",
    "ConsumerEvent",
    "ErrorLog",
    "Finish",
    "FinishReason",
    "HttpRun",
    "Ids",
    "JsonlSink",
    "Keepalive",
    "Metadata",
    "Partial",
    "ProtocolViolation",
    "ProviderErrorEvent",
    "ReasoningDelta",
    "Restarted",
    "RetryPolicy",
    "RetryingEvent",
    "RetryingRun",
    "Run",
    "RunRecord",
    "SdkRun",
    "StreamConfig",
    "StreamError",
    "StreamEvent",
    "StreamFailed",
    "SyncSdkRun",
    "TextDelta",
    "ToolCall",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResult",
    "Usage",
    "open_stream",
    "read_records",
    "retrying",
    "wrap",
]
