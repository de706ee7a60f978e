"""The tap: httpx / httpx2 transports that hand the SDK every byte unchanged and drive a run from the same
bytes, as the SDK reads them.

The tap wraps an inner transport of the same library. A request on a format's path (``_rules``: an LLM
call, whatever its body's size; the body is never copied) starts a ``TapRun``; its response says whether the
call streams (``TapRun.connected``), and the response's byte stream is replaced by one that reads the inner
stream and feeds each chunk, as it is, to the run on its way to the SDK: no extra read, no buffering, the
same chunks (a non-streaming answer is read whole by the run at its end). Everything else passes through
untouched.

What the SDK sees differs only where streamfsm adds something:

* a fault raised by the library (connect error, read error) is raised unchanged, carrying the run's failure
  (``failure_of``) and its plain summary as a note;
* a watchdog fails the read with the library's own ``ReadTimeout`` (so the SDK reports a timeout);
* a clean end of a stream without the format's terminal event fails the read with the library's
  ``RemoteProtocolError`` (``strict_eof``; by default wherever an SDK reads a stream: none tells such an end
  from a whole answer's);
* a chunk that fails the run in a way the bytes do not show the SDK (a protocol violation: an oversize line,
  an event out of order; anything but the provider's own error, which the SDK reads there) is handed on, and
  the SDK's next read fails with the library's ``RemoteProtocolError`` (else the SDK would read on, maybe
  into a stall that no timeout of its own bounds);
* an HTTP error response the SDK closes without reading its body (to retry) is read first, for at most
  0.1 s and ``max_error_body_bytes``, so that the record can name the error.

A sync read cannot be cancelled: before the headers, the wait is bounded by capping the request's own
timeouts at the connect deadline; after them, the run's watchdog thread shuts the socket down.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib
import queue
import re
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Final

import anyio

from ..machine import Trigger
from ..runtime import (
    END,
    MAX_ATTEMPT_LINKS,
    STOP,
    AttemptLink,
    Ids,
    LoopReads,
    StreamConfig,
    StreamFailed,
    content_decoder,
    loop_time,
    plain_scope_class,
    socket_of,
)
from ._context import current_ids, first_token_bound, relay_started, relayed, relayed_for
from ._notes import attach, remember
from ._rules import Rule, check_rules, llm_request
from ._run import SyncTapRun, TapRun

LIBRARIES: Final = ("httpx", "httpx2")
# The SDKs' own retry headers: openai's and anthropic's count (0 on the first request), botocore's attempt
# ("attempt=2; max=5") with an invocation id that all attempts of one call share.
_RETRY_COUNT: Final = "x-stainless-retry-count"
_AWS_REQUEST: Final = "amz-sdk-request"
_AWS_INVOCATION: Final = "amz-sdk-invocation-id"
# An application's own word that a request is attempt N (1, 2, ...) of one call: for clients whose retries
# carry no count of their own.
ATTEMPT_HEADER: Final = "x-streamfsm-attempt"
_AWS_ATTEMPT: Final = re.compile(r"(?:^|;)\s*attempt=(\d{1,4})\s*(?:;|$)")
_MAX_CHAINS: Final = 256
_RESENT_WITHIN_S: Final = 300.0
_ERROR_BODY_S: Final = 0.1  # for an error body the SDK closes unread; the openai SDK's own drain bound
_IN_BAND_ERROR: Final = Trigger.PROVIDER_ERROR_EVENT.value  # a failure the SDK reads in the bytes itself


# -- the SDK's own retries ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ended:
    trace_id: str
    run_id: str
    attempt: int
    links: tuple[AttemptLink, ...]
    summary_key: str
    verdict: str
    failed: bool
    at: float  # time.monotonic()


def _said_retry(headers: Any) -> str | None:
    """The decision a request's own headers state: ``sdk_retry`` (the SDK counts it a retry), ``resent`` (the
    application's ``x-streamfsm-attempt`` above 1), or None (a first attempt, or nothing said)."""
    if _above(headers.get(_RETRY_COUNT), 0):
        return "sdk_retry"
    aws = headers.get(_AWS_REQUEST)
    if aws is not None and (found := _AWS_ATTEMPT.search(aws)) is not None and int(found[1]) > 1:
        return "sdk_retry"
    if _above(headers.get(ATTEMPT_HEADER), 1):
        return "resent"
    return None


def _above(value: str | None, floor: int) -> bool:
    return value is not None and value.isdigit() and len(value) <= 4 and int(value) > floor


