"""The next-route step (``hop``) and the circuit breakers, as properties; each property is also run against a
broken variant of what it guards, and must fail there."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import Phase as HypothesisPhase
from hypothesis import strategies as st

from streamfsm import ContinueStyle, Route
from streamfsm.classify import (
    Diagnosis,
    FailureClass,
    ProviderErrorKind,
    Verdict,
)
from streamfsm.runtime import (
    Breakers,
    BreakerState,
    DecisionKind,
    Failed,
    Help,
    Need,
    RetryPolicy,
    Routing,
    after_failure,
    helps,
    hop,
)
from streamfsm.runtime.retry import _routes
from tests.support.diagnoses import diagnosis

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A broken variant only has to be caught: no shrinking of what caught it, and examples enough that it always
# is (at 150 a few of these missed one run in forty; generation stops at the first catch, so more costs
# nothing when it is found early).
CATCH = settings(PROPERTY, max_examples=2000, phases=[HypothesisPhase.generate])

_CAUSES: dict[FailureClass, tuple[str, ...]] = {
    FailureClass.PROVIDER_ERROR: tuple(kind.value for kind in ProviderErrorKind),
    FailureClass.WATCHDOG: ("connect_timeout", "first_token_timeout", "idle_timeout", "total_timeout"),
    FailureClass.BEFORE_CONNECTION: (
        "refused",
        "dns",
        "tls",
        "unreachable",
        "connect_timeout",
        "read_timeout",
    ),
    FailureClass.EARLY_STREAM: ("closed_mid_body", "reset", "eof_without_terminal", "read_timeout"),
    FailureClass.MID_GENERATION: ("closed_mid_body", "reset"),
    FailureClass.PROTOCOL_ERROR: ("protocol_violation",),
    FailureClass.LOCAL_ABORT: ("user", "cancelled"),
    FailureClass.CONSUMER_ERROR: ("consumer_error",),
    FailureClass.TOOL_SIDE_EFFECT: ("effectful_tool_started",),
}


def _open(ids: Any) -> Any:
    raise AssertionError("never opened here")


@st.composite
def diagnoses(draw: st.DrawFn) -> Diagnosis:
    klass = draw(st.sampled_from(sorted(_CAUSES, key=lambda k: k.value)))
    return diagnosis(
        klass,
        draw(st.sampled_from(_CAUSES[klass])),
        verdict=draw(st.sampled_from(list(Verdict))),
        retry_after_s=draw(st.none() | st.floats(0, 120)),
        delivered=draw(st.booleans()),
    )


@st.composite
def route_lists(draw: st.DrawFn) -> list[Route]:
    count = draw(st.integers(1, 4))
    return [
        Route(
            f"r{i}",
            _open,
            tries=draw(st.integers(1, 3)),
            account=draw(st.sampled_from(["a", "b", None])),
            context_window=draw(st.none() | st.sampled_from([8_000, 32_000, 128_000])),
            continuations=draw(st.none() | st.just(frozenset({ContinueStyle.INSTRUCTION}))),
        )
        for i in range(count)
    ]


Hop = Callable[..., Any]


def never_the_same_silent_route(step: Hop, run: settings = PROPERTY) -> None:
    @run
    @given(route_lists(), st.lists(diagnoses(), min_size=1, max_size=8), st.data())
    def check(routes: list[Route], failures: list[Diagnosis], data: st.DataObject) -> None:
        at, tries, silenced = 0, [1] + [0] * (len(routes) - 1), set[int]()
        for failure in failures:
            where = step(failure, routes, at, tries=tries, silenced=silenced)
            went_silent = helps(failure).why == "the route took the request and said nothing"
            if went_silent:
                assert where.route != at, (failure.summary_key, where)
                silenced.add(at)
            assert where.route not in silenced
            if where.route is None:
                return
            at = where.route
            tries[at] += 1

    check()


def no_route_after_a_content_policy_rejection(step: Hop, run: settings = PROPERTY) -> None:
    @run
    @given(route_lists(), st.data())
    def check(routes: list[Route], data: st.DataObject) -> None:
        at = data.draw(st.integers(0, len(routes) - 1))
        tries = [data.draw(st.integers(0, 1)) for _ in routes]
        tries[at] = 1
        failure = diagnosis(
            FailureClass.PROVIDER_ERROR, ProviderErrorKind.CONTENT_FILTER.value, verdict=Verdict.NO_RETRY
        )
        where = step(failure, routes, at, tries=tries)
        assert where.help is Help.NONE and where.route is None

    check()


def a_short_stated_wait_is_waited_out_on_the_same_route(step: Hop, run: settings = PROPERTY) -> None:
    @run
    @given(route_lists(), st.floats(0, 10))
    def check(routes: list[Route], wait: float) -> None:
        routes[0] = dataclasses.replace(routes[0], tries=2)
        failure = diagnosis(FailureClass.PROVIDER_ERROR, "rate_limit", retry_after_s=wait)
        where = step(failure, routes, 0, tries=[1] + [0] * (len(routes) - 1))
        assert where.route == 0 and where.wait

    check()


def moves_only_where_it_can_help(step: Hop, run: settings = PROPERTY) -> None:
    """A window refusal goes only to a larger window, an account refusal only to another account, and a
    continuation only to a route that takes it; a route is never tried past its tries."""

    @run
    @given(route_lists(), diagnoses(), st.data())
    def check(routes: list[Route], failure: Diagnosis, data: st.DataObject) -> None:
        at = data.draw(st.integers(0, len(routes) - 1))
        tries = [data.draw(st.integers(0, route.tries)) for route in routes]
        tries[at] = max(1, tries[at])
        style = data.draw(st.none() | st.sampled_from(list(ContinueStyle)))
        where = step(failure, routes, at, tries=tries, style=style)
        if where.route is None:
            return
        chosen, failed = routes[where.route], routes[at]
        assert tries[where.route] < chosen.tries
        assert style is None or chosen.accepts(style)
        kind = failure.cause if failure.failure_class is FailureClass.PROVIDER_ERROR else None
        if kind == "context_overflow":
            assert chosen.context_window is not None
            assert failed.context_window is None or chosen.context_window > failed.context_window
        if kind in ("auth", "quota_exhausted", "permission"):
            assert chosen.payer != failed.payer

    check()


PROPERTIES = [
    never_the_same_silent_route,
    no_route_after_a_content_policy_rejection,
    a_short_stated_wait_is_waited_out_on_the_same_route,
    moves_only_where_it_can_help,
]


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_hop_property(prop: Callable[..., None]) -> None:
    prop(hop)


def _ignores_silence(failure: Diagnosis, routes: Sequence[Route], at: int, **kw: Any) -> Any:
    """Takes a silent route's silence for an ordinary break: the same route again."""
    where = hop(failure, routes, at, **kw)
    if where.route != at and kw["tries"][at] < routes[at].tries:
        return dataclasses.replace(where, help=Help.SAME, route=at)
    return where


