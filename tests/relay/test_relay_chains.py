"""Attempt chains through the relay (the real uvicorn server on 127.0.0.1, the fault server upstream): a
chain joins only what the client's own headers call a retry, of one account and one client; many identical
independent requests from two API keys stay independent runs.
"""

from __future__ import annotations

import functools
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.testing import End, FaultServerThread, Headers, Request, Send, Status, text_stream
from tests.support.relay import relay_to, wait_lines
from tests.support.runs import BODIES

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

KEYS = ("sk-chain-key-one-0123456789abcdef", "sk-chain-key-two-0123456789abcdef")
PATH = "/v1/chat/completions"
TIMEOUT = 20.0
OK = (Headers(), *(Send(f) for f in text_stream("openai-chat", ["Hi"])), End())
FAILED = (Status(500, (("retry-after-ms", "1"),), b'{"error": {"message": "boom", "type": "server_error"}}'),)


def _records(path: Path, count: int) -> list[dict[str, Any]]:
    return sorted(wait_lines(path, count), key=lambda record: record["started_at"])


def _calls(sdk: str, base_url: str) -> None:
    """Two streaming calls with the same body through the real SDK, with its own retries."""
    if sdk == "anthropic":
        client: Any = anthropic.Anthropic(base_url=base_url, api_key=KEYS[0], max_retries=2, timeout=TIMEOUT)
        body = {**BODIES["anthropic"], "model": "claude-test-model"}
    else:
        client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=KEYS[0], max_retries=2, timeout=TIMEOUT)
    try:
        for _ in range(2):
            if sdk == "anthropic":
                with client.messages.stream(**body) as stream:
                    assert stream.get_final_text() == "Hi"
            else:
                chunks = client.chat.completions.create(**BODIES["openai-chat"], stream=True)
                assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hi"
    finally:
        client.close()


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_the_sdks_own_retry_joins_the_first_attempts_chain(tmp_path: Path, sdk: str) -> None:
    """The SDK's first request fails (500) and its retry (``x-stainless-retry-count: 1``) succeeds: two runs,
    one chain; the next call, with the same body, starts a chain of its own."""
    fmt = "anthropic" if sdk == "anthropic" else "openai-chat"
    ok = (Headers(), *(Send(f) for f in text_stream(fmt, ["Hi"])), End())

    def route(request: Request) -> Any:
        return FAILED if request.header("x-stainless-retry-count") == "0" else ok

    audit = tmp_path / "audit.jsonl"
    with FaultServerThread(route) as upstream, relay_to(upstream.base_url, audit_log=str(audit)) as relay:
        _calls(sdk, relay.base_url)
        first, retry, again, again_retry = _records(audit, 4)
    assert first["outcome"]["class"] != "completed" and retry["outcome"]["class"] == "completed"
    assert (retry["ids"]["trace_id"], retry["ids"]["attempt"]) == (first["ids"]["trace_id"], 2)
    assert [link["decision"] for link in retry["attempts"]] == ["sdk_retry"]
    assert retry["attempts"][0]["run_id"] == first["ids"]["run_id"]
    # The second call is no retry of the first one's chain, though its body is the same.
    assert again["ids"]["attempt"] == 1 and again["attempts"] == []
    assert again["ids"]["trace_id"] != first["ids"]["trace_id"]
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


HEADER_VALUES = st.one_of(st.none(), st.sampled_from(["0", "1", "2", "7", "-1", "x", "", "99999"]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([b"acct_a\n127.0.0.1", b"acct_b\n127.0.0.1", b"acct_a\n10.0.0.2"]),
            st.sampled_from([b'{"model":"m","stream":true}', b'{"model":"n","stream":true}']),
            HEADER_VALUES,  # x-stainless-retry-count
            HEADER_VALUES,  # x-streamfsm-attempt
            st.sampled_from([None, "attempt=1; max=3", "attempt=2; max=3", "ttl=1; attempt=3"]),
            st.booleans(),  # the run fails
        ),
        max_size=12,
    )
)
def test_a_chain_never_joins_two_clients_nor_a_request_that_names_no_retry(requests: list[Any]) -> None:
    """Through the tap's chains as a relay drives them: every request's run id and client are kept; a run
    with attempt above 1 said it was a retry, and its chain holds runs of its client only."""
    from streamfsm.runtime import StreamConfig
    from streamfsm.tap._context import relaying
    from streamfsm.tap._run import SyncTapRun
    from streamfsm.tap._transport import _Chains

    chains = _Chains()
    client_of: dict[str, bytes] = {}
    for client, body, count, attempt, aws, fails in requests:
        headers = {
            name: value
            for name, value in (
                ("x-stainless-retry-count", count),
                ("x-streamfsm-attempt", attempt),
                ("amz-sdk-request", aws),
                ("amz-sdk-invocation-id", "inv-1" if aws else None),
            )
            if value is not None
        }
        request = httpx.Request("POST", "http://upstream/v1/chat/completions", headers=headers, content=body)
        with relaying(client):
            ids, key = chains.ids(request, body)
        run = SyncTapRun("openai-chat", body={}, url=str(request.url), config=StreamConfig(sinks=()), ids=ids)
        client_of[run.run_id] = client
        run.begin()
        if fails:
            run.connect_failed(httpx.ConnectError("refused"))
        else:
            run.connected(200, {"content-type": "text/event-stream"})
            for frame in text_stream("openai-chat", ["Hi"]):
                run.chunk(frame)
            run.chunk(None)
        run.end(functools.partial(chains.ended, key))
        said = count not in (None, "0", "-1", "x", "") or attempt not in (None, "0", "1", "-1", "x", "")
        said = said or (aws is not None and "attempt=1;" not in aws)
        if ids.attempt > 1:
            assert said
            assert {client_of[link.run_id] for link in ids.attempts} == {client}
