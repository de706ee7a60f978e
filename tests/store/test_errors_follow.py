"""The relay's private store follows its audit log: no stream pays for an index, and each view of the
errors page indexes what the log gained since the last, across rotations, torn lines and begin lines."""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.relay import ErrorsData, Relay, RelayConfig
from streamfsm.runtime import AuditLog, ErrorLog
from streamfsm.store import Filters, StoreSink
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
