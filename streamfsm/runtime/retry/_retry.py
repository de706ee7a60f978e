"""The retry executor: run one logical stream as a chain of attempts, retrying only what the machine proved.

    policy = RetryPolicy(attempts=4, total_s=90)

    def open_attempt(ids: Ids) -> Run:           # a fresh, not yet entered run, carrying the ids it is given
        return open_stream("openai-chat", base_url=url, json=body, headers=auth, ids=ids)

    async with retrying(policy, open_attempt) as run:
        async for event in run:                  # one seamless stream, whatever happened underneath
            ...

**What happens when an attempt fails**, in this order (`after_failure` is the rule, without I/O):

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

**Routes.** Given a list of `Route` instead of one ``open_attempt``, each attempt goes to a route, and after
the rules above a failure is sent where another attempt can help (`hop`, the table in ``_routes``): the same
route after the wait while the failure is one it may get over and its ``tries`` last (a short stated wait,
a 5xx, an overload, a cut), the next route at once otherwise (a silent route, a late first token, a model
the route cannot serve), a route with a larger ``context_window`` after a context overflow, a route of
another ``account`` after a quota, billing or auth refusal, and none after a content-policy rejection or
anything local. A refusal of what the route *is* stops rule 1 only on that route: nothing was generated,
so the next route that fits is tried automatically. A resume stays where the stream is; a confirmed
replay on another route is a `Restarted`; a continuation goes only to a route that takes its style, at
that route's own turn (a later route at once, not after the failed route's wait). Each
route's circuit breaker (`Breakers`, shared by every chain of the process) keeps attempts off a route that
keeps failing and lets one probe through after a cool-down; a chain none of whose routes admits it raises
`NoRoute` before sending anything. The policy's budgets bound the whole chain, every route included.

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
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeAlias, cast

import anyio

from ...classify import AbortSource, Diagnosis
from ...machine import State
from ...wire import ConsumerEvent, ContinueStyle, Result, ResumeRefusal, Rewrite, ToolCall
from ..core._config import AttemptLink, Ids, RouteTag
from ..core._errors import NoRoute, StreamFailed
from ..drivers._handle import ConsumerRun
from ..drivers._stream import HttpRun, Run, ToolScope, _result
from ..records._record import RunRecord
from ._attempt_io import AttemptIo, drive
from ._breaker import BREAKERS, Breakers, BreakerState
from ._chain import Chain, LinkDecision, link
from ._delivery import DEFAULT_MAX_HELD_EVENTS, Delivery, Partial, RetryingEvent, ToolResult
from ._race import LOST, first_to_answer, read
from ._recovery import Continuations, ContinuePlan, Offer, Recovery, RecoveryPlan, ResumePlan, offer
from ._retry_policy import (
    MAX_ATTEMPTS,
    DecisionKind,
    Failed,
    RetryPolicy,
    after_failure,
    chosen,
    decide,
    stopped_locally,
)
from ._routes import Route, Routing

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

_log = logging.getLogger("streamfsm")

OpenAttempt: TypeAlias = Callable[[Ids], "Run | Awaitable[Run]"]
"""Opens one attempt: given the attempt's `Ids`, returns a fresh run (not entered) built with ``ids=ids``."""

Confirm: TypeAlias = Callable[..., "Awaitable[bool | Recovery | None] | bool | Recovery | None"]
"""Asked before a ``user_confirmed_retry`` is retried: ``confirm(diagnosis)``, or ``confirm(diagnosis,
offer)`` when it takes two arguments (`Offer`: the recoveries on offer). True takes the first recovery
offered; a `Recovery` on offer takes that one; anything else stops."""


def _takes_two(confirm: Callable[..., object]) -> bool:
    """Whether ``confirm`` takes the offer as a second argument (older callbacks take the diagnosis only)."""
    try:
        parameters = inspect.signature(confirm).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


