"""Failed runs grouped by what they share: what ``streamfsm report`` prints and the relay's errors page shows,
from one implementation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final

from ._record import RunRecord

__all__ = [
    "CONTEXT_NAMES",
    "SIGNATURE",
    "Group",
    "field_value",
    "group_failures",
    "iso",
    "request_id",
    "started",
]

SIGNATURE: Final = ("summary_key", "provider", "model", "transport_kind")
"""The default grouping: runs that failed the same way, with the same provider, model and transport kind."""
CONTEXT_NAMES: Final = ("route", "account", "request_id")
"""Grouping names read from the record's ``ids.context`` (the relay's correlation ids)."""
_SAMPLES: Final = 3


@dataclass
class Group:
    """Failed runs that share ``key`` (one value per grouping name)."""

    key: tuple[str | None, ...]
    count: int = 0
    first: datetime | None = None
    last: datetime | None = None
    samples: list[str] = field(default_factory=list)  # run ids, the latest last
    request_ids: list[str] = field(default_factory=list)  # the same runs' relay request ids ("" for none)
    title: str = ""

    def to_json(self, names: Sequence[str] = SIGNATURE, *, request_ids: bool = False) -> dict[str, Any]:
        """A group as ``streamfsm report --json`` writes it; ``request_ids``: with the samples' relay request
        ids (the relay's errors page)."""
        out = {
            "key": dict(zip(names, self.key, strict=True)),
            "count": self.count,
            "first_seen": iso(self.first),
            "last_seen": iso(self.last),
            "sample_run_ids": list(reversed(self.samples)),
            "title": self.title,
        }
        if request_ids:
            out["sample_request_ids"] = list(reversed(self.request_ids))
        return out


def iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def started(record: Mapping[str, Any]) -> datetime | None:
    """When the run started (UTC), from its record; None when the record does not say."""
    raw = record.get("started_at")
    if not isinstance(raw, str):
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def field_value(record: RunRecord, name: str) -> str | None:
    """The value a grouping or filter ``name`` takes for ``record`` (None when the record has none)."""
    if name == "summary_key":
        return record.summary_key
    if name == "class":
        return record.failure_class
    if name == "transport_kind":
        transport = record.get("transport")
        value = transport.get("kind") if isinstance(transport, Mapping) else None
    elif name in CONTEXT_NAMES:
        ids = record.get("ids")
        context = ids.get("context") if isinstance(ids, Mapping) else None
        value = context.get(name) if isinstance(context, Mapping) else None
    else:
        value = record.get(name)
    return value if isinstance(value, str) else None


def request_id(record: Mapping[str, Any]) -> str:
    """The relay's request id of the run (``ids.context.request_id``), "" for none."""
    ids = record.get("ids")
    context = ids.get("context") if isinstance(ids, Mapping) else None
    value = context.get("request_id") if isinstance(context, Mapping) else None
    return value if isinstance(value, str) else ""


def group_failures(
    records: Iterable[RunRecord], names: Sequence[str] = SIGNATURE
) -> tuple[list[Group], int, int]:
    """(groups, most runs first, then the latest; runs; failures): the failed runs among ``records`` grouped
    by the values of ``names`` ("summary_key", "class", "transport_kind", or a top-level field), in one
    pass that holds only the groups."""
    table: dict[tuple[str | None, ...], Group] = {}
    runs = failures = 0
    for record in records:
        runs += 1
        if record.failure_class == "completed":
            continue
        failures += 1
        key = tuple(field_value(record, name) for name in names)
        group = table.setdefault(key, Group(key))
        group.count += 1
        when = started(record)
        if when is not None:
            group.first = when if group.first is None else min(group.first, when)
            if group.last is None or when >= group.last:
                group.last = when
                group.title = str(record["summary"]["title"])
        elif not group.title:
            group.title = str(record["summary"]["title"])
        if record.run_id not in group.samples:  # the latest in log order
            group.samples.append(record.run_id)
            group.request_ids.append(request_id(record))
            del group.samples[:-_SAMPLES]
            del group.request_ids[:-_SAMPLES]
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    groups = sorted(
        table.values(),
        key=lambda g: (-g.count, -(g.last or oldest).timestamp(), tuple(k or "" for k in g.key)),
    )
    return groups, runs, failures
