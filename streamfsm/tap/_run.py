"""A run fed by the tap: the SDK reads the bytes, and each chunk it reads drives the machine on its way.

The third run source beside ``HttpRun`` (our own request) and ``SdkRun`` (an SDK stream handed to us). Here
nobody iterates the run: the transport calls it at each step of the exchange (``connected``, each ``chunk``,
a read fault, the consumer closing early), and each call that ends the run returns its failure instead of
raising it, so that the transport can attach it to whatever the HTTP library raises (or raise nothing).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

import anyio

from ..classify import AbortSource
from ..machine import Trigger
from ..runtime import (
    END,
    ConsumerEvent,
    Ids,
    LoopReads,
    RunCore,
    RunHandle,
    StreamConfig,
    StreamFailed,
    ThreadReads,
    WholeBody,
    Wire,
    as_bytes,
    deliver,
)
from ..wire import StreamEvent, format_named
from ._notes import Witness, detached

_EOF_EDGE: Final = Trigger.EOF_WITHOUT_TERMINAL.value


class TapRun(RunHandle):
    """One LLM call watched by the tap, streaming or one whole JSON answer: a driver of one ``RunCore``
    (``core``), whose reads (``reads``) the transport brackets; async reads: the loop's watchdog cancels a
    read's scope when its deadline passes."""

    def __init__(
        self,
        provider: str,
        *,
        body: Mapping[str, Any],
        url: str,
        config: StreamConfig,
        ids: Ids,
        asks_stream: bool | None = True,
    ) -> None:
        self._format = format_named(provider)
        adapter = self._format.adapter()
        core = self.core = RunCore.for_request(adapter, body, url, config=config, ids=ids)
        self._hold(core)
        self.reads: LoopReads | ThreadReads = self._reads
        adapter.lean()  # the SDK reads the text from its own copy of the bytes; the run needs the kinds
        self._adapter = adapter
        # What the request asked for, where a bounded look could tell; the response decides (``connected``).
        self.asks_stream = asks_stream
        core.asks_stream(asks_stream)
        self._events: deque[ConsumerEvent] | None = None  # nobody reads our events (the SDK reads the bytes)
        self._ended = False
        self._then: Callable[[TapRun], None] | None = None  # what end() does once the record is out
        # Who still writes the record after the run's end (a relay: its last writes downstream): while it
        # says so, ``end()`` waits, and it calls ``end()`` again once it is done.
        self.keeps_record: Callable[[], bool] | None = None
        # What a cancellation from outside means when no ``abort()`` came first (a relay: its own shutdown):
        # asked then, it names the abort's source and reason.
        self.outside_cancel: Callable[[], tuple[AbortSource, str]] | None = None
        self.failure: StreamFailed | None = None
        self.streams: bool | None = None  # once a 2xx response said it
        self._witness = Witness()  # for failure_of, when a framework raises an exception of its own

    def _reader(self) -> LoopReads | ThreadReads:
        return LoopReads(self.core)

    # -- what a caller reads, as on any run: the handle's (``RunHandle``) ----------------------------------

    @property
    def done(self) -> bool:
        return self.core.done

    def collect(self) -> TapRun:
        """As ``Run.collect``: the text is kept, so the deltas carry it again (see ``Adapter.lean``)."""
        self._adapter.lean(False)
        self.core.collect()
        return self

    # -- what the transport reports -------------------------------------------------------------------

    def begin(self) -> None:
        self.core.begin()

    def connect_failed(self, exc: Exception) -> StreamFailed:
        return self._settle(self.core.fault(exc))

    def timed_out(self, edge: Trigger) -> StreamFailed:
        """A watchdog fired (before the headers: the request may well have left)."""
        if not self.core.streaming:
            self.core.request_left()
        return self._settle(self.core.timed_out(edge))

    def connected(self, status: int, headers: Mapping[str, str], decoder: Any = None) -> None:
        """The headers arrived. ``decoder``: the library's own content decoder of an encoded body (the SDK
        decodes its copy of the bytes; the run decodes the same bytes the same way)."""
        core = self.core
        core.request_left()
        if not 200 <= status < 300:
            core.headers(status, headers)  # an HTTP error: its body is read, bounded, until its end
            return
        # The response says whether the call streams: an event stream does, and so does the answer to a
        # request that asked for one (a JSON document there is the stream's failure, as it always was).
        content_type = str(headers.get("content-type", ""))
        self.streams = self.asks_stream is True or self._format.is_stream(content_type)
        core.asks_stream(self.streams)
        wire: Wire = core.stream_wire(self._adapter) if self.streams else WholeBody(self._adapter, core.rec)
        if decoder is not None:
            wire = _Decoded(wire, decoder)
        core.headers(status, headers, wire)

    @property
    def error_body_short(self) -> bool:
        """An HTTP error's body is being read and is still under its bound."""
        read = self.core.error_read
        return read is not None and read.short

    def chunk(self, chunk: bytes | None) -> StreamFailed | None:
        """The SDK read ``chunk`` (None: the body ended cleanly); the run's failure if this ended it."""
        return self.took(END if chunk is None else chunk)

    def took(self, outcome: Any) -> StreamFailed | None:
        """How a watched read ended, through the core's read door (``RunCore.took``); the run's failure if
        this ended it."""
        core = self.core
        events = core.took(outcome)
        if self._events is not None:
            self._events.extend(events)
        if core.timing.look_by is not None:
            self.reads.looked()
        failure = core.take_failure()
        return self._settle(failure) if failure is not None else None

    def read_failed(self, exc: Exception) -> StreamFailed:
        """A read raised (while an HTTP error's body is read, the status says what happened)."""
        return self._settle(self.core.fault(exc))

    def stopped(self, exc: BaseException | None) -> StreamFailed:
        """The consumer closed the response before its end (``exc`` None), or the read was cancelled."""
        core = self.core
        if core.error_read is not None:
            return self._settle(core.http_error())
        request = core.abort_request
        cancelled = exc is not None and self._cancelled(exc)
        if request is None and cancelled and self.outside_cancel is not None:
            request = self.outside_cancel()
        if request is not None and (exc is None or cancelled):
            source, reason = request  # abort() came first (between reads, or it cancelled the reader)
            failure = core.fail(Trigger.LOCAL_ABORT, core.abort_facts(source, reason))
        else:
            failure = core.local_end(exc, cancelled=cancelled)
        return self._settle(failure)

    def _cancelled(self, exc: BaseException) -> bool:
        return isinstance(exc, anyio.get_cancelled_exc_class())

    def discard(self) -> None:
        """End without a record: the response was not the stream (a redirect)."""
        self._ended = True
        self._witness.settle(None)
        self.reads.forget()

    def abandoned(self) -> None:
        """The response was dropped unread and unclosed: the run ends as if the consumer stopped."""
        if self._ended:
            return
        self.reads.let_go()  # no loop to forget it on here: the timer, when it comes, finds nothing
        core = self.core
        if not core.done:
            if core.error_read is not None:
                self._settle(core.http_error())
            else:
                reason = "the response was dropped without being closed"
                core.fail(Trigger.LOCAL_ABORT, core.abort_facts(AbortSource.CONSUMER_STOPPED, reason))
        self.end()

    # -- for a reader of the run's events besides the SDK (``streamfsm.relay``) --------------------------

    def keep_events(self) -> deque[ConsumerEvent]:
        """From now on, keep the consumer events each read chunk carries in the returned deque (else nobody
        reads them): a relay drains them once it has written that chunk. Text and reasoning deltas there
        carry no text (``Adapter.lean``): the SDK, or the relay, reads the bytes."""
        self._events = deque()
        return self._events

    def ended_without_terminal(self) -> bool:
        return self.failure is not None and self.failure.record["outcome"]["edge"] == _EOF_EDGE

    def end(self, then: Callable[[TapRun], None] | None = None) -> None:
        """Seal the record and hand it to the sinks, once; ``then``: called with the run after it. A run whose
        record is kept (``keeps_record``) does so when its keeper calls again."""
        if self._ended:
            return
        if then is not None:
            self._then = then
        keeps = self.keeps_record
        if keeps is not None and keeps():
            return
        self._ended = True
        self._witness.settle(self.failure)
        self.reads.forget()
        record = self.core.seal()
        if record is not None:
            deliver(self.config.sinks, record)  # never raises; logs the run, then each sink in order
        then, self._then = self._then, None
        if then is not None:
            then(self)

    def _settle(self, failure: StreamFailed) -> StreamFailed:
        self.failure = detached(failure)
        self._witness.settle(self.failure)
        return self.failure


class _Decoded:
    """A wire under the HTTP library's own content decoder: the run decodes the bytes as the SDK does."""

    __slots__ = ("_decoder", "_wire", "feed")

    def __init__(self, wire: Wire, decoder: Any) -> None:
        self._wire, self._decoder, self.feed = wire, decoder, wire.feed

    def frames(self, chunk: bytes) -> list[Any]:
        return self._wire.frames(as_bytes(self._decoder.decode(chunk)))

    def end(self) -> list[StreamEvent]:
        wire = self._wire
        tail = [event for frame in wire.frames(as_bytes(self._decoder.flush())) for event in wire.feed(frame)]
        return tail + wire.end()

    def eof_detail(self) -> str | None:
        return self._wire.eof_detail()


class SyncTapRun(TapRun):
    """``TapRun`` for sync reads: the run's watchdog thread shuts the socket when a deadline passes."""

    reads: ThreadReads

    def _reader(self) -> ThreadReads:
        return ThreadReads(self.core)

    def _cancelled(self, exc: BaseException) -> bool:
        return False  # no event loop here: nothing is a cancellation
