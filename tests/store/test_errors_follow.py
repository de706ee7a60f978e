"""The relay's own store follows its audit log: no stream pays for an index, a thread indexes what the log
gained (each view waits for the runs that ended just before it), across rotations, torn lines and begin
lines, and after a crash or a restart it catches up to exactly the log."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.relay import Relay, RelayConfig
from streamfsm.relay._errors import ErrorsData, default_store
from streamfsm.runtime import AuditLog, ErrorLog, RunRecord
from streamfsm.store import Filters, LogIndexer, Store, StoreSink
from tests.support.store import varied

RECORDS = varied(60, seed=3)
BEGIN = b'{"schema":"streamfsm.begin/1","begin_id":"begin_%032x","request_id":"r"}\n'

# A step: write that many records (with a begin line before each), leave a torn line (a writer that died
# mid-line), or view the page.
steps = st.lists(st.one_of(st.integers(1, 12), st.just("torn"), st.just("view")), min_size=1, max_size=20)


@settings(max_examples=40, deadline=None)
@given(steps=steps, max_bytes=st.sampled_from([3_000, 20_000, None]))
def test_every_view_holds_every_run_the_audit_log_holds_once(
    steps: list[int | str], max_bytes: int | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        audit = str(Path(folder) / "audit.jsonl")
        log = AuditLog(audit, max_bytes=max_bytes, backups=1000)  # nothing rotates out of the log
        data = ErrorsData(None, [audit], journal=audit, audit=audit)
        assert data.sink is None  # the streams pay for no index
        written: list[str] = []
        for step in [*steps, "view"]:
            if step == "view":
                data._ready()
                assert data.store.totals(_all()).runs == len(written)
                for run_id in written:
                    found = data.find(run_id)
                    assert found is not None and found.run_id == run_id
            elif step == "torn":
                with open(audit, "ab") as handle:
                    handle.write(b'{"schema":"streamfsm.run/1","ids":{"run_')
            else:
                for record in RECORDS[len(written) : len(written) + int(step)]:
                    log.append_line(BEGIN % len(written))
                    log(record)
                    written.append(record.run_id)


def _all() -> Filters:
    return Filters(since=datetime(2000, 1, 1, tzinfo=timezone.utc), until=datetime.now(timezone.utc))


def test_a_line_being_written_is_read_by_the_next_view(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    data = ErrorsData(None, [str(audit)], journal=str(audit), audit=str(audit))
    whole = RECORDS[0].to_json().encode() + b"\n"
    with open(audit, "ab") as handle:
        handle.write(whole[:100])  # the writer's line is not all there yet
        handle.flush()
        data._ready()
        assert data.find(RECORDS[0].run_id) is None
        handle.write(whole[100:])
    assert data.find(RECORDS[0].run_id) is not None


def test_the_relay_indexes_as_runs_end_only_without_an_audit_log_or_with_a_store(tmp_path: Path) -> None:
    """An error log holds failed runs only, and a store is shared: there the sink indexes every run."""
    audit, errors = str(tmp_path / "audit.jsonl"), str(tmp_path / "errors.jsonl")
    relay = Relay(RelayConfig(upstream="http://upstream.test", audit_log=audit, error_log=errors))
    assert relay.errors.sink is None
    assert not any(isinstance(sink, StoreSink) for sink in relay._stream_config.sinks)
    assert any(isinstance(sink, AuditLog) for sink in relay._stream_config.sinks)
    relay = Relay(RelayConfig(upstream="http://upstream.test", error_log=errors))
    assert isinstance(relay.errors.sink, StoreSink)
    assert relay.errors.sink in relay._stream_config.sinks
    assert any(isinstance(sink, ErrorLog) for sink in relay._stream_config.sinks)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    relay = Relay(RelayConfig(upstream="http://upstream.test", audit_log=audit, store=store))
    assert isinstance(relay.errors.sink, StoreSink) and relay.errors.sink in relay._stream_config.sinks


def _log_of(path: Path, records: list[RunRecord]) -> Counter[str]:
    """Write ``records`` to the audit log at ``path`` (a begin line before each); runs per class."""
    log = AuditLog(path, max_bytes=None)
    for i, record in enumerate(records):
        log.append_line(BEGIN % i)
        log(record)
    return Counter(record.failure_class for record in records)


def _counted(store: Store) -> tuple[int, int, dict[str, int]]:
    """Runs indexed, runs the hourly counts count, and runs per class (from the counts)."""
    rows = store._db.query("SELECT COUNT(*) FROM runs")[0][0]
    return int(rows), store.count(), store.totals(Filters()).by_class


_CHILD = """
import sys
from streamfsm.store import Store, catch_up
store = Store.open(sys.argv[1])
print("started", flush=True)
catch_up(store, [sys.argv[2]], lambda problem: None)
"""


def test_an_indexer_killed_mid_batch_leaves_a_store_that_catches_up_to_the_log(
    tmp_path: Path,
) -> None:
    """A record reaches the audit log first; the store is an index of it: killed between two transactions
    (or inside one), the next start reads on from the position the last commit wrote, and the counts are
    the log's, no run lost or counted twice."""
    audit = tmp_path / "audit.jsonl"
    records = varied(5000, seed=5)
    by_class = _log_of(audit, records)
    path = default_store(audit)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(audit)],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"started\n"
        deadline = time.monotonic() + 60
        read_to = 0
        while time.monotonic() < deadline and not read_to:
            time.sleep(0.01)
            with sqlite3.connect(path, timeout=5) as peek:
                found = peek.execute("SELECT read_to FROM log_positions").fetchall()
            read_to = found[0][0] if found else 0
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
    assert 0 < read_to < audit.stat().st_size  # killed with part of the log indexed
    with Store.open(path) as store:
        indexed = _counted(store)[0]
    assert 0 < indexed < len(records)
    data = ErrorsData(None, [str(audit)], journal=str(audit), audit=str(audit))
    try:
        assert data.indexer is not None and data.indexer.flush(120)
        assert data.store is not None
        assert _counted(data.store) == (len(records), len(records), dict(by_class))
        assert data.find(records[-1].run_id) is not None
    finally:
        data.close()
    assert path.exists()  # kept by default: the next start reads on from here


