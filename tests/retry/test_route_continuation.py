"""A continuation the consumer chooses onto a later route (`Routing.continues_at`) goes with that route's
own hop, over real fault servers on 127.0.0.1: not after the wait the failed route asked for (that wait is
the failed route's), but at the later route's own turn (its ``min_spacing_s`` after its last try)."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest

from streamfsm import ContinueStyle, Offer, Recovery, RetryPolicy, Route, retrying
from streamfsm.runtime import Breakers, Continued
from streamfsm.testing import End, FaultServer, Headers, Send, text_stream
from tests.support.retry import FAST, Spies, ok_script, per_attempt

pytestmark = pytest.mark.anyio

STATED_WAIT_S = 3.0
SPACING_S = 1.0


def limited_after_text() -> tuple[Any, ...]:
    """Visible text, then an in-band rate limit that asks for a wait: the consumer is asked to go on."""
    frames = text_stream("openai-chat", ["A Hello", " A world"], usage=False)
    error = {
        "message": f"Rate limit reached for requests. Please try again in {STATED_WAIT_S:g}s.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    limited = b"data: " + json.dumps({"error": error}).encode() + b"\n\n"
    return (Headers(), *(Send(f) for f in frames[:2]), Send(limited), End())


@pytest.mark.parametrize("tried_just_before", [False, True], ids=["later-route-idle", "later-route-busy"])
async def test_a_continuation_onto_a_later_route_goes_at_that_routes_own_turn(
    tried_just_before: bool,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await anyio.sleep(seconds)

    def confirm(diagnosis: Any, offer: Offer) -> Recovery:
        assert diagnosis.retry_after_s == STATED_WAIT_S
        assert offer.recoveries[0] is Recovery.CONTINUE
        return Recovery.CONTINUE

    breakers = Breakers(min_spacing_s=SPACING_S)
    async with (
        FaultServer(per_attempt([limited_after_text()])) as limited,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as later,
    ):
        # The limited route would wait; it takes no continuation by instruction, so the continuation goes on.
        routes = [
            Route("limited", Spies(limited.base_url), continuations=frozenset({ContinueStyle.PREFILL})),
            Route("later", Spies(later.base_url)),
        ]
        if tried_just_before:
            breakers.admit("later", time.monotonic(), retry=False)  # another chain's attempt, just now
        policy = RetryPolicy(4, 30, **FAST)
        async with retrying(policy, routes, breakers=breakers, confirm=confirm, sleep=sleep) as run:
            events = [event async for event in run]
    assert (limited.requests_seen, later.requests_seen) == (1, 1)
    assert [e.attempt for e in events if isinstance(e, Continued)] == [2]
    assert run.partial.text.startswith("A Hello")
    first, last = run.attempts
    assert (first.route, first.decision, first.next) == ("limited", "confirmed_retry", "continue")
    assert (first.delay_s, first.delay_reason) == (0.0, "next_route")
    assert (last.route, last.decision) == ("later", "completed")
    assert STATED_WAIT_S not in waits, "the failed route's wait is not the later route's"
    if tried_just_before:
        assert len(waits) == 1 and 0.0 < waits[0] <= SPACING_S, waits
    else:
        assert waits == [], "an idle route is not spaced"
