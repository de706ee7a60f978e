"""Slow clients before the headers (issue 25 item 7), against a real ``streamfsm relay`` process over raw
sockets: half-open connections (half a request line, then nothing) are closed after the header timeout and
cannot keep a real client out, whether there are more of them than the connection limit or than the process
has file descriptors; and what the event loop says about accept errors stays a few lines.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from streamfsm.testing import End, FaultServerThread, Headers, Send, text_stream
from tests.support.relay_process import relay_process

pytest.importorskip("uvicorn", reason="the relay process needs uvicorn (the relay extra)")

HEADER_TIMEOUT = 1.5
WATCHDOG_S = 15.0
CHAT = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
STREAM = (Headers(), *(Send(f) for f in text_stream("openai-chat", ["a", "b"])), End())


@contextmanager
def half_open(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that each sent half a request line and stall (those the kernel took)."""
    with ExitStack() as stack:
        sockets: list[socket.socket] = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.settimeout(5.0)
            try:
                sock.connect(("127.0.0.1", port))
                sock.sendall(b"POST /v1/chat/comp")
            except OSError:
                continue
            sockets.append(sock)
        yield sockets


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the relay closed ``sock`` (EOF or reset), without waiting."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def all_closed(sockets: list[socket.socket], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(closed_by_peer(s) for s in sockets):
            return True
        time.sleep(0.05)
    return False


def real_request(base_url: str) -> httpx.Response:
    with httpx.Client(timeout=WATCHDOG_S) as client:
        return client.post(f"{base_url}/v1/chat/completions", content=CHAT)


def test_half_open_connections_beyond_the_limit_cannot_starve_a_real_client(tmp_path: Path) -> None:
    args = ("--header-timeout", str(HEADER_TIMEOUT), "--max-client-connections", "16")
    with (
        FaultServerThread(STREAM) as upstream,
        relay_process(upstream.base_url, tmp_path, *args) as relay,
        half_open(relay.port, 40) as stalled,
    ):
        assert len(stalled) == 40
        started = time.monotonic()
        answer = real_request(relay.base_url)
        assert answer.status_code == 200 and b"[DONE]" in answer.content
        assert time.monotonic() - started < WATCHDOG_S
        # More than the limit: the oldest were closed at once to make room, the rest at the header timeout.
        assert all_closed(stalled, HEADER_TIMEOUT + 5.0), "a half-open connection outlived the header timeout"
        assert real_request(relay.base_url).status_code == 200
    assert "without a whole request head" in relay.stderr_text()


def test_half_open_connections_within_the_limit_are_closed_after_the_header_timeout(tmp_path: Path) -> None:
    with (
        FaultServerThread(STREAM) as upstream,
        relay_process(upstream.base_url, tmp_path, "--header-timeout", str(HEADER_TIMEOUT)) as relay,
        half_open(relay.port, 5) as stalled,
    ):
        time.sleep(HEADER_TIMEOUT / 3)
        assert not any(closed_by_peer(s) for s in stalled), "closed before the header timeout"
        assert all_closed(stalled, HEADER_TIMEOUT + 5.0)


def test_a_kept_alive_connection_that_stalls_inside_its_next_request_line_is_closed(tmp_path: Path) -> None:
    with (
        FaultServerThread(STREAM) as upstream,
        relay_process(upstream.base_url, tmp_path, "--header-timeout", str(HEADER_TIMEOUT)) as relay,
        socket.create_connection(("127.0.0.1", relay.port), timeout=5.0) as sock,
    ):
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(CHAT)
        sock.sendall(head + CHAT)
        got = b""
        while b"0\r\n\r\n" not in got:
            piece = sock.recv(65536)
            assert piece, "the relay closed a kept-alive connection before the response ended"
            got += piece
        sock.sendall(b"POST /v1/ch")  # uvicorn's keep-alive timer stops at these bytes
        assert all_closed([sock], HEADER_TIMEOUT + 5.0)


@pytest.mark.parametrize("limit", ["default", "beyond_the_descriptors"])
def test_more_half_open_connections_than_file_descriptors(limit: str, tmp_path: Path) -> None:
    """At a 256-descriptor limit, 400 half-open connections: the event loop accepts a burst of them at once,
    so the relay may run out of descriptors for a moment (beyond the connection limit, until the header
    timeout); it says so at most once per 10 s, keeps serving, and closes them all."""
    args = ["--header-timeout", str(HEADER_TIMEOUT)]
    if limit != "default":
        args += ["--max-client-connections", "1000"]
    with (
        FaultServerThread(STREAM) as upstream,
        relay_process(upstream.base_url, tmp_path, *args, max_fds=256) as relay,
        half_open(relay.port, 400) as stalled,
    ):
        answer = real_request(relay.base_url)
        assert answer.status_code == 200 and b"[DONE]" in answer.content
        assert all_closed(stalled, HEADER_TIMEOUT + 5.0)
        assert relay.process.poll() is None
    stderr = relay.stderr_text()
    assert len(stderr) < 20_000, f"{len(stderr)} bytes of stderr"
    assert stderr.count("out of system resource") <= 2


def test_a_request_head_sent_a_byte_at_a_time_does_not_reset_the_header_timeout(tmp_path: Path) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    with (
        FaultServerThread(STREAM) as upstream,
        relay_process(upstream.base_url, tmp_path, "--header-timeout", str(HEADER_TIMEOUT)) as relay,
        socket.create_connection(("127.0.0.1", relay.port), timeout=5.0) as sock,
    ):
        started = time.monotonic()
        closed = False
        for byte in head:  # a byte every 50 ms: the head would take 12 s
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            if closed_by_peer(sock):
                closed = True
                break
            assert time.monotonic() - started < HEADER_TIMEOUT + 5.0, "the slow head was never cut"
            time.sleep(0.05)
        assert closed, "the whole slow head was taken"
