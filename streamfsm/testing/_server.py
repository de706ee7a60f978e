"""The fault server: a real HTTP/1.1 server on 127.0.0.1 that plays one script per request.

Written on anyio's TCP streams so it runs on asyncio and trio alike. Each connection:

    read the whole request (request line, headers, Content-Length or chunked body)
        -> route it to a script -> play the steps
        -> complete response and keep-alive?  yes: read the next request;  no: close

`FaultServer` is the async context manager; `FaultServerThread` runs the same server on its own event loop in
a background thread, for synchronous clients. Leaving either one cancels every connection and closes every
socket, stalled or not, within a bounded time.
"""

from __future__ import annotations

import collections
import http
import itertools
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, TypeAlias

import anyio
import anyio.abc

from ._script import (
    End,
    Fin,
    HeaderPairs,
    Headers,
    Keepalive,
    Rst,
    Scenario,
    Script,
    Send,
    SendRaw,
    Sleep,
    Stall,
    Status,
    check_script,
    encode_chunk,
)
from ._websocket import is_upgrade, play_websocket

__all__ = [
    "FaultServer",
    "FaultServerError",
    "FaultServerThread",
    "Request",
    "RequestRecord",
    "Router",
]

_HOST = "127.0.0.1"
_MAX_HEAD = 64 * 1024  # request line + headers (+ trailers)
_MAX_LINE = 4 * 1024  # one chunk-size line
_BODY_HEAD = 4 * 1024  # bytes of each body kept in `requests`
_REDACTED = "[redacted]"
_LINGER = 1.0  # seconds an error response waits for the client to stop sending
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
_EXTRA_REASONS = {529: "Site Overloaded"}


def _redact(headers: HeaderPairs) -> HeaderPairs:
    return tuple((name, _REDACTED if name in _SECRET_HEADERS else value) for name, value in headers)


@dataclass(frozen=True, slots=True, repr=False)
class Request:
    """One request as the router sees it: header names lower-cased, the whole body read."""

    method: str
    path: str
    query: str
    headers: HeaderPairs
    body: bytes
    seq: int  # server-wide, from 0
    connection: int  # connection number, from 0; equal for requests sent over one keep-alive connection

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    def __repr__(self) -> str:
        return (
            f"Request(seq={self.seq}, connection={self.connection}, method={self.method!r},"
            f" path={self.path!r}, query={self.query!r}, headers={_redact(self.headers)!r},"
            f" body=<{len(self.body)} bytes>)"
        )


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What `FaultServer.requests` keeps of a request: secrets redacted, at most 4 KiB of the body, and when
    it arrived (``at``, on ``time.monotonic()``'s clock: how a client spaced its attempts)."""

    seq: int
    connection: int
    method: str
    path: str
    query: str
    headers: HeaderPairs
    body_size: int
    body_head: bytes = field(repr=False)
    at: float = field(default=0.0, compare=False)  # time.monotonic() when the request had been read

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive, redacted if secret), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)


Router: TypeAlias = Callable[[Request], Script | Scenario] | Script | Scenario


class FaultServerError(RuntimeError):
    """A request could not be served as scripted (the router raised, or returned an unplayable script).

    Raised when the server context is left; the first underlying error is the ``__cause__``.
    """


