"""The harness's route scenarios over real sockets: a fault server per route, so what each route was asked
is its own request log. ``retrying()`` over the routes gets every scenario right and well conducted; the
same scenarios on the first route only, through the openai SDK over the tap, or through a client that
hammers, lose the answers and fire the conduct checks (each check seen failing on a client that breaks it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx
import pytest

from streamfsm import ContinueStyle, Recovery, testing
from streamfsm.cli import main
from streamfsm.testing import (
    ONE_ROUTE,
    RELAY,
    RETRYING,
    TAP,
    Provider,
    RouteScenario,
    route_catalog,
    run_routes,
)
from streamfsm.testing import _route_scenarios as routes
from streamfsm.testing._route_scenarios import Got, Leg, TableRoute, run_route_scenario, tally

pytestmark = pytest.mark.anyio

CATALOG = route_catalog()
NAMES = [s.name for s in CATALOG]
BOUND_S = 30.0  # a leg's whole set takes about 4 s here, on a machine shared with other work


def by_name(outcomes: Sequence[routes.RouteOutcome]) -> dict[str, routes.RouteOutcome]:
    return {o.name: o for o in outcomes}


async def test_retrying_over_the_routes_gets_every_scenario_right_and_well_conducted() -> None:
    with anyio.fail_after(BOUND_S):
        outcomes = await run_routes(CATALOG, [RETRYING])
    assert [o.name for o in outcomes] == NAMES
    assert [(o.name, o.mismatch) for o in outcomes if not o.matched] == []
    counts = tally(outcomes)
    assert (counts["rescued"], counts["answers"]) == (15, 15)
    assert (counts["stopped_right"], counts["stops"], counts["violations"]) == (3, 3, 0)
    got = by_name(outcomes)
    # What each provider was asked, from its own log: the rescues went where the scenario says.
    assert got["routes/rate-limit-short-wait"].requests == {"primary": 2, "fallback": 0}
    assert got["routes/silent-before-headers"].requests["primary"] <= 1
    assert got["routes/context-overflow-larger-window"].requests == {"small": 1, "same-size": 0, "large": 1}
    assert got["routes/quota-other-account"].requests == {"acme-1": 1, "acme-2": 0, "globex": 1}
    assert got["routes/prefill-refused-then-instruction"].requests == {"cutting": 1, "no-prefill": 2}
    outage = got["routes/outage-then-recovery"].requests
    assert outage["fallback"] >= 3 and outage["primary"] >= 4, "the fallback in the outage, then the primary"
    assert all(o.records for o in outcomes), "every play keeps its attempts' records"


async def test_on_the_first_route_only_the_fallbacks_are_lost() -> None:
    """The routes collapsed to one (retrying() as it was before it took routes): every scenario whose answer
    needs another route is lost; the short wait on the same route and the right stops still hold."""
    with anyio.fail_after(BOUND_S):
        outcomes = await run_routes(CATALOG, [ONE_ROUTE])
    rescued = [o.name for o in outcomes if o.rescued]
    assert rescued == ["routes/rate-limit-short-wait"]
    assert [o.name for o in outcomes if o.stopped_right] == [s.name for s in CATALOG if s.answer is None]
    outage = by_name(outcomes)["routes/outage-then-recovery"]
    assert any("ended with" in problem for problem in outage.problems), "calls in the outage are lost"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the SDK's own timings: once is enough
async def test_the_openai_sdk_over_the_tap_is_the_single_route_baseline(anyio_backend: str) -> None:
    pytest.importorskip("openai")
    with anyio.fail_after(BOUND_S):
        outcomes = await run_routes(CATALOG, [TAP])
    got = by_name(outcomes)
    assert [o.name for o in outcomes if o.rescued] == ["routes/rate-limit-short-wait"], "it cannot fall back"
    assert all(o.right for o in outcomes if o.expects_answer is False), "it stops right"
    # Its own retries (two, after backoffs of about 0.4 and 0.8 s): a silent provider and a used-up quota
    # are asked again (a loaded machine may reach the harness's bound before the third).
    assert asked_again(got["routes/silent-before-headers"], "primary")
    assert asked_again(got["routes/quota-other-account"], "acme-1")
    assert any("took" in v for v in got["routes/rate-limit-long-wait"].violations), "it sits out 30 s"
    persistent = got["routes/rate-limit-persistent"].violations
    assert not [v for v in persistent if "took" not in v], "its waits are honoured and spaced"


def asked_again(outcome: routes.RouteOutcome, route: str) -> bool:
    return any(
        v.startswith(f"{route}: ") and v.endswith(" requests, at most 1") and not v.startswith(f"{route}: 1 ")
        for v in outcome.violations
    )


# -- the conduct checks fail on a client that breaks them --------------------------------------------------


def _hammer(tries: int) -> Any:
    """A leg that asks each route ``tries`` times at once, ignoring every stated wait, before the next."""

    @contextlib.asynccontextmanager
    async def session(scenario: RouteScenario, table: Sequence[TableRoute]) -> AsyncIterator[Any]:
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(5.0, read=0.5), trust_env=False, verify=False
        ) as client:

            async def call() -> Got:
                got = Got(time.monotonic())
                for row in table:
                    for _ in range(tries):
                        try:
                            answer = await client.post(row.base_url + "/v1/chat/completions", json={})
                        except httpx.HTTPError:
                            continue
                        if answer.status_code == 200:
                            got.text = routes.ANSWER  # it read the answer whole (the stream is ours)
                            return got
                got.error = "every route failed"
                return got

            yield call

    return session


async def test_a_client_that_hammers_fails_every_scenario() -> None:
    """Four tries of each route at once, every stated wait ignored, then the next route: every scenario
    catches it, by what the caller got or by a provider's log."""
    leg = Leg("hammer", "asks four times at once", _hammer(4))
    with anyio.fail_after(BOUND_S):
        outcomes = by_name(await run_routes(CATALOG, [leg]))
    # (A loaded machine slows the hammer down: the stated waits are long enough to be ignored all the same.)
    assert [name for name, o in outcomes.items() if o.matched] == []
    persistent = outcomes["routes/rate-limit-persistent"].violations
    assert "primary: 4 requests, at most 3" in persistent
    assert any("before its stated wait" in v and "after 0.25 s)" in v for v in persistent), "Retry-After"
    short = outcomes["routes/rate-limit-short-wait"].violations
    assert any("primary: asked again before its stated wait, 1 time (" in v for v in short), short
    assert asked_again(outcomes["routes/silent-before-headers"], "primary")
    assert "acme-2: 4 requests, at most 0" in outcomes["routes/quota-other-account"].violations
    policy = outcomes["routes/content-policy"]
    assert "lax: 1 requests, at most 0" in policy.violations
    assert policy.problems == ("got the answer, not provider_error.content_filter",)
    outage = outcomes["routes/outage-then-recovery"].violations
    assert any(v.startswith("primary: ") for v in outage), outage  # too many failures, or too close


