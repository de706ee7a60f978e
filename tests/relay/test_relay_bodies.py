"""The relay's bounds on what it holds at once (issue 25 item 6), on the real uvicorn over loopback: the
request bodies in flight stay within one budget whatever the clients send, and a request beyond it, or beyond
the requests relayed at once, gets 503 with ``Retry-After`` and the relay's JSON error, never an upstream
request. The resident memory under 20 concurrent 30 MiB bodies is measured by ``benchmarks/relay_bodies.py``.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.relay import RelayConfig
from streamfsm.relay._limits import Budget, Held
from streamfsm.relay._pool import ShardedPool
from streamfsm.runtime import StreamConfig
from streamfsm.testing import BODIES, End, FaultServerThread, Headers, Send, Sleep, text_stream
from tests.support.relay import relay_to, wait_lines

MIB = 1 << 20
TIMEOUT = 30.0
PATH = "/v1/upload"  # no LLM format: the relay forwards it without a run


def post_all(url: str, bodies: list[bytes | Any]) -> list[httpx.Response | BaseException]:
    """Each body POSTed at once from its own thread; the answers (or what the client raised) in order."""
    answers: list[httpx.Response | BaseException] = [RuntimeError("no answer")] * len(bodies)

    def one(index: int, body: Any) -> None:
        try:
            with httpx.Client(timeout=TIMEOUT) as client:
                answers[index] = client.post(url, content=body)
        except httpx.HTTPError as exc:
            answers[index] = exc

    threads = [threading.Thread(target=one, args=(i, body)) for i, body in enumerate(bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT + 5)
    return answers


def busy(answer: httpx.Response | BaseException) -> bool:
    if not isinstance(answer, httpx.Response) or answer.status_code != 503:
        return False
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["error"]["type"] == "overloaded"
    assert answer.headers["x-streamfsm-request-id"] == answer.json()["error"]["request_id"]
    return True


def settles(check: Any, timeout: float = 5.0) -> bool:
    """Whether ``check()`` holds within ``timeout`` (the handler ends just after the client's answer)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


HELD = (Headers(), Send(b"held"), Sleep(1.5), End())


def test_bodies_beyond_the_budget_are_refused_503_and_the_budget_is_never_passed() -> None:
    with (
        FaultServerThread(HELD, max_body=8 * MIB) as upstream,
        relay_to(upstream.base_url, max_body_bytes=2 * MIB, body_budget_bytes=3 * MIB) as relay,
    ):
        peak = 0
        stop = threading.Event()
        bodies = relay.relay._bodies

        def watch() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, bodies.used)
                stop.wait(0.001)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            answers = post_all(relay.base_url + PATH, [b"x" * (2 * MIB - 10)] * 6)
        finally:
            stop.set()
            watcher.join(5)
        assert settles(lambda: bodies.used == 0), "every exchange gives its part of the budget back"
    ok = [a for a in answers if isinstance(a, httpx.Response) and a.status_code == 200]
    refused = [a for a in answers if busy(a)]
    assert len(ok) + len(refused) == 6, answers
    assert ok and refused
    assert upstream.requests_seen == len(ok), "a refused body never goes upstream"
    assert 0 < peak <= 3 * MIB


def test_chunked_bodies_are_counted_as_they_arrive() -> None:
    def chunks() -> Any:
        for _ in range(16):
            yield b"y" * (128 * 1024)

    with (
        FaultServerThread(HELD, max_body=8 * MIB) as upstream,
        relay_to(upstream.base_url, max_body_bytes=2 * MIB, body_budget_bytes=3 * MIB) as relay,
    ):
        answers = post_all(relay.base_url + PATH, [chunks() for _ in range(4)])
        assert settles(lambda: relay.relay._bodies.used == 0)
    outcomes = [a.status_code if isinstance(a, httpx.Response) else type(a).__name__ for a in answers]
    assert outcomes.count(200) >= 1 and outcomes.count(200) == upstream.requests_seen
    assert outcomes.count(200) + sum(busy(a) for a in answers) + outcomes.count("RemoteProtocolError") == 4


def test_a_request_waits_for_room_rather_than_fail_at_once() -> None:
    steps = (Headers(), Send(b"held"), Sleep(0.5), End())
    with (
        FaultServerThread(steps, max_body=8 * MIB) as upstream,
        relay_to(upstream.base_url, max_body_bytes=2 * MIB, body_budget_bytes=2 * MIB) as relay,
    ):
        answers = post_all(relay.base_url + PATH, [b"z" * MIB] * 3)
    assert [a.status_code for a in answers if isinstance(a, httpx.Response)] == [200, 200, 200]


