"""A store that survives its database: PostgreSQL stopped and started again under load (every run arrives,
none is dropped), the errors page answering from the audit log meanwhile, a hung database bounded by the
statement timeout, and a backlog that drops a relay's refusals before a real run."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from streamfsm.cli._relay import build_relay
from streamfsm.runtime import RunRecord, sink_failures
from streamfsm.store import Store, StoreSink, StoreUnavailable
from streamfsm.testing import End, FaultServerThread, Headers, Send, text_stream
from tests.support.logs import completed, with_ids
from tests.support.pgserver import Server, Unavailable, postgres_control
from tests.support.relay import RelayThread

BODY = b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": true}'
JSON = {"content-type": "application/json", "accept": "application/json"}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    try:
        with postgres_control() as running:
            yield running
    except Unavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is needed in CI: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")


def _clear(url: str) -> None:
    import psycopg

    from streamfsm.store._backends import COUNTS

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"DROP TABLE IF EXISTS runs, records, {', '.join(COUNTS)}".encode())


def _failures() -> int:
    return sink_failures().get("StoreSink", 0)


def test_a_postgres_restart_under_load_loses_no_run(server: Server, tmp_path: Path) -> None:
    """Streams relayed without a pause while PostgreSQL is stopped (``pg_ctl stop -m fast``: every
    connection cut) and started again 2 s later: every run reaches the store once the database is back,
    none is dropped, and the errors page answers from the audit log meanwhile, saying so."""
    _clear(server.url)
    frames = text_stream("openai-chat", ["Hel", "lo"])
    steps = (Headers(headers=(("content-type", "text/event-stream"),)), *(Send(f) for f in frames), End())
    audit = tmp_path / "audit.jsonl"
    before = _failures()
    sent = 0
    stop = threading.Event()

    def load(base: str) -> None:
        nonlocal sent
        with httpx.Client(base_url=base, timeout=10) as client:
            while not stop.is_set():
                client.post(
                    "/v1/chat/completions", content=BODY, headers={"content-type": "application/json"}
                )
                sent += 1

    with FaultServerThread(steps) as upstream:
        relay = build_relay({"upstream": upstream.base_url, "store": server.url, "audit_log": str(audit)})
        sink = relay.errors.sink
        assert isinstance(sink, StoreSink)
        with RelayThread(relay) as served:
            loader = threading.Thread(target=load, args=(served.base_url,))
            loader.start()
            try:
                time.sleep(1.0)
                server.stop()
                down_at = sent
                time.sleep(0.5)
                page = httpx.get(served.base_url + "/admin/errors?since=1h", headers=JSON, timeout=30)
                assert page.status_code == 200, page.text
                assert page.json()["source"] == "the store is unreachable; showing the audit log"
                assert page.json()["runs"] >= down_at  # the audit log's runs, shown
                time.sleep(1.5)
                server.start()
                time.sleep(1.0)
            finally:
                stop.set()
                loader.join(15)
            assert sink.flush(20)
            page = httpx.get(served.base_url + "/admin/errors?since=1h", headers=JSON, timeout=30)
            assert page.status_code == 200
            assert page.json()["source"] == Store.open(server.url).label
    with Store.open(server.url) as store:
        stored = store.count()
    dropped = _failures() - before
    print(f"\nPostgreSQL restart under load: sent {sent}, stored {stored}, dropped {dropped}")
    assert sent > down_at > 0
    assert (stored, dropped) == (sent, 0)


def _refusal(run_id: str, close: str = "overloaded") -> RunRecord:
    data = with_ids(completed(), run_id).to_dict()
    data["relay"] = {"close": close}
    return RunRecord(data)


def test_a_full_backlog_drops_refusals_before_runs(server: Server) -> None:
    """While the database is down, refusals (close ``overloaded`` or ``refused``) fill the backlog, then real
    runs arrive:
    each run takes the place of a refusal waiting (that refusal is counted; the batch the writer holds, at
    most 500, stays), and once the database is back every real run is stored."""
    _clear(server.url)
    sink = StoreSink(server.url, max_backlog=600)
    refusals_sent = (_refusal("refusal"), _refusal("refusal", "refused"))
    run = with_ids(completed(), "run")
    try:
        server.stop()
        before = _failures()
        for i in range(700):
            sink(with_ids(refusals_sent[i >= 350], f"refusal-{i:03d}"))  # those waiting: refused
        time.sleep(0.3)  # the writer holds its first batch of refusals, retrying
        for i in range(60):
            sink(with_ids(run, f"run-{i:02d}"))
        assert sink.pending() == 600
        dropped = _failures() - before
        server.start()
        assert sink.flush(20)
    finally:
        sink.close()
    with Store.open(server.url) as store:
        runs = {r.run_id for r in store.find_runs("run-", limit=100)}
        refusals = store.count() - len(runs)
    assert runs == {f"run-{i:02d}" for i in range(60)}
    assert refusals + dropped == 700  # every refusal stored or counted
    assert dropped == 100 + 60


def test_a_hung_database_never_holds_a_query_past_the_statement_timeout(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table locked by another session (a query would wait forever): the page's query is cancelled at the
    statement timeout and answers StoreUnavailable, and the store works again once the lock is gone."""
    import psycopg

    from streamfsm.store import _backends

    _clear(server.url)
    monkeypatch.setattr(_backends, "STATEMENT_TIMEOUT_S", 0.5)
    with Store.open(server.url) as store, psycopg.connect(server.url) as other:
        store.add([with_ids(completed(), "run-1")])
        other.execute("LOCK TABLE runs, records, hourly IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="did not answer"):
            store.totals()
        assert time.monotonic() - started < 30  # a generous watchdog bound, never the wait itself
        other.rollback()
        assert store.record("run-1") is not None


def test_a_store_unreachable_at_a_query_answers_at_once(server: Server) -> None:
    """Within the backoff after a failed connection, a query does not wait for the database again: it answers
    StoreUnavailable at once (a page view never queues behind connection attempts)."""
    _clear(server.url)
    with Store.open(server.url) as store:
        server.stop()
        try:
            with pytest.raises(StoreUnavailable):
                store.count()
            with pytest.raises(StoreUnavailable):
                store.count()  # the connection is gone: within the backoff, not tried again
        finally:
            server.start()
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(StoreUnavailable):
                assert store.count() == 0
                break
            assert time.monotonic() < deadline, "the store never reconnected"
            time.sleep(0.1)


def test_a_server_that_stops_answering_is_cut_by_the_client(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server process of the store's connection frozen (SIGSTOP: no statement timeout can fire, the
    socket stays open): the client cuts the connection past the statement timeout and its grace, answers
    StoreUnavailable, and the next query, on a new connection, works."""
    import signal

    from streamfsm.store import _backends

    _clear(server.url)
    monkeypatch.setattr(_backends, "STATEMENT_TIMEOUT_S", 0.3)
    monkeypatch.setattr(_backends, "_HUNG_GRACE_S", 0.3)
    monkeypatch.setattr(_backends, "RECONNECT_MIN_S", 0.0)
    with Store.open(server.url) as store:
        [(pid,)] = store._db.query("SELECT pg_backend_pid()")
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="did not answer"):
                store.count()
            assert time.monotonic() - started < 30  # a generous watchdog bound
        finally:
            os.kill(pid, signal.SIGCONT)
        assert store.count() == 0


@pytest.mark.parametrize(
    ("close", "limit", "disposable"),
    [
        ("overloaded", "max_concurrent", True),
        ("refused", "max_body_bytes", True),
        ("refused", "body_min_rate", True),
        ("refused", "max_answer_bytes", False),  # it went upstream and was billed: a real run
        ("refused", "answer_budget_bytes", False),
        ("upstream_cut", None, False),
    ],
)
def test_only_what_never_went_upstream_is_dropped_first(
    close: str, limit: str | None, disposable: bool
) -> None:
    from streamfsm.store._sink import _refusal

    data = with_ids(completed(), "r").to_dict()
    data["relay"] = {"close": close, "limit": limit}
    assert _refusal(RunRecord(data)) is disposable
