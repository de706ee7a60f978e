"""The route table's metrics (``_fallback``), in the relay's registry (``_metrics``)::

    streamfsm_relay_route_breaker_state{route, state}             1 for the state a route's breaker is in
                                                                  (several workers: how many are in it)
    streamfsm_relay_route_breaker_transitions_total{route, to}    the breaker's moves, by the state entered
    streamfsm_relay_route_fallbacks_total{from_route, to_route}   requests moved to another route before
                                                                  their first byte reached the client

The labels are the table's route names: a bounded set.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..runtime import BreakerState

if TYPE_CHECKING:
    from ._fallback import RouteBook

__all__ = ["RouteMetrics"]


class RouteMetrics:
    """Brought up to the routes' breakers and fallbacks at each change and at each scrape (`sync`)."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge

        self.state = Gauge(
            "streamfsm_relay_route_breaker_state",
            "1 for the state each route's circuit breaker is in (summed over worker processes).",
            ["route", "state"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.transitions = Counter(
            "streamfsm_relay_route_breaker_transitions",
            "Circuit breaker transitions of each route, by the state entered.",
            ["route", "to"],
            registry=registry,
        )
        self.fallbacks = Counter(
            "streamfsm_relay_route_fallbacks",
            "Requests moved from one route to another before their first byte reached the client.",
            ["from_route", "to_route"],
            registry=registry,
        )
        self._lock = threading.Lock()
        self._entered: dict[tuple[str, BreakerState], int] = {}  # per route and state, the moves counted
        self._fallbacks: dict[tuple[str, str], int] = {}

    def sync(self, book: RouteBook) -> None:
        with self._lock:
            for name, breaker in book.breakers().items():
                for state in BreakerState:
                    self.state.labels(route=name, state=state.value).set(int(breaker.state is state))
                # From the breaker's running counts, not its last transitions (a bounded window).
                entered = dict.fromkeys(BreakerState, 0)
                for (_, into), moved in breaker.moves.items():
                    entered[into] += moved
                for into, moved in entered.items():
                    counted = self._entered.get((name, into), 0)
                    if moved > counted:
                        self.transitions.labels(route=name, to=into.value).inc(moved - counted)
                        self._entered[(name, into)] = moved
            for (before, after), count in list(book.fallbacks.items()):
                seen = self._fallbacks.get((before, after), 0)
                if count > seen:
                    self.fallbacks.labels(from_route=before, to_route=after).inc(count - seen)
                    self._fallbacks[(before, after)] = count
