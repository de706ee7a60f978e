"""Where finished run records go: sinks, the JSON-lines error and audit logs, and one log line per run.

A **sink** is any synchronous callable ``(RunRecord) -> None``. The runtime hands every finished record to
``deliver(config.sinks, record)`` exactly once, at cleanup, whatever the outcome. ``deliver`` never raises
into the agent: it first emits one structured ``logging`` record on the ``streamfsm`` logger, then calls
each sink; a sink that raises is reported on ``streamfsm.sinks`` (sink and exception class only, never the
exception's text, which may quote data) and counted in ``sink_failures()``. A sink that returns an
awaitable is a failure too.

**Sinks run inline**, in order, on the thread that ends the run: for an async run, the event loop's, so a
sink's time is time every stream on that loop stands still (a sink that sleeps 1 s made its run's
``async with`` take 1.01 s and froze the loop as long). A sink must be fast: no network, no lock waits.
One slower than ``SLOW_SINK_S`` is reported on ``streamfsm.sinks`` (not counted: the record reached it).
Wrap a slow one in ``BackgroundSink``: a thread of its own calls it, in order, from a bounded backlog.

``JsonlSink`` never waits for its lock on the caller's thread. When the lock is free (the usual case) the
line is written inline, a few system calls; when another process holds it, or earlier lines still wait,
the line goes to the sink's bounded backlog and a writer thread of the sink's own appends it once the lock
is free. A line that cannot be written within ``lock_timeout`` of its run's end, or that finds the backlog
full (``MAX_BACKLOG`` lines), is dropped and counted in ``sink_failures()``. Writer threads are not
daemons and leave once the backlog is empty: a process that exits normally waits for them (at most
``lock_timeout`` after its last run), so every run still reaches the file exactly once where the disk is
healthy; ``flush()`` waits for the backlog explicitly. A process ended by ``os._exit`` (a forked
``multiprocessing`` child) skips that wait: call ``flush()`` first. A forked child never writes its
parent's backlog.

Per line, on POSIX:

1. open ``<path>.lock`` (never renamed, so every process locks the same inode) and take
   ``fcntl.flock(LOCK_EX | LOCK_NB)``: once inline; the writer thread polls until the line's deadline;
2. open ``<path>`` with ``O_APPEND``; if the file does not end in a newline (a writer crashed mid-line),
   start this write with one, so a torn fragment never swallows the next record;
3. if the line would take the file past ``max_bytes``, rotate (``path`` → ``path.1`` → … → ``path.N``);
   the size is read after taking the lock, so two processes never both rotate;
4. one ``os.write`` of the whole line, then ``os.fsync`` when asked;
5. close both files, which releases the lock.

Opening per record costs a few system calls per *run*, and keeps the sink correct across ``fork`` and
rotation by other processes (no cached descriptor can point at a renamed file). On Windows the lock is
``msvcrt.locking`` on the lock file's first byte; that path is not exercised by the test suite here.
"""

from __future__ import annotations

import errno
import inspect
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from ._record import RunRecord

__all__ = [
    "MAX_BACKLOG",
    "SLOW_SINK_S",
    "AuditLog",
    "BackgroundSink",
    "ErrorLog",
    "JsonlSink",
    "Sink",
    "deliver",
    "log_run",
    "run_log_level",
    "sink_failures",
]

Sink = Callable[[RunRecord], None]
"""A synchronous callable that stores or forwards one finished run record."""

DEFAULT_MAX_BYTES: Final = 64 << 20
DEFAULT_BACKUPS: Final = 5
DEFAULT_LOCK_TIMEOUT_S: Final = 2.0
MAX_BACKLOG: Final = 1024
"""The most records (or log lines) one sink keeps waiting for its thread; past it, a record is dropped."""
SLOW_SINK_S: Final = 0.1
"""A sink taking longer than this inline is reported on ``streamfsm.sinks``."""

