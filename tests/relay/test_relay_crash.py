"""A killed relay leaves a trace of what it was serving (issue 25 item 11): a real ``streamfsm relay`` process
under load, with streams in flight against a stalling upstream, is killed with SIGKILL; afterwards every
in-flight request id is listed as cut by the relay's death by ``streamfsm report``, ``streamfsm diagnose
--run`` and the errors page's store, and no stream that ended is.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.relay import ErrorsData, Links, PageQuery, errors_page
from streamfsm.relay._journal import (
    BEGIN_KEY,
    BEGIN_SCHEMA,
    END_SCHEMA,
    Instance,
    JournalReader,
    interrupted,
    this_instance,
    unpaired,
)
from streamfsm.testing import End, FaultServerThread, Headers, Request, Send, Stall, text_stream
from tests.support.relay_process import relay_process

pytest.importorskip("uvicorn", reason="the relay process needs uvicorn (the relay extra)")

LIVE = 100
DONE = 6
WATCHDOG_S = 20.0
FRAMES = text_stream("openai-chat", ["a", "b"])
CHAT = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'


def route(request: Request) -> Any:
    """Whole streams for ``done-*`` requests, else the first frame and then silence."""
    if (request.header("x-request-id") or "").startswith("done-"):
        return (Headers(), *(Send(f) for f in FRAMES), End())
    return (Headers(), Send(FRAMES[0]), Stall())


def send(port: int, request_id: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WATCHDOG_S)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: relay\r\nx-request-id: {request_id}\r\n"
        f"Authorization: Bearer sk-crash-test-0123456789\r\nContent-Length: {len(CHAT)}\r\n\r\n"
    )
    sock.sendall(head.encode() + CHAT)
    return sock


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    got = b""
    deadline = time.monotonic() + WATCHDOG_S
    while marker not in got:
        assert time.monotonic() < deadline, f"no {marker!r} from the relay"
        piece = sock.recv(65536)
        assert piece, "the relay closed the connection early"
        got += piece
    return got


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamfsm", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("logs", ["audit_and_error", "error_only"])
def test_every_stream_in_flight_when_the_relay_is_killed_is_accounted_for(logs: str, tmp_path: Path) -> None:
    errors, audit = tmp_path / "errors.jsonl", tmp_path / "audit.jsonl"
    args = ["--error-log", str(errors)] + (["--audit-log", str(audit)] if logs == "audit_and_error" else [])
    journal = audit if logs == "audit_and_error" else errors
    live = {f"live-{i}" for i in range(LIVE)}
    with ExitStack() as stack:
        upstream = stack.enter_context(FaultServerThread(route))
        relay = stack.enter_context(relay_process(upstream.base_url, tmp_path, *args))
        for i in range(DONE):
            with send(relay.port, f"done-{i}") as sock:
                read_until(sock, b"0\r\n\r\n")
        held = [stack.enter_context(send(relay.port, rid)) for rid in sorted(live)]
        for sock in held:
            read_until(sock, b"data:")  # the stream is relayed and in flight
        assert interrupted(journal) == [], "a live relay's streams are not claimed"
        relay.process.send_signal(signal.SIGKILL)
        relay.process.wait(WATCHDOG_S)
        for sock in held:  # each client sees its connection cut (a read past the timeout fails the test)
            with suppress(ConnectionResetError):
                while sock.recv(65536):
                    pass

    cut = interrupted(journal)
    assert {i.request_id for i in cut} == live
    assert all(i.instance.pid == relay.process.pid and i.route == "/v1/chat/completions" for i in cut)
    assert all(i.account and i.account.startswith("acct_") for i in cut)

    report = cli("report", str(journal), "--json")
    assert report.returncode == 0, report.stderr
    listed = json.loads(report.stdout)["interrupted"]
    assert {item["request_id"] for item in listed} == live
    text = cli("report", str(journal))
    assert f"{LIVE} streams cut by the relay's death" in text.stdout
    assert all(rid in text.stdout for rid in live)
    assert "done-" not in text.stdout

    page_file = tmp_path / "report.html"
    assert cli("report", str(journal), "--html", str(page_file)).returncode == 0
    assert all(f">{rid}<" in page_file.read_text() for rid in live)

    one = cli("diagnose", str(journal), "--run", "live-7")
    assert one.returncode == 0, one.stderr
    assert "live-7" in one.stdout and "how far" in one.stdout

    data = ErrorsData(None, [str(errors)], journal=str(journal))
    page = data.report(PageQuery())
    assert {item["request_id"] for item in page["interrupted"]} == live
    html = errors_page(page, Links(lambda run_id: f"/admin/runs/{run_id}", PageQuery()))
    assert f"{LIVE} streams cut by the relay's death" in html
    assert all(f">{rid}<" in html for rid in live)
    for path in (errors, audit):
        assert "sk-crash-test" not in (path.read_text() if path.exists() else "")


def test_the_relay_instance_is_alive_while_its_process_runs() -> None:
    me = this_instance()
    assert me.alive() is True
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(WATCHDOG_S)
    gone = Instance(me.host, child.pid, me.process_started, me.boot_id)
    assert gone.alive() is False, "a pid that has exited"
    reused = Instance(me.host, os.getpid(), "1", me.boot_id)
    assert reused.alive() is False, "the same pid, started at another time: another process"
    rebooted = Instance(me.host, os.getpid(), me.process_started, "another-boot")
    assert rebooted.alive() is False
    elsewhere = Instance(me.host + "-elsewhere", child.pid, me.process_started, me.boot_id)
    assert elsewhere.alive() is None, "another host's relay is never claimed dead"


def test_a_live_relay_whose_proc_entry_is_hidden_is_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc mounted with hidepid: another user's /proc/<pid> is not there, yet the process runs."""
    from streamfsm.relay import _journal

    me = this_instance()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        shown = _journal._process_started
        monkeypatch.setattr(
            _journal, "_process_started", lambda pid: None if pid == child.pid else shown(pid)
        )
        hidden = Instance(me.host, child.pid, "12345", me.boot_id)
        assert hidden.alive() is True
    finally:
        child.kill()
        child.wait(WATCHDOG_S)
    assert hidden.alive() is False, "once it has exited, the pid is gone"


