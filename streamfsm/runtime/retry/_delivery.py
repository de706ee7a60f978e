"""What a retrying run gives its consumer: an attempt's events held back until the attempt commits, and what
the delivering attempt has given so far (`Partial`). No I/O: the executor (``_retry``) feeds it events and
reads what to yield from ``out``; the rules are in ``_retry``'s docstring (*Holding back*).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final, TypeAlias

from ...wire import (
    ConsumerEvent,
    Continued,
    Finish,
    ReasoningDelta,
    Restarted,
    TextDelta,
    ToolCall,
    ToolInputStart,
)

__all__ = ["DEFAULT_MAX_HELD_EVENTS", "Delivery", "Partial", "RetryingEvent", "ToolResult"]

DEFAULT_MAX_HELD_EVENTS: Final = 10_000

RetryingEvent: TypeAlias = ConsumerEvent | Restarted | Continued
"""What a `RetryingRun` yields: the delivering attempts' events, and `Restarted` before a confirmed replay or
`Continued` before a confirmed continuation."""

_COMMIT: Final = (TextDelta, ToolCall, Finish)
_REPEAT: Final = "a retry would repeat them"
EXPOSED: Final = "events of this attempt already reached the consumer; " + _REPEAT


@dataclass(frozen=True, slots=True, repr=False)
class ToolResult:
    """A tool the agent finished running (``RetryingRun.tool_finished``). ``result`` stays in memory only."""

    call_id: str
    name: str
    ok: bool
    result: object = None

    def __repr__(self) -> str:
        return f"ToolResult({self.call_id!r}, {self.name!r}, ok={self.ok})"


@dataclass(frozen=True, slots=True, repr=False)
class Partial:
    """What the consumer was given by the delivering attempt (``attempt``; 0 when nothing was delivered): the
    text so far, complete tool calls, and results of the tools that finished. Enough to build a continuation
    request instead of a replay. A confirmed retry (`Restarted`) starts it afresh."""

    attempt: int = 0
    text: str = ""
    refusal: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.text or self.refusal or self.tool_calls)

    def __repr__(self) -> str:
        return (
            f"Partial(attempt={self.attempt}, <{len(self.text)} chars>, <{len(self.refusal)} refusal chars>,"
            f" tool_calls={len(self.tool_calls)}, tool_results={len(self.tool_results)})"
        )


class Delivery:
    """The consumer's side of a chain: ``take`` an attempt's events, ``out`` what to yield, in order.

    ``exposed`` says why events of the current attempt already reached the consumer (None while all are
    held). ``text``, ``refusal``, ``reasoning`` (kept once ``collect`` asked for it), ``calls`` and
    ``results`` are what the delivering attempt (``attempt``) has given; ``open_inputs`` the calls whose
    arguments reached the consumer in part.
    """

    def __init__(self, max_held: int = DEFAULT_MAX_HELD_EVENTS) -> None:
        self.max_held = max_held
        self.out: deque[RetryingEvent] = deque()
        self.held: list[ConsumerEvent] = []
        self.exposed: str | None = None
        self.attempt = 0  # the latest attempt's number: the one whose events are taken
        self.delivered_by = 0  # the attempt that gave the consumer what it has (``Partial.attempt``)
        self.trim = 0  # leading whitespace a continuation may write again (the consumer has it)
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.reasoning: list[str] | None = None
        self.calls: dict[str, ToolCall] = {}
        self.results: dict[str, ToolResult] = {}
        self.open_inputs: dict[str, None] = {}

    @property
    def partial(self) -> Partial:
        return Partial(
            attempt=self.delivered_by,
            text="".join(self.text),
            refusal="".join(self.refusal),
            tool_calls=tuple(self.calls.values()),
            tool_results=tuple(self.results.values()),
        )

    def opened(self, attempt: int, *, resumed: bool, trim: int | None = None) -> None:
        """Attempt ``attempt`` opened. Only now are the failed attempt's held events dropped (a stop during
        the delay or the confirmation delivers them), and its exposure forgotten; a resumed attempt goes on
        with the same response: what was held stays held, what was exposed stays exposed."""
        self.attempt = attempt
        if not resumed:
            self.held, self.exposed = [], None
        if trim is not None:  # a continuation: the whitespace its request left out
            self.trim = trim

    def take(self, event: ConsumerEvent) -> None:
        """One event of the current attempt: held until the attempt commits, then delivered."""
        if self.trim and isinstance(event, TextDelta) and not event.refusal:
            # A continuation may write again the whitespace its request left out (an Anthropic prefill).
            text = event.text
            head = text[: self.trim]
            cut = len(head) - len(head.lstrip())
            if cut == len(text):  # whitespace only, all of it repeated
                self.trim -= cut
                return
            self.trim = 0
            if cut:
                event = TextDelta(text[cut:])
        if self.exposed is not None:
            self._deliver(event)
            return
        held = self.held
        held.append(event)
        if isinstance(event, _COMMIT):
            self.release()
        elif len(held) > self.max_held:
            self.release(f"more than {self.max_held} events were held back, then released; {_REPEAT}")

    def release(self, why: str | None = None) -> None:
        """The attempt commits: what was held reaches the consumer, and the attempt is exposed."""
        self.exposed = why or EXPOSED
        self.flush()

    def flush(self) -> None:
        """The chain ends at this attempt: the consumer gets what was held, then the failure."""
        for event in self.held:
            self._deliver(event)
        self.held.clear()

    def continued(self, attempt: int, summary_key: str) -> None:
        """A confirmed continuation: the consumer keeps what it has; cut calls are requested again whole."""
        discarded = tuple(self.open_inputs)
        self.open_inputs.clear()
        self.out.append(Continued(attempt, summary_key, len("".join(self.text)), discarded))

    def restarted(self, attempt: int, summary_key: str) -> None:
        """A confirmed replay: the consumer drops what it showed; the new attempt delivers afresh."""
        self.out.append(Restarted(attempt, summary_key))
        self.trim = 0
        self.open_inputs.clear()
        self.delivered_by = 0
        self.text.clear()
        self.refusal.clear()
        if self.reasoning is not None:
            self.reasoning.clear()
        self.calls.clear()
        self.results.clear()

    def _deliver(self, event: ConsumerEvent) -> None:
        self.delivered_by = self.attempt
        if isinstance(event, TextDelta):
            (self.refusal if event.refusal else self.text).append(event.text)
        elif isinstance(event, ReasoningDelta):
            if self.reasoning is not None:
                self.reasoning.append(event.text)
        elif isinstance(event, ToolCall):
            self.calls[event.call_id] = event
            self.open_inputs.pop(event.call_id, None)
        elif isinstance(event, ToolInputStart):
            self.open_inputs[event.call_id] = None
        self.out.append(event)