class _Chains:
    """Retries of one call become one attempt chain: one trace id, the attempt counted, the earlier attempts
    listed. A retry is the same request (method, URL, body; botocore's invocation id) of the same client sent
    again, as its headers say (``_said_retry``). In a relay the client is the account and address the relay
    names (``relaying``), so a chain never joins two accounts, and equal bodies alone never make a retry; in
    an application (one tap, one client), the same request sent again within ``_RESENT_WITHIN_S`` of its
    failure is one too (``resent``: LiteLLM's, the Agents SDK runner's and google-genai's retries carry no
    count)."""

    def __init__(self) -> None:
        self._ended: OrderedDict[bytes, _Ended] = OrderedDict()
        self._lock = threading.Lock()  # a sync client may be shared by threads

    def ids(self, request: Any, content: bytes) -> tuple[Ids, bytes]:
        base = current_ids() or Ids()
        client = relayed_for()
        headers = request.headers
        digest = hashlib.blake2b(
            b"%s %s\n" % (request.method.encode(), str(request.url).encode()), digest_size=16
        )
        if client is not None:
            digest.update(b"%d:%s" % (len(client), client))
        invocation = headers.get(_AWS_INVOCATION)
        if invocation is not None:
            digest.update(b"aws:%s\n" % invocation.encode("utf-8", "replace"))
        digest.update(content)  # hashed where it lies: a large body is not copied
        key = digest.digest()
        said = _said_retry(headers)
        if said is None and client is not None:
            return base, key
        with self._lock:
            before = self._ended.get(key)
        if before is None:
            return base, key
        if said is not None:
            decision = said
        elif before.failed and time.monotonic() - before.at <= _RESENT_WITHIN_S:
            decision = "resent"
        else:
            return base, key
        link = AttemptLink(
            run_id=before.run_id,
            attempt=before.attempt,
            summary_key=before.summary_key,
            verdict=before.verdict,
            decision=decision,
        )
        ids = replace(
            base,
            trace_id=before.trace_id,
            attempt=before.attempt + 1,
            previous_run_id=before.run_id,
            attempts=(*before.links, link)[-MAX_ATTEMPT_LINKS:],
        )
        return ids, key

    def ended(self, key: bytes, run: TapRun) -> None:
        record = run.record
        if record is None:
            return
        ended = _Ended(
            trace_id=run.trace_id,
            run_id=run.run_id,
            attempt=run.ids.attempt,
            links=run.ids.attempts,
            summary_key=record.summary_key,
            verdict=record.verdict,
            failed=not run.finished,
            at=time.monotonic(),
        )
        with self._lock:
            self._ended[key] = ended
            self._ended.move_to_end(key)
            while len(self._ended) > _MAX_CHAINS:
                self._ended.popitem(last=False)


# -- what both transports share ---------------------------------------------------------------------------


