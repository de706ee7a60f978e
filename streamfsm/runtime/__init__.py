"""All IO: the streaming client, SSE decoding, wire adapters, watchdogs, the run record."""

from ._adapters._continue import CONTINUE_INSTRUCTION, Continuation, ContinueStyle, Rewrite, continuation_body
from ._adapters._resume import ResumeRefusal
from ._config import AttemptLink, Ids, StreamConfig
from ._core import Framing, RunCore, SseWire, Wire
from ._errors import StreamError, StreamFailed
from ._events import (
    ConsumerEvent,
    Continued,
    Finish,
    FinishReason,
    Keepalive,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    Restarted,
    Result,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from ._logs import read_records
from ._reads import LoopReads
from ._record import SCHEMA, RunRecord
from ._recovery import Offer, Recovery
from ._retry import Partial, RetryingEvent, RetryingRun, RetryPolicy, ToolResult, retrying
from ._sdk import SdkRun, SyncSdkRun, wrap
from ._sinks import AuditLog, BackgroundSink, ErrorLog, JsonlSink, deliver, sink_failures
from ._stream import HttpRun, Run, ToolScope, open_stream
from ._sync_reads import Interrupted, ThreadReads

__all__ = [
    "CONTINUE_INSTRUCTION",
    "SCHEMA",
    "AttemptLink",
    "AuditLog",
    "BackgroundSink",
    "ConsumerEvent",
    "Continuation",
    "ContinueStyle",
    "Continued",
    "ErrorLog",
    "Finish",
    "FinishReason",
    "Framing",
    "HttpRun",
    "Ids",
    "Interrupted",
    "JsonlSink",
    "Keepalive",
    "LoopReads",
    "Metadata",
    "Offer",
    "Partial",
    "ProtocolViolation",
    "ProviderErrorEvent",
    "ReasoningDelta",
    "Recovery",
    "Restarted",
    "Result",
    "ResumeRefusal",
    "RetryPolicy",
    "RetryingEvent",
    "RetryingRun",
    "Rewrite",
    "Run",
    "RunCore",
    "RunRecord",
    "SdkRun",
    "SseWire",
    "StreamConfig",
    "StreamError",
    "StreamEvent",
    "StreamFailed",
    "SyncSdkRun",
    "TextDelta",
    "ThreadReads",
    "ToolCall",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResult",
    "ToolScope",
    "Usage",
    "Wire",
    "continuation_body",
    "deliver",
    "open_stream",
    "read_records",
    "retrying",
    "sink_failures",
    "wrap",
]
