"""StoreSink: the caller (an event loop) never waits on the database, even while another process holds its
write lock; what cannot be indexed is counted, never dropped silently; several processes write one store."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from streamfsm.runtime import deliver, sink_failures
from streamfsm.store import Store, StoreSink
from tests.support.logs import SCENARIOS, with_ids
from tests.support.store import write_worker

WATCHDOG_S = 10.0  # generous: the sink's calls only queue; a call that waited on the lock would take 30 s


@contextmanager
def write_lock_held(url: str) -> Iterator[None]:
    """Another connection (as another process would) holds the store's write lock until the block ends."""
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            db.execute("ROLLBACK")
            db.close()
    else:
        import psycopg

        with psycopg.connect(url) as pg:
            pg.execute("LOCK TABLE runs IN EXCLUSIVE MODE")
            try:
                yield
            finally:
                pg.rollback()


def _records(count: int, prefix: str) -> list[Any]:
    templates = [scenario() for scenario in SCENARIOS]
    return [with_ids(templates[i % len(templates)], f"{prefix}-{i:04d}") for i in range(count)]


def test_records_reach_the_store(store_url: str) -> None:
    sink = StoreSink(store_url)
    records = _records(40, "a")
    for record in records:
        assert deliver([sink], record) == 0
    assert sink.flush(WATCHDOG_S)
    sink.close()
    with Store.open(store_url) as store:
        assert store.count() == 40
        assert store.record("a-0007") == records[7]


def test_the_caller_never_waits_for_a_held_lock(store_url: str) -> None:
    sink = StoreSink(store_url)
    records = _records(30, "b")
    with write_lock_held(store_url):
        started = time.monotonic()
        for record in records:
            deliver([sink], record)
        assert time.monotonic() - started < WATCHDOG_S
        assert not sink.flush(0.2)  # the writer waits for the lock, off the caller's thread
    assert sink.flush(60)
    sink.close()
    with Store.open(store_url) as store:
        assert store.count() == 30


def test_a_full_backlog_is_counted_not_silent(store_url: str) -> None:
    sink = StoreSink(store_url, max_backlog=2)
    before = sink_failures().get("StoreSink", 0)
    with write_lock_held(store_url):
        for record in _records(6, "c"):
            sink(record)
        dropped = sink_failures().get("StoreSink", 0) - before
    assert sink.flush(60)
    sink.close()
    with Store.open(store_url) as store:
        assert store.count() + dropped == 6
        assert dropped >= 3  # at most 2 waiting, and the writer holds at most one batch of them


def test_two_processes_write_one_store(store_url: str) -> None:
    Store.open(store_url).close()  # the schema, before the writers race for it
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=write_worker, args=(store_url, w, 150)) for w in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    with Store.open(store_url) as store:
        assert store.count() == 300
        assert {r.run_id for r in store.find_runs("w1-", limit=500)} == {f"w1-{i:05d}" for i in range(150)}


def test_bad_store_urls_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="not a store URL"):
        StoreSink("ftp://nowhere/runs")