def test_requests_beyond_max_concurrent_are_refused_503() -> None:
    steps = (Headers(), Send(b"held"), Sleep(1.5), End())
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, max_concurrent=2) as relay,
    ):
        answers = post_all(relay.base_url + PATH, [b"{}"] * 5)
        assert settles(lambda: relay.relay._in_flight == 0)
    assert sum(isinstance(a, httpx.Response) and a.status_code == 200 for a in answers) == 2
    assert sum(busy(a) for a in answers) == 3
    assert upstream.requests_seen == 2


def test_overload_is_answered_503_before_upstream_and_a_pool_wait_is_not_blamed_on_it(tmp_path: Path) -> None:
    """The relay is the bottleneck (one upstream connection, two requests admitted): beyond ``max_concurrent``
    a request gets 503 and never goes upstream; an admitted one that waits for the pooled connection longer
    than ``connect_timeout`` still completes (the watchdog counts from when the request leaves), and no
    record blames the upstream: each refused request is recorded, closed ``overloaded`` before anything
    went upstream, with the limit that refused it; no stream is cut mid-way."""
    frames = text_stream("openai-chat", ["a", "b", "c", "d"])
    steps = (Headers(), *(s for f in frames for s in (Send(f), Sleep(0.2))), End())
    body = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
    audit = tmp_path / "audit.jsonl"
    options: dict[str, Any] = {"max_concurrent": 2, "max_connections": 1, "audit_log": str(audit)}
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, stream=StreamConfig(connect_timeout=0.5), **options) as relay,
    ):
        answers = post_all(relay.base_url + "/v1/chat/completions", [body] * 5)
        assert settles(lambda: relay.relay._in_flight == 0)
    whole = [a for a in answers if isinstance(a, httpx.Response) and a.status_code == 200]
    assert len(whole) == 2 and all(a.text.rstrip().endswith("data: [DONE]") for a in whole)
    assert sum(busy(a) for a in answers) == 3
    assert upstream.requests_seen == 2
    records = wait_lines(audit, 5)
    served = [r for r in records if r["relay"]["close"] != "overloaded"]
    assert [(r["outcome"]["class"], r["watchdog"]["fired"], r["relay"]["close"]) for r in served] == [
        ("completed", None, "completed")
    ] * 2
    refused = [r for r in records if r["relay"]["close"] == "overloaded"]
    refusal = len(next(a for a in answers if busy(a)).content)  # the record counts the 503's body
    assert [
        (r["relay"]["limit"], r["relay"]["bytes_written"], r["transport"]["request_sent"]) for r in refused
    ] == [("max_concurrent", refusal, False)] * 3
    assert {r["ids"]["context"]["request_id"] for r in refused} == {
        a.json()["error"]["request_id"] for a in answers if busy(a)
    }