class _Asking:
    """``confirm``, and the chain's clock: ``total_s`` counts from the first attempt's opening, the time spent
    waiting for ``confirm`` left out (a person may take minutes to answer)."""

    def __init__(self, confirm: Confirm | None, clock: Callable[[], float]) -> None:
        self.confirm = confirm
        self._offers = confirm is not None and _takes_two(confirm)
        self._clock = clock
        self._started_at: float | None = None
        self._asked_s = 0.0

    @property
    def started(self) -> bool:
        return self._started_at is not None

    def start(self) -> None:
        if self._started_at is None:
            self._started_at = self._clock()

    def elapsed_s(self) -> float:
        assert self._started_at is not None
        return self._clock() - self._started_at - self._asked_s

    async def ask(self, io: AttemptIo, diagnosis: Diagnosis, offered: Offer) -> object:
        """``confirm``'s answer; None when ``abort()`` ended the wait."""
        asked_at = self._clock()
        try:
            return await io.wait(self._answer(diagnosis, offered))
        finally:
            self._asked_s += self._clock() - asked_at

    async def _answer(self, diagnosis: Diagnosis, offered: Offer) -> object:
        assert self.confirm is not None
        answer = self.confirm(diagnosis, offered) if self._offers else self.confirm(diagnosis)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


async def _opened(open_attempt: OpenAttempt, ids: Ids, plan: RecoveryPlan | None) -> Run:
    """The attempt ``open_attempt`` opened, checked: a run, built with ``ids``, by open_stream for a plan."""
    opened = open_attempt(ids)
    run = await opened if inspect.isawaitable(opened) else opened
    if not isinstance(run, ConsumerRun):  # a Run, or for the sync form a sync run (wrap, open_sync_stream)
        raise TypeError(f"open_attempt must return a run (open_stream, wrap), not {type(run).__name__}")
    if run.ids.trace_id != ids.trace_id or run.ids.attempt != ids.attempt:
        raise TypeError("open_attempt must build the run with the Ids it is given (ids=ids)")
    if plan is not None and not isinstance(run, HttpRun):
        raise TypeError("to resume or continue a stream, open_attempt must build its runs with open_stream")
    return run  # a sync run has the members the sync form drives


def _check(
    policy: RetryPolicy,
    open_attempt: OpenAttempt | Sequence[Route],
    confirm: Confirm | None,
    max_held_events: int,
    continue_with: ContinueStyle | Rewrite | None,
) -> None:
    if (
        continue_with is not None
        and not isinstance(continue_with, ContinueStyle)
        and not callable(continue_with)
    ):
        raise TypeError("continue_with must be a ContinueStyle or a rewrite: (body, Continuation) -> body")
    if not isinstance(policy, RetryPolicy):
        raise TypeError(f"policy must be a RetryPolicy, not {type(policy).__name__}")
    if not callable(open_attempt) and not (
        isinstance(open_attempt, Sequence) and all(isinstance(route, Route) for route in open_attempt)
    ):
        raise TypeError("open_attempt must be callable (Ids -> a fresh run) or a sequence of Route")
    if confirm is not None and not callable(confirm):
        raise TypeError("confirm must be callable: Diagnosis -> bool")
    if isinstance(max_held_events, bool) or not isinstance(max_held_events, int) or max_held_events < 1:
        raise ValueError(f"max_held_events must be a positive integer, not {max_held_events!r}")


