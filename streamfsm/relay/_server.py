"""The relay's connection bounds under uvicorn (``streamfsm relay``): uvicorn's h11 protocol, plus

* a header timeout: a connection that has not sent a whole request head within ``header_timeout`` seconds of
  connecting, or of its previous response ending, is closed (uvicorn has no such timeout: a client that sends
  half a request line and stalls holds its connection for ever);
* a connection limit: at ``max_connections`` open client connections, a new one closes the oldest connection
  still waiting for its request head (idle keep-alive or half-sent), or, when every one is inside a request,
  is closed at once. Half-open connections therefore cannot keep a real client out;
* quiet accept errors: what the event loop logs when ``accept()`` fails (out of file descriptors) is written
  at most once per ``QUIET_S`` seconds, with how many were held back.

This module imports uvicorn: only the command line (and the tests) load it.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
import weakref
from typing import Any, ClassVar, Final

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["GuardedH11Protocol", "QuietAcceptErrors", "default_max_connections"]

log: Final = logging.getLogger("streamfsm.relay")

QUIET_S: Final = 10.0
HEADER_TIMEOUT_S: Final = 10.0
_FDS_KEPT: Final = 128  # descriptors left for the listener, the logs and the upstream pool's idle connections


def default_max_connections() -> int:
    """Client connections the process's descriptor limit leaves room for: each relayed one also holds an
    upstream connection."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(8, min(4096, (soft - _FDS_KEPT) // 2))


class _Server:
    """Per uvicorn server: the connections waiting for a request head (oldest first) and what was closed."""

    def __init__(self) -> None:
        self.waiting: dict[GuardedH11Protocol, None] = {}
        self.timed_out = 0
        self.evicted = 0
        self.refused = 0
        self.said = 0.0

    def tell(self, protocol: GuardedH11Protocol) -> None:
        """Say what was closed, at most once per ``QUIET_S`` (a flood must not flood the log)."""
        now = time.monotonic()
        if now - self.said < QUIET_S:
            return
        self.said = now
        log.warning(
            "closed client connections: %d without a whole request head within %g s, %d to make room at"
            " the limit of %d connections, %d refused there (every connection inside a request)",
            self.timed_out,
            protocol.header_timeout,
            self.evicted,
            protocol.max_connections,
            self.refused,
        )
        self.timed_out = self.evicted = self.refused = 0


_SERVERS: weakref.WeakKeyDictionary[Any, _Server] = weakref.WeakKeyDictionary()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header timeout and a connection limit (class attributes: set them on a
    subclass, or with ``configure``)."""

    header_timeout: ClassVar[float] = HEADER_TIMEOUT_S
    max_connections: ClassVar[int] = default_max_connections()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._server = _SERVERS.setdefault(self.server_state, _Server())
        self._head_timer: asyncio.TimerHandle | None = None

    @classmethod
    def configure(cls, *, header_timeout: float | None, max_connections: int | None) -> None:
        if header_timeout is not None:
            cls.header_timeout = header_timeout
        if max_connections is not None:
            cls.max_connections = max_connections

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        server = self._server
        if len(self.connections) > self.max_connections:
            oldest = next(iter(server.waiting), None)
            if oldest is None:
                server.refused += 1
                server.tell(self)
                transport.abort()
                return
            server.evicted += 1
            server.tell(self)
            oldest._close_waiting()
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_request():
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self._in_request():
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    # -- the wait for a request head ----------------------------------------------------------------------

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _await_head(self) -> None:
        self._head_arrived()
        self._server.waiting[self] = None
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_late)

    def _head_arrived(self) -> None:
        self._server.waiting.pop(self, None)
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if not self._in_request():
            self._server.timed_out += 1
            self._server.tell(self)
            self._close_waiting()

    def _close_waiting(self) -> None:
        self._head_arrived()
        if not self.transport.is_closing():
            self.transport.abort()  # nothing of ours is in flight: no need to flush anything


class QuietAcceptErrors(logging.Filter):
    """The event loop's "socket.accept() out of system resource" and its traceback, once per ``QUIET_S``."""

    def __init__(self) -> None:
        super().__init__()
        self._said = 0.0
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if "accept()" not in record.getMessage():
            return True
        now = time.monotonic()
        if now - self._said < QUIET_S:
            self._held += 1
            return False
        record.msg = f"{record.msg} ({self._held} more like it held back in the last {QUIET_S:g} s)"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        self._said, self._held = now, 0
        return True
