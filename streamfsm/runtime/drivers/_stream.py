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

What happened is decided by the run core (``_core.RunCore``, no I/O); ``Run`` is its async driver: it
connects, reads under the watchdogs (``_reads.LoopReads``), and hands each chunk, fault and deadline to it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import anyio
import httpx

from ...classify import TransportKind, provider_error_from_http, transport_facts
from ...machine import Trigger
from ...wire import (
    Adapter,
    ConsumerEvent,
    ContinueRefusal,
    ContinueStyle,
    Result,
    ResumeRefusal,
    ToolCall,
    adapter_for,
    format_named,
    prefill_refused,
)
from ..core._config import AttemptLink, Ids, StreamConfig
from ..core._run_core import RunCore
from ..core._urls import check_base_url
from ..retry._recovery import RESUMABLE_EDGES, ContinuePlan, ResumePlan
from ._decoding import decoded_chunks, sync_decoded_chunks
from ._handle import ConsumerRun
from ._handle import ToolScope as ToolScope  # where the retry and the package import it from
from ._reads import LoopReads
from ._watchdog import loop_time, plain_scope_class

if TYPE_CHECKING:
    from .websocket import WebSocketConnection

_log = logging.getLogger("streamfsm")
_CLEANUP_TIMEOUT_S: Final = 5.0
_DRAIN_S: Final = 0.1  # what the openai SDK allows itself after [DONE]
_DRAIN_READS: Final = 64


async def _no_chunks() -> Any:
    raise StopAsyncIteration


_R = TypeVar("_R", bound="Run")


@functools.cache
def _default_tls() -> ssl.SSLContext:
    """httpx's default TLS context, built once: building one loads the CA bundle, ~30 ms, nearly all of what a
    fresh ``httpx.AsyncClient()`` costs. Like httpx, it honours SSL_CERT_FILE / SSL_CERT_DIR (read once)."""
    return httpx.create_ssl_context()


class Run(ConsumerRun):
    """One LLM stream. Use as ``async with``; iterate it for normalised events.

    The agent reports its own facts here: ``tool_started`` / ``tool_finished`` (or ``async with
    run.tool(call_id)``) for tool execution, and ``abort()`` to stop the stream with provenance.

    A driver of one ``RunCore``: the core holds the machine, the record, the tool ledger and how a run ends;
    this class connects, reads and times. A subclass's ``_connect`` supplies the source: the next chunk
    (``_next_chunk``) and the core's wire (``RunCore.headers``); ``_close_source`` ends it.
    """

    def __init__(self, core: RunCore) -> None:
        self._hold(core)
        # The source, set by the subclass's _connect: the next chunk (raises StopAsyncIteration at the clean
        # end; a StopIteration on a sync source).
        self._next_chunk: Callable[[], Awaitable[Any]] = _no_chunks
        self._response: Any = None  # the HTTP response whose body is read, once there is one

    def relink(self, attempts: tuple[AttemptLink, ...]) -> None:
        """The chain's earlier attempts, as they stand while this one goes on (a rival raced beside it ended
        after it opened): its record lists them."""
        ids = dataclasses.replace(self.ids, attempts=attempts)
        self.ids = ids
        self._core.relinked(ids)

    def _reader(self) -> Any:
        return LoopReads(self._core)

    async def _connect(self) -> None:
        """Start the request; on success the core has taken the headers."""
        raise NotImplementedError

    async def _close_source(self) -> None:
        return None

    # -- lifecycle --------------------------------------------------------------------------------------

    async def __aenter__(self) -> Run:
        if self._entered:
            raise RuntimeError("a Run can be entered only once; open a new stream for a new attempt")
        self._entered = True
        self._reads.scope_class = plain_scope_class()
        try:
            if self._core.abort_request is not None:  # aborted before it started: send nothing
                raise self._core.timed_out(Trigger.LOCAL_ABORT)
            await self._connect()
        except BaseException as exc:
            if not self._core.done:
                self._end_locally(exc)
            await self._cleanup()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._core.done:
                self._end_locally(exc)
            self._seal()
        finally:
            await self._cleanup(drain=exc is None and self.finished)

    def _end_locally(self, exc: BaseException | None) -> None:
        """The run stopped before its terminal event for a reason on our side of the wire."""
        cancelled = exc is not None and isinstance(exc, anyio.get_cancelled_exc_class())
        self._core.local_end(exc, cancelled=cancelled)

    async def _cleanup(self, drain: bool = False) -> None:
        self._reads.forget()
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

    # -- streaming --------------------------------------------------------------------------------------

    def __aiter__(self) -> Run:
        return self

    async def __anext__(self) -> ConsumerEvent:
        pending = self._pending
        core = self._core
        while not pending:
            if self._over():
                raise StopAsyncIteration
            self._took(core.took(await self._reads.read(self._next_chunk)))
        return pending.popleft()


