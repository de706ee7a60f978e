"""The relay: an ASGI application that forwards every request to one upstream and streams the answer back.

Per request::

    read the body (bounded in size and time) -> forward it upstream through the tap (httpx)
        -> response headers downstream -> each chunk read: write it, then report it to the run
        -> the end as the upstream ended it, or, when the upstream failed mid-stream, the format's own
           in-band error event and a cut response (never a clean end)

A task beside it listens to the ASGI server for the client's disconnect: the run then ends as
``client_abort`` (source ``client``). A write that the client does not take within ``write_timeout`` ends
it as ``client_write_failed``. Every streaming LLM response is a run (the tap starts it); its record goes to
the configured sinks and carries the ``relay`` section and the correlation ids (``ids.context``:
``request_id``, ``route``, ``account``).

This module admits a request (limits, checks, the body) and sends it upstream; ``_downstream.Downstream``
writes what the client gets.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import re
import secrets
import uuid
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final
from urllib.parse import parse_qsl, unquote_to_bytes

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx
import sniffio

from ..classify import guard_relay_logs, redact_http_logs, redact_text
from ..runtime import AuditLog, ErrorLog, Ids, RelayClose, StreamConfig
from ..tap import Rule, TapRun, async_transport, check_rules, context, format_of, llm_request, relaying
from ._admin import Admin
from ._downstream import (
    HOP_BY_HOP,
    REQUEST_ID,
    Downstream,
    Receive,
    Scope,
    Send,
    answer,
    connection_named,
)
from ._errors import ErrorsData
from ._fallback import RouteBook, Routed, routed
from ._journal import Journal
from ._keys import account_of, deployment_key
from ._limits import RETRY_AFTER_S, BodyChunks, Budget, Held, body_deadline, check_limit
from ._metrics import RelayMetrics, relay_metrics
from ._pool import ShardedPool, UpstreamClient
from ._relayed import RelayedRun
from ._table import RouteTable

__all__ = ["IDLE_TIMEOUT_S", "Relay", "RelayConfig"]


log: Final = logging.getLogger("streamfsm.relay")

# Set by the HTTP client from the URL and the body it sends.
_RECOMPUTED: Final = frozenset({b"host", b"content-length"})
# The client's own word on where it came from (and every x-forwarded-*): never passed upstream.
_CLIENT_FORWARDING: Final = frozenset(
    {b"forwarded", b"x-real-ip", b"x-original-forwarded-for", b"true-client-ip", b"cf-connecting-ip"}
)
_MAX_REQUEST_ID: Final = 128
_ROOM_WAIT_S: Final = 5.0  # longest wait for room in the body budget
IDLE_TIMEOUT_S: Final = 90.0  # well inside the SDKs' 600 s read timeout
_SHUTDOWN_WRITE_S: Final = 1.0  # for the client to take the relay's last words
_ENCODED_SEPARATOR: Final = re.compile(rb"%(2f|5c)", re.IGNORECASE)  # "/" and "\\"
_DECODINGS: Final = 4
_INVALID: Final = "invalid_request"  # the rule a 400 names in a refused run's record
_ROUTES_KEPT: Final = 1024  # redacted paths kept; past it the cache starts afresh


@dataclass(frozen=True, slots=True)
class RelayConfig:
    """What the relay forwards to and how it bounds each exchange.

    ``upstream``: the base URL every request goes to (its path, if any, prefixes the client's path).
    ``stream``: the runs' watchdogs, bounds and sinks (the error and audit logs are added to its sinks); by
    default an idle timeout of ``IDLE_TIMEOUT_S``, so that an upstream's silence is named before a client's
    patience runs out (the openai and anthropic SDKs wait 600 s for a read).
    ``error_log`` / ``audit_log``: paths of the JSON-lines logs (``streamfsm.ErrorLog`` / ``AuditLog``).
    ``admin_token``: the bearer token of ``/admin/...`` (None: admin pages only on a loopback listener).
    ``account_headers``: the request headers whose value (the first present) names the account; only a
    keyed hash of it is recorded, never the value. ``max_body_bytes``: the largest request body forwarded
    (413 above). ``body_timeout``: the longest wait for a client's request body (408). ``write_timeout``:
    the longest wait for the client to take one write (then ``client_write_failed``). ``upstream_timeout``:
    the upstream HTTP client's connect / read / write / pool timeouts (the runs' watchdogs apply too).
    ``max_connections``: upstream connections open at once (None: unbounded). ``rules``: more paths that
    carry a streaming LLM format (``streamfsm.tap.Rule``). ``store``: a run store URL (``streamfsm.store``)
    the relay indexes every run in and the errors page queries; None: the relay's own SQLite store, with an
    audit log a file beside it (``audit.jsonl.runs.db``) kept current from the logs off the request path
    (it catches up from where it stopped after a restart or a crash), without one a private store of this
    process in a temporary folder. ``keep_store``: keep that file when the relay shuts down (the default;
    False removes it, and the next start indexes the whole audit log again). ``max_concurrent``:
    requests relayed at once (503 with ``Retry-After`` beyond). ``body_budget_bytes``: the request bodies
    held at once, all requests together (a request without room waits up to 5 s for it, then gets 503 with
    ``Retry-After``). ``body_min_rate``: the slowest a request body may arrive, in bytes a second on average
    once its first ``body_rate_grace`` seconds are over (408 below it; ``body_timeout`` bounds it whole).
    ``public_url``: where clients and browsers reach the relay (behind a TLS proxy, ``https://...``): its
    scheme makes the admin cookie ``Secure``, its host is accepted on the admin pages. ``session_key``: the
    admin cookie's key (None: a new one per relay, so sign-ins end with the process). ``account_key``: the
    account hash's key (None: kept in ``streamfsm-relay.key`` beside the audit log, the error log or the
    SQLite store, made at the first start). ``forward_client_address``: send the client's address upstream
    as ``X-Forwarded-For`` (the client's own ``Forwarded``, ``X-Forwarded-*`` and ``X-Real-IP`` are never
    forwarded). ``max_answer_bytes`` / ``answer_budget_bytes``: the largest non-streaming answer the relay
    passes on, and the non-streaming answers held at once, all exchanges together (each is kept whole for its
    run to read at its end, and passed on once whole); past either, the answer is refused with a 502 and
    recorded. ``routes``: a route table (``RouteTable.load``): the LLM calls of the models it names go to
    their routes, falling back before the first byte reaches the client (see ``_fallback``); everything else
    goes to ``upstream``.
    """

    upstream: str
    stream: StreamConfig = field(default_factory=lambda: StreamConfig(idle_timeout=IDLE_TIMEOUT_S))
    error_log: str | None = None
    audit_log: str | None = None
    admin_token: str | None = field(default=None, repr=False)
    account_headers: tuple[str, ...] = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
    max_body_bytes: int = 32 << 20
    body_timeout: float = 60.0
    write_timeout: float = 30.0
    upstream_timeout: float = 600.0
    max_connections: int | None = None
    rules: tuple[Rule, ...] = ()
    store: str | None = field(default=None, repr=False)  # a PostgreSQL URL may carry a password
    keep_store: bool = True
    max_concurrent: int = 1000
    body_budget_bytes: int = 256 << 20
    body_min_rate: int = 1024
    body_rate_grace: float = 5.0
    public_url: str | None = None
    session_key: str | None = field(default=None, repr=False)
    account_key: str | None = field(default=None, repr=False)
    forward_client_address: bool = False
    max_answer_bytes: int = 64 << 20
    answer_budget_bytes: int = 256 << 20
    routes: RouteTable | None = None

    def __post_init__(self) -> None:
        url = httpx.URL(self.upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"upstream must be an http:// or https:// URL, not {self.upstream!r}")
        if url.query or url.fragment:
            raise ValueError("upstream must not carry a query or a fragment")
        for name in ("body_timeout", "write_timeout", "upstream_timeout", "body_rate_grace"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < math.inf):
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if not (isinstance(self.max_body_bytes, int) and self.max_body_bytes > 0):
            raise ValueError(f"max_body_bytes must be a positive integer, not {self.max_body_bytes!r}")
        check_limit("max_concurrent", self.max_concurrent)
        check_limit("body_budget_bytes", self.body_budget_bytes)
        check_limit("body_min_rate", self.body_min_rate)
        if self.public_url is not None:
            public = httpx.URL(self.public_url)
            if public.scheme not in ("http", "https") or not public.host:
                raise ValueError(f"public_url must be an http:// or https:// URL, not {self.public_url!r}")
        for name in ("session_key", "account_key"):
            value = getattr(self, name)
            if value is not None and len(value) < 16:
                raise ValueError(f"{name} must be at least 16 characters")
        check_limit("max_answer_bytes", self.max_answer_bytes)
        check_limit("answer_budget_bytes", self.answer_budget_bytes)
        if self.answer_budget_bytes < self.max_answer_bytes:
            raise ValueError(
                "answer_budget_bytes must be at least max_answer_bytes (one largest answer must fit)"
            )
        if self.body_budget_bytes < self.max_body_bytes:
            raise ValueError("body_budget_bytes must be at least max_body_bytes (one largest body must fit)")
        if self.admin_token is not None and len(self.admin_token) < 16:
            raise ValueError("admin_token must be at least 16 characters")


class Relay:
    """The relay as an ASGI 3 application: ``uvicorn.run(Relay(RelayConfig(upstream=...)))``, or mounted in
    the operator's own ASGI application. Its upstream client opens at the first request (or at lifespan
    startup) and closes at lifespan shutdown or ``await relay.aclose()``."""

    def __init__(self, config: RelayConfig) -> None:
        if not isinstance(config, RelayConfig):
            raise TypeError(f"config must be a RelayConfig, not {type(config).__name__}")
        self.config = config
        # The upstream requests carry the clients' URLs (Gemini's ?key=): mask what httpx logs of them, for
        # every client of the process.
        redact_http_logs()
        guard_relay_logs()
        sinks = list(config.stream.sinks)
        if config.error_log is not None:
            sinks.append(ErrorLog(config.error_log))
        if config.audit_log is not None:
            sinks.append(AuditLog(config.audit_log))
        logs = [path for path in (config.error_log, config.audit_log) if path is not None]
        journal = config.audit_log or config.error_log
        self.errors = ErrorsData(
            config.store, logs, journal=journal, audit=config.audit_log, keep=config.keep_store
        )
        if self.errors.sink is not None:
            sinks.append(self.errors.sink)
        self.metrics = relay_metrics()
        if self.metrics is not None:  # last: it counts what the sinks before it failed to take
            sinks.append(self.metrics.record)
        self._stream_config = config.stream.replace(sinks=tuple(sinks))
        self._journal = Journal(sinks, config.rules)
        upstream = httpx.URL(config.upstream)
        self._base = upstream.copy_with(raw_path=b"/")
        self._prefix = upstream.raw_path.rstrip(b"/")
        self._client: httpx.AsyncClient | None = None
        self._admin: Any = None
        self._bodies = Budget(config.body_budget_bytes)
        self._answers = Budget(config.answer_budget_bytes)
        self._in_flight = 0
        self._rules = check_rules(config.rules)
        self._routes: dict[str, str] = {}  # a request path -> its redacted form (the record's route)
        self._urls: dict[bytes, httpx.URL] = {}  # a request target -> the upstream URL
        self.routes = RouteBook(config.routes) if config.routes is not None else None
        if self.routes is not None and self.metrics is not None:
            self.metrics.watch_routes(self.routes)
        self.account_key = deployment_key(
            config.account_key, config.audit_log, config.error_log, store=config.store
        )

    # -- lifecycle ----------------------------------------------------------------------------------------

    def _upstream(self) -> httpx.AsyncClient:
        if self._client is None:
            config = self.config
            inner = ShardedPool(max_connections=config.max_connections, max_keepalive_connections=100)
            tap = async_transport(inner, http="httpx", config=self._stream_config, rules=config.rules)
            self._client = UpstreamClient(
                transport=tap, timeout=httpx.Timeout(config.upstream_timeout), trust_env=False
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- ASGI -------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if scope["path"].startswith("/admin/") or scope["path"] == "/admin":
                await self._admin_app()(scope, receive, send)
            else:
                await self._relay(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket on a path of a format spoken over one goes through (``_websocket``); any other is
        refused at the handshake."""
        path = scope["path"]
        fmt = format_of(self._rules, "POST", path, {})  # an upgrade to a path its creates would POST to
        try:
            from ._websocket import relay_websocket, relays_websocket  # the websocket extra
        except ImportError:
            fmt = None
        if fmt is None or not relays_websocket(fmt):
            await receive()
            await send({"type": "websocket.close", "code": 1003})
            return
        target = self._prefix + scope.get("raw_path", path.encode())
        base = self._base.copy_with(scheme="wss" if self._base.scheme == "https" else "ws")
        context = {"route": self._route(path), "request_id": _request_id(scope["headers"])}
        await relay_websocket(
            scope,
            receive,
            send,
            fmt=fmt,
            upstream_url=str(base).rstrip("/") + target.decode("latin-1"),
            config=self._stream_config,
            context=context,
        )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._upstream()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                # Here, not at exit: after a SIGTERM uvicorn raises the signal again, and no exit hook runs.
                await anyio.to_thread.run_sync(self.errors.close)
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _admin_app(self) -> Any:
        if self._admin is None:
            config = self.config
            session = config.session_key.encode() if config.session_key is not None else None
            self._admin = Admin(
                config.admin_token,
                self.errors,
                self.metrics,
                public_url=config.public_url,
                session_key=session,
                routes=self.routes.report if self.routes is not None else None,
            )
        return self._admin

    # -- one relayed exchange -----------------------------------------------------------------------------

    async def _relay(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._in_flight >= self.config.max_concurrent:
            why = f"the relay is relaying {self.config.max_concurrent} requests already (max_concurrent)"
            headers = scope["headers"]
            await self._busy(send, _request_id(headers), scope, headers, why, "max_concurrent")
            return
        self._in_flight += 1
        held = Held(self._bodies)
        try:
            await self._relay_admitted(scope, receive, send, held)
        finally:
            held.release()
            self._in_flight -= 1

    async def _busy(
        self,
        send: Send,
        request_id: str,
        scope: Scope,
        headers: Iterable[tuple[bytes, bytes]],
        why: str,
        limit: str,
    ) -> None:
        """503 with ``Retry-After``: ``limit`` (one of the relay's) is full; recorded (``_refused``)."""
        log.warning(
            "refused %s %s: 503 %s [request_id=%s]",
            scope["method"],
            self._route(scope["path"]),
            why,
            request_id,
        )
        retry = [(b"retry-after", str(RETRY_AFTER_S).encode())]
        written = 0
        try:
            written = await answer(send, 503, request_id, "overloaded", why, retry)
        finally:
            self._refused(scope, headers, request_id, why, limit, written, RelayClose.OVERLOADED)

    async def _refuse(
        self,
        scope: Scope,
        headers: Iterable[tuple[bytes, bytes]],
        exchange: Downstream,
        status: int,
        why: str,
        rule: str,
        *,
        close: bool = False,
    ) -> None:
        """A 400, 408 or 413 (the request broke ``rule``); recorded (``_refused``)."""
        written = 0
        try:
            written = await exchange.refuse(status, why, close=close)
        finally:
            self._refused(scope, headers, exchange.request_id, why, rule, written, RelayClose.REFUSED)

    def _refused(
        self,
        scope: Scope,
        headers: Iterable[tuple[bytes, bytes]],
        request_id: str,
        why: str,
        limit: str,
        written: int,
        close: RelayClose,
    ) -> None:
        """A request on an LLM format's path that the relay refused is recorded as a run closed ``close`` when
        the tap would have run it (its body is not read: it may not have asked to stream); another request
        there (a background poll) is only answered."""
        path = scope["path"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        provider = format_of(self._rules, scope["method"], path, query)  # an LLM call as the tap sees one
        if provider is None:
            return
        ids = self._ids(request_id, path, headers)
        raw_path: bytes = scope.get("raw_path") or path.encode("utf-8")
        url = str(self._base.copy_with(raw_path=self._prefix + raw_path))
        run = TapRun(provider, body={}, url=url, config=self._stream_config, ids=Ids(context=ids))
        RelayedRun(run).refused(why, limit, written, close)

    def _route(self, path: str) -> str:
        """The record's route: ``path`` redacted, once per path (an API has few; per stream it was a cost)."""
        route = self._routes.get(path)
        if route is None:
            if len(self._routes) >= _ROUTES_KEPT:
                self._routes.clear()
            route = self._routes[path] = redact_text(path, limit=200)
        return route

    def _ids(self, request_id: str, path: str, headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
        """The correlation ids of a request's record (``ids.context``)."""
        ids = {"request_id": request_id, "route": self._route(path)}
        account = account_of(headers, self.config.account_headers, self.account_key)
        if account is not None:
            ids["account"] = account
        return ids

    async def _relay_admitted(self, scope: Scope, receive: Receive, send: Send, held: Held) -> None:
        headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        exchange = Downstream(
            _request_id(headers), scope["method"], self._route(scope["path"]), send, self.config.write_timeout
        )
        exchange.answer, exchange.max_answer = Held(self._answers), self.config.max_answer_bytes
        path = scope["path"]
        raw_path: bytes = scope.get("raw_path") or path.encode("utf-8")
        if not raw_path.startswith(b"/"):
            await self._refuse(scope, headers, exchange, 400, "the request target must be a path", _INVALID)
            return
        if _both_lengths(headers):  # RFC 9112 6.1: a smuggling vector; the connection's framing is unsure
            why = "Content-Length with Transfer-Encoding"
            await self._refuse(scope, headers, exchange, 400, why, _INVALID, close=True)
            return
        target = self._prefix + raw_path + (b"?" + scope["query_string"] if scope["query_string"] else b"")
        url = self._urls.get(target)  # a target seen before passed the checks below
        if url is None and _climbs(raw_path):
            why = "the path has a dot segment, an empty segment or an encoded slash"
            await self._refuse(scope, headers, exchange, 400, why, _INVALID)
            return
        body = await self._body(scope, receive, send, exchange, headers, held)
        if body is None:
            return
        ids = self._ids(exchange.request_id, path, headers)
        if url is None:  # once per path and query: parsing a URL per stream was a visible cost
            if len(self._urls) >= _ROUTES_KEPT:
                self._urls.clear()
            url = self._urls[target] = self._base.copy_with(raw_path=target)
        peer = (scope.get("client") or (None,))[0] if self.config.forward_client_address else None
        request = httpx.Request(scope["method"], url, headers=_forwarded(headers, peer), content=body)
        request.stream = BodyChunks(body)
        call = self._routed(scope, raw_path, body) if self.routes is not None else None
        begun = self._journal.begin(ids, request)  # a killed relay leaves a trace of this stream
        ids.update(begun)
        if sniffio.current_async_library() == "asyncio":
            # A bare task beside the exchange: a task group per stream cost 64-72 us (anyio starts a task
            # only in one); nothing waits for this task, it only listens and is cancelled at the end.
            watched = anyio.CancelScope()
            watcher = asyncio.get_running_loop().create_task(exchange.watch(receive, watched))
            watcher.add_done_callback(partial(_listened, watched))
            try:
                with watched:
                    await self._exchange_within(request, exchange, ids, _client(scope, ids), call)
            finally:
                watcher.cancel()
                exchange.release()
                self._journal.end(begun)
            return
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(exchange.watch, receive, tasks.cancel_scope)
            try:
                await self._exchange_within(request, exchange, ids, _client(scope, ids), call)
            finally:
                tasks.cancel_scope.cancel()
                exchange.release()
                self._journal.end(begun)

    async def _exchange_within(
        self,
        request: httpx.Request,
        exchange: Downstream,
        ids: dict[str, str],
        client: bytes,
        call: Routed | None = None,
    ) -> None:
        """The exchange with the request's correlation ids in context; cancelled from outside (the server's
        grace period for shutdown is over), the client hears why."""
        try:
            with context(**ids), relaying(client, exchange.take_on), _in_flight(self.metrics):
                await self._exchange(request, exchange, call)
        except anyio.get_cancelled_exc_class():
            if not exchange.client_gone:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_WRITE_S):
                    await exchange.shut_down()
            raise

    async def _body(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        exchange: Downstream,
        headers: list[tuple[bytes, bytes]],
        held: Held,
    ) -> bytes | None:
        """The whole request body, or None after answering 413 (too large), 408 (too slow) or 503 (no room in
        the body budget); its bytes are taken from the budget (``held``) before they are read."""
        limit = self.config.max_body_bytes
        too_large = f"the request body is over {limit} bytes"
        declared = _header(headers, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, headers, exchange, 413, too_large, "max_body_bytes")
            return None
        # Room is awaited for a while, not for the whole body timeout: a refusal is then a 503, never a 408.
        room_until = anyio.current_time() + min(_ROOM_WAIT_S, self.config.body_timeout / 2)
        no_room = (
            f"the request bodies in flight are at the relay's budget ({self.config.body_budget_bytes} bytes)"
        )
        if declared is not None and declared.isdigit() and not await held.grow(int(declared), room_until):
            await self._busy(send, exchange.request_id, scope, headers, no_room, "body_budget_bytes")
            return None
        buffer = bytearray()  # one growing buffer: many small chunks would scatter over the heap
        size = 0
        config = self.config
        started = anyio.current_time()
        timeout, rate, grace = config.body_timeout, config.body_min_rate, config.body_rate_grace
        with anyio.CancelScope(deadline=body_deadline(started, 0, timeout, rate, grace)) as waited:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    log.info("client left before its request body ended [request_id=%s]", exchange.request_id)
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    await self._refuse(scope, headers, exchange, 413, too_large, "max_body_bytes")
                    return None
                if size > held.amount:
                    waited.deadline = math.inf  # the wait for room is the relay's, not the client's
                    paused = anyio.current_time()
                    if not await held.grow(size, room_until):
                        await self._busy(
                            send, exchange.request_id, scope, headers, no_room, "body_budget_bytes"
                        )
                        return None
                    grace += anyio.current_time() - paused
                buffer += chunk
                if not message.get("more_body", False):
                    break
                waited.deadline = body_deadline(started, size, timeout, rate, grace)
        if waited.cancelled_caught:  # 408: the deadline (body_timeout) or the rate (body_min_rate)
            if anyio.current_time() - started >= timeout:
                why, rule = f"the request body did not arrive within {timeout:g} s", "body_timeout"
            else:
                why, rule = f"the request body arrived slower than {rate} bytes a second", "body_min_rate"
            # the body's rest is unread: the connection ends
            await self._refuse(scope, headers, exchange, 408, why, rule, close=True)
            return None
        return bytes(buffer)

    def _routed(self, scope: Scope, raw_path: bytes, body: bytes) -> Routed | None:
        """The request's routes in the table: an LLM call of a model it names (or of any, with ``*``)."""
        assert self.routes is not None
        query_string: bytes = scope["query_string"]
        query = dict(parse_qsl(query_string.decode("latin-1")))
        call = llm_request(self._rules, scope["method"], scope["path"], query, body)
        if call is None:
            return None
        model = call.body.get("model")
        routes = self.routes.table.for_model(model)
        if routes is None:
            return None
        target = raw_path + (b"?" + query_string if query_string else b"")
        return Routed(routes, target, body, call.provider, model if isinstance(model, str) else None)

    async def _exchange(self, request: httpx.Request, exchange: Downstream, call: Routed | None) -> None:
        client = self._upstream()
        if call is not None and self.routes is not None:
            await routed(client, request, exchange, self.routes, call, self._stream_config)
            return
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            why = "the upstream did not answer in time"
            await exchange.upstream_failed(504, why, exc)
            return
        except httpx.HTTPError as exc:
            why = "the upstream could not be reached"
            await exchange.upstream_failed(502, why, exc)
            return
        try:
            await exchange.stream(response)
        finally:
            if not response.is_closed:  # read to its end, httpx closed it already: no scopes to pay for
                with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
                    await response.aclose()


# -- helpers ------------------------------------------------------------------------------------------------


def _listened(exchange_scope: anyio.CancelScope, watcher: asyncio.Task[None]) -> None:
    """The listener ended: cancelled at the exchange's end, or it heard the disconnect. A failure of the
    server's ``receive`` ends the exchange (as a task group would) and is logged, its class only."""
    if not watcher.cancelled() and (failed := watcher.exception()) is not None:
        exchange_scope.cancel()
        log.warning("listening for the client's disconnect failed (%s)", type(failed).__name__)


def _in_flight(metrics: RelayMetrics | None) -> AbstractContextManager[None]:
    return metrics.in_flight() if metrics is not None else nullcontext()


def _client(scope: Scope, ids: dict[str, str]) -> bytes:
    """Who sent the request, for attempt chains: its account and its address (never recorded)."""
    peer = scope.get("client")
    host = str(peer[0]) if peer else ""
    return f"{ids.get('account', '')}\n{host}".encode("utf-8", "replace")


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _both_lengths(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    names = {key.lower() for key, _ in headers}
    return b"content-length" in names and b"transfer-encoding" in names


def _climbs(raw_path: bytes) -> bool:
    """Whether ``raw_path`` could leave the upstream's path once someone decodes or normalises it: a dot
    segment (``..``, ``.``, ``..;x``), an empty segment, a backslash or an encoded slash, in any spelling
    (percent-encoded, in either case, also twice over)."""
    path = raw_path
    for _ in range(_DECODINGS):
        if b"\\" in path or b"//" in path or _ENCODED_SEPARATOR.search(path):
            return True
        if any(segment.split(b";", 1)[0] in (b".", b"..") for segment in path.split(b"/")):
            return True
        decoded = unquote_to_bytes(path)
        if decoded == path:
            return False
        path = decoded
    return True  # still encoded after that many decodings: nobody's API path


def _request_id(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The client's ``x-request-id`` when it is a plain token, else a new one."""
    given = _header(headers, REQUEST_ID)
    if given and len(given) <= _MAX_REQUEST_ID and all(33 <= ord(c) < 127 for c in given):
        return given
    return f"req_{uuid.uuid4().hex}"


def _forwarded(headers: list[tuple[bytes, bytes]], peer: str | None) -> list[tuple[bytes, bytes]]:
    """The headers that go upstream: hop-by-hop and recomputed ones dropped, and every forwarding header
    the client sent (anyone can write one); ``peer``, when given, as the one ``X-Forwarded-For``."""
    drop = HOP_BY_HOP | _RECOMPUTED | _CLIENT_FORWARDING | connection_named(headers)
    out = [(k, v) for k, v in headers if (n := k.lower()) not in drop and not n.startswith(b"x-forwarded-")]
    if peer is not None:
        out.append((b"x-forwarded-for", peer.encode("latin-1")))
    return out


GC_THRESHOLDS: Final = (10_000, 20, 100)


def settle_collector() -> None:
    """For a process that serves the relay (``streamfsm relay``, each worker): what was loaded so far is kept
    out of every collection (``gc.freeze``), and the young generation is collected after 10,000 allocations
    instead of 700. A relayed stream leaves nothing to the cyclic collector, yet at 1,000 streams at once
    its passes over every live stream's objects cost about 0.4 ms of CPU per stream (measured against the
    defaults, one-delta streams)."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def new_token() -> str:
    return secrets.token_urlsafe(32)