class _BadRequest(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


class _ClientGone(Exception):
    """The peer closed (or broke) the connection mid-request or mid-response: normal in fault tests."""


_DISCONNECTS = (
    _ClientGone,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


class _Reader:
    """A byte buffer over the stream, with bounded line and exact-size reads."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def _fill(self) -> bool:
        try:
            data = await self._stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return False
        self._buffer += data
        return True

    async def at_eof(self) -> bool:
        """Skip blank lines between requests (RFC 9112 §2.2); True on a clean close before the next one."""
        while True:
            while self._buffer.startswith(b"\r\n"):
                del self._buffer[:2]
            if self._buffer and self._buffer != b"\r":
                return False
            if not await self._fill():
                return True

    async def until(self, delimiter: bytes, limit: int, status: int) -> bytes:
        """Bytes up to ``delimiter`` (consumed, not returned); `_BadRequest` (``status``) past ``limit``."""
        start = 0
        while (index := self._buffer.find(delimiter, start)) < 0:
            if len(self._buffer) > limit:
                raise _BadRequest(status, "request line or header section too long")
            start = max(0, len(self._buffer) - len(delimiter) + 1)
            if not await self._fill():
                raise _ClientGone("EOF inside the request head")
        if index > limit:
            raise _BadRequest(status, "request line or header section too long")
        data = bytes(self._buffer[:index])
        del self._buffer[: index + len(delimiter)]
        return data

    def take_buffered(self) -> bytes:
        """What was read past the request (a protocol taking the connection over reads it first)."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    async def exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            if not await self._fill():
                raise _ClientGone("EOF inside the request body")
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


@dataclass(slots=True)
class _Head:
    method: str
    path: str
    query: str
    version: str
    headers: HeaderPairs

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]

    @property
    def wants_close(self) -> bool:
        tokens = {t.strip().lower() for v in self.values("connection") for t in v.split(",")}
        return "close" in tokens or (self.version == "HTTP/1.0" and "keep-alive" not in tokens)


def _parse_head(raw: bytes) -> _Head:
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1]:
        raise _BadRequest(400, "malformed request line")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise _BadRequest(505, f"unsupported version {version!r}")
    path, _, query = target.partition("?")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise _BadRequest(400, "malformed header line")
        headers.append((name.lower(), value.strip(" \t")))
    return _Head(method, path, query, version, tuple(headers))


def _parse_hex(text: bytes) -> int:
    text = text.split(b";", 1)[0].strip(b" \t")
    if not text or len(text) > 16 or text.strip(b"0123456789abcdefABCDEF"):
        raise _BadRequest(400, "malformed chunk size")
    return int(text, 16)


async def _read_body(reader: _Reader, stream: anyio.abc.ByteStream, head: _Head, max_body: int) -> bytes:
    codings = [c.strip().lower() for v in head.values("transfer-encoding") for c in v.split(",") if c.strip()]
    lengths = set(head.values("content-length"))
    if codings and codings[-1] != "chunked":
        raise _BadRequest(400, "a request body must be chunked or have a Content-Length")
    if not codings and len(lengths) > 1:
        raise _BadRequest(400, "conflicting Content-Length headers")
    length = 0
    if not codings and lengths:
        text = lengths.pop()
        if not text.isdigit():
            raise _BadRequest(400, "malformed Content-Length")
        length = int(text)
        if length > max_body:
            raise _BadRequest(413, "request body too large")
    if (codings or length) and any(v.lower() == "100-continue" for v in head.values("expect")):
        await stream.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    if not codings:
        return await reader.exactly(length)
    parts: list[bytes] = []
    total = 0
    while size := _parse_hex(await reader.until(b"\r\n", _MAX_LINE, 400)):
        total += size
        if total > max_body:
            raise _BadRequest(413, "request body too large")
        parts.append(await reader.exactly(size))
        if await reader.exactly(2) != b"\r\n":
            raise _BadRequest(400, "chunk not followed by CRLF")
    trailer_bytes = 0
    while line := await reader.until(b"\r\n", _MAX_HEAD, 431):
        trailer_bytes += len(line)
        if trailer_bytes > _MAX_HEAD:
            raise _BadRequest(431, "trailer section too long")
    return b"".join(parts)


def _status_line(code: int) -> bytes:
    try:
        reason = http.HTTPStatus(code).phrase
    except ValueError:
        reason = _EXTRA_REASONS.get(code, "Unknown")
    return f"HTTP/1.1 {code} {reason}\r\n".encode("latin-1")


def _header_block(headers: Iterable[tuple[str, str]]) -> bytes:
    return b"".join(f"{name}: {value}\r\n".encode("latin-1") for name, value in headers) + b"\r\n"


