"""How a run fails: a transport fault, an HTTP error, a protocol violation, an unfinished tool call or a local
end becomes the run's failure (its edge, facts, diagnosis and record). ``RunCore`` (``_core.py``) is a
``RunFailures``; the attributes below are the core's, set in its ``__init__``.

Each private step that ends the run raises its ``StreamFailed``; the public methods catch it (``_caught``)
and return it, or keep it for the driver (``_kept_failure``, ``take_failure``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NoReturn
from urllib.parse import urlsplit

from ...classify import (
    ENDPOINT_AT_ROOT,
    UNPARSEABLE_ARGUMENTS,
    AbortSource,
    Diagnosis,
    Facts,
    ProviderError,
    TransportFacts,
    TransportKind,
    diagnose,
    finish_cause,
    provider_error_from_http,
    shown_reason,
    transport_facts,
)
from ...machine import StreamMachine, Trigger
from ...wire import Finish, ProtocolViolation, StreamEvent, whole_answers_of
from ..records._record import Recorder, RunRecord
from ._cycles import release_traceback_cycles
from ._errors import StreamFailed
from ._ledger import Ledger

__all__ = ["ErrorBody", "RunFailures"]

# OpenAI's endpoints as a base_url without its /v1 makes them (the SDKs and open_stream append these)
_ENDPOINTS_AT_ROOT: Final = frozenset({"/chat/completions", "/responses"})
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


class ErrorBody:
    """An HTTP error's body, kept (bounded) while it is read: what the status alone cannot say."""

    __slots__ = ("body", "headers", "limit", "status")

    def __init__(self, status: int, headers: Mapping[str, str], limit: int) -> None:
        self.status, self.headers, self.limit, self.body = status, headers, limit, bytearray()

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.body)
        if room > 0:
            self.body += chunk[:room]

    @property
    def short(self) -> bool:
        """Still under its bound: worth reading on."""
        return len(self.body) < self.limit

    def error(self) -> ProviderError:
        return provider_error_from_http(self.status, self.headers, bytes(self.body))


