"""The store: one row per run (its record aside, compressed) and its hourly counts (``_counts``), written
and queried; what the queries take and answer with is ``_queries``, the sink that keeps it ``_sink``."""

from __future__ import annotations

import json
import os
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

from ..runtime import SIGNATURE, OnProblem, RunRecord, field_value, read_records, request_id, started
from ._backends import (
    COLUMNS,
    COUNTS,
    HOUR,
    UPSERT,
    UPSERT_RECORD,
    Backend,
    StoreDamaged,
    StoreUnavailable,
    Writer,
    connect,
    safe_label,
)
from ._counts import COUNTED, count_keys, per_bucket, write_counts
from ._queries import (
    DIMENSIONS,
    OUTCOME_NAMES,
    ROW_COLUMNS,
    SAMPLES,
    Earlier,
    Filters,
    RunRow,
    RunsPage,
    StoreGroup,
    Totals,
    Trend,
    _micros,
    _none,
    _text,
    _when,
    close_of,
    column,
    run_row,
    values,
)

__all__ = [
    "DIMENSIONS",
    "OUTCOME_NAMES",
    "Earlier",
    "Filters",
    "RunRow",
    "RunsPage",
    "Store",
    "StoreDamaged",
    "StoreGroup",
    "StoreUnavailable",
    "Totals",
    "Trend",
    "safe_label",
]

_EVERY: Final = Filters()
"""Every run (no window, no value): the queries' default."""
_TABLES: Final = ("records", "runs", *COUNTS, "log_positions")
_COLUMN_AT: Final = {name: i for i, name in enumerate(COLUMNS)}
_LOCK_RUNS: Final = (
    "SELECT pg_advisory_xact_lock(k) FROM"
    " (SELECT DISTINCT hashtextextended(id, 0) AS k FROM unnest(?::text[]) AS id ORDER BY k) AS ordered"
)
"""PostgreSQL: lock run ids (given as one array) for the transaction, in the order of their hashes."""


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
        _text(close_of(record)),
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
                f"SELECT run_id, t, failed, {', '.join(COUNTED)} FROM runs"
                f" WHERE run_id IN ({', '.join('?' * len(part))})",
                part,
            )
            for run_id, t, failed, *values in found:
                seen[run_id] = count_keys(t, failed, dict(zip(COUNTED, values, strict=True)))
    delta: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        old = seen.get(row[0])
        if old is not None:  # a run seen again: counted once, with its latest values
            delta.subtract(old)
        seen[row[0]] = new = count_keys(row[1], row[2], {c: row[_COLUMN_AT[c]] for c in COUNTED})
        delta.update(new)
    runs, records = [row[:-1] for row in rows], [(row[0], row[-1]) for row in rows]
    if fresh:
        db.copy("runs", COLUMNS, runs)
        db.copy("records", ("run_id", "record"), records)
    else:
        db.executemany(UPSERT, runs)
        db.executemany(UPSERT_RECORD, records)
    write_counts(db, delta)


