"""Sync reads under a deadline: a blocked ``recv`` cannot be cancelled, so a thread per run shuts its socket.

Shared by the sync SDK drop-in (``SyncSdkRun``) and the sync transport tap (``ThreadReads``): each read
waits under the run's earliest deadline, watched by the run's ``ReadWatchdog`` thread which, when the
deadline passes (or ``abort()`` is called from another thread), shuts the socket down
(``shutdown(SHUT_RDWR)``: closing a socket from another thread does not wake a blocked ``recv``, measured),
so the blocked read returns; the fired flag, never the exception's message, decides the edge. Without an
HTTP/1.1 socket to shut (HTTP/2), the response is closed instead, which may not wake a blocked read.
"""

from __future__ import annotations

import math
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Final

from ..core._cycles import release_traceback_cycles
from ..core._run_core import DEADLINE, END, RunCore
from ._watchdog import ARRIVAL_LOOK_S, ARRIVAL_LOOKS, MAX_ARRIVAL_LOOKS, readable, socket_of

__all__ = ["ReadWatchdog", "ThreadReads", "socket_of"]

_WATCHDOG_JOIN_S: Final = 1.0


class ReadWatchdog:
    """One thread per sync run that calls ``interrupt`` when the read's deadline (monotonic) passes.

    The reader brackets each read with ``arm`` and ``disarm``; ``move`` (the idle clock paused or resumed,
    maybe on another thread) changes the deadline of the read in progress and of no other. Each costs a lock
    and an assignment: the thread sleeps until the deadline it last saw, and is woken early only when a new
    deadline is earlier. ``fired`` tells the reader what happened."""

    def __init__(self, interrupt: Callable[[], None], arrived: Callable[[], bool] | None = None) -> None:
        # Weakly: the run holds its watchdog, which must not hold the run (a cycle).
        self._interrupt = weakref.WeakMethod(interrupt)
        self._arrived = weakref.WeakMethod(arrived) if arrived is not None else None
        self._cond = threading.Condition(threading.RLock())
        self.lock = self._cond  # the run holds it to work out a deadline and arm or move it at once
        self._deadline = math.inf
        self._reading = False
        self._sleeping_until = math.inf
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.fired = False

    def arm(self, deadline: float) -> None:
        with self._cond:
            self._reading = True
            self._set(deadline)

    def move(self, deadline: float) -> None:
        with self._cond:
            if self._reading:  # else the read this was meant for has ended: the next one arms its own
                self._set(deadline)

    def disarm(self) -> None:
        with self._cond:
            self._reading = False
            self._deadline = math.inf  # the thread notices when it next wakes

    def _set(self, deadline: float) -> None:  # under the lock
        self._deadline = deadline
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="streamfsm-watchdog", daemon=True)
            self._thread.start()
        elif deadline < self._sleeping_until:
            self._cond.notify()

    def interrupt_now(self) -> None:
        """``abort()``, maybe from another thread: interrupt the read in progress, and make the next one
        (if the reader is between ``arm`` and its read) give up at once through ``fired``."""
        with self._cond:
            reading = self._reading
            self._deadline = math.inf
            self.fired = True
        if reading:
            self._call_interrupt()

    def _something_arrived(self) -> bool:
        arrived = self._arrived() if self._arrived is not None else None
        return arrived is not None and arrived()

    def _call_interrupt(self) -> None:
        interrupt = self._interrupt()
        if interrupt is not None:
            interrupt()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_WATCHDOG_JOIN_S)

    def _loop(self) -> None:
        cond = self._cond
        while True:
            with cond:
                looks = 0  # at what arrived, once the read is due (see _watchdog)
                while True:
                    if self._stopped:
                        return
                    deadline = self._deadline
                    now = time.monotonic()
                    if deadline <= now:
                        if looks < ARRIVAL_LOOKS or (looks < MAX_ARRIVAL_LOOKS and self._something_arrived()):
                            looks += 1  # the reader may hold what arrived, or be about to: let it run
                            self._sleeping_until = now + ARRIVAL_LOOK_S
                            cond.wait(ARRIVAL_LOOK_S)
                            self._sleeping_until = math.inf
                            continue
                        break
                    if deadline < math.inf:  # a deadline ahead: progress moved it, a later one is new
                        looks = 0
                    self._sleeping_until = deadline
                    cond.wait(None if deadline == math.inf else deadline - now)
                    self._sleeping_until = math.inf
                self._deadline = math.inf
                self.fired = True
            self._call_interrupt()


