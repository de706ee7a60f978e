"""retrying() over routes, against real fault servers on 127.0.0.1: each route a server of its own, so what
each route was asked is its own request log."""

from __future__ import annotations

import time
from typing import Any

import pytest

from streamfsm import (
    ContinueStyle,
    NoRoute,
    Offer,
    Recovery,
    RetryPolicy,
    Route,
    StreamConfig,
    StreamFailed,
    retrying,
    wrap,
)
from streamfsm.runtime import Breakers, BreakerState, Continued, Restarted, TextDelta
from streamfsm.testing import (
    FaultServer,
    FaultServerThread,
    Fin,
    Headers,
    Send,
    Sleep,
    Stall,
    Status,
    text_stream,
)
from tests.support.retry import BUSY, FAST, JSON, Spies, cut_through, ok_script, per_attempt, validate_record

pytestmark = pytest.mark.anyio


def status(code: int, body: bytes, *headers: tuple[str, str]) -> Status:
    return Status(code, (JSON, *headers), body)


QUOTA = status(429, b'{"error": {"type": "insufficient_quota", "code": "insufficient_quota"}}')
OVERFLOW = status(400, b'{"error": {"type": "invalid_request_error", "code": "context_length_exceeded"}}')
POLICY_REJECTED = status(
    400, b'{"error": {"type": "invalid_request_error", "code": "content_policy_violation"}}'
)
LIMITED = status(
    429, b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}', ("retry-after-ms", "60")
)
SILENT = (Stall(),)  # accepts the connection, says nothing


def policy(attempts: int = 6, total_s: float = 30.0) -> RetryPolicy:
    return RetryPolicy(attempts, total_s, **FAST)


