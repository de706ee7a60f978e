"""The event loop's watchdog: when a run's read deadline passes, the run cancels that read.

A cancel scope with a deadline around each network read arms and disarms a loop timer per read, which cost
as much as all the rest of the run's work on a read that carries one token. Instead a read waits in a plain
cancel scope, and its run tells this watchdog when to look at it next; when that time comes the run checks
whether its read's deadline has passed and, if so, cancels the read. Registration is lazy: a stream that
keeps producing only moves its idle deadline later, so it is looked at about once per idle timeout, not once
per read.

One watchdog per event loop (an anyio ``RunVar``): on asyncio a loop timer per registered time, on trio one
system task over a heap.

A deadline that passed is not yet silence: a loop held by another task (or a thread holding the GIL) runs
its timers and its reads in the same pass once it is free, and a FIN, an RST or data that came in meanwhile
is still to be read. So a run that finds its read due first looks at what has arrived: it lets the loop run
the read a few times (``ARRIVAL_LOOKS`` looks ``ARRIVAL_LOOK_S`` apart), and goes on waiting while the
connection's socket holds something to read (``readable``); only a read still waiting on an empty socket
then ends as a timeout, at the time its deadline was found passed.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
import select
import socket
import sys
import time
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.lowlevel

_log = logging.getLogger("streamfsm")
_COMPACT_ABOVE: Final = 64  # dead heap entries tolerated before a compaction, plus one per live entry
ARRIVAL_LOOK_S: Final = 0.001  # apart: each look lets the loop run the read at least once
ARRIVAL_LOOKS: Final = 3  # looks before a read on an empty socket (or with no socket known) times out
MAX_ARRIVAL_LOOKS: Final = 500  # looks while the socket holds something the read has not taken


class Entry:
    """One registered time. Live until it is called back or forgotten (then ``callback`` is None)."""

    __slots__ = ("callback", "handle", "when")

    def __init__(self, when: float, callback: Callable[[float], None]) -> None:
        self.when = when
        self.callback: Callable[[float], None] | None = callback
        self.handle: asyncio.TimerHandle | None = None  # asyncio: the loop's timer

    def fire(self) -> None:
        callback, self.callback = self.callback, None
        if callback is None:
            return
        try:
            callback(time.monotonic())  # may watch again
        except Exception:
            _log.exception("a watchdog callback failed")


class LoopWatchdog:
    """Calls ``callback(now)`` at (or just after) each registered time, on the running event loop."""

    def watch(self, when: float, callback: Callable[[float], None]) -> Entry:
        """Call ``callback(now)`` once ``time.monotonic()`` reaches ``when``; the entry is for ``forget``."""
        raise NotImplementedError

    def forget(self, entry: Entry) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        """Whether anything is armed (on trio: whether its task is alive; it ends soon after the last entry
        is called back or forgotten)."""
        raise NotImplementedError


class AsyncioWatchdog(LoopWatchdog):
    """asyncio has timers: one ``call_at`` per live entry, and nothing else. No task that a shutdown helper
    could cancel, nothing left behind when the loop closes, and nothing here that holds the loop."""

    def __init__(self) -> None:
        self._live = 0

    @property
    def running(self) -> bool:
        return self._live > 0

    def watch(self, when: float, callback: Callable[[float], None]) -> Entry:
        entry = Entry(when, callback)
        loop = asyncio.get_running_loop()
        entry.handle = loop.call_at(loop.time() + (when - time.monotonic()), self._fire, [entry])
        self._live += 1
        return entry

    def _fire(self, held: list[Entry]) -> None:
        # The timer holds its entry in a list emptied here: a fired handle that outlives its loop (a closed
        # loop's cycles) then takes no entry, nor what the entry held, into those cycles. (cancel() drops a
        # forgotten one's arguments itself.)
        entry = held.pop()
        if entry.callback is None:
            return
        early = entry.when - time.monotonic()
        if early > 0:  # the loop runs timers up to its clock resolution early
            loop = asyncio.get_running_loop()
            entry.handle = loop.call_at(loop.time() + early, self._fire, [entry])
            return
        entry.handle = None  # the handle holds the entry: a cycle the collector would have to break
        self._live -= 1
        entry.fire()

    def forget(self, entry: Entry) -> None:
        if entry.callback is None:
            return
        entry.callback = None
        self._live -= 1
        if entry.handle is not None:
            entry.handle.cancel()
            entry.handle = None


class TrioWatchdog(LoopWatchdog):
    """trio has no timers but deadlines: one system task sleeps until the earliest entry of a heap. It exits
    when nothing is left to watch and is started again on demand; trio cancels system tasks only when the
    whole run ends."""

    def __init__(self) -> None:
        # Heap items are (when, order, entry): forgetting empties the entry in place (O(1)); dead items are
        # dropped when they reach the top, or by a compaction.
        self._heap: list[tuple[float, int, Entry]] = []
        self._order = itertools.count()
        self._live = 0
        self._running = False
        self._sleep: Any = None  # the scope the task sleeps in; moving its deadline wakes it early
        self._sleeping_until = math.inf

    @property
    def running(self) -> bool:
        return self._running

    def watch(self, when: float, callback: Callable[[float], None]) -> Entry:
        entry = Entry(when, callback)
        heapq.heappush(self._heap, (when, next(self._order), entry))
        self._live += 1
        if not self._running:
            self._running = True
            running_trio().lowlevel.spawn_system_task(self._main, name="streamfsm-watchdog")
        elif when < self._sleeping_until and self._sleep is not None:
            self._sleeping_until = when
            self._sleep.deadline = loop_time(when)
        return entry

    def forget(self, entry: Entry) -> None:
        if entry.callback is None:
            return
        entry.callback = None
        self._live -= 1
        if self._live == 0:
            if self._sleep is not None:
                self._sleep.cancel()  # nothing left to watch: let the task end
        elif len(self._heap) > 2 * self._live + _COMPACT_ABOVE:
            live = [item for item in self._heap if item[2].callback is not None]
            self._heap[:] = live  # in place: _main holds this list
            heapq.heapify(self._heap)

    async def _main(self) -> None:
        heap = self._heap
        try:
            while self._live:
                now = time.monotonic()
                while heap and (heap[0][2].callback is None or heap[0][0] <= now):
                    entry = heapq.heappop(heap)[2]
                    if entry.callback is not None:
                        self._live -= 1
                        entry.fire()
                if not heap:
                    break
                self._sleeping_until = heap[0][0]
                with anyio.CancelScope(deadline=loop_time(self._sleeping_until)) as self._sleep:
                    await anyio.sleep_forever()
                self._sleep = None
        finally:
            # Also when the run ends with runs still open: nothing will read again on this loop.
            for _, _, entry in heap:
                entry.callback = None
            heap.clear()
            self._live = 0
            self._running, self._sleep, self._sleeping_until = False, None, math.inf


def loop_time(when: float) -> float:
    """``when`` (``time.monotonic``) on the running event loop's clock."""
    # Event-loop clocks may be offset from time.monotonic (trio's is, on purpose).
    if when == math.inf:
        return math.inf
    return anyio.current_time() + (when - time.monotonic())