_run_logger: Final = logging.getLogger("streamfsm")
_sink_logger: Final = logging.getLogger("streamfsm.sinks")

_OPEN_FLAGS: Final = (
    os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)
_LOCK_FLAGS: Final = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_FILE_MODE: Final = 0o600  # logs carry correlation ids: owner-only, whatever the umask allows


# -- the per-run log line ----------------------------------------------------------------------------------


def run_log_level(record: RunRecord) -> int:
    """DEBUG for a finished run, INFO for a local abort (someone chose to stop), WARNING otherwise."""
    klass = record.failure_class
    if klass == "completed":
        return logging.DEBUG
    if klass == "local_abort":
        return logging.INFO
    return logging.WARNING


def _log_fields(record: RunRecord) -> dict[str, Any]:
    # Ids, enums and numbers only; all of it was redacted at capture.
    ids, outcome, retry = record["ids"], record["outcome"], record["retry"]
    transport, timings = record["transport"], record["timings"]
    return {
        "run_id": ids["run_id"],
        "trace_id": ids["trace_id"],
        "session_id": ids["session_id"],
        "attempt": ids["attempt"],
        "provider_request_id": ids["provider_request_id"],
        "response_id": ids["response_id"],
        "provider": record["provider"],
        "model": record["model"],
        "summary_key": outcome["summary_key"],
        "class": outcome["class"],
        "phase": outcome["phase"],
        "edge": outcome["edge"],
        "verdict": retry["verdict"],
        "action": retry["action"],
        "retry_after_s": retry["retry_after_s"],
        "transport_kind": transport["kind"],
        "status": transport["status"],
        "total_s": timings["total_s"],
    }


def log_run(record: RunRecord) -> None:
    """One structured record on the ``streamfsm`` logger: ``"<summary key>: <title> [run_id=…]"`` with
    ``extra={"streamfsm": {...}}`` (ids, provider, model, class, verdict, …; never content). Free when the
    logger is not enabled for the level."""
    level = run_log_level(record)
    if not _run_logger.isEnabledFor(level):
        return
    _run_logger.log(
        level,
        "%s: %s [run_id=%s]",
        record.summary_key,
        record["summary"]["title"],
        record.run_id,
        extra={"streamfsm": _log_fields(record)},
    )


# -- delivery ----------------------------------------------------------------------------------------------

_failures: dict[str, int] = {}
_failures_lock: Final = threading.Lock()


def sink_failures() -> dict[str, int]:
    """A snapshot of sink failures since the process started, by sink name (a function's qualified name, or
    the class name of a callable object such as ``ErrorLog``; ``logging`` for the per-run log line)."""
    with _failures_lock:
        return dict(_failures)


def _sink_name(sink: object) -> str:
    name = getattr(sink, "__qualname__", None)  # functions, methods, classes
    return name if isinstance(name, str) else type(sink).__qualname__


def _report(name: str, exc: BaseException | None, run_id: str, what: str) -> None:
    if exc is not None:
        code = getattr(exc, "errno", None)
        errname = errno.errorcode.get(code, "") if isinstance(code, int) else ""
        what = f"raised {type(exc).__qualname__}" + (f" ({errname})" if errname else "")
    count_sink_failure(name, run_id, what + "; the record did not reach it")


def count_sink_failure(name: str, run_id: str, what: str) -> None:
    """Count one failure of sink ``name`` in ``sink_failures()`` and report it on ``streamfsm.sinks``.
    For sinks that catch their own errors (``OtelSink``); ``what`` must hold no record content."""
    with _failures_lock:
        _failures[name] = _failures.get(name, 0) + 1
    # No exc_info and no str(exc): an exception's text can quote a path, a URL or record content.
    _sink_logger.warning("run record sink %s failed: %s [run_id=%s]", name, what, run_id)


