"""The retry executor: run one logical stream as a chain of attempts, retrying only what the machine proved.

    policy = RetryPolicy(attempts=4, total_s=90)

    def open_attempt(ids: Ids) -> Run:           # a fresh, not yet entered run, carrying the ids it is given
        return open_stream("openai-chat", base_url=url, json=body, headers=auth, ids=ids)

    async with retrying(policy, open_attempt) as run:
        async for event in run:                  # one seamless stream, whatever happened underneath
            ...

**What happens when an attempt fails**, in this order (`decide` is the rule as a pure function):

1. The machine's verdict is ``no_retry`` (credentials, a rejected request, a side effect, a local abort, the
   consumer's own error, ...): stop.
2. The verdict is ``safe_auto_retry`` but the executor cannot stand behind it: events of this attempt
   already reached the consumer (see *Holding back*), or the request was possibly delivered (sent, no
   answer: the provider may have done and billed it) and the policy says ``retry_possibly_delivered=False``.
   The failure is then reported as ``user_confirmed_retry``, with that reason.
3. The attempt budget is spent (``policy.attempts``): stop.
4. The delay: the provider's (``retry-after-ms``, ``retry-after`` seconds or HTTP date; the classifier parses
   it into ``diagnosis.retry_after_s``) wins. A provider delay longer than ``max_provider_delay_s`` stops the
   chain rather than retrying sooner than the provider asked (that would only meet the same refusal).
   Without one, an automatic retry backs off exponentially, a confirmed one does not wait. If the delay does
   not fit in what is left of ``total_s``: stop. The executor never sleeps past its time budget.
5. ``safe_auto_retry``: wait, then open the next attempt. ``user_confirmed_retry``: with a ``confirm``
   callback, ``await confirm(diagnosis)`` (or ``confirm(diagnosis, offer)``, see `Offer`); a continuation
   sends the consumer `Continued` and opens a request carrying what it was given, a replay sends
   `Restarted` and opens a fresh one. Without a callback, or on False: stop.

**Resume comes first.** Before these rules, a failure the machine does not call ``no_retry`` whose stream
the provider keeps (a background OpenAI Responses stream whose id is known, broken by the connection or a
watchdog) is resumed at once: the next attempt re-attaches after the last event received, decodes with the
broken run's adapter state and starts its machine where the stream was, and what was held stays held. A
re-attach that fails before any answer is tried again (with the rules' delays and budgets); one the provider
refuses falls back to the rules above, applied to the break it tried to recover, its diagnosis saying why.
After a continuation, a safe retry continues again (nothing new reached the consumer). A continuation sent
as a prefill (asked for with ``continue_with=ContinueStyle.PREFILL``) that the model refuses (Anthropic's
current models: a 400 saying it takes no assistant prefill) is sent once more by instruction, automatically,
its link saying ``continue_refused``; later continuations of the chain are instructions too.

Stopping raises the last attempt's `StreamFailed` (its diagnosis is the reported one; after rule 2 a copy
with the reported verdict, chained from the same raw cause) carrying ``partial``, ``attempts`` and
``stop_reason``.

**Holding back.** Soundness (invariant 4) guarantees only that nothing *visible* escaped a
``safe_auto_retry`` attempt. Reasoning, tool-input deltas, usage and (in ``tool_call``) complete tool calls
can exist in it. So the executor holds an attempt's events back until the attempt *commits*, and releases
them, in order, at that moment:

* the first `TextDelta` (text or refusal): the attempt is now visible, so by the machine's own rules it can
  never be retried automatically: nothing is gained by holding on;
* the first `ToolCall`: the agent must see a complete call to run it, and running tools inside the stream is
  a supported pattern, so the call is released; from then on the attempt is *exposed*, and a later failure
  that the machine calls safe (a cut in ``tool_call``, the tool not started or read-only) is reported as
  needing confirmation (rule 2) instead of being replayed under the consumer's feet;
* `Finish`: the attempt succeeded.

When another attempt follows, a failed attempt's held events are dropped (as that attempt opens, not before):
nothing of it ever reaches the consumer, which is why an automatic retry is seamless. When the chain stops at
that attempt, even during the delay or the ``confirm`` before the next one, they are released before the
`StreamFailed`, so with ``attempts=1`` a retrying run yields exactly what the plain run would. The
price is latency: reasoning and tool-argument deltas arrive in one burst at the commit. The buffer is bounded
(``max_held_events``, default 10 000): past it, the events are released and the attempt is exposed.

**The time budget.** ``total_s`` counts from the moment the first attempt opens, minus the time spent waiting
for ``confirm`` (a person may take minutes to answer). It bounds when a new attempt may *start*; it never cuts
a running attempt short (that is ``StreamConfig.total_timeout``).

**Backoff.** After the failure of attempt ``n``: ``base = min(max_delay_s, initial_delay_s * multiplier **
(n - 1))`` and ``delay = base * (1 - jitter * U)``, ``U`` uniform in [0, 1). ``jitter`` is a fraction: 1.0 is
"full jitter", 0.5 (the default) "equal jitter" (at least half the base), 0 none. Provider delays are exact.

**Records.** Every attempt is a run of its own, with its own record, delivered to its sinks exactly once, by
the run. The executor links them through the `Ids` it hands ``open_attempt``: one ``trace_id`` for the chain,
``attempt`` (1, 2, ...), ``previous_run_id``, and ``attempts``: the earlier attempts as `AttemptLink` (run id,
summary key, verdict, decision, the delay waited after it and why), so the last record lists the whole chain.

**Aborting.** ``abort()`` goes to the running attempt (which then fails as ``local_abort``, never retried).
During a delay or a ``confirm`` it ends the wait and the chain stops with the last failure (``stop_reason``
says so). Either way the stopped attempt's diagnosis is reported after rule 2, like any other. Cancellation
from outside and the consumer leaving the loop or raising are recorded by the running attempt, as for a plain
run; cancellation during a delay leaves no record beyond the attempts already made.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import KW_ONLY, dataclass
from types import TracebackType
from typing import Any, Final, Literal, NamedTuple, TypeAlias, TypeVar

import anyio

from ..classify import AbortSource, Action, Diagnosis, Verdict
from ..classify._diagnose import MAX_EVIDENCE
from ..classify._summaries import _VERDICT_LEAD
from ..classify._taxonomy import LONGEST_AUTOMATIC_WAIT_S
from ..machine import State
from ..wire import (
    ConsumerEvent,
    Continuation,
    Continued,
    ContinueStyle,
    Finish,
    ReasoningDelta,
    Restarted,
    Result,
    ResumeRefusal,
    Rewrite,
    TextDelta,
    ToolCall,
    ToolInputStart,
)
from ._config import MAX_ATTEMPT_LINKS, AttemptLink, Ids
from ._errors import StreamFailed
from ._record import RunRecord
from ._recovery import ContinuePlan, Offer, Recovery, RecoveryPlan, ResumePlan
from ._stream import HttpRun, Run, ToolScope, _result

__all__ = [
    "MAX_ATTEMPTS",
    "OpenAttempt",
    "Partial",
    "RetryPolicy",
    "RetryingEvent",
    "RetryingRun",
    "ToolResult",
    "decide",
    "retrying",
]

_T = TypeVar("_T")
_log = logging.getLogger("streamfsm")
MAX_ATTEMPTS: Final = MAX_ATTEMPT_LINKS
DEFAULT_MAX_HELD_EVENTS: Final = 10_000

RetryingEvent: TypeAlias = ConsumerEvent | Restarted | Continued
"""What a `RetryingRun` yields: the delivering attempts' events, and `Restarted` before a confirmed replay or
`Continued` before a confirmed continuation."""

OpenAttempt: TypeAlias = Callable[[Ids], "Run | Awaitable[Run]"]
"""Opens one attempt: given the attempt's `Ids`, returns a fresh run (not entered) built with ``ids=ids``."""