async def test_spacing_after_a_failure_is_checked() -> None:
    spaced = RouteScenario(
        "spacing",
        "a 500 asked again at once",
        (Provider("only", (routes.SERVER_ERROR,)),),
        answer=None,
        stop="provider_error.server_error",
    )
    leg = Leg("hammer", "asks twice at once", _hammer(2))
    outcome = await run_route_scenario(spaced, leg)
    assert any(
        v.startswith("only: asked again within 0.04 s of a failure, 1 time") for v in outcome.violations
    )
    assert outcome.problems == ("every route failed, not provider_error.server_error",)


async def test_a_client_that_stays_on_the_fallback_is_not_healthy_after_the_outage() -> None:
    """The outage's last calls must be the primary's again: a client that put the fallback first (and so
    never comes back) fails the check, however well it answered."""

    @contextlib.asynccontextmanager
    async def backwards(scenario: RouteScenario, table: Sequence[TableRoute]) -> AsyncIterator[Any]:
        async with routes._retrying(scenario, list(reversed(table))) as call:
            yield call

    (outage,) = route_catalog(["*/outage-then-recovery"])
    short = dataclasses.replace(outage, span_s=0.5, healthy_last=2)
    outcome = await run_route_scenario(short, Leg("backwards", "fallback first", backwards))
    assert outcome.right
    assert outcome.violations[-2:] == (
        f"call {len(outcome.records) - 1}: not answered by primary at its first request",
        f"call {len(outcome.records)}: not answered by primary at its first request",
    )


# -- the scenarios, the relay's table, the command ---------------------------------------------------------


def test_every_scenario_names_its_expectation_once() -> None:
    assert len(NAMES) == len(set(NAMES)) == 18 and all(n.startswith("routes/") for n in NAMES)
    with pytest.raises(ValueError, match="either an answer or a stop"):
        RouteScenario("x", "both", (Provider("a", (routes.OK,)),), stop="provider_error.auth")
    with pytest.raises(ValueError, match="each name once"):
        RouteScenario("x", "twice", (Provider("a", (routes.OK,)), Provider("a", (routes.OK,))))


