"""``/admin/...``: the errors page (HTML for people, JSON with ``Accept: application/json``), run pages, and
``/admin/metrics``, the Prometheus metrics (``_metrics``; under an admin path so that no upstream path is
shadowed).

Authorisation: ``Authorization: Bearer <token>`` (the token the relay read from its environment variable),
or, for a browser, the session cookie that ``POST /admin/login`` sets after the token was typed into its
form: a fresh value at each sign-in, keyed by the relay's session key (new at each start unless configured)
and the token, valid for ``SESSION_S``; ``HttpOnly``, ``SameSite=Strict``, path ``/admin``, and ``Secure``
when the relay's public URL is https or the request came over TLS. Without a configured token, the pages
are served only on a loopback listener, and refused (403) on any other.

The ``Host`` header (DNS rebinding: a page of another site whose name resolves to this relay): without a
token, or with a public URL configured, it must name a loopback name, the address the connection came in
on, or the public URL's host; else 403. Pages are read-only; the file reads run in a worker thread.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import logging
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

import anyio.to_thread

from ._errors import ErrorsData, PageQuery
from ._metrics import CONTENT_TYPE, RelayMetrics
from ._net import host_name, is_loopback, is_loopback_name
from ._page import Links, errors_page, run_page, runs_page

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

log: Final = logging.getLogger("streamfsm.relay")

_COOKIE: Final = "streamfsm_admin"
_ERRORS: Final = "/admin/errors"
_RUNS: Final = "/admin/errors/runs/"
_RUN_LIST: Final = "/admin/errors/runs"
_SEARCH: Final = "/admin/errors/search"
_LOGIN: Final = "/admin/login"
_METRICS: Final = "/admin/metrics"
_MAX_FORM: Final = 4096
SESSION_S: Final = 12 * 3600  # how long a sign-in lasts
_CLOCK_SKEW_S: Final = 60
_HTML: Final = b"text/html; charset=utf-8"
_SECURITY: Final = [
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def _login_form(message: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>streamfsm relay: sign in</title>"
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline';"
        ' form-action \'self\'"><link rel=icon href="data:,">'
        "<style>body{font:15px system-ui,sans-serif;margin:40px;color:#0f172a}input{font:inherit;padding:6px;"
        "width:28em}button{font:inherit;padding:6px 14px}</style></head><body>"
        f"<h1>streamfsm relay</h1><p id=why>{html.escape(message)}</p>"
        f'<form method=post action="{_LOGIN}"><label>Admin token <input type=password name=token '
        "autocomplete=off autofocus></label> <button type=submit>Sign in</button></form></body></html>"
    )


_FORWARDED: Final = frozenset({b"forwarded", b"x-forwarded-for", b"x-real-ip"})


class Admin:
    """The ``/admin`` ASGI application of one relay."""

    def __init__(
        self,
        token: str | None,
        data: ErrorsData,
        metrics: RelayMetrics | None = None,
        *,
        public_url: str | None = None,
        session_key: bytes | None = None,
        routes: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        self._token = token
        self._routes = routes  # the route table's routes and breakers, live (``_fallback.RouteBook``)
        self._session_key = session_key if session_key is not None else secrets.token_bytes(32)
        public = urllib.parse.urlsplit(public_url) if public_url is not None else None
        self._secure = public is not None and public.scheme == "https"
        self._public_host = host_name(public.hostname or "") if public is not None else None
        self.data = data
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        wants_json = _wants_json(scope)
        if not self._host_allowed(scope):
            why = "the Host header names no address of this relay (see --public-url)"
            log.warning("admin %s refused: 403 %s", path[:100], why)
            await _respond_json(send, 403, {"error": {"type": "forbidden", "message": why}})
            return
        if path == _LOGIN and self._token is not None:
            if method == "POST":
                await self._login(scope, receive, send)
            else:
                await _respond(send, 200, _login_form("Type the relay's admin token."), _HTML)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, why = refusal
            log.warning("admin %s refused: %d %s", path[:100], status, why)
            if wants_json or self._token is None:
                await _respond_json(send, status, {"error": {"type": "unauthorized", "message": why}})
            else:
                await _respond(send, status, _login_form(why), _HTML, [(b"www-authenticate", b"Bearer")])
            return
        if method not in ("GET", "HEAD"):
            await _respond_json(send, 405, {"error": {"type": "method_not_allowed", "message": "GET only"}})
            return
        if path == _METRICS:
            if self.metrics is None:
                why = "metrics need the metrics extra: pip install 'streamfsm[metrics]'"
                await _respond_json(send, 404, {"error": {"type": "not_found", "message": why}})
            else:
                text = await anyio.to_thread.run_sync(self.metrics.exposition)
                await _respond(send, 200, text.decode("utf-8"), CONTENT_TYPE.encode())
            return
        if path in (_ERRORS, _ERRORS + "/", "/admin", "/admin/", _RUN_LIST, _SEARCH):
            try:
                query = PageQuery.parse(scope.get("query_string", b""))
            except ValueError as exc:  # a filter the page cannot honour: said, not ignored
                await _respond_json(send, 400, {"error": {"type": "invalid_request", "message": str(exc)}})
                return
            links = Links(_run_link, query)
            if path == _SEARCH:
                await self._search(send, query, links, wants_json)
            elif path == _RUN_LIST:
                runs = await anyio.to_thread.run_sync(self.data.runs, query)
                if wants_json:
                    await _respond_json(send, 200, runs)
                else:
                    await _respond(send, 200, runs_page(runs, links), _HTML)
            else:
                report = await anyio.to_thread.run_sync(self.data.report, query)
                if self._routes is not None:
                    report["routes"] = self._routes()
                if wants_json:
                    await _respond_json(send, 200, report)
                else:
                    await _respond(send, 200, errors_page(report, links), _HTML)
            return
        if path.startswith(_RUNS):
            run_id = path[len(_RUNS) :]
            record = await anyio.to_thread.run_sync(self.data.find, run_id) if run_id else None
            if record is None:
                await _respond_json(send, 404, {"error": {"type": "not_found", "message": "no such run"}})
            elif wants_json:
                await _respond_json(send, 200, record.to_dict())
            else:
                await _respond(send, 200, run_page(record, _ERRORS), _HTML)
            return
        await _respond_json(send, 404, {"error": {"type": "not_found", "message": "no such admin page"}})

    async def _search(self, send: Send, query: PageQuery, links: Links, wants_json: bool) -> None:
        """A run id or a request id: its run's page (one run), or the list of its runs (a request retried)."""
        found = await anyio.to_thread.run_sync(self.data.search, query.q)
        rows = [_row(record) for record in found]
        if wants_json:
            await _respond_json(send, 200 if found else 404, {"query": query.q, "runs": rows})
        elif len(found) == 1:
            await _respond(send, 303, "", _HTML, [(b"location", _run_link(found[0].run_id).encode())])
        else:
            page = runs_page({"runs": rows, "filters": {}}, links, f"runs found for {query.q[:80]!r}")
            await _respond(send, 200 if found else 404, page, _HTML)

    def _host_allowed(self, scope: Scope) -> bool:
        """Whether the ``Host`` names this relay: checked without a token (the pages are open to whoever
        reaches loopback, a rebound page of another site included) and whenever a public URL names it."""
        if self._token is not None and self._public_host is None:
            return True
        given = _headers(scope, b"host")
        if not given:
            return True  # HTTP/1.0 without one: no browser's request
        host = host_name(given[0])
        server = scope.get("server") or (None, None)
        here = host_name(server[0]) if isinstance(server[0], str) else None
        return is_loopback_name(host) or host in (self._public_host, here)

    def _session(self, issued: int, nonce: str) -> str:
        assert self._token is not None
        signed = f"{issued}.{nonce}".encode()
        mac = hmac.new(self._session_key, self._token.encode() + b"\0" + signed, hashlib.sha256).hexdigest()
        return f"{issued}.{nonce}.{mac}"

    def _valid_session(self, cookie: str) -> bool:
        issued_text, _, rest = cookie.partition(".")
        nonce, _, _mac = rest.partition(".")
        if not issued_text.isdigit() or len(issued_text) > 12 or not nonce:
            return False
        issued = int(issued_text)
        if not -_CLOCK_SKEW_S <= time.time() - issued <= SESSION_S:
            return False
        return hmac.compare_digest(cookie.encode(), self._session(issued, nonce).encode())

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        if self._token is None:
            # Loopback on both ends, and no proxy in between (a reverse proxy on this host would make every
            # client look local): else a token is needed.
            server = scope.get("server") or (None, None)
            client = scope.get("client") or (None, None)
            proxied = any(key.lower() in _FORWARDED for key, _ in scope.get("headers", ()))
            if is_loopback(server[0]) and is_loopback(client[0]) and not proxied:
                return None
            return 403, "admin pages need a token (--admin-token-env) beyond loopback or behind a proxy"
        given = _bearer(scope)
        if given is not None and hmac.compare_digest(given.encode(), self._token.encode()):
            return None
        cookie = _cookie(scope)
        if cookie is not None and self._valid_session(cookie):
            return None
        if cookie is not None and given is None:
            return 401, "the sign-in expired or the relay restarted: sign in again"
        return 401, "wrong admin token" if given is not None else "admin token required"

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        with anyio.move_on_after(10.0):
            while True:
                message = await receive()
                body += message.get("body", b"")
                if len(body) > _MAX_FORM or not message.get("more_body", False):
                    break
        token = urllib.parse.parse_qs(body[:_MAX_FORM].decode("utf-8", "replace")).get("token", [""])[0]
        assert self._token is not None
        if not hmac.compare_digest(token.encode(), self._token.encode()):
            log.warning("admin sign-in refused: wrong admin token")
            await _respond(send, 401, _login_form("wrong admin token"), _HTML)
            return
        # A new value at each sign-in: a cookie planted before it is not the session it starts.
        value = self._session(int(time.time()), secrets.token_urlsafe(16))
        cookie = f"{_COOKIE}={value}; Path=/admin; Max-Age={SESSION_S}; HttpOnly; SameSite=Strict"
        if self._secure or scope.get("scheme") == "https":
            cookie += "; Secure"
        await _respond(
            send,
            303,
            "",
            _HTML,
            [(b"location", _ERRORS.encode()), (b"set-cookie", cookie.encode())],
        )


