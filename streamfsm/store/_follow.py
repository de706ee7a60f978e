"""Keeping a store current from JSON-lines logs: what each log gained since the last look is indexed with
how far it was read, in one transaction, so that the store is a derived index that catches up from the logs
after a crash or a restart and never counts a line twice.

Each file is known by its device and inode (rotation renames, so a file keeps its inode as it moves to
``path.1`` and on) and is read up to a whole line's end (a line being written is read the next time). The
positions live in the store (``log_positions``), read and moved inside the write transaction, so that several
processes following one log into one store (``--workers``) take turns instead of indexing a line twice.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from ..runtime import RunRecord, log_files, read_records
from ._backends import RECONNECT_MAX_S, StoreUnavailable, Writer
from ._store import Store, _row

__all__ = ["INTERVAL_S", "LogIndexer", "catch_up"]

CHUNK: Final = 1 << 20
"""Bytes of a log indexed per transaction (about 400 records): a page's query never waits long behind it."""
INTERVAL_S: Final = 0.25
"""How often a ``LogIndexer`` looks at its logs: a run is on the page about this long after its record."""
_SEEN: Final = "SELECT read_to FROM log_positions WHERE log = ? AND dev = ? AND ino = ?"
_MOVE: Final = (
    "INSERT INTO log_positions (log, dev, ino, read_to) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (log, dev, ino) DO UPDATE SET read_to = excluded.read_to"
)
_JOURNAL: Final = (b'{"schema":"streamfsm.begin/', b'{"schema":"streamfsm.end/')
_TURNS: Final = "SELECT pg_advisory_xact_lock(hashtextextended('streamfsm.log_positions', 0))"
"""PostgreSQL: indexers of one store take turns (SQLite's writers always do)."""

_log: Final = logging.getLogger("streamfsm.store")


class _Skipped:
    """Lines that could not be read (torn, not JSON), counted."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, problem: object) -> None:
        self.count += 1


def catch_up(
    store: Store,
    logs: Sequence[str | os.PathLike[str]],
    skipped: Callable[[object], None],
    known: dict[tuple[str, int, int], int] | None = None,
) -> int:
    """Index in ``store`` what ``logs`` (with their rotated files, oldest first) gained since the positions
    the store holds; ``skipped`` is called for each line that could not be read. How many records.
    ``known``: the positions this caller last read up to (kept between calls): a file whose size is its
    known position costs no transaction (another process may have read on from it: the store's position
    is the truth whenever the file grew)."""
    count = 0
    for log in logs:
        name = os.fspath(log)
        kept: list[tuple[int, int]] = []
        before = {key[1:] for key in known if key[0] == name} if known is not None else None
        for file in log_files(name):
            try:
                handle = file.open("rb")
            except OSError:  # rotated away since the listing: its lines are in the file it became
                continue
            with handle:
                info = os.fstat(handle.fileno())
                key = (info.st_dev, info.st_ino)
                kept.append(key)
                if known is not None and known.get((name, *key)) == info.st_size:
                    continue  # nothing new since this caller's last look
                chunk = functools.partial(_chunk, store, log=name, key=key, handle=handle, skipped=skipped)
                while True:
                    read, more, position = store._db.write(chunk)
                    count += read
                    if not more:
                        break
                if known is not None:
                    known[name, key[0], key[1]] = position
        if before is None or before != set(kept):  # a file came or went: forget those gone
            store._db.write(functools.partial(_forget, log=name, kept=kept))
            if known is not None:
                for gone in before or set():
                    if gone not in kept:
                        known.pop((name, *gone), None)
    return count


def _chunk(
    store: Store,
    db: Writer,
    *,
    log: str,
    key: tuple[int, int],
    handle: Any,
    skipped: Callable[[object], None],
) -> tuple[int, bool, int]:
    """One transaction: the records after the file's position (at most ``CHUNK`` bytes), and the position
    moved past them. (records indexed, whether there may be more, the position now)."""
    if store.kind == "postgresql":
        db.execute(_TURNS)
    found = db.fetch(_SEEN, [log, *key])
    offset = int(found[0][0]) if found else 0
    if os.fstat(handle.fileno()).st_size < offset:  # not the file read before (an inode used again)
        offset = 0
    handle.seek(offset)
    data = handle.read(CHUNK)
    end = data.rfind(b"\n") + 1
    if not end and len(data) == CHUNK:  # no run record is that long: skipped
        end = len(data)
    if not end:
        return 0, False, offset  # nothing, or a line still being written
    rows = list(_rows(data[:end], skipped))
    store._write_in(db, rows)
    db.execute(_MOVE, [log, *key, offset + end])
    return len(rows), len(data) == CHUNK, offset + end


def _rows(data: bytes, skipped: Callable[[object], None]) -> Iterator[tuple[Any, ...]]:
    """The store's rows of the records of whole lines ``data``. A line that is one record is parsed once and
    kept as the log has it (not written as JSON again); any other line is read as ``read_records`` reads it,
    which reports what it skips."""
    for line in data.splitlines(keepends=True):
        if line.startswith(_JOURNAL):  # a relay's begin and end lines: no runs
            continue
        try:
            yield _row(RunRecord.from_json(line), line.rstrip(b"\r\n"))
            continue
        except Exception:  # not one whole record: read below, which reports it
            pass
        for record in read_records(io.BytesIO(line), on_problem=skipped):
            try:
                yield _row(record)
            except Exception:  # a record no database can take: the log keeps it
                skipped(record.run_id)


def _forget(db: Writer, *, log: str, kept: Sequence[tuple[int, int]]) -> None:
    """The positions of files no longer among the log's (rotated out, deleted) are forgotten."""
    for dev, ino in db.fetch("SELECT dev, ino FROM log_positions WHERE log = ?", [log]):
        if (int(dev), int(ino)) not in kept:
            db.execute("DELETE FROM log_positions WHERE log = ? AND dev = ? AND ino = ?", [log, dev, ino])


