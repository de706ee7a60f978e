"""A run over a WebSocket: OpenAI's Responses API in WebSocket mode, one response per run.

    async with WebSocketConnection("ws://127.0.0.1:8000/v1", headers=auth) as connection:
        for turn in turns:
            async with open_stream("openai-responses", base_url=..., json=body, client=connection) as run:
                async for event in run:
                    ...

The wire, as the sources say it (developers.openai.com/api/docs/guides/websocket-mode, and the reference page
api/reference/resources/responses/websocket-events; the Agents SDK, openai/openai-agents-python
``models/openai_responses.py`` (its websocket model, PR #2530) and ``models/_openai_websocket.py``; the JS
Agents SDK's ``responsesWebSocketConnection.ts``, PR openai/openai-agents-js#1004; litellm's
``llms/openai/responses/websocket_handler.py``):

* the client opens ``wss://api.openai.com/v1/responses`` (the HTTP base URL with ``ws``/``wss`` for its
  scheme, the SDKs' ``websocket_base_url``), with the same ``Authorization`` header as over HTTP;
* each response starts with one client text message ``{"type": "response.create", ...}``: the top-level
  fields of ``POST /v1/responses``, without ``stream`` (implicit) and ``background`` (not supported);
* the server answers with the HTTP stream's own events, one JSON text message each (``response.created``,
  ``response.output_text.delta``, ..., ``response.completed`` / ``response.failed`` /
  ``response.incomplete``); no SSE framing, no ``event:`` line, no ``[DONE]``;
* a failure is a message ``{"type": "error", "status": 400, "error": {"type", "code", "message",
  "param"}}`` (e.g. ``previous_response_not_found``, ``websocket_connection_limit_reached`` after 60
  minutes); the SDKs raise on it and the connection stays usable;
* responses follow one another on one connection (``previous_response_id`` chains them, with only the new
  input); one response at a time, so the client reads until a terminal event before it sends the next;
* the upgrade response carries no ``x-request-id``; success events carry no per-request id either.

How a read ends, in the run's taxonomy (``classify``):

* the response's terminal event: the run ends as the adapter says (completed, incomplete, failed), whatever
  the connection does after it (a close frame 1000 after ``response.completed`` is a clean end);
* a close frame before the terminal event, with a code or without (1005): the peer ended the stream
  cleanly at the transport level, so ``eof_without_terminal``, the close code in the detail
  (``websocket_close_<code>``), as a clean HTTP end of body without the terminal event is;
* the socket cut without a close frame (what browsers call 1006: a FIN, a TCP reset): a transport fault
  after the headers (``disconnected``, cause ``closed_mid_body`` or ``reset``);
* a silence: the watchdogs, as over HTTP;
* a refused upgrade (a non-101 status): an HTTP error, read from its status, headers and body;
* TCP connect refused, or no handshake in time: ``connect_failed`` / ``connect_timeout``.

The protocol is the ``websockets`` package's Sans-I/O layer (``websockets.client.ClientProtocol``) over
anyio's TCP streams, so the run is the same on asyncio and trio; it is the ``websocket`` extra.
"""

from __future__ import annotations

import contextlib
import json
import ssl
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final
from urllib.parse import urlsplit

import anyio
import anyio.abc

from ...classify import TransportKind, provider_error_from_http, transport_facts
from ...machine import Trigger
from ...wire import Adapter, Frame, StreamEvent, adapter_for, format_named
from ..core._config import Ids, StreamConfig
from ..core._run_core import RunCore
from ..records._record import Recorder
from ._stream import Run, _default_tls
from ._watchdog import loop_time

try:
    from websockets.client import ClientProtocol
    from websockets.exceptions import InvalidStatus
    from websockets.frames import Frame as WebSocketFrame
    from websockets.frames import Opcode
    from websockets.http11 import Response
    from websockets.uri import parse_uri
except ImportError as missing:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(
        "a WebSocket run needs the websockets package: pip install 'streamfsm[websocket]'"
    ) from missing

__all__ = [
    "SCHEMES",
    "WebSocketConnection",
    "WebSocketRefused",
    "WebSocketRun",
    "create_message",
    "is_websocket",
    "websocket_url",
]

SCHEMES: Final = ("ws", "wss")
_CLOSE_S: Final = 1.0  # how long a closing handshake may take before the socket is just closed
_READ_BYTES: Final = 65536
_MAX_HANDSHAKE_BODY: Final = 64 * 1024