_WATCHDOG: Final[anyio.lowlevel.RunVar[LoopWatchdog]] = anyio.lowlevel.RunVar("streamfsm_watchdog")


def new_watchdog() -> LoopWatchdog:
    """A watchdog for the running event loop's backend."""
    return TrioWatchdog() if running_trio() is not None else AsyncioWatchdog()


def loop_watchdog() -> LoopWatchdog:
    """The current event loop's watchdog."""
    try:
        return _WATCHDOG.get()
    except LookupError:
        watchdog = new_watchdog()
        _WATCHDOG.set(watchdog)
        return watchdog


def running_trio() -> Any:
    """The trio module if this thread runs a trio loop (anyio's only other backend is asyncio)."""
    trio = sys.modules.get("trio")
    return trio if trio is not None and trio.lowlevel.in_trio_run() else None


def plain_scope_class() -> Callable[[], anyio.CancelScope]:
    """The cheapest cancel scope without a deadline on the running loop, for a scope per read: on trio,
    trio's own (anyio's wrapper looks the backend up on every call); on asyncio from Python 3.11,
    ``TaskScope``; before 3.11 (no ``Task.uncancel``), anyio's own."""
    trio = running_trio()
    if trio is not None:
        return trio.CancelScope  # type: ignore[no-any-return]
    if _TASK_STATES is not None:
        return TaskScope  # type: ignore[return-value]  # the part of CancelScope a read's scope uses
    return type(anyio.CancelScope())


