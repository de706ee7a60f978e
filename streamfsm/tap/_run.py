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
from ..classify._provider import provider_error_from_http
from ..classify._transport import transport_facts
from ..machine import Trigger
from ..runtime import (
    ConsumerEvent,
    Ids,
    RelayClose,
    Run,
    StreamConfig,
    StreamFailed,
    SyncReads,
    WholeBody,
    as_bytes,
)
from ..wire import StreamEvent, format_named
from ._notes import Witness, detached

_EOF_EDGE: Final = Trigger.EOF_WITHOUT_TERMINAL.value


class TapRun(Run):
    """One LLM call watched by the tap, streaming or one whole JSON answer (async reads: the loop's watchdog
    cancels a read's scope when its deadline passes)."""

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
        model = body.get("model")
        super().__init__(
            provider=adapter.name,
            model=model if isinstance(model, str) else None,
            body=body,
            url=url,
            delta_keys=adapter.delta_keys,
            config=config,
            ids=ids,
        )
        adapter.lean()  # the SDK reads the text from its own copy of the bytes; the run needs the kinds
        self._adapter = adapter
        # What the request asked for, where a bounded look could tell; the response decides (``connected``).
        self.asks_stream = asks_stream
        self._rec.request["streaming"] = asks_stream
        self._pending = deque(maxlen=0)  # the SDK reads the bytes; nobody reads our events
        self._entered = True
        self._error_body: bytearray | None = None  # an HTTP error's body, while the SDK reads it
        self._status = 0
        self._error_headers: Mapping[str, str] = {}
        self._ended = False
        self._decoder: Any = None
        self._cancel_means: tuple[AbortSource, str, RelayClose] | None = None
        self.failure: StreamFailed | None = None
        self.streams: bool | None = None  # once a 2xx response said it
        self._witness = Witness()  # for failure_of, when a framework raises an exception of its own

    def collect(self) -> TapRun:
        """As ``Run.collect``: the text is kept, so the deltas carry it again (see ``Adapter.lean``)."""
        self._adapter.lean(False)
        return super().collect()

    # -- what the transport reports -------------------------------------------------------------------

    def begin(self) -> None:
        self._machine.send(Trigger.REQUEST_SENT)
        self._rec.lifecycle(Trigger.REQUEST_SENT.value, self._machine.state)

    def connect_failed(self, exc: Exception) -> StreamFailed:
        return self._failed(self._connect_fault, transport_facts(exc, headers_received=False), exc)

    def timed_out(self, edge: Trigger) -> StreamFailed:
        """A watchdog fired (before the headers: the request may well have left)."""
        if not self._streaming:
            self._rec.request_sent = True
        return self._failed(self._fail_cancelled, edge)

    def connected(self, status: int, headers: Mapping[str, str], decoder: Any = None) -> None:
        """The headers arrived. ``decoder``: the library's own content decoder of an encoded body (the SDK
        decodes its copy of the bytes; the run decodes the same bytes the same way)."""
        rec = self._rec
        rec.request_sent = True
        rec.response_headers(status, headers)
        if 200 <= status < 300:
            # The response says whether the call streams: an event stream does, and so does the answer to a
            # request that asked for one (a JSON document there is the stream's failure, as it always was).
            rec.request["streaming"] = self.streams = self.asks_stream is True or self._format.is_stream(
                str(headers.get("content-type", ""))
            )
            if self.streams:
                self._read_wire(self._adapter)
            else:  # one JSON answer, read whole by the same adapter
                wire = self._wire = WholeBody(self._adapter, rec)
                self._frames_of, self._feed = wire.frames, self._adapter.feed
                rec.delta_keys = self._adapter.delta_keys
            if decoder is not None:
                self._decoder, wire_frames = decoder, self._frames_of
                self._frames_of = lambda chunk: wire_frames(as_bytes(decoder.decode(chunk)))
            self._headers_received()
        else:
            self._status, self._error_headers, self._error_body = status, headers, bytearray()

    @property
    def error_body_short(self) -> bool:
        """An HTTP error's body is being read and is still under its bound."""
        body = self._error_body
        return body is not None and not self._done and len(body) < self.config.max_error_body_bytes

    def chunk(self, chunk: bytes | None) -> StreamFailed | None:
        """The SDK read ``chunk`` (None: the body ended cleanly)."""
        body = self._error_body
        if body is None:
            try:
                self._apply_chunk(chunk)  # _caught, inlined: this is paid once per read
            except StreamFailed as failure:
                return self._settle(failure)
            except Exception as exc:  # the body does not decode: the SDK's read fails the same way
                return self._failed(self._read_failed, exc)
            return None
        if chunk is None:
            return self._http_error()
        room = self.config.max_error_body_bytes - len(body)
        if room > 0:
            body += chunk[:room]
        return None

    def read_failed(self, exc: Exception) -> StreamFailed:
        if self._error_body is not None:  # the status already says what happened
            return self._http_error()
        return self._failed(self._read_failed, exc)

    def stopped(self, exc: BaseException | None) -> StreamFailed:
        """The consumer closed the response before its end (``exc`` None), or the read was cancelled."""
        if self._error_body is not None:
            return self._http_error()
        request = self._abort_request
        cancelled = exc is not None and isinstance(exc, anyio.get_cancelled_exc_class())
        if request is None and cancelled and self._cancel_means is not None:
            request = self._cancel_means[:2]
            self._rec.relay_close = self._cancel_means[2]
        if request is not None and (exc is None or cancelled):
            source, reason = request  # abort() came first (between reads, or it cancelled the reader)
            self._finalize_failure(Trigger.LOCAL_ABORT, self._abort_facts(source, reason))
        else:
            self._end_locally(exc)
        assert self._record is not None
        assert self._diagnosis is not None
        self.failure = StreamFailed(self._diagnosis, self._record)
        self._witness.settle(self.failure)
        return self.failure

    def _eof_events(self) -> list[StreamEvent]:
        decoder, self._decoder = self._decoder, None
        if decoder is None or self._wire is None:
            return super()._eof_events()
        tail = [
            event for frame in self._wire.frames(as_bytes(decoder.flush())) for event in self._feed(frame)
        ]
        return tail + super()._eof_events()

    def discard(self) -> None:
        """End without a record: the response was not the stream (a redirect)."""
        self._ended = True
        self._witness.settle(None)
        if self._watch_entry is not None and self._loop_watchdog is not None:
            self._loop_watchdog.forget(self._watch_entry)
            self._watch_entry = None

    def abandoned(self) -> None:
        """The response was dropped unread and unclosed: the run ends as if the consumer stopped."""
        if self._ended:
            return
        entry, self._watch_entry = self._watch_entry, None
        if entry is not None:  # no loop to forget it on here: let go of the run, the timer finds nothing
            entry.callback = None
        if not self._done:
            if self._error_body is not None:
                self._http_error()
            else:
                reason = "the response was dropped without being closed"
                self._finalize_failure(
                    Trigger.LOCAL_ABORT, self._abort_facts(AbortSource.CONSUMER_STOPPED, reason)
                )
        self.end()

    # -- for a relay (streamfsm.relay), which writes the bytes downstream itself ---------------------------

    def keep_events(self) -> deque[ConsumerEvent]:
        """From now on, keep the consumer events each read chunk carries in the returned deque (else nobody
        reads them), for a relay to drain once it has written that chunk and report with ``relayed()``.
        Text and reasoning deltas there carry no text (``Adapter.lean``): the relay writes the bytes."""
        self._pending = deque()
        return self._pending

    def cancel_means(self, source: AbortSource, reason: str, close: RelayClose) -> None:
        """What a cancellation from outside (no ``abort()`` came first) means for this run: for a relay, its
        own shutdown (the ASGI server cancels what is still running once its grace period is over)."""
        self._cancel_means = (source, reason, close)

    def relay_closed(self, close: RelayClose) -> None:
        """The relay's own word on how the stream closed where the outcome cannot say it: a finished run
        whose terminal event never reached the client, the relay shutting down."""
        self._rec.relay_close = close

    def refused(self, reason: str, limit: str) -> None:
        """A relay refused the request before it went upstream (503: ``limit``, one of its own, was full):
        the run ends now as the relay's own abort, with the close kind ``overloaded`` and the limit named in
        the ``relay`` section, and its record goes to the sinks."""
        rec = self._rec
        rec.relayed(None, 0, False)
        assert rec.relay is not None
        rec.relay["limit"] = limit
        rec.relay_close = RelayClose.OVERLOADED
        self.failure = self._finalize_failure(Trigger.LOCAL_ABORT, self._abort_facts(AbortSource.APP, reason))
        self.end()

    def relayed_bytes(self, nbytes: int) -> None:
        """A relay wrote ``nbytes`` downstream that carried no consumer event of their own (the rest of a
        frame, a keepalive comment, ``data: [DONE]``, an error body; 0: the response started downstream):
        counted in the record's ``relay`` section, which this creates."""
        self._rec.relayed(None, nbytes, False)

    @property
    def terminal_relayed(self) -> bool:
        """Whether a relay reported the terminal event written downstream."""
        relay = self._rec.relay
        return relay is not None and bool(relay["terminal_sent"])

    def ended_without_terminal(self) -> bool:
        return self.failure is not None and self.failure.record["outcome"]["edge"] == _EOF_EDGE

    def end(self) -> None:
        """Seal the record and hand it to the sinks, once."""
        if self._ended:
            return
        self._ended = True
        self._witness.settle(self.failure)
        if self._watch_entry is not None and self._loop_watchdog is not None:
            self._loop_watchdog.forget(self._watch_entry)
            self._watch_entry = None
        self._seal()
        self._emit()

    # -- inside -----------------------------------------------------------------------------------------

    def _http_error(self) -> StreamFailed:
        body, self._error_body = bytes(self._error_body or b""), None
        error = provider_error_from_http(self._status, self._error_headers, body)
        return self._failed(self._fail, Trigger.HTTP_ERROR, self._http_error_facts(error))

    def _caught(self, step: Callable[..., Any], *args: Any) -> StreamFailed | None:
        """Run ``step``: the failure it raised (also kept as ``self.failure``), or None if the run goes on."""
        try:
            step(*args)
        except StreamFailed as failure:
            return self._settle(failure)
        return None

    def _settle(self, failure: StreamFailed) -> StreamFailed:
        self.failure = detached(failure)
        self._witness.settle(self.failure)
        return self.failure

    def _failed(self, step: Callable[..., Any], *args: Any) -> StreamFailed:
        failure = self._caught(step, *args)
        assert failure is not None, "a failing step returned"
        return failure


class SyncTapRun(SyncReads, TapRun):
    """``TapRun`` for sync reads: the run's watchdog thread shuts the socket when a deadline passes."""

    def end(self) -> None:
        self._watchdog.stop()
        super().end()

    def discard(self) -> None:
        self._watchdog.stop()
        super().discard()

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop the stream now, also from another thread: the read in progress is interrupted."""
        already = self._done or self._abort_request is not None
        super().abort(reason, source=source)
        if not already:
            self._watchdog.interrupt_now()
