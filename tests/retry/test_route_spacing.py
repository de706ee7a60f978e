"""A route's tries are spaced only where a retry would hammer it: a chain's first attempt goes at once,
however recently the route was tried; a retry waits ``min_spacing_s`` after the route's last try, by any
chain, and retries of many chains queue one after another. (The clock is given: no sleeping here.)"""

from __future__ import annotations

from typing import Any

from streamfsm import Route
from streamfsm.runtime import Breakers, Routing


def _open(ids: Any) -> Any:
    raise AssertionError("never opened here")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def chain(breakers: Breakers, clock: Clock) -> Routing:
    return Routing([Route("a", _open, tries=4), Route("b", _open)], breakers, clock)


def test_a_first_attempt_never_waits_for_the_spacing() -> None:
    breakers, clock = Breakers(min_spacing_s=0.05), Clock()
    for _ in range(5):  # five chains, one after another on the same route, 1 ms apart
        routing = chain(breakers, clock)
        assert routing.take(retry=False) is routing.routes[0]
        assert routing.spacing_s() == 0.0
        clock.now += 0.001


def test_a_retry_waits_for_its_turn_after_the_routes_last_try() -> None:
    breakers, clock = Breakers(min_spacing_s=0.05), Clock()
    first = chain(breakers, clock)
    first.take(retry=False)
    clock.now += 0.01
    assert first.take(retry=True) is first.routes[0]
    assert abs(first.spacing_s() - 0.04) < 1e-9  # 50 ms after the first try
    waits = []
    for _ in range(2):
        routing = chain(breakers, clock)
        routing.take(retry=False)
        routing.take(retry=True)
        waits.append(round(routing.spacing_s(), 6))
    assert waits == [0.09, 0.14]  # two more retries queue behind the first one's turn
    clock.now += 1.0
    assert first.take(retry=True) is first.routes[0] and first.spacing_s() == 0.0  # long after: at once