class ThreadReads:
    """One sync run's reads: each ``read`` waits under the run's earliest deadline, watched by the run's
    ``ReadWatchdog`` thread. The driver sets ``socket`` (``socket_of`` its response) once it has one, or
    ``response`` (closed instead, without an HTTP/1.1 socket to shut)."""

    __slots__ = ("__weakref__", "_core", "_timing", "response", "socket", "watchdog")

    def __init__(self, core: RunCore) -> None:
        self._core, self._timing = core, core.timing
        self.socket: Any = None
        self.response: Any = None
        self.watchdog = ReadWatchdog(self._interrupt_read, self._socket_readable)

    def read(self, iterator: Iterator[Any]) -> Any:
        """``next(iterator)`` under the earliest deadline, checked first, then watched by the thread: how it
        ended, for the core's read door (``RunCore.took``): the item, ``END``, the fault it raised, or
        ``DEADLINE`` when the watchdog (or ``abort()``) ended it (its edge: ``timing.edge``)."""
        core, timing = self._core, self._timing
        watchdog = self.watchdog
        # tool_started/tool_finished (maybe on another thread) move the deadline under the watchdog's lock:
        # working out this read's deadline and arming it, and ending the read, happen under it too.
        with watchdog.lock:
            now = timing.now()
            timing.read_began(now)
            deadline, timing.edge = timing.read_deadline(now)
            # A read already due is armed all the same: the thread first looks at what has arrived.
            due = core.abort_request is not None or watchdog.fired
            if not due:
                watchdog.arm(deadline)
        got: Any
        try:
            if due or watchdog.fired:  # fired: abort() came just after arm()
                return DEADLINE
            got = next(iterator)
        except StopIteration:
            got = END
        except BaseException as exc:
            if watchdog.fired:  # the read failed because we shut it down: the flag says so, not the message
                release_traceback_cycles(exc)  # still the context of what we raise: see _cycles
                return DEADLINE
            if not isinstance(exc, Exception):
                raise
            return exc  # from the handler: no local of this frame (in the fault's traceback) holds it
        finally:
            with watchdog.lock:
                watchdog.disarm()
                timing.read_ended()
        return DEADLINE if watchdog.fired else got

    def interrupt(self) -> None:
        """``abort()``, also from another thread: the read in progress is interrupted."""
        self.watchdog.interrupt_now()

    # The idle clock's state is shared with the reader, which works out and arms each read's deadline
    # under the watchdog's lock: a tool thread changes it under the same lock.

    def tool_started(self, call_id: str, effect: str) -> None:
        with self.watchdog.lock:
            if self._core.tool_started(call_id, effect) and self._timing.reading:
                self.rearm()

    def tool_finished(self, call_id: str, ok: bool) -> None:
        with self.watchdog.lock:
            if self._core.tool_finished(call_id, ok) and self._timing.reading:
                self.rearm()

    def rearm(self) -> None:
        if self.watchdog.fired:
            return  # the watchdog (or abort) already ended this read: keep the edge it fired
        timing = self._timing
        deadline, timing.edge = timing.read_deadline()
        self.watchdog.move(deadline)

    def looked(self) -> None:
        """No read waits: the next one arms its own deadline."""
        self._timing.look_by = None

    def forget(self) -> None:
        self.watchdog.stop()

    let_go = forget

    def _socket_readable(self) -> bool:
        return readable(self.socket if self.socket is not None else socket_of(self.response))

    def _interrupt_read(self) -> None:
        """Make a blocked read return: shut the socket down (a close from another thread would not)."""
        sock = self.socket
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
            elif self.response is not None:
                self.response.close()
        except Exception:
            pass  # already closed: the read has returned or is about to
