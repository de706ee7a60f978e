"""What the relay admits at once: requests in flight, the bytes of the request bodies it holds, and those of
the non-streaming answers its runs keep whole (``Held.take_now``: an answer is not waited for, it is refused).

A request body is held whole (the tap reads it to know whether the request is a stream, and it goes upstream
as one body with its length), from the first byte read until the exchange ends. Each byte is taken from one
budget per relay before it is read, so the bodies held at once never pass ``body_budget_bytes`` whatever the
clients send. A request that finds no room waits for it while its body may still arrive (``body_timeout``),
then is answered 503 with ``Retry-After``; so is a request beyond ``max_concurrent``.

A request body must arrive whole within ``body_timeout`` of its head, and at ``body_min_rate`` bytes a second
on average once its first ``body_rate_grace`` seconds are over (``body_deadline``); else 408. A body sent a
byte at a time would otherwise hold its connection (and a slot of the connection limit) for the whole body
timeout.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from typing import Final

import anyio
import httpx

RETRY_AFTER_S: Final = 1  # what a refused client is told to wait: the budget frees as exchanges end
_SLICE: Final = 256 * 1024  # bytes of a request body per upstream write


class Budget:
    """Units (bytes) held by the exchanges in flight, at most ``limit`` at once. One event loop uses it (the
    ASGI server's); a ``take`` that finds no room waits until ``give`` frees some, or until its deadline."""

    __slots__ = ("_freed", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._freed: anyio.Event | None = None

    async def take(self, amount: int, deadline: float) -> bool:
        """Whether ``amount`` was taken before ``deadline`` (``anyio.current_time()`` clock)."""
        if amount > self.limit:
            return False
        while self.used + amount > self.limit:
            if self._freed is None:
                self._freed = anyio.Event()
            freed = self._freed
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                await freed.wait()
            if not freed.is_set():
                return False
        self.used += amount
        return True

    def give(self, amount: int) -> None:
        self.used -= amount
        freed, self._freed = self._freed, None
        if freed is not None:
            freed.set()


class Held:
    """The part of the body budget one exchange holds; ``release`` gives it all back (once)."""

    __slots__ = ("_budget", "amount")

    def __init__(self, budget: Budget) -> None:
        self._budget = budget
        self.amount = 0

    async def grow(self, total: int, deadline: float) -> bool:
        """Hold at least ``total`` bytes; False when the budget had no room before ``deadline``."""
        more = total - self.amount
        if more <= 0:
            return True
        if not await self._budget.take(more, deadline):
            return False
        self.amount = total
        return True

    def take_now(self, total: int) -> bool:
        """Hold at least ``total`` bytes if the budget has room now (no wait)."""
        more = total - self.amount
        if more <= 0:
            return True
        budget = self._budget
        if budget.used + more > budget.limit:
            return False
        budget.used += more
        self.amount = total
        return True

    def release(self) -> None:
        amount, self.amount = self.amount, 0
        if amount:
            self._budget.give(amount)


def body_deadline(started: float, received: int, timeout: float, min_rate: int, grace: float) -> float:
    """When a request body whose head came at ``started`` and of which ``received`` bytes came so far is too
    slow: ``grace`` seconds after its head plus one second per ``min_rate`` bytes received, and never after
    ``timeout`` (one clock: ``anyio.current_time()``)."""
    return started + min(timeout, grace + received / min_rate)


def check_limit(name: str, value: object) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 < value < math.inf):
        raise ValueError(f"{name} must be a positive integer, not {value!r}")


class BodyChunks(httpx.ByteStream):
    """A request body held in memory, sent upstream a slice at a time: one whole write would be copied whole
    into the event loop's send buffer (a second copy of every large body in flight)."""

    def __init__(self, body: bytes) -> None:
        super().__init__(body)
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        body = self._body
        for start in range(0, len(body), _SLICE):
            yield body[start : start + _SLICE]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self:
            yield piece