# -- the protocol, in small pieces ------------------------------------------------------------------------


def websocket_url(provider: str, base_url: str) -> str:
    """The WebSocket URL of ``provider``'s streaming endpoint under ``base_url`` (a ``ws``/``wss`` URL)."""
    fmt = format_named(provider)
    if fmt.websocket_path is None:
        raise ValueError(f"the {provider} format is not spoken over a WebSocket")
    parts = urlsplit(base_url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ValueError("a WebSocket base_url is a ws:// or wss:// URL with a host")
    return base_url.rstrip("/") + fmt.websocket_path


def create_message(provider: str, body: Mapping[str, Any]) -> str:
    """The client message that starts one response of ``provider`` with request ``body``."""
    create = format_named(provider).websocket_create
    if create is None:
        raise ValueError(f"the {provider} format is not spoken over a WebSocket")
    return json.dumps(create(body), separators=(",", ":"))


def close_detail(code: int | None) -> str:
    """The detail a close frame before the terminal event leaves on the run (1005: one without a code)."""
    return f"websocket_close_{1005 if code is None else code}"


class MessageWire:
    """A core's wire over WebSocket messages: each message is one frame already (no SSE splitting)."""

    __slots__ = ("adapter", "close_code", "closed", "feed", "rec")

    def __init__(self, adapter: Adapter, rec: Recorder) -> None:
        self.adapter, self.rec = adapter, rec
        self.feed = adapter.feed
        rec.adapter = adapter
        rec.delta_keys = adapter.delta_keys
        self.closed = False  # the peer's close frame ended the stream
        self.close_code: int | None = None

    def frames(self, message: str) -> list[Frame]:
        self.rec.bytes_received += len(message)
        return [Frame(message)]

    def end(self) -> list[StreamEvent]:
        return self.adapter.end()

    def eof_detail(self) -> str | None:
        return close_detail(self.close_code) if self.closed else None


class WebSocketRefused(Exception):
    """The server answered the upgrade with another status than 101 (read as an HTTP error)."""

    def __init__(self, response: Response) -> None:
        super().__init__(f"the WebSocket upgrade was refused with status {response.status_code}")
        self.status = response.status_code
        self.headers = {k.lower(): v for k, v in response.headers.raw_items()}
        self.body = bytes(response.body or b"")[:_MAX_HANDSHAKE_BODY]


class WebSocketConnection:
    """One client WebSocket connection, shared by runs one after the other (``open_stream(client=...)``).

    ``url``: the ``ws``/``wss`` URL of the endpoint (for a run given a base URL, see ``websocket_url``);
    ``headers`` (auth) go with the upgrade request and are never recorded. ``receive`` returns the next text
    message, or None once the peer's close frame came (``close_code`` then says its code, None for a close
    without one); a cut socket raises anyio's error as it was (``EndOfStream`` for a FIN, ``BrokenResource``
    for a reset). One response at a time: ``busy`` is held by the run reading.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        max_message_bytes: int | None = 64 * 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES or not parts.hostname:
            raise ValueError("a WebSocket URL is a ws:// or wss:// URL with a host")
        self.url = url
        self._headers = dict(headers or {})
        self._protocol = ClientProtocol(parse_uri(url), max_size=max_message_bytes)
        self._ssl = ssl_context
        self._stream: anyio.abc.ByteStream | None = None
        self._pending: list[str] = []
        self._fragments: list[bytes] = []
        self._fragmented = False
        self.close_code: int | None = None
        self.closed = False  # the peer's close frame arrived, or the socket is gone
        self.opened = False
        self.upgrade_headers: Mapping[str, str] = {}  # the 101's, which every response on it is read under
        self.busy = False
        self.broken = False  # a response was left half read: the next one would read its rest

    @property
    def usable(self) -> bool:
        return self.opened and not (self.closed or self.broken)

    async def connect_tcp(self) -> None:
        """Open the TCP (and TLS) connection; the upgrade is ``handshake``."""
        uri = self._protocol.uri
        if uri.secure:
            context = self._ssl or _default_tls()
            self._stream = await anyio.connect_tcp(
                uri.host, uri.port, tls=True, ssl_context=context, tls_standard_compatible=False
            )
        else:
            self._stream = await anyio.connect_tcp(uri.host, uri.port)

    async def handshake(self) -> Mapping[str, str]:
        """Send the upgrade request and read its answer: the 101's headers, or `WebSocketRefused`."""
        protocol = self._protocol
        request = protocol.connect()
        for name, value in self._headers.items():
            request.headers[name] = value
        protocol.send_request(request)
        await self._flush()
        while True:
            for event in await self._events():
                if isinstance(event, Response):
                    failed = protocol.handshake_exc
                    if failed is not None:
                        # The protocol, the response and the parser (suspended where it caught it) keep its
                        # exception, whose traceback keeps the parser's frames and through them this one and
                        # the run reading: a cycle. Raised from here, it needs no traceback of its own.
                        protocol.handshake_exc = event._exception = None
                        failed.__traceback__ = None
                        if isinstance(failed, InvalidStatus):
                            raise WebSocketRefused(event)
                        raise failed
                    self.opened = True
                    self.upgrade_headers = {k.lower(): v for k, v in event.headers.raw_items()}
                    return self.upgrade_headers
                self._take(event)

    async def send_text(self, text: str) -> None:
        self._protocol.send_text(text.encode())
        await self._flush()

    async def receive(self) -> str | None:
        """The next text message; None once the peer closed (or had closed) with a close frame."""
        while not self._pending:
            if self.closed:
                return None
            for event in await self._events():
                self._take(event)
        return self._pending.pop(0)

    def _take(self, event: Any) -> None:
        if not isinstance(event, WebSocketFrame):
            return
        opcode = event.opcode
        if opcode is Opcode.CLOSE:
            close = self._protocol.close_rcvd
            self.close_code = close.code if close is not None and close.code != 1005 else None
            self.closed = True
        elif opcode in (Opcode.TEXT, Opcode.BINARY) or (opcode is Opcode.CONT and self._fragmented):
            self._fragments.append(bytes(event.data))
            self._fragmented = not event.fin
            if event.fin:
                data, self._fragments = b"".join(self._fragments), []
                self._pending.append(data.decode("utf-8", "replace"))

    async def _events(self) -> list[Any]:
        stream = self._stream
        assert stream is not None, "connect_tcp() first"
        protocol = self._protocol
        try:
            data = await stream.receive(_READ_BYTES)
        except anyio.EndOfStream:
            data = None
        except BaseException as exc:
            self.closed = True
            _forget_finished_frames(exc)
            raise
        if data is None:
            # Told to the protocol outside the except block: what it keeps (its EOFError) must not hold the
            # EndOfStream as its context, whose traceback holds the reading run.
            protocol.receive_eof()
            events = protocol.events_received()
            if not any(isinstance(e, WebSocketFrame) and e.opcode is Opcode.CLOSE for e in events):
                self.closed = True
                raise anyio.EndOfStream
            return events
        protocol.receive_data(data)
        events = protocol.events_received()
        await self._flush()  # pongs, the close frame's answer
        failed = protocol.parser_exc  # a protocol error from the peer (the protocol has sent its close)
        if failed is not None and not events:
            raise failed
        return events

    async def _flush(self) -> None:
        stream = self._stream
        assert stream is not None
        for data in self._protocol.data_to_send():
            if data:
                await stream.send(data)

    async def aclose(self) -> None:
        """Close: a close frame 1000 when the connection is open, then the socket (bounded)."""
        stream, self._stream = self._stream, None
        if stream is None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_S):
            try:
                if self.opened and not self.closed:
                    self._protocol.send_close(1000)
                    for data in self._protocol.data_to_send():
                        if data:
                            await stream.send(data)
            except Exception:
                pass  # the socket is going anyway
        self.closed = True
        with anyio.CancelScope(shield=True):
            await stream.aclose()

    async def __aenter__(self) -> WebSocketConnection:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _forget_finished_frames(exc: BaseException) -> None:
    """Clear the finished frames ``exc`` went through below us: a context manager's (anyio's socket-error
    mapping on trio, with a watchdog's ``Cancelled``) keeps the exception whose traceback keeps that frame, a
    cycle whose traceback reaches the run reading. A printed traceback needs only code and line numbers, and
    their locals are never read here (reading them would keep them)."""
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # below the handling frame
    while tb is not None:
        with contextlib.suppress(RuntimeError):  # a suspended frame: not ours to end
            tb.tb_frame.clear()
        tb = tb.tb_next


