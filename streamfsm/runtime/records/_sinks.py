"""Where finished run records go: sinks, the JSON-lines error and audit logs, and one log line per run.

A **sink** is any synchronous callable ``(RunRecord) -> None``. The runtime hands every finished record to
``deliver(config.sinks, record)`` exactly once, at cleanup, whatever the outcome. ``deliver`` never raises
into the agent: it keeps the record among the process's last ``RECENT_RECORDS`` (``recent_records()``, so
that every run leaves one, sinks or none), emits one structured ``logging`` record on the ``streamfsm``
logger, then calls each sink; a sink that raises is reported on ``streamfsm.sinks`` (sink and exception
class only, never the exception's text, which may quote data) and counted in ``sink_failures()``. A sink
that returns an awaitable is a failure too.

**Sinks run inline**, in order, on the thread that ends the run: for an async run, the event loop's, so a
sink's time is time every stream on that loop stands still (a sink that sleeps 1 s made its run's
``async with`` take 1.01 s and froze the loop as long). A sink must be fast: no network, no lock waits.
One slower than ``SLOW_SINK_S`` is reported on ``streamfsm.sinks`` (not counted: the record reached it).
Wrap a slow one in ``BackgroundSink``: a thread of its own calls it, in order, from a bounded backlog.

``JsonlSink`` writes inline and never waits for another process. Each record is **one** ``os.write`` of
a complete line to a file opened with ``O_APPEND``: on a local POSIX file system the kernel puts each such
write whole at the end of the file, so lines from any number of threads and processes never tear or
interleave, and no writer holds a lock while it appends. Per line:

1. open ``<path>`` with ``O_APPEND``; if the file does not end in a newline (a writer crashed mid-line),
   start this write with one, so a torn fragment never swallows the next record. A line of several pages
   that another process is writing at that moment can look torn too, which costs one blank line: the
   reader (and ``jq``) skip blank lines;
2. if the line would take the file past ``max_bytes``, rotate (``path`` → ``path.1`` → … → ``path.N``)
   and open the new file. Only rotation takes a lock: ``fcntl.flock`` on ``<path>.lock`` (never renamed,
   so every process locks the same inode). A writer that finds a full file waits for that lock at most
   ``ROTATION_WAIT_S`` (another process is rotating: a rename per backup), then writes to the file it
   found full, whatever its size and wherever the rotator moved it (``<path>.rotating``, ``<path>.1``): a
   line is never dropped for a lock. The rotator renames ``<path>`` aside
   first, so writers get a fresh file at once, and rotates only if the full file it saw is still
   ``<path>``, so two processes never rotate twice for one full file. A file passes ``max_bytes`` by
   about one line per writer, more only while a rotator is held up past that wait;
3. one ``os.write`` of the whole line, then ``os.fsync`` when asked;
4. if the file written to had been unlinked meanwhile (rotated out past the last backup, or ``backups=0``
   started afresh), the line is written again to the current file, so it is not lost.

Opening per record costs a few system calls per *run*, and keeps the sink correct across ``fork`` and
rotation by other processes (no cached descriptor points at a renamed file for long). A file system that
does not keep ``O_APPEND`` writes whole (NFS) needs one writer per file. On Windows the rotation lock is
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
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import suppress
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
ROTATION_WAIT_S: Final = 0.02
"""The longest a line waits for another process's rotation of the file it found full (a rename per backup)."""
MAX_BACKLOG: Final = 1024
"""The most records a ``BackgroundSink`` keeps waiting for its thread; past it, a record is dropped."""
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

RECENT_RECORDS: Final = 100
"""How many of the process's last records ``recent_records()`` keeps, whatever the sinks."""
# Appends and copies of a deque are atomic: no lock on the run's path.
_recent: Final[deque[RunRecord]] = deque(maxlen=RECENT_RECORDS)


def recent_records() -> list[RunRecord]:
    """The last ``RECENT_RECORDS`` (100) records of this process, oldest first, whatever the sinks: every
    run of every API (``open_stream``, ``wrap``, ``retrying``, the tap, the relay) is among them once it
    ended. Kept in memory only; a sink (``AuditLog``, ...) is where records outlive the process."""
    return list(_recent.copy())


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
    _recent.append(record)
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


_EXIT_SLICE_S: Final = 0.05


