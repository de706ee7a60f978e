"""The record says what the client got: for each way a relayed stream can end (clean, a malformed event
mid-stream, an upstream cut, the client gone, an overload refusal, the relay's own refusals), the record's
``relay`` section is compared with what a raw client (a plain socket on 127.0.0.1) received: the body's
bytes, its events, the terminal event, an in-band error event and the response's clean end.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamfsm import RunRecord
from streamfsm.testing import (
    End,
    FaultServerThread,
    Fin,
    Headers,
    Request,
    Send,
    Stall,
    Status,
    error_event,
    text_stream,
)
from tests.support.relay import RelayThread, relay_to, run_lines, wait_lines
from tests.support.runs import BODIES, validate_record

PATH = "/v1/chat/completions"
BODY = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
FRAMES = text_stream("openai-chat", [f"piece{i} " for i in range(12)])
MID = len(FRAMES) // 2
MALFORMED = b'data: {"choices": [{"delta": {"content": "bro\n\n'
WAIT_S = 15.0


@dataclass
class Received:
    """What a raw client read: the status, the de-chunked body, and whether the body's last chunk came."""

    status: int
    body: bytes
    ended: bool

    def events(self) -> tuple[int, bool]:
        """(consumer events, terminal seen) in the body, as the openai-chat format counts them: a text delta
        per chunk with content, the finish per chunk with a finish reason, the usage (the relay's error event
        is none)."""
        events, terminal = 0, False
        if self.body.startswith(b'{"id"'):  # a whole answer: its text, finish and usage
            try:
                data = json.loads(self.body)
            except ValueError:
                return 0, False
            choice = data["choices"][0]
            return bool(choice["message"]["content"]) + bool(data.get("usage")) + 1, True
        for frame in self.body.split(b"\n\n"):
            if not frame.startswith(b"data: {"):
                continue
            try:
                data = json.loads(frame[len(b"data: ") :])
            except ValueError:
                continue
            events += bool(data.get("usage"))
            for choice in data.get("choices") or ():
                events += bool((choice.get("delta") or {}).get("content"))
                if choice.get("finish_reason"):
                    events, terminal = events + 1, True
        return events, terminal


def request(
    port: int, body: bytes = BODY, *, head: bytes = b"", extra: bytes = b"", stop_after: bytes | None = None
) -> Received:
    """One request over a plain socket; read until the relay closes (or, with ``stop_after``, until the body
    holds it, then close: the client goes away)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(
            b"POST " + PATH.encode() + b" HTTP/1.1\r\nhost: relay\r\ncontent-type: application/json\r\n"
            b"authorization: Bearer sk-truth-0123456789\r\nconnection: close\r\n"
            + extra
            + (head or b"content-length: %d\r\n" % len(body))
            + b"\r\n"
            + body
        )
        raw = b""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if stop_after is not None and stop_after in _dechunk(raw.partition(b"\r\n\r\n")[2])[0]:
                break
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            raw += data
    head_bytes, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head_bytes.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head_bytes.lower():
        body_bytes, ended = _dechunk(rest)
    else:
        body_bytes, ended = rest, True
    return Received(status, body_bytes, ended)


def _dechunk(data: bytes) -> tuple[bytes, bool]:
    """The chunked body's payload, and whether its last (empty) chunk arrived."""
    out = bytearray()
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            return bytes(out), False
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            return bytes(out), rest.startswith(b"\r\n")
        if len(rest) < size + 2:
            out += rest[:size]
            return bytes(out), False
        out += rest[:size]
        data = rest[size + 2 :]


def matches(record: dict[str, Any], got: Received, *, error: str | None = None) -> dict[str, Any]:
    """The record's relay section agrees with what the client got (``error``: the upstream's own error event,
    which the client cannot tell from its other bytes, was among them); the section."""
    validate_record(RunRecord.from_dict(record))
    relay = record["relay"]
    events, terminal = got.events()
    relay_error = b"streamfsm relay:" in got.body
    assert relay["bytes_written"] == len(got.body)
    assert relay["events_sent"] == events
    assert relay["terminal_sent"] is terminal
    assert relay["error_sent"] == ("relay" if relay_error else error)
    assert relay["end_sent"] is got.ended
    return dict(relay)