def traced(core: RunCore, name: str) -> bool:
    """httpcore's trace ``name``: the step of the request it completes, told to the core; True for the
    connection made."""
    if not name.endswith(".complete"):
        return False
    if "connect_tcp" in name or "connect_unix" in name:
        core.lifecycle("connected")
        return True
    if "send_request_body" in name:
        core.request_left()
        core.lifecycle("request_written")
    return False


def _result(
    text: list[str], reasoning: list[str], refusal: list[str], calls: Iterable[ToolCall], run: Run
) -> Result:
    """A retry's result: its text and calls across attempts, with the last attempt's usage and finish."""
    return run._core.result_of(text, reasoning, refusal, calls)


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
        resume = self._resumes = format_named(adapter.name).resume  # the format's cursor, if it has one
        self._background = resume is not None and resume.asked(original)
        if isinstance(plan, ResumePlan):
            if resume is None:
                raise ValueError(f"a {adapter.name} stream has no cursor to resume by")
            adapter = resume.resumed(plan.adapter)
            url, self._method, self._resume = (
                resume.url(base_url, plan.response_id, plan.starting_after),
                "GET",
                plan,
            )
        self.resume_refusal: ResumeRefusal | None = None  # why the provider refused this resume, if it did
        super().__init__(RunCore.for_request(adapter, json, url, config=config, ids=ids))
        self._adapter = adapter
        self._url, self._body = url, body
        self._headers = dict(headers or {})
        self._client = client
        self._owns_client = client is None
        self._connected = False
        if isinstance(plan, ContinuePlan):
            self._core.recovery(plan.record(self._sent_as))
        elif plan is not None:
            self._core.recovery(plan.record())
        if self._resume is not None:
            self._core.response_known(self._resume.response_id)

    async def _trace(self, name: str, info: Mapping[str, Any]) -> None:
        if traced(self._core, name):
            self._connected = True

    async def _connect(self) -> None:
        config = self.config
        core = self._core
        if self._client is None:
            # Made before the clock starts: its first making imports the transport (httpcore, trio with it,
            # a second or more), which is no part of the upstream's time to answer.
            self._client = httpx.AsyncClient(verify=_default_tls())
        core.begin()
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
        deadline, edge = core.timing.connect_deadline(core.clock())
        response: httpx.Response | None = None
        reads = self._reads
        with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
            reads.scope = scope
            try:
                response = await self._client.send(request, stream=True)
            except Exception as exc:
                kind = transport_facts(exc, headers_received=False).kind
                if kind is TransportKind.CONNECT_TIMEOUT:
                    fault = Trigger.CONNECT_TIMEOUT
                elif self._connected or kind is TransportKind.CLOSED_BEFORE_RESPONSE:
                    fault = Trigger.DISCONNECTED
                else:
                    fault = Trigger.CONNECT_FAILED
                raise core.fault(exc, fault)  # noqa: B904  # chained from exc by the core
            finally:
                # Every traced step has happened; the response keeps its request, which would keep the run.
                request.extensions.pop("trace", None)  # an event hook may have rebuilt the extensions
        reads.scope = None
        if response is None:
            raise core.timed_out(edge)
        self._response = reads.response = response
        status = response.status_code
        if not 200 <= status < 300:
            core.headers(status, response.headers)
            body = await self._read_error_body(response, deadline, edge)
            error = provider_error_from_http(response.status_code, response.headers, body)
            resumes = self._resumes
            if (
                self._resume is not None
                and resumes is not None
                and 400 <= response.status_code < 500
                and response.status_code != 429
            ):
                self.resume_refusal, basis = resumes.refusal_of(response.status_code, body)
                core.recovery(
                    {**self._resume.record(), "refused": self.resume_refusal.value, "refused_by": basis}
                )
            if self._sent_as == ContinueStyle.PREFILL.value and prefill_refused(response.status_code, body):
                # The model takes no prefill (Anthropic's current ones): the executor goes on by instruction.
                self.continue_refusal = refusal = ContinueRefusal.PREFILL_UNSUPPORTED
                core.recovery({**(core.recovery_facts or {}), "refused": refusal.value})
                marker = f"continue_refused={refusal.value}"
                error = dataclasses.replace(error, markers=(marker, *error.markers))
            raise core.http_error(error)
        self._next_chunk = body_chunks(response).__anext__
        core.headers(status, response.headers, core.stream_wire(self._adapter))
        if self._resume is not None:  # the stream goes on where it stopped: so does the machine
            call = self._adapter._call  # the call whose arguments were streaming when the stream broke
            core.resumed(self._resume.priming(), None if call is None else (call.call_id, call.name))

    def resume_plan(self) -> ResumePlan | None:
        """How to re-attach to this run's stream after its failure, when the provider allows it: a background
        Responses stream whose id is known, broken by the connection or a watchdog, not by the response."""
        diagnosis = self._core.diagnosis
        adapter = self._adapter
        if (
            diagnosis is None
            or diagnosis.edge not in RESUMABLE_EDGES
            or not (self._background or self._resume is not None)
            or not self._core.streaming
            or self._resumes is None
        ):
            return None
        cursor = self._resumes.cursor(adapter)
        if cursor is None:
            return None
        return ResumePlan(*cursor, adapter, diagnosis.state)

    async def _read_error_body(self, response: httpx.Response, deadline: float, edge: Trigger) -> bytes:
        core = self._core
        with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
            self._reads.scope = scope
            try:
                async for chunk in response.aiter_bytes():
                    core.feed(chunk)  # kept, bounded
                    if core.error_read is None or not core.error_read.short:
                        break
            except Exception:
                pass  # the status already says what happened; a broken error body only loses detail
        self._reads.scope = None
        if scope.cancelled_caught and core.abort_request is not None:
            raise core.timed_out(edge)
        return bytes(core.error_read.body) if core.error_read is not None else b""

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


