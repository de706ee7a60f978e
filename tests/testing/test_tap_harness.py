"""The harness's tap paths: every catalog scenario of a format the SDKs speak, played through the real SDK
over a tap client (``streamfsm.async_http_client``), each record matched or read with a documented
difference; a planted wrong expectation, or a documented difference that does not happen, is a mismatch."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterable

import anyio
import httpx
import pytest

import streamfsm.testing
from streamfsm import Action, FailureClass, Trigger
from streamfsm.testing import (
    FaultServer,
    Outcome,
    Scenario,
    ScenarioRouter,
    catalog,
    find,
    plan,
    run_catalog,
    run_scenario,
    sdk_available,
)
from streamfsm.testing._harness import TAP_DIFFERENCES, TAP_PATHS, Difference
from tests.support.cli import harness
from tests.support.runs import machine_walk_problems
from tests.support.sockets import open_sockets

CATALOG = catalog()
# Ollama's client needs httpx 0.27 or newer: the leg at the core's floors (httpx 0.26) cannot install it.
_HTTPX_BELOW_OLLAMAS = tuple(int(part) for part in httpx.__version__.split(".")[:2]) < (0, 27)
TAP_HERE = tuple(path for path in TAP_PATHS if not (_HTTPX_BELOW_OLLAMAS and path == "tap:ollama"))
TAP_JOBS = plan(CATALOG, TAP_HERE)
BOUND = 50.0  # seconds: the whole tap catalog takes about six here, on a machine shared with other work
WARM_UP = [find(f"{fmt}/tool-call-completes") for fmt in ("openai-chat", "anthropic", "ollama")]


def _available() -> None:
    for path in TAP_HERE:
        why = sdk_available(path)
        assert why is None, f"the dev extra installs the SDKs and the tap: {why}"  # never hide these paths


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def played_tap(request: pytest.FixtureRequest) -> dict[tuple[str, str], Outcome]:
    """The catalog through both SDKs' tap paths, once per backend, on one fault server."""
    _available()

    async def play() -> list[Outcome]:
        with anyio.fail_after(BOUND):
            # Each path's SDK alone first: its first answer loads and builds its response models (a second
            # of CPU and more), which a loaded machine took past the SDK's 3 s timeout for a burst of 32.
            await run_catalog(WARM_UP, sdk=TAP_HERE, concurrency=1)
            return await run_catalog(CATALOG, sdk=TAP_HERE, concurrency=32)

    outcomes = anyio.run(play, backend=request.param)
    return {(outcome.via, outcome.name): outcome for outcome in outcomes}


@pytest.mark.parametrize(("scenario", "path"), TAP_JOBS, ids=[f"{p}:{s.name}" for s, p in TAP_JOBS])
def test_scenario_through_the_tap_matches_or_is_a_documented_difference(
    scenario: Scenario, path: str, played_tap: dict[tuple[str, str], Outcome]
) -> None:
    outcome = played_tap[path, scenario.name]
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None
    assert not machine_walk_problems(outcome.record)  # the core's properties, of the tap's records
    context = outcome.record["ids"]["context"]
    assert context["scenario"] == scenario.name and context["harness_path"] == path
    sdk = path.partition(":")[2]
    assert outcome.differences == tuple(d for d in TAP_DIFFERENCES if d.applies(scenario, sdk))


def test_the_tap_catalog_covers_every_sdk_format_and_uses_every_documented_difference(
    played_tap: dict[tuple[str, str], Outcome],
) -> None:
    ollama = {"ollama"} if "tap:ollama" in TAP_HERE else set()
    assert {s.format for s, _ in TAP_JOBS} == {"openai-chat", "openai-responses", "anthropic", *ollama}
    assert len(played_tap) == len(TAP_JOBS)
    used = {d for outcome in played_tap.values() for d in outcome.differences}
    assert used == set(TAP_DIFFERENCES)  # no row of the table is dead
    for difference in TAP_DIFFERENCES:
        assert difference.reason.endswith(".") and len(difference.reason) > 60


