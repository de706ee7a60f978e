"""The run core: one LLM call's tracking without I/O. Bytes and facts in; events, state and the record out.

    core = RunCore(provider="openai-chat", model=..., body=..., url=..., config=..., ids=...)
    core.begin()                                  # the request leaves
    core.headers(200, headers, core.stream_wire(adapter))   # the headers, and how the body is framed
    events = core.feed(chunk)                     # each chunk read: the consumer events it carried
    events = core.end()                           # the body's clean end
    core.fault(exc) / core.timed_out(edge) / core.local_end(exc, cancelled=...)   # how else it ends

    events = core.took(outcome)                   # or: how a read ended, whatever it was (the read door)

The read door: a driver's watched read ends as one *outcome*: the chunk it read (bytes, or an SDK's item), or
one of the preallocated ``END`` (the body's clean end), ``DEADLINE`` (a watchdog ended the read; its edge is
``timing.edge``), ``STOP`` (``abort()`` came between reads or ended the read), or the ``Exception`` the read
raised (a fault, classified by ``read_fault``). ``took`` decides what each means in one place (a deadline
with an abort requested is the abort; a fault once an HTTP error's body is read is that error; a fault
after the end changes nothing) and returns the events, leaving the failure in ``failure`` (``take_failure``).
Nothing is allocated to say how a read ended.

As h11's ``Connection`` is to HTTP: no sockets, no tasks, no event loop, and the clock is injected (a callable
returning monotonic seconds). The drivers (``HttpRun``, the SDK runs, the tap's runs; async and sync) read,
write and time, and hand what happened to one core. A method that ends the run returns its ``StreamFailed``
(also kept as ``failure``); ``feed`` and ``end`` return the events that came before it. The run is over once
``done``: nothing after that changes its outcome, and no event is given after its terminal one.

The core keeps the watchdogs' arithmetic (``ReadClock``: the idle clock, paused during effectful tools; each
read's deadline and edge), not their timers: a driver asks ``timing.read_deadline`` and arms its own.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NoReturn, Protocol, TypeVar

from ...classify import AbortSource, Diagnosis, FinishCause, diagnose_finished, finish_cause
from ...machine import PROVIDER_PROGRESS, Activity, IllegalTransition, State, StreamMachine, Trigger
from ...wire import (
    CONSUMER_EVENT_TYPES,
    MAX_DOCUMENT_BYTES,
    NOT_EVENT_STREAM,
    Adapter,
    ConsumerEvent,
    Finish,
    Framing,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    ReasoningDelta,
    Result,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolInputStart,
    Usage,
    document_events,
    format_named,
    whole_answers_of,
)
from ..records._record import Recorder, RunRecord
from ._config import Ids, StreamConfig
from ._errors import StreamFailed
from ._failures import ErrorBody, RunFailures
from ._ledger import Ledger

__all__ = ["DEADLINE", "END", "STOP", "ReadEnd", "RunCore", "StreamWire", "Wire"]

_CONSUMER_TYPES: Final = frozenset(CONSUMER_EVENT_TYPES)

_C = TypeVar("_C", bound="RunCore")


def deadline_after(start: float, timeout: float | None) -> float:
    return math.inf if timeout is None else start + timeout


class ReadEnd:
    """How a read ended without a chunk: one of the preallocated ``END``, ``DEADLINE``, ``STOP``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<read {self.name}>"


END: Final = ReadEnd("end")  # the body ended cleanly
DEADLINE: Final = ReadEnd("deadline")  # a watchdog ended the read (its edge: ``ReadClock.edge``)
STOP: Final = ReadEnd("stop")  # abort() ended the read, or came before it


class Wire(Protocol):
    """What a core reads a body with: chunk → frames → events, and what it owes at the body's end."""

    def frames(self, chunk: Any) -> list[Any]: ...

    def feed(self, frame: Any) -> list[StreamEvent]: ...

    def end(self) -> list[StreamEvent]: ...

    def eof_detail(self) -> str | None: ...


