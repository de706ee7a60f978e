"""The relay's edges an operator meets, over real sockets: a request body that trickles is refused (408) at
its deadline or below the minimum rate, and cannot lock real clients out; the admin pages check the Host
(DNS rebinding); log lines carry no raw control character; an account is named by its key (SigV4: the
access key id), hashed with a key of the deployment kept beside the logs; the admin cookie expires, is
rotated at sign-in, ends with the process unless its key is configured, and is ``Secure`` behind TLS; the
client's forwarding headers stay behind; relayed streams tell proxies not to buffer or cache them; ``--help``
says where ``/metrics`` goes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import select
import signal
import socket
import stat
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.relay import Relay, RelayConfig
from streamfsm.testing import End, FaultServerThread, Headers, Send, text_stream
from tests.support.relay import RelayThread, read_answer, relay_to, run_lines
from tests.support.relay_process import relay_process
from tests.support.runs import BODIES

WATCHDOG_S = 10.0
CHAT = "/v1/chat/completions"
TOKEN = "admin-token-for-the-edges-test-0123"
STREAM = (Headers(), *(Send(f) for f in text_stream("openai-chat", ["a", "b"])), End())
CHAT_BODY = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
NOWHERE = "http://127.0.0.1:9"  # nothing listens
CACHED = (
    ("content-type", "text/event-stream"),
    ("cache-control", "max-age=600"),
    ("x-accel-buffering", "yes"),
)
SPOOFED = {
    "x-forwarded-for": "203.0.113.7",
    "forwarded": "for=203.0.113.7;proto=https",
    "x-real-ip": "203.0.113.7",
    "x-forwarded-host": "admin.internal",
    "x-forwarded-proto": "https",
    "x-original-forwarded-for": "203.0.113.7",
    "true-client-ip": "203.0.113.7",
    "cf-connecting-ip": "203.0.113.7",
}
BEDROCK = "/model/anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream"


def upstream_route(request: Any) -> Any:
    """A stream that asks to be cached and buffered; a whole JSON answer at ``/v1/models``; Bedrock's path
    closes at once (its run is then closed ``upstream_premature_close``, with its account)."""
    if request.path == "/v1/models":
        return (Headers(headers=(("content-type", "application/json"),)), Send(b'{"data":[]}'), End())
    if request.path == BEDROCK:
        return (Headers(headers=(("content-type", "application/vnd.amazon.eventstream"),)), End())
    return (Headers(headers=CACHED), *STREAM[1:])


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One relay without a token (the admin pages open to loopback), with small body bounds."""
    audit = tmp_path_factory.mktemp("edges") / "audit.jsonl"
    bounds = {"body_min_rate": 100, "body_rate_grace": 0.5, "body_timeout": 1.5}
    with (
        FaultServerThread(upstream_route) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit), **bounds) as relay,
    ):
        yield relay, upstream, audit


def trickle(port: int, every: float, body: bytes, *, step: int = 1) -> tuple[bytes, float]:
    """A request whose head arrives whole and whose body then comes ``step`` bytes per ``every`` seconds,
    until the relay answers; the answer and how long it took."""
    with socket.create_connection(("127.0.0.1", port), timeout=WATCHDOG_S) as sock:
        head = f"POST {CHAT} HTTP/1.1\r\nhost: a\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        sock.sendall(head)
        started = time.monotonic()
        for start in range(0, len(body), step):
            if select.select([sock], [], [], every)[0] or time.monotonic() - started > WATCHDOG_S:
                break
            try:
                sock.sendall(body[start : start + step])
            except OSError:
                break
        return read_answer(sock, WATCHDOG_S), time.monotonic() - started


# -- a body that trickles -----------------------------------------------------------------------------------


def test_a_body_below_the_minimum_rate_is_refused_and_its_connection_closed(edges: Any) -> None:
    relay, *_ = edges
    answer, took = trickle(relay.port, 0.2, CHAT_BODY)  # 5 bytes a second: below 100 once the grace is over
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"slower than 100 bytes a second" in answer
    assert b"connection: close" in answer.lower()  # the rest of the body is unread: the connection ends
    assert took < WATCHDOG_S
    # A body at a steady pace above the rate is taken whole.
    with socket.create_connection(("127.0.0.1", relay.port), timeout=WATCHDOG_S) as sock:
        head = f"POST {CHAT} HTTP/1.1\r\nhost: a\r\ncontent-length: {len(CHAT_BODY)}\r\n"
        sock.sendall(head.encode() + b"connection: close\r\n\r\n")
        for start in range(0, len(CHAT_BODY), 20):  # 20 bytes per 50 ms: 400 a second
            sock.sendall(CHAT_BODY[start : start + 20])
            time.sleep(0.05)
        assert read_answer(sock, WATCHDOG_S).startswith(b"HTTP/1.1 200")


