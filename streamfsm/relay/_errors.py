"""The failed runs behind the errors page: read from the error log (or kept in memory), grouped by signature
by the same code as ``streamfsm report`` (``runtime/_report``)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from ..runtime import RunRecord
from ..runtime._logs import LogProblem, read_records
from ..runtime._report import SIGNATURE, Group, group_failures
from ._journal import interrupted

__all__ = ["SIGNATURE", "Group", "RecordStore", "group_records"]


def group_records(records: Iterable[RunRecord]) -> tuple[list[Group], int, int]:
    """(groups by count, runs, failures): failed runs grouped by signature, as ``streamfsm report``."""
    return group_failures(records, SIGNATURE)


class RecordStore:
    """Where the errors page finds failed runs: the error log at ``path`` (with its rotated files), or,
    without one, the last ``keep`` failed runs of this process (``add`` is then one of the relay's sinks);
    and the streams a relay's death cut, from the begin lines in ``journal`` (``_journal``)."""

    def __init__(self, path: str | None, keep: int = 1000, *, journal: str | None = None) -> None:
        self.path = path
        self.journal = journal
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
            "groups": [g.to_json(SIGNATURE, request_ids=True) for g in groups],
            "interrupted": [i.to_json() for i in interrupted(self.journal)] if self.journal else [],
            "problems": [
                {"source": p.source, "line": p.line, "kind": p.kind.value, "message": p.message}
                for p in problems
            ],
        }
