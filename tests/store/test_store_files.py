"""A SQLite store that cannot be used: a damaged file is reported with a warning and the errors page answers
from the audit log; a store that cannot be opened at start is one line from ``streamfsm relay`` and
``streamfsm store``; the private store a relay makes for itself is gone after a SIGTERM."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import httpx
import pytest

from streamfsm.cli import main
from streamfsm.relay import ErrorsData, PageQuery
from streamfsm.runtime import AuditLog
from streamfsm.store import Store, StoreDamaged
from streamfsm.testing import End, FaultServerThread, Headers, Send, text_stream
from tests.support.logs import completed, with_ids
from tests.support.relay_process import free_port, relay_process


def _audit(path: Path, count: int) -> str:
    log = AuditLog(path)
    for i in range(count):
        log(with_ids(completed(), f"run-{i}"))
    return str(path)


def test_a_damaged_store_is_reported_and_the_page_answers_from_the_audit_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    damaged = tmp_path / "runs.db"
    damaged.write_bytes(b"this is no database" * 512)
    audit = _audit(tmp_path / "audit.jsonl", 3)
    with pytest.raises(StoreDamaged, match="damaged"):
        Store.open(f"sqlite:///{damaged}")
    with caplog.at_level(logging.WARNING):
        data = ErrorsData(f"sqlite:///{damaged}", [audit], audit=audit)
    assert any("is damaged" in r.getMessage() for r in caplog.records)
    try:
        report = data.report(PageQuery(since="30d"))
        assert report["source"] == "the store is damaged; showing the audit log"
        assert report["runs"] == 3
        assert data.find("run-1") is not None
    finally:
        data.close()


@pytest.mark.parametrize("where", ["missing folder", "a folder", "no server"])
def test_a_store_that_cannot_be_opened_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    url = {
        "missing folder": f"sqlite:///{tmp_path / 'nowhere' / 'runs.db'}",
        "a folder": f"sqlite:///{tmp_path}",
        "no server": f"postgresql://relay:secret@127.0.0.1:{free_port()}/streamfsm",
    }[where]
    if where == "no server":
        pytest.importorskip("psycopg")
    said = "is unreachable" if where == "no server" else "cannot open the store"
    assert main(["relay", "--upstream", "http://127.0.0.1:9", "--store", url]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("streamfsm relay: ") and said in err and "\n" not in err, err
    assert main(["store", "rebuild", "--from", _audit(tmp_path / "a.jsonl", 1), "--store", url]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("streamfsm store: ") and said in err and "\n" not in err, err
    assert "secret" not in err


def test_a_sigterm_removes_the_private_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn raises SIGTERM again once it has shut down, so no exit hook runs: the relay removes its own
    store at lifespan shutdown."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    frames = text_stream("openai-chat", ["Hel", "lo"])
    steps = (Headers(headers=(("content-type", "text/event-stream"),)), *(Send(f) for f in frames), End())
    with FaultServerThread(steps) as upstream, relay_process(upstream.base_url, tmp_path) as relay:
        body = b'{"model": "m", "messages": [], "stream": true}'
        httpx.post(relay.base_url + "/v1/chat/completions", content=body, timeout=10)
        assert [p.name for p in temp.iterdir() if p.name.startswith("streamfsm-relay-store-")]
        relay.process.send_signal(signal.SIGTERM)
        assert relay.process.wait(15) == -signal.SIGTERM
    assert not [p for p in temp.iterdir() if p.name.startswith("streamfsm-relay-store-")]


def test_a_store_damaged_under_a_running_page_is_reported(tmp_path: Path) -> None:
    """Pages of the store's file overwritten after it was opened (its header intact): the page's queries
    meet a damaged file, and the page answers from the audit log, saying the store is damaged."""
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    records = [with_ids(completed(), f"run-{i}") for i in range(400)]
    with Store.open(url) as store:
        store.add(records)
    audit = _audit(tmp_path / "audit.jsonl", 2)
    data = ErrorsData(url, [audit], audit=audit)
    try:
        size = path.stat().st_size
        with path.open("r+b") as f:  # everything past the first page (the header and the schema)
            f.seek(4096)
            f.write(b"\xff" * (size - 4096))
        report = data.report(PageQuery(since="3650d"))
        assert report["source"] == "the store is damaged; showing the audit log"
        assert report["runs"] == 2
    finally:
        data.close()
