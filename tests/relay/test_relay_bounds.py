"""The relay as an operator runs it (issue 25), on the real uvicorn server in front of the fault server,
with raw sockets as clients where a client library would tidy the request up: a complete stream whose
transfer then breaks is not a failure; no spelling of a dot segment climbs above the upstream's path;
a request with both Content-Length and Transfer-Encoding is refused and its connection closed; the access
log is as redacted as the records."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from relaysupport import relay_to, wait_lines
from runsupport import BODIES

from streamfsm.testing import text_stream
from streamfsm.testing._script import Fin, Headers, Rst, Send
from streamfsm.testing._server import FaultServerThread

openai = pytest.importorskip("openai")

TIMEOUT = 10.0
CHAT = "/v1/chat/completions"


def logs(tmp_path: Path) -> dict[str, Any]:
    return {"error_log": str(tmp_path / "errors.jsonl"), "audit_log": str(tmp_path / "audit.jsonl")}


def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; everything the relay answers until it closes (bounded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        answer = b""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                part = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not part:
                break
            answer += part
        return answer


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