def _window_before(since: datetime, until: datetime) -> tuple[datetime, datetime] | None:
    """The whole hours before ``[since, until)``: as long (rounded up), ending at the start of the hour
    ``since`` falls in (None: before the year 1)."""
    end = _micros(since) // HOUR * HOUR
    length = -(-(_micros(until) - _micros(since)) // HOUR) * HOUR
    try:
        start, stop = _when(end - length), _when(end)
    except OverflowError:
        return None
    assert start is not None
    assert stop is not None
    return start, stop


class Store:
    """The run index. ``Store.open(url)``: ``sqlite:///PATH`` (or a path) or ``postgresql://...``.

    Safe to share between threads of one process; any number of processes (and, on PostgreSQL, hosts) may
    write one store. Close it when done (or use it as a context manager).
    """

    __slots__ = ("_by_arrival", "_counts", "_db")

    def __init__(self, backend: Backend, *, counts: bool = True) -> None:
        """``counts=False``: every query counts the runs themselves, never the tables of counts (the
        reference the counts are tested against)."""
        self._db = backend
        self._counts = COUNTS if counts else {}
        # SQLite's planner takes a time range over an order it can walk; PostgreSQL's weighs the window by
        # its statistics and does better with it on the index (a ``+t`` there reads a signature's whole life).
        self._by_arrival = backend.kind == "sqlite"

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

        def written(part: list[tuple[RunRecord, tuple[Any, ...]]]) -> int:
            try:
                self._write([row for _, row in part], fresh=False)
            except StoreUnavailable:
                raise
            except Exception as exc:
                if len(part) == 1:
                    refused(part[0][0], exc)
                return 0
            return len(part)

        count = written(pairs) if pairs else 0
        if pairs and not count and len(pairs) > 1:  # refused: row by row
            count = sum(written([pair]) for pair in pairs)
        if first is not None:
            raise first
        return count

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

    def groups(
        self,
        filters: Filters = _EVERY,
        by: Sequence[str] = SIGNATURE,
        *,
        limit: int | None = None,
        samples: int = SAMPLES,
        counted: Sequence[Trend] | None = None,
        rank: Callable[[tuple[str | None, ...], int, int], float] | None = None,
    ) -> list[StoreGroup]:
        """Failed runs grouped by the values of ``by`` (names of ``DIMENSIONS``), most failures first, then
        the latest; each with first and last seen, the latest sample runs, the title of its latest failure
        and ``runs``: every run in the window that shares the group's values other than ``OUTCOME_NAMES``
        (by signature: the runs of its provider and model; by class: all runs). The same groups as
        ``streamfsm report`` over the same records. ``limit``: the first so many (each group's details
        cost a query: give one for a view of many groups, such as by account). ``counted``: ``trend`` over
        the same filters, window and ``by`` (the errors page asks for both): its sums are the counts, which
        then cost no query of their own (over a month of runs by route, two scans of the window). ``rank``:
        a number per group from its key, failures and runs (its failure rate, say), the highest first, before
        the most failures; the limit keeps the highest ranked."""
        context = [i for i, name in enumerate(by) if name not in OUTCOME_NAMES]
        failures: dict[tuple[Any, ...], int] = {}
        runs: dict[tuple[Any, ...], int] = {}
        if counted is None:
            failed_per_key, runs_per_context = self._tally(by, filters)
            failures = {key: counts[0] for key, counts in failed_per_key.items()}
            runs = {key: counts[0] for key, counts in runs_per_context.items()}
        else:
            for trend in counted:
                key = tuple(_text(value) for value in trend.key)
                failures[key] = sum(trend.failures)
                runs[tuple(key[i] for i in context)] = sum(trend.runs)

        def order(key: tuple[Any, ...], count: int) -> tuple[float, int]:
            if rank is None:
                return 0.0, -count
            return -rank(
                tuple(_none(value) for value in key), count, runs.get(tuple(key[i] for i in context), 0)
            ), -count

        ranked = sorted(failures.items(), key=lambda item: order(*item))
        if limit is not None and len(ranked) > limit:  # details (a query each) only for the top and its ties
            cut = order(*ranked[limit - 1])
            ranked = [item for item in ranked if order(*item) <= cut]
        groups = []
        for key, count in ranked:
            groups.append(
                StoreGroup(
                    names=tuple(by),
                    key=tuple(_none(value) for value in key),
                    failures=count,
                    runs=runs.get(tuple(key[i] for i in context), 0),
                    **self._details(by, key, filters, samples),
                )
            )
        oldest = datetime.min.replace(tzinfo=timezone.utc)
        groups.sort(
            key=lambda g: (
                order(tuple(_text(k) for k in g.key), g.failures),
                -(g.last or oldest).timestamp(),
                tuple(k or "" for k in g.key),
            )
        )
        return groups if limit is None else groups[:limit]

    def earlier(self, filters: Filters, by: Sequence[str] = SIGNATURE) -> Earlier | None:
        """What ``groups`` counts, over the window before ``filters``' one: as long (in whole hours, rounded
        up) and ending at the start of the hour that window starts in, so that it is read from the hourly
        counts alone, never from the runs. None when no table of counts counts by every name of ``by`` and
        every filter, or ``filters``' window is open at either end. (A store made with ``counts=False``, the
        reference, counts the same from the runs.)"""
        if filters.since is None or filters.until is None:
            return None
        wanted = {*(column(name) for name in by), *values(filters)}
        if not any(wanted <= set(counted) for counted in COUNTS.values()):
            return None  # (the reference, ``counts=False``, answers where the counts would, from the runs)
        window = _window_before(filters.since, filters.until)
        if window is None:
            return None
        since, until = window
        failures, runs = self._tally(by, replace(filters, since=since, until=until))
        return Earlier(
            tuple(by),
            since,
            until,
            {tuple(_none(v) for v in key): n for key, (n,) in failures.items()},
            {tuple(_none(v) for v in key): n for key, (n,) in runs.items()},
        )

    def matching(self, filters: Filters = _EVERY, *, failed: bool | None = None) -> int:
        """How many runs match ``filters`` (``failed``: only failed or only completed ones): from the hourly
        counts when a table counts by every filter (as ``groups``), from the runs otherwise."""
        failures, runs = self._tally((), filters)
        every, failing = runs.get((), [0])[0], failures.get((), [0])[0]
        return every if failed is None else failing if failed else every - failing

    def _details(
        self, by: Sequence[str], key: tuple[Any, ...], filters: Filters, samples: int
    ) -> dict[str, Any]:
        """A group's first and last seen, latest samples and title, in one round trip (each part walks an
        index from one end)."""
        where, params = filters.where(failed=True)
        group = " AND ".join(f"{column(name)} = ?" for name in by)
        base = f"FROM runs WHERE {where} AND {group}"
        arrival, _ = filters.where(failed=True, by_arrival=self._by_arrival)
        timed = f"{base} AND t IS NOT NULL"
        parts = [
            f"SELECT 0, run_id, request_id, t, seq FROM runs WHERE {arrival} AND {group}"
            f" ORDER BY seq DESC LIMIT {int(samples)}",
            f"SELECT 1, title, '', t, seq {timed} ORDER BY t DESC, seq DESC LIMIT 1",
            f"SELECT 3, '', '', t, seq {timed} ORDER BY t, seq LIMIT 1",
        ]
        rows = self._db.query(
            " UNION ALL ".join(f"SELECT * FROM ({part}) AS p{i}" for i, part in enumerate(parts)),
            [*params, *key] * len(parts),
        )
        found: dict[int, list[tuple[Any, ...]]] = {0: [], 1: [], 3: []}
        for tag, *rest in rows:
            found[int(tag)].append(tuple(rest))
        latest = sorted(found[0], key=lambda r: -int(r[3]))
        last, first = found[1], found[3]
        # The report keeps the title of the latest run; of the first in log order when none says when (a
        # query of its own: from the oldest run on, it would walk the whole store for a recent window).
        oldest = f"SELECT title {base} ORDER BY seq LIMIT 1"
        earliest = [] if last else self._db.query(oldest, [*params, *key])
        title = last[0][0] if last else earliest[0][0] if earliest else ""
        return {
            "first": _when(first[0][2]) if first else None,
            "last": _when(last[0][2]) if last else None,
            "sample_run_ids": tuple(r[0] for r in latest),
            "sample_request_ids": tuple(r[1] for r in latest),
            "title": title,
        }

    def trend(
        self,
        since: datetime,
        until: datetime,
        buckets: int,
        filters: Filters = _EVERY,
        by: Sequence[str] = SIGNATURE,
        *,
        also: Sequence[tuple[str | None, ...]] = (),
    ) -> list[Trend]:
        """Failed runs per group key in ``buckets`` equal slices of ``[since, until)`` (``filters``' own
        window is replaced), for every key with a failure in the window; and all runs in each slice, counted
        as ``groups`` counts them (sharing the key's values other than ``OUTCOME_NAMES``). ``also``: keys to
        answer for even without a failure in the window (last, in that order: the groups of a longer window
        drawn over a part of it)."""
        if buckets < 1 or until <= since:
            raise ValueError("a trend needs at least one bucket and until after since")
        start, end = _micros(since), _micros(until)
        width = -(-(end - start) // buckets)
        context = [i for i, name in enumerate(by) if name not in OUTCOME_NAMES]
        failed, runs = self._tally(by, replace(filters, since=since, until=until), buckets)
        for wanted in also:
            failed.setdefault(tuple(_text(value) for value in wanted), [0] * buckets)
        return [
            Trend(
                tuple(_none(value) for value in key),
                since,
                timedelta(microseconds=width),
                tuple(counts),
                tuple(runs.get(tuple(key[i] for i in context)) or [0] * buckets),
            )
            for key, counts in sorted(failed.items(), key=lambda item: (-sum(item[1]), item[0]))
        ]

    def runs(
        self,
        filters: Filters = _EVERY,
        *,
        failed: bool | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> RunsPage:
        """Runs matching ``filters`` (``failed``: only failed or only completed ones), the latest arrival
        first, ``limit`` a page; ``before``: the previous page's ``next_before``."""
        where, params = filters.where(failed=failed, by_arrival=self._by_arrival)
        if before is not None:
            where += " AND seq < ?"
            params.append(before)
        rows = self._db.query(
            f"SELECT {ROW_COLUMNS} FROM runs WHERE {where} ORDER BY seq DESC LIMIT {int(limit) + 1}", params
        )
        page = tuple(run_row(row) for row in rows[:limit])
        return RunsPage(page, page[-1].seq if len(rows) > limit else None)

    def totals(self, filters: Filters = _EVERY) -> Totals:
        """How many runs match ``filters``, how many failed, and how many of each class."""
        failures, runs = self._tally(("class",), filters)
        every = runs.get((), [0])[0]
        by_class = {klass: n for (klass,), (n,) in failures.items()}
        failing = sum(by_class.values())
        if every > failing:
            by_class["completed"] = every - failing
        return Totals(every, failing, by_class)

    def record(self, run_id: str) -> RunRecord | None:
        """The record of run ``run_id``, or None."""
        found = self._records("run_id = ?", [run_id], 1)
        return found[0] if found else None

    def find_runs(self, prefix: str, *, limit: int = 5) -> list[RunRecord]:
        """Records whose run id starts with ``prefix`` (at most ``limit``), in run id order."""
        return self._records("run_id >= ? AND run_id < ?", [prefix, prefix + "\U0010ffff"], limit, "run_id")

    def by_request_id(self, request_id: str, *, limit: int = 20) -> list[RunRecord]:
        """Records of the runs with this request id (``ids.context.request_id``: the id the relay gave the
        client's request), in arrival order."""
        return self._records("request_id = ?", [request_id], limit)

    def by_provider_request_id(self, provider_request_id: str, *, limit: int = 20) -> list[RunRecord]:
        """Records of the runs with this provider request id (``ids.provider_request_id``)."""
        return self._records("provider_request_id = ?", [provider_request_id], limit)

    def earliest(self) -> datetime | None:
        """When the earliest indexed run started (None: no run says when)."""
        return _when(self._db.query("SELECT MIN(t) FROM runs")[0][0])

    def count(self) -> int:
        """Runs indexed."""
        return int(self._db.query("SELECT COALESCE(SUM(n), 0) FROM hourly")[0][0])

    def _records(self, where: str, params: list[Any], limit: int, order: str = "seq") -> list[RunRecord]:
        rows = self._db.query(
            f"SELECT record FROM runs JOIN records USING (run_id) WHERE {where} ORDER BY {order}"
            f" LIMIT {int(limit)}",
            params,
        )
        return [RunRecord(json.loads(zlib.decompress(bytes(blob)))) for (blob,) in rows]

    def _tally(
        self, by: Sequence[str], filters: Filters, buckets: int = 1
    ) -> tuple[dict[tuple[Any, ...], list[int]], dict[tuple[Any, ...], list[int]]]:
        """Per bucket (``per_bucket``), failed runs per key of ``by``, and all runs per the key's values other
        than ``OUTCOME_NAMES`` (what a group's failure rate divides by): one scan for both, since those
        values are among the key's."""
        context = [i for i, name in enumerate(by) if name not in OUTCOME_NAMES]
        failed: dict[tuple[Any, ...], list[int]] = {}
        runs: dict[tuple[Any, ...], list[int]] = {}
        for (*key, is_failed), counts in per_bucket(self._db, self._counts, by, filters, buckets).items():
            if not any(counts):
                continue  # a counter that runs moved elsewhere left at zero
            if int(is_failed):
                failed[tuple(key)] = counts
            total = runs.setdefault(tuple(key[i] for i in context), [0] * buckets)
            for i, n in enumerate(counts):
                total[i] += n
        return failed, runs
