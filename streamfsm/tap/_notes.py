"""How a diagnosis reaches the caller through exceptions that are not ours.

The tap never replaces an exception the HTTP library or the SDK raises: it adds to it. The library's own
exception (a read error, a timeout) carries the run's ``StreamFailed`` as an attribute and its plain summary
as a note; an SDK's status or in-band error is found through the response or request it names. An exception
a framework makes itself, chained to nothing of ours, is traced to the failed run by where and when it was
raised (``Witness``, ``Ledger``: see ``failure_of``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import threading
import time
import weakref
from collections import deque
from contextvars import ContextVar
from typing import Any, Final

import anyio.lowlevel

from ..classify import FailureClass
from ..runtime import StreamFailed, running_trio

_ATTRIBUTE: Final = "_streamfsm_failure"
_MAX_CHAIN: Final = 64
# A framework's own exception follows the stream that caused it within moments (pydantic-ai, the Agents SDK:
# milliseconds; a tool run in between: seconds); a failure older than this explains nothing new.
ATTRIBUTION_WINDOW_S: Final = 10.0
# A local abort or a consumer error is the caller's own doing: the effect of its exception, never the cause.
_OWN_DOING: Final = frozenset({FailureClass.LOCAL_ABORT, FailureClass.CONSUMER_ERROR})
# response or request object -> the run that watched it (weakly: the run lives no longer than its response)
_BY_EXCHANGE: Final[weakref.WeakKeyDictionary[Any, Any]] = weakref.WeakKeyDictionary()


def detached(failure: StreamFailed) -> StreamFailed:
    """The failure as a carrier: no cause or traceback, whose frames would hold the run and its response."""
    failure.__cause__ = failure.__context__ = None
    failure.__traceback__ = None
    return failure


def attach(exc: BaseException, failure: StreamFailed) -> None:
    """Hang ``failure`` on ``exc``; its summary becomes a note where Python has notes (3.11+)."""
    setattr(exc, _ATTRIBUTE, failure)
    if sys.version_info >= (3, 11):
        exc.add_note(f"streamfsm: {failure}")


def remember(run: Any, *exchange: Any) -> None:
    """Make ``run.failure`` findable from the response and request an SDK error will carry."""
    for item in exchange:
        if item is not None:
            with contextlib.suppress(TypeError):  # not weakly referable
                _BY_EXCHANGE[item] = run


def run_of(response: Any) -> Any:
    """The tap's run (a ``TapRun``) watching ``response``, an ``httpx`` / ``httpx2`` response the tap
    returned; None when the tap did not start a run for it (not an LLM call). For code that
    relays the stream downstream itself (``streamfsm.relay``): it reports what it wrote with
    ``run.relayed()`` and why it stopped with ``run.abort()`` / ``run.stopped()``."""
    try:
        return _BY_EXCHANGE.get(response)
    except TypeError:  # not weakly referable: not one of ours
        return None


def failure_of(exc: BaseException | None) -> StreamFailed | None:
    """The ``StreamFailed`` (``.diagnosis``, ``.record``) behind ``exc``, whatever wraps it, or None.

    Looks through ``exc`` itself, its ``__cause__`` / ``__context__`` chain and exception groups, and the
    ``response`` / ``request`` an SDK error carries (an HTTP status error, an in-band error event). Where a
    framework's retries left several attempts' failures in one chain, the last attempt's.

    An exception a framework raises itself, chained to nothing of ours (pydantic-ai's
    ``UnexpectedModelBehavior`` after a stream that ended quietly, the Agents SDK's ``ModelBehaviorError`` or
    ``MaxTurnsExceeded``), is given the failure of the last run the tap ended where ``exc`` is asked about:
    in the innermost ``streamfsm.context()`` block (its tasks and threads included), else the same event loop
    (else thread). Only when that run failed (not by a local abort or the consumer's own error) within the
    last ``ATTRIBUTION_WINDOW_S`` (10 s), no run ended there after it, failure_of has not yet handed it out
    for another exception (each failure explains one exception, and what wraps it), and it ran in the asking
    task or no stream of another task ran beside it (a framework that streams in a task of its own, call
    after call, is found). What this cannot tell apart: in a loop serving several callers, a stream of one
    caller that failed wholly between another caller's last stream and its exception, with no stream
    beside it; one ``streamfsm.context()`` block per caller keeps them apart. A run in another thread or
    loop is not seen, nor one on a client without the tap: ask where the exception is caught, inside the
    caller's block. The failure is then hung on ``exc`` (asking again, anywhere, finds it); never on a
    cancellation or an interrupt (a ``BaseException`` that is no ``Exception``)."""
    found: list[StreamFailed] = []
    seen: set[int] = set()
    todo: list[BaseException] = [exc] if exc is not None else []
    while todo and len(seen) < _MAX_CHAIN:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.extend(_carried(current))
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        group = getattr(current, "exceptions", None)  # an exception group (also the 3.10 backport's)
        if isinstance(group, (tuple, list)):
            todo.extend(e for e in group if isinstance(e, BaseException))
    # The first found of the highest attempt: the nearest to exc of the last attempt.
    failure = max(reversed(found), key=lambda failure: failure.record["ids"]["attempt"], default=None)
    if failure is None and exc is not None:
        failure = _attributed(exc)
    if failure is not None:
        _CLAIMED.add(failure)
    return failure


def _carried(exc: BaseException) -> list[StreamFailed]:
    if isinstance(exc, StreamFailed):
        return [exc]
    own = getattr(exc, _ATTRIBUTE, None)
    found = [own] if isinstance(own, StreamFailed) else []
    for name in ("response", "request"):
        try:
            item = getattr(exc, name, None)
        except Exception:  # httpx raises for a .request that was never set
            item = None
        if item is not None:
            try:
                run = _BY_EXCHANGE.get(item)
            except TypeError:
                run = None
            failure = getattr(run, "failure", None)
            if isinstance(failure, StreamFailed):
                found.append(failure)
    return found


# -- an exception the framework made itself: the last failed run of the same place, within moments ----------


# The failures failure_of has handed out: each explains one exception (and what wraps it), no later one.
_CLAIMED: Final[weakref.WeakSet[StreamFailed]] = weakref.WeakSet()


class _Settled:
    """How one run ended, as its ledgers keep it."""

    __slots__ = ("ended", "failure", "started", "task")

    def __init__(self, failure: StreamFailed | None, task: int, started: float) -> None:
        self.failure = failure  # None: ended well, or by the caller's own doing
        self.task = task
        self.started = started
        self.ended = time.monotonic()


class Ledger:
    """The runs of one place (a ``streamfsm.context()`` block, an event loop, a thread): the tasks running one
    now, and the last few that ended."""

    __slots__ = ("_active", "_ended", "_lock")

    def __init__(self) -> None:
        self._active: dict[int, int] = {}  # task -> runs in flight
        self._ended: deque[_Settled] = deque(maxlen=8)
        self._lock = threading.Lock()  # sync runs of one block may end in several threads

    def started(self, task: int) -> None:
        with self._lock:
            self._active[task] = self._active.get(task, 0) + 1

    def settled(self, settled: _Settled) -> None:
        with self._lock:
            left = self._active.get(settled.task, 0) - 1
            if left > 0:
                self._active[settled.task] = left
            else:
                self._active.pop(settled.task, None)
            self._ended.append(settled)

    def claim(self, caller: int) -> StreamFailed | None:
        """The failure of the last run that ended here, if it may explain an exception raised in task
        ``caller`` now: it failed (not by the caller's own doing) within the window, no run ended after it,
        failure_of has not handed it out yet, and it ran in ``caller`` or no stream of another task ran
        beside it since it started (else the place serves callers side by side: whose run failed is
        unknown). Streams one after another in tasks of their own (a framework's task per call) are fine."""
        now = time.monotonic()
        with self._lock:
            recent = [s for s in self._ended if now - s.ended <= ATTRIBUTION_WINDOW_S]
            if not recent or recent[-1].failure is None or recent[-1].failure in _CLAIMED:
                return None
            last = recent[-1]
            if last.task != caller and (
                any(task != last.task for task in self._active)
                or any(s.task != last.task and s.ended > last.started for s in recent)
            ):
                return None
            return last.failure


# The ledgers of the enclosing ``streamfsm.context()`` blocks, innermost last: inherited by the tasks and the
# threads (anyio.to_thread, asyncio.to_thread) started inside them.
BLOCK_LEDGERS: Final[ContextVar[tuple[Ledger, ...]]] = ContextVar("streamfsm_ledgers", default=())
_LOOP_LEDGER: Final[anyio.lowlevel.RunVar[Ledger]] = anyio.lowlevel.RunVar("streamfsm_ledger")
_THREAD: Final = threading.local()
# task -> a number never reused (an id() is, once the task is gone)
_TASKS: Final[weakref.WeakKeyDictionary[Any, int]] = weakref.WeakKeyDictionary()
_SERIAL: Final = itertools.count(1)
_SERIAL_LOCK: Final = threading.Lock()


def _here() -> tuple[Ledger, int]:
    """The ledger of the event loop (else thread) the caller runs in, and the caller's task (else thread)."""
    trio = running_trio()
    if trio is not None:
        task: Any = trio.lowlevel.current_task()
    else:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no running loop: a thread of sync code
            task = None
    if task is None:
        ledger = getattr(_THREAD, "ledger", None)
        if ledger is None:
            ledger = _THREAD.ledger = Ledger()
        task = threading.current_thread()
    else:
        try:
            ledger = _LOOP_LEDGER.get()
        except LookupError:
            ledger = Ledger()
            _LOOP_LEDGER.set(ledger)
    with _SERIAL_LOCK:
        number = _TASKS.get(task)
        if number is None:
            number = _TASKS[task] = next(_SERIAL)
    return ledger, number


class Witness:
    """Where a run started (its loop or thread, its ``context()`` blocks, its task), to tell them how it
    ended; created in the task that starts the run."""

    __slots__ = ("_ledgers", "_settled", "_started", "_task")

    def __init__(self) -> None:
        self._started = time.monotonic()
        ledger, self._task = _here()
        self._ledgers = (ledger, *BLOCK_LEDGERS.get())
        self._settled = False
        for each in self._ledgers:
            each.started(self._task)

    def settle(self, failure: StreamFailed | None) -> None:
        """The run ended (``failure``: how it failed); only the first call counts."""
        if self._settled:
            return
        self._settled = True
        if failure is not None and failure.diagnosis.failure_class in _OWN_DOING:
            failure = None
        settled = _Settled(failure, self._task, self._started)
        for ledger in self._ledgers:
            ledger.settled(settled)


def _attributed(exc: BaseException) -> StreamFailed | None:
    """The failed run that ``exc``, which carries none, followed (``Ledger.claim``); hung on ``exc``, as the
    tap hangs a failure on the HTTP library's exception, so that asking again finds the same one."""
    if not isinstance(exc, Exception):  # a cancellation or an interrupt comes from outside, not from the run
        return None
    ledger, caller = _here()
    blocks = BLOCK_LEDGERS.get()
    failure = (blocks[-1] if blocks else ledger).claim(caller)
    if failure is not None:
        attach(exc, failure)
    return failure
