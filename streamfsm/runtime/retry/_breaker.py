"""A circuit breaker per route, shared by every chain of the process, and its retry budget. No I/O: the time
is given; a lock makes it safe from threads and event loops alike.

A breaker is **closed** (everything passes) until ``threshold`` consecutive transient failures open it;
**open**, it admits nothing for ``cool_down_s``; then **half open**, it admits one probe: a success closes
it, a failure opens it again. A route's retries (attempts after a failure, by any chain) are capped at
``retry_cap`` per ``window_s``, and a retry starts at least ``min_spacing_s`` after the route's last try and
its last failure: a route in trouble is never hammered, however many chains want it. A chain's first attempt
never waits.
"""

from __future__ import annotations

import enum
import math
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Final, NamedTuple

__all__ = ["Breaker", "BreakerState", "Breakers", "Transition"]

_MAX_TRANSITIONS: Final = 64  # kept per breaker, for pages and metrics


class BreakerState(enum.Enum):
    _value_: str

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Transition(NamedTuple):
    route: str
    before: BreakerState
    after: BreakerState
    at: float  # the breakers' clock


def _positive(name: str, value: object, *, integer: bool = False) -> None:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int if integer else (int, float))
        and value > 0
        and math.isfinite(value)
    )
    if not ok:
        raise ValueError(f"{name} must be a positive {'integer' if integer else 'number'}, not {value!r}")


@dataclass(slots=True)
class Breaker:
    """One route's breaker (see the module docstring). Read its ``state``; `Breakers` changes it."""

    route: str
    state: BreakerState = BreakerState.CLOSED
    failures: int = 0  # consecutive transient failures
    opened_at: float = 0.0
    probing: bool = False  # the half-open probe is out
    last_try: float = -math.inf  # when its last attempt, of any chain, starts or last failed
    opened: int = 0  # times it opened, for metrics
    retries: deque[float] = field(default_factory=deque)  # when its retries in the window started
    transitions: deque[Transition] = field(default_factory=lambda: deque(maxlen=_MAX_TRANSITIONS))
    # How many times it moved, by (before, after) (four pairs at most): what a cumulative metric counts.
    moves: Counter[tuple[BreakerState, BreakerState]] = field(default_factory=Counter)