def _row(record: Any) -> dict[str, Any]:
    """A run's line in a list, from its record (what ``ErrorsData.runs`` gives from the store)."""
    ids = record.get("ids") or {}
    context = ids.get("context") or {}
    return {
        "run_id": record.run_id,
        "request_id": context.get("request_id"),
        "started_at": record.get("started_at"),
        "summary_key": record.summary_key,
        "class": record.failure_class,
        "provider": record.get("provider"),
        "model": record.get("model"),
        "route": context.get("route"),
        "account": context.get("account"),
        "close": (record.get("relay") or {}).get("close"),
        "title": (record.get("summary") or {}).get("title"),
    }


def _run_link(run_id: str) -> str:
    return _RUNS + urllib.parse.quote(run_id, safe="")


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == name]


def _wants_json(scope: Scope) -> bool:
    return any("application/json" in value for value in _headers(scope, b"accept"))


def _bearer(scope: Scope) -> str | None:
    for value in _headers(scope, b"authorization"):
        scheme, _, token = value.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return None


def _cookie(scope: Scope) -> str | None:
    for value in _headers(scope, b"cookie"):
        for part in value.split(";"):
            name, _, content = part.strip().partition("=")
            if name == _COOKIE:
                return content
    return None


async def _respond(
    send: Send, status: int, text: str, content_type: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = text.encode("utf-8")
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        *_SECURITY,
        *(extra or ()),
    ]
    with anyio.move_on_after(30.0):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})


async def _respond_json(send: Send, status: int, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False)
    await _respond(send, status, text, b"application/json")
