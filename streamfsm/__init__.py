"""streamfsm: every LLM stream driven through an explicit state machine.

The machine and the classifier import eagerly and do no IO; the runtime (httpx, anyio) loads on first use,
so ``import streamfsm.machine`` stays light.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from .classify import (
    AbortSource,
    Action,
    Confidence,
    Diagnosis,
    Facts,
    FailureClass,
    Phase,
    ProviderError,
    ProviderErrorKind,
    TransportFacts,
    TransportKind,
    Verdict,
    diagnose,
    redact_http_logs,
)
from .machine import Activity, Commitment, IllegalTransition, State, StreamMachine, Trigger

if TYPE_CHECKING:
    from .runtime import (
        AttemptLink,
        AuditLog,
        BackgroundSink,
        Breakers,
        Continuation,
        Continued,
        ContinueStyle,
        ErrorLog,
        Finish,
        FinishReason,
        Ids,
        JsonlSink,
        NoRoute,
        Offer,
        Partial,
        ReasoningDelta,
        Recovery,
        Restarted,
        Result,
        ResumeRefusal,
        RetryingRun,
        RetryPolicy,
        Route,
        Run,
        RunRecord,
        SdkRun,
        StreamConfig,
        StreamError,
        StreamFailed,
        SyncHttpRun,
        SyncSdkRun,
        TextDelta,
        ToolCall,
        ToolInput,
        ToolInputDelta,
        ToolInputEnd,
        ToolInputStart,
        ToolResult,
        Usage,
        open_stream,
        open_sync_stream,
        read_records,
        recent_records,
        retrying,
        sink_failures,
        wrap,
    )
    from .tap import async_http_client, context, failure_of, http_client

__version__ = "0.4.0"

# A library stays silent until the application configures logging.
logging.getLogger("streamfsm").addHandler(logging.NullHandler())

_RUNTIME_NAMES = frozenset(
    {
        "AuditLog",
        "BackgroundSink",
        "Breakers",
        "ErrorLog",
        "JsonlSink",
        "read_records",
        "recent_records",
        "sink_failures",
        "AttemptLink",
        "Continuation",
        "ContinueStyle",
        "Continued",
        "Finish",
        "FinishReason",
        "Ids",
        "Offer",
        "Partial",
        "ReasoningDelta",
        "Recovery",
        "Restarted",
        "Result",
        "ResumeRefusal",
        "RetryPolicy",
        "RetryingRun",
        "NoRoute",
        "Route",
        "Run",
        "RunRecord",
        "SdkRun",
        "SyncSdkRun",
        "SyncHttpRun",
        "StreamConfig",
        "StreamError",
        "StreamFailed",
        "TextDelta",
        "ToolCall",
        "ToolInputDelta",
        "ToolInputEnd",
        "ToolInput",
        "ToolInputStart",
        "ToolResult",
        "Usage",
        "open_stream",
        "open_sync_stream",
        "retrying",
        "wrap",
    }
)


_TAP_NAMES = frozenset({"async_http_client", "context", "failure_of", "http_client"})
# The rooms a bare ``import streamfsm`` reaches on first use (``streamfsm.tap.async_transport(...)``), as
# ``import streamfsm.tap`` would: loaded then, so that the import stays light.
_SUBPACKAGES = frozenset(
    {"cli", "diagrams", "frameworks", "otel", "relay", "runtime", "store", "tap", "testing", "wire"}
)


def __getattr__(name: str) -> Any:
    # The runtime pulls in httpx and anyio; load it only when a runtime name is used.
    if name in _RUNTIME_NAMES:
        from . import runtime

        return getattr(runtime, name)
    if name in _TAP_NAMES:
        from . import tap

        return getattr(tap, name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'streamfsm' has no attribute {name!r}")


__all__ = [
    "AbortSource",
    "Action",
    "Activity",
    "AttemptLink",
    "AuditLog",
    "BackgroundSink",
    "Breakers",
    "Commitment",
    "Confidence",
    "Continuation",
    "ContinueStyle",
    "Continued",
    "Diagnosis",
    "ErrorLog",
    "Facts",
    "FailureClass",
    "Finish",
    "FinishReason",
    "Ids",
    "IllegalTransition",
    "JsonlSink",
    "NoRoute",
    "Offer",
    "Partial",
    "Phase",
    "ProviderError",
    "ProviderErrorKind",
    "ReasoningDelta",
    "Recovery",
    "Restarted",
    "Result",
    "ResumeRefusal",
    "RetryPolicy",
    "RetryingRun",
    "Route",
    "Run",
    "RunRecord",
    "SdkRun",
    "State",
    "StreamConfig",
    "StreamError",
    "StreamFailed",
    "StreamMachine",
    "SyncHttpRun",
    "SyncSdkRun",
    "TextDelta",
    "ToolCall",
    "ToolInput",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResult",
    "TransportFacts",
    "TransportKind",
    "Trigger",
    "Usage",
    "Verdict",
    "__version__",
    "async_http_client",
    "context",
    "diagnose",
    "failure_of",
    "http_client",
    "open_stream",
    "open_sync_stream",
    "read_records",
    "recent_records",
    "redact_http_logs",
    "retrying",
    "sink_failures",
    "wrap",
]