class RetryingRun:
    """One logical stream run as a chain of attempts under a `RetryPolicy`. Make one with `retrying`.

    Use it like a `Run`: ``async with``, then ``async for`` over its events (the delivering attempts' events,
    and a `Restarted` before each confirmed retry). ``tool_started`` / ``tool_finished`` / ``tool`` and
    ``abort`` go to the attempt that produced the call, or the running one. ``partial`` is what the
    consumer was given; ``attempts`` the chain so far; ``record`` / ``records`` the attempts' records;
    ``diagnosis`` the reported diagnosis of the last attempt that ended.

    It drives the attempts (opens, reads, waits, asks); what it gives the consumer is a `Delivery`, what it
    links a `Chain`, what it does after a failure `after_failure`'s `Step`, and over routes where the next
    attempt goes a `Routing`.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        open_attempt: OpenAttempt | Sequence[Route],
        *,
        confirm: Confirm | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
        max_held_events: int = DEFAULT_MAX_HELD_EVENTS,
        sleep: Callable[[float], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        resume: bool = True,
        continue_with: ContinueStyle | Rewrite | None = None,
        breakers: Breakers | None = None,
    ) -> None:
        _check(policy, open_attempt, confirm, max_held_events, continue_with)
        self.policy = policy
        self._chain = Chain(Ids.coerce(ids))
        self.trace_id = self._chain.trace_id
        # Over routes, each attempt goes where the routing says; else every attempt is open_attempt's.
        self._routing: Routing | None = None
        if callable(open_attempt):
            self._open_attempt: OpenAttempt = open_attempt
        else:
            self._routing = Routing(open_attempt, breakers or BREAKERS, clock)
            self._open_attempt = self._routing.routes[0].open_attempt
        self._asking = _Asking(confirm, clock)
        self._resume = bool(resume)
        self._sending = Continuations(continue_with)
        # Sync use (``with`` / ``for``, over sync runs): the same executor, its coroutines driven to the end
        # on the caller's thread (nothing in them suspends then: see drive); abort() ends a wait.
        self._io = AttemptIo(sleep)
        self._diagnosis: Diagnosis | None = None
        self._current: Run | None = None  # the attempt in flight (entered)
        self._last: Run | None = None  # the latest attempt, in flight or ended
        self._next_delay = 0.0
        self._race_by: float | None = None  # the running attempt races another route's from then
        self._completed = False
        self._failure: StreamFailed | None = None  # the latest attempt's failure, awaiting a decision
        self._last_failure: StreamFailed | None = None
        # what the consumer gets, and who owns each released tool call
        self._delivery = Delivery(max_held_events)
        self._owner: dict[str, Run] = {}
        self._final: StreamFailed | None = None
        self._ended = False
        self._entered = False
        self._abort_request: tuple[AbortSource, str | None] | None = None
        # recovery: the plan the next attempt opens with, whether the answer is being continued
        self._plan: RecoveryPlan | None = None
        self._continuing = False
        self._basis: Diagnosis | None = None  # the break a resume recovers from, to fall back on if refused

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
        return self._chain.attempts

    @property
    def record(self) -> RunRecord | None:
        """The latest ended attempt's record."""
        records = self._chain.records
        return records[-1] if records else None

    @property
    def records(self) -> tuple[RunRecord, ...]:
        """Every ended attempt's record, oldest first (each also went to the attempt's sinks, once)."""
        return tuple(self._chain.records)

    @property
    def diagnosis(self) -> Diagnosis | None:
        """The reported diagnosis of the latest attempt that ended (see the module docstring, rule 2)."""
        return self._diagnosis

    @property
    def finished(self) -> bool:
        return self._completed

    @property
    def partial(self) -> Partial:
        return self._delivery.partial

    def collect(self) -> RetryingRun:
        """Keep the reasoning too for `result()` (the text and the calls are kept anyway); call it before
        iterating. Returns the run."""
        if self._asking.started:
            raise RuntimeError("call collect() before the first attempt opens")
        if self._delivery.reasoning is None:
            self._delivery.reasoning = []
        return self

    def result(self) -> Result:
        """What the chain delivered, once it has finished: the text, refusal and tool calls the consumer was
        given (after a confirmed replay, the new attempt's only; after a continuation, all of it), the
        reasoning (kept since `collect()`), and the last attempt's usage and finish reason."""
        if not self._completed or self._last is None:
            raise RuntimeError(
                "result() is for a retrying run that has finished: iterate it to the end first"
            )
        d = self._delivery
        if d.reasoning is None:
            raise RuntimeError("call run.collect() before iterating, to keep the reasoning for result()")
        return _result(d.text, d.reasoning, d.refusal, d.calls.values(), self._last)

    def __repr__(self) -> str:
        return f"<RetryingRun attempt={self.attempt} of {self.policy.attempts} trace_id={self.trace_id}>"

    # -- what the agent tells the chain: a tool call goes to the attempt that produced it, an abort to the
    # running attempt and to any wait ---------------------------------------------------------------------

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop now: the running attempt fails as ``local_abort``; a delay or a confirmation ends at once."""
        source = AbortSource(source)
        if self._ended or self._abort_request is not None:
            return
        self._abort_request = (source, reason)
        if self._current is not None:
            self._current.abort(reason, source=source)
        self._io.interrupt()

    def tool_started(self, call_id: str, effect: str = "effectful") -> None:
        """The agent started running a complete tool call (see `Run.tool_started`)."""
        if call_id in self._owner and call_id not in self._delivery.calls:
            raise ValueError(f"tool call {call_id!r} belongs to an attempt that was restarted")
        self._run_for(call_id).tool_started(call_id, effect)

    def tool_finished(self, call_id: str, ok: bool = True, result: object = None) -> None:
        """The tool finished; ``result`` is kept in ``partial`` (in memory only, never in a record)."""
        self._run_for(call_id).tool_finished(call_id, ok=ok)
        call = self._delivery.calls.get(call_id)
        if call is not None:
            self._delivery.results[call_id] = ToolResult(call_id, call.name, ok, result)

    def tool(self, call_id: str, effect: str = "effectful") -> ToolScope:
        """``async with run.tool(call_id):`` (``with`` on a sync chain) brackets one tool execution (use
        ``tool_finished`` to keep a result)."""
        return ToolScope(self, call_id, effect)

    def _run_for(self, call_id: str) -> Run:
        run = self._owner.get(call_id) or self._current or self._last
        if run is None:
            raise RuntimeError("no attempt has started yet")
        return run

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def __aenter__(self) -> RetryingRun:
        return self._enter_once()

    def __enter__(self) -> RetryingRun:
        """The sync form: ``with retrying(policy, open_attempt) as run: for event in run:``, each attempt a
        sync run (``wrap(lambda: client....create(..., stream=True), ids=ids)``); ``confirm`` and ``sleep``
        then sync callables. The decisions, budgets, records and holding back are the async form's own."""
        self._enter_once()
        self._io.go_sync()
        return self

    def _enter_once(self) -> RetryingRun:
        if self._entered:
            raise RuntimeError("a RetryingRun can be entered only once")
        self._entered = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        drive(self.__aexit__(exc_type, exc, tb))

    def __iter__(self) -> RetryingRun:
        return self

    def __next__(self) -> RetryingEvent:
        if not self._io.sync:
            raise RuntimeError("iterate a retrying run with `for` inside its `with` block")
        try:
            return drive(self.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._ended = True
        if self._current is not None:
            await self._close(self._current, exc)

    def __aiter__(self) -> RetryingRun:
        return self

    async def __anext__(self) -> RetryingEvent:
        if not self._entered:
            raise RuntimeError("iterate a retrying run inside its `async with` block")
        out = self._delivery.out
        while not out:
            if self._final is not None:
                self._ended = True
                raise self._take_final()
            if self._ended:
                raise StopAsyncIteration
            if self._completed:
                assert self._current is not None
                await self._close(self._current, None)
                self._ended = True
                raise StopAsyncIteration
            if self._failure is not None:
                await self._decide()
            elif self._current is None:
                await self._open_next()
            else:
                await self._pull()
        return out.popleft()

    def _take_final(self) -> StreamFailed:
        # Raised from a call, never from a local: the raising frame would hold it, and it that frame.
        final, self._final = self._final, None
        assert final is not None
        return final

    # -- attempts: each is opened, entered and closed here, and its end counted, once -----------------------

    async def _open_next(self) -> None:
        if self._next_delay > 0 and self._abort_request is None:
            delay, self._next_delay = self._next_delay, 0.0
            await self._io.wait(self._io.sleep(delay))
        if self._abort_request is not None and self._last_failure is not None:
            self._stop_waiting(self._aborted_reason("while waiting to retry"))
            return
        plan, self._plan = self._plan, None
        await self._open(plan)

    async def _open(self, plan: RecoveryPlan | None, rival_of: Run | None = None) -> Run | None:
        """Open and enter the next attempt (over routes, on the route the routing admits, after its spacing):
        the chain's running attempt, or a ``rival_of`` the running one raced beside it on another route.
        None when no route admits it, or when it failed as it opened (its end counted, the failure decided
        on or, for a rival, the rival linked as lost)."""
        open_attempt, route, routing = self._open_attempt, None, self._routing
        if routing is not None:
            route = routing.take(retry=self._last is not None, rival=rival_of is not None)
            if route is None:
                if rival_of is None:
                    self._no_route(routing)
                return None
            spacing = routing.spacing_s()  # the route's turn (a raced attempt reads on meanwhile)
            if spacing > 0:
                await self._io.wait(self._io.sleep(spacing))
            open_attempt = route.open_attempt
        ids = self._chain.next_ids(plan)
        if route is not None:
            assert routing is not None
            assert routing.admitted is not None
            previous = rival_of.run_id if rival_of is not None else ids.previous_run_id
            ids = dataclasses.replace(
                ids, previous_run_id=previous, route=RouteTag(route.name, routing.admitted.value)
            )
        self._asking.start()
        run = await _opened(open_attempt, ids, plan)
        if route is not None and route.first_token_s is not None:
            if route.race and rival_of is None and not self._io.sync:
                assert routing is not None
                self._race_by = routing.clock() + route.first_token_s
            else:
                run.bound_first_token(route.first_token_s)
        if rival_of is None:
            self._current = self._last = run
            # Needed only to stop during the wait before this attempt. Its cause's traceback reaches, through
            # f_back (kept by finished coroutine frames since Python 3.12), the frames holding this executor.
            self._last_failure = None
            # A continuation's text may begin with whitespace its request left out: the consumer has it.
            http = _http(run)
            trim = http.dropped_whitespace if isinstance(plan, ContinuePlan) and http is not None else None
            self._delivery.opened(ids.attempt, resumed=isinstance(plan, ResumePlan), trim=trim)
        if self._abort_request is not None:
            source, reason = self._abort_request
            run.abort(reason, source=source)
        try:
            await self._io.enter(run)
        except BaseException as exc:
            # It has already cleaned up and delivered its record: never close it (and so deliver it) twice.
            if self._current is run:
                self._current = None
            self._ended_attempt(run)
            if not isinstance(exc, StreamFailed):
                raise
            if rival_of is None:
                self._failed(exc)
            else:
                self._chain.links.append(_link(run, LinkDecision.RACED, self._routing))
            return None
        return run

    def _no_route(self, routing: Routing) -> None:
        why = "every route that could help is out of tries, or its circuit breaker is open"
        if self._last_failure is None:
            raise NoRoute(why, routing.breakers.snapshot(routing.clock()))
        self._stop_waiting(f"no route can take the next attempt: {why}")

    def _failed(self, failure: StreamFailed) -> None:
        # Kept without the frames it passed (they hold this executor: a cycle), and dropped when the chain
        # stops (_stop): raising it gives it frames again.
        self._failure = self._last_failure = failure.with_traceback(None)

    async def _pull(self) -> None:
        run = self._current
        assert run is not None
        if self._race_by is not None:
            run, outcome = await self._race(run)
        else:
            outcome = await read(self._io.next(run))
        if isinstance(outcome, StopAsyncIteration):
            self._delivery.release()
            self._completed = True
            self._diagnosis = run.diagnosis
            self._chain.end = _link(run, LinkDecision.COMPLETED, self._routing)
        elif isinstance(outcome, StreamFailed):
            await self._close(run, outcome)
            self._failed(outcome)
        else:
            event = cast("ConsumerEvent", outcome)
            if isinstance(event, ToolCall):
                self._owner[event.call_id] = run  # the run that completed it hears of its execution
            self._delivery.take(event)

    async def _close(self, run: Run, exc: BaseException | None) -> None:
        if self._current is run:
            self._current = None
        try:
            await self._io.exit(run, exc)
        finally:
            self._ended_attempt(run)

    def _ended_attempt(self, run: Run) -> None:
        """``run`` ended (closed, or failed as it opened): its route's breaker and the chain hear of it."""
        if self._routing is not None:
            route = run.ids.route
            probe = route is not None and route.breaker == BreakerState.HALF_OPEN.value
            self._routing.ended(_route_name(run), run.diagnosis, probe=probe)
        if run.record is not None:
            self._chain.records.append(run.record)
        hidden = run.sdk_retries
        if hidden and run.diagnosis is not None:
            # The SDK retried this request itself before the run saw it: those requests count against
            # policy.attempts; _decide's attempt number is the number of requests made.
            _warn_both_layers_retry()
            self._chain.sdk_retried(_link(run, LinkDecision.SDK_RETRY, self._routing), hidden)

    # -- racing ---------------------------------------------------------------------------------------------

    async def _race(self, first: Run) -> tuple[Run, object]:
        """The running attempt's route races (`Route.race`): wait for its first event until the deadline,
        then open the next route's attempt beside it. The first to yield an event goes on; a failure wins
        nothing (the other goes on); the loser is stopped, closed and linked ``raced``."""
        routing = self._routing
        assert routing is not None
        assert self._race_by is not None
        deadline, self._race_by = self._race_by, None
        runs, outcomes = [first], dict[str, object]()
        try:
            ended = await first_to_answer(runs, outcomes, deadline - routing.clock(), self._open_rival)
        except BaseException as exc:
            # Cancelled from outside, or the consumer's error: the rival is closed here (the running
            # attempt by the chain's own exit), so it too leaves its record.
            with anyio.CancelScope(shield=True):
                for rival in runs[1:]:
                    await self._close(rival, exc)
            raise
        for run in runs:
            if run is not ended:
                outcome = outcomes[run.run_id]
                failure = outcome if isinstance(outcome, StreamFailed) else None
                if failure is None:
                    run.abort(LOST, source=AbortSource.APP)
                await self._close(run, failure)
                self._chain.links.append(_link(run, LinkDecision.RACED, self._routing))
        if len(runs) == 2:
            ended.relink(tuple(self._chain.links))
        self._current = self._last = ended
        routing.at = routing.index(_route_name(ended))
        if ended is not first:
            self._delivery.opened(ended.ids.attempt, resumed=False)
        return ended, outcomes[ended.run_id]

    async def _open_rival(self, first: Run) -> Run | None:
        """The attempt raced beside ``first``, on the next route that admits one, within the budgets; None
        when there is none (``first`` goes on alone)."""
        if self._chain.requests >= self.policy.attempts or self._asking.elapsed_s() > self.policy.total_s:
            return None
        return await self._open(None, rival_of=first)

    # -- deciding -------------------------------------------------------------------------------------------

    def _facts(self, run: Run, failure: StreamFailed) -> Failed:
        """What the rule needs to know of the failed attempt ``run``."""
        http = _http(run)
        return Failed(
            failure.diagnosis,
            self._chain.requests,  # this run's request and every earlier one (the SDK's too)
            self._asking.elapsed_s(),
            exposed=self._delivery.exposed,
            aborted=self._abort_request[0] if self._abort_request is not None else None,
            recovery=run.ids.recovery,
            answered=http is None or http._streaming,
            resume_refused=http.resume_refusal if http is not None else None,
            continue_refused=http.continue_refusal if http is not None else None,
            resumable=http.resume_plan() if http is not None and self._resume else None,
            basis=self._basis,
            continuing=self._continuing,
        )

    async def _decide(self) -> None:
        failure, self._failure = self._failure, None
        run = self._last
        assert failure is not None
        assert run is not None
        facts = self._facts(run, failure)
        step = after_failure(self.policy, facts)
        if self._routing is not None:
            step = self._routing.after(self.policy, step, facts, self._sending.style())
        if step.diagnosis is not None:
            self._diagnosis = step.diagnosis
        if step.basis is not None:
            self._basis = step.basis
        self._sending.prefill_refused |= step.prefill_refused
        if step.kind is DecisionKind.STOP:
            assert step.diagnosis is not None
            assert step.stop_reason is not None
            self._stop(failure, step.diagnosis, step.stop_reason)
            return
        then, decision = step.then, LinkDecision.AUTO_RETRY
        if step.kind is DecisionKind.ASK:
            assert step.diagnosis is not None
            then = await self._ask(run, failure, step.diagnosis, facts.resume_refused)
            if then is None:
                return
            decision = LinkDecision.CONFIRMED_RETRY
            if self._routing is not None and then is Recovery.CONTINUE:
                step = self._routing.continue_there()  # the continuation's own hop: its wait, or none
        plan = step.plan
        if plan is None and then is Recovery.CONTINUE:
            plan = self._sending.plan(self._delivery.partial)
        self._plan = plan
        self._chain.links.append(
            _link(run, decision, self._routing, step.delay_s, step.delay_reason, then=then, plan=plan)
        )
        if decision is LinkDecision.CONFIRMED_RETRY:
            assert step.diagnosis is not None
            self._continuing = then is Recovery.CONTINUE
            told = self._delivery.continued if self._continuing else self._delivery.restarted
            told(facts.attempt + 1, step.diagnosis.summary_key)
        # Another attempt follows: nothing held of this one reaches the consumer, but the events stay held
        # until that attempt opens (`_open`), so an abort during the delay still releases them.
        self._next_delay = step.delay_s

    async def _ask(
        self, run: Run, failure: StreamFailed, diagnosis: Diagnosis, refused: ResumeRefusal | None
    ) -> Recovery | None:
        """Rule 5, asking: the recovery ``confirm`` chose, or None when the chain stopped instead."""
        if self._asking.confirm is None:
            self._stop(failure, diagnosis, "the retry needs confirmation; no confirm was given")
            return None
        # A continuation needs a route the chain may go to that takes it (not only the next in order).
        routed = (
            self._routing is None or self._sending.style() is None or self._routing.continues_at is not None
        )
        offered = offer(
            self._delivery.partial,
            discarded_calls=len(self._delivery.open_inputs),
            rewritable=isinstance(run, HttpRun) and self._sending.sendable(run.provider) and routed,
            resume_refused=refused,
        )
        answer = await self._asking.ask(self._io, diagnosis, offered)
        if self._abort_request is not None:
            self._stop(failure, diagnosis, self._aborted_reason("while waiting for confirmation"))
            return None
        choice = chosen(answer, offered.recoveries)
        if choice is None:
            self._stop(failure, diagnosis, "the retry was not confirmed")
        return choice

    def _aborted_reason(self, where: str) -> str:
        assert self._abort_request is not None
        return stopped_locally(self._abort_request[0], where)

    def _stop_waiting(self, reason: str) -> None:
        """The chain stops before the attempt it was waiting to open (``abort()``, or no route takes it): the
        last attempt's failure, its link now the end of the chain."""
        run, failure = self._last, self._last_failure
        assert run is not None
        assert failure is not None
        self._chain.unlink(run.run_id)
        self._stop(failure, self._diagnosis or failure.diagnosis, reason)

    def _stop(self, failure: StreamFailed, diagnosis: Diagnosis, reason: str) -> None:
        run = self._last
        assert run is not None
        final = failure if diagnosis is failure.diagnosis else _reported(failure, diagnosis)
        self._diagnosis = diagnosis
        self._chain.end = _link(run, LinkDecision.STOPPED, self._routing)
        self._delivery.flush()  # the chain ends here: the consumer gets all of it, then the failure
        final.partial = self.partial
        final.attempts = self.attempts
        final.stop_reason = reason
        self._final, self._last_failure = final, None


def _link(
    run: Run,
    decision: LinkDecision,
    routing: Routing | None,
    delay_s: float = 0.0,
    delay_reason: str = "none",
    *,
    then: Recovery | None = None,
    plan: RecoveryPlan | None = None,
) -> AttemptLink:
    """The chain's link for the ended ``run``: the provider's refusals it met and, over routes, the state of
    its own route's breaker (a success closes it, once the attempt is closed)."""
    http = _http(run)
    breaker = None
    if routing is not None and decision is not LinkDecision.SDK_RETRY:
        completed = decision is LinkDecision.COMPLETED
        breaker = "closed" if completed else routing.breaker(_route_name(run)).value
    return link(
        run,
        decision,
        delay_s,
        delay_reason,
        then=then,
        plan=plan,
        resume_refused=http.resume_refusal if http is not None else None,
        continue_refused=http.continue_refusal if http is not None else None,
        breaker=breaker,
    )


def _http(run: Run) -> HttpRun | None:
    """``run`` as an ``open_stream`` run, the only kind that resumes, continues and meets refusals of them."""
    return run if isinstance(run, HttpRun) else None


def _route_name(run: Run) -> str:
    route = run.ids.route
    assert route is not None, "an attempt of a chain over routes carries its route"
    return route.name


def _reported(failure: StreamFailed, diagnosis: Diagnosis) -> StreamFailed:
    """``failure`` as the executor reports it (rule 2): a copy with ``diagnosis``, from the same raw cause."""
    final = StreamFailed(diagnosis, failure.record)
    final.__cause__ = failure.__cause__
    final.__suppress_context__ = True
    return final


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


def retrying(
    policy: RetryPolicy,
    open_attempt: OpenAttempt | Sequence[Route],
    *,
    confirm: Confirm | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
    max_held_events: int = DEFAULT_MAX_HELD_EVENTS,
    sleep: Callable[[float], Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
    resume: bool = True,
    continue_with: ContinueStyle | Rewrite | None = None,
    breakers: Breakers | None = None,
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
    instruction when the model refuses it; see ``wire/_adapters/_continue.py``). ``sleep`` and ``clock`` are
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
        breakers=breakers,
    )