class LogIndexer:
    """Keeps the store at ``url`` current from JSON-lines ``logs``: a thread of its own (with a connection of
    its own, so that queries never wait on it) indexes what they gained every ``interval`` seconds, one
    transaction per ``CHUNK`` of a log with the position read up to. The logs stay the truth: a record
    reaches them first, and a store whose indexer died (a crash, ``kill -9``) catches up from the
    positions it holds when it is followed again. While the store cannot be used the indexer waits and
    tries again (backing off up to ``RECONNECT_MAX_S``). ``after_pass``: called in that thread after each
    pass. ``flush(timeout)`` waits for a pass that started after it was called; ``close()`` stops the
    thread."""

    def __init__(
        self,
        url: str,
        logs: Sequence[str | os.PathLike[str]],
        *,
        interval: float = INTERVAL_S,
        after_pass: Callable[[], object] | None = None,
    ) -> None:
        self._store = Store.open(url)
        self._logs = [Path(log) for log in logs]
        self._interval = interval
        self._after_pass = after_pass
        self._known: dict[tuple[str, int, int], int] = {}
        self._skipped = _Skipped()
        self._wake = threading.Condition()
        self._asked = 0  # passes asked for (flush), and passes done: a flush waits for one started after it
        self._done = 0
        self._stop = False
        self.behind = True  # until a pass found nothing more to read
        self._thread = threading.Thread(
            target=_follow, args=(weakref.ref(self),), name="streamfsm-log-indexer", daemon=True
        )
        self._thread.start()

    def __repr__(self) -> str:
        return f"LogIndexer({self._store.label!r})"

    @property
    def skipped(self) -> int:
        """Lines of the logs that could not be read (torn, not JSON), since the start."""
        return self._skipped.count

    def flush(self, timeout: float = 10.0) -> bool:
        """Ask for a pass now and wait for it, up to ``timeout`` seconds; False on timeout."""
        with self._wake:
            self._asked += 1
            wanted = self._asked
            self._wake.notify_all()
            return self._wake.wait_for(lambda: self._done >= wanted or self._stop, timeout)

    def close(self, timeout: float = 10.0) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._store.close()

    def _pass(self) -> float:
        """One pass over the logs; the wait before the next."""
        with self._wake:
            asked = self._asked
        try:
            catch_up(self._store, self._logs, self._skipped, self._known)
        except StoreUnavailable as exc:
            _log.warning("%s; indexing the logs again later", exc)
            return RECONNECT_MAX_S
        except OSError as exc:  # a log folder gone or unreadable: the logs are the operator's
            _log.warning("cannot read the logs to index them (%s)", type(exc).__qualname__)
            return RECONNECT_MAX_S
        self.behind = False
        if self._after_pass is not None:
            try:
                self._after_pass()
            except Exception as exc:  # the caller's: reported, the indexing goes on
                _log.warning("after indexing the logs: %s", type(exc).__qualname__)
        with self._wake:
            self._done = max(self._done, asked)
            self._wake.notify_all()
        return self._interval


def _follow(ref: weakref.ref[LogIndexer]) -> None:
    """The indexer's thread: it holds the indexer only weakly, so that one dropped unclosed stops too."""
    wait = 0.0  # the first pass at once
    while True:
        indexer = ref()
        if indexer is None:
            return
        with indexer._wake:
            if indexer._stop:
                return
            if indexer._asked <= indexer._done:
                indexer._wake.wait(wait)
            if indexer._stop:
                return
        wait = indexer._pass()
        del indexer
