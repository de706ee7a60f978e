"""Normalised stream events: what every wire format is decoded into, and what a consumer iterates.

Each event class names the machine trigger it drives. Reprs never show text or arguments, only sizes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from ..classify import ProviderError
from ..machine import Trigger


class FinishReason(enum.Enum):
    """A finish reason unified across providers; the raw value travels beside it."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


class ToolInput(enum.Enum):
    """The grammar a tool call's input follows, which decides when it is complete: ``JSON`` (a function's
    arguments: complete when they parse) or ``TEXT`` (a custom / freeform tool's raw input: complete when
    the provider ended it)."""

    JSON = "json"
    TEXT = "text"


@dataclass(frozen=True, slots=True, repr=False)
class TextDelta:
    """Visible output: answer text or a refusal."""

    trigger: ClassVar[Trigger] = Trigger.TEXT_DELTA
    text: str
    refusal: bool = False

    def __repr__(self) -> str:
        return f"TextDelta(<{len(self.text)} chars>{', refusal' if self.refusal else ''})"


@dataclass(frozen=True, slots=True, repr=False)
class ReasoningDelta:
    """Reasoning text (raw or summary). Not visible output."""

    trigger: ClassVar[Trigger] = Trigger.REASONING_DELTA
    text: str
    summary: bool = False

    def __repr__(self) -> str:
        return f"ReasoningDelta(<{len(self.text)} chars>{', summary' if self.summary else ''})"


@dataclass(frozen=True, slots=True)
class ToolInputStart:
    """A tool call's arguments begin to stream."""

    trigger: ClassVar[Trigger] = Trigger.TOOL_INPUT_START
    call_id: str
    name: str
    index: int = 0
    server_side: bool = False  # run by the provider (e.g. a hosted web search), never by the agent
    input: ToolInput = ToolInput.JSON  # the grammar its input follows


@dataclass(frozen=True, slots=True, repr=False)
class ToolInputDelta:
    trigger: ClassVar[Trigger] = Trigger.TOOL_INPUT_DELTA
    call_id: str
    arguments_delta: str

    def __repr__(self) -> str:
        return f"ToolInputDelta({self.call_id!r}, <{len(self.arguments_delta)} chars>)"


@dataclass(frozen=True, slots=True)
class ToolInputEnd:
    trigger: ClassVar[Trigger] = Trigger.TOOL_INPUT_END
    call_id: str


@dataclass(frozen=True, slots=True, repr=False)
class ToolCall:
    """A complete tool call: name and full input as the provider sent it. ``input`` says its grammar:
    ``ToolInput.JSON`` (``arguments`` is a JSON document) or ``ToolInput.TEXT`` (a freeform tool's text)."""

    trigger: ClassVar[Trigger] = Trigger.TOOL_CALL
    call_id: str
    name: str
    arguments: str
    index: int = 0
    server_side: bool = False
    input: ToolInput = ToolInput.JSON

    def __repr__(self) -> str:
        text = ", text" if self.input is ToolInput.TEXT else ""
        return f"ToolCall({self.call_id!r}, {self.name!r}, <{len(self.arguments)} chars>{text})"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage; providers that stream cumulative usage send several, the last one counts.

    ``total_tokens`` is the provider's own total where it gives one (OpenAI's ``total_tokens``, Gemini's
    ``totalTokenCount``), else None (Anthropic gives none). Anthropic sends usage twice: ``message_start``
    with the input side and a placeholder ``output_tokens`` (1), then ``message_delta`` with the final
    count. The first event carries the input side only (``output_tokens`` None, never the placeholder); the
    last one carries the whole, so the last one counts here too and ``result().usage`` is the final one.
    """

    trigger: ClassVar[Trigger] = Trigger.USAGE
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    total_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """The provider's terminal signal arrived."""

    trigger: ClassVar[Trigger] = Trigger.FINISH
    reason: FinishReason
    raw_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Metadata:
    """Protocol bookkeeping (message start, content part added, ids). Not provider progress."""

    trigger: ClassVar[Trigger] = Trigger.METADATA
    type: str  # the wire event's type, e.g. "message_start"
    response_id: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Keepalive:
    """A ping or an SSE comment. Not provider progress."""

    trigger: ClassVar[Trigger] = Trigger.KEEPALIVE
    type: str = "comment"