SCRIPTS: dict[str, tuple[Any, ...]] = {
    "clean": (Headers(), *(Send(f) for f in FRAMES), End()),
    "malformed": (
        Headers(),
        *(Send(f) for f in FRAMES[:MID]),
        Send(MALFORMED),
        *(Send(f) for f in FRAMES[MID:]),
        End(),
    ),
    "upstream_error": (Headers(), *(Send(f) for f in FRAMES[:MID]), Send(error_event("openai-chat")), End()),
    "cut": (Headers(), *(Send(f) for f in FRAMES[:MID]), Fin()),
    "stall": (Headers(), *(Send(f) for f in FRAMES[:MID]), Stall()),
}


@dataclass
class Served:
    relay: RelayThread
    audit: Path
    upstream: FaultServerThread | None = None


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One relay (default settings) in front of one fault server that plays the script a request names."""
    audit = tmp_path_factory.mktemp("truth") / "audit.jsonl"

    def route(request: Request) -> tuple[Any, ...]:
        return SCRIPTS[request.header("x-scenario") or "clean"]

    with FaultServerThread(route) as upstream, relay_to(upstream.base_url, audit_log=str(audit)) as relay:
        yield Served(relay, audit)


def played(served: Served, name: str, **options: Any) -> tuple[dict[str, Any], Received]:
    """Script ``name`` through the shared relay: its record, and what the raw client got."""
    request_id = f"truth-{name}-{uuid.uuid4().hex}"
    extra = f"x-scenario: {name}\r\nx-request-id: {request_id}\r\n".encode()
    got = request(served.relay.port, extra=extra, **options)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        mine = [r for r in run_lines(served.audit) if r["ids"]["context"].get("request_id") == request_id]
        if mine:
            break
        time.sleep(0.02)
    time.sleep(0.05)  # a second record would be here by now
    mine = [r for r in run_lines(served.audit) if r["ids"]["context"].get("request_id") == request_id]
    assert len(mine) == 1, f"{len(mine)} records of {name}"
    return mine[0], got


def test_a_clean_stream(served: Served) -> None:
    record, got = played(served, "clean")
    assert b"data: [DONE]" in got.body and got.ended
    relay = matches(record, got)
    assert (relay["close"], relay["terminal_sent"], relay["end_sent"]) == ("completed", True, True)


def test_a_malformed_event_mid_stream_cuts_the_stream_with_the_relays_error(served: Served) -> None:
    """The run fails at the malformed event: the client gets what came before it, the format's error event
    and a cut (no clean end, no [DONE], nothing that followed), and the record says so."""
    record, got = played(served, "malformed")
    assert record["outcome"]["edge"] == "protocol_violation"
    assert not got.ended and b"[DONE]" not in got.body and b"bro" not in got.body
    assert b"event: error" in got.body
    relay = matches(record, got)
    assert (relay["close"], relay["error_sent"], relay["terminal_sent"]) == ("upstream_error", "relay", False)


def test_the_upstreams_own_error_event_passes_as_it_came(served: Served) -> None:
    """An in-band error of the provider's reaches the client as it came, and the record says so."""
    record, got = played(served, "upstream_error")
    assert record["outcome"]["edge"] == "provider_error_event"
    assert b"server_is_overloaded" in got.body and b"streamfsm relay:" not in got.body
    relay = matches(record, got, error="upstream")
    assert (relay["close"], relay["error_sent"], relay["end_sent"]) == ("upstream_error", "upstream", True)


def test_an_upstream_cut_mid_stream(served: Served) -> None:
    record, got = played(served, "cut")
    assert not got.ended and b"event: error" in got.body
    relay = matches(record, got)
    assert (relay["close"], relay["error_sent"]) == ("upstream_premature_close", "relay")


def test_the_client_gone_mid_stream(served: Served) -> None:
    """The client reads the events sent before the upstream stalls, then leaves: the record counts those."""
    last = FRAMES[MID - 1].rstrip(b"\n")
    record, got = played(served, "stall", stop_after=last)
    assert last in got.body and not got.ended
    relay_section = matches(record, got)
    assert relay_section["close"] == "client_abort"


def test_an_overload_refusal(tmp_path: Path) -> None:
    """One stream holds the only place (``max_concurrent=1``): the next request gets the 503, recorded with
    the answer's bytes and its clean end."""
    audit = tmp_path / "audit.jsonl"
    steps = (Headers(), Send(FRAMES[0]), Stall())
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit), max_concurrent=1) as relay,
    ):
        with socket.create_connection(("127.0.0.1", relay.port), timeout=WAIT_S) as holder:
            holder.sendall(
                b"POST %s HTTP/1.1\r\nhost: relay\r\ncontent-length: %d\r\n\r\n%s"
                % (PATH.encode(), len(BODY), BODY)
            )
            deadline = time.monotonic() + WAIT_S
            while not upstream.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            got = request(relay.port)
        records = wait_lines(audit, 2)
    refused = next(r for r in records if r["relay"]["close"] == "overloaded")
    assert got.status == 503 and b"overloaded" in got.body
    relay = matches(refused, got)
    assert (relay["limit"], relay["end_sent"]) == ("max_concurrent", True)


