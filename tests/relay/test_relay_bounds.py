"""The relay as an operator runs it (issue 25), on the real uvicorn server in front of the fault server,
with raw sockets as clients where a client library would tidy the request up: a complete stream whose
transfer then breaks is not a failure; no spelling of a dot segment climbs above the upstream's path;
a request with both Content-Length and Transfer-Encoding is refused and its connection closed; the access
log is as redacted as the records."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamfsm.testing import End, FaultServerThread, Fin, Headers, Rst, Send, text_stream
from tests.support.relay import read_answer, relay_to, wait_lines
from tests.support.runs import BODIES

openai = pytest.importorskip("openai")

TIMEOUT = 10.0
CHAT = "/v1/chat/completions"


def logs(tmp_path: Path) -> dict[str, Any]:
    return {"error_log": str(tmp_path / "errors.jsonl"), "audit_log": str(tmp_path / "audit.jsonl")}


def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; everything the relay answers until it closes (bounded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        return read_answer(sock, TIMEOUT)


def post(target: str) -> bytes:
    """A raw streaming chat request for ``target`` as sent (``curl --path-as-is``), closing after it."""
    body = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
    head = f"POST {target} HTTP/1.1\r\nhost: a\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode() + body


# -- 1: after the terminal event, a broken transfer is evidence, not a failure ------------------------------


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
@pytest.mark.parametrize("end", ["fin", "rst"])
def test_a_complete_stream_whose_transfer_then_breaks_reaches_the_client_whole(
    fmt: str, end: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streamfsm.relay")
    frames = text_stream(fmt, ["Hel", "lo"])
    path = {"openai-chat": CHAT, "openai-responses": "/v1/responses", "anthropic": "/v1/messages"}[fmt]
    steps = (Headers(), *(Send(f) for f in frames), Fin() if end == "fin" else Rst())
    body = {**BODIES[fmt], "stream": True}
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        answer = httpx.post(relay.base_url + path, json=body, headers={"x-request-id": "rid-whole"})
        (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    assert answer.status_code == 200
    assert answer.content == b"".join(frames), "nothing appended after the terminal event"
    assert record["outcome"]["class"] == "completed"
    assert record["relay"]["close"] == "completed"
    assert record["relay"]["terminal_sent"] is True
    assert not (tmp_path / "errors.jsonl").exists() or not (tmp_path / "errors.jsonl").read_text()
    assert not [r for r in caplog.records if "failed" in r.getMessage()]


# -- 5: no spelling of a dot segment climbs above the upstream's path -------------------------------------

CLIMBS = [
    "/../tenantB/v1/chat/completions",
    "/v1/../../tenantB/v1/chat/completions",
    "/v1/..",
    "/./v1/chat/completions",
    "/v1/./chat/completions",
    "/%2e%2e/tenantB/v1/chat/completions",
    "/%2E%2E/tenantB/v1/chat/completions",
    "/%2E./tenantB/v1/chat/completions",
    "/.%2e/tenantB/v1/chat/completions",
    "/.%2E/tenantB/v1/chat/completions",
    "/%2e/v1/chat/completions",
    "/%252e%252e/tenantB/v1/chat/completions",
    "/v1%2f..%2f..%2ftenantB/v1/chat/completions",
    "/v1%2F..%2F..%2FtenantB/v1/chat/completions",
    "/..%2ftenantB/v1/chat/completions",
    "/..%5ctenantB/v1/chat/completions",
    "/..%5CtenantB/v1/chat/completions",
    "/..\\tenantB/v1/chat/completions",
    "/v1\\..\\..\\tenantB",
    "//tenantB/v1/chat/completions",
    "/v1//chat/completions",
    "/..;/tenantB/v1/chat/completions",
    "/v1/..;x/..;x/tenantB",
    "/%2e%2e%2ftenantB",
]


def test_a_plain_path_goes_under_the_upstreams_path() -> None:
    frames = text_stream("openai-chat", ["a"])
    with (
        FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream,
        relay_to(upstream.base_url + "/tenantA") as relay,
    ):
        answer = exchange(relay.port, post(CHAT + "?x=1"))
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert [r.path for r in upstream.requests] == ["/tenantA" + CHAT]


@pytest.mark.parametrize("target", CLIMBS)
def test_no_dot_segment_spelling_leaves_the_upstreams_path(target: str) -> None:
    frames = text_stream("openai-chat", ["a"])
    with (
        FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream,
        relay_to(upstream.base_url + "/tenantA") as relay,
    ):
        answer = exchange(relay.port, post(target))
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert b"dot segment" in answer or b"path" in answer
        assert upstream.requests_seen == 0, [r.path for r in upstream.requests]


# -- 8: Content-Length and Transfer-Encoding together: 400 and close (RFC 9112 6.1) --------------------------


@pytest.mark.parametrize("order", ["cl_first", "te_first"])
def test_a_request_with_both_lengths_is_refused_and_its_smuggled_request_never_forwarded(order: str) -> None:
    frames = text_stream("openai-chat", ["a"])
    smuggled = b"POST /smuggled HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n"
    chunked = b"0\r\n\r\n" + smuggled
    lengths = [f"content-length: {len(chunked)}\r\n", "transfer-encoding: chunked\r\n"]
    if order == "te_first":
        lengths.reverse()
    head = f"POST {CHAT} HTTP/1.1\r\nhost: a\r\n{''.join(lengths)}\r\n"
    with (
        FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream,
        relay_to(upstream.base_url) as relay,
    ):
        answer = exchange(relay.port, head.encode() + chunked)  # returns once the relay closed
        time.sleep(0.2)  # a forwarded request would have arrived by now
        seen = [r.path for r in upstream.requests]
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert answer.count(b"HTTP/1.1 ") == 1, "one answer, then the connection closed"
    assert seen == [], seen


# -- 9: the access log is as redacted as the records -------------------------------------------------------


def test_the_access_log_of_a_relay_started_by_the_command_carries_no_key() -> None:
    import signal
    import subprocess
    import sys

    from streamfsm.testing import unused_port

    key, password = "AIzaPLANTED-querykey-0123456789", "PLANTED-userinfo-pw"
    frames = text_stream("openai-chat", ["a"])
    port = unused_port()
    with FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream:
        command = [sys.executable, "-m", "streamfsm", "relay", "--upstream", upstream.base_url]
        relay = subprocess.Popen(
            [*command, "--listen", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                    break
                except OSError:
                    time.sleep(0.05)
            answers = [
                exchange(port, post(f"{CHAT}?key={key}&alt=sse")),
                exchange(port, post(f"http://user:{password}@127.0.0.1:{port}{CHAT}?key={key}")),
            ]
        finally:
            relay.send_signal(signal.SIGINT)
            try:
                out, _ = relay.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                relay.kill()
                out, _ = relay.communicate(timeout=TIMEOUT)
    assert answers[0].startswith(b"HTTP/1.1 200") and answers[1].startswith(b"HTTP/1.1 400")
    text = out.decode(errors="replace")  # uvicorn's access log goes to stdout, the rest to stderr
    assert f'"POST {CHAT} HTTP/1.1" 200' in text, text[-2000:]  # the access log is on, and redacted
    assert key not in text and password not in text, text[-2000:]


# -- 2: a cut that arrives while the relay's loop is held stays a cut ---------------------------------------


class Stalling:
    """The relay behind a route that holds its event loop (``POST /stall``): another task that does not
    yield, as a slow sink or a CPU-bound handler would."""

    def __init__(self, app: Any, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/stall":
            time.sleep(self.seconds)  # the point
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


@pytest.mark.parametrize("end", ["fin", "rst"])
def test_an_upstream_cut_during_a_held_loop_is_recorded_as_the_cut(end: str, tmp_path: Path) -> None:
    from streamfsm import StreamConfig
    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.testing import Sleep
    from tests.support.relay import RelayThread

    frames = text_stream("openai-chat", ["a", "b", "c"])[:3]
    steps = (Headers(), *(Send(f) for f in frames), Sleep(0.2), Fin() if end == "fin" else Rst())
    with FaultServerThread(steps) as upstream:
        config = RelayConfig(
            upstream=upstream.base_url, stream=StreamConfig(idle_timeout=0.3), **logs(tmp_path)
        )
        with RelayThread(Stalling(Relay(config), 0.8)) as relay:  # type: ignore[arg-type]
            body = {**BODIES["openai-chat"], "stream": True}
            with httpx.stream("POST", relay.base_url + CHAT, json=body, timeout=TIMEOUT) as response:
                chunks = response.iter_raw()
                next(chunks)
                with socket.create_connection(("127.0.0.1", relay.port), timeout=TIMEOUT) as stall:
                    stall.sendall(b"POST /stall HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n")
                    with pytest.raises(httpx.HTTPError):  # the relay cut the response: the client learns it
                        for _ in chunks:
                            pass
            (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    assert record["relay"]["close"] == "upstream_premature_close", record["outcome"]
    assert record["watchdog"]["fired"] is None


# -- 4: every relayed run has a close kind; completed means the terminal reached the client -----------------


def test_a_502_and_a_504_run_have_a_close_kind(tmp_path: Path) -> None:
    from streamfsm import StreamConfig
    from streamfsm.testing import Stall, unused_port

    body = {**BODIES["openai-chat"], "stream": True}
    with relay_to(f"http://127.0.0.1:{unused_port()}", **logs(tmp_path)) as relay:
        refused = httpx.post(relay.base_url + CHAT, json=body, headers={"x-request-id": "rid-502"})
    with (
        FaultServerThread((Stall(),)) as upstream,  # accepts, never answers
        relay_to(upstream.base_url, stream=StreamConfig(connect_timeout=0.3), **logs(tmp_path)) as relay,
    ):
        silent = httpx.post(relay.base_url + CHAT, json=body, headers={"x-request-id": "rid-504"})
    records = {r["ids"]["context"]["request_id"]: r for r in wait_lines(tmp_path / "audit.jsonl", 2)}
    assert (refused.status_code, silent.status_code) == (502, 504)
    assert records["rid-502"]["relay"]["close"] == "upstream_unreachable"
    assert records["rid-504"]["relay"]["close"] == "upstream_timeout"
    # Nothing of the upstream's reached the client: what it got is the relay's own answer, counted whole.
    for record, answer in ((records["rid-502"], refused), (records["rid-504"], silent)):
        assert record["relay"]["bytes_written"] == len(answer.content) > 0
        assert (record["relay"]["events_sent"], record["relay"]["end_sent"]) == (0, True)


class HoldingTheTerminal:
    """The relay behind a server whose write of the terminal chunk takes ``seconds`` (a slow link): the client
    can leave while it is on its way."""

    def __init__(self, app: Any, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def slow_send(message: Any) -> None:
            if b"data: [DONE]" in message.get("body", b""):  # what carries openai-chat's finish
                import anyio

                await anyio.sleep(self.seconds)
            await send(message)

        await self.app(scope, receive, slow_send)


def test_a_client_that_left_before_the_terminal_was_written_is_not_completed(tmp_path: Path) -> None:
    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.testing import Sleep
    from tests.support.relay import RelayThread

    frames = text_stream("openai-chat", ["a", "b"])
    steps = (Headers(), *(x for f in frames for x in (Send(f), Sleep(0.05))), End())
    with FaultServerThread(steps) as upstream:
        relay_app = Relay(RelayConfig(upstream=upstream.base_url, **logs(tmp_path)))
        with RelayThread(HoldingTheTerminal(relay_app, 1.0)) as relay:  # type: ignore[arg-type]
            sock = socket.create_connection(("127.0.0.1", relay.port), timeout=TIMEOUT)
            sock.sendall(post(CHAT))
            seen = b""
            while seen.count(b"data:") < len(frames) - 1:  # all but the terminal
                seen += sock.recv(65536)
            time.sleep(0.3)  # the relay has read the terminal (50 ms later); its write takes 1 s
            sock.close()  # while the terminal is on its way
            (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    assert record["outcome"]["class"] == "completed", "upstream, the answer was whole"
    assert record["relay"]["terminal_sent"] is False
    assert record["relay"]["close"] == "client_abort"


# -- 3: the relay's own shutdown is its own, and the client learns it ---------------------------------------


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_a_shutdown_mid_stream_is_the_relays_own_and_the_client_gets_the_error_event(
    fmt: str, tmp_path: Path
) -> None:
    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.testing import Keepalive
    from tests.support.relay import RelayThread

    frames = text_stream(fmt, ["a", "b"])
    path = {"openai-chat": CHAT, "anthropic": "/v1/messages"}[fmt]
    steps = (Headers(), *(Send(f) for f in frames[:3]), Keepalive(every=0.05, count=400), End())
    with FaultServerThread(steps) as upstream:
        relay_app = Relay(RelayConfig(upstream=upstream.base_url, **logs(tmp_path)))
        with RelayThread(relay_app, grace=1) as relay:
            body = {**BODIES[fmt], "stream": True}
            got = b""
            with pytest.raises(httpx.HTTPError):  # the response is cut, not ended
                with httpx.stream("POST", relay.base_url + path, json=body, timeout=TIMEOUT) as response:
                    for chunk in response.iter_raw():
                        if not got:
                            relay.server.should_exit = True  # SIGTERM, as uvicorn sees it
                        got += chunk
            (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    assert b"event: error" in got and b"the relay shut down" in got
    assert record["relay"]["close"] == "relay_shutdown"
    assert record["abort"]["source"] == "app"
    assert record["outcome"]["class"] == "local_abort"


def test_a_stream_that_ends_within_the_shutdown_grace_completes(tmp_path: Path) -> None:
    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.testing import Sleep
    from tests.support.relay import RelayThread

    frames = text_stream("openai-chat", ["a", "b"])
    steps = (Headers(), Send(frames[0]), Sleep(0.5), *(Send(f) for f in frames[1:]), End())
    with FaultServerThread(steps) as upstream:
        relay_app = Relay(RelayConfig(upstream=upstream.base_url, **logs(tmp_path)))
        with RelayThread(relay_app, grace=5) as relay:
            body = {**BODIES["openai-chat"], "stream": True}
            got = b""
            with httpx.stream("POST", relay.base_url + CHAT, json=body, timeout=TIMEOUT) as response:
                for chunk in response.iter_raw():
                    if not got:
                        relay.server.should_exit = True
                    got += chunk
            (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    assert got == b"".join(frames)
    assert record["relay"]["close"] == "completed"