def test_two_indexers_of_one_log_and_store_take_turns_and_count_each_run_once(tmp_path: Path) -> None:
    """The relay's workers each follow the audit log into the one store beside it."""
    audit = tmp_path / "audit.jsonl"
    records = varied(1500, seed=6)
    by_class = _log_of(audit, records[:700])
    path = str(default_store(audit))
    indexers = [LogIndexer(path, [audit], interval=0.01) for _ in range(2)]
    try:
        by_class += _log_of(audit, records[700:])
        assert all(indexer.flush(60) for indexer in indexers)
        with Store.open(path) as store:
            assert _counted(store) == (len(records), len(records), dict(by_class))
    finally:
        for indexer in indexers:
            indexer.close()


def test_a_store_not_kept_is_removed_when_the_relay_closes(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    _log_of(audit, RECORDS[:5])
    for keep in (True, False):
        relay = Relay(RelayConfig(upstream="http://upstream.test", audit_log=str(audit), keep_store=keep))
        assert relay.errors.indexer is not None and relay.errors.indexer.flush(30)
        assert relay.errors.store is not None and relay.errors.store.count() == 5
        relay.errors.close()
        assert default_store(audit).exists() is keep


def test_a_damaged_store_beside_the_audit_log_is_made_again_from_the_log(tmp_path: Path) -> None:
    audit = tmp_path / "logs" / "audit.jsonl"
    data = ErrorsData(None, [str(audit)], audit=str(audit))  # no folder yet: the log's first line makes it
    data.close()
    _log_of(audit, RECORDS[:7])
    default_store(audit).write_bytes(b"not a database, " * 512)
    data = ErrorsData(None, [str(audit)], audit=str(audit))
    try:
        assert data.indexer is not None and data.indexer.flush(30)
        assert data.store is not None and _counted(data.store)[:2] == (7, 7)
    finally:
        data.close()
