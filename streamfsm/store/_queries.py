"""What the store's queries take and answer with: the filters (and their SQL), the groups, trends, runs and
totals, and the names runs are grouped by."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from ..runtime import Group

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
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
ROW_COLUMNS: Final = (
    "seq, run_id, t, failure_class, summary_key, provider, model, transport_kind, route, account,"
    " request_id, provider_request_id, close, title"
)


def _micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


def _when(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


def _text(value: str | None) -> str:
    return "" if value is None else value  # '' stands for none: equality then works on every database


def close_of(record: Mapping[str, Any]) -> str | None:
    """How the relay closed the run's exchange (``relay.close``), if it says."""
    relay = record.get("relay")
    value = relay.get("close") if isinstance(relay, Mapping) else None  # a record's sections are read-only
    return value if isinstance(value, str) else None


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
        conds: list[str] = ["1 = 1"]
        params: list[Any] = []
        t = "+t" if by_arrival else "t"
        if self.since is not None:
            conds.append(f"{t} >= ?")
            params.append(_micros(self.since))
        if self.until is not None:
            conds.append(f"{t} < ?")
            params.append(_micros(self.until))
        for name, value in values(self).items():
            conds.append(f"{name} = ?")
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


def run_row(row: Sequence[Any]) -> RunRow:
    """A ``RunRow`` from the columns ``ROW_COLUMNS`` name."""
    seq, run_id, t, klass, key = row[:5]
    provider, model, kind, route, account, request, provider_request, close = map(_none, row[5:-1])
    return RunRow(
        int(seq),
        run_id,
        _when(t),
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
        row[-1],
    )


def values(filters: Filters) -> dict[str, str]:
    """The filters' named values (columns of ``runs``), without the window."""
    return {
        f.name: getattr(filters, f.name)
        for f in fields(filters)
        if f.name not in ("since", "until") and getattr(filters, f.name) is not None
    }


def column(name: str) -> str:
    try:
        return DIMENSIONS[name]
    except KeyError:
        raise ValueError(f"not a grouping name: {name!r} (one of {', '.join(DIMENSIONS)})") from None
