"""The relay on the real uvicorn server (127.0.0.1) in front of the fault server, with the real ``openai`` and
``anthropic`` SDKs (whichever generation this environment has) and raw sockets as clients.

Seed 004's close kinds, each produced by a real event, land once in the error log and once in the audit log
with their correlation ids; the client sees every upstream failure as a failure; bad input gets a clear
answer; no credential reaches any log line.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamfsm import RunRecord, StreamConfig
from streamfsm.runtime import TextDelta
from streamfsm.testing import (
    End,
    FaultServerThread,
    Fin,
    Headers,
    Keepalive,
    Rst,
    Send,
    Stall,
    Status,
    error_event,
    text_stream,
)
from tests.support.relay import relay_to, run_lines, wait_lines
from tests.support.runs import BODIES, cut_through, validate_record

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

FMTS = ("openai-chat", "openai-responses", "anthropic")
PATHS = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
}
SDK_BODIES = {**BODIES, "anthropic": {**BODIES["anthropic"], "model": "claude-test-model"}}
SECRET = "sk-relaytest-PLANTED-0123456789abcdef"
ANT_SECRET = "sk-ant-api03-PLANTED-abcdefghijklmnop"
TIMEOUT = 20.0


def sdk(fmt: str, base_url: str) -> Any:
    if fmt == "anthropic":
        return anthropic.Anthropic(base_url=base_url, api_key=ANT_SECRET, max_retries=0, timeout=TIMEOUT)
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=SECRET, max_retries=0, timeout=TIMEOUT)


def call(fmt: str, base_url: str, request_id: str | None = None) -> tuple[list[Any], BaseException | None]:
    """One streaming call through the SDK: (the items it yielded, what it raised)."""
    client = sdk(fmt, base_url)
    extra = {"extra_headers": {"x-request-id": request_id}} if request_id else {}
    items: list[Any] = []
    try:
        body = SDK_BODIES[fmt]
        if fmt == "anthropic":
            stream = client.messages.create(**body, stream=True, **extra)
        elif fmt == "openai-chat":
            stream = client.chat.completions.create(**body, stream=True, **extra)
        else:
            stream = client.responses.create(**body, stream=True, **extra)
        for item in stream:
            items.append(item.model_dump(mode="json"))
    except Exception as exc:
        return items, exc
    finally:
        client.close()
    return items, None


def logs(tmp_path: Path) -> dict[str, Any]:
    return {"error_log": str(tmp_path / "errors.jsonl"), "audit_log": str(tmp_path / "audit.jsonl")}


def landed_once(tmp_path: Path, request_id: str, *, failed: bool = True) -> dict[str, Any]:
    """The run of ``request_id``: once in the audit log, once in the error log if it failed; its record."""
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and not of_request(tmp_path / "audit.jsonl", request_id):
        time.sleep(0.02)
    time.sleep(0.1)  # a second record would have arrived by now
    audit = of_request(tmp_path / "audit.jsonl", request_id)
    errors = of_request(tmp_path / "errors.jsonl", request_id)
    assert len(audit) == 1, f"{len(audit)} audit records of {request_id}"
    assert errors == (audit if failed else [])
    record = audit[0]
    validate_record(RunRecord.from_dict(record))  # type: ignore[arg-type]
    context = record["ids"]["context"]
    assert context["route"].startswith("/v1/")
    assert context["account"].startswith("acct_")
    return record


def of_request(path: Path, request_id: str) -> list[dict[str, Any]]:
    return [r for r in run_lines(path) if r["ids"]["context"].get("request_id") == request_id]


# -- a normal stream ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FMTS)
def test_a_normal_stream_arrives_byte_identical(fmt: str, tmp_path: Path) -> None:
    frames = text_stream(fmt, ["Hel", "lo"], reasoning=["think"])
    steps = (Headers(headers=(("content-type", "text/event-stream"), ("x-upstream", "1"))),)
    steps += (*(Send(f) for f in frames), End())
    body = json.dumps({**SDK_BODIES[fmt], "stream": True}).encode()
    headers = {"content-type": "application/json", "authorization": f"Bearer {SECRET}", "x-custom": "kept"}
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        direct = httpx.post(upstream.base_url + PATHS[fmt] + "?a=1&b=%2F", content=body, headers=headers)
        relayed = httpx.post(relay.base_url + PATHS[fmt] + "?a=1&b=%2F", content=body, headers=headers)
        assert relayed.status_code == direct.status_code == 200
        assert relayed.content == direct.content
        assert relayed.headers["x-upstream"] == "1"
        rid = relayed.headers["x-streamfsm-request-id"]
        assert relayed.headers["x-request-id"] == rid
        # the request went upstream as the client sent it
        first, second = upstream.requests[-2:]
        assert (second.method, second.path, second.query, second.body_head) == (
            first.method,
            first.path,
            first.query,
            first.body_head,
        )
        hop = ("host", "connection")  # the connection's own, not forwarded
        assert sorted(h for h in second.headers if h[0] not in hop) == sorted(
            h for h in first.headers if h[0] not in hop
        )
        # and the SDK sees the same objects through the relay as without it
        assert call(fmt, relay.base_url) == call(fmt, upstream.base_url)
        record = landed_once(tmp_path, rid, failed=False)
    relay_section = record["relay"]
    assert relay_section["close"] == "completed"
    assert relay_section["terminal_sent"] is True
    assert relay_section["last_event_sent"] == "finish"
    assert relay_section["bytes_written"] == len(direct.content)
    assert relay_section["reasoning_seen"] is True
    assert record["model"] == SDK_BODIES[fmt]["model"]


# -- seed 004's close kinds, each from a real event ---------------------------------------------------------


def raw_request(port: int, fmt: str, request_id: str, *, rcvbuf: int | None = None) -> socket.socket:
    body = json.dumps({**SDK_BODIES[fmt], "stream": True}).encode()
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(TIMEOUT)
    sock.connect(("127.0.0.1", port))
    head = (
        f"POST {PATHS[fmt]} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer {SECRET}\r\nx-request-id: {request_id}\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def test_client_abort_a_client_that_closes_its_socket_mid_stream(tmp_path: Path) -> None:
    frames = text_stream("openai-chat", ["a", "b", "c", "d"])
    steps = (Headers(), *(Send(f) for f in frames[:3]), Keepalive(every=0.05, count=400), End())
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        sock = raw_request(relay.port, "openai-chat", "rid-abort")
        seen = b""
        while seen.count(b"data:") < 2:
            seen += sock.recv(65536)
        sock.close()
        record = landed_once(tmp_path, "rid-abort")
    assert record["relay"]["close"] == "client_abort"
    assert record["abort"]["source"] == "client"
    assert record["relay"]["terminal_sent"] is False
    assert record["relay"]["events_sent"] >= 1


def test_client_write_failed_a_client_that_stops_reading(tmp_path: Path) -> None:
    big = "x" * 65536
    frames = text_stream("openai-chat", [big] * 160)  # ~10 MB: more than every buffer on the way
    steps = (Headers(), *(Send(f) for f in frames), End())
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, write_timeout=0.5, **logs(tmp_path)) as relay,
    ):
        sock = raw_request(relay.port, "openai-chat", "rid-write", rcvbuf=4096)
        try:
            record = landed_once(tmp_path, "rid-write")
        finally:
            sock.close()
    relay_section = record["relay"]
    assert relay_section["close"] == "client_write_failed"
    assert record["outcome"]["edge"] == "consumer_error"
    assert 0 < relay_section["bytes_written"] < sum(map(len, frames))
    assert relay_section["terminal_sent"] is False


@pytest.mark.parametrize(
    ("fmt", "status", "error"),
    [
        ("openai-chat", 429, "RateLimitError"),
        ("openai-responses", 500, "InternalServerError"),
        ("anthropic", 529, "OverloadedError"),
    ],
)
def test_upstream_error_status(fmt: str, status: int, error: str, tmp_path: Path) -> None:
    body = json.dumps({"error": {"type": "rate_limit_error", "message": "slow down"}}).encode()
    steps = (Status(status, headers=(("content-type", "application/json"),), body=body),)
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        items, exc = call(fmt, relay.base_url, "rid-status")
        record = landed_once(tmp_path, "rid-status")
    assert items == []
    assert type(exc).__name__ in (error, "APIStatusError", "InternalServerError")
    assert getattr(exc, "status_code", None) == status
    assert record["relay"]["close"] == "upstream_error"
    assert record["transport"]["status"] == status
    assert record["relay"]["bytes_written"] == len(body)


@pytest.mark.parametrize("fmt", FMTS)
def test_upstream_timeout_a_stalled_upstream(fmt: str, tmp_path: Path) -> None:
    frames = text_stream(fmt, ["a", "b", "c"])
    steps = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)), Stall())
    stream = StreamConfig(idle_timeout=0.5)
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, stream=stream, **logs(tmp_path)) as relay,
    ):
        _items, exc = call(fmt, relay.base_url, "rid-stall")
        record = landed_once(tmp_path, "rid-stall")
    assert exc is not None, "a stalled upstream must reach the client as a failure"
    assert "request id rid-stall" in str(exc) or isinstance(exc, (openai.APIError, anthropic.APIError))
    assert record["relay"]["close"] == "upstream_timeout"
    assert record["watchdog"]["fired"] == "idle_timeout"


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("end", ["fin", "rst", "clean_eof"])
def test_upstream_premature_close(fmt: str, end: str, tmp_path: Path) -> None:
    frames = text_stream(fmt, ["a", "b", "c"], reasoning=["r"])
    last = {"fin": Fin(), "rst": Rst(), "clean_eof": End()}[end]
    steps = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)), last)
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        items, exc = call(fmt, relay.base_url, "rid-cut")
        record = landed_once(tmp_path, "rid-cut")
    assert items, "the events before the cut reached the client"
    assert exc is not None, f"an upstream {end} before the terminal event must reach the client as a failure"
    relay_section = record["relay"]
    assert relay_section["close"] == "upstream_premature_close"
    assert relay_section["upstream_events"] >= relay_section["events_sent"] >= 1
    assert relay_section["reasoning_seen"] is True
    assert relay_section["terminal_sent"] is False
    if fmt != "openai-chat":  # the formats that name their response up front
        assert record["ids"]["response_id"]


@pytest.mark.parametrize("fmt", FMTS)
def test_an_upstream_in_band_error_reaches_the_sdk_as_the_upstream_sent_it(fmt: str, tmp_path: Path) -> None:
    frames = text_stream(fmt, ["a", "b"])
    steps = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)))
    steps += (Send(error_event(fmt, "overloaded")), End())
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        direct = call(fmt, upstream.base_url)
        relayed = call(fmt, relay.base_url, "rid-inband")
        record = landed_once(tmp_path, "rid-inband")
    assert relayed[0] == direct[0]
    assert type(relayed[1]) is type(direct[1])
    assert record["relay"]["close"] == "upstream_error"


# -- bad input ---------------------------------------------------------------------------------------------


def test_a_request_the_upstream_rejects_is_forwarded_as_is(tmp_path: Path) -> None:
    body = b'{"error":{"type":"invalid_request_error","message":"model: field required"}}'
    steps = (Status(400, headers=(("content-type", "application/json"),), body=body),)
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs(tmp_path)) as relay:
        answer = httpx.post(
            relay.base_url + "/v1/chat/completions",
            json={"stream": True, "messages": []},
            headers={"authorization": f"Bearer {SECRET}"},
        )
        record = landed_once(tmp_path, answer.headers["x-request-id"])
    assert (answer.status_code, answer.content) == (400, body)
    assert record["outcome"]["class"] == "provider_error"


def test_an_oversize_body_is_refused_before_going_upstream(tmp_path: Path) -> None:
    with (
        FaultServerThread((Status(200),)) as upstream,
        relay_to(upstream.base_url, max_body_bytes=1000, **logs(tmp_path)) as relay,
    ):
        declared = httpx.post(relay.base_url + "/v1/chat/completions", content=b"x" * 5000)

        def chunks() -> Any:
            yield b"y" * 600
            yield b"y" * 600

        streamed = httpx.post(relay.base_url + "/v1/chat/completions", content=chunks())
        assert upstream.requests_seen == 0
    for answer in (declared, streamed):
        assert answer.status_code == 413
        assert "over 1000 bytes" in answer.json()["error"]["message"]
        assert answer.json()["error"]["request_id"] == answer.headers["x-request-id"]


def test_a_malformed_request_gets_a_clear_answer_and_the_relay_goes_on(tmp_path: Path) -> None:
    frames = text_stream("openai-chat", ["ok"])
    with (
        FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream,
        relay_to(upstream.base_url, **logs(tmp_path)) as relay,
    ):
        for garbage in (b"NOT HTTP AT ALL\r\n\r\n", b"POST /v1/x HTTP/1.1\r\ncontent-length: zz\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", relay.port), timeout=TIMEOUT) as sock:
                sock.sendall(garbage)
                answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 400"), answer
        assert call("openai-chat", relay.base_url)[1] is None, "the relay still serves"


def test_an_unreachable_upstream(tmp_path: Path) -> None:
    from streamfsm.testing import unused_port

    with relay_to(f"http://127.0.0.1:{unused_port()}", **logs(tmp_path)) as relay:
        body = {**BODIES["openai-chat"], "stream": True}
        answer = httpx.post(relay.base_url + "/v1/chat/completions", json=body)
        _items, exc = call("openai-chat", relay.base_url, "rid-refused")
        wait_lines(tmp_path / "audit.jsonl", 2)
    assert answer.status_code == 502
    assert "could not be reached" in answer.json()["error"]["message"]
    assert isinstance(exc, openai.InternalServerError) and exc.status_code == 502
    records = wait_lines(tmp_path / "errors.jsonl", 2)
    assert {r["outcome"]["edge"] for r in records} == {"connect_failed"}
    assert records[1]["ids"]["context"]["request_id"] == "rid-refused"


def test_no_credential_reaches_any_log_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    token = "admin-token-PLANTED-9f8e7d6c5b4a"
    planted = (SECRET, ANT_SECRET, token, "qs-PLANTED-secret", "body-PLANTED-secret", "cookie-PLANTED")
    frames = text_stream("openai-chat", ["a", "b"])
    steps = (Headers(), *(Send(f) for f in frames[:-1]), Fin())
    body = {**BODIES["openai-chat"], "stream": True, "user": "body-PLANTED-secret", "api_key": SECRET}
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, admin_token=token, **logs(tmp_path)) as relay,
    ):
        for headers in (
            {"authorization": f"Bearer {SECRET}", "cookie": "session=cookie-PLANTED"},
            {"x-api-key": ANT_SECRET, "authorization": f"Bearer {ANT_SECRET}"},
        ):
            with pytest.raises(httpx.RemoteProtocolError):  # the upstream broke: the relay cut the answer
                httpx.post(
                    relay.base_url + "/v1/chat/completions?key=qs-PLANTED-secret", json=body, headers=headers
                )
        with pytest.raises(httpx.RemoteProtocolError):  # not JSON: a run all the same (the path decides)
            httpx.post(relay.base_url + "/v1/chat/completions", content=b"x", headers={"x-api-key": SECRET})
        httpx.get(relay.base_url + "/admin/errors", headers={"authorization": f"Bearer {SECRET}"})
        httpx.get(relay.base_url + "/admin/errors", headers={"authorization": f"Bearer {token}x"})
        wait_lines(tmp_path / "audit.jsonl", 3)
    written = [record.getMessage() for record in caplog.records]
    written += [repr(getattr(record, "streamfsm", "")) for record in caplog.records]
    written += (tmp_path / "audit.jsonl").read_text().splitlines()
    written += (tmp_path / "errors.jsonl").read_text().splitlines()
    assert any("refused" in line for line in written), "the admin refusals were logged"
    for line in written:
        for secret in planted:
            assert secret not in line
    records = run_lines(tmp_path / "audit.jsonl")
    accounts = {record["ids"]["context"]["account"] for record in records}
    assert len(accounts) == 3, "three credentials, three accounts (the first present header names it)"
    assert records[2]["request"]["streaming"] is True  # the event stream said so


def test_the_client_request_id_rides_along_and_a_missing_one_is_made(tmp_path: Path) -> None:
    frames = text_stream("openai-chat", ["a"])
    with (
        FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream,
        relay_to(upstream.base_url, **logs(tmp_path)) as relay,
    ):
        given = httpx.post(
            relay.base_url + "/v1/chat/completions",
            json={**BODIES["openai-chat"], "stream": True},
            headers={"x-request-id": "mine-1"},
        )
        bad = httpx.post(
            relay.base_url + "/v1/chat/completions",
            json={**BODIES["openai-chat"], "stream": True},
            headers={"x-request-id": "has space"},
        )
        records = wait_lines(tmp_path / "audit.jsonl", 2)
    assert given.headers["x-request-id"] == "mine-1"
    assert bad.headers["x-request-id"].startswith("req_")
    assert [r["ids"]["context"]["request_id"] for r in records] == ["mine-1", bad.headers["x-request-id"]]
    assert upstream.requests[0].header("x-request-id") == "mine-1"
    assert "account" not in records[0]["ids"]["context"], "no credential header, no account"
    time.sleep(0)


@pytest.mark.anyio
async def test_a_write_taken_only_after_its_deadline_is_client_write_failed() -> None:
    """The server takes a write, but only after the write deadline passed (its send did not give way to the
    cancellation): the write failed, and the upstream read after it is not cancelled in its stead (that
    was recorded as the relay shutting down, ``local_abort.app``)."""
    import anyio

    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.testing import Sleep

    frames = text_stream("openai-chat", ["one", " two", " three"])
    steps = (Headers(), *(part for frame in frames for part in (Sleep(0.02), Send(frame))), End())
    records: list[RunRecord] = []
    with FaultServerThread(steps) as upstream:
        relay = Relay(
            RelayConfig(
                upstream=upstream.base_url, write_timeout=0.05, stream=StreamConfig(sinks=(records.append,))
            )
        )
        body = json.dumps({"model": "gpt-4o-mini", "messages": [], "stream": True}).encode()
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/chat/completions",
            "raw_path": b"/v1/chat/completions",
            "query_string": b"",
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await anyio.sleep_forever()
            raise AssertionError

        bodies = 0

        async def send(message: Any) -> None:
            nonlocal bodies
            if message["type"] == "http.response.body" and message.get("body"):
                bodies += 1
                if bodies == 1:
                    with anyio.CancelScope(shield=True):
                        await anyio.sleep(0.2)  # taken, but after the 0.05 s deadline

        with anyio.fail_after(10):
            try:
                await relay(scope, receive, send)
            finally:
                await relay.aclose()
    [record] = records
    assert record["relay"]["close"] == "client_write_failed"
    assert record["outcome"]["edge"] == "consumer_error"