Confirm: TypeAlias = Callable[..., "Awaitable[bool | Recovery | None] | bool | Recovery | None"]
"""Asked before a ``user_confirmed_retry`` is retried: ``confirm(diagnosis)``, or ``confirm(diagnosis,
offer)`` when it takes two arguments (`Offer`: the recoveries on offer). True takes the first recovery
offered; a `Recovery` on offer takes that one; anything else stops."""

_COMMIT: Final = (TextDelta, ToolCall, Finish)
_REPEAT: Final = "a retry would repeat them"
_EXPOSED: Final = "events of this attempt already reached the consumer; " + _REPEAT


def _number(name: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'positive' if positive else 'zero or more'}, not {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts, and how long, a stream may take. Attempts and total time are bound together, and
    neither has a default: a policy says both (``RetryPolicy(attempts=4, total_s=90)``).

    * ``attempts``: attempts in all, the first included (1 to 32; 1 never retries).
    * ``total_s``: no attempt starts later than this many seconds after the first (time spent waiting for a
      confirmation excluded).
    * ``initial_delay_s`` (0.5), ``multiplier`` (2), ``max_delay_s`` (10): exponential backoff.
    * ``jitter`` (0.5): the fraction of each backoff that is random; 1 is full jitter, 0.5 equal jitter.
    * ``max_provider_delay_s`` (60): the longest provider-requested delay honoured; a longer one stops.
      The machine never calls a wait longer than ``LONGEST_AUTOMATIC_WAIT_S`` (60) an automatic retry: a
      larger value here lets a *confirmed* retry wait that long.
    * ``retry_possibly_delivered`` (True): whether a request that was sent but never answered (the provider
      may have done, and billed, the work) may be retried automatically. False asks for confirmation instead.
    """

    attempts: int
    total_s: float
    _: KW_ONLY
    initial_delay_s: float = 0.5
    max_delay_s: float = 10.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_provider_delay_s: float = LONGEST_AUTOMATIC_WAIT_S
    retry_possibly_delivered: bool = True

    def __post_init__(self) -> None:
        attempts = self.attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_ATTEMPTS:
            raise ValueError(f"attempts must be an integer from 1 to {MAX_ATTEMPTS}, not {attempts!r}")
        _number("total_s", self.total_s, positive=True)
        _number("initial_delay_s", self.initial_delay_s)
        _number("max_delay_s", self.max_delay_s)
        _number("max_provider_delay_s", self.max_provider_delay_s)
        if self.max_delay_s < self.initial_delay_s:
            raise ValueError(
                f"max_delay_s ({self.max_delay_s!r}) must not be less than initial_delay_s "
                f"({self.initial_delay_s!r})"
            )
        if _number("multiplier", self.multiplier) < 1:
            raise ValueError(f"multiplier must be at least 1, not {self.multiplier!r}")
        if _number("jitter", self.jitter) > 1:
            raise ValueError(f"jitter must be a fraction from 0 to 1, not {self.jitter!r}")
        if not isinstance(self.retry_possibly_delivered, bool):
            raise TypeError(f"retry_possibly_delivered must be a bool, not {self.retry_possibly_delivered!r}")

    def backoff(self, attempt: int, random_unit: float | None = None) -> float:
        """The delay after attempt ``attempt`` failed; ``random_unit`` in [0, 1) (drawn when None)."""
        exponent = min(max(attempt - 1, 0), 64)  # past 64 doublings every cap has long been reached
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier**exponent)
        unit = random.random() if random_unit is None else random_unit
        return base * (1.0 - self.jitter * unit)


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


# -- the rule ---------------------------------------------------------------------------------------------


class Decision(NamedTuple):
    """What to do after a failed attempt: ``"retry"`` (automatically), ``"ask"`` (confirm first) or
    ``"stop"``; the diagnosis reported for the attempt, the delay before the next one and why, and why it
    stops."""

    kind: Literal["retry", "ask", "stop"]
    diagnosis: Diagnosis
    delay_s: float = 0.0
    delay_reason: str = "none"
    stop_reason: str | None = None


def _reported(diagnosis: Diagnosis, reason: str, action: Action, marker: str) -> Diagnosis:
    """The machine said safe, the executor cannot stand behind it: the same facts, reported as needing
    confirmation with the executor's reason."""
    old = f"{_VERDICT_LEAD[diagnosis.verdict]}: {diagnosis.reason}."
    new = f"{_VERDICT_LEAD[Verdict.USER_CONFIRMED_RETRY]}: {reason}."
    detail = diagnosis.detail
    detail = detail[: -len(old)] + new if detail.endswith(old) else f"{detail} {new}"
    return dataclasses.replace(
        diagnosis,
        verdict=Verdict.USER_CONFIRMED_RETRY,
        action=action,
        reason=reason,
        detail=detail,
        evidence=(*diagnosis.evidence[: MAX_EVIDENCE - 1], marker),
    )


def _downgraded(policy: RetryPolicy, diagnosis: Diagnosis, exposed: str | None) -> Diagnosis:
    """Rule 2: the diagnosis reported for a failed attempt. A ``safe_auto_retry`` the executor cannot stand
    behind (the attempt was exposed, or possibly delivered under a policy that does not retry that) becomes
    ``user_confirmed_retry``; any other diagnosis is reported as is. Applies whether or not the chain goes on
    (a local abort stops it, but never reports an exposed attempt as safe)."""
    if diagnosis.verdict is not Verdict.SAFE_AUTO_RETRY:
        return diagnosis
    if exposed is not None:
        return _reported(diagnosis, exposed, Action.CONTINUE_WITH_PARTIAL, "executor=exposed")
    if diagnosis.possibly_delivered and not policy.retry_possibly_delivered:
        reason = (
            "the request was sent and never answered, so the provider may have done (and billed) it; "
            "this policy does not retry that automatically"
        )
        return _reported(diagnosis, reason, Action.ASK_USER, "executor=possibly_delivered")
    return diagnosis


def decide(
    policy: RetryPolicy,
    diagnosis: Diagnosis,
    *,
    attempt: int,
    elapsed_s: float,
    exposed: str | None = None,
    random_unit: float | None = None,
) -> Decision:
    """The executor's rule for one failed attempt (see the module docstring). ``exposed``: why events of the
    attempt already reached the consumer, or None if nothing did."""
    verdict = diagnosis.verdict
    if verdict is Verdict.NO_RETRY:
        return Decision("stop", diagnosis, stop_reason=f"the attempt must not be retried: {diagnosis.reason}")
    reported = _downgraded(policy, diagnosis, exposed)
    automatic = reported.verdict is Verdict.SAFE_AUTO_RETRY
    if attempt >= policy.attempts:
        return Decision(
            "stop", reported, stop_reason=f"the attempt budget is used ({attempt} of {policy.attempts})"
        )
    asked = reported.retry_after_s
    if asked is not None:
        if asked > policy.max_provider_delay_s:
            return Decision(
                "stop",
                reported,
                stop_reason=(
                    f"the provider asked to wait {asked:g} s, longer than max_provider_delay_s "
                    f"({policy.max_provider_delay_s:g} s)"
                ),
            )
        delay, why = asked, "retry_after"
    elif automatic:
        delay, why = policy.backoff(attempt, random_unit), "backoff"
    else:
        delay, why = 0.0, "none"
    if elapsed_s + delay > policy.total_s:
        return Decision(
            "stop",
            reported,
            stop_reason=(
                f"the time budget is used: {elapsed_s:.3g} s spent, the next attempt would start after "
                f"{elapsed_s + delay:.3g} s (total_s={policy.total_s:g})"
            ),
        )
    return Decision("retry" if automatic else "ask", reported, delay, why)


def _budget(policy: RetryPolicy, attempt: int, elapsed_s: float, delay_s: float) -> str | None:
    """Why no further attempt may start (rules 3 and 4's bounds), or None."""
    if attempt >= policy.attempts:
        return f"the attempt budget is used ({attempt} of {policy.attempts})"
    if elapsed_s + delay_s > policy.total_s:
        return f"the time budget is used: {elapsed_s:.3g} s spent (total_s={policy.total_s:g})"
    return None


def _refused(basis: Diagnosis, refusal: ResumeRefusal) -> Diagnosis:
    """The break a refused resume tried to recover from, saying why resuming was not possible."""
    detail = f"{basis.detail} Resuming the stream was refused: {refusal.reason}."
    evidence = (*basis.evidence[: MAX_EVIDENCE - 1], f"resume_refused={refusal.value}")
    return dataclasses.replace(basis, detail=detail, evidence=evidence)


def _takes_two(confirm: Callable[..., object]) -> bool:
    """Whether ``confirm`` takes the offer as a second argument (older callbacks take the diagnosis only)."""
    try:
        parameters = inspect.signature(confirm).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


# -- the executor -----------------------------------------------------------------------------------------


class RetryingRun:
    """One logical stream run as a chain of attempts under a `RetryPolicy`. Make one with `retrying`.

    Use it like a `Run`: ``async with``, then ``async for`` over its events (the delivering attempts' events,
    and a `Restarted` before each confirmed retry). ``tool_started`` / ``tool_finished`` / ``tool`` and
    ``abort`` go to the attempt that produced the call, or the running one. ``partial`` is what the
    consumer was given; ``attempts`` the chain so far; ``record`` / ``records`` the attempts' records;
    ``diagnosis`` the reported diagnosis of the last attempt that ended.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        open_attempt: OpenAttempt,
        *,
        confirm: Confirm | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
        max_held_events: int = DEFAULT_MAX_HELD_EVENTS,
        sleep: Callable[[float], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        resume: bool = True,
        continue_with: ContinueStyle | Rewrite | None = None,
    ) -> None:
        if (
            continue_with is not None
            and not isinstance(continue_with, ContinueStyle)
            and not callable(continue_with)
        ):
            raise TypeError(
                "continue_with must be a ContinueStyle or a rewrite: (body, Continuation) -> body"
            )
        if not isinstance(policy, RetryPolicy):
            raise TypeError(f"policy must be a RetryPolicy, not {type(policy).__name__}")
        if not callable(open_attempt):
            raise TypeError("open_attempt must be callable: Ids -> a fresh run")
        if confirm is not None and not callable(confirm):
            raise TypeError("confirm must be callable: Diagnosis -> bool")
        if isinstance(max_held_events, bool) or not isinstance(max_held_events, int) or max_held_events < 1:
            raise ValueError(f"max_held_events must be a positive integer, not {max_held_events!r}")
        base = Ids.coerce(ids)
        self.policy = policy
        self.trace_id = base.trace_id or uuid.uuid4().hex
        self._base_ids = base
        self._open_attempt = open_attempt
        self._confirm = confirm
        self._offers = confirm is not None and _takes_two(confirm)
        self._resume = bool(resume)
        self._continue_with = continue_with
        self._max_held = max_held_events
        self._given_sleep = sleep
        self._sleep: Callable[[float], Any] = anyio.sleep if sleep is None else sleep
        self._clock = clock
        # Sync use (``with`` / ``for``, over sync runs): the same executor, its coroutines driven to the end
        # on the caller's thread (nothing in them suspends then: see _drive); abort() wakes a delay.
        self._sync = False
        self._wake = threading.Event()
        # the chain
        self._links: list[AttemptLink] = []  # attempts that were retried
        self._end_link: AttemptLink | None = None  # the last attempt, once the chain ended
        self._records: list[RunRecord] = []
        self._diagnosis: Diagnosis | None = None
        self._current: Run | None = None  # the attempt in flight (entered)
        self._last: Run | None = None  # the latest attempt, in flight or ended
        self._started_at: float | None = None
        self._confirm_s = 0.0
        self._next_delay = 0.0
        # the current attempt's events
        self._held: list[ConsumerEvent] = []
        self._exposed: str | None = None
        self._completed = False
        self._failure: StreamFailed | None = None  # the latest attempt's failure, awaiting a decision
        self._last_failure: StreamFailed | None = None
        # what the consumer gets
        self._out: deque[RetryingEvent] = deque()
        self._final: StreamFailed | None = None
        self._ended = False
        self._entered = False
        self._wait_scope: anyio.CancelScope | None = None
        self._abort_request: tuple[AbortSource, str | None] | None = None
        # the partial output of the delivering attempt, and who owns each released tool call
        self._partial_attempt = 0
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[str, ToolCall] = {}
        self._reasoning: list[str] | None = None  # kept only once collect() asked for it
        self._results: dict[str, ToolResult] = {}
        self._owner: dict[str, Run] = {}
        # recovery: the plan the next attempt opens with, whether the answer is being continued, how much
        # leading whitespace a continuation may repeat, and the calls whose input reached the consumer in part
        self._plan: RecoveryPlan | None = None
        self._continuing = False
        self._trim = 0
        self._open_inputs: dict[str, None] = {}
        self._basis: Diagnosis | None = None  # the break a resume recovers from, to fall back on if refused
        self._prefill_refused = False  # the model refused a prefilled continuation: instructions from now on

    # -- what the caller reads ------------------------------------------------------------------------------

    @property
    def attempt(self) -> int:
        """The number of the latest attempt (0 before the first opens)."""
        return self._last.ids.attempt if self._last is not None else 0

    @property
    def current(self) -> Run | None:
        """The attempt in flight, if any."""
        return self._current

    @property
    def state(self) -> State | None:
        return self._last.state if self._last is not None else None

    @property
    def attempts(self) -> tuple[AttemptLink, ...]:
        """Every attempt that ended, oldest first; the last one ``"completed"`` or ``"stopped"`` once the
        chain ended."""
        tail = (self._end_link,) if self._end_link is not None else ()
        return (*self._links, *tail)

    @property
    def record(self) -> RunRecord | None:
        """The latest ended attempt's record."""
        return self._records[-1] if self._records else None

    @property
    def records(self) -> tuple[RunRecord, ...]:
        """Every ended attempt's record, oldest first (each also went to the attempt's sinks, once)."""
        return tuple(self._records)

    @property
    def diagnosis(self) -> Diagnosis | None:
        """The reported diagnosis of the latest attempt that ended (see the module docstring, rule 2)."""
        return self._diagnosis

    @property
    def finished(self) -> bool:
        return self._completed

    @property
    def partial(self) -> Partial:
        return Partial(
            attempt=self._partial_attempt,
            text="".join(self._text),
            refusal="".join(self._refusal),
            tool_calls=tuple(self._calls.values()),
            tool_results=tuple(self._results.values()),
        )

    def collect(self) -> RetryingRun:
        """Keep the reasoning too for `result()` (the text and the calls are kept anyway); call it before
        iterating. Returns the run."""
        if self._started_at is not None:
            raise RuntimeError("call collect() before the first attempt opens")
        if self._reasoning is None:
            self._reasoning = []
        return self

    def result(self) -> Result:
        """What the chain delivered, once it has finished: the text, refusal and tool calls the consumer was
        given (after a confirmed replay, the new attempt's only; after a continuation, all of it), the
        reasoning (kept since `collect()`), and the last attempt's usage and finish reason."""
        if not self._completed or self._last is None:
            raise RuntimeError(
                "result() is for a retrying run that has finished: iterate it to the end first"
            )
        if self._reasoning is None:
            raise RuntimeError("call run.collect() before iterating, to keep the reasoning for result()")
        return _result(self._text, self._reasoning, self._refusal, self._calls.values(), self._last)

    def __repr__(self) -> str:
        return f"<RetryingRun attempt={self.attempt} of {self.policy.attempts} trace_id={self.trace_id}>"

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def __aenter__(self) -> RetryingRun:
        if self._entered:
            raise RuntimeError("a RetryingRun can be entered only once")
        self._entered = True
        return self

    def __enter__(self) -> RetryingRun:
        """The sync form: ``with retrying(policy, open_attempt) as run: for event in run:``, each attempt a
        sync run (``wrap(lambda: client....create(..., stream=True), ids=ids)``); ``confirm`` and ``sleep``
        then sync callables. The decisions, budgets, records and holding back are the async form's own."""
        if self._entered:
            raise RuntimeError("a RetryingRun can be entered only once")
        self._entered = self._sync = True
        if self._given_sleep is None:
            self._sleep = self._sleep_sync
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _drive(self.__aexit__(exc_type, exc, tb))

    def __iter__(self) -> RetryingRun:
        return self

    def __next__(self) -> RetryingEvent:
        if not self._sync:
            raise RuntimeError("iterate a retrying run with `for` inside its `with` block")
        try:
            return _drive(self.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def _sleep_sync(self, delay: float) -> None:
        self._wake.wait(delay)  # abort() sets it

    # -- one attempt's run, async or sync -------------------------------------------------------------------

    async def _enter(self, run: Run) -> None:
        if self._sync:
            run.__enter__()  # type: ignore[attr-defined]
        else:
            await run.__aenter__()

    async def _next(self, run: Run) -> ConsumerEvent:
        if not self._sync:
            return await run.__anext__()
        try:
            return next(run)  # type: ignore[call-overload,no-any-return]
        except StopIteration:
            raise StopAsyncIteration from None

    async def _exit(self, run: Run, exc: BaseException | None) -> None:
        if self._sync:
            run.__exit__(*((None, None, None) if exc is None else (type(exc), exc, exc.__traceback__)))  # type: ignore[attr-defined]
        elif exc is None:
            await run.__aexit__(None, None, None)
        else:
            await run.__aexit__(type(exc), exc, exc.__traceback__)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._ended = True
        if self._current is not None:
            await self._close(exc)

    def __aiter__(self) -> RetryingRun:
        return self

    async def __anext__(self) -> RetryingEvent:
        if not self._entered:
            raise RuntimeError("iterate a retrying run inside its `async with` block")
        out = self._out
        while not out:
            if self._final is not None:
                self._ended = True
                raise self._take_final()
            if self._ended:
                raise StopAsyncIteration
            if self._completed:
                await self._close(None)
                self._ended = True
                raise StopAsyncIteration
            if self._failure is not None:
                await self._decide()
            elif self._current is None:
                await self._open_next()
            else:
                await self._pull()
        return out.popleft()

    # -- attempts -------------------------------------------------------------------------------------------

    async def _open_next(self) -> None:
        if self._next_delay > 0 and self._abort_request is None:
            delay, self._next_delay = self._next_delay, 0.0
            await self._wait(self._sleep(delay))
        if self._abort_request is not None and self._last_failure is not None:
            self._stop_aborted("while waiting to retry")
            return
        number = len(self._links) + 1
        plan, self._plan = self._plan, None
        ids = dataclasses.replace(
            self._base_ids,
            trace_id=self.trace_id,
            attempt=number,
            previous_run_id=self._links[-1].run_id if self._links else None,
            attempts=tuple(self._links),
            recovery=plan,
        )
        if self._started_at is None:
            self._started_at = self._clock()
        opened = self._open_attempt(ids)
        run = await opened if inspect.isawaitable(opened) else opened
        if not isinstance(run, Run):
            raise TypeError(f"open_attempt must return a run (open_stream, wrap), not {type(run).__name__}")
        if run.ids.trace_id != ids.trace_id or run.ids.attempt != number:
            raise TypeError("open_attempt must build the run with the Ids it is given (ids=ids)")
        if plan is not None and not isinstance(run, HttpRun):
            raise TypeError(
                "to resume or continue a stream, open_attempt must build its runs with open_stream"
            )
        self._current = self._last = run
        # Needed only to stop during the wait before this attempt. Its cause's traceback reaches, through
        # f_back (kept by finished coroutine frames since Python 3.12), the frames that hold this executor.
        self._last_failure = None
        # The next attempt opens: only now are the failed attempt's held events dropped (a stop during the
        # delay or the confirmation releases them), and its exposure forgotten. A resumed attempt goes on
        # with the same response: what was held stays held, what was exposed stays exposed.
        if not isinstance(plan, ResumePlan):
            self._held, self._exposed = [], None
        if isinstance(plan, ContinuePlan) and isinstance(run, HttpRun):
            self._trim = run.dropped_whitespace  # the model may write it again; the consumer has it
        if self._abort_request is not None:
            source, reason = self._abort_request
            run.abort(reason, source=source)
        try:
            await self._enter(run)
        except StreamFailed as failure:
            self._current = None  # the run has already cleaned up and delivered its record
            self._ended_attempt(run)
            self._failed(failure)
        except BaseException:
            self._current = None  # likewise: never close (and so deliver) a run twice
            self._ended_attempt(run)
            raise

    def _failed(self, failure: StreamFailed) -> None:
        # Kept without the frames it passed (they hold this executor: a cycle), and dropped when the chain
        # stops (_stop): raising it gives it frames again.
        self._failure = self._last_failure = failure.with_traceback(None)

    def _take_final(self) -> StreamFailed:
        # Raised from a call, never from a local: the raising frame would hold it, and it that frame.
        final, self._final = self._final, None
        assert final is not None
        return final

    async def _pull(self) -> None:
        run = self._current
        assert run is not None
        try:
            event = await self._next(run)
        except StopAsyncIteration:
            self._release()
            self._completed = True
            self._diagnosis = run.diagnosis
            self._end_link = self._link(run, "completed")
            return
        except StreamFailed as failure:
            await self._close(failure)
            self._failed(failure)
            return
        if isinstance(event, ToolCall):
            self._owner[event.call_id] = run  # the run that completed it hears of its execution
        elif self._trim and isinstance(event, TextDelta) and not event.refusal:
            # A continuation may write again the whitespace its request left out (an Anthropic prefill).
            text = event.text
            head = text[: self._trim]
            cut = len(head) - len(head.lstrip())
            if cut == len(text):  # whitespace only, all of it repeated
                self._trim -= cut
                return
            self._trim = 0
            if cut:
                event = TextDelta(text[cut:])
        if self._exposed is not None:
            self._deliver(event)
            return
        held = self._held
        held.append(event)
        if isinstance(event, _COMMIT):
            self._release()
        elif len(held) > self._max_held:
            self._release(f"more than {self._max_held} events were held back, then released; {_REPEAT}")

    def _release(self, why: str | None = None) -> None:
        self._exposed = why or _EXPOSED
        for event in self._held:
            self._deliver(event)
        self._held.clear()

    def _deliver(self, event: ConsumerEvent) -> None:
        run = self._last
        assert run is not None
        self._partial_attempt = run.ids.attempt
        if isinstance(event, TextDelta):
            (self._refusal if event.refusal else self._text).append(event.text)
        elif isinstance(event, ReasoningDelta):
            if self._reasoning is not None:
                self._reasoning.append(event.text)
        elif isinstance(event, ToolCall):
            self._calls[event.call_id] = event
            self._open_inputs.pop(event.call_id, None)
        elif isinstance(event, ToolInputStart):
            self._open_inputs[event.call_id] = None
        self._out.append(event)

    async def _close(self, exc: BaseException | None) -> None:
        run, self._current = self._current, None
        assert run is not None
        try:
            await self._exit(run, exc)
        finally:
            self._ended_attempt(run)

    def _ended_attempt(self, run: Run) -> None:
        if run.record is not None:
            self._records.append(run.record)
        hidden = run.sdk_retries
        if hidden and run.diagnosis is not None:
            # The SDK retried this request itself before the run saw it: those requests are attempts of the
            # chain too (decision sdk_retry, with this run's outcome: the SDK retried what it got), and count
            # against policy.attempts; _decide's attempt number is the number of requests made.
            _warn_both_layers_retry()
            room = max(0, MAX_ATTEMPTS - 1 - len(self._links))
            link = self._link(run, "sdk_retry")
            self._links.extend([link] * min(hidden, room))

    def _link(
        self,
        run: Run,
        decision: str,
        delay_s: float = 0.0,
        delay_reason: str = "none",
        *,
        then: Recovery | None = None,
        plan: RecoveryPlan | None = None,
    ) -> AttemptLink:
        diagnosis = run.diagnosis
        assert diagnosis is not None
        refused = run.resume_refusal if isinstance(run, HttpRun) else None
        declined = run.continue_refusal if isinstance(run, HttpRun) else None
        return AttemptLink(
            run_id=run.run_id,
            attempt=run.ids.attempt,
            summary_key=diagnosis.summary_key,
            verdict=diagnosis.verdict.value,
            decision=decision,
            delay_s=round(delay_s, 4),
            delay_reason=delay_reason,
            next=then.value if then is not None else None,
            resume_from=plan.starting_after if isinstance(plan, ResumePlan) else None,
            continue_after_chars=plan.after_chars if isinstance(plan, ContinuePlan) else None,
            resume_refused=refused.value if refused is not None else None,
            continue_refused=declined.value if declined is not None else None,
        )

    # -- deciding -------------------------------------------------------------------------------------------

    async def _decide(self) -> None:
        failure, self._failure = self._failure, None
        run = self._last
        assert failure is not None
        assert run is not None
        if self._abort_request is not None:
            # Stopped locally, but the attempt is reported by the same rule 2 as any other: an exposed or
            # possibly delivered attempt is never reported as safe to replay.
            reported = _downgraded(self.policy, failure.diagnosis, self._exposed)
            self._stop(failure, reported, self._aborted_reason("before a retry"))
            return
        assert self._started_at is not None
        elapsed = self._clock() - self._started_at - self._confirm_s
        attempt = len(self._links) + 1  # the requests made: this run's, and every earlier one (the SDK's too)
        refused = run.resume_refusal if isinstance(run, HttpRun) else None
        resuming = run.ids.recovery
        if isinstance(resuming, ResumePlan) and refused is None and not run._streaming:
            # The re-attach itself failed before any answer (a refused connection, a 503): a GET of a stored
            # stream generates nothing, so it is tried again like any safe request.
            decision = decide(self.policy, failure.diagnosis, attempt=attempt, elapsed_s=elapsed)
            if decision.kind != "stop":
                delay = decision.delay_s or self.policy.backoff(attempt)
                if elapsed + delay <= self.policy.total_s:
                    why = decision.delay_reason if decision.delay_s else "backoff"
                    self._resume_next(run, resuming, delay, why)
                    return
        declined = run.continue_refusal if isinstance(run, HttpRun) else None
        if declined is not None and isinstance(resuming, ContinuePlan):
            # The model takes no prefill (Anthropic's current ones): the same continuation, once, by
            # instruction. Nothing of the refused request reached the consumer; no later one is a prefill.
            self._prefill_refused = True
            self._diagnosis = failure.diagnosis
            stop = _budget(self.policy, attempt, elapsed, 0.0)
            if stop is not None:
                self._stop(failure, failure.diagnosis, stop)
                return
            self._plan = dataclasses.replace(resuming, style=ContinueStyle.INSTRUCTION)
            self._links.append(self._link(run, "auto_retry", then=Recovery.CONTINUE, plan=self._plan))
            self._next_delay = 0.0
            return
        plan = self._resume_plan(run, failure)
        if plan is not None:
            stop = _budget(self.policy, attempt, elapsed, 0.0)
            if stop is None:
                # What to fall back on if the provider refuses: this break, as the executor reports it.
                self._basis = _downgraded(self.policy, failure.diagnosis, self._exposed)
                self._resume_next(run, plan, 0.0, "none")
                return
            reported = _downgraded(self.policy, failure.diagnosis, self._exposed)
            self._diagnosis = reported
            self._stop(failure, reported, stop)
            return
        diagnosis = failure.diagnosis
        if refused is not None and self._basis is not None:
            # The provider would not resume: fall back to what the broken stream itself allowed, and say why.
            diagnosis = _refused(self._basis, refused)
        decision = decide(self.policy, diagnosis, attempt=attempt, elapsed_s=elapsed, exposed=self._exposed)
        self._diagnosis = decision.diagnosis
        if decision.kind == "stop":
            assert decision.stop_reason is not None
            self._stop(failure, decision.diagnosis, decision.stop_reason)
            return
        if decision.kind == "ask":
            if self._confirm is None:
                self._stop(failure, decision.diagnosis, "the retry needs confirmation; no confirm was given")
                return
            offer = self._offer(run, refused)
            asked_at = self._clock()
            answer: object = None
            try:
                answer = await self._wait(self._ask(decision.diagnosis, offer))
            finally:
                self._confirm_s += self._clock() - asked_at
            if self._abort_request is not None:
                reason = self._aborted_reason("while waiting for confirmation")
                self._stop(failure, decision.diagnosis, reason)
                return
            choice = offer.recoveries[0] if answer is True else answer
            if not isinstance(choice, Recovery) or choice not in offer.recoveries:
                self._stop(failure, decision.diagnosis, "the retry was not confirmed")
                return
            if choice is Recovery.CONTINUE:
                self._plan = self._continuation()
                self._links.append(
                    self._link(
                        run,
                        "confirmed_retry",
                        decision.delay_s,
                        decision.delay_reason,
                        then=choice,
                        plan=self._plan,
                    )
                )
                self._continue(attempt + 1, diagnosis.summary_key)
            else:
                self._links.append(
                    self._link(run, "confirmed_retry", decision.delay_s, decision.delay_reason, then=choice)
                )
                self._restart(attempt + 1, diagnosis.summary_key)
        else:
            # Nothing of this attempt reached the consumer: try again as the delivered answer stands, a fresh
            # request, or (after a continuation) the same continuation.
            self._plan = self._continuation() if self._continuing else None
            then = Recovery.CONTINUE if self._continuing else Recovery.RETRY
            self._links.append(
                self._link(
                    run, "auto_retry", decision.delay_s, decision.delay_reason, then=then, plan=self._plan
                )
            )
        # Another attempt follows: nothing held of this one reaches the consumer, but the events stay held
        # until that attempt opens (`_open_next`), so an abort during the delay still releases them.
        self._next_delay = decision.delay_s

    def _resume_plan(self, run: Run, failure: StreamFailed) -> ResumePlan | None:
        """Re-attach when the provider allows it, whatever reached the consumer: nothing is generated twice.
        Never after a failure the machine forbids retrying (a side effect, a local abort, ...)."""
        if not self._resume or not isinstance(run, HttpRun) or failure.diagnosis.verdict is Verdict.NO_RETRY:
            return None
        return run.resume_plan()

    def _resume_next(self, run: Run, plan: ResumePlan, delay: float, why: str) -> None:
        self._plan = plan
        self._links.append(self._link(run, "auto_retry", delay, why, then=Recovery.RESUME, plan=plan))
        self._next_delay = delay

    def _offer(self, run: Run, refused: ResumeRefusal | None) -> Offer:
        partial = self.partial
        carried = {r.call_id for r in partial.tool_results}
        continuable = (
            isinstance(run, HttpRun)
            and not partial.refusal
            and bool(partial.text or partial.tool_calls)
            and all(call.call_id in carried for call in partial.tool_calls)
        )
        recoveries = (Recovery.CONTINUE, Recovery.REPLAY) if continuable else (Recovery.REPLAY,)
        return Offer(
            recoveries,
            after_chars=len(partial.text),
            tool_calls=len(partial.tool_calls),
            discarded_calls=len(self._open_inputs),
            resume_refused=refused,
        )

    def _continuation(self) -> ContinuePlan:
        partial = self.partial
        results = {r.call_id: r.result for r in partial.tool_results}
        continuation = Continuation(partial.text, partial.tool_calls, results)
        style = self._continue_with if isinstance(self._continue_with, ContinueStyle) else None
        rewrite = None if self._continue_with is None or style is not None else self._continue_with
        if self._prefill_refused:
            style = ContinueStyle.INSTRUCTION
        return ContinuePlan(continuation, style, rewrite)  # type: ignore[arg-type]

    def _continue(self, attempt: int, summary_key: str) -> None:
        text = "".join(self._text)
        discarded = tuple(self._open_inputs)
        self._open_inputs.clear()
        self._out.append(Continued(attempt, summary_key, len(text), discarded))
        self._continuing = True

    async def _ask(self, diagnosis: Diagnosis, offer: Offer) -> object:
        assert self._confirm is not None
        answer = self._confirm(diagnosis, offer) if self._offers else self._confirm(diagnosis)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    def _restart(self, attempt: int, summary_key: str) -> None:
        self._out.append(Restarted(attempt, summary_key))
        self._continuing, self._trim = False, 0
        self._open_inputs.clear()
        self._partial_attempt = 0
        self._text.clear()
        self._refusal.clear()
        if self._reasoning is not None:
            self._reasoning.clear()
        self._calls.clear()
        self._results.clear()

    async def _wait(self, awaitable: Awaitable[Any]) -> Any:
        """Await a delay or a confirmation; ``abort()`` ends it early (the result is then None)."""
        if self._sync:  # a sync sleep or confirm has already run (a sync delay wakes on abort())
            return await awaitable if inspect.isawaitable(awaitable) else awaitable
        with anyio.CancelScope() as scope:
            self._wait_scope = scope
            try:
                return await awaitable
            finally:
                self._wait_scope = None
        return None

    def _aborted_reason(self, where: str) -> str:
        assert self._abort_request is not None
        source, _ = self._abort_request
        return f"the chain was stopped locally (source: {source.value}) {where}"

    def _stop_aborted(self, where: str) -> None:
        """``abort()`` during a delay: the last attempt's failure, its link now the end of the chain."""
        run, failure = self._last, self._last_failure
        assert run is not None
        assert failure is not None
        if self._links and self._links[-1].run_id == run.run_id:
            self._links.pop()
        self._stop(failure, self._diagnosis or failure.diagnosis, self._aborted_reason(where))

    def _stop(self, failure: StreamFailed, diagnosis: Diagnosis, reason: str) -> None:
        run = self._last
        assert run is not None
        final = failure
        if diagnosis is not failure.diagnosis:
            final = StreamFailed(diagnosis, failure.record)
            final.__cause__ = failure.__cause__
            final.__suppress_context__ = True
        self._diagnosis = diagnosis
        self._end_link = self._link(run, "stopped")
        for event in self._held:  # the chain ends here: the consumer gets all of it, then the failure
            self._deliver(event)
        self._held.clear()
        final.partial = self.partial
        final.attempts = self.attempts
        final.stop_reason = reason
        self._final, self._last_failure = final, None

    # -- the agent's facts ----------------------------------------------------------------------------------

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop now: the running attempt fails as ``local_abort``; a delay or a confirmation ends at once."""
        source = AbortSource(source)
        if self._ended or self._abort_request is not None:
            return
        self._abort_request = (source, reason)
        if self._current is not None:
            self._current.abort(reason, source=source)
        if self._wait_scope is not None:
            self._wait_scope.cancel()
        self._wake.set()

    def _run_for(self, call_id: str) -> Run:
        run = self._owner.get(call_id) or self._current or self._last
        if run is None:
            raise RuntimeError("no attempt has started yet")
        return run

    def tool_started(self, call_id: str, effect: str = "effectful") -> None:
        """The agent started running a complete tool call (see `Run.tool_started`)."""
        if call_id in self._owner and call_id not in self._calls:
            raise ValueError(f"tool call {call_id!r} belongs to an attempt that was restarted")
        self._run_for(call_id).tool_started(call_id, effect)

    def tool_finished(self, call_id: str, ok: bool = True, result: object = None) -> None:
        """The tool finished; ``result`` is kept in ``partial`` (in memory only, never in a record)."""
        self._run_for(call_id).tool_finished(call_id, ok=ok)
        call = self._calls.get(call_id)
        if call is not None:
            self._results[call_id] = ToolResult(call_id, call.name, ok, result)

    def tool(self, call_id: str, effect: str = "effectful") -> ToolScope:
        """``async with run.tool(call_id):`` (``with`` on a sync chain) brackets one tool execution (use
        ``tool_finished`` to keep a result)."""
        return ToolScope(self, call_id, effect)


_warned_both_layers = False


def _warn_both_layers_retry() -> None:
    """Once per process: the SDK client retries too, so each of the executor's attempts may be several
    requests (they are counted against the policy, but the SDK's waits are its own)."""
    global _warned_both_layers
    if _warned_both_layers:
        return
    _warned_both_layers = True
    _log.warning(
        "both the SDK client and retrying() retry: the SDK's own retries are counted against the policy;"
        " set max_retries=0 on the SDK client when using retrying()"
    )


def _drive(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run one of the executor's coroutines to its end on the sync form: its runs, delays and confirmations
    are sync there, so it never suspends. One that would (an async ``confirm``) is an error."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise TypeError("a sync retrying run awaited something: give it a sync confirm, sleep and open_attempt")


def retrying(
    policy: RetryPolicy,
    open_attempt: OpenAttempt,
    *,
    confirm: Confirm | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
    max_held_events: int = DEFAULT_MAX_HELD_EVENTS,
    sleep: Callable[[float], Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
    resume: bool = True,
    continue_with: ContinueStyle | Rewrite | None = None,
) -> RetryingRun:
    """Run a stream under ``policy``: ``async with retrying(policy, open_attempt) as run: async for ...``,
    or, over sync runs (``wrap()`` of a sync SDK call), ``with retrying(...) as run: for event in run:``.

    ``open_attempt(ids)`` returns a fresh run for one attempt (``open_stream(..., ids=ids)``, or an SDK
    wrapper around a new call), not yet entered; it may be async. ``ids`` seeds every attempt's `Ids`
    (session, message, context, and the trace id if given); the executor sets ``trace_id``, ``attempt``,
    ``previous_run_id`` and ``attempts``. ``confirm(diagnosis)`` (sync or async) is asked before a
    ``user_confirmed_retry``: with two parameters it is called ``confirm(diagnosis, offer)`` and sees the
    recoveries on offer (`Offer`); True takes the first (a continuation when the delivered answer can be
    carried, else a replay), a `Recovery` on offer takes that one. ``resume`` (True): re-attach to a broken
    background Responses stream by its cursor, automatically. ``continue_with``: how a continuation carries
    the delivered answer, a `ContinueStyle` or a rewrite of one's own ``(body, Continuation) -> body``
    (default: an instruction after the delivered answer, which every current model accepts;
    ``ContinueStyle.PREFILL`` for servers that take an assistant prefill, falling back once to an
    instruction when the model refuses it; see ``_adapters/_continue.py``). ``sleep`` and ``clock`` are
    injectable for tests (``sleep``: anyio's, or on the sync form a wait that ``abort()`` ends; a sync
    form's is a sync callable). Resume and continue need ``open_stream`` runs, so the sync form retries and
    replays. Nothing is sent until iteration starts.
    """
    return RetryingRun(
        policy,
        open_attempt,
        confirm=confirm,
        ids=ids,
        max_held_events=max_held_events,
        sleep=sleep,
        clock=clock,
        resume=resume,
        continue_with=continue_with,
    )