def _has(headers: HeaderPairs, name: str) -> bool:
    return any(key.lower() == name for key, _ in headers)


async def _drain_until_gone(stream: anyio.abc.ByteStream) -> None:
    # Reading (and discarding) is how a stall notices the client leaving, without buffering what it sends.
    while True:
        await stream.receive()


class FaultServer:
    """A scripted HTTP/1.1 server on 127.0.0.1, as an async context manager::

        async with FaultServer(lambda request: (Headers(), Send(b"data: hi\\n\\n"), Fin())) as server:
            ... httpx.AsyncClient().stream("POST", server.base_url + "/v1/chat/completions") ...

    ``router`` is a script (or `Scenario`) played for every request, or a callable from `Request` to one; it
    runs on the event loop, so keep it quick. A router that raises, or returns something that is not a valid
    script, gets the client a 500 and makes leaving the context raise `FaultServerError`. ``host``: the
    address to listen on (loopback unless told otherwise).
    """

    def __init__(
        self,
        router: Router,
        *,
        port: int = 0,
        host: str = _HOST,
        max_records: int = 1000,
        max_body: int = 16 * 1024 * 1024,
        backlog: int = 4096,
    ) -> None:
        if isinstance(router, Scenario):
            router = router.script
        if isinstance(router, tuple):
            router = check_script(router)
        self._router = router
        self._host = host
        self._requested_port = port
        self._backlog = backlog
        self._max_body = max_body
        self._records: collections.deque[RequestRecord] = collections.deque(maxlen=max_records)
        self._lock = threading.Lock()  # records are read from other threads under FaultServerThread
        self._seen = threading.Condition(self._lock)
        self._request_seq = itertools.count()
        self._connection_seq = itertools.count()
        self._requests_seen = 0
        self._errors: list[BaseException] = []
        self._streams: set[anyio.abc.SocketStream] = set()
        self._arrived: anyio.Event | None = None
        self._listener: anyio.abc.SocketListener | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._port = 0

    # -- what tests look at ---------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return (
            f"http://[{self._host}]:{self._port}"
            if ":" in self._host
            else f"http://{self._host}:{self._port}"
        )

    @property
    def requests(self) -> list[RequestRecord]:
        """The most recent requests received (bounded), oldest first; a snapshot."""
        with self._lock:
            return list(self._records)

    @property
    def requests_seen(self) -> int:
        """How many requests were received in total, including those dropped from `requests`."""
        return self._requests_seen

    @property
    def open_connections(self) -> int:
        return len(self._streams)

    async def wait_for_requests(self, count: int) -> None:
        """Return once ``count`` requests have been received in total (bound it with ``anyio.fail_after``)."""
        while self._requests_seen < count:
            if self._arrived is None:
                self._arrived = anyio.Event()
            await self._arrived.wait()

    def wait_for_requests_blocking(self, count: int, timeout: float) -> bool:
        """From another thread: wait up to ``timeout`` s for ``count`` requests; False if they never came."""
        with self._seen:
            return self._seen.wait_for(lambda: self._requests_seen >= count, timeout)

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def __aenter__(self) -> FaultServer:
        if self._task_group is not None:
            raise RuntimeError("a FaultServer can be entered only once")
        # Bound by hand: create_tcp_listener resolves the host in a worker thread, which would outlive us.
        sock = socket.socket(socket.AF_INET6 if ":" in self._host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host, self._requested_port))
            # A deep accept queue: when hundreds of clients connect at once, an overflowing queue makes the
            # kernel drop handshakes (seconds of SYN retries) or, with SYN cookies, answer requests with RST,
            # a fault nobody scripted. The kernel caps it at net.core.somaxconn.
            sock.listen(self._backlog)
            sock.setblocking(False)
            self._port = sock.getsockname()[1]
            self._listener = await anyio.abc.SocketListener.from_socket(sock)
        except BaseException:
            sock.close()
            raise
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._accept_loop, self._listener)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task_group is not None
        assert self._listener is not None
        # The accept loop ends on the closed listener, not cancelled: anyio's trio backend re-raises a
        # Cancelled from a frame that holds it, a cycle whose f_back chain (Python 3.12+) holds the caller's
        # frames, and the runs in them, for the cyclic collector.
        with anyio.CancelScope(shield=True):
            await self._listener.aclose()
        self._task_group.cancel_scope.cancel()
        try:
            # The body's exception is not fed to the task group: on trio it would return wrapped in a group.
            await self._task_group.__aexit__(None, None, None)
        finally:
            with anyio.CancelScope(shield=True):
                # A connection task cancelled before its first step never ran its cleanup: close its socket.
                for stream in list(self._streams):
                    await stream.aclose()
                self._streams.clear()
                await self._listener.aclose()
        if exc_type is None and self._errors:
            raise FaultServerError(f"{len(self._errors)} request(s) could not be served as scripted") from (
                self._errors[0]
            )

    # -- connections ----------------------------------------------------------------------------------------

    async def _accept_loop(self, listener: anyio.abc.SocketListener) -> None:
        assert self._task_group is not None
        while True:
            try:
                stream = await listener.accept()
            except anyio.ClosedResourceError:  # __aexit__ closed it
                return
            self._streams.add(stream)
            self._task_group.start_soon(self._serve, stream, next(self._connection_seq))

    async def _serve(self, stream: anyio.abc.SocketStream, connection: int) -> None:
        try:
            reader = _Reader(stream)
            while not await reader.at_eof():
                try:
                    head = _parse_head(await reader.until(b"\r\n\r\n", _MAX_HEAD, 431))
                    body = await _read_body(reader, stream, head, self._max_body)
                except _BadRequest as exc:
                    await self._send_error(stream, exc.status, str(exc))
                    return
                seq = next(self._request_seq)
                request = Request(head.method, head.path, head.query, head.headers, body, seq, connection)
                self._record(request)
                script = self._route(request)
                if script is None:
                    await self._send_error(stream, 500, "fault server router failed")
                    return
                if is_upgrade(script):  # a WebSocket's: the connection is the script's to the end
                    target = f"{head.path}?{head.query}" if head.query else head.path
                    await play_websocket(stream, head.headers, target, reader.take_buffered(), script)
                    return
                if not await self._play(stream, script, head.wants_close):
                    return
        except _DISCONNECTS:
            pass
        except Exception as exc:  # a bug here must fail the test, not hang it: report it on exit
            self._errors.append(exc)
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            self._streams.discard(stream)

    def _record(self, request: Request) -> None:
        record = RequestRecord(
            seq=request.seq,
            connection=request.connection,
            method=request.method,
            path=request.path,
            query=request.query,
            headers=_redact(request.headers),
            body_size=len(request.body),
            body_head=request.body[:_BODY_HEAD],
            at=time.monotonic(),
        )
        with self._lock:
            self._records.append(record)
            self._requests_seen += 1
            self._seen.notify_all()
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None

    def _route(self, request: Request) -> Script | None:
        try:
            script = self._router(request) if callable(self._router) else self._router
            if isinstance(script, Scenario):
                return script.script
            return check_script(script)
        except Exception as exc:
            self._errors.append(exc)
            return None

    @staticmethod
    async def _send_error(stream: anyio.abc.ByteStream, code: int, detail: str) -> None:
        body = detail.encode()
        headers: HeaderPairs = (("content-type", "text/plain"), ("content-length", str(len(body))))
        headers += (("connection", "close"),)
        await stream.send(_status_line(code) + _header_block(headers) + body)
        # Lingering close: closing with unread request bytes would send RST and could destroy the answer.
        await stream.send_eof()
        with anyio.move_on_after(_LINGER):
            await _drain_until_gone(stream)

    async def _play(self, stream: anyio.abc.SocketStream, script: Script, client_close: bool) -> bool:
        """Play ``script``; True when the connection may carry the next request."""
        state: Literal["before", "streaming", "complete"] = "before"
        reusable = not client_close
        close_header = (("connection", "close"),) if client_close else ()
        for step in script:
            match step:
                case Status(code, headers, body, close):
                    reusable = reusable and not close
                    extra: HeaderPairs = ()
                    if not _has(headers, "content-length"):
                        extra += (("content-length", str(len(body))),)
                    if not reusable and not _has(headers, "connection"):
                        extra += (("connection", "close"),)
                    await stream.send(_status_line(code) + _header_block(headers + extra) + body)
                    state = "complete"
                case Headers(code, headers):
                    extra = () if _has(headers, "transfer-encoding") else (("transfer-encoding", "chunked"),)
                    await stream.send(_status_line(code) + _header_block(headers + extra + close_header))
                    state = "streaming"
                case Send(data):
                    await stream.send(encode_chunk(data))
                case SendRaw(data):
                    reusable = False  # the framing is now unknowable
                    await stream.send(data)
                case Sleep(seconds):
                    await anyio.sleep(seconds)
                case Keepalive(every, count, frame):
                    for _ in range(count):
                        await anyio.sleep(every)
                        await stream.send(encode_chunk(frame))
                case End():
                    await stream.send(b"0\r\n\r\n")
                    state = "complete"
                case Fin():
                    await stream.send_eof()
                    return False
                case Rst():
                    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
                    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return False  # the close in _serve now sends RST
                case Stall():
                    await _drain_until_gone(stream)
        return reusable and state == "complete"


