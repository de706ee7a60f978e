"""A sync ``open_stream``: one streaming request over httpx's sync client, driven as the async one is.

    with open_sync_stream("openai-chat", base_url=..., json=body, headers=auth) as run:
        for event in run:
            ...

The same core, wire adapters, records and failures as ``open_stream``; the reads block, watched by the run's
watchdog thread, which shuts the socket down when a deadline passes or ``abort()`` is called (also from
another thread). A sync wait for the headers cannot be cancelled: it is bounded by capping the request's own
timeouts at the connect deadline (the body's reads then wait as long as the watchdogs allow). A recovery plan
(``ids.recovery``: continue, resume) is the async executor's: refused here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

import httpx

from ...classify import TransportKind, provider_error_from_http, transport_facts
from ...machine import Trigger
from ...wire import Adapter, adapter_for
from ..core._config import Ids, StreamConfig
from ..core._run_core import RunCore
from ..core._urls import check_base_url
from ._stream import _default_tls, sync_body_chunks, traced
from ._sync_reads import socket_of
from ._sync_run import SyncRun

__all__ = ["SyncHttpRun", "open_sync_stream"]

_TIMEOUTS: Final = ("connect", "read", "write", "pool")


class SyncHttpRun(SyncRun):
    """A run over our own sync ``httpx`` client: SSE bytes → wire adapter → events. Make one with
    ``open_sync_stream``."""

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        json: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        client: httpx.Client | None = None,
        config: StreamConfig | None = None,
        ids: Ids | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(json, Mapping):
            raise TypeError("json must be a mapping (the request body)")
        check_base_url(base_url)  # a configuration mistake: raised before anything is sent or recorded
        if Ids.coerce(ids).recovery is not None:
            raise ValueError("a recovery plan (continue, resume) is for the async open_stream")
        adapter: Adapter = adapter_for(provider)
        url, body = adapter.request(base_url, json)
        self._hold(RunCore.for_request(adapter, json, url, config=config, ids=ids))
        self._adapter = adapter
        self._url, self._body = url, body
        self._headers = dict(headers or {})
        self._client = client
        self._owns_client = client is None
        self._connected = False
        self._response: httpx.Response | None = None

    def _trace(self, name: str, info: Mapping[str, Any]) -> None:
        if traced(self._core, name):
            self._connected = True

    def _connect_sync(self) -> None:
        core = self._core
        if self._client is None:  # made before the clock starts, as the async driver's
            self._client = httpx.Client(verify=_default_tls())
        core.begin()
        deadline, edge = core.timing.connect_deadline(core.clock())
        left = deadline - time.monotonic()
        wait = None if left == float("inf") else max(left, 0.001)
        request = self._client.build_request(
            "POST",
            self._url,
            json=self._body,
            headers=self._headers,
            timeout=httpx.Timeout(wait),
            extensions={"trace": self._trace},
        )
        try:
            response = self._client.send(request, stream=True)
        except Exception as exc:
            if time.monotonic() >= deadline and isinstance(exc, httpx.TimeoutException):
                core.request_left()  # unknown; the request may well have left: say it may be delivered
                raise core.timed_out(edge) from exc
            kind = transport_facts(exc, headers_received=False).kind
            if kind is TransportKind.CONNECT_TIMEOUT:
                fault = Trigger.CONNECT_TIMEOUT
            elif self._connected or kind is TransportKind.CLOSED_BEFORE_RESPONSE:
                fault = Trigger.DISCONNECTED
            else:
                fault = Trigger.CONNECT_FAILED
            raise core.fault(exc, fault)  # noqa: B904  # chained from exc by the core
        finally:
            request.extensions.pop("trace", None)  # the response keeps its request, which would keep the run
        self._response = response
        reads = self._reads
        reads.socket, reads.response = socket_of(response), response
        status = response.status_code
        if not 200 <= status < 300:
            core.headers(status, response.headers)
            raise core.http_error(
                provider_error_from_http(status, response.headers, self._error_body(response))
            )
        # The body's reads wait as long as the watchdogs allow: httpcore reads the timeouts at each read.
        request.extensions["timeout"] = dict.fromkeys(_TIMEOUTS)
        self._iterator = sync_body_chunks(response)
        core.headers(status, response.headers, core.stream_wire(self._adapter))

    def _error_body(self, response: httpx.Response) -> bytes:
        """An HTTP error's body, bounded (its reads keep the capped timeouts): what the status alone cannot
        say."""
        core = self._core
        try:
            for chunk in response.iter_bytes():
                core.feed(chunk)  # kept, bounded
                if core.error_read is None or not core.error_read.short:
                    break
        except Exception:
            pass  # the status already says what happened; a broken error body only loses detail
        return bytes(core.error_read.body) if core.error_read is not None else b""

    def _close_sync(self) -> None:
        try:
            if self._response is not None:
                self._response.close()
        finally:
            if self._owns_client and self._client is not None:
                self._client.close()


def open_sync_stream(
    provider: str,
    *,
    base_url: str,
    json: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    client: httpx.Client | None = None,
    config: StreamConfig | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
) -> SyncHttpRun:
    """``open_stream`` for sync code: use it as a context manager (``with``); the request is sent on entry.
    ``client``: an ``httpx.Client``, used and left open when given. See ``open_stream``."""
    return SyncHttpRun(
        provider, base_url=base_url, json=json, headers=headers, client=client, config=config, ids=ids
    )
