"""The store: one row per run and its hourly counts, written (its queries: ``_queries``), and the sink that
keeps it."""

from __future__ import annotations

import logging
import os
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

from ..runtime import (
    Backlog,
    OnProblem,
    RelayClose,
    RunRecord,
    count_sink_failure,
    field_value,
    read_records,
    request_id,
    started,
)
from ._backends import (
    COLUMNS,
    COUNTS,
    HOUR,
    RECONNECT_MAX_S,
    RECONNECT_MIN_S,
    UPSERT,
    UPSERT_RECORD,
    StoreDamaged,
    StoreUnavailable,
    Writer,
    connect,
    counts_upsert,
    safe_label,
)
from ._follow import INTERVAL_S, LogIndexer, catch_up
from ._queries import (
    DIMENSIONS,
    OUTCOME_NAMES,
    Earlier,
    Filters,
    Queries,
    RunRow,
    RunsPage,
    StoreGroup,
    Totals,
    Trend,
    _micros,
    _text,
)

__all__ = [
    "DIMENSIONS",
    "INTERVAL_S",
    "OUTCOME_NAMES",
    "Earlier",
    "Filters",
    "LogIndexer",
    "RunRow",
    "RunsPage",
    "Store",
    "StoreDamaged",
    "StoreGroup",
    "StoreSink",
    "StoreUnavailable",
    "Totals",
    "Trend",
    "catch_up",
    "safe_label",
]

_TABLES: Final = ("records", "runs", *COUNTS, "log_positions")
_COLUMN_AT: Final = {name: i for i, name in enumerate(COLUMNS)}
_COUNTED: Final = tuple(dict.fromkeys(c for columns in COUNTS.values() for c in columns))
"""The columns of ``runs`` that some table of counts counts by."""
_UPSERTS: Final = {table: counts_upsert(table) for table in COUNTS}
_LOCK_RUNS: Final = (
    "SELECT pg_advisory_xact_lock(k) FROM"
    " (SELECT DISTINCT hashtextextended(id, 0) AS k FROM unnest(?::text[]) AS id ORDER BY k) AS ordered"
)
"""PostgreSQL: lock run ids (given as one array) for the transaction, in the order of their hashes."""


def _close(record: RunRecord) -> str | None:
    relay = record.get("relay")
    value = relay.get("close") if isinstance(relay, Mapping) else None  # a record's sections are read-only
    return value if isinstance(value, str) else None


def _count_keys(t: int | None, failed: int, values: Mapping[str, str]) -> list[tuple[Any, ...]]:
    """Where a run counts: per table of counts, (table, hour, its columns' values..., failed)."""
    hour = -1 if t is None else t // HOUR  # -1: the record does not say when it started
    return [(table, hour, *(values[c] for c in columns), failed) for table, columns in COUNTS.items()]


def _row(record: RunRecord, line: bytes | None = None) -> tuple[Any, ...]:
    """The store's row of ``record``; ``line``: the record's JSON as a log holds it (else written here)."""
    when = started(record)
    ids = record["ids"]
    provider_request_id = ids.get("provider_request_id")
    outcome = record["outcome"]
    klass, key = outcome["class"], outcome["summary_key"]
    if not (isinstance(ids["run_id"], str) and isinstance(klass, str) and isinstance(key, str)):
        raise ValueError("a run record without ids.run_id, outcome.class or outcome.summary_key")
    return (
        ids["run_id"],
        None if when is None else _micros(when),
        int(klass != "completed"),
        klass,
        key,
        _text(field_value(record, "provider")),
        _text(field_value(record, "model")),
        _text(field_value(record, "transport_kind")),
        _text(field_value(record, "route")),
        _text(field_value(record, "account")),
        request_id(record),
        provider_request_id if isinstance(provider_request_id, str) else "",
        _text(_close(record)),
        str(record["summary"]["title"]),
        zlib.compress(record.to_json().encode("utf-8") if line is None else line, 1),
    )