def test_a_body_past_its_deadline_is_refused_whatever_its_rate(edges: Any) -> None:
    relay, *_ = edges
    answer, _ = trickle(relay.port, 0.1, b"x" * 10_000, step=15)  # 150 bytes a second: above the rate
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"did not arrive within 1.5 s" in answer
    assert b"connection: close" in answer.lower()


@pytest.fixture(scope="module")
def process(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The command with few connections, small body bounds and the client's address forwarded."""
    args = ("--max-client-connections", "6", "--body-min-rate", "100", "--body-rate-grace", "0.5")
    folder = tmp_path_factory.mktemp("process")
    with (
        FaultServerThread(STREAM) as upstream,
        relay_process(upstream.base_url, folder, *args, "--forward-client-address") as relay,
    ):
        yield relay, upstream


def test_trickling_bodies_cannot_lock_real_clients_out(process: Any) -> None:
    """As many trickling bodies as the connection limit: each is refused soon after the grace, and a real
    client gets through (before, each held its connection for the whole 60 s body timeout)."""
    relay, _ = process
    socks = []
    head = f"POST {CHAT} HTTP/1.1\r\nhost: a\r\ncontent-length: {len(CHAT_BODY)}\r\n\r\n{{".encode()
    try:
        for _ in range(6):
            sock = socket.create_connection(("127.0.0.1", relay.port), timeout=WATCHDOG_S)
            socks.append(sock)
            sock.sendall(head)
        answers = [read_answer(sock, WATCHDOG_S) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert all(a.startswith(b"HTTP/1.1 408") for a in answers), [a[:40] for a in answers]
    with httpx.Client(timeout=WATCHDOG_S) as client:
        assert client.post(relay.base_url + CHAT, content=CHAT_BODY).status_code == 200


# -- forwarding headers -------------------------------------------------------------------------------------


def forwarding_sent(upstream: Any, base_url: str) -> dict[str, list[str]]:
    seen = upstream.requests_seen
    answer = httpx.post(base_url + CHAT, content=CHAT_BODY, headers=SPOOFED, timeout=WATCHDOG_S)
    assert answer.status_code == 200
    assert upstream.wait_for_requests(seen + 1, WATCHDOG_S)
    request = upstream.requests[-1]
    return {name: [v for k, v in request.headers if k == name] for name in SPOOFED if request.header(name)}


def test_the_clients_forwarding_headers_stay_behind(edges: Any) -> None:
    relay, upstream, _ = edges
    assert forwarding_sent(upstream, relay.base_url) == {}


def test_the_relay_forwards_its_own_view_of_the_client_when_asked(process: Any) -> None:
    relay, upstream = process
    assert forwarding_sent(upstream, relay.base_url) == {"x-forwarded-for": ["127.0.0.1"]}


def test_a_relayed_stream_tells_proxies_not_to_buffer_or_cache_it(edges: Any) -> None:
    relay, *_ = edges
    answer = httpx.post(relay.base_url + CHAT, content=CHAT_BODY, timeout=WATCHDOG_S)
    assert answer.headers.get_list("x-accel-buffering") == ["no"]
    assert answer.headers.get_list("cache-control") == ["no-cache"]
    plain = httpx.get(relay.base_url + "/v1/models", timeout=WATCHDOG_S)
    assert plain.status_code == 200 and "x-accel-buffering" not in plain.headers


# -- the Host of the admin pages ----------------------------------------------------------------------------


def admin_status(relay: RelayThread, host: str, headers: dict[str, str] | None = None) -> int:
    url = relay.base_url + "/admin/errors"
    wanted = {"accept": "application/json", "host": host, **(headers or {})}
    return httpx.get(url, headers=wanted, timeout=WATCHDOG_S).status_code


def test_the_admin_pages_refuse_a_host_that_is_not_the_relay(edges: Any) -> None:
    relay, *_ = edges  # no token: open to loopback, so a page of another site rebound to it must not be
    port = relay.port
    assert admin_status(relay, f"127.0.0.1:{port}") == 200
    assert admin_status(relay, f"localhost:{port}") == 200
    assert admin_status(relay, "localhost") == 200
    assert admin_status(relay, f"evil.example:{port}") == 403
    assert admin_status(relay, "evil.example") == 403
    assert admin_status(relay, "127.0.0.1.evil.example") == 403
    answer = httpx.get(relay.base_url + "/admin/metrics", headers={"host": "evil.example"})
    assert answer.status_code == 403
    assert "Host" in answer.json()["error"]["message"]


# -- log lines ----------------------------------------------------------------------------------------------


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_log_lines_carry_no_raw_control_character(edges: Any) -> None:
    relay, *_ = edges
    access = logging.getLogger("uvicorn.access")
    relay_log = logging.getLogger("streamfsm.relay")
    lines = Lines()
    level = access.level
    access.setLevel(logging.INFO)
    access.addHandler(lines)
    relay_log.addHandler(lines)
    try:
        forged = "/v1/models%0d%0a127.0.0.1:1%20-%20%22GET%20/admin%20HTTP/1.1%22%20200%1b[2J%e2%80%a8"
        with socket.create_connection(("127.0.0.1", relay.port), timeout=WATCHDOG_S) as sock:
            sock.sendall(f"GET {forged} HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n".encode())
            assert read_answer(sock, WATCHDOG_S).startswith(b"HTTP/1.1 200")
        # refused by the relay, which logs the route
        target = f"{CHAT}%0d%0aforged%1b[31m"
        head = f"POST {target} HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n"
        with socket.create_connection(("127.0.0.1", relay.port), timeout=WATCHDOG_S) as sock:
            sock.sendall(head.encode() + b"\r\n0\r\n\r\n")
            assert read_answer(sock, WATCHDOG_S).startswith(b"HTTP/1.1 400")
        deadline = time.monotonic() + WATCHDOG_S
        while (
            time.monotonic() < deadline
            and sum("forged" in line or "models" in line for line in lines.lines) < 3
        ):
            time.sleep(0.02)
    finally:
        access.removeHandler(lines)
        relay_log.removeHandler(lines)
        access.setLevel(level)
    logged = [line for line in lines.lines if "models" in line or "forged" in line]
    assert any(line.startswith("refused POST") for line in logged), logged
    assert any('"GET /v1/models' in line for line in logged), logged
    for line in logged:
        assert line.isprintable(), repr(line)
    access_line = next(line for line in logged if '"GET /v1/models' in line)
    assert "%0D%0A" in access_line.upper(), access_line  # as uvicorn quoted it: never decoded for the log


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_escaped_text_is_printable_and_printable_text_is_kept(text: str) -> None:
    from streamfsm.classify import escape_controls

    escaped = escape_controls(text)
    assert escaped.isprintable()
    if text.isprintable():
        assert escaped == text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(), min_size=5, max_size=5))
