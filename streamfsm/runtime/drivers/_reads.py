"""A run's async reads under its watchdogs: each read waits in a plain cancel scope that the loop's watchdog
(``_watchdog``) cancels when the read's deadline passes, or ``abort()`` at once. The deadline's arithmetic is
the run core's (``RunCore.read_deadline``); this side registers looks with the loop and cancels.

One per async run, whoever drives it (``Run`` and its subclasses, the tap's ``TapRun``): the read loop is
written once per I/O style, beside ``ThreadReads`` (``_sync_reads``) for blocking reads.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ...machine import Trigger
from ..core._run_core import DEADLINE, END, RunCore
from ._watchdog import (
    ARRIVAL_LOOK_S,
    ARRIVAL_LOOKS,
    MAX_ARRIVAL_LOOKS,
    Entry,
    LoopWatchdog,
    loop_watchdog,
    readable,
    socket_of,
)

__all__ = ["LoopReads"]

# A read's deadline never comes earlier than the one before it: waited idle time grows by no more than the
# time that passed, progress resets it, and the first-token and total deadlines are fixed. Only the first
# progress (first token → idle) and an effectful tool ending (the idle clock resumes) can bring it earlier,
# and both have the watchdog look sooner (``looked``, ``rearm``). So a read works its deadline out only when
# the watchdog's next look is missing or already due; otherwise the look does.


class LoopReads:
    """One async run's reads: ``read(next_chunk)`` waits for one under the watchdog and says how it ended,
    for the core's read door (``RunCore.took``)."""

    __slots__ = (
        "_arrival_looks",
        "_core",
        "_entry",
        "_timing",
        "_watchdog",
        "response",
        "scope",
        "scope_class",
        "socket",
    )

    def __init__(self, core: RunCore) -> None:
        self._core, self._timing = core, core.timing
        self.scope: anyio.CancelScope | None = None  # the waiting read's
        self.scope_class: Callable[[], anyio.CancelScope] = anyio.CancelScope
        self._arrival_looks = 0  # looks at what arrived since a deadline was found passed (see _watchdog)
        self.socket: Any = None  # the HTTP/1.1 connection's socket, where the driver knows it
        self.response: Any = None  # else the response, whose socket may be found
        self._entry: Entry | None = None  # when the loop's watchdog looks at this run next
        self._watchdog: LoopWatchdog | None = None  # the loop's, once this run registered with it

    async def read(self, next_chunk: Callable[[], Awaitable[bytes]]) -> Any:
        """One watched read: the chunk, ``END``, the fault it raised, or ``DEADLINE`` if the loop's watchdog
        or ``abort()`` cancelled it (``outcome``). A cancellation from outside propagates."""
        scope = self.scope_for_read()
        got: Any = None
        with scope:
            try:
                got = await next_chunk()
            except StopAsyncIteration:
                got = END
            except Exception as exc:
                got = exc
            finally:
                self.ended()
        try:
            return self.outcome(scope, got)
        finally:  # a fault's traceback holds this frame, which must not hold the fault
            got = None

    def scope_for_read(self) -> anyio.CancelScope:
        """Begin a read: the scope to wait in, which the loop's watchdog (or ``interrupt``) cancels."""
        timing = self._timing
        now = timing.now()
        timing.read_began(now)
        scope = self.scope = self.scope_class()  # before _look: the watchdog may look at once
        entry = self._entry
        if entry is None or entry.callback is None or entry.when <= now:
            self._look(now)
        return scope

    def ended(self) -> None:
        """The read returned (or raised): its events carry this time."""
        self.scope = None
        self._timing.read_ended()

    def outcome(self, scope: anyio.CancelScope, got: Any) -> Any:
        """How the read in ``scope`` ended, for ``RunCore.took``: ``got`` (the chunk, ``END`` or the fault it
        raised) unless the watchdog or ``abort()`` cancelled it (``DEADLINE``; with an abort requested the
        core makes that the abort). A read that raised as it was cancelled was cancelled."""
        if scope.cancelled_caught or (scope.cancel_called and isinstance(got, Exception)):
            return DEADLINE
        return got

    def interrupt(self) -> None:
        """``abort()``: end the waiting read now."""
        if self.scope is not None:
            self.scope.cancel()

    def looked(self) -> None:
        """After the core took something: the idle clock may have restarted with no read waiting."""
        timing = self._timing
        look = timing.look_by
        if look is not None:
            timing.look_by = None
            self._watch(look)

    def tool_started(self, call_id: str, effect: str) -> None:
        if self._core.tool_started(call_id, effect) and self._timing.reading:
            self.rearm()

    def tool_finished(self, call_id: str, ok: bool) -> None:
        if self._core.tool_finished(call_id, ok):
            if self._timing.reading:
                self.rearm()
            else:
                self.looked()

    def rearm(self) -> None:
        """The idle clock paused or resumed while a read waits: move that read's deadline."""
        scope = self.scope
        if scope is not None and scope.cancel_called:
            return  # the watchdog (or abort) already ended this read: keep the edge it fired
        timing = self._timing
        deadline, timing.edge = timing.read_deadline()
        self._watch(deadline)

    def forget(self) -> None:
        """The run is over: the loop's watchdog looks at it no more."""
        entry, self._entry = self._entry, None
        if entry is not None and self._watchdog is not None:
            self._watchdog.forget(entry)

    def let_go(self) -> None:
        """As ``forget``, off the loop (a finalizer's thread): the timer, when it comes, finds nothing."""
        entry, self._entry = self._entry, None
        if entry is not None:
            entry.callback = None

    # -- inside -----------------------------------------------------------------------------------------

    def _look(self, now: float) -> None:
        """Work out the waiting read's deadline: cancel the read if it is due (with its edge), else have the
        watchdog look again then."""
        timing = self._timing
        deadline, edge = timing.read_deadline(now)
        if deadline > now:
            self._watch(deadline)
        elif self.scope is None:
            timing.edge, timing.fired_at = edge, now
        elif self._arrival_looked(now, edge):
            timing.edge, timing.fired_at = edge, timing.due_at
            self.scope.cancel()

    def _arrival_looked(self, now: float, edge: Trigger) -> bool:
        """The waiting read is past its deadline: True once what arrived has been looked at enough for its
        absence to mean silence; until then, have the watchdog look again shortly (see ``_watchdog``)."""
        timing = self._timing
        if timing.due_at is None:
            timing.due_at = now
            if (
                edge is not Trigger.TOTAL_TIMEOUT
            ):  # progress does not move the total deadline: its looks add up
                self._arrival_looks = 0
        looks = self._arrival_looks
        if looks < ARRIVAL_LOOKS or (looks < MAX_ARRIVAL_LOOKS and readable(self.connection_socket())):
            self._arrival_looks = looks + 1
            self._watch(now + ARRIVAL_LOOK_S)
            return False
        return True

    def connection_socket(self) -> Any:
        return self.socket if self.socket is not None else socket_of(self.response)

    def _watch(self, deadline: float) -> None:
        """Have the loop's watchdog look at this run by ``deadline``. Lazily: a later deadline keeps the
        earlier look, which looks again if the read is still waiting and not yet due."""
        entry = self._entry
        if entry is not None and entry.callback is not None and entry.when <= deadline:
            return
        if deadline == math.inf:
            return
        watchdog = self._watchdog
        if watchdog is None:  # looked up in a task: a timer's callback has no task to find the loop by
            watchdog = self._watchdog = loop_watchdog()
        if entry is not None:
            watchdog.forget(entry)
        self._entry = watchdog.watch(deadline, self._due)

    def _due(self, now: float) -> None:
        self._entry = None
        if self._timing.reading and not self._core.done:
            self._look(now)  # else the next read looks for itself
