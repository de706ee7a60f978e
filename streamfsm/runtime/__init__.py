"""All IO: the streaming client, SSE decoding, wire adapters, watchdogs, the run record."""

from ._config import Ids, StreamConfig
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
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from ._record import SCHEMA, RunRecord
from ._stream import HttpRun, Run, open_stream

__all__ = [
    "SCHEMA",
    "ConsumerEvent",
    "Finish",
    "FinishReason",
    "HttpRun",
    "Ids",
    "Keepalive",
    "Metadata",
    "ProtocolViolation",
    "ProviderErrorEvent",
    "ReasoningDelta",
    "Run",
    "RunRecord",
    "StreamConfig",
    "StreamError",
    "StreamEvent",
    "StreamFailed",
    "TextDelta",
    "ToolCall",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "Usage",
    "open_stream",
]