class _Tap:
    _streams: _Streams  # set per library

    def __init__(
        self,
        inner: Any,
        *,
        library: ModuleType,
        config: StreamConfig | None,
        rules: Iterable[Rule],
        strict_eof: bool | None,
    ) -> None:
        self._inner = inner
        self._library = library
        self._config = config or StreamConfig()
        if not isinstance(self._config, StreamConfig):
            raise TypeError(f"config must be a streamfsm.StreamConfig, not {type(config).__name__}")
        self._rules = check_rules(rules)
        self._strict_eof = None if strict_eof is None else bool(strict_eof)
        self._chains = _Chains()

    def _run_for(self, request: Any, cls: type[TapRun]) -> tuple[TapRun, bytes] | None:
        try:
            content = request.content
        except self._library.RequestNotRead:
            # A redirect the client follows carries the first request's body as a stream: in memory, reading
            # it is safe (and what the client sends anyway); a streamed upload is no SDK's JSON request.
            if not isinstance(request.stream, self._library.ByteStream):
                return None
            content = request.read()
        url = request.url
        call = llm_request(self._rules, request.method, url.path, url.params, content)
        if call is None:
            return None
        ids, key = self._chains.ids(request, content)
        try:
            run = cls(
                call.provider,
                body=call.body,
                url=str(url),
                config=self._config,
                ids=ids,
                asks_stream=call.streams,
            )
        except ImportError as missing:  # a format whose extra is not installed (Bedrock's): pass it untouched
            _unreadable(call.provider, str(missing))
            return None
        bound = first_token_bound()
        if bound is not None:  # a route's deadline (the relay's route table), before the run starts
            run.core.bound_first_token(bound)
        started = relay_started()
        if started is not None:  # a relay's run: the relay takes it on before it begins
            started(run)
        run.begin()
        return run, key

    def _own(self, request: Any, make: str) -> None:
        """A request of the other HTTP library (a client of httpx given a tap of httpx2) would fail deep
        inside the library, with a bare ``AssertionError``: say which tap its client needs."""
        if isinstance(request, self._library.Request):
            return
        ours = self._library.__name__
        theirs = type(request).__module__.partition(".")[0]
        if theirs in LIBRARIES:
            raise TypeError(
                f"this streamfsm tap is {ours}'s (by default the library of the installed SDKs), but its"
                f" client is {theirs}'s: make it with http={theirs!r}: streamfsm.tap.{make}(http={theirs!r})"
            )
        raise TypeError(f"this streamfsm tap takes {ours} requests, not {type(request).__qualname__}")

    def _timeout(self, failure: StreamFailed, request: Any) -> BaseException:
        error: BaseException = self._library.ReadTimeout(str(failure), request=request)
        attach(error, failure)
        return error

    def _cut(self, failure: StreamFailed, request: Any) -> BaseException:
        error: BaseException = self._library.RemoteProtocolError(str(failure), request=request)
        attach(error, failure)
        return error

    def _tapped(self, response: Any, run: TapRun, request: Any) -> bool:
        """The response's headers arrived: whether its body is the run's to read (not a redirect)."""
        if _redirect(response, run):
            return False
        run.connected(response.status_code, response.headers, content_decoder(response))
        run.reads.socket = socket_of(response)  # what arrived is looked at before a watchdog fires
        remember(run, response, request)
        return True


