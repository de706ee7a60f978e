"""How the retry executor (``_retry``) does its I/O, async or sync: enter, read and leave one attempt's run,
sleep, and wait for a delay or a confirmation that ``abort()`` may end early.

The executor is written once, as coroutines. On the sync form (``with`` / ``for`` over sync runs) its runs,
sleeps and confirmations are sync, so its coroutines never suspend: `drive` runs one to its end on the
caller's thread.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

from ...wire import ConsumerEvent
from ..drivers._stream import Run

__all__ = ["AttemptIo", "drive"]

_T = TypeVar("_T")


class AttemptIo:
    """The executor's I/O: async until ``go_sync()`` (the chain was entered with ``with``)."""

    def __init__(self, sleep: Callable[[float], Any] | None = None) -> None:
        self.sync = False
        self._given_sleep = sleep
        self.sleep: Callable[[float], Any] = anyio.sleep if sleep is None else sleep
        self._wake = threading.Event()  # ends a sync delay early
        self._scope: anyio.CancelScope | None = None  # ends an async wait early

    def go_sync(self) -> None:
        """The runs, ``sleep`` and ``confirm`` are sync from now on; a default sleep wakes on `interrupt`."""
        self.sync = True
        if self._given_sleep is None:
            self.sleep = self._wake.wait

    def interrupt(self) -> None:
        """End the current wait (``abort()``): a delay or a confirmation."""
        if self._scope is not None:
            self._scope.cancel()
        self._wake.set()

    async def wait(self, awaitable: Awaitable[Any]) -> Any:
        """Await a delay or a confirmation; `interrupt` ends it early (the result is then None)."""
        if self.sync:  # a sync sleep or confirm has already run (a sync delay wakes on interrupt())
            return await awaitable if inspect.isawaitable(awaitable) else awaitable
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                return await awaitable
            finally:
                self._scope = None
        return None

    async def enter(self, run: Run) -> None:
        if self.sync:
            run.__enter__()  # type: ignore[attr-defined]
        else:
            await run.__aenter__()

    async def next(self, run: Run) -> ConsumerEvent:
        if not self.sync:
            return await run.__anext__()
        try:
            return next(run)  # type: ignore[call-overload,no-any-return]
        except StopIteration:
            raise StopAsyncIteration from None

    async def exit(self, run: Run, exc: BaseException | None) -> None:
        if self.sync:
            run.__exit__(*((None, None, None) if exc is None else (type(exc), exc, exc.__traceback__)))  # type: ignore[attr-defined]
        elif exc is None:
            await run.__aexit__(None, None, None)
        else:
            await run.__aexit__(type(exc), exc, exc.__traceback__)


def drive(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run one of the executor's coroutines to its end on the sync form: its runs, delays and confirmations
    are sync there, so it never suspends. One that would (an async ``confirm``) is an error."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise TypeError("a sync retrying run awaited something: give it a sync confirm, sleep and open_attempt")
