"""The event loop's watchdog: one timer for every run's read deadline, re-armed lazily.

A cancel scope with a deadline around each network read arms and disarms a loop timer per read, which cost
as much as all the rest of the run's work on a read that carries one token. Instead a read enters a plain
cancel scope, and its run tells this watchdog when to look at it next. The watchdog sleeps until the earliest
such time, asks each run that is due whether its read's deadline has passed, and if so the run cancels that
read.
A stream that keeps producing only moves its idle deadline later, so it is looked at about once per idle
timeout, not once per read.

There is one watchdog per event loop (an anyio ``RunVar``), a system task that exits when nothing is left to
watch and is started again on demand (on asyncio, also when something else cancels it while reads wait).
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import logging
import math
import sys
import time
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.lowlevel

_log = logging.getLogger("streamfsm")

# A heap entry: [when (monotonic), tie-breaker, callback or None once handled or forgotten]. A list, so that
# forgetting is O(1): the entry is emptied in place and dropped when it reaches the top, or by a compaction.
Entry = list[Any]
ENTRY_WHEN, ENTRY_CALLBACK = 0, 2
_COMPACT_ABOVE: Final = 64  # dead entries tolerated before a compaction, plus one per live entry


class LoopWatchdog:
    """Calls ``callback(now)`` at (or just after) each registered time, on its own task in the loop."""

    def __init__(self) -> None:
        self._heap: list[Entry] = []
        self._order = itertools.count()
        self._live = 0
        self._running = False
        self._sleep: anyio.CancelScope | None = None  # the scope the task sleeps in; its deadline wakes it
        self._sleeping_until = math.inf
        self._task: Any = None  # asyncio: the task, held so it is not collected while it sleeps

    @property
    def running(self) -> bool:
        """Whether its task is alive (it ends soon after the last entry is handled or forgotten)."""
        return self._running

    def watch(self, when: float, callback: Callable[[float], None]) -> Entry:
        """Call ``callback(now)`` once ``time.monotonic()`` reaches ``when``; the entry is for ``forget``."""
        entry: Entry = [when, next(self._order), callback]
        heapq.heappush(self._heap, entry)
        self._live += 1
        if not self._running:
            self._start()
        elif when < self._sleeping_until and self._sleep is not None:
            self._sleeping_until = when
            self._sleep.deadline = loop_time(when)
        return entry

    def forget(self, entry: Entry) -> None:
        if entry[ENTRY_CALLBACK] is None:
            return
        entry[ENTRY_CALLBACK] = None
        self._live -= 1
        if self._live == 0:
            if self._sleep is not None:
                self._sleep.cancel()  # nothing left to watch: let the task end
        elif len(self._heap) > 2 * self._live + _COMPACT_ABOVE:
            live = [e for e in self._heap if e[ENTRY_CALLBACK] is not None]
            self._heap[:] = live  # in place: _main holds this list
            heapq.heapify(self._heap)

    def _start(self) -> None:
        self._running = True  # first: an eager task factory runs _main inside create_task
        try:
            trio = _running_trio()
            if trio is not None:
                trio.lowlevel.spawn_system_task(self._main, name="streamfsm-watchdog")
                return
            # An empty context: the task must not keep whatever context the first run happened to have.
            loop = asyncio.get_running_loop()
            task = contextvars.Context().run(loop.create_task, self._main(), name="streamfsm-watchdog")
        except BaseException:
            self._running = False
            raise
        self._task = task
        task.add_done_callback(self._task_ended)

    def _task_ended(self, task: asyncio.Task[None]) -> None:
        """asyncio: something outside cancelled the task (maybe before its first step, so that its ``finally``
        never ran) while reads still wait on it: start another."""
        if task is not self._task:
            return
        self._task = None
        if not self._running:
            return  # _main ended by itself (or a newer task already runs)
        self._running = False
        if self._live and not task.get_loop().is_closed():
            self._start()

    async def _main(self) -> None:
        try:
            heap = self._heap
            while self._live:
                now = time.monotonic()
                while heap and (heap[0][ENTRY_CALLBACK] is None or heap[0][ENTRY_WHEN] <= now):
                    entry = heapq.heappop(heap)
                    callback = entry[ENTRY_CALLBACK]
                    if callback is None:
                        continue
                    entry[ENTRY_CALLBACK] = None
                    self._live -= 1
                    try:
                        callback(now)  # may watch again
                    except Exception:
                        _log.exception("a watchdog callback failed")
                if not heap:
                    break
                self._sleeping_until = heap[0][ENTRY_WHEN]
                with anyio.CancelScope(deadline=loop_time(self._sleeping_until)) as self._sleep:
                    await anyio.sleep_forever()
                self._sleep = None
        finally:
            # Entries stay: if the task was cancelled from outside, the next one serves them.
            self._sleep, self._sleeping_until = None, math.inf
            if not self._live or _running_trio() is not None:
                self._running = False  # trio cancels system tasks only when the whole run ends


def loop_time(when: float) -> float:
    """``when`` (``time.monotonic``) on the running event loop's clock."""
    # Event-loop clocks may be offset from time.monotonic (trio's is, on purpose).
    if when == math.inf:
        return math.inf
    return anyio.current_time() + (when - time.monotonic())


_WATCHDOG: Final[anyio.lowlevel.RunVar[LoopWatchdog]] = anyio.lowlevel.RunVar("streamfsm_watchdog")


def loop_watchdog() -> LoopWatchdog:
    """The current event loop's watchdog."""
    try:
        return _WATCHDOG.get()
    except LookupError:
        watchdog = LoopWatchdog()
        _WATCHDOG.set(watchdog)
        return watchdog


def _running_trio() -> Any:
    """The trio module if this thread runs a trio loop (anyio's only other backend is asyncio)."""
    trio = sys.modules.get("trio")
    return trio if trio is not None and trio.lowlevel.in_trio_run() else None


def plain_scope_class() -> Callable[[], anyio.CancelScope]:
    """The cheapest way to make a cancel scope without a deadline on the running loop, for a scope per read.
    ``anyio.CancelScope()`` looks the backend up on every call; on trio, trio's own scope skips anyio's
    wrapper (each saves about a microsecond per read)."""
    trio = _running_trio()
    if trio is not None:
        return trio.CancelScope  # type: ignore[no-any-return]
    return type(anyio.CancelScope())