class StreamWire:
    """A streamed body read by the run itself: bytes → the format's framing (SSE, NDJSON, ...) → frames →
    one wire adapter → events."""

    __slots__ = ("_head", "adapter", "decoder", "feed", "rec")

    def __init__(self, adapter: Adapter, decoder: Framing, rec: Recorder, sniff: bool = True) -> None:
        self.adapter, self.decoder, self.rec = adapter, decoder, rec
        self.feed = adapter.feed
        rec.adapter = adapter  # the record reads what the wire said: a finish reason that arrived, [DONE]
        rec.delta_keys = adapter.delta_keys  # the adapter's live, bounded counter
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


class ReadClock:
    """The watchdogs' arithmetic for one run: the idle clock (time spent waiting on the provider since its
    last progress; a slow consumer, or an effectful tool with ``pause_idle_during_tools``, does not count)
    and each read's deadline and edge. No timers: a driver arms its own from ``read_deadline``."""

    __slots__ = (
        "_paused_since",
        "_read_started",
        "config",
        "due_at",
        "edge",
        "fired_at",
        "look_by",
        "now",
        "read_ended_at",
        "reading",
        "rec",
        "total_deadline",
        "waited",
    )

    def __init__(self, config: StreamConfig, rec: Recorder, now: Callable[[], float]) -> None:
        self.config, self.rec, self.now = config, rec, now
        self._paused_since: float | None = None
        self.waited = 0.0  # the finished reads' share of the idle time
        self._read_started: float | None = None  # set while a read waits and the idle clock runs
        self.reading = False
        self.read_ended_at = rec.start  # the time of every event the chunk read last carries
        self.fired_at: float | None = None  # when a watchdog found the waiting read past its deadline
        self.edge = Trigger.TOTAL_TIMEOUT  # the edge of the deadline the waiting read is (was) watched by
        self.due_at: float | None = None  # when a deadline was first found passed, until progress
        self.look_by: float | None = None  # the idle clock restarted: no read's deadline comes before this
        self.total_deadline = deadline_after(rec.start, config.total_timeout)

    def connect_deadline(self, since: float | None = None) -> tuple[float, Trigger]:
        """The connect watchdog's deadline and edge, counted from ``since`` (default the run's start).
        Counted again from when the request begins to leave, the time the client's own pool or loop held
        it back is not blamed on the upstream."""
        connect = deadline_after(self.rec.start if since is None else since, self.config.connect_timeout)
        total = self.total_deadline
        return (connect, Trigger.CONNECT_TIMEOUT) if connect <= total else (total, Trigger.TOTAL_TIMEOUT)

    def read_began(self, now: float) -> None:
        """A read starts waiting on the provider at ``now``: the idle clock runs. Paired with read_ended."""
        self.reading = True
        if self._paused_since is None:
            self._read_started = now

    def read_ended(self) -> None:
        now = self.read_ended_at = self.now()  # the time of every event the chunk carries
        self.reading = False
        started = self._read_started
        if started is not None:
            self.waited += now - started
            self._read_started = None

    def read_deadline(self, now: float | None = None) -> tuple[float, Trigger]:
        """The earliest armed watchdog deadline of the waiting read (or of one starting ``now``), and its
        edge."""
        if now is None:
            now = self.now()
        started = self._read_started
        if started is not None:
            now = started
        rec = self.rec
        config = self.config
        best, edge = self.total_deadline, Trigger.TOTAL_TIMEOUT
        if rec.first_progress is None:
            first = deadline_after(rec.headers_at or rec.start, config.first_token_timeout)
            if first < best:
                best, edge = first, Trigger.FIRST_TOKEN_TIMEOUT
        elif self._paused_since is None and config.idle_timeout is not None:
            idle = now + config.idle_timeout - self.waited
            if idle < best:
                best, edge = idle, Trigger.IDLE_TIMEOUT
        return best, edge

    def restarted(self, now: float) -> None:
        """The idle clock (re)started at ``now`` with no read waiting (the first progress, or an effectful
        tool ended): no later read's idle deadline comes before ``look_by``."""
        if self.config.idle_timeout is not None:
            self.look_by = now + self.config.idle_timeout - self.waited

    def pause(self) -> bool:
        """An effectful tool started: the idle clock stops (True), unless it had already."""
        if self._paused_since is not None:
            return False
        now = self._paused_since = self.now()
        if self._read_started is not None:  # a read is waiting: bank its time, stop its clock
            self.waited += now - self._read_started
            self._read_started = None
        return True

    def resume(self, running: bool) -> bool:
        """The last effectful tool ended: the idle clock runs again (True), unless it was not paused."""
        if self._paused_since is None:
            return False
        now = self.now()
        self.rec.paused_s += now - self._paused_since
        self._paused_since = None
        if self.reading:  # a read is waiting: its idle clock runs again from now
            self._read_started = now
        elif running and self.rec.first_progress is not None:
            self.restarted(now)
        return True


