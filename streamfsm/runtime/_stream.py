"""The run wrapper: one HTTP stream driven through the machine, watched by typed watchdogs, leaving a record.

    async with open_stream("openai-chat", base_url=..., json=body, headers=auth) as run:
        async for event in run:
            ...

Failure paths, and what the caller sees:

* a transport fault, an HTTP error, an in-band provider error, a protocol violation, a watchdog, or
  ``run.abort()``  →  ``StreamFailed`` (``.diagnosis``, ``.record``), chained from the raw cause;
* cancellation from outside  →  recorded as ``local_abort`` (source ``cancelled``), then the cancellation
  propagates unchanged;
* the consumer leaves the loop early  →  recorded as ``local_abort`` (source ``consumer_stopped``);
* the consumer's own code raises inside the loop  →  recorded as ``consumer_error``, re-raised as it was.

The record is final before any of these reach the caller, and cleanup runs under a shielded scope.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import ssl
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Final, NoReturn, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx

from ..classify import (
    AbortSource,
    Diagnosis,
    Facts,
    TransportFacts,
    diagnose,
    diagnose_finished,
    finish_cause,
)
from ..classify._diagnose import UNPARSEABLE_ARGUMENTS
from ..classify._finish import shown_reason
from ..classify._provider import provider_error_from_http
from ..classify._taxonomy import ENDPOINT_AT_ROOT, FinishCause, ProviderError, TransportKind
from ..classify._transport import transport_facts
from ..machine import PROVIDER_PROGRESS, Activity, IllegalTransition, State, StreamMachine, Trigger
from ..wire import (
    CONSUMER_EVENT_TYPES,
    MAX_DOCUMENT_BYTES,
    NOT_EVENT_STREAM,
    Adapter,
    ConsumerEvent,
    ContinueRefusal,
    ContinueStyle,
    Finish,
    FinishReason,
    Framing,
    Metadata,
    OpenAIResponsesAdapter,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    Result,
    ResumeRefusal,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputStart,
    Usage,
    adapter_for,
    document_events,
    format_named,
    prefill_refused,
    refusal_of,
    resumable_request,
    resume_url,
    whole_answers_of,
)
from ._config import Ids, StreamConfig
from ._cycles import release_traceback_cycles
from ._decoding import decoded_chunks, sync_decoded_chunks
from ._errors import StreamFailed
from ._record import Recorder, RunRecord
from ._recovery import RESUMABLE_EDGES, ContinuePlan, ResumePlan
from ._sinks import deliver
from ._urls import check_base_url
from ._watchdog import (
    ARRIVAL_LOOK_S,
    ARRIVAL_LOOKS,
    MAX_ARRIVAL_LOOKS,
    Entry,
    LoopWatchdog,
    loop_time,
    loop_watchdog,
    plain_scope_class,
    readable,
    socket_of,
)

_log = logging.getLogger("streamfsm")
_EFFECTS: Final = {"effectful": True, "read_only": False}
_CLEANUP_TIMEOUT_S: Final = 5.0
_DRAIN_S: Final = 0.1  # what the openai SDK allows itself after [DONE]
_DRAIN_READS: Final = 64
# OpenAI's endpoints as a base_url without its /v1 makes them (the SDKs and open_stream append these)
_ENDPOINTS_AT_ROOT: Final = frozenset({"/chat/completions", "/responses"})
_CONSUMER_TYPES: Final = frozenset(CONSUMER_EVENT_TYPES)
# Connect faults after which no request can have left: the run never reached the provider.
_NOT_CONNECTED: Final = frozenset(
    {
        TransportKind.REFUSED,
        TransportKind.DNS,
        TransportKind.TLS,
        TransportKind.UNREACHABLE,
        TransportKind.UNKNOWN,
    }
)


async def _no_chunks() -> Any:
    raise StopAsyncIteration


_R = TypeVar("_R", bound="Run")


def _unset(value: Any) -> list[Any]:
    raise RuntimeError("a Run subclass must set its source (_read_wire, or _feed and _frames_of)")


def _deadline(start: float, timeout: float | None) -> float:
    return math.inf if timeout is None else start + timeout


@functools.cache
def _default_tls() -> ssl.SSLContext:
    """httpx's default TLS context, built once: building one loads the CA bundle, ~30 ms, nearly all of what a
    fresh ``httpx.AsyncClient()`` costs. Like httpx, it honours SSL_CERT_FILE / SSL_CERT_DIR (read once)."""
    return httpx.create_ssl_context()


class Run:
    """One LLM stream. Use as ``async with``; iterate it for normalised events.

    The agent reports its own facts here: ``tool_started`` / ``tool_finished`` (or ``async with
    run.tool(call_id)``) for tool execution, and ``abort()`` to stop the stream with provenance.

    This class holds everything that does not depend on where events come from: the machine, the watchdogs,
    the record, the tool ledger, and how a run ends. A subclass's ``_connect`` supplies the source: the
    next chunk, and either an SSE body read by ``_read_wire`` (``HttpRun``, and ``SdkRun`` on the SDK's
    response) or its own ``_frames_of`` / ``_feed`` / ``_eof_events`` (``SdkRun`` translating SDK items);
    ``_close_source`` ends it.
    """

    def __init__(
        self,
        *,
        provider: str,
        model: str | None,
        body: Mapping[str, Any],
        url: str,
        delta_keys: Mapping[str, int],
        config: StreamConfig | None,
        ids: Ids | Mapping[str, Any] | None,
    ) -> None:
        self.config = config or StreamConfig()
        self.ids = Ids.coerce(ids)
        self.provider = provider
        self.run_id = uuid.uuid4().hex
        self.trace_id = self.ids.trace_id or uuid.uuid4().hex
        self._machine = StreamMachine(history_size=self.config.history_size)
        self._rec = Recorder(
            provider=provider,
            model=model,
            body=body,
            url=url,
            ids=self.ids,
            config=self.config,
            run_id=self.run_id,
            trace_id=self.trace_id,
        )
        self._rec.delta_keys = delta_keys  # the source's live, bounded counter
        # The source, set by the subclass's _connect: the next chunk (raises StopAsyncIteration at the clean
        # end), chunk → frames, and frame → events. _read_wire sets the last two for an SSE body.
        self._next_chunk: Callable[[], Awaitable[Any]] = _no_chunks
        self._frames_of: Callable[[Any], list[Any]] = _unset
        self._feed: Callable[[Any], list[StreamEvent]] = _unset
        self._wire: _Wire | None = None
        self._response: Any = None  # the HTTP response whose body is read, once there is one
        self._pending: deque[ConsumerEvent] = deque()
        self._read_scope: anyio.CancelScope | None = None
        self._scope_class: Callable[[], anyio.CancelScope] = anyio.CancelScope
        self._abort_request: tuple[AbortSource, str | None] | None = None
        self._entered = False
        self._streaming = False
        self._done = False
        self._record: RunRecord | None = None
        self._diagnosis: Diagnosis | None = None
        self._deferred: StreamFailed | None = None
        self._finished_at: float | None = None
        self._completed_calls: dict[str, str] = {}
        self._total_tokens: int | None = None  # the provider's own total, where it gives one
        self._calls: list[ToolCall] = []  # the complete calls, kept for result() (rare events: no cost)
        # What the per-event path dispatches on. collect() swaps in a table that also keeps the text, so a
        # run whose result() nobody asked for pays nothing for it.
        self._on_event: Mapping[type, Callable[[Run, Any], None]] = _ON_EVENT
        self._kept: dict[str, list[str]] | None = None
        self._call_names: dict[str, str] = {}  # one entry per tool call the stream announced
        self._running: dict[str, bool] = {}
        self._current_call: str | None = None  # the call the stream (or the agent) last worked on
        self._effects: dict[str, bool] = {}  # call id -> effectful, for every call the agent started
        self._idle_paused_since: float | None = None
        # Idle time is time spent waiting on the provider since its last progress: a slow consumer, or an
        # effectful tool with pause_idle_during_tools, does not count. _idle_waited holds the finished reads'
        # share; _idle_read_started is set while a read waits and the clock runs.
        self._idle_waited = 0.0
        self._idle_read_started: float | None = None
        self._reading = False
        self._read_ended_at = self._rec.start
        self._read_edge = Trigger.TOTAL_TIMEOUT  # the edge of the watchdog that ended the waiting read
        self._fired_at: float | None = None  # when the watchdog found the waiting read past its deadline
        self._due_at: float | None = None  # when a deadline was first found passed, until progress
        self._arrival_looks = 0  # looks at what arrived since then (see _watchdog)
        self._socket: Any = None  # the HTTP/1.1 connection's socket, where the source knows it
        self._watch_entry: Entry | None = None  # when the loop's watchdog looks at this run next (see _watch)
        self._loop_watchdog: LoopWatchdog | None = None  # the loop's, once this run registered with it
        self._total_deadline = _deadline(self._rec.start, self.config.total_timeout)

    # -- the source: overridden by subclasses ---------------------------------------------------------------

    async def _connect(self) -> None:
        """Start the request; on success the machine has taken ``headers_received``."""
        raise NotImplementedError

    def _read_wire(self, adapter: Adapter) -> None:
        """The source is a streamed body: each chunk goes through the format's framing (SSE, NDJSON, ...),
        each frame through ``adapter``."""
        fmt = format_named(adapter.name)
        framing = fmt.framing(self.config.max_line_bytes)
        wire = self._wire = _Wire(adapter, framing, self._rec, sniff=fmt.sniffs_documents)
        self._frames_of = wire.frames
        self._feed = adapter.feed
        self._rec.delta_keys = adapter.delta_keys  # the adapter's live, bounded counter

    def _eof_events(self) -> list[StreamEvent]:
        """Events the source still owes at a clean end (e.g. a deferred finish)."""
        return self._wire.end() if self._wire is not None else []

    def _eof_detail(self) -> str | None:
        return self._wire.eof_detail() if self._wire is not None else None

    def _read_failed(self, exc: Exception) -> NoReturn:
        """A read raised: by default a transport fault after the headers."""
        facts = transport_facts(exc, headers_received=True)
        self._rec.transport = facts
        self._fail(Trigger.DISCONNECTED, self._facts(transport=facts), exc)

    async def _close_source(self) -> None:
        return None

    def _connect_fault(self, facts: TransportFacts, exc: BaseException) -> NoReturn:
        """A transport fault before the headers, on a source that cannot see the connect happen."""
        if facts.kind is TransportKind.CONNECT_TIMEOUT:
            edge = Trigger.CONNECT_TIMEOUT
        elif facts.kind in _NOT_CONNECTED:
            edge = Trigger.CONNECT_FAILED
        else:  # a connection existed and broke before the headers: the request may have been delivered
            edge = Trigger.DISCONNECTED
            self._rec.request_sent = True
        self._rec.transport = facts
        self._fail(edge, self._facts(transport=facts), exc)

    @property
    def delta_keys(self) -> Mapping[str, int]:
        return self._rec.delta_keys

    @property
    def sdk_retries(self) -> int:
        """Requests the SDK made and retried before this run's own (``wrap()``; 0 for ``open_stream``)."""
        return self._rec.sdk_retries

    # -- what the caller reads --------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._machine.state

    @property
    def history(self) -> tuple[Trigger, ...]:
        return tuple(self._machine.history)

    @property
    def record(self) -> RunRecord | None:
        """The run record, once the run has ended (finished or failed)."""
        return self._record

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self._diagnosis

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.provider} {self._machine.state} run_id={self.run_id}>"

    # -- the result -------------------------------------------------------------------------------------

    def collect(self: _R) -> _R:
        """Keep the text and reasoning for `result()`; call it before the first event (``for event in
        run.collect():``). Returns the run. Without it the per-event path keeps nothing."""
        if self._rec.counts:
            raise RuntimeError("call collect() before the run's first event")
        if self._kept is None:
            self._kept = {"text": [], "reasoning": [], "refusal": []}
            self._on_event = _ON_EVENT_COLLECTING
        return self

    def result(self) -> Result:
        """What the run produced, once it has ended: text, reasoning and refusal (kept since `collect()`),
        the complete tool calls, the final usage and the finish reason (None if the run failed before one).
        The caller's own data: never recorded, logged or shown in a repr."""
        if not self._done:
            raise RuntimeError("result() is for a run that has ended: iterate it to the end first")
        kept = self._kept
        if kept is None:
            raise RuntimeError("call run.collect() before iterating, to keep the text for result()")
        return _result(kept["text"], kept["reasoning"], kept["refusal"], self._calls, self)

    # -- lifecycle --------------------------------------------------------------------------------------

    async def __aenter__(self) -> Run:
        if self._entered:
            raise RuntimeError("a Run can be entered only once; open a new stream for a new attempt")
        self._entered = True
        self._scope_class = plain_scope_class()
        try:
            if self._abort_request is not None:  # aborted before it started: send nothing
                self._fail_cancelled(Trigger.LOCAL_ABORT)
            await self._connect()
        except BaseException as exc:
            if not self._done:
                self._end_locally(exc)
            await self._cleanup()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._done:
                self._end_locally(exc)
            self._seal()
        finally:
            await self._cleanup(drain=exc is None and self.finished)

    def _end_locally(self, exc: BaseException | None) -> None:
        """The run stopped before its terminal event for a reason on our side of the wire."""
        if exc is None:
            self._finalize_failure(Trigger.LOCAL_ABORT, self._abort_facts(AbortSource.CONSUMER_STOPPED, None))
        elif isinstance(exc, anyio.get_cancelled_exc_class()):
            self._finalize_failure(Trigger.LOCAL_ABORT, self._abort_facts(AbortSource.CANCELLED, None))
        elif isinstance(exc, Exception):
            self._finalize_failure(Trigger.CONSUMER_ERROR, self._facts())
        else:  # KeyboardInterrupt, SystemExit, GeneratorExit: the application is going away
            self._finalize_failure(
                Trigger.LOCAL_ABORT, self._abort_facts(AbortSource.APP, type(exc).__name__)
            )

    async def _cleanup(self, drain: bool = False) -> None:
        if self._watch_entry is not None and self._loop_watchdog is not None:
            self._loop_watchdog.forget(self._watch_entry)
            self._watch_entry = None
        try:
            if drain:
                await self._drain()
        finally:  # a cancellation during the drain still closes the source and delivers the record
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLEANUP_TIMEOUT_S):
                try:
                    await self._close_source()
                except Exception as exc:
                    # Never let a failing close replace what is in flight (a cancellation, a StreamFailed).
                    _log.warning("closing the stream's source failed (%s)", type(exc).__name__)
                finally:
                    self._emit()

    async def _drain(self) -> None:
        """Read what is left of a finished HTTP/1.1 body (briefly, a little), so that its connection goes back
        to the pool instead of being closed: the terminal event usually comes just before the body's end."""
        response = self._response
        if getattr(response, "http_version", None) != "HTTP/1.1" or getattr(response, "is_closed", True):
            return
        with anyio.move_on_after(_DRAIN_S):
            try:
                for _ in range(_DRAIN_READS):
                    await self._next_chunk()
            except Exception:  # StopAsyncIteration at the end; a fault only costs the connection
                pass

    def _emit(self) -> None:
        if self._record is not None:
            deliver(self.config.sinks, self._record)  # never raises; logs the run, then each sink in order

    # -- connecting -------------------------------------------------------------------------------------

    def _connect_deadline(self, since: float | None = None) -> tuple[float, Trigger]:
        """The connect watchdog's deadline and edge, counted from ``since`` (``time.monotonic()``; default the
        run's start). Counted again from when the request begins to leave (the first connect or header
        write), the time the client's own pool or loop held it back is not blamed on the upstream."""
        connect = _deadline(self._rec.start if since is None else since, self.config.connect_timeout)
        total = self._total_deadline
        return (connect, Trigger.CONNECT_TIMEOUT) if connect <= total else (total, Trigger.TOTAL_TIMEOUT)

    def _headers_received(self) -> None:
        # A lifecycle step like the connect: on the timeline, but not a stream event to count.
        self._rec.lifecycle(Trigger.HEADERS_RECEIVED.value, self._machine.send(Trigger.HEADERS_RECEIVED))
        self._streaming = True

    # -- streaming --------------------------------------------------------------------------------------

    def __aiter__(self) -> Run:
        return self

    async def __anext__(self) -> ConsumerEvent:
        pending = self._pending
        while not pending:
            if self._done:
                if self._deferred is not None:
                    raise self._take_deferred()
                self._seal()
                raise StopAsyncIteration
            try:
                self._ready_to_read("async with")
                # Wait for the next chunk (None: the clean end of the source) in a cancel scope that the
                # loop's watchdog cancels when the earliest deadline passes, and abort() at once; a fault
                # there fails the run. Inline, not a coroutine: this is paid once per network read.
                chunk: Any = None
                with self._watched_read_scope() as scope:
                    try:
                        chunk = await self._next_chunk()
                    except StopAsyncIteration:
                        pass
                    except Exception as exc:
                        self._read_failed(exc)
                    finally:
                        self._read_scope = None
                        self._read_ended()
                if scope.cancelled_caught:
                    self._fail_cancelled(self._read_edge)
                self._apply_chunk(chunk)
            except StreamFailed as failure:
                if not pending:
                    raise
                # Events that arrived before the fault in the same chunk are delivered first.
                self._deferred = failure
        return pending.popleft()

    def _take_deferred(self) -> StreamFailed:
        # Raised from a call, never from a local: the raising frame would hold it, and it that frame.
        failure, self._deferred = self._deferred, None
        assert failure is not None
        return failure

    def _ready_to_read(self, block: str) -> None:
        """Shared by the async and the sync iteration: only inside the run's block, and not after abort()."""
        if not self._streaming:
            raise RuntimeError(f"iterate a run inside its `{block}` block")
        if self._abort_request is not None:
            self._fail_cancelled(Trigger.LOCAL_ABORT)

    def _apply_chunk(self, chunk: Any) -> None:
        """Apply every event in ``chunk``; ``None`` is the clean end of the source. Sync, so that a sync
        source (``SyncSdkRun``) shares it."""
        try:
            if chunk is not None:
                feed, apply = self._feed, self._apply
                for frame in self._frames_of(chunk):
                    if self._done:
                        return  # data after the terminal event is not part of this response
                    for event in feed(frame):  # _apply_all, inlined: this is the per-event path
                        if self._done:
                            return
                        apply(event)
            else:
                self._apply_all(self._eof_events())
                if not self._done:
                    self._fail(Trigger.EOF_WITHOUT_TERMINAL, self._facts(detail=self._eof_detail()))
        except ProtocolViolation as violation:
            if violation.detail == UNPARSEABLE_ARGUMENTS:  # the provider ended a call that is not JSON
                before, violation.before = violation.before, ()  # the exception keeps no model output
                self._apply_all(before)  # the call's start, when the chunk that ended it carried it
                self._fail(Trigger.TOOL_INPUT_UNFINISHED, self._facts(detail=UNPARSEABLE_ARGUMENTS))
            self._fail(Trigger.PROTOCOL_VIOLATION, self._facts(detail=violation.detail), violation)

    def _apply_all(self, events: Iterable[StreamEvent]) -> None:
        for event in events:
            if self._done:
                return
            self._apply(event)

    def _apply(self, event: StreamEvent) -> None:
        if isinstance(event, ProviderErrorEvent):
            self._fail(Trigger.PROVIDER_ERROR_EVENT, self._facts(provider=event.error))
        kind = type(event)
        trigger = event.trigger
        now = self._read_ended_at
        try:
            state = self._machine.send(trigger)
        except IllegalTransition as illegal:
            if kind is Finish and illegal.state.activity is Activity.TOOL_INPUT_OPEN:
                self._unfinished_call(event)  # type: ignore[arg-type]  # narrowed by kind
            self._fail(
                Trigger.PROTOCOL_VIOLATION,
                self._facts(detail=f"illegal {trigger.value} in {illegal.state}"),
                illegal,
            )
        self._rec.event(trigger._value_, now, state)  # .value is a Python-level property; per event
        if trigger in PROVIDER_PROGRESS:  # Trigger.is_provider_progress, without the property call
            first = self._rec.first_progress is None
            self._rec.progress(trigger, now)
            self._idle_waited = 0.0
            self._due_at = None  # the deadline moved: a later one is looked at afresh
            if first:  # first token → idle
                self._watch_idle(now)
        if kind in _CONSUMER_TYPES:
            self._pending.append(event)  # type: ignore[arg-type]  # narrowed by _CONSUMER_TYPES
        on_event = self._on_event.get(kind)
        if on_event is not None:
            on_event(self, event)

    def _on_tool_input_start(self, event: ToolInputStart) -> None:
        self._current_call = event.call_id
        self._call_names[event.call_id] = event.name

    def _on_text(self, event: TextDelta) -> None:
        assert self._kept is not None
        self._kept["refusal" if event.refusal else "text"].append(event.text)

    def _on_reasoning(self, event: ReasoningDelta) -> None:
        assert self._kept is not None
        self._kept["reasoning"].append(event.text)

    def _on_tool_call(self, event: ToolCall) -> None:
        self._calls.append(event)
        self._completed_calls[event.call_id] = event.name
        self._call_names[event.call_id] = event.name
        self._current_call = event.call_id

    def _on_usage(self, event: Usage) -> None:
        if event.total_tokens is not None:
            self._total_tokens = event.total_tokens
        self._rec.usage(event.input_tokens, event.output_tokens, event.reasoning_tokens, event.cached_tokens)

    def _on_metadata(self, event: Metadata) -> None:
        self._rec.response_id(event.response_id)

    def _unfinished_call(self, event: Finish) -> NoReturn:
        """The provider's terminal event arrived with a tool call still open (the adapters leave it open at a
        finish that is not a whole answer): the call was never complete and its tool never ran."""
        raw = self._rec.finish_raw = event.raw_reason
        self._rec.finish_unified = event.reason.value  # as _on_finish: the terminal event did arrive
        finish = finish_cause(whole_answers_of(self.provider), raw)
        facts = self._facts(finish=finish, detail=f"finish_reason={shown_reason(raw)}")
        self._fail(Trigger.TOOL_INPUT_UNFINISHED, facts)

    def _on_finish(self, event: Finish) -> None:
        self._rec.finish_raw = event.raw_reason
        self._rec.finish_unified = event.reason.value
        self._finalize_finished()

    # -- watchdogs --------------------------------------------------------------------------------------

    # A read's deadline never comes earlier than the one before it: waited idle time grows by no more than
    # the time that passed, progress resets it, and the first-token and total deadlines are fixed. Only the
    # first progress (first token → idle) and an effectful tool ending (the idle clock resumes) can bring
    # it earlier, and both have the watchdog look sooner (_rearm, _watch_idle). So an async read works its
    # deadline out only when the watchdog's next look is missing or already due; otherwise the look does.

    def _read_began(self, now: float) -> None:
        """A read starts waiting on the provider at ``now``: the idle clock runs. Paired with _read_ended."""
        self._reading = True
        if self._idle_paused_since is None:
            self._idle_read_started = now

    def _watched_read_scope(self) -> anyio.CancelScope:
        """Begin an async read: the scope to wait in, which the loop's watchdog (or ``abort()``) cancels."""
        now = time.monotonic()
        self._reading = True  # _read_began, inlined: this is paid once per network read
        if self._idle_paused_since is None:
            self._idle_read_started = now
        scope = self._read_scope = self._scope_class()  # before _look: the watchdog may look at once
        entry = self._watch_entry
        if entry is None or entry.callback is None or entry.when <= now:
            self._look(now)
        return scope

    def _look(self, now: float) -> None:
        """Work out the waiting read's deadline: cancel the read if it is due (with its edge), else have the
        watchdog look again then."""
        started = self._idle_read_started
        deadline, edge = self._read_deadline(now if started is None else started)
        if deadline > now:
            self._watch(deadline)
        elif self._read_scope is None:
            self._read_edge, self._fired_at = edge, now
        elif self._arrival_looked(now, edge):
            self._read_edge, self._fired_at = edge, self._due_at
            self._read_scope.cancel()

    def _arrival_looked(self, now: float, edge: Trigger) -> bool:
        """The waiting read is past its deadline: True once what arrived has been looked at enough for its
        absence to mean silence; until then, have the watchdog look again shortly (see ``_watchdog``)."""
        if self._due_at is None:
            self._due_at = now
            if (
                edge is not Trigger.TOTAL_TIMEOUT
            ):  # progress does not move the total deadline: its looks add up
                self._arrival_looks = 0
        looks = self._arrival_looks
        if looks < ARRIVAL_LOOKS or (looks < MAX_ARRIVAL_LOOKS and readable(self._connection_socket())):
            self._arrival_looks = looks + 1
            self._watch(now + ARRIVAL_LOOK_S)
            return False
        return True

    def _connection_socket(self) -> Any:
        return self._socket if self._socket is not None else socket_of(self._response)

    def _watch(self, deadline: float) -> None:
        """Have the loop's watchdog look at this run by ``deadline``. Lazily: a later deadline keeps the
        earlier look, which looks again if the read is still waiting and not yet due."""
        entry = self._watch_entry
        if entry is not None and entry.callback is not None and entry.when <= deadline:
            return
        if deadline == math.inf:
            return
        watchdog = self._loop_watchdog
        if watchdog is None:  # looked up in a task: a timer's callback has no task to find the loop by
            watchdog = self._loop_watchdog = loop_watchdog()
        if entry is not None:
            watchdog.forget(entry)
        self._watch_entry = watchdog.watch(deadline, self._watch_due)

    def _watch_due(self, now: float) -> None:
        self._watch_entry = None
        if self._reading and not self._done:
            self._look(now)  # else the next read looks for itself

    def _watch_idle(self, now: float) -> None:
        """The idle clock (re)started at ``now`` with no read waiting (the first progress, or an effectful
        tool ended): no later read's idle deadline comes before now + idle_timeout - the time already
        waited, so have the watchdog look by then; it may be earlier than the look already registered."""
        if self.config.idle_timeout is not None:
            self._watch(now + self.config.idle_timeout - self._idle_waited)

    def _read_ended(self) -> None:
        now = self._read_ended_at = time.monotonic()  # the time of every event the chunk carries
        self._reading = False
        started = self._idle_read_started
        if started is not None:
            self._idle_waited += now - started
            self._idle_read_started = None

    def _read_deadline(self, now: float) -> tuple[float, Trigger]:
        """The earliest armed watchdog deadline (monotonic clock) for a read whose idle clock (re)started at
        ``now``, and its edge."""
        rec = self._rec
        config = self.config
        best, edge = self._total_deadline, Trigger.TOTAL_TIMEOUT
        if rec.first_progress is None:
            first = _deadline(rec.headers_at or rec.start, config.first_token_timeout)
            if first < best:
                best, edge = first, Trigger.FIRST_TOKEN_TIMEOUT
        elif self._idle_paused_since is None and config.idle_timeout is not None:
            idle = now + config.idle_timeout - self._idle_waited
            if idle < best:
                best, edge = idle, Trigger.IDLE_TIMEOUT
        return best, edge

    def _rearm(self) -> None:
        """The idle clock paused or resumed while a read waits: move that read's deadline."""
        if self._read_interrupted():
            return  # the watchdog (or abort) already ended this read: keep the edge it fired
        deadline, self._read_edge = self._read_deadline(time.monotonic())
        self._watch(deadline)

    def _read_interrupted(self) -> bool:
        return self._read_scope is not None and self._read_scope.cancel_called

    def _fail_cancelled(self, edge: Trigger) -> NoReturn:
        """Our own scope was cancelled: by ``abort()`` or by the watchdog whose deadline passed."""
        if self._abort_request is not None:
            source, reason = self._abort_request
            self._fail(Trigger.LOCAL_ABORT, self._abort_facts(source, reason))
        self._rec.watchdog_fired = edge.value
        # The stream ended when the watchdog fired: what the HTTP client does to unwind the cancelled read
        # (on a busy trio loop, a scheduler pass per await of its cleanup) is teardown, not the stream's.
        self._fail(edge, self._facts(), at=self._fired_at)

    # -- the agent's facts ------------------------------------------------------------------------------

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop the stream now; the run fails as ``local_abort`` with this source and reason."""
        source = AbortSource(source)
        if self._done or self._abort_request is not None:
            return
        self._abort_request = (source, reason)
        if self._read_scope is not None:
            self._read_scope.cancel()

    def tool_started(self, call_id: str, effect: str = "effectful") -> None:
        """The agent started running a complete tool call. ``effect``: "effectful" or "read_only"."""
        if effect not in _EFFECTS:
            raise ValueError(f"effect must be 'effectful' or 'read_only', not {effect!r}")
        effectful = _EFFECTS[effect]
        trigger = (
            Trigger.TOOL_EXECUTION_START_EFFECTFUL if effectful else Trigger.TOOL_EXECUTION_START_READ_ONLY
        )
        if call_id not in self._completed_calls:
            raise IllegalTransition(self._machine.state, trigger)
        if call_id in self._running:
            raise ValueError(f"tool call {call_id!r} is already running")
        # The record changes now, maybe after the watchdog fired (this runs on the agent's task): a failure
        # then ends when it is handled, so that nothing recorded falls after the run's end.
        self._fired_at = None
        tools = self._rec.tools
        tools["started"] += 1
        tools["effectful"] += effectful
        if not self._done:
            state = self._machine.send(trigger)
            self._rec.lifecycle(trigger.value, state)
            if state.activity is Activity.TOOL_EXECUTING:  # else the stream is busy with another call
                self._current_call = call_id
        self._running[call_id] = effectful
        self._effects[call_id] = effectful
        if effectful and self.config.pause_idle_during_tools and self._idle_paused_since is None:
            now = time.monotonic()
            self._idle_paused_since = now
            if self._idle_read_started is not None:  # a read is waiting: bank its time, stop its clock
                self._idle_waited += now - self._idle_read_started
                self._idle_read_started = None
            if self._reading:
                self._rearm()

    def tool_finished(self, call_id: str, ok: bool = True) -> None:
        if call_id not in self._running:
            raise IllegalTransition(self._machine.state, Trigger.TOOL_EXECUTION_END)
        self._fired_at = None  # see tool_started
        del self._running[call_id]
        self._rec.tools["finished" if ok else "failed"] += 1
        if self._idle_paused_since is not None and not any(self._running.values()):
            now = time.monotonic()
            self._rec.paused_s += now - self._idle_paused_since
            self._idle_paused_since = None
            if self._reading:  # a read is waiting: its idle clock runs again from now
                self._idle_read_started = now
                self._rearm()
            elif not self._done and self._rec.first_progress is not None:
                self._watch_idle(now)
        if not self._running and not self._done:
            self._machine.send(Trigger.TOOL_EXECUTION_END)
            self._rec.lifecycle(Trigger.TOOL_EXECUTION_END.value, self._machine.state)

    def relayed(self, event: ConsumerEvent | str, nbytes: int = 0, *, terminal: bool | None = None) -> None:
        """A proxy reports what it wrote downstream: the event (or a wire event name) and the bytes written.

        The record then carries a ``relay`` section (events, chunks and bytes written, the last event sent,
        whether the terminal event was sent) with the close kind of the run: ``client_abort``,
        ``client_write_failed``, ``upstream_error``, ``upstream_timeout``, ``upstream_unreachable`` or
        ``upstream_premature_close`` (``RelayClose``).
        """
        if isinstance(event, str):
            kind = event[:64]
        else:
            kind = event.trigger.value
            terminal = isinstance(event, Finish) if terminal is None else terminal
        self._rec.relayed(kind, nbytes, bool(terminal))

    def tool(self, call_id: str, effect: str = "effectful") -> ToolScope:
        """``async with run.tool(call_id):`` (or ``with``, on a sync run) brackets one tool execution."""
        return ToolScope(self, call_id, effect)

    # -- ending -----------------------------------------------------------------------------------------

    def _facts(self, **overrides: Any) -> Facts:
        call = self._current_call
        fields: dict[str, Any] = {
            "request_sent": self._rec.request_sent,
            "tool_name": self._call_names.get(call) if call else None,
            "tool_ran": call in self._effects,
            "tool_effectful": self._effects.get(call) if call else None,
        }
        fields.update(overrides)
        return Facts(**fields)

    def _http_error_facts(self, provider: ProviderError) -> Facts:
        """An HTTP error status's facts; a request to an OpenAI endpoint at the server's root says so (with
        a 404: a base_url without its /v1, which the summary then suggests)."""
        at_root = urlsplit(self._rec.url).path.rstrip("/") in _ENDPOINTS_AT_ROOT
        return self._facts(provider=provider, detail=ENDPOINT_AT_ROOT if at_root else None)

    def _abort_facts(self, source: AbortSource, reason: str | None) -> Facts:
        self._rec.set_abort(source.value, reason)
        return self._facts(abort_source=source)

    def _finalize_failure(self, edge: Trigger, facts: Facts, at: float | None = None) -> StreamFailed:
        """``at``: when the stream ended, if earlier than now."""
        from_state = self._machine.state
        final = self._machine.send(edge)
        self._rec.lifecycle(edge.value, final, at=at)
        diagnosis = diagnose(from_state, edge, facts)
        record = self._rec.finish(diagnosis, final, end=at)
        self._diagnosis, self._record, self._done = diagnosis, record, True
        self._stop_reading()
        return StreamFailed(diagnosis, record)

    def _fail(
        self, edge: Trigger, facts: Facts, cause: BaseException | None = None, *, at: float | None = None
    ) -> NoReturn:
        if cause is not None:
            release_traceback_cycles(cause)
        raise self._finalize_failure(edge, facts, at) from cause

    def _finalize_finished(self) -> None:
        # The record is sealed when the consumer is done with the run (see _seal), so what it does with the
        # last events (relaying the terminal event, starting tools) is still counted.
        rec = self._rec
        # A cut, filtered or unknown end says so.
        cause = finish_cause(whole_answers_of(self.provider), rec.finish_raw)
        if cause is FinishCause.FINISHED and rec.content_unread():
            cause = FinishCause.UNREAD_CONTENT  # not a whole answer: none of it could be read
        self._diagnosis, self._finished_at, self._done = (
            diagnose_finished(self._machine.state, cause, rec.wire_evidence(), rec.finish_raw),
            time.monotonic(),
            True,
        )
        self._stop_reading()

    def _stop_reading(self) -> None:
        # On the SDK item path the readers are the run's own methods: a cycle that would leave the run to the
        # cyclic collector. Once the run is done nothing reads.
        self._feed = self._frames_of = _unset

    def _seal(self) -> None:
        if self._record is None and self._diagnosis is not None:
            self._record = self._rec.finish(self._diagnosis, self._machine.state, end=self._finished_at)
        # A failure still held back will not be raised now (the consumer left); its frames hold this run.
        self._deferred = None

    @property
    def finished(self) -> bool:
        return self._machine.state.activity is Activity.FINISHED


class HttpRun(Run):
    """A run over our own ``httpx`` client: SSE bytes → wire adapter → events."""

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        json: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        config: StreamConfig | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(json, Mapping):
            raise TypeError("json must be a mapping (the request body)")
        check_base_url(base_url)  # a configuration mistake: raised before anything is sent or recorded
        adapter: Adapter = adapter_for(provider)
        plan = Ids.coerce(ids).recovery
        # The retry executor's plan for this attempt: continue (the body rewritten to carry what the consumer
        # was given) or resume (a GET of the rest of the provider's stored stream, decoded where it stopped).
        original = json
        self.dropped_whitespace = 0  # of the delivered text, left out of a continuation request
        self.continue_refusal: ContinueRefusal | None = None  # why the provider refused this continuation
        self._sent_as: str | None = None  # how a continuation carries the delivered answer
        if isinstance(plan, ContinuePlan):
            self.dropped_whitespace = plan.dropped(adapter.name, json)
            self._sent_as = plan.sent_as(adapter.name, json)
            json = plan.body(adapter.name, json)
        url, body = adapter.request(base_url, json)
        self._method = "POST"
        self._resume: ResumePlan | None = None
        self._background = adapter.name == OpenAIResponsesAdapter.name and resumable_request(original)
        if isinstance(plan, ResumePlan):
            if adapter.name != OpenAIResponsesAdapter.name:
                raise ValueError(f"a {adapter.name} stream has no cursor to resume by")
            adapter = plan.adapter.resumed()
            url, self._method, self._resume = (
                resume_url(base_url, plan.response_id, plan.starting_after),
                "GET",
                plan,
            )
        self.resume_refusal: ResumeRefusal | None = None  # why the provider refused this resume, if it did
        model = json.get("model")
        super().__init__(
            provider=adapter.name,
            model=model if isinstance(model, str) else None,
            body=json,
            url=url,
            delta_keys=adapter.delta_keys,
            config=config,
            ids=ids,
        )
        self._adapter = adapter
        self._url, self._body = url, body
        self._headers = dict(headers or {})
        self._client = client
        self._owns_client = client is None
        self._connected = False
        if isinstance(plan, ContinuePlan):
            self._rec.recovery = plan.record(self._sent_as)
        elif plan is not None:
            self._rec.recovery = plan.record()
        if self._resume is not None:
            self._rec.response_id(self._resume.response_id)

    async def _trace(self, name: str, info: Mapping[str, Any]) -> None:
        if not name.endswith(".complete"):
            return
        if "connect_tcp" in name or "connect_unix" in name:
            self._connected = True
            self._rec.lifecycle("connected", self._machine.state)
        elif "send_request_body" in name:
            self._rec.request_sent = True
            self._rec.lifecycle("request_written", self._machine.state)

    async def _connect(self) -> None:
        config = self.config
        rec = self._rec
        self._machine.send(Trigger.REQUEST_SENT)
        rec.lifecycle(Trigger.REQUEST_SENT.value, self._machine.state)
        if self._client is None:
            self._client = httpx.AsyncClient(verify=_default_tls())
        timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=None,
            write=config.connect_timeout,
            pool=config.connect_timeout,
        )
        request = self._client.build_request(
            self._method,
            self._url,
            json=self._body if self._method == "POST" else None,
            headers=self._headers,
            timeout=timeout,
            extensions={"trace": self._trace},
        )
        deadline, edge = self._connect_deadline()
        response: httpx.Response | None = None
        with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
            self._read_scope = scope
            try:
                response = await self._client.send(request, stream=True)
            except Exception as exc:
                facts = transport_facts(exc, headers_received=False)
                if facts.kind is TransportKind.CONNECT_TIMEOUT:
                    fault = Trigger.CONNECT_TIMEOUT
                elif self._connected or facts.kind is TransportKind.CLOSED_BEFORE_RESPONSE:
                    fault = Trigger.DISCONNECTED
                else:
                    fault = Trigger.CONNECT_FAILED
                rec.transport = facts
                self._fail(fault, self._facts(transport=facts), exc)
            finally:
                # Every traced step has happened; the response keeps its request, which would keep the run.
                request.extensions.pop("trace", None)  # an event hook may have rebuilt the extensions
        self._read_scope = None
        if response is None:
            self._fail_cancelled(edge)
        self._response = response
        rec.response_headers(response.status_code, response.headers)
        if not 200 <= response.status_code < 300:
            body = await self._read_error_body(response, deadline, edge)
            error = provider_error_from_http(response.status_code, response.headers, body)
            if self._resume is not None and 400 <= response.status_code < 500 and response.status_code != 429:
                self.resume_refusal, basis = refusal_of(response.status_code, body)
                rec.recovery = {
                    **self._resume.record(),
                    "refused": self.resume_refusal.value,
                    "refused_by": basis,
                }
            if self._sent_as == ContinueStyle.PREFILL.value and prefill_refused(response.status_code, body):
                # The model takes no prefill (Anthropic's current ones): the executor goes on by instruction.
                self.continue_refusal = refusal = ContinueRefusal.PREFILL_UNSUPPORTED
                rec.recovery = {**(rec.recovery or {}), "refused": refusal.value}
                marker = f"continue_refused={refusal.value}"
                error = dataclasses.replace(error, markers=(marker, *error.markers))
            self._fail(Trigger.HTTP_ERROR, self._http_error_facts(error))
        self._read_wire(self._adapter)
        self._next_chunk = body_chunks(response).__anext__
        self._headers_received()
        if self._resume is not None:  # the stream goes on where it stopped: so does the machine
            for trigger in self._resume.priming():
                self._machine.send(trigger)
            rec.lifecycle("resumed", self._machine.state)
            call = self._adapter._call  # the call whose arguments were streaming when the stream broke
            if call is not None:
                self._current_call, self._call_names[call.call_id] = call.call_id, call.name

    def resume_plan(self) -> ResumePlan | None:
        """How to re-attach to this run's stream after its failure, when the provider allows it: a background
        Responses stream whose id is known, broken by the connection or a watchdog, not by the response."""
        diagnosis = self._diagnosis
        adapter = self._adapter
        if (
            diagnosis is None
            or diagnosis.edge not in RESUMABLE_EDGES
            or not (self._background or self._resume is not None)
            or not self._streaming
            or not isinstance(adapter, OpenAIResponsesAdapter)
            or adapter.response_id is None
            or adapter.last_sequence < 0
        ):
            return None
        return ResumePlan(adapter.response_id, adapter.last_sequence, adapter, diagnosis.state)

    async def _read_error_body(self, response: httpx.Response, deadline: float, edge: Trigger) -> bytes:
        limit = self.config.max_error_body_bytes
        body = bytearray()
        with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
            self._read_scope = scope
            try:
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= limit:
                        break
            except Exception:
                pass  # the status already says what happened; a broken error body only loses detail
        self._read_scope = None
        if scope.cancelled_caught and self._abort_request is not None:
            self._fail_cancelled(edge)
        return bytes(body[:limit])

    async def _close_source(self) -> None:
        try:
            if self._response is not None:
                try:
                    await self._response.aclose()
                finally:
                    _unlink_closed(self._response)
        finally:
            if self._owns_client and self._client is not None:
                await self._client.aclose()


class _Wire:
    """A streamed body read by the run itself: bytes → the format's framing → frames → adapter → events."""

    __slots__ = ("_head", "adapter", "decoder", "rec")

    def __init__(self, adapter: Adapter, decoder: Framing, rec: Recorder, sniff: bool = True) -> None:
        self.adapter, self.decoder, self.rec = adapter, decoder, rec
        rec.adapter = adapter  # the record reads what the wire said: a finish reason that arrived, [DONE]
        # SSE: the body's start until it shows itself, SSE (then None) or a JSON document or HTML page (kept
        # whole, bounded, and read at the end: never as half an SSE event). A framing whose frames may start
        # so (NDJSON) tells a document from a stream itself.
        self._head: bytearray | None = bytearray() if sniff else None

    def frames(self, chunk: bytes) -> list[Any]:
        self.rec.bytes_received += len(chunk)
        if self._head is None:
            return self.decoder.feed(chunk)
        head = self._head
        head += chunk
        start = head.lstrip(_BLANKS)
        if not start:
            return []
        if bytes(start[:1]) not in _DOCUMENT_STARTS:
            self._head = None  # an SSE line (data:, event:, a comment, ...)
            return self.decoder.feed(bytes(head))
        if len(head) > MAX_DOCUMENT_BYTES:
            raise ProtocolViolation(NOT_EVENT_STREAM, 0)
        return []

    def end(self) -> list[StreamEvent]:
        adapter = self.adapter
        if self._head is not None and self._head.strip(_BLANKS):
            return document_events(bytes(self._head))
        events = [event for frame in self.decoder.close() for event in adapter.feed(frame)]
        if self.decoder.truncated:
            return events  # a torn last event: the body did not end cleanly, so no finish without a sentinel
        return events + adapter.end()

    def eof_detail(self) -> str | None:
        return "incomplete_event" if self.decoder.truncated else None