class Backlog(Generic[_Item]):
    """Items worked through in order by a thread of their own, started on demand and gone once idle;
    ``work`` takes up to ``batch`` of them at a time (a failure counts each of them).

    Not a daemon: interpreter exit waits for it, which is how a process flushes what it queued. Each item's
    work is bounded by its owner (a user sink), so that wait is bounded too.
    """

    __slots__ = (
        "_batch",
        "_cond",
        "_disposable",
        "_gather",
        "_items",
        "_limit",
        "_linger",
        "_name",
        "_pid",
        "_spare",
        "_thread",
        "_work",
        "_working",
    )

    def __init__(
        self,
        name: str,
        work: Callable[[list[_Item]], None],
        limit: int,
        *,
        batch: int = 1,
        linger: float = 0.0,
        gather: float = 0.0,
        disposable: Callable[[_Item], bool] | None = None,
    ) -> None:
        """``linger``: how long an idle thread waits for the next item before it ends (a thread started per
        item, one stream at a time, can cost more than the item's work); ``gather``: how long a short batch
        waits to fill (one transaction per record cost more than the record itself); ``disposable``: items
        that a full backlog drops first to keep one that is not (a refusal's record, to keep a run's)."""
        self._name = name
        self._work = work
        self._limit = limit
        self._batch = batch
        self._linger = linger
        self._gather = gather
        self._disposable = disposable
        self._pid = os.getpid()
        self._cond = threading.Condition()
        # (item, run_id, disposable); the first ``_working`` are being worked on
        self._items: deque[tuple[_Item, str, bool]] = deque()
        self._working = 0
        self._spare = 0  # disposable items waiting (not being worked on): when 0, nothing to scan for
        self._thread: threading.Thread | None = None

    def submit(self, item: _Item, run_id: str) -> None:
        """Queue ``item``; a full backlog drops it and counts it, or, for an item that is not disposable,
        drops and counts a disposable one waiting instead."""
        if self._pid != os.getpid():  # a forked child: the parent's items and thread are the parent's
            self._pid, self._cond, self._items, self._thread = (
                os.getpid(),
                threading.Condition(),
                deque(),
                None,
            )
            self._working = self._spare = 0
        spare = self._disposable is not None and self._disposable(item)
        evicted: str | None = None
        with self._cond:
            if len(self._items) >= self._limit and not spare and self._spare:
                evicted = self._evict()  # one is waiting past the batch being worked on
            if len(self._items) >= self._limit:
                full = True
            else:
                full = False
                self._items.append((item, run_id, spare))
                self._spare += spare
                if self._thread is None:
                    self._thread = threading.Thread(target=self._drain, name=f"streamfsm-sink-{self._name}")
                    try:
                        self._thread.start()
                    except RuntimeError:  # interpreter shutdown: no new threads
                        self._items.pop()
                        self._spare -= spare
                        self._thread = None
                        full = True
                else:
                    self._cond.notify_all()  # a lingering thread
        if evicted is not None:
            count_sink_failure(
                self._name,
                evicted,
                f"its backlog of {self._limit} records was full; this refusal's record"
                " was dropped to keep a run's",
            )
        if full:
            count_sink_failure(
                self._name, run_id, f"its backlog of {self._limit} records was full; the record was dropped"
            )

    def _evict(self) -> str | None:
        """Under the lock: drop the oldest disposable item waiting (not one being worked on); its run id,
        or None when every disposable item is being worked on."""
        items = self._items
        for i in range(self._working, len(items)):
            if items[i][2]:
                run_id = items[i][1]
                del items[i]
                self._spare -= 1
                return run_id
        return None

    def pending(self) -> int:
        with self._cond:
            return len(self._items)

    def flush(self, timeout: float) -> bool:
        """Wait until every queued item is done (written, or dropped and counted); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._items, timeout)

    def _linger_for_more(self) -> None:
        """Wait up to ``linger`` for the next item, in slices: once the main thread has ended the interpreter
        is waiting for this thread to exit, and a lingering writer must not hold it up."""
        end = time.monotonic() + self._linger
        while not self._items and threading.main_thread().is_alive():
            left = end - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(min(left, _EXIT_SLICE_S))

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._items and self._linger:
                    self._cond.notify_all()  # a flush sees the backlog empty while the thread lingers
                    self._linger_for_more()
                if not self._items:
                    self._thread = None
                    self._cond.notify_all()
                    return
                short = len(self._items) < self._batch
            if short and self._gather:
                time.sleep(self._gather)
            with self._cond:
                taken = [self._items[i] for i in range(min(self._batch, len(self._items)))]
                self._working = len(taken)
                self._spare -= sum(spare for _, _, spare in taken)  # no longer waiting: never evicted
            try:
                self._work([item for item, _, _ in taken])
            except Exception as exc:
                for _, run_id, _ in taken:
                    _report(self._name, exc, run_id, "")
            with self._cond:
                for _ in taken:
                    self._items.popleft()
                self._working = 0
                self._cond.notify_all()  # a flush waiting on a long backlog sees it shrink


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
        self._backlog: Backlog[RunRecord] = Backlog(_sink_name(sink), self._call, max_backlog)

    def __repr__(self) -> str:
        return f"BackgroundSink({self.sink!r})"

    def __call__(self, record: RunRecord) -> None:
        self._backlog.submit(record, record.run_id)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait up to ``timeout`` seconds until every record handed over was delivered or dropped."""
        return self._backlog.flush(timeout)

    def _call(self, records: list[RunRecord]) -> None:
        for record in records:  # one: the default batch
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
    # A regular file takes the whole line in one call; a short write (disk full) is finished as best it can
    # be, and the reader keeps a torn line on its own.
    while written < len(data):
        n = os.write(fd, data[written:])
        if n <= 0:
            raise OSError(errno.EIO, "short write to the run log")
        written += n