def test_an_unreachable_upstream_is_answered_502_and_the_record_counts_that_answer(tmp_path: Path) -> None:
    """Nobody listens upstream: the run fails before any response, and the relay's 502 (a JSON body, a clean
    end) is what the client got; the record says so."""
    audit = tmp_path / "audit.jsonl"
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with relay_to(f"http://127.0.0.1:{port}/v1", audit_log=str(audit)) as relay:
        got = request(relay.port)
        [record] = wait_lines(audit, 1)
    assert got.status == 502 and got.ended
    assert record["relay"]["close"] == "upstream_unreachable"
    relay_section = matches(record, got)
    assert relay_section["bytes_written"] > 0


def _answer(size: int) -> bytes:
    head = b'{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":'
    head += b'{"role":"assistant","content":"'
    tail = b'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


JSON_HEAD = (("content-type", "application/json"),)
REQUEST = json.dumps(BODIES["openai-chat"]).encode()
WHOLE = _answer(150_000)
LARGE = _answer(500_000)
ANSWERS: dict[str, tuple[Any, ...]] = {
    "whole": (Headers(headers=JSON_HEAD), Send(WHOLE[:100_000]), Send(WHOLE[100_000:]), End()),
    "declared": (Status(200, JSON_HEAD, LARGE),),
    "chunked": (
        Headers(headers=JSON_HEAD),
        *(Send(LARGE[i : i + 50_000]) for i in range(0, 500_000, 50_000)),
        End(),
    ),
}


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A relay with small bounds: 1,000-byte request bodies, 0.5 s for one, 200,000-byte answers."""
    audit = tmp_path_factory.mktemp("strict") / "audit.jsonl"
    options = {"max_body_bytes": 1000, "body_timeout": 0.5, "max_answer_bytes": 200_000}

    def route(request: Request) -> tuple[Any, ...]:
        return ANSWERS[request.header("x-scenario") or "whole"]

    with (
        FaultServerThread(route) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit), **options) as relay,
    ):
        yield Served(relay, audit, upstream)


@pytest.mark.parametrize(
    ("status", "limit", "body", "head"),
    [
        (413, "max_body_bytes", b"{}", b"content-length: 100000\r\n"),
        (408, "body_timeout", b"{}", b"content-length: 500\r\n"),
        (400, "invalid_request", b"0\r\n\r\n", b"content-length: 5\r\ntransfer-encoding: chunked\r\n"),
    ],
)
def test_each_refusal_on_an_llm_path_is_recorded(
    strict: Served, status: int, limit: str, body: bytes, head: bytes
) -> None:
    """413, 408 and 400 on an LLM path leave a run closed ``refused``, naming the rule, as a 503 does."""
    assert strict.upstream is not None
    seen = strict.upstream.requests_seen
    record, got = played(strict, "refused", body=body, head=head)
    assert got.status == status and strict.upstream.requests_seen == seen
    relay_section = matches(record, got)
    assert (relay_section["close"], relay_section["limit"]) == ("refused", limit)
    assert record["outcome"]["summary_key"] == "local_abort.app"
    assert record["ids"]["context"]["route"] == PATH


def test_a_non_streaming_answer_under_the_limit_passes_whole(strict: Served) -> None:
    record, got = played(strict, "whole", body=REQUEST)
    assert got.body == WHOLE and got.ended
    relay_section = matches(record, got)
    assert relay_section["close"] == "completed"


@pytest.mark.parametrize("name", ["declared", "chunked"])
def test_a_non_streaming_answer_over_max_answer_bytes_is_refused_and_recorded(
    strict: Served, name: str
) -> None:
    """Declared too long (``Content-Length``): a 502 before it is read; too long once it passes the limit
    (chunked): a 502 too, since a whole answer is held until its end and nothing of it went yet. Either way
    the run closes ``refused`` naming the limit."""
    record, got = played(strict, name, body=REQUEST)
    relay_section = matches(record, got)
    assert (relay_section["close"], relay_section["limit"]) == ("refused", "max_answer_bytes")
    assert record["outcome"]["summary_key"] == "local_abort.app"
    assert got.status == 502 and b"max_answer_bytes" in got.body and got.ended