def deliver(sinks: Iterable[Sink], record: RunRecord) -> int:
    """Log ``record`` once on ``streamfsm``, then hand it to every sink in order. Never raises an
    ``Exception``: each failure is logged on ``streamfsm.sinks`` and counted. Returns how many failed."""
    failed = 0
    try:
        log_run(record)
    except Exception as exc:  # a misbehaving filter or handler
        failed += 1
        _report("logging", exc, record.run_id, "")
    for sink in sinks:
        started = time.monotonic()
        if not _call_sink(sink, record):
            failed += 1
        took = time.monotonic() - started
        if took > SLOW_SINK_S:
            _sink_logger.warning(
                "run record sink %s took %.2f s on the thread that ended the run (on an event loop, every "
                "stream stood still): make it faster or wrap it in BackgroundSink [run_id=%s]",
                _sink_name(sink),
                took,
                record.run_id,
            )
    return failed


def _call_sink(sink: Callable[[RunRecord], object], record: RunRecord) -> bool:
    """Call one sink; report and count its failure. Returns whether it took the record."""
    try:
        result: object = sink(record)
    except Exception as exc:
        _report(_sink_name(sink), exc, record.run_id, "")
        return False
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()  # a coroutine never awaited would warn at garbage collection
        _report(_sink_name(sink), None, record.run_id, "it returned an awaitable; sinks are synchronous")
        return False
    return True


# -- work off the caller's thread --------------------------------------------------------------------------

_Item = TypeVar("_Item")