def test_every_field_of_an_access_line_is_printable(edges: Any, fields: list[str]) -> None:
    # a relay (``edges``) guards the logs of its process
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %s', tuple(fields), None
    )
    logging.getLogger("uvicorn.access").filter(record)
    assert record.getMessage().isprintable()


# -- accounts -----------------------------------------------------------------------------------------------


def sigv4(key_id: str, date: str, signature: str) -> str:
    return (
        f"AWS4-HMAC-SHA256 Credential={key_id}/{date[:8]}/us-east-1/bedrock/aws4_request,"
        f" SignedHeaders=content-type;host;x-amz-date, Signature={signature}"
    )


def accounts(audit: Path, ids: list[str]) -> list[str]:
    """The account of each request id's record (bounded wait)."""
    deadline = time.monotonic() + WATCHDOG_S
    found: dict[str, str] = {}
    while time.monotonic() < deadline and not set(ids) <= found.keys():
        found = {
            r["ids"]["context"]["request_id"]: r["ids"]["context"].get("account") for r in run_lines(audit)
        }
        time.sleep(0.02)
    return [found[i] for i in ids]


def test_a_bedrock_account_is_its_access_key_id_not_each_signature(edges: Any) -> None:
    relay, _, audit = edges
    signed = [
        sigv4("AKIDEXAMPLE", "20261202T030405Z", "a" * 64),
        sigv4("AKIDEXAMPLE", "20261202T030406Z", "b" * 64),
        sigv4("AKIDOTHERKEY", "20261202T030406Z", "b" * 64),
    ]
    ids = [f"rid-bedrock-{i}" for i in range(3)]
    for rid, authorization in zip(ids, signed, strict=True):
        headers = {"authorization": authorization, "x-request-id": rid, "x-amz-date": "x"}
        with contextlib.suppress(httpx.HTTPError):  # the upstream closed at once: the answer is cut
            httpx.post(
                relay.base_url + BEDROCK, content=b'{"messages":[]}', headers=headers, timeout=WATCHDOG_S
            )
    one, again, other = accounts(audit, ids)
    assert one is not None and one == again != other