class _StreamBase:
    def __init__(self, inner: Any, run: TapRun, tap: _Tap, request: Any, key: bytes) -> None:
        self._inner = inner
        self._run: TapRun | None = run
        self._tap = tap
        self._request = request
        self._key = key
        # Exactly one record per stream, also when the SDK drops the response unread and unclosed.
        self._dropped = weakref.finalize(self, _dropped, run, tap._chains, key)
        # An SDK reads the bytes, not the run: what it cannot see there, its reads are told (a relay reads
        # the run itself). A non-streaming answer cut at a clean end fails the SDK's own JSON parse.
        self._tells_reads = not relayed()
        strict = tap._strict_eof
        self._strict_eof = (self._tells_reads and run.streams is True) if strict is None else strict
        self._owed: StreamFailed | None = None  # the failure the next read raises

    def _owed_error(self) -> BaseException:
        failure, self._owed = self._owed, None
        assert failure is not None
        return self._tap._cut(failure, self._request)

    def _chunk_failed(self, failure: StreamFailed) -> None:
        """A watched read's chunk ended the run failed. A failure the bytes do not show the SDK fails the next
        read (this chunk reaches the SDK as it came); the record goes out now."""
        if self._tells_reads and failure.record["outcome"]["edge"] != _IN_BAND_ERROR:
            self._owed = failure
        self._end()

    def _end(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            self._dropped.detach()
            run.end(functools.partial(self._tap._chains.ended, self._key))

    def _failed(self, exc: BaseException, failure: StreamFailed | None) -> None:
        if failure is not None:
            attach(exc, failure)
        self._end()

    def _handed_on(self, run: TapRun, got: Any, stop: type[Exception]) -> bytes:
        """How a watched read ended, through the run's read door, handed on to the SDK as bytes: the chunk
        as it came (a failure the bytes do not show fails the next read), the clean end (``strict_eof``
        fails a stream that ended without its terminal event), the library's own ``ReadTimeout`` for a
        watchdog or ``abort()``, and the read's own fault, each carrying the run's failure."""
        # A chunk through chunk(), the tap's per-chunk step (the benchmarks take its layers apart there).
        failure = run.chunk(got) if got.__class__ is bytes else run.took(got)
        if got.__class__ is bytes:
            if failure is not None:
                self._chunk_failed(failure)
            return got
        if got is END:
            self._end()
            if failure is not None and self._strict_eof and run.ended_without_terminal():
                raise self._tap._cut(failure, self._request)
            raise stop
        if isinstance(got, Exception):
            self._failed(got, failure)
            try:
                raise got
            finally:  # see __anext__
                got = None
        assert failure is not None  # DEADLINE, STOP: the run is over
        self._end()
        raise self._tap._timeout(failure, self._request)

    # A read whose run is over (or that reads an error body): the bytes pass through; the run, if still
    # reading an error body, takes them.

    def _passed_chunk(self, run: TapRun | None, chunk: bytes) -> bytes:
        if run is not None and not run.done:
            run.chunk(chunk)
        return chunk

    def _passed_end(self, run: TapRun | None) -> None:
        if run is not None and not run.done:
            run.chunk(None)
        self._end()

    def _passed_fault(self, run: TapRun | None, exc: Exception) -> None:
        self._failed(exc, run.read_failed(exc) if run is not None and not run.done else None)


def _dropped(run: TapRun, chains: _Chains, key: bytes) -> None:
    # A finalizer may run inside a garbage collection on any thread, maybe while a user's sink holds its
    # lock: the run is ended, and its record delivered, on a thread of its own.
    global _deliverer
    _ABANDONED.put((run, chains, key))
    with _DELIVERER_LOCK:  # reentrant: a collection may come while this very thread holds it
        if _deliverer is None:
            _deliverer = threading.Thread(target=_deliver_abandoned, name="streamfsm-abandoned", daemon=True)
            _deliverer.start()


def _deliver_abandoned() -> None:
    global _deliverer
    while True:
        try:
            run, chains, key = _ABANDONED.get(timeout=1.0)
        except queue.Empty:
            with _DELIVERER_LOCK:
                if _ABANDONED.empty():
                    _deliverer = None
                    return
            continue
        run.abandoned()
        chains.ended(key, run)


@atexit.register
def _deliver_at_exit() -> None:
    # weakref.finalize calls _dropped for what is still alive at exit (its hook runs before this one): the
    # daemon thread may not get to it, so deliver here.
    while not _ABANDONED.empty():
        run, chains, key = _ABANDONED.get_nowait()
        run.abandoned()
        chains.ended(key, run)


_ABANDONED: Final[queue.SimpleQueue[tuple[TapRun, _Chains, bytes]]] = queue.SimpleQueue()
_DELIVERER_LOCK: Final = threading.RLock()
_deliverer: threading.Thread | None = None


# -- async ------------------------------------------------------------------------------------------------


class _AsyncTapStream(_StreamBase):
    _next: Any = None

    def __aiter__(self) -> _AsyncTapStream:
        if self._next is None:
            self._next = self._inner.__aiter__().__anext__
        return self

    async def __anext__(self) -> bytes:
        if self._owed is not None:
            raise self._owed_error()
        run = self._run
        if run is None or run.done or run.core.error_read is not None:  # over, or reading an error body
            return await self._passed(run)
        if run.core.abort_request is not None:  # abort() between reads: the next read fails as one it ended
            return self._handed_on(run, STOP, StopAsyncIteration)
        reads = run.reads
        assert isinstance(reads, LoopReads)
        try:
            got = await reads.read(self._next)
        except BaseException as exc:
            if self._run is not None:  # cancelled from outside, or the application is going away
                self._failed(exc, run.failure if run.done else run.stopped(exc))
            raise
        try:
            return self._handed_on(run, got, StopAsyncIteration)
        finally:  # a fault raised through this frame: its traceback holds the frame, which must not hold it
            got = None

    async def _passed(self, run: TapRun | None) -> bytes:
        """The run is over (or reads an error body, unwatched): the bytes pass through."""
        try:
            chunk: bytes = await self._next()
        except StopAsyncIteration:
            self._passed_end(run)
            raise
        except Exception as exc:
            self._passed_fault(run, exc)
            raise
        return self._passed_chunk(run, chunk)

    async def aclose(self) -> None:
        run = self._run
        try:
            if run is not None and run.error_body_short:
                await self._read_error_body(run)
        finally:  # also when the close is cancelled: the run still ends, once
            if run is not None and not run.done:
                run.stopped(None)
            self._end()
            await self._inner.aclose()

    async def _read_error_body(self, run: TapRun) -> None:
        """The SDKs close an error response they retry without reading it: read its body (bounded, briefly),
        so that the record says what the status alone cannot (a quota exhausted, not a rate limit)."""
        self.__aiter__()
        with anyio.move_on_after(_ERROR_BODY_S):
            try:
                while run.error_body_short:
                    run.chunk(await self._next())
            except StopAsyncIteration:
                run.chunk(None)
            except Exception:  # a broken error body only loses detail: the status says what happened
                pass


# The HTTP library's first step of sending a request (httpcore's trace names): a new connection's connect, or
# the request's headers on a connection it reuses. Before it, the request waited in our own pool or loop.
_LEAVING: Final = ("connection.connect_tcp.started", "connection.connect_unix.started")
_HEADERS_LEAVING: Final = ".send_request_headers.started"  # http11. / http2.


class _Leaving:
    """httpcore's trace hook (beside any the caller set): when the request begins to leave, the connect
    watchdog's deadline is counted again from then, so that only the upstream's connect and first byte are
    timed against ``connect_timeout``, not the wait for a pooled connection or a busy event loop."""

    __slots__ = ("edge", "extensions", "inner", "run", "scope")

    def __init__(self, run: TapRun, extensions: dict[str, Any]) -> None:
        self.run = run
        self.inner = extensions.get("trace")
        self.extensions = {**extensions, "trace": self}  # the request's while it is sent
        self.scope: anyio.CancelScope | None = None
        self.edge: Trigger | None = None  # set once the deadline moved

    async def __call__(self, name: str, info: Any) -> None:
        scope = self.scope
        if self.edge is None and scope is not None and (name in _LEAVING or name.endswith(_HEADERS_LEAVING)):
            deadline, self.edge = self.run.core.timing.connect_deadline(time.monotonic())
            scope.deadline = loop_time(deadline)
            # Done: httpcore looks the hook up at each step, so the steps after this one go untraced.
            if self.inner is None:
                del self.extensions["trace"]
            else:
                self.extensions["trace"] = self.inner
        if self.inner is not None:
            await self.inner(name, info)


class _AsyncTap(_Tap):
    async def handle_async_request(self, request: Any) -> Any:
        self._own(request, "async_transport")
        started = self._run_for(request, TapRun)
        if started is None:
            return await self._inner.handle_async_request(request)
        run, key = started
        assert isinstance(run.reads, LoopReads)
        run.reads.scope_class = plain_scope_class()
        response: Any = None
        extensions = request.extensions
        leaving = _Leaving(run, extensions)
        if not run.asks_stream:
            # A call not known to stream: its headers may come only once the whole answer is generated, so
            # the connect watchdog (request to headers) does not apply; the total deadline does.
            deadline, edge = run.core.timing.total_deadline, Trigger.TOTAL_TIMEOUT
        elif isinstance(self._inner, self._library.AsyncHTTPTransport):
            # Its pool says when the request leaves: the connect watchdog starts then (the pool's own
            # timeout bounds the wait before).
            deadline, edge = run.core.timing.total_deadline, Trigger.TOTAL_TIMEOUT
            request.extensions = leaving.extensions
        else:  # a transport of the caller's: counted from the run's start
            deadline, edge = run.core.timing.connect_deadline()
        try:
            with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
                leaving.scope = scope
                try:
                    response = await self._inner.handle_async_request(request)
                except Exception as exc:
                    if scope.cancel_called:
                        raise self._timeout(run.timed_out(leaving.edge or edge), request) from exc
                    attach(exc, run.connect_failed(exc))
                    raise
                finally:
                    request.extensions = extensions  # the response keeps its request: not the run
        except BaseException as exc:
            if not run.done:
                run.stopped(exc)
            run.end()
            self._chains.ended(key, run)
            remember(run, request)
            raise
        if response is None:  # the connect watchdog fired
            failure = run.timed_out(leaving.edge or edge)
            run.end()
            self._chains.ended(key, run)
            remember(run, request)
            raise self._timeout(failure, request)
        if not self._tapped(response, run, request):
            return response
        response.stream = self._streams.stream(response.stream, run, self, request, key)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


# -- sync -------------------------------------------------------------------------------------------------


class _SyncTapStream(_StreamBase):
    _next: Any = None

    def __iter__(self) -> _SyncTapStream:
        if self._next is None:
            self._next = iter(self._inner)
        return self

    def __next__(self) -> bytes:
        if self._owed is not None:
            raise self._owed_error()
        run = self._run
        if run is None or run.done or run.core.error_read is not None:  # over, or reading an error body
            return self._passed(run)
        assert isinstance(run, SyncTapRun)
        try:
            got = run.reads.read(self._next)
        except BaseException as exc:  # the application is going away
            self._failed(exc, run.stopped(exc))
            raise
        try:
            return self._handed_on(run, got, StopIteration)
        finally:  # a fault raised through this frame: its traceback holds the frame, which must not hold it
            got = None

    def _passed(self, run: TapRun | None) -> bytes:
        try:
            chunk: bytes = next(self._next)
        except StopIteration:
            self._passed_end(run)
            raise
        except Exception as exc:
            self._passed_fault(run, exc)
            raise
        return self._passed_chunk(run, chunk)

    def close(self) -> None:
        run = self._run
        try:
            if run is not None and not run.done:
                run.stopped(None)
            self._end()
        finally:
            self._inner.close()


class _SyncTap(_Tap):
    def handle_request(self, request: Any) -> Any:
        self._own(request, "transport")
        started = self._run_for(request, SyncTapRun)
        if started is None:
            return self._inner.handle_request(request)
        run, key = started
        assert isinstance(run, SyncTapRun)
        # A call not known to stream waits for its headers as long as the total deadline allows (see async).
        deadline, edge = (
            run.core.timing.connect_deadline()
            if run.asks_stream
            else (run.core.timing.total_deadline, Trigger.TOTAL_TIMEOUT)
        )
        timeouts = request.extensions.get("timeout")
        capped = _capped(timeouts, deadline - time.monotonic())
        if capped is not None:
            request.extensions["timeout"] = capped
        try:
            response = self._inner.handle_request(request)
        except Exception as exc:
            # Past the deadline, the cap made it time out: our watchdog's.
            late = time.monotonic() >= deadline and isinstance(exc, self._library.TimeoutException)
            attach(exc, run.timed_out(edge) if late else run.connect_failed(exc))
            raise
        except BaseException as exc:
            if not run.done:
                run.stopped(exc)
            raise
        finally:
            if capped is not None:
                request.extensions["timeout"] = timeouts  # the body's reads keep the caller's timeouts
            if run.done:
                run.end()
                self._chains.ended(key, run)
                remember(run, request)
        if not self._tapped(response, run, request):
            return response
        run.reads.response = response  # without an HTTP/1.1 socket to shut, the watchdog closes the response
        response.stream = self._streams.sync_stream(response.stream, run, self, request, key)
        return response

    def close(self) -> None:
        self._inner.close()


def _redirect(response: Any, run: TapRun) -> bool:
    """A redirect is not the stream: the client follows it (with a request the tap watches) or hands it on.
    Its run ends unrecorded."""
    if not (300 <= response.status_code < 400 and "location" in response.headers):
        return False
    run.discard()
    return True


def _capped(timeouts: Any, left: float) -> dict[str, Any] | None:
    """The request's timeouts, none longer than ``left`` seconds (so the headers' wait ends by then)."""
    if left == float("inf"):
        return None
    left = max(left, 0.001)
    given = timeouts if isinstance(timeouts, Mapping) else {}
    return {
        name: left if given.get(name) is None else min(float(given[name]), left)
        for name in ("connect", "read", "write", "pool")
    }


# -- per library ------------------------------------------------------------------------------------------


class _Streams:
    """The byte-stream classes of one library (its client asserts the response stream is one of its own)."""

    def __init__(self, library: ModuleType) -> None:
        self.async_class = type("TappedAsyncStream", (_AsyncTapStream, library.AsyncByteStream), {})
        self.sync_class = type("TappedStream", (_SyncTapStream, library.SyncByteStream), {})

    def stream(self, inner: Any, run: TapRun, tap: _Tap, request: Any, key: bytes) -> Any:
        return self.async_class(inner, run, tap, request, key)

    def sync_stream(self, inner: Any, run: TapRun, tap: _Tap, request: Any, key: bytes) -> Any:
        return self.sync_class(inner, run, tap, request, key)


@functools.cache  # said once per format: every later call of it passes the same way
def _unreadable(provider: str, why: str) -> None:
    warnings.warn(f"streamfsm's tap passes {provider} calls untapped: {why}", RuntimeWarning, stacklevel=3)


@functools.cache
def library(name: str) -> tuple[ModuleType, type, type, _Streams]:
    """(module, async transport class, sync transport class, streams) of ``httpx`` or ``httpx2``."""
    if name not in LIBRARIES:
        raise ValueError(f"http must be one of {', '.join(LIBRARIES)}, not {name!r}")
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"the tap for {name} needs {name} installed ({exc})") from None
    streams = _Streams(module)
    async_class = type("AsyncTapTransport", (_AsyncTap, module.AsyncBaseTransport), {"_streams": streams})
    sync_class = type("TapTransport", (_SyncTap, module.BaseTransport), {"_streams": streams})
    return module, async_class, sync_class, streams
