"""Attempt chains through the relay (the real uvicorn server on 127.0.0.1, the fault server upstream): a
chain joins only what the client's own headers call a retry, of one account and one client; many identical
independent requests from two API keys stay independent runs.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from relaysupport import relay_to, wait_lines
from runsupport import BODIES

from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Headers, Send, Status
from streamfsm.testing._server import FaultServerThread, Request

openai = pytest.importorskip("openai")

KEYS = ("sk-chain-key-one-0123456789abcdef", "sk-chain-key-two-0123456789abcdef")
PATH = "/v1/chat/completions"
TIMEOUT = 20.0
OK = (Headers(), *(Send(f) for f in text_stream("openai-chat", ["Hi"])), End())
FAILED = (Status(500, (("retry-after-ms", "1"),), b'{"error": {"message": "boom", "type": "server_error"}}'),)


def _records(path: Path, count: int) -> list[dict[str, Any]]:
    return sorted(wait_lines(path, count), key=lambda record: record["started_at"])


def test_the_openai_sdks_own_retry_joins_the_first_attempts_chain(tmp_path: Path) -> None:
    """The SDK's first request fails (500) and its retry (``x-stainless-retry-count: 1``) succeeds: two runs,
    one chain; the next call, with the same body, starts a chain of its own."""

    def route(request: Request) -> Any:
        return FAILED if request.header("x-stainless-retry-count") == "0" else OK

    audit = tmp_path / "audit.jsonl"
    with FaultServerThread(route) as upstream, relay_to(upstream.base_url, audit_log=str(audit)) as relay:
        client = openai.OpenAI(
            base_url=f"{relay.base_url}/v1", api_key=KEYS[0], max_retries=2, timeout=TIMEOUT
        )
        try:
            for _ in range(2):
                stream = client.chat.completions.create(**BODIES["openai-chat"], stream=True)
                assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Hi"
        finally:
            client.close()
        first, retry, again, again_retry = _records(audit, 4)
    assert first["outcome"]["class"] != "completed" and retry["outcome"]["class"] == "completed"
    assert (retry["ids"]["trace_id"], retry["ids"]["attempt"]) == (first["ids"]["trace_id"], 2)
    assert [link["decision"] for link in retry["attempts"]] == ["sdk_retry"]
    assert retry["attempts"][0]["run_id"] == first["ids"]["run_id"]
    # The second call is no retry of the first one's chain, though its body is the same.
    assert again["ids"]["attempt"] == 1 and again["attempts"] == []
    assert again["ids"]["trace_id"] not in (first["ids"]["trace_id"],)
    assert (again_retry["ids"]["trace_id"], again_retry["ids"]["attempt"]) == (again["ids"]["trace_id"], 2)


def test_identical_requests_from_two_keys_are_independent_runs(tmp_path: Path) -> None:
    """Many identical requests, from two API keys, some failing: no request names a retry, so none is
    chained, and no trace id spans two accounts."""
    failing = iter(range(10**6))

    def route(request: Request) -> Any:
        return FAILED if next(failing) % 3 == 0 else OK

    body = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
    audit = tmp_path / "audit.jsonl"
    count = 40
    with FaultServerThread(route) as upstream, relay_to(upstream.base_url, audit_log=str(audit)) as relay:

        def send(index: int) -> int:
            headers = {
                "authorization": f"Bearer {KEYS[index % 2]}",
                "content-type": "application/json",
                "x-stainless-retry-count": "0",  # what the openai SDK sends on a first request
            }
            answer = httpx.post(relay.base_url + PATH, content=body, headers=headers, timeout=TIMEOUT)
            return answer.status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(send, range(count)))
        records = _records(audit, count)
    assert sorted(set(statuses)) == [200, 500]
    assert all(record["ids"]["attempt"] == 1 and record["attempts"] == [] for record in records)
    accounts: dict[str, set[str]] = {}
    for record in records:
        accounts.setdefault(record["ids"]["trace_id"], set()).add(record["ids"]["context"]["account"])
    assert len(accounts) == count
    assert len({record["ids"]["context"]["account"] for record in records}) == 2


def test_an_explicit_attempt_header_chains_within_one_account_only(tmp_path: Path) -> None:
    """``x-streamfsm-attempt: 2`` after a failure joins that account's chain; the same body with the header
    from the other key does not join it."""
    answers = iter([FAILED, OK, OK])
    audit = tmp_path / "audit.jsonl"
    body = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
    with (
        FaultServerThread(lambda request: next(answers)) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit)) as relay,
    ):
        for key, attempt in ((KEYS[0], "1"), (KEYS[1], "2"), (KEYS[0], "2")):
            headers = {"authorization": f"Bearer {key}", "x-streamfsm-attempt": attempt}
            httpx.post(relay.base_url + PATH, content=body, headers=headers, timeout=TIMEOUT)
        first, other, retry = _records(audit, 3)
    assert other["ids"]["attempt"] == 1 and other["ids"]["trace_id"] != first["ids"]["trace_id"]
    assert (retry["ids"]["trace_id"], retry["ids"]["attempt"]) == (first["ids"]["trace_id"], 2)
    assert [link["decision"] for link in retry["attempts"]] == ["resent"]