def _ends_connection(exc: BaseException) -> Trigger:
    """Before the response's stream: how a fault of the connect or the upgrade reads."""
    kind = transport_facts(exc, headers_received=False).kind
    if kind is TransportKind.CONNECT_TIMEOUT:
        return Trigger.CONNECT_TIMEOUT
    if kind in (TransportKind.REFUSED, TransportKind.DNS, TransportKind.UNREACHABLE, TransportKind.TLS):
        return Trigger.CONNECT_FAILED
    return Trigger.DISCONNECTED


class Messages:
    """A run's source: the connection's next message, until its close frame (then the wire knows its code)."""

    __slots__ = ("connection", "wire")

    def __init__(self, connection: WebSocketConnection, wire: MessageWire) -> None:
        self.connection, self.wire = connection, wire

    async def next(self) -> str:
        message = await self.connection.receive()
        if message is None:
            self.wire.closed, self.wire.close_code = True, self.connection.close_code
            raise StopAsyncIteration
        return message


# -- the run ------------------------------------------------------------------------------------------------


class WebSocketRun(Run):
    """One response over a WebSocket: ``response.create`` sent, then one event per message until the
    response's terminal event. ``client``: a `WebSocketConnection` to share (left open); otherwise the run
    opens one from ``base_url`` and closes it at its end."""

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        json: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        client: WebSocketConnection | None = None,
        config: StreamConfig | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(json, Mapping):
            raise TypeError("json must be a mapping (the request body)")
        url = client.url if client is not None else websocket_url(provider, base_url)
        adapter: Adapter = adapter_for(provider)
        if Ids.coerce(ids).recovery is not None:
            raise ValueError("a WebSocket run has no continuation or resume plan (yet)")
        self._message = create_message(provider, json)
        super().__init__(RunCore.for_request(adapter, json, url, config=config, ids=ids))
        self._adapter = adapter
        self._connection = client or WebSocketConnection(
            url, headers=headers, max_message_bytes=self.config.max_line_bytes
        )
        self._owns_connection = client is None
        self._wire: MessageWire | None = None

    @property
    def connection(self) -> WebSocketConnection:
        return self._connection

    async def _connect(self) -> None:
        core, connection, reads = self._core, self._connection, self._reads
        if connection.busy:
            raise RuntimeError("a WebSocket connection carries one response at a time")
        if not self._owns_connection and connection.opened and not connection.usable:
            raise RuntimeError("this WebSocket connection is closed, or a response on it was left half read")
        connection.busy = True
        core.begin()
        deadline, edge = core.timing.connect_deadline(core.clock())
        with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
            reads.scope = scope
            try:
                if not connection.opened:
                    await connection.connect_tcp()
                    core.lifecycle("connected")
                    await connection.handshake()
                await connection.send_text(self._message)
                core.request_left()
                core.lifecycle("request_written")
            except WebSocketRefused as refused:
                reads.scope = None
                core.headers(refused.status, refused.headers)
                error = provider_error_from_http(refused.status, refused.headers, refused.body)
                raise core.http_error(error)  # noqa: B904  # the status says what happened
            except Exception as exc:
                raise core.fault(exc, _ends_connection(exc))  # noqa: B904  # chained from exc by the core
        reads.scope = None
        if scope.cancelled_caught:
            raise core.timed_out(edge)
        wire = self._wire = MessageWire(self._adapter, core.rec)
        # Not a method of the run: the run holding its own bound method would be a reference cycle.
        self._next_chunk = Messages(connection, wire).next
        # The stream is the connection's: its 101 stands for every response's headers (status None: the
        # core takes no 101 for an error status).
        core.source_facts(status=101, headers=connection.upgrade_headers)
        core.headers(None, connection.upgrade_headers, wire)

    async def _close_source(self) -> None:
        connection = self._connection
        connection.busy = False
        if not self._core.finished and connection.opened:
            connection.broken = True  # the response's rest would be read as the next one's
        if self._owns_connection or connection.broken:
            await connection.aclose()

    def resume_plan(self) -> None:
        """WebSocket mode has no background responses: nothing to re-attach to."""


def is_websocket(base_url: str) -> bool:
    """Whether ``open_stream(provider, base_url=...)`` runs over a WebSocket: a ``ws``/``wss`` base URL."""
    return urlsplit(base_url).scheme in SCHEMES