def open_stream(
    provider: str,
    *,
    base_url: str,
    json: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | WebSocketConnection | None = None,
    config: StreamConfig | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
) -> HttpRun:
    """Open one streaming request to ``provider`` (a registered format: ``streamfsm.wire.FORMAT_NAMES``).

    Use it as an async context manager; the request is sent on entry. ``headers`` carries auth and is never
    recorded. ``client`` is used and left open when given; otherwise the run owns a fresh client. A
    ``base_url`` that is not an http(s) URL with a host raises ``ValueError`` at once: nothing is sent. A
    ``ws://`` or ``wss://`` one runs the format's WebSocket mode (``runtime.drivers.websocket``; ``client``
    is then a ``WebSocketConnection`` that runs share one response after another).
    """
    if base_url.startswith(("ws://", "wss://")):
        from .websocket import (
            WebSocketConnection,
            WebSocketRun,
        )  # the websocket extra, loaded when it is used

        if client is not None and not isinstance(client, WebSocketConnection):
            raise TypeError("a WebSocket run's client is a WebSocketConnection")
        return WebSocketRun(  # type: ignore[return-value]  # a Run; HttpRun's recovery hooks say None
            provider, base_url=base_url, json=json, headers=headers, client=client, config=config, ids=ids
        )
    http_client = cast("httpx.AsyncClient | None", client)
    return HttpRun(
        provider, base_url=base_url, json=json, headers=headers, client=http_client, config=config, ids=ids
    )
