"""The relay's WebSocket pass-through: OpenAI Responses' WebSocket mode, relayed message for message.

A WebSocket upgrade on a path of a format spoken over a WebSocket (``Format.websocket_path``: the Responses
API's ``/responses``) opens the same path on the upstream as a WebSocket (``ws`` for ``http``, ``wss`` for
``https``), with the client's headers but the hop-by-hop and WebSocket handshake ones. Then, until either
side closes::

    client message  -> the upstream, unchanged   (a response.create starts a run: one record per response)
    upstream message -> the client, unchanged    (fed to the response's run, which ends at its terminal event)

Each message is relayed as the same text (its UTF-8 bytes unchanged; the frames around it are the relay's
own). A response's record is made by a ``RunCore`` fed the messages the client was sent, with the relay
section saying what was written; it ends at the response's terminal event, the upstream's close frame (before
it: ``eof_without_terminal``), a cut upstream socket (``disconnected``), or the client leaving
(``client_abort``). An upgrade the upstream refuses, or cannot be reached for, is refused downstream with a
close before the accept (the ASGI server answers 403): no response started, so no record.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import anyio
import anyio.abc

from ..runtime import Ids, MessageWire, RunCore, StreamConfig, WebSocketConnection, deliver
from ..wire import adapter_for, format_named
from ._downstream import HOP_BY_HOP, Receive, Scope, Send

__all__ = ["Responses", "relay_websocket", "relays_websocket", "upstream_headers"]

log: Final = logging.getLogger("streamfsm.relay")

_NOT_FORWARDED: Final = frozenset(
    {
        b"host",
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"sec-websocket-extensions",
        b"sec-websocket-accept",
        b"upgrade",
        b"connection",
    }
)
_UPSTREAM_FAILED: Final = 1011
_REFUSED: Final = 1008


def relays_websocket(fmt: str | None) -> bool:
    """Whether the relay passes a WebSocket of format ``fmt`` through (one spoken over a WebSocket)."""
    return fmt is not None and format_named(fmt).websocket_path is not None


def upstream_headers(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The client's upgrade headers that go upstream (auth among them: never recorded)."""
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in headers
        if name.lower() not in _NOT_FORWARDED and name.lower() not in HOP_BY_HOP
    }


def _event_type(text: str) -> str:
    """The event a message carries (its ``type``), for the relay section's last event sent."""
    try:
        kind = json.loads(text).get("type")
    except (ValueError, AttributeError):
        return "message"
    return kind if isinstance(kind, str) else "message"


class Responses:
    """The runs of one relayed connection: the response being relayed (one at a time), its record made when
    it ends."""

    def __init__(self, fmt: str, url: str, config: StreamConfig, context: Mapping[str, Any]) -> None:
        self.fmt, self.url, self.config, self.context = fmt, url, config, dict(context)
        self.headers: Mapping[str, str] = {}
        self.core: RunCore | None = None

    def started(self, text: str) -> None:
        """A client message: a ``response.create`` starts a response's run (the one before, if unfinished,
        ends as the client's abort)."""
        try:
            body = json.loads(text)
        except ValueError:
            return
        if not isinstance(body, dict) or body.get("type") != "response.create":
            return
        self.client_left()
        adapter = adapter_for(self.fmt)
        core = self.core = RunCore.for_request(
            adapter, body, self.url, config=self.config, ids=Ids(context=self.context)
        )
        core.begin()
        core.request_left()
        core.source_facts(status=101, headers=self.headers)
        core.headers(None, self.headers, MessageWire(adapter, core.rec))

    def relayed(self, text: str) -> None:
        """An upstream message the client was sent."""
        core = self.core
        if core is None or core.done:
            return
        core.feed(text)
        core.relayed(_event_type(text), len(text.encode()), terminal=core.done)
        core.take_failure()
        if core.done:
            self._ended()

    def upstream_closed(self, code: int | None) -> None:
        core = self.core
        if core is None or core.done:
            return
        wire = core.wire
        if isinstance(wire, MessageWire):
            wire.closed, wire.close_code = True, code
        core.end()
        core.take_failure()
        self._ended()

    def upstream_cut(self, exc: Exception) -> None:
        core = self.core
        if core is None or core.done:
            return
        core.fault(exc)
        core.take_failure()
        self._ended()

    def client_left(self) -> None:
        core = self.core
        if core is None or core.done:
            return
        core.local_end(None)
        core.take_failure()
        self._ended()

    def _ended(self) -> None:
        core, self.core = self.core, None
        if core is None:
            return
        record = core.seal()
        if record is not None:
            deliver(self.config.sinks, record)


async def relay_websocket(
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    fmt: str,
    upstream_url: str,
    config: StreamConfig,
    context: Mapping[str, Any],
) -> None:
    """Relay one client WebSocket (ASGI) to ``upstream_url``, recording each response."""
    if (await receive())["type"] != "websocket.connect":
        return
    connection = WebSocketConnection(
        upstream_url, headers=upstream_headers(scope["headers"]), max_message_bytes=config.max_line_bytes
    )
    try:
        with anyio.fail_after(config.connect_timeout or 30.0):
            await connection.connect_tcp()
            await connection.handshake()
    except Exception as exc:  # WebSocketRefused, or no connection
        log.warning("WebSocket upstream refused or unreachable (%s)", type(exc).__name__)
        await connection.aclose()
        await send({"type": "websocket.close", "code": _REFUSED})
        return
    responses = Responses(fmt, upstream_url, config, context)
    responses.headers = connection.upgrade_headers
    await send({"type": "websocket.accept"})

    async def upstream_to_client(group: anyio.abc.TaskGroup) -> None:
        code = _UPSTREAM_FAILED
        try:
            while (message := await connection.receive()) is not None:
                await send({"type": "websocket.send", "text": message})
                responses.relayed(message)
            responses.upstream_closed(connection.close_code)
            code = connection.close_code or 1000
        except Exception as exc:
            responses.upstream_cut(exc)
        with contextlib.suppress(Exception):  # the client may have gone first
            await send({"type": "websocket.close", "code": code})
        group.cancel_scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(upstream_to_client, group)
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    responses.client_left()
                    group.cancel_scope.cancel()
                    break
                if message["type"] != "websocket.receive":
                    continue
                text = message.get("text")
                if text is None:
                    data = message.get("bytes") or b""
                    text = data.decode("utf-8", "replace")
                responses.started(text)
                await connection.send_text(text)
    finally:
        responses.client_left()
        with anyio.CancelScope(shield=True):
            await connection.aclose()