def _always_next(failure: Diagnosis, routes: Sequence[Route], at: int, **kw: Any) -> Any:
    where = hop(failure, routes, at, **kw)
    if where.route is None and len(routes) > 1:
        return dataclasses.replace(where, help=Help.NEXT, route=(at + 1) % len(routes))
    return where


def _never_waits(failure: Diagnosis, routes: Sequence[Route], at: int, **kw: Any) -> Any:
    where = hop(failure, routes, at, **kw)
    if where.route == at:
        return dataclasses.replace(where, route=(at + 1) % len(routes) if len(routes) > 1 else None)
    return where


def _needs_nothing(failure: Diagnosis, routes: Sequence[Route], at: int, **kw: Any) -> Any:
    """Forgets what the next route must have (a larger window, another account, the continuation)."""
    kw.pop("style", None)
    with mock.patch.object(_routes, "helps", lambda d: helps(d)._replace(need=Need.ANY)):
        return hop(failure, routes, at, **kw)


@pytest.mark.parametrize(
    ("prop", "broken"),
    [
        (never_the_same_silent_route, _ignores_silence),
        (no_route_after_a_content_policy_rejection, _always_next),
        (a_short_stated_wait_is_waited_out_on_the_same_route, _never_waits),
        (moves_only_where_it_can_help, _needs_nothing),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_hop_property_fails_on_a_broken_variant(prop: Callable[..., None], broken: Hop) -> None:
    with pytest.raises(AssertionError):
        prop(broken, CATCH)


# -- the breakers ------------------------------------------------------------------------------------------

_BREAKER_OPS = st.lists(
    st.tuples(
        st.sampled_from(["retry", "retry", "retry", "admit", "ok", "fail", "other"]),
        st.sampled_from(["a", "a", "b"]),
        st.floats(0, 0.3),
    ),
    max_size=60,
)


def within_the_retry_cap(make: Callable[[], Breakers], run: settings = PROPERTY) -> None:
    @run
    @given(_BREAKER_OPS)
    def check(ops: list[tuple[str, str, float]]) -> None:
        breakers = make()
        now, admitted = 0.0, {"a": list[float](), "b": list[float]()}
        for op, route, step in ops:
            now += step
            if op in ("admit", "retry"):
                if breakers.admit(route, now, retry=op == "retry") is not None and op == "retry":
                    admitted[route].append(now)
            elif op in ("ok", "fail", "other"):
                if op == "ok":
                    breakers.succeeded(route, now)
                else:
                    breakers.failed(route, now, transient=op == "fail")
        for times in admitted.values():
            for start in times:
                inside = [t for t in times if start <= t < start + breakers.window_s]
                assert len(inside) <= breakers.retry_cap

    check()


def retries_are_spaced(make: Callable[[], Breakers], run: settings = PROPERTY) -> None:
    """Every route's retries, by whichever chain, start at least ``min_spacing_s`` after the route's tries
    and failures before them (first attempts too); a first attempt starts at once."""

    @run
    @given(_BREAKER_OPS)
    def check(ops: list[tuple[str, str, float]]) -> None:
        breakers = make()
        now, seen = 0.0, {"a": list[tuple[float, bool]](), "b": list[tuple[float, bool]]()}
        for op, route, step in ops:
            now += step
            retry = op == "retry"
            if op in ("retry", "admit") and breakers.admit(route, now, retry=retry) is not None:
                wait = breakers.wait_s(route, now) if retry else 0.0
                seen[route].append((now + wait, retry))
            elif op == "fail":
                breakers.failed(route, now, transient=True)
                seen[route].append((now, False))
        for events in seen.values():
            for index, (start, retry) in enumerate(events):
                if retry:
                    earlier = [at for at, _ in events[:index]]
                    assert all(start - at >= breakers.min_spacing_s - 1e-9 for at in earlier)

    check()


def the_breaker_opens_probes_and_closes(make: Callable[[], Breakers], run: settings = PROPERTY) -> None:
    @run
    @given(st.integers(0, 3))
    def check(extra: int) -> None:
        breakers = make()
        now = 0.0
        for _ in range(breakers.threshold - 1):
            assert breakers.admit("a", now, retry=True) is BreakerState.CLOSED
            breakers.failed("a", now, transient=True)
        assert breakers.state("a", now) is BreakerState.CLOSED
        breakers.admit("a", now, retry=True)
        breakers.failed("a", now, transient=True)
        assert breakers.state("a", now) is BreakerState.OPEN
        assert breakers.admit("a", now + breakers.cool_down_s / 2, retry=False) is None
        now += breakers.cool_down_s
        assert breakers.admit("a", now, retry=False) is BreakerState.HALF_OPEN  # the probe
        for _ in range(extra + 1):
            assert breakers.admit("a", now, retry=False) is None  # only one probe at a time
        breakers.failed("a", now, transient=True, probe=True)
        assert breakers.state("a", now) is BreakerState.OPEN  # the probe failed: open again
        now += breakers.cool_down_s
        assert breakers.admit("a", now, retry=False) is BreakerState.HALF_OPEN
        breakers.succeeded("a", now, probe=True)
        assert breakers.state("a", now) is BreakerState.CLOSED
        assert breakers.admit("b", now, retry=False) is BreakerState.CLOSED  # another route is its own

    check()


def _small() -> Breakers:
    return Breakers(threshold=3, cool_down_s=5.0, retry_cap=4, window_s=2.0, min_spacing_s=0.1)


class _Uncapped(Breakers):
    def admit(self, route: str, now: float, *, retry: bool) -> BreakerState | None:
        return super().admit(route, now, retry=False)


class _Unspaced(Breakers):
    def wait_s(self, route: str, now: float) -> float:
        return 0.0


class _NoProbeLimit(Breakers):
    def admit(self, route: str, now: float, *, retry: bool) -> BreakerState | None:
        state = super().admit(route, now, retry=retry)
        self._breakers[route].probing = False
        return state


@pytest.mark.parametrize(
    "prop", [within_the_retry_cap, retries_are_spaced, the_breaker_opens_probes_and_closes]
)
def test_breaker_property(prop: Callable[..., None]) -> None:
    prop(_small)


@pytest.mark.parametrize(
    ("prop", "broken"),
    [
        (
            within_the_retry_cap,
            lambda: _Uncapped(threshold=3, cool_down_s=5.0, retry_cap=4, window_s=2.0, min_spacing_s=0.1),
        ),
        (
            retries_are_spaced,
            lambda: _Unspaced(threshold=3, cool_down_s=5.0, retry_cap=4, window_s=2.0, min_spacing_s=0.1),
        ),
        (
            the_breaker_opens_probes_and_closes,
            lambda: _NoProbeLimit(threshold=3, cool_down_s=5.0, retry_cap=4, window_s=2.0),
        ),
    ],
)
def test_breaker_property_fails_on_a_broken_variant(
    prop: Callable[..., None], broken: Callable[[], Breakers]
) -> None:
    with pytest.raises(AssertionError):
        prop(broken, CATCH)


def test_route_and_breakers_refuse_bad_settings() -> None:
    with pytest.raises(ValueError, match="name"):
        Route("", _open)
    with pytest.raises(ValueError, match="tries"):
        Route("a", _open, tries=0)
    with pytest.raises(ValueError, match="first_token_s"):
        Route("a", _open, first_token_s=float("nan"))
    with pytest.raises(TypeError, match="callable"):
        Route("a", "not a function")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        Breakers(threshold=0)
    with pytest.raises(ValueError, match="min_spacing_s"):
        Breakers(min_spacing_s=-1)


def test_a_retry_goes_only_where_the_step_sent_it() -> None:
    """A context overflow needs a larger window: when that route's retry cap is full, the chain stops; the
    same request never goes back to the small route."""
    breakers = Breakers(retry_cap=1, window_s=100, min_spacing_s=0)
    breakers.admit("big", 0.0, retry=True)  # another chain's retry fills big's cap
    routing = Routing(
        [Route("small", _open, context_window=8000), Route("big", _open, context_window=128000)],
        breakers,
        lambda: 0.0,
    )
    assert routing.take(retry=False) is routing.routes[0]
    overflow = diagnosis(FailureClass.PROVIDER_ERROR, "context_overflow", verdict=Verdict.NO_RETRY)
    policy = RetryPolicy(4, 30)
    failed = Failed(overflow, 1, 0.1, answered=True)
    step = routing.after(policy, after_failure(policy, failed), failed, None)
    taken = routing.take(retry=True) if step.kind is DecisionKind.RETRY else None
    assert taken is None or taken.name == "big"
    assert step.kind is DecisionKind.STOP


def test_only_the_probe_decides_a_half_open_breaker() -> None:
    """An attempt let in before the breaker opened ends while the probe is out: no second probe, and its
    failure does not count as the probe's."""
    breakers = Breakers(threshold=1, cool_down_s=1, min_spacing_s=0)
    assert breakers.admit("r", 0.0, retry=False) is BreakerState.CLOSED  # a long stream
    breakers.admit("r", 0.0, retry=False)
    breakers.failed("r", 0.1, transient=True)
    assert breakers.state("r", 0.2) is BreakerState.OPEN
    assert breakers.admit("r", 1.2, retry=False) is BreakerState.HALF_OPEN  # the probe
    breakers.failed("r", 1.3, transient=False)  # the long stream ends (its client left)
    breakers.succeeded("r", 1.3)
    assert breakers.admit("r", 1.4, retry=False) is None, "a second probe while the first is out"
    breakers.failed("r", 1.5, transient=True, probe=True)
    assert breakers.state("r", 1.5) is BreakerState.OPEN


# -- a continuation the consumer chooses ---------------------------------------------------------------


def _continue_there(routing: Routing, replay: Any) -> Any:
    return routing.continue_there()


def _with_the_replays_step(routing: Routing, replay: Any) -> Any:
    routing.continue_there()
    return replay  # the wait the failed route asked for, wherever the continuation goes


def a_continuation_waits_only_on_the_route_that_asked(
    choose: Callable[..., Any], run: settings = PROPERTY
) -> None:
    """A confirmed continuation goes where `Routing.after` found a route taking its style: onto another route
    at once (``next_route``), back on the failed one only after the wait the failure asked for."""

    @settings(run, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(route_lists(), diagnoses())
    def check(routes: list[Route], failure: Diagnosis) -> None:
        routing = Routing(routes, Breakers(min_spacing_s=0), lambda: 0.0)
        routing.take(retry=False)
        failed_at = routing.at
        policy = RetryPolicy(8, 600, max_provider_delay_s=120)
        failed = Failed(failure, 1, 0.0, exposed="the text reached the consumer", answered=True)
        asked = after_failure(policy, failed, random_unit=0.5)
        replay = routing.after(policy, asked, failed, ContinueStyle.PREFILL)
        if replay.kind is not DecisionKind.ASK or routing.continues_at is None:
            return
        there = routing.continues_at
        step = choose(routing, replay)
        assert routing.at == there
        if there != failed_at:
            assert (step.delay_s, step.delay_reason) == (0.0, "next_route")
        else:
            assert (step.delay_s, step.delay_reason) == (asked.delay_s, asked.delay_reason)

    check()


def test_a_continuation_waits_only_on_the_route_that_asked() -> None:
    a_continuation_waits_only_on_the_route_that_asked(_continue_there)


def test_a_continuation_waits_only_on_the_route_that_asked_fails_on_a_broken_variant() -> None:
    with pytest.raises(AssertionError):
        a_continuation_waits_only_on_the_route_that_asked(_with_the_replays_step, CATCH)