def test_a_refusal_for_the_body_budget_is_recorded_with_its_limit(tmp_path: Path) -> None:
    frames = text_stream("openai-chat", ["a", "b"])
    steps = (Headers(), *(s for f in frames for s in (Send(f), Sleep(0.5))), End())
    body = json.dumps({**BODIES["openai-chat"], "stream": True, "pad": "p" * 200_000}).encode()
    audit = tmp_path / "audit.jsonl"
    options: dict[str, Any] = {"max_body_bytes": 256 * 1024, "body_budget_bytes": 300 * 1024}
    with (
        FaultServerThread(steps, max_body=8 * MIB) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit), body_timeout=2.0, **options) as relay,
    ):
        answers = post_all(relay.base_url + "/v1/chat/completions", [body] * 4)
        assert settles(lambda: relay.relay._in_flight == 0)
    refused = sum(busy(a) for a in answers)
    served = sum(isinstance(a, httpx.Response) and a.status_code == 200 for a in answers)
    assert refused and served + refused == 4 and upstream.requests_seen == served
    records = wait_lines(audit, 4)
    closes = sorted((r["relay"]["close"], r["relay"].get("limit")) for r in records)
    assert closes == sorted([("completed", None)] * served + [("overloaded", "body_budget_bytes")] * refused)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_concurrent": 0}, "max_concurrent"),
        ({"body_budget_bytes": -1}, "body_budget_bytes"),
        ({"max_body_bytes": 4 * MIB, "body_budget_bytes": 2 * MIB}, "at least max_body_bytes"),
    ],
)
def test_limits_are_checked(options: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        RelayConfig(upstream="http://127.0.0.1:9", **options)


# -- the budget, as a property: any mix of exchanges taking and giving, on both backends --------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None)
@given(
    limit=st.integers(1, 64),
    exchanges=st.lists(
        st.tuples(
            st.lists(st.integers(1, 64), min_size=1, max_size=4),
            st.integers(0, 3),
            st.none() | st.integers(0, 6),  # cancelled (a client gone, a shutdown) after so many ticks
        ),
        max_size=12,
    ),
)
def test_the_budget_is_never_passed_and_always_given_back(
    backend: str, limit: int, exchanges: list[tuple[list[int], int, int | None]]
) -> None:
    if backend == "trio":
        pytest.importorskip("trio")
    budget = Budget(limit)
    peak = 0

    async def exchange(sizes: list[int], hold_ticks: int) -> None:
        nonlocal peak
        held = Held(budget)
        try:
            total = 0
            for size in sizes:  # a body arriving in parts
                total += size
                if not await held.grow(total, anyio.current_time() + 0.05):
                    assert total > limit or budget.used + (total - held.amount) > limit
                    return
                peak = max(peak, budget.used)
                assert budget.used <= limit
            for _ in range(hold_ticks):
                await anyio.sleep(0)
        finally:
            held.release()

    async def cancelled(sizes: list[int], hold_ticks: int, after: int | None) -> None:
        async with anyio.create_task_group() as inner:
            if after is not None:

                async def cancel() -> None:
                    for _ in range(after):
                        await anyio.sleep(0)
                    inner.cancel_scope.cancel()

                inner.start_soon(cancel)
            await exchange(sizes, hold_ticks)
            inner.cancel_scope.cancel()

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for sizes, ticks, after in exchanges:
                tasks.start_soon(cancelled, sizes, ticks, after)

    anyio.run(main, backend=backend)
    assert budget.used == 0
    assert peak <= limit


# -- the upstream pools: the configured limits are the totals ------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    max_connections=st.none() | st.integers(1, 5000),
    keepalive=st.integers(0, 500),
    shards=st.integers(1, 64),
)
def test_the_pools_limits_add_up_to_the_configured_totals(
    max_connections: int | None, keepalive: int, shards: int
) -> None:
    pool = ShardedPool(max_connections=max_connections, max_keepalive_connections=keepalive, shards=shards)
    limits = [inner._pool._max_connections for inner in pool.pools]
    kept = [inner._pool._max_keepalive_connections for inner in pool.pools]
    if max_connections is None:
        assert len(pool.pools) == shards
    else:
        assert sum(limits) == max_connections and min(limits) >= 1
        # Split only where each pool holds many: a request waits for its own pool's room.
        assert len(pool.pools) == 1 or min(limits) >= 64
    assert sum(min(k, c) for k, c in zip(kept, limits, strict=True)) == min(
        keepalive, max_connections or keepalive
    )


def test_the_pools_share_one_tls_context_set_as_each_would_set_its_own() -> None:
    """One TLS context for all pools (each building its own was most of a relay's start), verifying with
    certifi's CAs and nothing from the environment, as a pool alone would."""
    contexts = {
        id(inner._pool._ssl_context): inner._pool._ssl_context
        for inner in ShardedPool(max_connections=None, max_keepalive_connections=100).pools
    }
    assert len(contexts) == 1
    (shared,) = contexts.values()
    alone = httpx.AsyncHTTPTransport(trust_env=False)._pool._ssl_context
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 0
    assert shared.cert_store_stats() == alone.cert_store_stats()
    assert (shared.options, shared.verify_flags, shared.minimum_version) == (
        alone.options,
        alone.verify_flags,
        alone.minimum_version,
    )


def test_a_refused_request_is_recorded_only_when_it_is_an_llm_call(tmp_path: Path) -> None:
    """Under a format's path, only what the tap would run is recorded when refused (a background answer's
    poll, a cancel, a token count are no LLM call: answered 503, never a run)."""
    frames = text_stream("openai-chat", ["a", "b"])
    steps = (Headers(), *(s for f in frames for s in (Send(f), Sleep(0.5))), End())
    body = json.dumps({**BODIES["openai-chat"], "stream": True}).encode()
    audit = tmp_path / "audit.jsonl"
    with (
        FaultServerThread(steps) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit), max_concurrent=1) as relay,
    ):
        held = threading.Thread(
            target=lambda: httpx.post(relay.base_url + "/v1/chat/completions", content=body, timeout=TIMEOUT)
        )
        held.start()
        assert settles(lambda: relay.relay._in_flight == 1)
        with httpx.Client(base_url=relay.base_url, timeout=TIMEOUT) as client:
            refused = [
                client.get("/v1/responses/resp_1"),
                client.post("/v1/responses/resp_1/cancel", content=b"{}"),
                client.post("/v1/responses/input_tokens", content=b"{}"),
                client.post("/v1/responses", content=b"{}"),  # an LLM call: recorded
            ]
        held.join(TIMEOUT)
        assert settles(lambda: relay.relay._in_flight == 0)
    assert [answer.status_code for answer in refused] == [503] * 4
    records = wait_lines(audit, 2)
    assert sorted(r["relay"]["close"] for r in records) == ["completed", "overloaded"]