_anyio_task_states: Any
try:  # anyio's record of each asyncio task's innermost cancel scope: where a shield inside a read shows
    from anyio._backends._asyncio import _task_states as _anyio_task_states
except ImportError:  # pragma: no cover - an anyio without it: reads keep anyio's own scope
    _anyio_task_states = None
_TASK_STATES: Final = _anyio_task_states if sys.version_info >= (3, 11) else None
_REASON: Final = "streamfsm: a read's deadline passed"


class TaskScope:
    """A read's cancel scope on asyncio, as ``asyncio.timeout`` makes one but without its timer: ``cancel()``
    cancels the task, and leaving the scope takes that cancellation back (``Task.uncancel``) and swallows
    it, unless another one is pending. Less than half of anyio's scope per read: it registers nothing with
    anyio. A cancellation is not delivered while the task is inside a shielded anyio scope that it entered
    during the read (an HTTP client's cleanup): as anyio does, it is tried again on the next loop pass."""

    __slots__ = ("_cancelling", "_delivered", "_outer", "_task", "cancel_called", "cancelled_caught")

    def __init__(self) -> None:
        self._task: Any = None  # the asyncio.Task inside the scope (3.11+: cancelling, uncancel)
        self._delivered = False
        self.cancel_called = False
        self.cancelled_caught = False

    def __enter__(self) -> TaskScope:
        task: Any = asyncio.current_task()
        self._task = task
        self._cancelling = task.cancelling()
        state = _TASK_STATES.get(task) if _TASK_STATES is not None else None
        self._outer = state.cancel_scope if state is not None else None
        if self.cancel_called:
            self._deliver()
        return self

    def cancel(self) -> None:
        if self.cancel_called:
            return
        self.cancel_called = True
        if self._task is not None:
            self._deliver()

    def _deliver(self) -> None:
        task = self._task
        if task is None or self._delivered or task.done():
            return  # left already, or delivered
        if task is asyncio.current_task() or self._shielded(task):
            # Not while the task runs (entered cancelled, or cancelled by the read's own code): a read that
            # then ends without waiting would leave the cancellation pending past the scope (before 3.13,
            # uncancel() does not clear it). Next loop pass the task waits inside the scope, or has left it.
            asyncio.get_running_loop().call_soon(self._deliver)
            return
        self._delivered = True
        task.cancel(_REASON)

    def _shielded(self, task: Any) -> bool:
        state = _TASK_STATES.get(task) if _TASK_STATES is not None else None
        scope = state.cancel_scope if state is not None else None
        while scope is not None and scope is not self._outer:
            if scope.shield:
                return True
            scope = scope._parent_scope
        return False

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        task, self._task, self._outer = self._task, None, None
        if not self._delivered or task is None:
            return False
        # Ours is taken back; only if no other cancellation is pending is the CancelledError ours to swallow.
        if (
            task.uncancel() <= self._cancelling
            and exc_type is not None
            and issubclass(exc_type, asyncio.CancelledError)
        ):
            self.cancelled_caught = True
            return True
        return False


def socket_of(response: Any) -> Any:
    """The HTTP/1.1 connection's socket (to look at, or to shut from a watchdog thread): a ``socket.socket``,
    or on an event loop its stand-in (asyncio's ``TransportSocket``, trio's socket); None for anything else
    (HTTP/2 multiplexes other streams on it)."""
    if getattr(response, "http_version", None) != "HTTP/1.1":
        return None
    try:
        network = response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
    except Exception:
        return None
    return sock if isinstance(sock, socket.socket) or callable(getattr(sock, "fileno", None)) else None


def readable(sock: Any) -> bool:
    """Whether a read on ``sock`` would not block: data, an end (FIN) or an error (RST) waits there, or the
    socket was closed under the read (which then ends at once)."""
    if sock is None:
        return False
    try:
        fd = sock.fileno()
        if fd < 0:
            return True
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True