_BLANKS: Final = b" \t\r\n\xef\xbb\xbf"  # whitespace and a UTF-8 BOM before the first line
_DOCUMENT_STARTS: Final = (b"{", b"[", b"<")  # no SSE line starts so: a JSON document or an HTML page


def _unencoded(response: Any) -> bool:
    return str(response.headers.get("content-encoding", "identity")).strip().lower() in ("", "identity")


def body_chunks(response: Any) -> AsyncIterator[bytes]:
    """An ``httpx`` (or ``httpx2``) response body's chunks. An unencoded body (what SSE servers send) is read
    from the response's own stream, two async-generator layers fewer per read than ``aiter_bytes`` (which
    ``aclose`` still ends); an encoded one is decoded over that stream by the library's own decoders."""
    if _unencoded(response):
        return response.stream.__aiter__()  # type: ignore[no-any-return]
    return decoded_chunks(response)


def _unlink_closed(response: Any) -> None:
    """An httpx response and its body stream refer to each other (encode/httpx#3733), so a closed response and
    what it holds would wait for the cyclic collector. Once closed, the stream needs the response no more."""
    stream: Any = getattr(response, "stream", None)
    if getattr(stream, "_response", None) is response:
        del stream._response


def sync_body_chunks(response: Any) -> Iterator[bytes]:
    """``body_chunks`` for a sync response."""
    if _unencoded(response):
        return iter(response.stream)
    return sync_decoded_chunks(response)


