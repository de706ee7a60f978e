"""``StoreSink``: a run record sink that indexes each record in a store, from a thread of its own."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Final

from ..runtime import Backlog, RelayClose, RunRecord, count_sink_failure
from ._backends import RECONNECT_MAX_S, RECONNECT_MIN_S, StoreUnavailable
from ._queries import close_of
from ._store import Store

__all__ = ["MAX_BACKLOG", "StoreSink"]

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
    close = close_of(record)
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
        self._store: Store = Store.open(url)  # fails now, not on the first record, for a bad URL
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