def test_the_documented_differences_are_the_agents_part_only() -> None:
    # What the table may excuse: the agent's own steps (abort, its loop's error, the tools it runs). A cut, a
    # stall, an HTTP or in-band error reads as open_stream reads it, and an error the SDK raises itself (a
    # JSONDecodeError) still leads failure_of to the run.
    patterns = {d.scenarios for d in TAP_DIFFERENCES}
    assert patterns == {
        "*/user-abort",
        "*/consumer-error",
        "*/effectful-tool-running-then-fin",
        "*/read-only-tool-running-then-rst",
        "*/parallel-effectful-then-args-cut",
    }


async def _play(
    scenarios: Iterable[Scenario], path: str, differences: Iterable[Difference] = TAP_DIFFERENCES
) -> list[Outcome]:
    chosen = list(scenarios)
    with anyio.fail_after(20):
        # One script per name: a planted scenario plays its original's script.
        async with FaultServer(ScenarioRouter({s.name: s for s in chosen}.values())) as server:
            return [
                await run_scenario(s, base_url=server.base_url, sdk=path, differences=differences)
                for s in chosen
            ]


@pytest.mark.anyio
async def test_a_planted_wrong_expectation_is_reported_as_a_mismatch() -> None:
    _available()
    right = find("anthropic/text-then-fin")
    wrong = dataclasses.replace(right, expected_cause="reset", expected_class=FailureClass.EARLY_STREAM)
    good, bad = await _play([right, wrong], "tap:anthropic")
    assert good.matched, good.mismatch
    assert not bad.matched
    assert bad.mismatch is not None
    assert "class: expected early_stream, got mid_generation" in bad.mismatch
    assert "cause: expected reset, got closed_mid_body" in bad.mismatch


@pytest.mark.anyio
async def test_without_its_documented_difference_a_scenario_is_a_mismatch() -> None:
    _available()
    (outcome,) = await _play([find("openai-chat/user-abort")], "tap:openai", differences=())
    assert not outcome.matched and outcome.differences == ()
    assert outcome.mismatch == "cause: expected user, got consumer_stopped"
    # The SDK's own JSONDecodeError names no request or response, yet failure_of finds the run it followed.
    (outcome,) = await _play([find("anthropic/malformed-json")], "tap:anthropic", differences=())
    assert outcome.matched, outcome.mismatch


@pytest.mark.anyio
async def test_a_documented_difference_that_does_not_happen_is_a_mismatch() -> None:
    _available()
    stale = (
        Difference(
            "*/text-then-fin", "A planted difference that does not happen.", {"expected_cause": "reset"}
        ),
        Difference("*/http-500", "A planted claim that the SDK's error carries nothing.", carried=False),
    )
    cut, status = await _play(
        [find("openai-responses/text-then-fin"), find("openai-responses/http-500")], "tap:openai", stale
    )
    assert cut.differences == stale[:1] and not cut.matched
    assert cut.mismatch == "cause: expected reset, got closed_mid_body"
    assert status.differences == stale[1:] and not status.matched
    assert (
        status.mismatch
        == "documented: the SDK's InternalServerError carries no diagnosis, yet failure_of found it"
    )


def test_a_difference_names_real_expectation_fields_and_gives_a_reason() -> None:
    with pytest.raises(ValueError, match="expect names no expectation field: expected_colour"):
        Difference("*/x", "Some reason.", {"expected_colour": "red"})
    with pytest.raises(ValueError, match="needs a reason and something that differs"):
        Difference("*/x", "", {"expected_cause": "reset"})
    with pytest.raises(ValueError, match="needs a reason and something that differs"):
        Difference("*/x", "Nothing differs.")
    consumer = next(d for d in TAP_DIFFERENCES if d.scenarios == "*/consumer-error")
    assert consumer.changes(find("anthropic/consumer-error")) == [
        "class: consumer_error -> local_abort",
        "edge: consumer_error -> local_abort",
        "cause: consumer_error -> consumer_stopped",
        "action: stop -> none",
    ]
    assert (
        consumer.expect["expected_action"] is Action.NONE
        and consumer.expect["expected_edge"] is Trigger.LOCAL_ABORT
    )
    assert consumer.applies(find("openai-responses/consumer-error"), "openai")
    assert not consumer.applies(find("openai-responses/user-abort"), "openai")