class RunFailures:
    """The failing half of ``RunCore``: see the module docstring."""

    provider: str
    rec: Recorder
    machine: StreamMachine
    ledger: Ledger
    streaming: bool
    done: bool
    failure: StreamFailed | None
    abort_request: tuple[AbortSource, str | None] | None
    error_read: ErrorBody | None
    _record: RunRecord | None
    _diagnosis: Diagnosis | None

    if TYPE_CHECKING:  # the core's own

        @property
        def finished(self) -> bool: ...

        def _apply_all(self, events: Iterable[StreamEvent]) -> None: ...

        def _let_go(self) -> None: ...

    def fault(self, exc: Exception, edge: Trigger | None = None) -> StreamFailed:
        """A transport error: the failure it means. Before the headers, a connect fault (``edge``, where the
        driver knows better, e.g. that a connection existed); after them, a disconnect; while an HTTP error's
        body is read, the status says what happened."""
        if self.done:
            return self._settled()
        if self.error_read is not None:
            return self.http_error()
        return self._caught(self._read_fault if self.streaming else self._connect_fault, exc, edge)

    def local_end(self, exc: BaseException | None, *, cancelled: bool = False) -> StreamFailed:
        """The run stopped before its terminal event for a reason on our side of the wire: the consumer left
        (``exc`` None), a cancellation, the consumer's own error, or the application going away."""
        if self.done:
            return self._settled()
        if exc is None:
            return self.fail(Trigger.LOCAL_ABORT, self.abort_facts(AbortSource.CONSUMER_STOPPED, None))
        if cancelled:
            return self.fail(Trigger.LOCAL_ABORT, self.abort_facts(AbortSource.CANCELLED, None))
        if isinstance(exc, Exception):
            return self.fail(Trigger.CONSUMER_ERROR, self.facts())
        # KeyboardInterrupt, SystemExit, GeneratorExit: the application is going away
        return self.fail(Trigger.LOCAL_ABORT, self.abort_facts(AbortSource.APP, type(exc).__name__))

    def aborted(self) -> StreamFailed:
        """End the run as its requested abort (or, with none, as the consumer's own stop)."""
        if self.done:
            return self._settled()
        source, reason = self.abort_request or (AbortSource.CONSUMER_STOPPED, None)
        return self.fail(Trigger.LOCAL_ABORT, self.abort_facts(source, reason))

    def http_error(self, error: ProviderError | None = None) -> StreamFailed:
        """The run fails with its HTTP error status; ``error`` as the driver read it, else read here from the
        status, headers and the body ``feed`` kept."""
        if self.done:
            return self._settled()
        if error is None:
            read = self.error_read or ErrorBody(self.rec.status or 0, {}, 0)
            error = read.error()
        self.error_read = None
        return self.fail(Trigger.HTTP_ERROR, self.http_error_facts(error))

    def fail(
        self,
        edge: Trigger,
        facts: Facts | None = None,
        cause: BaseException | None = None,
        *,
        at: float | None = None,
    ) -> StreamFailed:
        """End the run failed by ``edge`` (the driver's own reading of what happened); ``at``: when, if
        earlier than now."""
        if self.done:
            return self._settled()
        return self._caught(self._fail, edge, self.facts() if facts is None else facts, cause, at)

    def facts(self, **overrides: Any) -> Facts:
        fields: dict[str, Any] = {"request_sent": self.rec.request_sent, **self.ledger.call_facts()}
        fields.update(overrides)
        return Facts(**fields)

    def http_error_facts(self, provider: ProviderError) -> Facts:
        """An HTTP error status's facts; a request to an OpenAI endpoint at the server's root says so (with
        a 404: a base_url without its /v1, which the summary then suggests)."""
        at_root = urlsplit(self.rec.url).path.rstrip("/") in _ENDPOINTS_AT_ROOT
        return self.facts(provider=provider, detail=ENDPOINT_AT_ROOT if at_root else None)

    def abort_facts(self, source: AbortSource, reason: str | None) -> Facts:
        self.rec.set_abort(source.value, reason)
        return self.facts(abort_source=source)

    def take_failure(self) -> StreamFailed | None:
        """The failure the last ``feed`` or ``end`` ended the run with (once; None if it did not)."""
        failure, self.failure = self.failure, None
        return failure

    def _caught(self, step: Callable[..., Any], *args: Any) -> StreamFailed:
        try:
            step(*args)
        except StreamFailed as failure:
            failure.__traceback__ = None  # the core's frames: a driver raises it afresh (its cause stays)
            return failure
        raise AssertionError("a failing step returned")

    def _kept_failure(self, failure: StreamFailed) -> None:
        failure.__traceback__ = None
        self.failure = failure

    def _settled(self) -> StreamFailed:
        """The failure of a run already over, again (without its cause)."""
        if self._diagnosis is None or self._record is None or self.finished:
            # A finished run's end is no failure, and a later one is no part of it.
            raise RuntimeError("the run has finished")
        return StreamFailed(self._diagnosis, self._record)

    def _violated(self, violation: ProtocolViolation) -> NoReturn:
        if violation.detail == UNPARSEABLE_ARGUMENTS:  # the provider ended a call that is not JSON
            before, violation.before = violation.before, ()  # the exception keeps no model output
            self._apply_all(before)  # the call's start, when the chunk that ended it carried it
            self._fail(Trigger.TOOL_INPUT_UNFINISHED, self.facts(detail=UNPARSEABLE_ARGUMENTS))
        self._fail(Trigger.PROTOCOL_VIOLATION, self.facts(detail=violation.detail), violation)

    def _read_fault(self, exc: Exception, edge: Trigger | None = None) -> NoReturn:
        facts = transport_facts(exc, headers_received=True)
        self.rec.transport = facts
        self._fail(edge or Trigger.DISCONNECTED, self.facts(transport=facts), exc)

    def _connect_fault(self, exc: Exception, edge: Trigger | None = None) -> NoReturn:
        facts: TransportFacts = transport_facts(exc, headers_received=False)
        if edge is None:
            if facts.kind is TransportKind.CONNECT_TIMEOUT:
                edge = Trigger.CONNECT_TIMEOUT
            elif facts.kind in _NOT_CONNECTED:
                edge = Trigger.CONNECT_FAILED
            else:  # a connection existed and broke before the headers: the request may have been delivered
                edge = Trigger.DISCONNECTED
                self.rec.request_sent = True
        self.rec.transport = facts
        self._fail(edge, self.facts(transport=facts), exc)

    def _unfinished_call(self, event: Finish) -> NoReturn:
        """The provider's terminal event arrived with a tool call still open (the adapters leave it open at a
        finish that is not a whole answer): the call was never complete and its tool never ran."""
        raw = self.rec.finish_raw = event.raw_reason
        self.rec.finish_unified = event.reason.value  # as _on_finish: the terminal event did arrive
        finish = finish_cause(whole_answers_of(self.provider), raw)
        facts = self.facts(finish=finish, detail=f"finish_reason={shown_reason(raw)}")
        self._fail(Trigger.TOOL_INPUT_UNFINISHED, facts)

    def _fail(
        self, edge: Trigger, facts: Facts, cause: BaseException | None = None, at: float | None = None
    ) -> NoReturn:
        """``at``: when the stream ended, if earlier than now."""
        if cause is not None:
            release_traceback_cycles(cause)
        from_state = self.machine.state
        final = self.machine.send(edge)
        self.rec.lifecycle(edge.value, final, at=at)
        diagnosis = diagnose(from_state, edge, facts)
        record = self.rec.finish(diagnosis, final, end=at)
        self._diagnosis, self._record, self.done = diagnosis, record, True
        self.error_read = None
        self._let_go()
        raise StreamFailed(diagnosis, record) from cause