def _write_rows(db: Writer, kind: str, rows: Sequence[Sequence[Any]], *, fresh: bool) -> None:
    """Write store rows (``COLUMNS`` and the compressed record) and keep the tables of counts counting each
    run once (a run is one row, by run id: one seen again moves its counts to its latest values), in the
    transaction ``db``. ``fresh``: the run ids are new to the store and to each other (a bulk load, in
    COPY)."""
    seen: dict[str, list[tuple[Any, ...]]] = {}
    if not fresh:
        ids = sorted({row[0] for row in rows})
        if kind == "postgresql":
            # Two writers of the same runs at once would each find them new and count them twice
            # (SQLite's writers take turns): each run id is locked until this transaction ends, in
            # one order for every writer, so that none waits on another in a cycle.
            db.execute(_LOCK_RUNS, [ids])
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            found = db.fetch(
                f"SELECT run_id, t, failed, {', '.join(_COUNTED)} FROM runs"
                f" WHERE run_id IN ({', '.join('?' * len(part))})",
                part,
            )
            for run_id, t, failed, *values in found:
                seen[run_id] = _count_keys(t, failed, dict(zip(_COUNTED, values, strict=True)))
    delta: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        old = seen.get(row[0])
        if old is not None:  # a run seen again: counted once, with its latest values
            delta.subtract(old)
        seen[row[0]] = new = _count_keys(row[1], row[2], {c: row[_COLUMN_AT[c]] for c in _COUNTED})
        delta.update(new)
    runs, records = [row[:-1] for row in rows], [(row[0], row[-1]) for row in rows]
    if fresh:
        db.copy("runs", COLUMNS, runs)
        db.copy("records", ("run_id", "record"), records)
    else:
        db.executemany(UPSERT, runs)
        db.executemany(UPSERT_RECORD, records)
    # In key order, so that writers on several hosts lock the same counters in the same order.
    changes = sorted((*key, n) for key, n in delta.items() if n)
    for table in COUNTS:
        counted = [change[1:] for change in changes if change[0] == table]
        if counted:
            db.executemany(_UPSERTS[table], counted)
        # A run that moved leaves a counter at zero behind: gone, or the page shows an empty group.
        emptied = sorted({change[1] for change in changes if change[0] == table and change[-1] < 0})
        for i in range(0, len(emptied), 500):
            part = emptied[i : i + 500]
            db.execute(f"DELETE FROM {table} WHERE n = 0 AND hour IN ({', '.join('?' * len(part))})", part)