class RunCore(RunFailures):
    """One run's machine, record, wire and facts; see the module docstring. How a fault, an HTTP error, a
    violation or a local end becomes the run's failure and its facts: ``RunFailures``."""

    def __init__(
        self,
        *,
        provider: str,
        model: str | None,
        body: Mapping[str, Any],
        url: str,
        config: StreamConfig | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
        delta_keys: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config = config or StreamConfig()
        self.ids = Ids.coerce(ids)
        self.provider = provider
        self.clock = clock
        self.run_id = uuid.uuid4().hex
        self.trace_id = self.ids.trace_id or uuid.uuid4().hex
        self.machine = StreamMachine(history_size=config.history_size)
        rec = self.rec = Recorder(
            provider=provider,
            model=model,
            body=body,
            url=url,
            ids=self.ids,
            config=config,
            run_id=self.run_id,
            trace_id=self.trace_id,
            clock=clock,
        )
        rec.delta_keys = delta_keys or {}  # the source's live, bounded counter
        self.wire: Wire | None = None
        self.streaming = False  # the headers arrived and the body is the run's to read
        self.done = False
        # The failure the last feed() or end() ended the run with, until a driver takes it: kept no longer,
        # as a driver raises it and its traceback's frames hold the driver.
        self.failure: StreamFailed | None = None
        self.abort_request: tuple[AbortSource, str | None] | None = None
        self._record: RunRecord | None = None
        self._diagnosis: Diagnosis | None = None
        self._finished_at: float | None = None
        self._out: list[ConsumerEvent] = []  # the consumer events of the chunk being fed
        self.error_read: ErrorBody | None = None  # an HTTP error's body, while it is read
        self.ledger = Ledger()
        # What the per-event path dispatches on. collect() swaps in a table that also keeps the text, so a
        # run whose result() nobody asked for pays nothing for it.
        self._on_event: Mapping[type, Callable[[RunCore, Any], None]] = _ON_EVENT
        self.timing = ReadClock(config, rec, clock)  # the watchdogs' arithmetic; a driver arms timers
        # How a read's fault is read: a transport fault by default; an SDK's driver reads its exceptions.
        # A function of the core, not a driver's bound method: the core holds no driver (no cycle).
        self.read_fault: Callable[[RunCore, Exception], StreamFailed] = RunCore.fault

    @classmethod
    def for_request(
        cls,
        adapter: Adapter,
        body: Mapping[str, Any],
        url: str,
        *,
        config: StreamConfig | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
    ) -> RunCore:
        """The core of a run whose request ``body`` goes to ``url`` in ``adapter``'s format."""
        model = body.get("model")
        return cls(
            provider=adapter.name,
            model=model if isinstance(model, str) else None,
            body=body,
            url=url,
            config=config,
            ids=ids,
            delta_keys=adapter.delta_keys,
        )

    def bound_first_token(self, seconds: float) -> None:
        """A route's deadline for the first token, set before the run starts: the headers come within
        ``seconds`` of the request's start and the first token within ``seconds`` of the headers, or a
        watchdog fires (``connect_timeout``, ``first_token_timeout``)."""
        config = self.config
        bounded = {
            name: seconds if value is None else min(value, seconds)
            for name, value in (
                ("connect_timeout", config.connect_timeout),
                ("first_token_timeout", config.first_token_timeout),
            )
        }
        self.config = self.timing.config = self.rec.config = config.replace(**bounded)

    # -- what a caller reads ----------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self.machine.state

    @property
    def history(self) -> tuple[Trigger, ...]:
        return tuple(self.machine.history)

    @property
    def record(self) -> RunRecord | None:
        """The run record, once the run has ended (finished or failed) and, if finished, been sealed."""
        return self._record

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self._diagnosis

    @property
    def finished(self) -> bool:
        return self.machine.state.activity is Activity.FINISHED

    @property
    def progressed(self) -> bool:
        return self.rec.first_progress is not None

    def collect(self: _C) -> _C:
        """Keep the text and reasoning for `result()`; only before the first event."""
        if self.rec.counts:
            raise RuntimeError("call collect() before the run's first event")
        if self.ledger.kept is None:
            self.ledger.kept = {"text": [], "reasoning": [], "refusal": []}
            self._on_event = _ON_EVENT_COLLECTING
        return self

    def result(self) -> Result:
        """What the run produced, once it has ended; see ``Run.result``."""
        if not self.done:
            raise RuntimeError("result() is for a run that has ended: iterate it to the end first")
        return self.ledger.result(self.rec)

    def result_of(
        self, text: list[str], reasoning: list[str], refusal: list[str], calls: Iterable[ToolCall]
    ) -> Result:
        """A result of this run's usage and finish, with the text and calls given (a retry's, across its
        attempts)."""
        return self.ledger.result_of(self.rec, text, reasoning, refusal, calls)

    # -- the exchange -----------------------------------------------------------------------------------

    def begin(self) -> None:
        """The request starts to leave."""
        self.lifecycle(Trigger.REQUEST_SENT.value, self.machine.send(Trigger.REQUEST_SENT))

    def lifecycle(self, kind: str, state: State | None = None) -> None:
        """A step on the timeline that is no stream event (``connected``, ``request_written``, ...)."""
        self.rec.lifecycle(kind, self.machine.state if state is None else state)

    def stream_wire(self, adapter: Adapter) -> StreamWire:
        """A streamed body read by ``adapter``, in its format's framing."""
        fmt = format_named(adapter.name)
        framing = fmt.framing(self.config.max_line_bytes)
        return StreamWire(adapter, framing, self.rec, sniff=fmt.sniffs_documents)

    def headers(self, status: int | None, headers: Mapping[str, str], wire: Wire | None = None) -> None:
        """The response's headers arrived. A 2xx (or an unknown status: an SDK's stream) makes the body the
        run's to read through ``wire``; another status's body is an HTTP error's, read (bounded) by
        ``feed`` until ``end`` (or a fault) ends the run with it."""
        if status is not None:
            self.rec.response_headers(status, headers)
            if not 200 <= status < 300:
                self.error_read = ErrorBody(status, headers, self.config.max_error_body_bytes)
                return
        self.wire = wire
        # A lifecycle step like the connect: on the timeline, but not a stream event to count.
        self.lifecycle(Trigger.HEADERS_RECEIVED.value, self.machine.send(Trigger.HEADERS_RECEIVED))
        self.streaming = True

    def feed(self, chunk: Any) -> list[ConsumerEvent]:
        """A chunk of the body arrived: the consumer events it carried, up to the run's end if it ended
        the run (``failure`` then says how). Nothing after the terminal event is applied."""
        out = self._out = []
        if self.done:
            return out
        if self.error_read is not None:
            self.error_read.feed(chunk)
            return out
        try:
            try:
                wire = self.wire
                assert wire is not None, "feed() before headers() gave a wire"
                feed, apply = wire.feed, self._apply
                for frame in wire.frames(chunk):
                    if self.done:
                        break  # data after the terminal event is not part of this response
                    for event in feed(frame):  # _apply_all, inlined: this is the per-event path
                        if self.done:
                            break
                        apply(event)
            except ProtocolViolation as violation:
                self._violated(violation)
            except StreamFailed:
                raise
            except Exception as exc:  # the body does not decode: a read that fails
                self._read_fault(exc)
        except StreamFailed as failure:
            self._kept_failure(failure)
        return out

    def end(self) -> list[ConsumerEvent]:
        """The body ended cleanly (EOF): the events the wire still owed; without a terminal event by then,
        the run fails as ``eof_without_terminal``."""
        out = self._out = []
        if self.done:
            return out
        if self.error_read is not None:
            self._kept_failure(self.http_error())
            return out
        try:
            try:
                wire = self.wire
                self._apply_all(wire.end() if wire is not None else [])
                if not self.done:
                    detail = wire.eof_detail() if wire is not None else None
                    self._fail(Trigger.EOF_WITHOUT_TERMINAL, self.facts(detail=detail))
            except ProtocolViolation as violation:
                self._violated(violation)
        except StreamFailed as failure:
            self._kept_failure(failure)
        return out

    def took(self, outcome: Any) -> list[ConsumerEvent]:
        """The read door: how a watched read ended (see the module docstring), and the events it carried;
        the failure it ended the run with is kept in ``failure``."""
        if outcome.__class__ is bytes:
            return self.feed(outcome)
        if outcome.__class__ is ReadEnd:
            if outcome is END:
                return self.end()
            out = self._out = []
            if not self.done:
                edge = Trigger.LOCAL_ABORT if outcome is STOP else self.timing.edge
                self._kept_failure(self.timed_out(edge))
            return out
        if isinstance(outcome, Exception):
            out = self._out = []
            if not self.done:
                self._kept_failure(self.read_fault(self, outcome))
            return out
        return self.feed(outcome)

    def timed_out(self, edge: Trigger) -> StreamFailed:
        """A watchdog's deadline passed (at ``timing.fired_at`` when set), or the read was interrupted: with
        an ``abort()`` requested, the run fails as that abort."""
        if self.done:
            return self._settled()
        return self._caught(self._fail_cancelled, edge)

    def abort(self, reason: str | None = None, source: AbortSource | str = AbortSource.USER) -> bool:
        """Ask the run to stop (the driver interrupts its read, then calls ``timed_out``); True if this is
        the first request of a run still going."""
        source = AbortSource(source)
        if self.done or self.abort_request is not None:
            return False
        self.abort_request = (source, reason)
        return True

    def seal(self) -> RunRecord | None:
        """The consumer is done with the run: a finished run's record is made now (what it did with the last
        events, relaying the terminal event, starting tools, is still counted); a failed run's, made when it
        failed, takes what a relay wrote downstream since."""
        diagnosis = self._diagnosis
        if self._record is None and diagnosis is not None:
            self._record = self.rec.finish(diagnosis, self.machine.state, end=self._finished_at)
        elif self._record is not None and diagnosis is not None and self.rec.relay is not None:
            self._record = self.rec.resealed(self._record, diagnosis)
        return self._record

    # -- the agent's facts ------------------------------------------------------------------------------

    def tool_started(self, call_id: str, effect: str = "effectful") -> bool:
        """The agent started running a complete tool call. True if the idle clock paused."""
        ledger = self.ledger
        trigger, effectful = ledger.starting(call_id, effect, self.machine.state)
        # The record changes now, maybe after the watchdog fired (this runs on the agent's task): a failure
        # then ends when it is handled, so that nothing recorded falls after the run's end.
        self.timing.fired_at = None
        tools = self.rec.tools
        tools["started"] += 1
        tools["effectful"] += effectful
        if not self.done:
            state = self.machine.send(trigger)
            self.rec.lifecycle(trigger.value, state)
            if state.activity is Activity.TOOL_EXECUTING:  # else the stream is busy with another call
                ledger.current = call_id
        ledger.started(call_id, effectful)
        return effectful and self.config.pause_idle_during_tools and self.timing.pause()

    def tool_finished(self, call_id: str, ok: bool = True) -> bool:
        """The agent's tool call ended. True if the idle clock resumed (``timing.look_by`` then says by when
        a watchdog must look, when no read waits)."""
        running = self.ledger.running
        self.ledger.finished(call_id, self.machine.state)
        self.timing.fired_at = None  # see tool_started
        self.rec.tools["finished" if ok else "failed"] += 1
        resumed = not any(running.values()) and self.timing.resume(not self.done)
        if not running and not self.done:
            self.machine.send(Trigger.TOOL_EXECUTION_END)
            self.rec.lifecycle(Trigger.TOOL_EXECUTION_END.value, self.machine.state)
        return resumed

    def relayed(
        self, event: ConsumerEvent | str | None, nbytes: int = 0, terminal: bool | None = None
    ) -> None:
        """A relay wrote ``nbytes`` downstream carrying ``event`` (or a wire event's name; None: bytes of no
        event of their own)."""
        if event is None or isinstance(event, str):
            self.rec.relayed(event and event[:64], nbytes, bool(terminal))
        else:
            self.rec.relayed(
                event.trigger.value, nbytes, isinstance(event, Finish) if terminal is None else terminal
            )

    def relayed_chunk(self, events: deque[ConsumerEvent], nbytes: int) -> None:
        """``relayed(event, ...)`` for each of ``events`` in turn, the chunk's ``nbytes`` with the first, in
        one call (a relay's written chunk carries about ten); ``events`` is drained."""
        count = len(events)
        last = events[-1]
        terminal = isinstance(last, Finish)  # nothing is applied after the terminal event
        events.clear()
        self.rec.relayed_events(count, last.trigger._value_, nbytes, terminal)

    # -- what a driver knows of its source: the only ways a driver writes the record ---------------------

    def request_left(self) -> None:
        """The request was written (or may have been: a deadline before the headers, an SDK's own send)."""
        self.rec.request_sent = True

    def use_format(self, provider: str) -> None:
        """The source's format, once known (an SDK stream says it late, maybe by its first item)."""
        self.provider = self.rec.provider = provider

    def read_with(self, reader: Any) -> None:
        """A translator of the source's own items reads the run: its counts and anomalies are the record's."""
        self.rec.delta_keys = reader.delta_keys
        self.rec.adapter = reader

    def bytes_read(self, nbytes: int) -> None:
        """What the source's own reader counted of the body (an SDK's ``num_bytes_downloaded``)."""
        self.rec.bytes_received = nbytes

    def source_facts(
        self,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        url: str | None = None,
        request: dict[str, Any] | None = None,
        model: str | None = None,
        sdk_retries: int | None = None,
    ) -> None:
        """What a source that sent the request itself (an SDK) says of it: each fact given, redacted."""
        rec = self.rec
        if sdk_retries is not None:
            rec.sdk_retries = sdk_retries
        if status is not None and headers is not None:
            rec.response_headers(status, headers)
        if url is not None:
            rec.url = url
        if request is not None:
            rec.request = request
        if model is not None:
            rec.model = model

    def asks_stream(self, streaming: bool | None) -> None:
        """Whether the request asked for a stream (None: unknown), until the response says."""
        self.rec.request["streaming"] = streaming

    def recovery(self, facts: dict[str, Any] | None) -> None:
        """This attempt's recovery (a continuation, a resume) and what the provider said of it."""
        self.rec.recovery = facts

    @property
    def recovery_facts(self) -> dict[str, Any] | None:
        return self.rec.recovery

    def response_known(self, response_id: str) -> None:
        """The provider's id of the response this run reads (a resume knows it before the first byte)."""
        self.rec.response_id(response_id)

    def resumed(self, priming: Iterable[Trigger], call: tuple[str, str] | None) -> None:
        """The stream goes on where an earlier attempt's stopped: the machine walks to its state again, and
        the call whose arguments were streaming is open again."""
        for trigger in priming:
            self.machine.send(trigger)
        self.lifecycle("resumed")
        if call is not None:
            self.ledger.resumed_in(*call)

    def relinked(self, ids: Ids) -> None:
        """The chain's earlier attempts, as they stand now (see ``Run.relink``)."""
        self.ids = self.rec.ids = ids

    # -- a relay's own words on the run (``streamfsm.relay`` through the tap's run) ----------------------

    def relay_closed(self, close: Any) -> None:
        self.rec.relay_close = close

    def relay_limit(self, limit: str) -> None:
        """The relay's own bound that ended the run (its ``relay`` section names it)."""
        relay = self.rec.relay
        assert relay is not None, "relayed() before relay_limit()"
        relay["limit"] = limit

    def relayed_error(self, source: str, nbytes: int = 0) -> None:
        self.rec.relayed_error(source, nbytes)

    def relayed_end(self) -> None:
        self.rec.relayed_end()

    @property
    def terminal_relayed(self) -> bool:
        relay = self.rec.relay
        return relay is not None and bool(relay["terminal_sent"])

    # -- inside: each step that ends the run raises its StreamFailed, caught at the public boundary ---------

    def _fail_cancelled(self, edge: Trigger, _: Any = None) -> NoReturn:
        if self.abort_request is not None:
            source, reason = self.abort_request
            self._fail(Trigger.LOCAL_ABORT, self.abort_facts(source, reason))
        if not self.streaming:
            self.rec.request_sent = True  # unknown; the request may well have left: say it may be delivered
        self.rec.watchdog_fired = edge.value
        # The stream ended when the watchdog fired: what the HTTP client does to unwind the cancelled read
        # (on a busy trio loop, a scheduler pass per await of its cleanup) is teardown, not the stream's.
        self._fail(edge, self.facts(), at=self.timing.fired_at)

    def _apply_all(self, events: Iterable[StreamEvent]) -> None:
        for event in events:
            if self.done:
                return
            self._apply(event)

    def _apply(self, event: StreamEvent) -> None:
        if isinstance(event, ProviderErrorEvent):
            self._fail(Trigger.PROVIDER_ERROR_EVENT, self.facts(provider=event.error))
        kind = type(event)
        trigger = event.trigger
        now = self.timing.read_ended_at
        try:
            state = self.machine.send(trigger)
        except IllegalTransition as illegal:
            if kind is Finish and illegal.state.activity is Activity.TOOL_INPUT_OPEN:
                self._unfinished_call(event)  # type: ignore[arg-type]  # narrowed by kind
            self._fail(
                Trigger.PROTOCOL_VIOLATION,
                self.facts(detail=f"illegal {trigger.value} in {illegal.state}"),
                illegal,
            )
        self.rec.event(trigger._value_, now, state)  # .value is a Python-level property; per event
        if trigger in PROVIDER_PROGRESS:  # Trigger.is_provider_progress, without the property call
            first = self.rec.first_progress is None
            self.rec.progress(trigger, now)
            timing = self.timing
            timing.waited = 0.0
            timing.due_at = None  # the deadline moved: a later one is looked at afresh
            if first:  # first token → idle
                timing.restarted(now)
        if kind in _CONSUMER_TYPES:
            self._out.append(event)  # type: ignore[arg-type]  # narrowed by _CONSUMER_TYPES
        on_event = self._on_event.get(kind)
        if on_event is not None:
            on_event(self, event)

    def _on_usage(self, event: Usage) -> None:
        if event.total_tokens is not None:
            self.ledger.total_tokens = event.total_tokens
        self.rec.usage(event.input_tokens, event.output_tokens, event.reasoning_tokens, event.cached_tokens)

    def _on_metadata(self, event: Metadata) -> None:
        self.rec.response_id(event.response_id)

    def _on_finish(self, event: Finish) -> None:
        rec = self.rec
        rec.finish_raw = event.raw_reason
        rec.finish_unified = event.reason.value
        cause = finish_cause(
            whole_answers_of(self.provider), rec.finish_raw
        )  # a cut, filtered or unknown end says so
        if cause is FinishCause.FINISHED and rec.content_unread():
            cause = FinishCause.UNREAD_CONTENT  # not a whole answer: none of it could be read
        self._diagnosis, self._finished_at, self.done = (
            diagnose_finished(self.machine.state, cause, rec.wire_evidence(), rec.finish_raw),
            self.clock(),
            True,
        )
        self._let_go()

    def _let_go(self) -> None:
        # A wire may be a driver's own (the SDK item path reads with the run's methods): a cycle that would
        # leave the run to the cyclic collector. Once the run is done nothing reads.
        self.wire = None


_ON_EVENT: Final[dict[type, Callable[[RunCore, Any], None]]] = {
    ToolInputStart: lambda core, event: core.ledger.announced(event),
    ToolCall: lambda core, event: core.ledger.completed(event),
    Usage: RunCore._on_usage,
    Metadata: RunCore._on_metadata,
    Finish: RunCore._on_finish,
}
_ON_EVENT_COLLECTING: Final[dict[type, Callable[[RunCore, Any], None]]] = {
    **_ON_EVENT,
    TextDelta: lambda core, event: core.ledger.text(event),
    ReasoningDelta: lambda core, event: core.ledger.reasoning(event),
}