class _Backlog(Generic[_Item]):
    """Items worked through in order by a thread of their own, started on demand and gone once idle.

    Not a daemon: interpreter exit waits for it, which is how a process flushes what it queued. Each item's
    work is bounded by its owner (a lock deadline, a user sink), so that wait is bounded too.
    """

    __slots__ = ("_cond", "_items", "_limit", "_name", "_pid", "_thread", "_work")

    def __init__(self, name: str, work: Callable[[_Item], None], limit: int) -> None:
        self._name = name
        self._work = work
        self._limit = limit
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._items: deque[tuple[_Item, str]] = deque()  # (item, run_id); the head is being worked on
        self._thread: threading.Thread | None = None

    def submit(self, item: _Item, run_id: str, try_now: Callable[[_Item], bool] | None = None) -> None:
        """Queue ``item``, unless nothing waits and ``try_now(item)`` does it at once. A full backlog drops
        the item and counts it. Exceptions from ``try_now`` propagate."""
        if self._pid != os.getpid():  # a forked child: the parent's items and thread are the parent's
            self._pid, self._cond, self._items, self._thread = (
                os.getpid(),
                threading.Condition(),
                deque(),
                None,
            )
        with self._cond:
            if not self._items and try_now is not None and try_now(item):
                return
            if len(self._items) >= self._limit:
                full = True
            else:
                full = False
                self._items.append((item, run_id))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._drain, name=f"streamfsm-sink-{self._name}")
                    try:
                        self._thread.start()
                    except RuntimeError:  # interpreter shutdown: no new threads
                        self._items.pop()
                        self._thread = None
                        full = True
        if full:
            count_sink_failure(
                self._name, run_id, f"its backlog of {self._limit} records was full; the record was dropped"
            )

    def pending(self) -> int:
        with self._cond:
            return len(self._items)

    def flush(self, timeout: float) -> bool:
        """Wait until every queued item is done (written, or dropped and counted); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._items, timeout)

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._items:
                    self._thread = None
                    self._cond.notify_all()
                    return
                item, run_id = self._items[0]
            try:
                self._work(item)
            except Exception as exc:
                _report(self._name, exc, run_id, "")
            with self._cond:
                self._items.popleft()


class BackgroundSink:
    """Call ``sink`` on a thread of its own, off the thread that ends the run (the event loop's).

    For a sink that may be slow (a network collector, a database). Records are handed over in order; at
    most ``max_backlog`` wait, and a record that finds the backlog full is dropped and counted in
    ``sink_failures()`` under the wrapped sink's name, as are the wrapped sink's own failures. ``flush()``
    waits for the backlog; a process that exits normally waits for it too (the thread is no daemon), so
    the wrapped sink must itself finish in bounded time. Calling it is never slow.
    """

    __slots__ = ("_backlog", "sink")

    def __init__(self, sink: Sink, *, max_backlog: int = MAX_BACKLOG) -> None:
        if not callable(sink):
            raise TypeError(f"sink must be callable with a RunRecord, not {type(sink).__name__}")
        if not isinstance(max_backlog, int) or max_backlog < 1:
            raise ValueError(f"max_backlog must be a positive integer, not {max_backlog!r}")
        self.sink = sink
        self._backlog: _Backlog[RunRecord] = _Backlog(_sink_name(sink), self._call, max_backlog)

    def __repr__(self) -> str:
        return f"BackgroundSink({self.sink!r})"

    def __call__(self, record: RunRecord) -> None:
        self._backlog.submit(record, record.run_id)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait up to ``timeout`` seconds until every record handed over was delivered or dropped."""
        return self._backlog.flush(timeout)

    def _call(self, record: RunRecord) -> None:
        _call_sink(self.sink, record)  # reports and counts its failures under the wrapped sink's name


# -- the JSON-lines logs -----------------------------------------------------------------------------------

if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    # A regular file takes the whole line in one call; a short write (disk full, a signal) is finished
    # under the same lock, so no other writer can slip in between.
    while written < len(data):
        n = os.write(fd, data[written:])
        if n <= 0:
            raise OSError(errno.EIO, "short write to the run log")
        written += n


class JsonlSink:
    """Append each run record as one JSON line to ``path``; safe for several processes sharing one file.

    ``only_failures``: skip runs that finished. ``fsync``: flush each line to the disk before returning.
    ``max_bytes`` (``None``: never rotate) and ``backups``: size-based rotation to ``path.1`` … ``path.N``
    (``backups=0`` starts the file afresh). ``lock_timeout``: how long after its run a line may wait for
    the file lock, on the sink's writer thread, before it is dropped and counted in ``sink_failures()``.
    The lock lives in ``<path>.lock``; leave it in place. Missing parent folders are created.

    Calling the sink never waits for the lock: a busy lock sends the line to the writer thread (see the
    module's docstring); ``flush()`` waits for it. Called directly, it raises ``OSError`` when the file
    cannot be written inline; ``append_line`` writes on the calling thread, waiting up to ``lock_timeout``.
    """

    __slots__ = (
        "_backlog",
        "_lock_path",
        "backups",
        "fsync",
        "lock_timeout",
        "max_bytes",
        "only_failures",
        "path",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        only_failures: bool = False,
        fsync: bool = False,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
    ) -> None:
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 1):
            raise ValueError(f"max_bytes must be a positive integer or None, not {max_bytes!r}")
        if not isinstance(backups, int) or backups < 0:
            raise ValueError(f"backups must be a non-negative integer, not {backups!r}")
        if not (isinstance(lock_timeout, (int, float)) and lock_timeout > 0):
            raise ValueError(f"lock_timeout must be a positive number of seconds, not {lock_timeout!r}")
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self.only_failures = only_failures
        self.fsync = fsync
        self.max_bytes = max_bytes
        self.backups = backups
        self.lock_timeout = float(lock_timeout)
        self._backlog: _Backlog[tuple[bytes, float]] = _Backlog(
            type(self).__qualname__, self._append_by, MAX_BACKLOG
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def __call__(self, record: RunRecord) -> None:
        if self.only_failures and record.failure_class == "completed":
            return
        line = (record.to_json() + "\n").encode("utf-8")
        self._backlog.submit((line, time.monotonic() + self.lock_timeout), record.run_id, self._append_now)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every line waiting for the lock is written or dropped (at most ``timeout`` seconds;
        default: ``lock_timeout``, the longest a line waits). Returns whether nothing waits any more."""
        return self._backlog.flush(self.lock_timeout + 1.0 if timeout is None else timeout)

    def append_line(self, line: bytes) -> None:
        """Append one complete line (ending in ``\\n``) under the lock, rotating first if it would not fit.
        Waits for the lock on the calling thread, up to ``lock_timeout`` (then ``TimeoutError``)."""
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise ValueError("append_line takes exactly one line ending in a newline")
        self._append_by((line, time.monotonic() + self.lock_timeout))

    def _append_now(self, item: tuple[bytes, float]) -> bool:
        """Write the line if the lock is free at once; False if another holder has it."""
        fd = self._open_lock()
        try:
            if not _try_lock(fd):
                return False
            try:
                self._write_locked(item[0])
            finally:
                _unlock(fd)
        finally:
            os.close(fd)
        return True

    def _append_by(self, item: tuple[bytes, float]) -> None:
        """Write the line, polling for the lock until its deadline (then ``TimeoutError``)."""
        line, deadline = item
        with self._locked(deadline):
            self._write_locked(line)

    def _write_locked(self, line: bytes) -> None:
        fd = self._open()
        try:
            size = os.fstat(fd).st_size
            if self.max_bytes is not None and size > 0 and size + len(line) > self.max_bytes:
                os.close(fd)
                fd = -1
                self._rotate()
                fd = self._open()
                size = 0
            if size > 0 and _last_byte(fd, size) != b"\n":
                line = b"\n" + line  # a crash left a torn line: keep it on its own line
            _write_all(fd, line)
            if self.fsync:
                os.fsync(fd)
        finally:
            if fd >= 0:
                os.close(fd)

    def rotated_paths(self) -> list[Path]:
        """``path.1`` … ``path.N`` as rotation names them (newest first), whether they exist or not."""
        return [self.path.with_name(f"{self.path.name}.{i}") for i in range(1, self.backups + 1)]

    # -- internals -------------------------------------------------------------------------------------

    def _open(self) -> int:
        return os.open(self.path, _OPEN_FLAGS, _FILE_MODE)

    def _open_lock(self) -> int:
        try:
            return os.open(self._lock_path, _LOCK_FLAGS, _FILE_MODE)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self._lock_path, _LOCK_FLAGS, _FILE_MODE)

    @contextmanager
    def _locked(self, deadline: float) -> Iterator[None]:
        fd = self._open_lock()
        try:
            pause = 0.0005
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the run log lock was busy for {self.lock_timeout} s")
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
            try:
                yield
            finally:
                _unlock(fd)
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        if self.backups == 0:
            _unlink(self.path)
        else:
            names = [self.path, *self.rotated_paths()]
            for i in range(self.backups, 0, -1):  # path.N is overwritten (dropped) first
                with suppress(FileNotFoundError):
                    os.replace(names[i - 1], names[i])
        if self.fsync and sys.platform != "win32":
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)  # make the renames durable too
            finally:
                os.close(dir_fd)


def _last_byte(fd: int, size: int) -> bytes:
    os.lseek(fd, size - 1, os.SEEK_SET)  # O_APPEND still sends the next write to the end
    return os.read(fd, 1)


def _unlink(path: Path) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


class ErrorLog(JsonlSink):
    """The error log: a ``JsonlSink`` that keeps failed runs only (local aborts included)."""

    __slots__ = ()

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: bool = False,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
    ) -> None:
        super().__init__(
            path,
            only_failures=True,
            fsync=fsync,
            max_bytes=max_bytes,
            backups=backups,
            lock_timeout=lock_timeout,
        )


class AuditLog(JsonlSink):
    """The audit log: a ``JsonlSink`` that keeps every run."""

    __slots__ = ()

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: bool = False,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
    ) -> None:
        super().__init__(
            path,
            only_failures=False,
            fsync=fsync,
            max_bytes=max_bytes,
            backups=backups,
            lock_timeout=lock_timeout,
        )
