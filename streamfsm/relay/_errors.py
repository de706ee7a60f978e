"""The failed runs behind the errors page: read from the error log (or kept in memory), grouped by signature
exactly as ``streamfsm report`` groups them (a test holds the two to the same answer)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final

from ..runtime import RunRecord
from ..runtime._logs import LogProblem, read_records

__all__ = ["SIGNATURE", "Group", "RecordStore", "group_records"]

SIGNATURE: Final = ("summary_key", "provider", "model", "transport_kind")
_SAMPLES: Final = 3


@dataclass
class Group:
    """Failed runs that share a signature."""

    key: tuple[str | None, ...]
    count: int = 0
    first: datetime | None = None
    last: datetime | None = None
    samples: list[str] = field(default_factory=list)  # run ids, the latest last
    request_ids: list[str] = field(default_factory=list)  # the same runs' relay request ids
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        """The shape of a group in ``streamfsm report --json``, plus ``sample_request_ids``."""
        return {
            "key": dict(zip(SIGNATURE, self.key, strict=True)),
            "count": self.count,
            "first_seen": iso(self.first),
            "last_seen": iso(self.last),
            "sample_run_ids": list(reversed(self.samples)),
            "sample_request_ids": list(reversed(self.request_ids)),
            "title": self.title,
        }


def iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def started(record: Mapping[str, Any]) -> datetime | None:
    raw = record.get("started_at")
    if not isinstance(raw, str):
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _key(record: RunRecord) -> tuple[str | None, ...]:
    transport = record.get("transport")
    kind = transport.get("kind") if isinstance(transport, Mapping) else None
    provider, model = record.get("provider"), record.get("model")
    return (
        record.summary_key,
        provider if isinstance(provider, str) else None,
        model if isinstance(model, str) else None,
        kind if isinstance(kind, str) else None,
    )


def request_id_of(record: Mapping[str, Any]) -> str | None:
    ids = record.get("ids")
    context = ids.get("context") if isinstance(ids, Mapping) else None
    value = context.get("request_id") if isinstance(context, Mapping) else None
    return value if isinstance(value, str) else None


def group_records(records: Iterable[RunRecord]) -> tuple[list[Group], int, int]:
    """(groups by count, runs, failures): failed runs grouped by signature, as ``streamfsm report``."""
    table: dict[tuple[str | None, ...], Group] = {}
    runs = failures = 0
    for record in records:
        runs += 1
        if record.failure_class == "completed":
            continue
        failures += 1
        key = _key(record)
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
        if record.run_id not in group.samples:
            group.samples.append(record.run_id)
            group.request_ids.append(request_id_of(record) or "")
            del group.samples[:-_SAMPLES]
            del group.request_ids[:-_SAMPLES]
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    groups = sorted(
        table.values(),
        key=lambda g: (-g.count, -(g.last or oldest).timestamp(), tuple(k or "" for k in g.key)),
    )
    return groups, runs, failures


class RecordStore:
    """Where the errors page finds failed runs: the error log at ``path`` (with its rotated files), or,
    without one, the last ``keep`` failed runs of this process (``add`` is then one of the relay's sinks)."""

    def __init__(self, path: str | None, keep: int = 1000) -> None:
        self.path = path
        self._memory: deque[RunRecord] = deque(maxlen=max(1, keep))
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        return self.path if self.path is not None else "memory"

    def add(self, record: RunRecord) -> None:
        if record.failure_class != "completed":
            with self._lock:
                self._memory.append(record)

    def records(self, problems: list[LogProblem] | None = None) -> Iterator[RunRecord]:
        if self.path is None:
            with self._lock:
                kept = list(self._memory)
            yield from kept
            return
        try:
            yield from read_records(
                self.path, rotated=True, on_problem=(problems if problems is not None else []).append
            )
        except FileNotFoundError:
            return

    def find(self, run_id: str) -> RunRecord | None:
        found = None
        for record in self.records():
            if record.run_id == run_id:
                found = record  # the last one: a run is recorded once, but a log may be appended to twice
        return found

    def report(self) -> dict[str, Any]:
        """The errors page as data: the shape of ``streamfsm report --json`` (groups by signature)."""
        problems: list[LogProblem] = []
        records = 0

        def counted() -> Iterator[RunRecord]:
            nonlocal records
            for record in self.records(problems):
                records += 1
                yield record

        groups, runs, failures = group_records(counted())
        return {
            "source": self.source,
            "by": "signature",
            "since": None,
            "records": records,
            "runs": runs,
            "failures": failures,
            "groups": [g.to_json() for g in groups],
            "problems": [
                {"source": p.source, "line": p.line, "kind": p.kind.value, "message": p.message}
                for p in problems
            ],
        }
