"""The hourly counts (``COUNTS``): where a run counts as it is written, and runs counted per key and time
bucket as they are read, from a table of counts for the whole hours one answers and from the runs for the
rest (a window's partial hours, and hours that two buckets share), so that every number is exactly the one
counted from the runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._backends import COUNTS, HOUR, Backend, Writer, counts_upsert
from ._queries import Filters, _micros, column, values

__all__ = ["COUNTED", "count_keys", "counts_table", "per_bucket", "write_counts"]

COUNTED: Final = tuple(dict.fromkeys(c for columns in COUNTS.values() for c in columns))
"""The columns of ``runs`` that some table of counts counts by."""
_UPSERTS: Final = {table: counts_upsert(table) for table in COUNTS}


def count_keys(t: int | None, failed: int, named: Mapping[str, str]) -> list[tuple[Any, ...]]:
    """Where a run counts: per table of counts, (table, hour, its columns' values..., failed)."""
    hour = -1 if t is None else t // HOUR  # -1: the record does not say when it started
    return [(table, hour, *(named[c] for c in columns), failed) for table, columns in COUNTS.items()]


def write_counts(db: Writer, delta: Counter[tuple[Any, ...]]) -> None:
    """Add ``delta`` (``count_keys``' keys to a change of runs) to the tables of counts."""
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


def counts_table(
    tables: Mapping[str, Sequence[str]], columns: Sequence[str], named: Mapping[str, str]
) -> str | None:
    """The table of counts that counts by every one of ``columns`` and filtered ``named`` values (None: the
    runs must be counted)."""
    wanted = {*columns, *named}
    return next((table for table, counted in tables.items() if wanted <= set(counted)), None)


def per_bucket(
    db: Backend,
    tables: Mapping[str, Sequence[str]],
    names: Sequence[str],
    filters: Filters,
    buckets: int = 1,
) -> dict[tuple[Any, ...], list[int]]:
    """Runs matching ``filters`` per value of ``names`` and ``failed`` (the key's last part), per bucket:
    ``buckets`` equal slices of the filters' window (closed, then), or one bucket, the whole window (either
    end may be open: with both, runs that do not say when they started count too). From the first of
    ``tables`` that counts by every name and filter for the whole hours inside one bucket; from ``runs``
    for the others (through the time index: a few hours of runs, not the window)."""
    columns = [column(name) for name in names]
    named = values(filters)
    since = None if filters.since is None else _micros(filters.since)
    until = None if filters.until is None else _micros(filters.until)
    edges: set[int] = set()
    if buckets == 1:
        by_t, by_hour, bucket_params = "0", "0", list[int]()
    else:
        assert since is not None, "buckets of an open window"
        assert until is not None, "buckets of an open window"
        width = -(-(until - since) // buckets)
        by_t, by_hour, bucket_params = "(t - ?) / ?", f"(hour * {HOUR} - ?) / ?", [since, width]
        edges = {since + width * i for i in range(1, buckets)}
    table: dict[tuple[Any, ...], list[int]] = {}

    def add(rows: list[tuple[Any, ...]]) -> None:
        for *key, bucket, count in rows:
            table.setdefault(tuple(key), [0] * buckets)[int(bucket)] += int(count)

    cols = "".join(f"{c}, " for c in columns)
    group = f" GROUP BY {', '.join(str(i + 1) for i in range(len(names) + 2))}"  # the bucket by position
    where, params = filters.where()
    first = None if since is None else -(-since // HOUR)  # the first whole hour
    last = None if until is None else until // HOUR  # the hour after the last whole one
    counts = counts_table(tables, columns, named)
    if counts is None or (first is not None and last is not None and first >= last):  # no whole hour
        runs = f"SELECT {cols}failed, {by_t}, COUNT(*) FROM runs WHERE {where}{group}"
        add(db.query(runs, [*bucket_params, *params]))
        return table
    conds: list[str] = ["1 = 1"]
    counted_params: list[Any] = list(bucket_params)
    if first is not None:
        conds.append("hour >= ?")
        counted_params.append(first)
    elif last is not None:
        conds.append("hour >= 0")  # a window leaves out runs that do not say when they started
    if last is not None:
        conds.append("hour < ?")
        counted_params.append(last)
    for name, value in named.items():
        conds.append(f"{name} = ?")
        counted_params.append(value)
    split = sorted({edge // HOUR for edge in edges if edge % HOUR})  # hours that two buckets share
    if split:
        conds.append(f"hour NOT IN ({', '.join('?' * len(split))})")
        counted_params += split
    add(
        db.query(
            f"SELECT {cols}failed, {by_hour}, SUM(n) FROM {counts} WHERE {' AND '.join(conds)}{group}",
            counted_params,
        )
    )
    # the rest from runs: the shared hours, and the window's partial hours at either end
    ranges = [(h * HOUR, h * HOUR + HOUR) for h in split if first is not None and last is not None]
    ranges = [
        (a, b) for a, b in ranges if first is not None and last is not None and first <= a // HOUR < last
    ]
    if since is not None and first is not None and since < first * HOUR:
        ranges.append((since, first * HOUR))
    if until is not None and last is not None and last * HOUR < until:
        ranges.append((last * HOUR, until))
    if ranges:
        either = " OR ".join("(t >= ? AND t < ?)" for _ in ranges)
        add(
            db.query(
                f"SELECT {cols}failed, {by_t}, COUNT(*) FROM runs WHERE {where} AND ({either}){group}",
                [*bucket_params, *params, *(edge for pair in ranges for edge in pair)],
            )
        )
    return table
