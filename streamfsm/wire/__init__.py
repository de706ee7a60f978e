"""The wire, without I/O: normalised events, framing, one adapter and one ``Format`` per provider format.

Imports only ``machine`` and ``classify``; the runtime and everything that uses a run read the wire from here.
"""

import warnings
from typing import Any

from ._adapters import Adapter
from ._adapters._base import (
    DONE_MISSING,
    MALFORMED_JSON,
    MAX_DOCUMENT_BYTES,
    NOT_EVENT_STREAM,
    UNEXPECTED_EVENT,
    UNEXPECTED_SHAPE,
    UNREAD_CONTENT,
    as_dict,
    document_events,
)
from ._adapters._bedrock_converse import SdkBedrockConverse
from ._adapters._continue import (
    CONTINUE_INSTRUCTION,
    Continuation,
    ContinueRefusal,
    ContinueStyle,
    Rewrite,
    prefill_refused,
)
from ._adapters._openai_responses import OpenAIResponsesAdapter
from ._adapters._resume import ResumeRefusal, refusal_of, resumable_request, resume_url
from ._adapters._sdk_items import (
    HELPER_EVENTS,
    NO_FINISH_REASON,
    SdkAnthropic,
    SdkOpenAIChat,
    SdkOpenAIResponses,
    SdkTranslator,
)
from ._definitions import Decided, Decision, Definitions, undecided
from ._events import (
    CONSUMER_EVENT_TYPES,
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
    ToolInput,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from ._eventstream import EventStreamDecoder, encode_message, event_stream_violation, exception_message
from ._formats import (
    ABSENT,
    FORMAT_NAMES,
    FORMATS,
    Format,
    Framing,
    adapter_for,
    continuation_body,
    dropped_whitespace,
    format_named,
    style_for,
    whole_answers_of,
)
from ._ndjson import NDJSONDecoder
from ._slots import KitName, Prefill, Probe, Resume, SdkSide
from ._sse import MAX_LINE_BYTES, Frame, SSEDecoder

__all__ = [
    "ABSENT",
    "CONSUMER_EVENT_TYPES",
    "CONTINUE_INSTRUCTION",
    "DONE_MISSING",
    "FORMATS",
    "FORMAT_NAMES",
    "HELPER_EVENTS",
    "MALFORMED_JSON",
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_BYTES",
    "NOT_EVENT_STREAM",
    "NO_FINISH_REASON",
    "UNEXPECTED_EVENT",
    "UNEXPECTED_SHAPE",
    "UNREAD_CONTENT",
    "Adapter",
    "ConsumerEvent",
    "Continuation",
    "ContinueRefusal",
    "ContinueStyle",
    "Continued",
    "Decided",
    "Decision",
    "Definitions",
    "EventStreamDecoder",
    "Finish",
    "FinishReason",
    "Format",
    "Frame",
    "Framing",
    "Keepalive",
    "KitName",
    "Metadata",
    "NDJSONDecoder",
    "OpenAIResponsesAdapter",
    "Prefill",
    "Probe",
    "ProtocolViolation",
    "ProviderErrorEvent",
    "ReasoningDelta",
    "Restarted",
    "Result",
    "Resume",
    "ResumeRefusal",
    "Rewrite",
    "SSEDecoder",
    "SdkAnthropic",
    "SdkBedrockConverse",
    "SdkOpenAIChat",
    "SdkOpenAIResponses",
    "SdkSide",
    "SdkTranslator",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolInput",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "Usage",
    "adapter_for",
    "as_dict",
    "continuation_body",
    "document_events",
    "dropped_whitespace",
    "encode_message",
    "event_stream_violation",
    "exception_message",
    "format_named",
    "prefill_refused",
    "refusal_of",
    "resumable_request",
    "resume_url",
    "style_for",
    "undecided",
    "whole_answers_of",
]


def __getattr__(name: str) -> Any:
    if name in _RENAMED:  # an old name, kept for code written against it
        warnings.warn(f"{__name__}.{name} is now {_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_RENAMED: dict[str, str] = {"SSEEvent": "Frame", "PROVIDERS": "FORMAT_NAMES"}
