"""How an attempt of a retried stream begins: the recoveries, and the plans the retry executor hands a run.

The executor (``_retry``) decides and builds the plans here from what the consumer was given (`Partial`,
``continue_plan``, ``offer``); a run built with ``ids=ids`` (``open_stream``) carries out the plan in
``ids.recovery``: a `ResumePlan` re-attaches to the provider's stream after the last event received, a
`ContinuePlan` sends the request rewritten to carry what the consumer was given. Both reprs show sizes and
positions only: a plan carries the delivered text to the provider (that is the request), never into a
record, a log or a repr.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from ...machine import Activity, Commitment, State, Trigger
from ...wire import (
    FORMATS,
    Continuation,
    ContinueStyle,
    ResumeRefusal,
    Rewrite,
    continuation_body,
    dropped_whitespace,
    style_for,
)
from ._delivery import Partial

if TYPE_CHECKING:
    from ...wire import Adapter

__all__ = [
    "RESUMABLE_EDGES",
    "Continuations",
    "ContinuePlan",
    "Offer",
    "Recovery",
    "RecoveryPlan",
    "ResumePlan",
    "continue_plan",
    "offer",
]


class Recovery(enum.Enum):
    """How the next attempt of a stream begins."""

    _value_: str

    RETRY = "retry"  # a fresh attempt, automatically: nothing of the failed one reached the consumer
    RESUME = "resume"  # the provider's stream, re-attached after the last event received (automatic)
    CONTINUE = "continue"  # a new request carrying what the consumer was given (confirmed; `Continued`)
    REPLAY = "replay"  # a fresh attempt after confirmation; the consumer drops what it showed (`Restarted`)


RESUMABLE_EDGES: Final = frozenset(
    {
        Trigger.DISCONNECTED,
        Trigger.EOF_WITHOUT_TERMINAL,
        Trigger.FIRST_TOKEN_TIMEOUT,
        Trigger.IDLE_TIMEOUT,
        Trigger.TOTAL_TIMEOUT,
    }
)
"""The failures after which a stream may be re-attached: the connection, not the response, went wrong."""


@dataclass(frozen=True, slots=True, repr=False)
class ResumePlan:
    """Re-attach to response ``response_id`` after event ``starting_after``. ``adapter`` is the failed run's
    (each resumed run decodes with a copy that knows the open call), ``state`` where its stream had got to
    (the resumed run's machine starts there, so a later failure is judged with what was already shown)."""

    response_id: str
    starting_after: int
    adapter: Adapter
    state: State

    def priming(self) -> tuple[Trigger, ...]:
        """The triggers that bring a fresh machine, after its headers, to where the stream had got."""
        out: list[Trigger] = []
        if self.state.commitment is not Commitment.NONE:
            out.append(Trigger.TEXT_DELTA)
        activity = self.state.activity
        if activity in (Activity.TOOL_CALL, Activity.TOOL_EXECUTING):
            out.append(Trigger.TOOL_CALL)
        elif activity is Activity.TOOL_INPUT_OPEN:
            out.append(Trigger.TOOL_INPUT_START)
        return tuple(out)

    def record(self) -> dict[str, Any]:
        return {"kind": Recovery.RESUME.value, "starting_after": self.starting_after}

    def __repr__(self) -> str:
        return f"ResumePlan(starting_after={self.starting_after})"


@dataclass(frozen=True, slots=True, repr=False)
class ContinuePlan:
    """Send the request rewritten to continue after ``continuation`` (by ``rewrite`` when given, else by the
    format's own rewrite: an instruction, or a prefill when ``style`` asks for one)."""

    continuation: Continuation
    style: ContinueStyle | None = None
    rewrite: Rewrite | None = None

    @property
    def after_chars(self) -> int:
        return len(self.continuation.text)

    def body(self, fmt: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.rewrite is not None:
            out = self.rewrite(body, self.continuation)
            if not isinstance(out, Mapping):
                raise TypeError(f"a continuation rewrite must return a mapping, not {type(out).__name__}")
            return out
        return continuation_body(fmt, body, self.continuation, self.style)

    def sent_as(self, fmt: str, body: Mapping[str, Any]) -> str:
        """How the request carries the delivered answer: ``"prefill"``, ``"instruction"`` or ``"rewrite"``
        (one of the caller's own)."""
        return "rewrite" if self.rewrite is not None else style_for(fmt, body, self.style).value

    def dropped(self, fmt: str, body: Mapping[str, Any]) -> int:
        """Trailing whitespace of the delivered text the request leaves out (a rewrite of one's own: none)."""
        return 0 if self.rewrite is not None else dropped_whitespace(fmt, body, self.continuation, self.style)

    def record(self, sent_as: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": Recovery.CONTINUE.value,
            "after_chars": self.after_chars,
            "tool_calls": len(self.continuation.calls),
        }
        if sent_as is not None:
            out["style"] = sent_as
        return out

    def __repr__(self) -> str:
        return f"ContinuePlan(after_chars={self.after_chars}, tool_calls={len(self.continuation.calls)})"


RecoveryPlan: TypeAlias = ResumePlan | ContinuePlan


@dataclass(frozen=True, slots=True)
class Offer:
    """What a ``confirm(diagnosis, offer)`` callback is offered after a failure that needs confirmation.

    ``recoveries``: the ways the stream can go on, preferred first (`Recovery.CONTINUE` when the delivered
    answer can be carried, then `Recovery.REPLAY`); returning True takes the first, returning one of them
    takes that one. ``after_chars``: the text a continuation would carry; ``tool_calls``: the complete calls
    it would carry with their results; ``discarded_calls``: calls whose arguments were cut, requested again
    whole; ``resume_refused``: why the provider would not resume the stream, when it was asked to.
    """

    recoveries: tuple[Recovery, ...]
    after_chars: int = 0
    tool_calls: int = 0
    discarded_calls: int = 0
    resume_refused: ResumeRefusal | None = None


def continue_plan(
    partial: Partial, continue_with: ContinueStyle | Rewrite | None, *, prefill_refused: bool = False
) -> ContinuePlan:
    """A continuation of what the consumer was given, sent as ``continue_with`` asks (a style, or a rewrite
    of one's own), by instruction once the model refused a prefill."""
    results = {r.call_id: r.result for r in partial.tool_results}
    continuation = Continuation(partial.text, partial.tool_calls, results)
    if isinstance(continue_with, ContinueStyle) or continue_with is None:
        style, rewrite = continue_with, None
    else:
        style, rewrite = None, continue_with
    if prefill_refused:
        style = ContinueStyle.INSTRUCTION
    return ContinuePlan(continuation, style, rewrite)


class Continuations:
    """How a chain's continuations are sent: as the caller's ``continue_with`` asks (a style, or a rewrite of
    one's own), by instruction from the moment the model refused a prefill (``prefill_refused``)."""

    def __init__(self, continue_with: ContinueStyle | Rewrite | None) -> None:
        self.continue_with = continue_with
        self.prefill_refused = False

    @property
    def _own(self) -> bool:
        return self.continue_with is not None and not isinstance(self.continue_with, ContinueStyle)

    def style(self) -> ContinueStyle | None:
        """The style the continuations are sent in (None: a rewrite of the caller's own)."""
        chosen = self.continue_with
        if self.prefill_refused or chosen is None:
            return ContinueStyle.INSTRUCTION
        return chosen if isinstance(chosen, ContinueStyle) else None

    def sendable(self, fmt: str) -> bool:
        """Whether a continuation of ``fmt`` can be sent: by a rewrite of the caller's own, or by the format's
        (Ollama's and Bedrock's have none)."""
        return self._own or FORMATS[fmt].continuation is not None

    def plan(self, partial: Partial) -> ContinuePlan:
        return continue_plan(partial, self.continue_with, prefill_refused=self.prefill_refused)


def offer(
    partial: Partial, *, discarded_calls: int, rewritable: bool, resume_refused: ResumeRefusal | None
) -> Offer:
    """The recoveries on offer after a failure that needs confirmation. A continuation needs a request the
    executor can rewrite (``rewritable``: an ``open_stream`` run), an answer to carry, no refusal, and a
    result for every complete call (a call without one could not be answered)."""
    carried = {r.call_id for r in partial.tool_results}
    continuable = (
        rewritable
        and not partial.refusal
        and bool(partial.text or partial.tool_calls)
        and all(call.call_id in carried for call in partial.tool_calls)
    )
    recoveries = (Recovery.CONTINUE, Recovery.REPLAY) if continuable else (Recovery.REPLAY,)
    return Offer(
        recoveries,
        after_chars=len(partial.text),
        tool_calls=len(partial.tool_calls),
        discarded_calls=discarded_calls,
        resume_refused=resume_refused,
    )