@dataclass(frozen=True, slots=True)
class ProviderErrorEvent:
    """An in-band error event from the provider."""

    trigger: ClassVar[Trigger] = Trigger.PROVIDER_ERROR_EVENT
    error: ProviderError


@dataclass(frozen=True, slots=True)
class Restarted:
    """Not from the wire: the retry executor is starting a new attempt after a *confirmed* retry.

    Drop what you showed of the previous attempt; the new attempt's events follow. ``attempt`` is the number
    of the attempt that starts now, ``summary_key`` why the previous one failed. It has no machine trigger: it
    is never fed to a run, and it is not a `ConsumerEvent` (only a `RetryingRun` yields it).
    """

    attempt: int
    summary_key: str


@dataclass(frozen=True, slots=True)
class Continued:
    """Not from the wire: the retry executor is continuing the answer after a *confirmed* continuation.

    Keep what you showed: the new attempt was asked to write only what is missing, and its events follow.
    ``after_chars`` is how much text the request carried, ``discarded_calls`` the ids of tool calls whose
    arguments were cut (drop their partial input: they are requested again whole). Like `Restarted`, it has
    no machine trigger and only a `RetryingRun` yields it.
    """

    attempt: int
    summary_key: str
    after_chars: int
    discarded_calls: tuple[str, ...] = ()


StreamEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolInputStart
    | ToolInputDelta
    | ToolInputEnd
    | ToolCall
    | Usage
    | Finish
    | Metadata
    | Keepalive
    | ProviderErrorEvent
)
"""Every normalised event an adapter may produce."""

ConsumerEvent: TypeAlias = (
    TextDelta | ReasoningDelta | ToolInputStart | ToolInputDelta | ToolInputEnd | ToolCall | Usage | Finish
)
"""The events a consumer iterates; keepalives, metadata and errors drive the machine and the record only."""


@dataclass(frozen=True, slots=True, repr=False)
class Result:
    """What a finished run produced, from what the run counted: ``run.result()``.

    ``text`` is the answer (``refusal`` a refusal's text), ``reasoning`` the reasoning text (raw or summary),
    ``tool_calls`` the complete calls in the order they completed, ``usage`` the final usage (or None),
    ``finish_reason`` the unified reason and ``raw_finish_reason`` the provider's. It is the caller's own
    data: no record, log or repr ever carries it (the repr shows sizes only).
    """

    text: str
    reasoning: str
    refusal: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None
    finish_reason: FinishReason | None
    raw_finish_reason: str | None = None

    def __repr__(self) -> str:
        reason = self.finish_reason.value if self.finish_reason is not None else None
        return (
            f"Result(<{len(self.text)} chars>, <{len(self.reasoning)} reasoning chars>,"
            f" <{len(self.refusal)} refusal chars>, {len(self.tool_calls)} tool calls,"
            f" usage={self.usage!r}, finish_reason={reason!r})"
        )


CONSUMER_EVENT_TYPES: tuple[type, ...] = (
    TextDelta,
    ReasoningDelta,
    ToolInputStart,
    ToolInputDelta,
    ToolInputEnd,
    ToolCall,
    Usage,
    Finish,
)


class ProtocolViolation(Exception):
    """A wire stream broke its format.

    ``detail`` is fixed vocabulary (never wire content); ``position`` is the index of the offending SSE event,
    or the byte offset for line-level faults. ``before``: the events that same SSE event gave before the
    fault, for a fault the runtime classifies where those events left the stream (a call that started and
    ended on unparseable arguments in one chunk); the runtime empties it once applied.
    """

    def __init__(self, detail: str, position: int, before: tuple[StreamEvent, ...] = ()) -> None:
        self.detail = detail
        self.position = position
        self.before = before
        super().__init__(f"{detail} at {position}")