class FaultServerThread:
    """`FaultServer` on its own event loop in a background thread, for synchronous clients::

        with FaultServerThread((Status(429, (("retry-after", "1"),)),)) as server:
            openai.OpenAI(base_url=server.base_url + "/v1", api_key="test", max_retries=0) ...

    Entering waits (up to ``start_timeout`` s) until the server listens; leaving stops it and joins the thread
    (up to ``stop_timeout`` s). The router runs in the server thread.
    """

    # How often the server thread looks for a stop request: polling a flag needs no cross-thread call into a
    # loop that may be finishing, which is what keeps stop() bounded.
    _POLL = 0.02

    def __init__(
        self,
        router: Router,
        *,
        backend: Literal["asyncio", "trio"] = "asyncio",
        start_timeout: float = 5.0,
        stop_timeout: float = 5.0,
        port: int = 0,
        host: str = _HOST,
        max_records: int = 1000,
        max_body: int = 16 * 1024 * 1024,
        backlog: int = 4096,
    ) -> None:
        self._server = FaultServer(
            router, port=port, host=host, max_records=max_records, max_body=max_body, backlog=backlog
        )
        self._backend = backend
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return self._server.base_url

    @property
    def requests(self) -> list[RequestRecord]:
        return self._server.requests

    @property
    def requests_seen(self) -> int:
        return self._server.requests_seen

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """Wait up to ``timeout`` s for ``count`` requests in total; False if they did not come."""
        return self._server.wait_for_requests_blocking(count, timeout)

    def __enter__(self) -> FaultServerThread:
        if self._thread is not None:
            raise RuntimeError("a FaultServerThread can be started only once")
        self._thread = threading.Thread(target=self._run, name="streamfsm-fault-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(self._start_timeout):
            self._shutdown()
            raise TimeoutError(f"the fault server did not start within {self._start_timeout} s")
        if self._failure is not None:
            self._shutdown()
            raise self._failure
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._shutdown()
        if exc_type is None and self._failure is not None:
            raise self._failure

    def _shutdown(self) -> None:
        assert self._thread is not None
        self._stop.set()
        self._thread.join(self._stop_timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the fault server thread did not stop within {self._stop_timeout} s")

    def _run(self) -> None:
        try:
            anyio.run(self._main, backend=self._backend)
        except BaseException as exc:  # handed to the starting or stopping thread
            self._failure = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        async with self._server:
            self._ready.set()
            while not self._stop.is_set():
                await anyio.sleep(self._POLL)