def text(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def fresh() -> Breakers:
    return Breakers(threshold=3, cool_down_s=0.3, min_spacing_s=0.0)


async def test_a_failing_route_moves_on_after_its_tries_and_the_next_answers() -> None:
    async with (
        FaultServer(per_attempt([(BUSY,)])) as down,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        routes = [Route("primary", Spies(down.base_url), tries=2), Route("fallback", Spies(up.base_url))]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
    assert down.requests_seen == 2 and up.requests_seen == 1
    assert "B hello" in text(events)
    first, second, last = run.attempts
    assert (first.route, second.route, last.route) == ("primary", "primary", "fallback")
    assert second.delay_reason == "next_route" and second.delay_s == 0.0
    record = run.record
    assert record is not None
    validate_record(record)
    assert record.to_dict()["route"] == {"name": "fallback", "breaker": "closed", "tried": ["primary"]}
    assert record.to_dict()["tokens"], "usage is the answering attempt's"


@pytest.mark.parametrize(
    ("script", "key"),
    [((Headers(), *SILENT), "watchdog.first_token_timeout"), (SILENT, "watchdog.connect_timeout")],
    ids=["no-first-byte", "no-headers"],
)
async def test_a_silent_route_is_never_asked_twice(script: tuple[Any, ...], key: str) -> None:
    async with (
        FaultServer(per_attempt([script])) as quiet,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        config = StreamConfig(first_token_timeout=0.2, connect_timeout=0.5)
        routes = [
            Route("quiet", Spies(quiet.base_url, config=config), tries=3),
            Route("fallback", Spies(up.base_url)),
        ]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
    assert quiet.requests_seen == 1 and up.requests_seen == 1
    assert "B hello" in text(events)
    assert run.attempts[0].summary_key == key


async def test_a_first_token_later_than_the_routes_deadline_moves_on() -> None:
    slow = (Headers(), Stall())
    async with (
        FaultServer(per_attempt([slow])) as late,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        routes = [
            Route("slow", Spies(late.base_url), first_token_s=0.2),
            Route("fallback", Spies(up.base_url)),
        ]
        started = time.monotonic()
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
        took = time.monotonic() - started
    assert "B hello" in text(events)
    assert late.requests_seen == 1 and took < 4.0
    assert run.records[0].to_dict()["watchdog"]["first_token_timeout_s"] == 0.2


async def test_a_quota_failure_goes_only_to_another_account() -> None:
    async with (
        FaultServer(per_attempt([(QUOTA,)])) as broke,
        FaultServer(per_attempt([(QUOTA,)])) as same_account,
        FaultServer(per_attempt([ok_script("openai-chat", "C")])) as other,
    ):
        routes = [
            Route("a1", Spies(broke.base_url), account="acme"),
            Route("a2", Spies(same_account.base_url), account="acme"),
            Route("b1", Spies(other.base_url), account="globex"),
        ]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
    assert (broke.requests_seen, same_account.requests_seen, other.requests_seen) == (1, 0, 1)
    assert "C hello" in text(events)
    assert run.attempts[0].verdict == "no_retry" and run.attempts[0].decision == "auto_retry"


async def test_a_context_overflow_goes_to_a_larger_window_else_stops() -> None:
    async with (
        FaultServer(per_attempt([(OVERFLOW,)])) as small,
        FaultServer(per_attempt([ok_script("openai-chat", "L")])) as large,
    ):
        routes = [
            Route("small", Spies(small.base_url), context_window=8_000),
            Route("same-size", Spies(large.base_url), context_window=8_000),
        ]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            with pytest.raises(StreamFailed) as failed:
                [event async for event in run]
        assert large.requests_seen == 0
        assert failed.value.diagnosis.summary_key == "provider_error.context_overflow"
        routes.append(Route("large", Spies(large.base_url), context_window=128_000))
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
    assert "L hello" in text(events)
    assert [link.route for link in run.attempts] == ["small", "large"]


async def test_a_content_policy_rejection_goes_nowhere() -> None:
    async with (
        FaultServer(per_attempt([(POLICY_REJECTED,)])) as strict,
        FaultServer(per_attempt([ok_script("openai-chat", "X")])) as lax,
    ):
        routes = [Route("strict", Spies(strict.base_url)), Route("lax", Spies(lax.base_url))]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            with pytest.raises(StreamFailed) as failed:
                [event async for event in run]
    assert lax.requests_seen == 0
    assert failed.value.diagnosis.verdict.value == "no_retry"


async def test_a_short_stated_wait_is_honoured_on_the_same_route() -> None:
    async with (
        FaultServer(per_attempt([(LIMITED,), ok_script("openai-chat", "A")])) as limited,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as other,
    ):
        routes = [Route("limited", Spies(limited.base_url)), Route("other", Spies(other.base_url))]
        started = time.monotonic()
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
        waited = time.monotonic() - started
    assert "A hello" in text(events) and other.requests_seen == 0
    assert waited >= 0.055
    assert run.attempts[0].delay_reason == "retry_after"


async def test_the_breaker_opens_probes_and_closes_across_an_outage() -> None:
    """A provider down for its first 8 requests: chains move to the fallback; once the breaker opens the
    primary is not asked, then one probe after the cool-down, and it closes when the provider is back."""
    outage = 8
    async with (
        FaultServer(per_attempt([*([(BUSY,)] * outage), ok_script("openai-chat", "A")])) as flaky,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        breakers = Breakers(threshold=3, cool_down_s=0.2, min_spacing_s=0.0)
        answered = []
        for _ in range(80):
            routes = [Route("primary", Spies(flaky.base_url), tries=1), Route("fallback", Spies(up.base_url))]
            async with retrying(policy(), routes, breakers=breakers) as run:
                events = [event async for event in run]
            answered.append("A" if "A hello" in text(events) else "B")
            if answered[-1] == "A" and breakers.state("primary", breakers_now()) is BreakerState.CLOSED:
                if answered.count("A") >= 3:
                    break
            else:
                await _sleep(0.05)
    transitions = [
        (t.before.value, t.after.value) for b in breakers.snapshot(breakers_now()) for t in b.transitions
    ]
    assert ("closed", "open") in transitions and ("open", "half_open") in transitions
    assert ("half_open", "closed") in transitions
    assert flaky.requests_seen < len(answered), "while open, the primary was not asked"
    assert answered[-1] == "A"


def breakers_now() -> float:
    return time.monotonic()


async def _sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


async def test_every_route_open_fails_fast_with_no_route() -> None:
    breakers = Breakers(threshold=1, cool_down_s=60.0)
    breakers.admit("only", time.monotonic(), retry=False)
    breakers.failed("only", time.monotonic(), transient=True)
    async with FaultServer(per_attempt([ok_script("openai-chat", "A")])) as server:
        routes = [Route("only", Spies(server.base_url))]
        async with retrying(policy(), routes, breakers=breakers) as run:
            with pytest.raises(NoRoute, match="only: open"):
                [event async for event in run]
    assert server.requests_seen == 0


def cut_after_text(tag: str) -> tuple[Any, ...]:
    frames = text_stream("openai-chat", [f"{tag} Hello", f" {tag} world"])
    return (Headers(), *(Send(f) for f in cut_through("openai-chat", frames, TextDelta)), Fin())


async def test_a_cut_after_visible_text_asks_and_a_confirmed_replay_on_the_next_route_restarts() -> None:
    """A route whose streams break mid-answer: the consumer is asked, and once its tries are spent the
    replay goes to the next route, as a Restarted."""
    asked: list[Offer] = []

    def confirm(diagnosis: Any, offer: Offer) -> Recovery:
        asked.append(offer)
        return Recovery.REPLAY

    async with (
        FaultServer(per_attempt([cut_after_text("A")])) as cutting,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        routes = [Route("cutting", Spies(cutting.base_url), tries=1), Route("fallback", Spies(up.base_url))]
        async with retrying(policy(), routes, breakers=fresh(), confirm=confirm) as run:
            events = [event async for event in run]
    assert (cutting.requests_seen, up.requests_seen) == (1, 1)
    restarts = [e for e in events if isinstance(e, Restarted)]
    assert restarts == [Restarted(2, "mid_generation.closed_mid_body")]
    assert run.partial.text == "B hello B world"
    assert [link.route for link in run.attempts] == ["cutting", "fallback"]


@pytest.mark.parametrize("accepts", [True, False], ids=["takes-it", "refuses-it"])
async def test_a_continuation_goes_only_to_a_route_that_takes_its_style(accepts: bool) -> None:
    """The continuation on offer is the next route's to take: a route declared without the chain's
    continuation style is offered a replay only."""
    offered: list[tuple[Recovery, ...]] = []

    def confirm(diagnosis: Any, offer: Offer) -> bool:
        offered.append(offer.recoveries)
        return True  # the first recovery on offer

    styles = frozenset({ContinueStyle.INSTRUCTION}) if accepts else frozenset({ContinueStyle.PREFILL})
    async with (
        FaultServer(per_attempt([cut_after_text("A")])) as cutting,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        routes = [
            Route("cutting", Spies(cutting.base_url), tries=1),
            Route("fallback", Spies(up.base_url), continuations=styles),
        ]
        async with retrying(policy(), routes, breakers=fresh(), confirm=confirm) as run:
            events = [event async for event in run]
    expected = (Recovery.CONTINUE, Recovery.REPLAY) if accepts else (Recovery.REPLAY,)
    assert offered == [expected]
    assert any(isinstance(e, Continued if accepts else Restarted) for e in events)


def test_the_sync_form_falls_back_too() -> None:
    import openai

    with (
        FaultServerThread(per_attempt([(BUSY,)])) as down,
        FaultServerThread(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):

        def through(base_url: str) -> Any:
            client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)

            def open_attempt(ids: Any) -> Any:
                return wrap(
                    lambda: client.chat.completions.create(
                        model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
                    ),
                    ids=ids,
                )

            return open_attempt

        routes = [Route("down", through(down.base_url)), Route("up", through(up.base_url))]
        with retrying(policy(), routes, breakers=fresh()) as run:
            events = list(run)
    assert (down.requests_seen, up.requests_seen) == (2, 1)
    assert "B hello" in text(events)
    assert [link.route for link in run.attempts] == ["down", "down", "up"]


async def test_a_raced_route_the_rival_answers_and_only_the_winner_is_shown() -> None:
    async with (
        FaultServer(per_attempt([(Headers(), Stall())])) as slow,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        routes = [
            Route("slow", Spies(slow.base_url), first_token_s=0.2, race=True),
            Route("fast", Spies(up.base_url)),
        ]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
    assert (slow.requests_seen, up.requests_seen) == (1, 1)
    assert text(events) == "B hello B world"
    lost, won = run.attempts
    assert (lost.route, lost.decision, lost.summary_key) == ("slow", "raced", "local_abort.app")
    assert (won.route, won.decision, won.attempt) == ("fast", "completed", 2)
    loser, winner = run.records
    assert loser.to_dict()["abort"]["source"] == "app"
    assert winner.to_dict()["route"]["tried"] == ["slow"]
    for record in run.records:
        validate_record(record)


async def test_a_raced_route_that_answers_first_goes_on_and_the_rival_is_stopped() -> None:
    late_but_first = (Headers(), Sleep(0.3), *ok_script("openai-chat", "A")[1:])
    async with (
        FaultServer(per_attempt([late_but_first])) as slowish,
        FaultServer(per_attempt([(Headers(), Stall())])) as stuck,
    ):
        routes = [
            Route("slowish", Spies(slowish.base_url), first_token_s=0.1, race=True),
            Route("stuck", Spies(stuck.base_url)),
        ]
        async with retrying(policy(), routes, breakers=fresh()) as run:
            events = [event async for event in run]
    assert (slowish.requests_seen, stuck.requests_seen) == (1, 1)
    assert text(events) == "A hello A world"
    assert [(link.route, link.decision) for link in run.attempts] == [
        ("stuck", "raced"),
        ("slowish", "completed"),
    ]
    assert run.record is not None and run.record.to_dict()["ids"]["attempt"] == 1


def test_race_needs_a_deadline() -> None:
    with pytest.raises(ValueError, match="race needs first_token_s"):
        Route("a", Spies("http://127.0.0.1:1"), race=True)