class Store(Queries):
    """The run index. ``Store.open(url)``: ``sqlite:///PATH`` (or a path) or ``postgresql://...``.

    Safe to share between threads of one process; any number of processes (and, on PostgreSQL, hosts) may
    write one store. Close it when done (or use it as a context manager).
    """

    __slots__ = ()

    @classmethod
    def open(cls, url: str | os.PathLike[str]) -> Store:
        return cls(connect(os.fspath(url)))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self._db.label!r})"

    @property
    def label(self) -> str:
        """The store's URL without its password."""
        return self._db.label

    @property
    def kind(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.kind

    def close(self) -> None:
        self._db.close()

    # -- writing -----------------------------------------------------------------------------------------

    def add(
        self,
        records: Iterable[RunRecord],
        *,
        on_error: Callable[[RunRecord, Exception], None] | None = None,
    ) -> int:
        """Index ``records`` in one transaction; a run already indexed takes the later record. How many.

        A batch the database refuses is written again row by row, so that one row it refuses never takes
        its neighbours: each refused record goes to ``on_error`` (without one, the first refusal is raised
        once the others are written). ``StoreUnavailable`` (the database cannot be reached) is raised at
        once, with nothing written."""
        first: Exception | None = None

        def refused(record: RunRecord, exc: Exception) -> None:
            nonlocal first
            if on_error is None:
                first = first or exc
            else:
                on_error(record, exc)

        pairs = []
        for record in records:
            try:
                pairs.append((record, _row(record)))
            except Exception as exc:  # a record built by hand that is no JSON
                refused(record, exc)
        try:
            if pairs:
                self._write([row for _, row in pairs], fresh=False)
            pairs, written = [], len(pairs)
        except StoreUnavailable:
            raise
        except Exception as exc:
            if len(pairs) == 1:
                refused(pairs[0][0], exc)
                pairs, written = [], 0
            else:
                written = 0
        for record, row in pairs:
            try:
                self._write([row], fresh=False)
            except StoreUnavailable:
                raise
            except Exception as exc:
                refused(record, exc)
                continue
            written += 1
        if first is not None:
            raise first
        return written

    def _write(self, rows: Sequence[Sequence[Any]], *, fresh: bool) -> None:
        """Write store rows (``COLUMNS`` and the compressed record) in one transaction (``_write_rows``)."""
        kind = self._db.kind
        self._db.write(lambda db: _write_rows(db, kind, rows, fresh=fresh))

    def _write_in(self, db: Writer, rows: Sequence[Sequence[Any]]) -> None:
        """Write store rows inside the write transaction ``db`` (``_follow``)."""
        if rows:
            _write_rows(db, self._db.kind, rows, fresh=False)

    def add_logs(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        rotated: bool = True,
        since: datetime | None = None,
        on_problem: OnProblem | None = None,
        batch: int = 2000,
    ) -> int:
        """Index every record of the JSON-lines logs ``paths`` (with their rotated siblings), skipping runs
        started before ``since``. Runs in several logs (audit and error) are indexed once. How many read."""
        count = 0
        pending: list[RunRecord] = []
        for path in paths:
            for record in read_records(Path(path), rotated=rotated, on_problem=on_problem):
                when = started(record)
                if since is not None and (when is None or when < since):
                    continue
                pending.append(record)
                count += 1
                if len(pending) >= batch:
                    self.add(pending)
                    pending.clear()
        self.add(pending)
        return count

    def rebuild(self, paths: Iterable[str | os.PathLike[str]], **options: Any) -> int:
        """Empty the store, then index the logs ``paths`` (``add_logs``' options). How many read."""
        self.clear()
        return self.add_logs(paths, **options)

    def clear(self) -> None:
        self._db.write(lambda db: [db.execute(f"DELETE FROM {table}") for table in _TABLES])

    def prune(self, before: datetime) -> int:
        """Retention: forget runs started before ``before``, rounded down to the hour. How many."""
        hour = _micros(before) // HOUR

        def work(db: Writer) -> int:
            cut = [hour * HOUR]
            db.execute("DELETE FROM records WHERE run_id IN (SELECT run_id FROM runs WHERE t < ?)", cut)
            for table in COUNTS:
                db.execute(f"DELETE FROM {table} WHERE hour >= 0 AND hour < ?", [hour])
            return db.execute("DELETE FROM runs WHERE t < ?", cut)

        return self._db.write(work)


# -- the sink ----------------------------------------------------------------------------------------------

MAX_BACKLOG: Final = 10_000
"""Records a ``StoreSink`` holds while its writer catches up; past it a record is dropped and counted."""
_BATCH: Final = 500
_LINGER_S: Final = 0.5  # a relay indexes one stream's record at a time: keep the writer for the next one
_GATHER_S: Final = 0.05  # let a batch gather: one transaction per record cost ~450 us of a relayed stream
_PRUNE_EVERY_S: Final = 3600.0


# A refused answer (too large to hold) went upstream and was billed: a real run, not a refusal.
_ANSWER_LIMITS: Final = frozenset({"max_answer_bytes", "answer_budget_bytes"})


def _refusal(record: RunRecord) -> bool:
    """A relay's refusal that never went upstream (overloaded, or the request refused): what a full backlog
    drops first."""
    close = _close(record)
    if close == RelayClose.OVERLOADED.value:
        return True
    relay = record.get("relay")
    limit = relay.get("limit") if isinstance(relay, Mapping) else None
    return close == RelayClose.REFUSED.value and limit not in _ANSWER_LIMITS


_log: Final = logging.getLogger("streamfsm.store")


class StoreSink:
    """A run record sink that indexes each record in a store, off the caller's thread.

    Calling it only queues the record (the event loop never waits on the database, whose writes can wait on
    another process's lock); a thread of its own writes what waits in one transaction per batch, and a
    batch the database refuses row by row (one bad row never takes its neighbours). While the database
    cannot be reached the writer keeps the batch and tries again, after ``RECONNECT_MIN_S`` doubling up to
    ``RECONNECT_MAX_S``. At most ``max_backlog`` records wait: past that a relay's refusal (close
    ``overloaded``) waiting is dropped to keep a run's record, and a record that finds the backlog full of
    runs is dropped. Every record not indexed (dropped, refused, or still waiting when the process exits or
    the sink is closed) is counted in ``sink_failures()`` under ``StoreSink`` and reported on
    ``streamfsm.sinks`` (never silently); the logs stay the source of truth and ``streamfsm store rebuild``
    makes the index whole again. ``retention``: forget runs older than that, checked hourly. ``flush()``
    waits for the backlog; ``close()`` flushes and closes the store.
    """

    __slots__ = ("_backlog", "_down", "_last_prune", "_pid", "_stop", "_store", "_url", "retention")

    def __init__(
        self, url: str, *, retention: timedelta | None = None, max_backlog: int = MAX_BACKLOG
    ) -> None:
        if max_backlog < 1:
            raise ValueError(f"max_backlog must be positive, not {max_backlog!r}")
        self._url = url
        self.retention = retention
        self._store = Store.open(url)  # fails now, not on the first record, for a bad URL
        self._pid = os.getpid()
        self._last_prune = 0.0
        self._stop = threading.Event()  # set by close(): an unreachable store is waited for no longer
        self._down = False
        self._backlog: Backlog[RunRecord] = Backlog(
            "StoreSink",
            self._index,
            max_backlog,
            batch=_BATCH,
            linger=_LINGER_S,
            gather=_GATHER_S,
            disposable=_refusal,
        )

    def __repr__(self) -> str:
        return f"StoreSink({self._store.label!r})"

    def __call__(self, record: RunRecord) -> None:
        if self._pid != os.getpid():  # a forked worker: a connection of its own (the backlog renews itself)
            self._pid, self._last_prune = os.getpid(), 0.0
            self._store = Store.open(self._url)
        self._backlog.submit(record, record.run_id)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every record handed over was indexed (or counted as not); False on timeout."""
        return self._backlog.flush(timeout)

    def pending(self) -> int:
        """Records waiting to be indexed."""
        return self._backlog.pending()

    @property
    def unreachable(self) -> bool:
        """Whether the writer is waiting for the store to come back (its last write could not reach it)."""
        return self._down

    def close(self, timeout: float = 10.0) -> None:
        """Flush for up to ``timeout``; then what still waits for an unreachable store is counted, not
        indexed, and the store is closed."""
        if not self.flush(timeout):
            self._stop.set()
            self.flush(timeout)
        self._store.close()

    def _index(self, batch: list[RunRecord]) -> None:
        delay = RECONNECT_MIN_S
        while True:
            try:
                self._store.add(batch, on_error=self._refused)
            except StoreUnavailable as exc:
                if self._stop.is_set() or not threading.main_thread().is_alive():
                    for record in batch:
                        count_sink_failure(
                            "StoreSink", record.run_id, "the store was unreachable; not indexed (in the logs)"
                        )
                    return
                if not self._down:
                    self._down = True
                    _log.warning("%s; holding the records and trying again", exc)
                self._stop.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            break
        if self._down:
            self._down = False
            _log.warning("the store %s is reachable again", self._store.label)
        self._maybe_prune()

    @staticmethod
    def _refused(record: RunRecord, exc: Exception) -> None:
        count_sink_failure("StoreSink", record.run_id, f"the database refused it ({type(exc).__qualname__})")

    def _maybe_prune(self) -> None:
        now = time.monotonic()
        if self.retention is None or now - self._last_prune < _PRUNE_EVERY_S:
            return
        self._last_prune = now
        try:
            self._store.prune(datetime.now(timezone.utc) - self.retention)
        except Exception as exc:
            count_sink_failure("StoreSink", "-", f"retention raised {type(exc).__qualname__}")