def _lock_within(fd: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    pause = 0.0002
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.002)
    return True


RECHECK_S: Final = 1.0
"""How long a ``JsonlSink`` writes to its open descriptor before it checks that ``path`` still names that
file (a rotation is seen at once by the writer whose line fills the file, by the others within this)."""
_MAX_ROTATIONS: Final = 4  # fresh files a line is offered before it goes to a full one
_MAX_WRITES: Final = 16  # writes of one line whose file other processes keep unlinking


class JsonlSink:
    """Append each run record as one JSON line to ``path``; safe for several processes sharing one file.

    ``only_failures``: skip runs that finished. ``fsync``: flush each line to the disk before returning.
    ``max_bytes`` (``None``: never rotate) and ``backups``: size-based rotation to ``path.1`` … ``path.N``
    (``backups=0`` starts the file afresh). Rotation is coordinated through ``<path>.lock``; leave it in
    place. Missing parent folders are created.

    Each line is written inline, in one ``O_APPEND`` write, without waiting for any other writer (see the
    module's docstring), to a descriptor kept open between lines (opened again when the file was rotated
    or unlinked, by this process or another, or ``path`` names another file: checked at least every
    ``RECHECK_S``). Called directly, it raises ``OSError`` when the file cannot be written.
    """

    __slots__ = (
        "__weakref__",
        "_checked",
        "_closer",
        "_end",
        "_fd",
        "_ino",
        "_lock",
        "_lock_path",
        "_pid",
        "backups",
        "fsync",
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
    ) -> None:
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 1):
            raise ValueError(f"max_bytes must be a positive integer or None, not {max_bytes!r}")
        if not isinstance(backups, int) or backups < 0:
            raise ValueError(f"backups must be a non-negative integer, not {backups!r}")
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self.only_failures = only_failures
        self.fsync = fsync
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()  # one line at a time per process: the descriptor is shared
        self._fd = -1
        self._ino = 0
        self._end = -1  # where this process's last line ended in the open file (its last byte a newline)
        self._checked = 0.0
        self._pid = os.getpid()
        self._closer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def __call__(self, record: RunRecord) -> None:
        if self.only_failures and record.failure_class == "completed":
            return
        self._append((record.to_json() + "\n").encode("utf-8"))

    def flush(self, timeout: float | None = None) -> bool:
        """Nothing waits: every line is written when the sink is called. Always True; kept so that every
        sink, ``BackgroundSink`` included, can be flushed alike."""
        return True

    def append_line(self, line: bytes) -> None:
        """Append one complete line (ending in ``\\n``), rotating first if it would not fit."""
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise ValueError("append_line takes exactly one line ending in a newline")
        self._append(line)

    def rotated_paths(self) -> list[Path]:
        """``path.1`` … ``path.N`` as rotation names them (newest first), whether they exist or not."""
        return [self.path.with_name(f"{self.path.name}.{i}") for i in range(1, self.backups + 1)]

    # -- internals -------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the descriptor kept open (the next line opens the file again)."""
        with self._lock:
            self._drop()

    def _append(self, line: bytes) -> None:
        if self._pid != os.getpid():  # a forked child: its own lock (the parent may hold one) and file
            self._pid, self._lock, self._fd, self._closer = os.getpid(), threading.Lock(), -1, None
        with self._lock:
            for attempt in range(_MAX_WRITES):
                fd = self._current()
                # A file that other writers keep filling is written to whatever its size after a few tries,
                # and a line written to a file unlinked meanwhile is in no file: it is written again.
                if self._write(fd, line, may_rotate=attempt < _MAX_ROTATIONS):
                    after = os.fstat(fd)
                    if after.st_nlink:
                        self._end = after.st_size if after.st_size == self._end else -1
                        return
                self._drop()
            raise OSError(errno.EIO, "the run log was unlinked under every write")

    def _current(self) -> int:
        """The open descriptor of ``path``: opened again when there is none or, every ``RECHECK_S``, when
        ``path`` now names another file (moved aside by a rotation elsewhere, or by the operator)."""
        fd = self._fd
        if fd >= 0:
            now = time.monotonic()
            if now - self._checked < RECHECK_S:
                return fd
            self._checked = now
            try:
                if os.stat(self.path).st_ino == self._ino:
                    return fd
            except FileNotFoundError:
                pass
            self._drop()
        fd = self._open()
        self._fd, self._ino, self._end = fd, os.fstat(fd).st_ino, -1
        self._checked = time.monotonic()
        self._closer = weakref.finalize(self, os.close, fd)
        return fd

    def _drop(self) -> None:
        closer, self._closer, self._fd = self._closer, None, -1
        if closer is not None:
            closer()

    def _write(self, fd: int, line: bytes, *, may_rotate: bool) -> bool:
        """Write ``line`` to ``fd``; False, writing nothing, when ``fd`` was full and ``path`` is now a
        fresh file (rotated here or elsewhere) to open instead."""
        info = os.fstat(fd)
        size = info.st_size
        full = self.max_bytes is not None and size > 0 and size + len(line) > self.max_bytes
        if full and may_rotate and self._rotate_if_current(info.st_ino):
            return False
        if size > 0 and size != self._end and _last_byte(fd, size) != b"\n":
            line = b"\n" + line  # a crash left a torn line: keep it on its own line
        _write_all(fd, line)
        self._end = size + len(line)  # this line's end, if no other writer's came between
        if self.fsync:
            os.fsync(fd)
        return True

    def _open(self) -> int:
        try:
            return os.open(self.path, _OPEN_FLAGS, _FILE_MODE)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, _OPEN_FLAGS, _FILE_MODE)

    def _rotate_if_current(self, full_inode: int) -> bool:
        """Rotate if the full file is still ``path`` and no other process is rotating. True when ``path``
        is now another file (rotated here or elsewhere)."""
        fd = os.open(self._lock_path, _LOCK_FLAGS, _FILE_MODE)
        try:
            if not _lock_within(fd, ROTATION_WAIT_S):
                return False  # a rotation stuck elsewhere: write to the full file rather than wait longer
            try:
                try:
                    current = os.stat(self.path).st_ino
                except FileNotFoundError:
                    return True
                if current != full_inode:
                    return True
                self._rotate()
                return True
            finally:
                _unlock(fd)
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        """Under the rotation lock. ``path`` is renamed out of the way first, so writers open a fresh file at
        once while the backups shift; the full file becomes ``path.1`` last."""
        if self.backups == 0:
            _unlink(self.path)
        else:
            aside = self.path.with_name(self.path.name + ".rotating")
            if aside.exists():  # a rotator died mid-way: finish its rotation, keep the current file
                self._shift_into_first_backup(aside)
            else:
                os.replace(self.path, aside)
                self._shift_into_first_backup(aside)
        if self.fsync and sys.platform != "win32":
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)  # make the renames durable too
            finally:
                os.close(dir_fd)

    def _shift_into_first_backup(self, aside: Path) -> None:
        backups = self.rotated_paths()
        # Shift only up to the first free name (path.N is overwritten, dropped, when none is free): a
        # rotation costs a rename per existing backup, however many are allowed.
        free = next((i for i, name in enumerate(backups) if not name.exists()), len(backups) - 1)
        for i in range(free, 0, -1):
            with suppress(FileNotFoundError):
                os.replace(backups[i - 1], backups[i])
        os.replace(aside, backups[0])


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
    ) -> None:
        super().__init__(
            path,
            only_failures=True,
            fsync=fsync,
            max_bytes=max_bytes,
            backups=backups,
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
    ) -> None:
        super().__init__(
            path,
            only_failures=False,
            fsync=fsync,
            max_bytes=max_bytes,
            backups=backups,
        )
