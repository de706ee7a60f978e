"""Each link of a chain over routes names the state of *its own* route's breaker once its attempt ended, not
that of the route the next attempt went to (real fault servers on 127.0.0.1)."""

from __future__ import annotations

import pytest

from streamfsm import RetryPolicy, Route, retrying
from streamfsm.runtime import Breakers
from streamfsm.testing import FaultServer, Status
from tests.support.retry import Spies, ok_script, per_attempt, validate_record

pytestmark = pytest.mark.anyio

BUSY = Status(503, (("content-type", "application/json"),), b'{"error": {"type": "server_error"}}')


async def test_the_link_that_opened_its_breaker_says_open() -> None:
    async with (
        FaultServer(per_attempt([(BUSY,)])) as down,
        FaultServer(per_attempt([ok_script("openai-chat", "B")])) as up,
    ):
        routes = [Route("primary", Spies(down.base_url), tries=2), Route("fallback", Spies(up.base_url))]
        breakers = Breakers(threshold=2, cool_down_s=60.0, min_spacing_s=0.0)
        policy = RetryPolicy(4, 10, initial_delay_s=0.001, max_delay_s=0.01)
        async with retrying(policy, routes, breakers=breakers) as run:
            [event async for event in run]
    links = [(link.route, link.breaker) for link in run.attempts]
    assert links == [("primary", "closed"), ("primary", "open"), ("fallback", "closed")]
    assert run.record is not None
    validate_record(run.record)
    assert [a["breaker"] for a in run.record.to_dict()["attempts"]] == ["closed", "open"]