def test_the_relay_table_is_the_scenarios_routes_for_every_model() -> None:
    table = [
        TableRoute("small", "http://127.0.0.1:1", 2, None, 8192, None, 0.3),
        TableRoute("large", "http://127.0.0.1:2", 1, "globex", 128_000, None, None),
    ]
    data = routes.relay_table(table)
    assert data["models"] == {"*": ["small", "large"]}
    assert data["routes"]["small"] == {
        "upstream": "http://127.0.0.1:1",
        "tries": 2,
        "account": "small",  # pays as itself, as a Route without an account does
        "context_window": 8192,
        "first_token_s": 0.3,
    }
    assert data["routes"]["large"]["account"] == "globex" and "first_token_s" not in data["routes"]["large"]
    assert data["breakers"] == {"threshold": 3, "cool_down_s": 0.3, "min_spacing_s": 0.05}


async def test_the_relay_leg_rescues_what_it_can_before_a_byte_reaches_the_client() -> None:
    why = RELAY.unavailable()
    if why is not None:
        pytest.skip(f"the relay leg cannot play here: {why}")
    with anyio.fail_after(BOUND_S * 2):
        outcomes = await run_routes(CATALOG, [RELAY])
    lost = [o.name for o in outcomes if not o.right]
    # Nothing is replayed once a byte reached the client: a cut after text is lost there, by design.
    assert lost == [n for n in NAMES if "/cut-after-text" in n or "/prefill-" in n]
    assert [(o.name, o.violations) for o in outcomes if o.violations] == []


async def test_a_prefill_continuation_skips_a_route_that_takes_none_for_one_that_does() -> None:
    skip = RouteScenario(
        "prefill-skips-a-route",
        "a prefill continuation: not to the route declared without it, to the next one that takes it",
        (
            Provider("cutting", (routes.CUT,), tries=1, max_requests=1),
            Provider(
                "no-prefill",
                (routes.REST,),
                refuses_prefill=True,
                continuations=frozenset({ContinueStyle.INSTRUCTION}),
                max_requests=0,
            ),
            Provider("prefill", (routes.REST,), continuations=frozenset({ContinueStyle.PREFILL})),
        ),
        confirm=Recovery.CONTINUE,
        continue_with=ContinueStyle.PREFILL,
    )
    outcome = await run_route_scenario(skip, RETRYING)
    assert outcome.matched, outcome.mismatch


def harness(*argv: str) -> int:
    return main(["harness", *argv])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
def test_the_command_prints_each_legs_rescues_and_conduct(
    anyio_backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert harness("--scenario", "routes/*") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("route scenarios: 18, a fault server per route")
    assert lines[1].split()[:3] == ["route", "scenario", "retrying"]
    assert "retrying(), every route: rescued 15 of 15, stopped right 3 of 3, conduct violations 0" in lines
    if TAP.unavailable() is None:
        assert any(line.startswith("openai SDK + tap, first route: rescued 1 of 15") for line in lines)
        assert "  tap:openai routes/silent-before-headers: primary: " in out
    if RELAY.unavailable() is not None:
        assert f"not played: relay: {RELAY.unavailable()}" in lines
    assert lines[-1].startswith("18 scenario runs in ") and lines[-1].endswith(", all matched")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
def test_a_route_scenario_the_gated_leg_gets_wrong_exits_1(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (policy,) = [s for s in routes._scenarios() if s.name == "content-policy"]
    wrong = dataclasses.replace(policy, answer=routes.ANSWER, stop=None, code=None)  # no: it must stop
    monkeypatch.setattr(routes, "_scenarios", lambda: [wrong])
    # The harness reads the legs from the kit's face, streamfsm.testing
    monkeypatch.setattr(testing, "TAP", dataclasses.replace(TAP, unavailable=lambda: "left out here"))
    monkeypatch.setattr(testing, "RELAY", dataclasses.replace(RELAY, unavailable=lambda: "left out here"))
    assert harness("--scenario", "routes/*") == 1
    out = capsys.readouterr().out
    assert "routes/content-policy  ✗ lost" in out
    assert "routes/content-policy (retrying): ended with provider_error.content_filter, not the answer" in out
    assert "not played: tap:openai: left out here" in out


def test_the_list_names_the_route_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert harness("--list", "--scenario", "routes/*") == 0
    listed = [line.split("  ")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == NAMES