class ToolScope:
    """One tool execution, bracketed: ``with`` or ``async with`` (the agent's tool may be either): started on
    entry, finished on exit (``ok`` unless the block raised)."""

    __slots__ = ("_call_id", "_effect", "_run")

    def __init__(self, run: Any, call_id: str, effect: str) -> None:
        self._run, self._call_id, self._effect = run, call_id, effect

    def __enter__(self) -> None:
        self._run.tool_started(self._call_id, self._effect)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._run.tool_finished(self._call_id, ok=exc_type is None)

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


_ON_EVENT: Final[dict[type, Callable[[Run, Any], None]]] = {
    ToolInputStart: Run._on_tool_input_start,
    ToolCall: Run._on_tool_call,
    Usage: Run._on_usage,
    Metadata: Run._on_metadata,
    Finish: Run._on_finish,
}
_ON_EVENT_COLLECTING: Final[dict[type, Callable[[Run, Any], None]]] = {
    **_ON_EVENT,
    TextDelta: Run._on_text,
    ReasoningDelta: Run._on_reasoning,
}


def _result(
    text: list[str], reasoning: list[str], refusal: list[str], calls: Iterable[ToolCall], run: Run
) -> Result:
    rec = run._rec
    tokens = rec.tokens
    total = run._total_tokens
    usage = None
    if total is not None or any(value is not None for value in tokens.values()):
        usage = Usage(tokens["input"], tokens["output"], tokens["reasoning"], tokens["cached"], total)
    unified = rec.finish_unified
    return Result(
        text="".join(text),
        reasoning="".join(reasoning),
        refusal="".join(refusal),
        tool_calls=tuple(calls),
        usage=usage,
        finish_reason=FinishReason(unified) if unified is not None else None,
        raw_finish_reason=rec.finish_raw,
    )


def open_stream(
    provider: str,
    *,
    base_url: str,
    json: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
    config: StreamConfig | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
) -> HttpRun:
    """Open one streaming request to ``provider`` ("openai-chat", "openai-responses", "anthropic", "gemini").

    Use it as an async context manager; the request is sent on entry. ``headers`` carries auth and is never
    recorded. ``client`` is used and left open when given; otherwise the run owns a fresh client. A
    ``base_url`` that is not an http(s) URL with a host raises ``ValueError`` at once: nothing is sent.
    """
    return HttpRun(
        provider, base_url=base_url, json=json, headers=headers, client=client, config=config, ids=ids
    )