# -- keys that outlive a process, and those that do not -----------------------------------------------------


def sign_in(relay: RelayThread, host: str | None = None) -> str:
    headers = {"host": host} if host else {}
    answer = httpx.post(
        relay.base_url + "/admin/login", data={"token": TOKEN}, headers=headers, timeout=WATCHDOG_S
    )
    assert answer.status_code == 303
    cookie: str = answer.headers["set-cookie"]
    return cookie


def with_cookie(relay: RelayThread, cookie: str) -> int:
    headers = {"cookie": cookie.split(";", 1)[0], "accept": "application/json"}
    return httpx.get(relay.base_url + "/admin/errors", headers=headers, timeout=WATCHDOG_S).status_code


def named(relay: RelayThread, audit: Path, rid: str) -> str:
    headers = {"authorization": f"Bearer {KEY}", "x-request-id": rid}
    httpx.post(relay.base_url + CHAT, content=CHAT_BODY, headers=headers, timeout=WATCHDOG_S)
    (account,) = accounts(audit, [rid])
    return account


KEY = "sk-the-same-key-0123456789"
PUBLIC = {"admin_token": TOKEN, "public_url": "https://relay.example.com"}
SESSION = {"admin_token": TOKEN, "session_key": "a-configured-session-key-0123"}


def test_keys_that_outlive_a_restart_and_those_that_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admin cookie: an expiry, HttpOnly, SameSite=Strict, Secure behind TLS, a new value at each sign-in,
    void after a restart unless its key is configured. The account hash: keyed by the deployment's key, kept
    (mode 0600) beside the audit log, so a restart names an account alike and another deployment does not."""
    auth = {"authorization": f"Bearer {TOKEN}"}
    here, elsewhere = tmp_path / "here" / "audit.jsonl", tmp_path / "elsewhere" / "audit.jsonl"
    with relay_to(NOWHERE, audit_log=str(here), **PUBLIC) as relay:
        first, second = sign_in(relay, "relay.example.com"), sign_in(relay, "relay.example.com")
        attributes = {part.strip().split("=")[0].lower() for part in first.split(";")[1:]}
        assert {"max-age", "httponly", "samesite", "path", "secure"} <= attributes
        assert "samesite=strict" in first.lower()
        assert first.split(";")[0] != second.split(";")[0]  # a new value at each sign-in
        assert with_cookie(relay, first) == with_cookie(relay, second) == 200
        name, _, value = first.split(";")[0].partition("=")
        issued, _, rest = value.partition(".")
        assert with_cookie(relay, f"{name}={int(issued) + 1}.{rest}") == 401  # not made from an old one
        import streamfsm.relay._admin as admin

        monkeypatch.setattr(admin, "SESSION_S", -1)
        assert with_cookie(relay, first) == 401  # expired
        monkeypatch.undo()
        # With a token and a public URL the Host is checked too.
        assert admin_status(relay, "relay.example.com", auth) == 200
        assert admin_status(relay, "RELAY.example.com.:443", auth) == 200
        assert admin_status(relay, f"127.0.0.1:{relay.port}", auth) == 200
        assert admin_status(relay, "evil.example", auth) == 403
        account = named(relay, here, "rid-first")
    kept = here.parent / "streamfsm-relay.key"
    assert kept.exists() and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert KEY not in kept.read_text()
    with relay_to(NOWHERE, audit_log=str(here), **PUBLIC) as restarted:
        assert with_cookie(restarted, first) == 401  # a restart ends every sign-in
        assert named(restarted, here, "rid-again") == account  # and names an account alike
    with relay_to(NOWHERE, audit_log=str(elsewhere), **SESSION) as relay:
        signed = sign_in(relay)
        assert "secure" not in signed.lower()  # plain HTTP, no public https URL
        assert admin_status(relay, "any.example", auth) == 200  # a token and no public URL: the token guards
        assert named(relay, elsewhere, "rid-other") != account  # another deployment, another key
    with relay_to(NOWHERE, audit_log=str(elsewhere), **SESSION) as restarted:
        assert with_cookie(restarted, signed) == 200  # a configured session key keeps the sign-in
    # Nobody can test a guessed key against a record without the deployment's key (it was a constant).
    guessed = hashlib.blake2b(f"Bearer {KEY}".encode(), key=b"streamfsm.relay.account", digest_size=8)
    assert account != f"acct_{guessed.hexdigest()}"
    configured = Relay(RelayConfig(NOWHERE, audit_log=str(here), account_key="k" * 16))
    assert configured.account_key != Relay(RelayConfig(NOWHERE, audit_log=str(here))).account_key


def test_no_key_file_is_made_without_a_place_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Relay(RelayConfig(NOWHERE))
    assert not list(tmp_path.iterdir())


def test_no_key_is_kept_beside_a_log_that_is_no_regular_file(tmp_path: Path) -> None:
    """A log on standard output (a device, a pipe) is no place for the key: its folder is /dev or /proc, and
    every worker would make a key of its own there (or none), naming one account differently."""
    from streamfsm.relay._keys import key_file

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    assert key_file("/dev/stdout", str(fifo)) is None
    assert key_file("/dev/null", str(tmp_path / "audit.jsonl")) == tmp_path / "streamfsm-relay.key"


def test_the_help_says_where_metrics_go(capsys: pytest.CaptureFixture[str]) -> None:
    from streamfsm.cli import main

    with pytest.raises(SystemExit):
        main(["relay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "/metrics too: the relay's own metrics are at /admin/metrics" in text


def test_a_sign_in_holds_on_every_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker builds its own relay: the command gives them one session key for the run (a key per
    worker would refuse the cookie on about half the requests)."""
    monkeypatch.setenv("EDGES_ADMIN_TOKEN", TOKEN)
    args = ("--workers", "2", "--admin-token-env", "EDGES_ADMIN_TOKEN")
    with relay_process(NOWHERE, tmp_path, *args) as relay:
        signed = httpx.post(relay.base_url + "/admin/login", data={"token": TOKEN}, timeout=WATCHDOG_S)
        assert signed.status_code == 303
        cookie = {"cookie": signed.headers["set-cookie"].split(";", 1)[0], "accept": "application/json"}
        answers = {
            httpx.get(relay.base_url + "/admin/errors", headers=cookie, timeout=WATCHDOG_S).status_code
            for _ in range(12)
        }
    assert answers == {200}


def test_workers_share_the_store_beside_the_audit_log_until_all_have_stopped(tmp_path: Path) -> None:
    """With --no-keep-store the file beside the audit log goes when the relay stops, not when its first
    worker does (the others still index into it)."""
    from streamfsm.relay import default_store

    audit = tmp_path / "audit.jsonl"
    args = ("--workers", "2", "--audit-log", str(audit), "--no-keep-store")
    with relay_process(NOWHERE, tmp_path, *args) as relay:
        deadline = time.monotonic() + WATCHDOG_S
        while not default_store(audit).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert default_store(audit).exists()
        workers = _children(relay.process.pid)
        assert len(workers) >= 2
        os.kill(workers[0], signal.SIGTERM)  # one worker stops; the other goes on indexing
        while _alive(workers[0]) and time.monotonic() < deadline + WATCHDOG_S:
            time.sleep(0.05)
        assert not _alive(workers[0])
        assert default_store(audit).exists()
    assert not default_store(audit).exists()


def _children(pid: int) -> list[int]:
    """The worker processes uvicorn spawned (not multiprocessing's resource tracker)."""
    found = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [child for child in found if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
