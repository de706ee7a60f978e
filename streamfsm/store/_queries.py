"""The store's queries: what the errors page, ``report`` and ``diagnose`` ask of the runs and their hourly
counts, and the values they answer with."""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from ..runtime import SIGNATURE, Group, RunRecord
from ._backends import COUNTS, HOUR, Backend

DIMENSIONS: Final = {
    "summary_key": "summary_key",
    "provider": "provider",
    "model": "model",
    "transport_kind": "transport_kind",
    "class": "failure_class",
    "route": "route",
    "account": "account",
    "close": "close",
}
"""The names runs are grouped and filtered by, and their columns."""
OUTCOME_NAMES: Final = frozenset({"summary_key", "class", "transport_kind", "close"})
"""Names that say how a run ended: a completed run has values of its own, so a failure rate's denominator
(all runs) leaves them out and counts the runs that share the group's other values."""
SAMPLES: Final = 3
_HOUR: Final = HOUR
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ROW_COLUMNS: Final = (
    "seq, run_id, t, failure_class, summary_key, provider, model, transport_kind, route, account,"
    " request_id, provider_request_id, close, title"
)


def _micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


def _when(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


def _text(value: str | None) -> str:
    return "" if value is None else value  # '' stands for none: equality then works on every database


def _none(value: str) -> str | None:
    return value or None


@dataclass(frozen=True, slots=True)
class Filters:
    """Which runs a query looks at: started in ``[since, until)`` (either end open when None), and each
    named value equal (None: any). ``failure_class`` is the record's ``outcome.class``."""

    since: datetime | None = None
    until: datetime | None = None
    route: str | None = None
    account: str | None = None
    model: str | None = None
    provider: str | None = None
    failure_class: str | None = None
    summary_key: str | None = None
    transport_kind: str | None = None
    close: str | None = None

    def where(self, *, failed: bool | None = None, by_arrival: bool = False) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters. ``by_arrival``: for a query of the latest runs (``ORDER BY
        seq DESC LIMIT n``), the window is written ``+t``, which no index serves, so that the database walks
        an index by arrival from the end and stops after n, instead of reading and sorting the whole window
        through a time index (1M runs, a month: 7 ms against 0.03 ms per group on SQLite). For SQLite only
        (``Store``)."""
        conds, params = ["1 = 1"], []
        t = "+t" if by_arrival else "t"
        if self.since is not None:
            conds.append(f"{t} >= ?")
            params.append(_micros(self.since))
        if self.until is not None:
            conds.append(f"{t} < ?")
            params.append(_micros(self.until))
        for f in fields(self):
            if f.name in ("since", "until"):
                continue
            value = getattr(self, f.name)
            if value is not None:
                conds.append(f"{f.name} = ?")
                params.append(value)
        if failed is not None:
            conds.append("failed = ?")
            params.append(int(failed))
        return " AND ".join(conds), params


@dataclass(frozen=True, slots=True)
class StoreGroup:
    """Failed runs that share ``key`` (one value per grouping name), with every run of that key in the
    window (``runs``) for the failure rate."""

    names: tuple[str, ...]
    key: tuple[str | None, ...]
    failures: int
    runs: int
    first: datetime | None
    last: datetime | None
    sample_run_ids: tuple[str, ...]  # the latest first
    sample_request_ids: tuple[str, ...]  # the same runs' request ids ("" for none)
    title: str

    @property
    def failure_rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0

    def as_group(self) -> Group:
        """The report's own group (what ``streamfsm report`` prints from a log)."""
        return Group(
            self.key,
            self.failures,
            self.first,
            self.last,
            list(reversed(self.sample_run_ids)),
            list(reversed(self.sample_request_ids)),
            self.title,
        )

    def to_json(self, *, request_ids: bool = False) -> dict[str, Any]:
        """As ``streamfsm report --json`` writes a group, with ``runs`` and ``failure_rate`` besides."""
        out = self.as_group().to_json(self.names, request_ids=request_ids)
        out["runs"] = self.runs
        out["failure_rate"] = round(self.failure_rate, 6)
        return out


@dataclass(frozen=True, slots=True)
class Trend:
    """Per time bucket of the window (oldest first): failed runs and all runs of one group's key."""

    key: tuple[str | None, ...]
    start: datetime
    bucket: timedelta
    failures: tuple[int, ...]
    runs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Earlier:
    """Failed runs per group key (``failures``) and all runs per key's values other than ``OUTCOME_NAMES``
    (``runs``, as ``groups`` counts them) over ``[since, until)``: the whole hours before another window."""

    names: tuple[str, ...]
    since: datetime
    until: datetime
    failures: Mapping[tuple[str | None, ...], int]
    runs: Mapping[tuple[str | None, ...], int]

    def counts(self, key: tuple[str | None, ...]) -> tuple[int, int]:
        """(failed runs, runs) of the group ``key``."""
        context = tuple(
            value for name, value in zip(self.names, key, strict=True) if name not in OUTCOME_NAMES
        )
        return self.failures.get(key, 0), self.runs.get(context, 0)

    def rate(self, key: tuple[str | None, ...]) -> float | None:
        """The group's failure rate then (None: no run then to compare with)."""
        failures, runs = self.counts(key)
        return failures / runs if runs else None


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the store indexes it (the whole record: ``Store.record``)."""

    seq: int
    run_id: str
    started_at: datetime | None
    failure_class: str
    summary_key: str
    provider: str | None
    model: str | None
    transport_kind: str | None
    route: str | None
    account: str | None
    request_id: str | None
    provider_request_id: str | None
    close: str | None
    title: str


@dataclass(frozen=True, slots=True)
class RunsPage:
    """Runs, the latest first; ``next_before``: pass it as ``before`` for the next page (None: no more)."""

    runs: tuple[RunRow, ...]
    next_before: int | None


@dataclass(frozen=True, slots=True)
class Totals:
    """Runs and failed runs matching the filters, and runs per failure class."""

    runs: int
    failures: int
    by_class: dict[str, int]


def _run_row(row: Sequence[Any]) -> RunRow:
    (
        seq,
        run_id,
        t,
        klass,
        key,
        provider,
        model,
        kind,
        route,
        account,
        request,
        provider_request,
        close,
        title,
    ) = row
    return RunRow(
        seq=int(seq),
        run_id=run_id,
        started_at=_when(t),
        failure_class=klass,
        summary_key=key,
        provider=_none(provider),
        model=_none(model),
        transport_kind=_none(kind),
        route=_none(route),
        account=_none(account),
        request_id=_none(request),
        provider_request_id=_none(provider_request),
        close=_none(close),
        title=title,
    )


class Queries:
    """What the store answers (``Store``, which also writes)."""

    __slots__ = ("_by_arrival", "_counts", "_db")

    def __init__(self, backend: Backend, *, counts: bool = True) -> None:
        """``counts=False``: every query counts the runs themselves, never the tables of counts (the
        reference the counts are tested against)."""
        self._db = backend
        self._counts = COUNTS if counts else {}
        # SQLite's planner takes a time range over an order it can walk; PostgreSQL's weighs the window by
        # its statistics and does better with it on the index (a ``+t`` there reads a signature's whole life).
        self._by_arrival = backend.kind == "sqlite"

    def groups(
        self,
        filters: Filters = Filters(),
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
        if counted is None:
            failures = self._count(by, filters, failed=True)
            runs = self._count([by[i] for i in context], filters)
        else:
            failures, runs = Counter(), Counter()
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
        wanted = {*(_column(name) for name in by), *_values(filters)}
        if not any(wanted <= set(counted) for counted in COUNTS.values()):
            return None  # (the reference, ``counts=False``, answers where the counts would, from the runs)
        end = _micros(filters.since) // _HOUR * _HOUR
        length = -(-(_micros(filters.until) - _micros(filters.since)) // _HOUR) * _HOUR
        try:
            since, until = _when(end - length), _when(end)
        except OverflowError:  # before the year 1
            return None
        assert since is not None
        assert until is not None
        window = replace(filters, since=since, until=until)
        context = [name for name in by if name not in OUTCOME_NAMES]
        failures = self._count(by, window, failed=True)
        runs = self._count(context, window)
        return Earlier(
            tuple(by),
            since,
            until,
            {tuple(_none(v) for v in key): n for key, n in failures.items()},
            {tuple(_none(v) for v in key): n for key, n in runs.items()},
        )

    def matching(self, filters: Filters = Filters(), *, failed: bool | None = None) -> int:
        """How many runs match ``filters`` (``failed``: only failed or only completed ones): from the hourly
        counts when a table counts by every filter (as ``groups``), from the runs otherwise."""
        return sum(self._count((), filters, failed=failed).values())

    def _details(
        self, by: Sequence[str], key: tuple[Any, ...], filters: Filters, samples: int
    ) -> dict[str, Any]:
        """A group's first and last seen, latest samples and title, in one round trip (each part walks an
        index from one end)."""
        where, params = filters.where(failed=True)
        group = " AND ".join(f"{_column(name)} = ?" for name in by)
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

    def _count(
        self, names: Sequence[str], filters: Filters, *, failed: bool | None = None
    ) -> Counter[tuple[Any, ...]]:
        """Runs matching ``filters`` (and ``failed``), per value of ``names``: from a table of counts for the
        whole hours of the window when one counts by every name and filter; from ``runs`` otherwise, and for
        the partial hours at the window's edges (through the time index: at most two hours of runs)."""
        columns = [_column(name) for name in names]
        values = _values(filters)
        since = None if filters.since is None else _micros(filters.since)
        until = None if filters.until is None else _micros(filters.until)
        first = None if since is None else -(-since // _HOUR)  # the first whole hour
        end = None if until is None else until // _HOUR  # the hour after the last whole one
        whole = first is None or end is None or first < end
        counts = self._counts_table(columns, values)
        if counts is None or not whole:
            return self._count_runs(columns, filters, failed)
        conds: list[str] = ["1 = 1"]
        params: list[Any] = []
        if first is not None:
            conds.append("hour >= ?")
            params.append(first)
        elif end is not None:
            conds.append("hour >= 0")  # a window leaves out runs that do not say when they started
        if end is not None:
            conds.append("hour < ?")
            params.append(end)
        for name, value in values.items():
            conds.append(f"{name} = ?")
            params.append(value)
        if failed is not None:
            conds.append("failed = ?")
            params.append(int(failed))
        cols = "".join(f"{c}, " for c in columns)
        group = f" GROUP BY {', '.join(columns)}" if columns else ""
        sql = f"SELECT {cols}SUM(n) FROM {counts} WHERE {' AND '.join(conds)}{group}"
        table: Counter[tuple[Any, ...]] = Counter()
        for *key, n in self._db.query(sql, params):
            if n:
                table[tuple(key)] += int(n)
        if since is not None and first is not None and since < first * _HOUR:
            table.update(self._count_runs(columns, replace(filters, until=_when(first * _HOUR)), failed))
        if until is not None and end is not None and end * _HOUR < until:
            table.update(self._count_runs(columns, replace(filters, since=_when(end * _HOUR)), failed))
        return +table  # without the zero counts that runs moved elsewhere leave

    def _counts_table(self, columns: Sequence[str], values: Mapping[str, str]) -> str | None:
        """The table of counts that counts by every one of ``columns`` and filtered ``values`` (None: the
        runs must be counted)."""
        wanted = {*columns, *values}
        return next((table for table, counted in self._counts.items() if wanted <= set(counted)), None)

    def _count_runs(
        self, columns: Sequence[str], filters: Filters, failed: bool | None
    ) -> Counter[tuple[Any, ...]]:
        where, params = filters.where(failed=failed)
        cols = "".join(f"{c}, " for c in columns)
        group = f" GROUP BY {', '.join(columns)}" if columns else ""
        rows = self._db.query(f"SELECT {cols}COUNT(*) FROM runs WHERE {where}{group}", params)
        return +Counter({tuple(key): int(n) for *key, n in rows})

    def trend(
        self,
        since: datetime,
        until: datetime,
        buckets: int,
        filters: Filters = Filters(),
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
        window = replace(filters, since=since, until=until)
        context = [i for i, name in enumerate(by) if name not in OUTCOME_NAMES]
        failed: dict[tuple[Any, ...], list[int]] = {}
        runs: dict[tuple[Any, ...], list[int]] = {}
        # One scan for both: the context's values are among the key's, so all runs add up from its rows.
        for (*key, is_failed), counts in self._per_bucket(by, window, start, width, buckets).items():
            if is_failed:
                failed[tuple(key)] = counts
            total = runs.setdefault(tuple(key[i] for i in context), [0] * buckets)
            for i, n in enumerate(counts):
                total[i] += n
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

    def _per_bucket(
        self, names: Sequence[str], filters: Filters, start: int, width: int, buckets: int
    ) -> dict[tuple[Any, ...], list[int]]:
        """Runs per value of ``names`` and ``failed`` (the key's last part), per bucket: from a table of
        counts for the hours inside one bucket when one counts by every name and filter (as ``_count``),
        from ``runs`` for the others."""
        columns = [_column(name) for name in names]
        values = _values(filters)
        end = start + width * buckets if filters.until is None else _micros(filters.until)
        table: dict[tuple[Any, ...], list[int]] = {}

        def add(rows: list[tuple[Any, ...]]) -> None:
            for *key, bucket, count in rows:
                table.setdefault(tuple(key), [0] * buckets)[int(bucket)] += int(count)

        cols = "".join(f"{c}, " for c in columns)
        group = f" GROUP BY {', '.join(str(i + 1) for i in range(len(names) + 2))}"  # the bucket by position
        where, params = filters.where()
        counts = self._counts_table(columns, values)
        if counts is None:
            add(
                self._db.query(
                    f"SELECT {cols}failed, (t - ?) / ?, COUNT(*) FROM runs WHERE {where}{group}",
                    [start, width, *params],
                )
            )
            return table
        edges = {start + width * i for i in range(buckets)} | {end}
        split = sorted({edge // _HOUR for edge in edges if edge % _HOUR})  # hours that two buckets share
        first, last = -(-start // _HOUR), end // _HOUR
        conds = ["hour >= ?", "hour < ?", *(f"{name} = ?" for name in values)]
        counted_params: list[Any] = [start, width, first, last, *values.values()]
        if split:
            conds.append(f"hour NOT IN ({', '.join('?' * len(split))})")
            counted_params += split
        add(
            self._db.query(
                f"SELECT {cols}failed, (hour * {_HOUR} - ?) / ?, SUM(n) FROM {counts}"
                f" WHERE {' AND '.join(conds)}{group}",
                counted_params,
            )
        )
        # the rest from runs: the shared hours, and the window's partial hours at either end
        if first < last:
            ranges = [(hour * _HOUR, hour * _HOUR + _HOUR) for hour in split if first <= hour < last]
            ranges += [(start, first * _HOUR), (last * _HOUR, end)]
        else:  # no whole hour
            ranges = [(start, end)]
        ranges = [(a, b) for a, b in ranges if a < b]
        if ranges:
            either = " OR ".join("(t >= ? AND t < ?)" for _ in ranges)
            add(
                self._db.query(
                    f"SELECT {cols}failed, (t - ?) / ?, COUNT(*) FROM runs"
                    f" WHERE {where} AND ({either}){group}",
                    [start, width, *params, *(edge for pair in ranges for edge in pair)],
                )
            )
        return table

    def runs(
        self,
        filters: Filters = Filters(),
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
            f"SELECT {_ROW_COLUMNS} FROM runs WHERE {where} ORDER BY seq DESC LIMIT {int(limit) + 1}", params
        )
        page = tuple(_run_row(row) for row in rows[:limit])
        return RunsPage(page, page[-1].seq if len(rows) > limit else None)

    def totals(self, filters: Filters = Filters()) -> Totals:
        """How many runs match ``filters``, how many failed, and how many of each class."""
        by_class = {klass: count for (klass,), count in self._count(("class",), filters).items()}
        runs = sum(by_class.values())
        return Totals(runs, runs - by_class.get("completed", 0), by_class)

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


def _values(filters: Filters) -> dict[str, str]:
    """The filters' named values (columns of ``runs``), without the window."""
    return {
        f.name: getattr(filters, f.name)
        for f in fields(filters)
        if f.name not in ("since", "until") and getattr(filters, f.name) is not None
    }


def _column(name: str) -> str:
    try:
        return DIMENSIONS[name]
    except KeyError:
        raise ValueError(f"not a grouping name: {name!r} (one of {', '.join(DIMENSIONS)})") from None