# -- streamfsm harness --via tap ----------------------------------------------------------------------------


def test_via_tap_prints_the_table_the_documented_differences_and_a_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if "tap:ollama" not in TAP_HERE:
        pytest.skip("the runs counted here include Ollama's client, which needs httpx 0.27 or newer")
    _available()
    assert harness("--via", "tap", "--scenario", "*/user-abort", "--scenario", "anthropic/text-then-fin") == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["format", "scenario", "via"]
    assert any(
        line.split()[:3] == ["anthropic", "≠", "user-abort"] and "tap:anthropic" in line for line in lines
    )
    assert any(line.split()[:3] == ["anthropic", "text-then-fin", "tap:anthropic"] for line in lines)
    assert not any("gemini" in line for line in lines)  # no SDK speaks it
    assert "documented differences of the transparent view (≠): 1, in 4 runs" in out
    assert "  */user-abort  (4 runs: tap:openai, tap:anthropic, tap:ollama)" in out
    assert "      cause: user -> consumer_stopped" in out
    assert "An agent on an SDK has no run.abort()" in out
    assert lines[-1].startswith("5 scenario runs in ")
    assert lines[-1].endswith(", all matched (4 as documented differences)")


def test_via_tap_exits_1_on_a_mismatch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _available()
    wrong = dataclasses.replace(find("openai-chat/text-then-rst"), expected_cause="closed_mid_body")
    monkeypatch.setattr(streamfsm.testing, "catalog", lambda formats=None: [wrong, find("gemini/http-500")])
    assert harness("--via", "tap") == 1
    out = capsys.readouterr().out
    assert "✗ text-then-rst" in out
    assert "openai-chat/text-then-rst (tap:openai): cause: expected closed_mid_body, got reset" in out


def test_via_tap_with_no_sdk_format_or_no_sdk_is_bad_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert harness("--via", "tap", "--format", "gemini") == 2
    assert "no selected scenario speaks a format of the SDKs" in capsys.readouterr().err
    monkeypatch.setattr(streamfsm.testing, "sdk_available", lambda path: "not installed here")
    assert harness("--via", "tap", "--format", "anthropic") == 2
    err = capsys.readouterr().err
    assert "skipping the tap:anthropic SDK path: not installed here" in err
    assert "no path left to play the scenarios through" in err


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count sockets")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_tap_paths_leave_no_socket_or_thread_behind(backend: str) -> None:
    _available()
    chosen = [
        s
        for s in CATALOG
        if s.format != "gemini" and any(w in s.name for w in ("stall", "abort", "cancel", "rst", "consumer"))
    ]
    threads = set(threading.enumerate())
    before = open_sockets()

    async def play() -> list[Outcome]:
        with anyio.fail_after(BOUND):
            return await run_catalog(chosen, sdk=TAP_HERE, concurrency=32)

    outcomes = anyio.run(play, backend=backend)
    assert all(o.matched for o in outcomes), [o.mismatch for o in outcomes if not o.matched]
    # asyncio may close a transport one loop turn late; a dropped response's record is delivered on a thread
    # that ends a second after its last delivery. Threads that ended meanwhile (an earlier test's) are fine.
    deadline = time.monotonic() + 3.0
    while (open_sockets() - before or set(threading.enumerate()) - threads) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_sockets() - before == set()
    assert set(threading.enumerate()) - threads == set()