# -- pairing, as a property: any order of begins, ends and records, from relays alive, dead and elsewhere ---

ME = this_instance()
DEAD = Instance(ME.host, ME.pid, "0", ME.boot_id)  # this pid, started at another time: another process
ELSEWHERE = Instance(ME.host + "-elsewhere", ME.pid, ME.process_started, ME.boot_id)
RELAYS = (ME, DEAD, ELSEWHERE)


@st.composite
def journals(draw: Any) -> tuple[list[dict[str, Any]], set[str]]:
    """A log's lines in some order: a begin per stream, then (or not) its end line or its record; and the
    request ids of the streams of the dead relay that never ended."""
    count = draw(st.integers(0, 12))
    lines: list[tuple[int, dict[str, Any]]] = []
    expected = set()
    for n in range(count):
        relay = draw(st.sampled_from(RELAYS))
        begin_id = f"begin_{n:032x}"
        begin = {
            "schema": BEGIN_SCHEMA,
            "begin_id": begin_id,
            "request_id": f"r{n}",
            "instance": relay.to_json(),
        }
        at = draw(st.integers(0, 100))
        lines.append((at, begin))
        ending = draw(st.sampled_from(["none", "end", "record"]))
        later = at + draw(st.integers(1, 50))
        if ending == "end":
            lines.append((later, {"schema": END_SCHEMA, "begin_id": begin_id, "instance": relay.id}))
        elif ending == "record":
            record = {"schema": "streamfsm.run/1", "ids": {"context": {BEGIN_KEY: begin_id}}}
            lines.append((later, record))
        elif relay is DEAD:
            expected.add(f"r{n}")
    lines.sort(key=lambda item: item[0])
    return [line for _, line in lines], expected


@settings(max_examples=200, deadline=None)
@given(journals())
def test_the_begins_left_open_by_a_dead_relay_are_exactly_those_listed(
    journal: tuple[list[dict[str, Any]], set[str]],
) -> None:
    lines, expected = journal
    assert {item.request_id for item in unpaired(lines)} == expected


@settings(max_examples=60, deadline=None)
@given(journals(), st.lists(st.integers(0, 400), max_size=6), st.sampled_from([2_000, None]))
def test_a_journal_read_as_it_grows_lists_what_a_whole_read_lists(
    journal: tuple[list[dict[str, Any]], set[str]], cuts: list[int], max_bytes: int | None
) -> None:
    """The errors page reads its journal (the audit log) as it grows, not whole at each view: after every
    step, across rotations and a line still being written, the same streams as a read of the whole log."""
    from streamfsm.runtime import AuditLog

    lines, _ = journal
    data = b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "audit.jsonl"
        log = AuditLog(path, max_bytes=max_bytes, backups=1000)
        reader = JournalReader(path)
        whole = data.splitlines(keepends=True)
        done = 0
        for cut in [*sorted(cuts), len(data)]:
            while done < len(whole) and sum(map(len, whole[: done + 1])) <= cut:
                log.append_line(whole[done])
                done += 1
            if done < len(whole):  # the next line, half written
                with open(path, "ab") as handle:
                    handle.write(whole[done][: len(whole[done]) // 2])
                assert reader.interrupted() == interrupted(path)
                with open(path, "rb+") as handle:  # the writer finishes it
                    handle.seek(0, 2)
                    handle.write(whole[done][len(whole[done]) // 2 :])
                done += 1
            assert reader.interrupted() == interrupted(path)


def test_a_log_file_pairs_records_without_parsing_them(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    begins = [
        {
            "schema": BEGIN_SCHEMA,
            "begin_id": f"begin_{n:032x}",
            "request_id": f"r{n}",
            "instance": DEAD.to_json(),
        }
        for n in range(3)
    ]
    record = {"schema": "streamfsm.run/1", "ids": {"run_id": "x", "context": {BEGIN_KEY: f"begin_{1:032x}"}}}
    text = [json.dumps(b, separators=(",", ":")) for b in begins] + [json.dumps(record), "not json"]
    log.write_text("\n".join(text) + "\n")
    assert [item.request_id for item in interrupted(log)] == ["r0", "r2"]
    assert interrupted(tmp_path / "missing.jsonl") == []