class Breakers:
    """The breakers of every route by name, and their settings: ``threshold`` (5) consecutive transient
    failures open a breaker for ``cool_down_s`` (30); a route takes at most ``retry_cap`` (20) retries per
    ``window_s`` (10), each at least ``min_spacing_s`` (0.05) after the route's last try."""

    def __init__(
        self,
        *,
        threshold: int = 5,
        cool_down_s: float = 30.0,
        retry_cap: int = 20,
        window_s: float = 10.0,
        min_spacing_s: float = 0.05,
    ) -> None:
        _positive("threshold", threshold, integer=True)
        _positive("cool_down_s", cool_down_s)
        _positive("retry_cap", retry_cap, integer=True)
        _positive("window_s", window_s)
        if (
            isinstance(min_spacing_s, bool)
            or not isinstance(min_spacing_s, (int, float))
            or not (0 <= min_spacing_s < math.inf)
        ):
            raise ValueError(f"min_spacing_s must be zero or a positive number, not {min_spacing_s!r}")
        self.threshold, self.cool_down_s = threshold, float(cool_down_s)
        self.retry_cap, self.window_s, self.min_spacing_s = retry_cap, float(window_s), float(min_spacing_s)
        self._lock = threading.Lock()
        self._breakers: dict[str, Breaker] = {}

    def __repr__(self) -> str:
        return f"Breakers({len(self._breakers)} routes, threshold={self.threshold})"

    def _get(self, route: str) -> Breaker:
        breaker = self._breakers.get(route)
        if breaker is None:
            breaker = self._breakers[route] = Breaker(route)
        return breaker

    def _move(self, breaker: Breaker, after: BreakerState, now: float) -> None:
        if breaker.state is not after:
            breaker.transitions.append(Transition(breaker.route, breaker.state, after, now))
            breaker.moves[breaker.state, after] += 1
            breaker.state = after
            if after is BreakerState.OPEN:
                breaker.opened += 1
                breaker.opened_at = now

    def _ripe(self, breaker: Breaker, now: float) -> None:
        if breaker.state is BreakerState.OPEN and now - breaker.opened_at >= self.cool_down_s:
            self._move(breaker, BreakerState.HALF_OPEN, now)
            breaker.probing = False

    def admits(self, route: str, now: float, *, retry: bool = False) -> bool:
        """Whether an attempt on ``route`` may start at ``now`` (without taking the half-open probe);
        ``retry``: an attempt after a failure, which the route's retry cap must leave room for too."""
        with self._lock:
            breaker = self._get(route)
            self._ripe(breaker, now)
            if retry and sum(1 for at in breaker.retries if at > now - self.window_s) >= self.retry_cap:
                return False
            return breaker.state is BreakerState.CLOSED or (
                breaker.state is BreakerState.HALF_OPEN and not breaker.probing
            )

    def admit(self, route: str, now: float, *, retry: bool) -> BreakerState | None:
        """Take an attempt on ``route`` at ``now``: the breaker's state it was admitted in (``half_open``: it
        is the probe), or None when the breaker, or the route's retry cap, says no. ``retry``: the attempt
        follows a failure, so it counts against the cap."""
        with self._lock:
            breaker = self._get(route)
            self._ripe(breaker, now)
            state = breaker.state
            if state is BreakerState.OPEN or (state is BreakerState.HALF_OPEN and breaker.probing):
                return None
            if retry:
                window = breaker.retries
                while window and window[0] <= now - self.window_s:
                    window.popleft()
                if len(window) >= self.retry_cap:
                    return None
                window.append(now)
            # A retry starts min_spacing_s after the route's last try, any chain's; a first attempt goes at
            # once (new requests come at the caller's rate, not ours), but a retry after it is spaced.
            start = max(now, breaker.last_try + self.min_spacing_s) if retry else now
            breaker.last_try = max(breaker.last_try, start)
            if state is BreakerState.HALF_OPEN:
                breaker.probing = True
            return state

    def wait_s(self, route: str, now: float) -> float:
        """How long the retry of ``route`` just admitted at ``now`` waits, to start ``min_spacing_s`` after
        the route's try before it (asked of retries only: a first attempt goes at once)."""
        with self._lock:
            breaker = self._breakers.get(route)
            return 0.0 if breaker is None else max(0.0, breaker.last_try - now)

    def succeeded(self, route: str, now: float, *, probe: bool = False) -> None:
        """An attempt on ``route`` answered. ``probe``: it was the half-open probe, whose answer closes the
        breaker; a breaker that is not closed ignores the others (let in before it opened)."""
        with self._lock:
            breaker = self._get(route)
            if breaker.state is not BreakerState.CLOSED and not probe:
                return
            breaker.failures, breaker.probing = 0, False
            self._move(breaker, BreakerState.CLOSED, now)

    def failed(self, route: str, now: float, *, transient: bool, probe: bool = False) -> None:
        """An attempt on ``route`` failed; only a ``transient`` failure (the route's fault) counts. The
        probe's (``probe``) opens the breaker again, any other end of it lets the next probe through; a
        breaker that is not closed ignores the other attempts' ends (let in before it opened)."""
        with self._lock:
            breaker = self._get(route)
            # The spacing counts from the failure too: the route answered it later than it was asked.
            breaker.last_try = max(breaker.last_try, now)
            if probe:
                breaker.probing = False
            elif breaker.state is not BreakerState.CLOSED:
                return
            if not transient:
                return
            breaker.failures += 1
            if probe or breaker.failures >= self.threshold:
                self._move(breaker, BreakerState.OPEN, now)

    def state(self, route: str, now: float) -> BreakerState:
        with self._lock:
            breaker = self._get(route)
            self._ripe(breaker, now)
            return breaker.state

    def snapshot(self, now: float) -> tuple[Breaker, ...]:
        """Every breaker as it stands at ``now`` (copies: safe to read outside the lock)."""
        with self._lock:
            out = []
            for breaker in self._breakers.values():
                self._ripe(breaker, now)
                copy = Breaker(
                    breaker.route,
                    breaker.state,
                    breaker.failures,
                    breaker.opened_at,
                    breaker.probing,
                    breaker.last_try,
                    breaker.opened,
                )
                copy.transitions.extend(breaker.transitions)
                copy.moves.update(breaker.moves)
                out.append(copy)
            return tuple(out)


BREAKERS: Final = Breakers()
"""The process's breakers: every chain's routes share them unless given others."""
