"""Every catalog scenario through the harness runner, on asyncio and trio; the seed cases; and a property
test of random wire faults over the real fault server."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings

from streamfsm import AbortSource, FailureClass, Phase, Trigger, Verdict
from streamfsm.testing import (
    RAW_TRANSPORT_STRINGS,
    SDK_FORMATS,
    SSE_FORMATS,
    WIRE_FORMATS,
    Agent,
    Fin,
    Headers,
    Outcome,
    Scenario,
    Send,
    catalog,
    find,
    plan,
    run_catalog,
    sdk_available,
    text_stream,
)
from streamfsm.testing._harness import WRAPPED_SDKS
from streamfsm.testing._wire import EVENT_STREAM_FORMATS, NDJSON_FORMATS
from streamfsm.testing.pytest_plugin import FaultProvider
from streamfsm.testing.strategies import FaultyStream, faulty_streams
from tests.support.runs import machine_walk_problems
from tests.support.sockets import open_sockets

CATALOG = [
    scenario for scenario in catalog() if scenario.streaming
]  # the rest: tap paths only (test_tap_harness)
BOUND = 30.0  # seconds: the whole catalog takes about one


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def played(request: pytest.FixtureRequest) -> dict[str, Outcome]:
    """The whole catalog, played once per backend on one fault server (concurrently: about a second)."""

    async def play() -> list[Outcome]:
        with anyio.fail_after(BOUND):
            return await run_catalog(CATALOG, concurrency=64)

    outcomes = anyio.run(play, backend=request.param)
    return {outcome.name: outcome for outcome in outcomes}


def test_the_catalog_covers_every_fault_for_every_format() -> None:
    slugs: dict[str, set[str]] = {fmt: set() for fmt in WIRE_FORMATS}
    for scenario in CATALOG:
        assert scenario.format is not None and scenario.name.startswith(scenario.format + "/")
        assert scenario.expects and scenario.expected_verdict and scenario.expected_phase
        slugs[scenario.format].add(scenario.name.partition("/")[2])
    everywhere = {
        "connection-refused",
        "fin-before-response",
        "rst-before-response",
        "stall-before-headers",
        "http-500",
        "http-400-context-overflow",
        "http-413",
        "headers-then-fin",
        "reasoning-then-fin",
        "text-then-fin",
        "text-then-rst",
        "chunk-cut-short",
        "tool-call-then-fin",
        "effectful-tool-running-then-fin",
        "parallel-tool-calls",
        "text-then-clean-close",
        "text-then-keepalive-stall",
        "text-then-silent-stall",
        "keepalive-before-output-stall",
        "reasoning-then-keepalive-stall",
        "first-token-stall",
        "malformed-json",
        "oversize-line",
        "text-with-usage-and-reasoning",
        "user-abort",
        "outside-cancellation",
    }
    for fmt in (*SSE_FORMATS, *NDJSON_FORMATS):
        # Ollama sends no keepalives: a stall is silence
        due = (
            everywhere - {s for s in everywhere if "keepalive" in s} if fmt in NDJSON_FORMATS else everywhere
        )
        assert due <= slugs[fmt], (fmt, due - slugs[fmt])
    bedrock = {  # Bedrock's AWS event stream: the faults of its own framing (issue 24's acceptance)
        "clean-end",
        "cut-mid-message",
        "cut-between-messages",
        "torn-last-message",
        "stall",
        "exception-before-output",
        "exception-after-output",
        "damaged-crc",
        "http-429-throttled",
    }
    for fmt in EVENT_STREAM_FORMATS:
        assert bedrock <= slugs[fmt], (fmt, bedrock - slugs[fmt])
    openai = {"http-429-retry-after", "http-429-retry-after-ms", "http-429-retry-after-date", "http-401"}
    assert openai <= slugs["openai-chat"] and openai <= slugs["openai-responses"]
    assert {"http-529-overloaded", "http-503-should-not-retry", "http-401"} <= slugs["anthropic"]
    assert {"http-503-overloaded", "http-429-retry-delay", "http-400-api-key-invalid"} <= slugs["gemini"]
    for fmt in ("openai-chat", "openai-responses", "anthropic"):
        assert {"tool-args-cut", "parallel-effectful-then-args-cut"} <= slugs[fmt]
    assert "tool-call-chunk-cut" in slugs["gemini"]  # Gemini sends whole calls
    responses = {
        f"{s}-{when}-output"
        for s in ("error-flat", "error-nested", "response-failed")
        for when in ("before", "after")
    }
    assert responses <= slugs["openai-responses"]
    for fmt in ("openai-chat", "anthropic", "gemini"):
        assert {"error-before-output", "error-after-output"} <= slugs[fmt]
    assert len({s.name for s in CATALOG}) == len(CATALOG)


@pytest.mark.parametrize("scenario", CATALOG, ids=[s.name for s in CATALOG])
def test_scenario(scenario: Scenario, played: dict[str, Outcome]) -> None:
    outcome = played[scenario.name]
    assert scenario.expected_class is not None
    assert outcome.failure_class is scenario.expected_class, outcome.mismatch
    assert outcome.verdict is scenario.expected_verdict, outcome.mismatch
    assert outcome.edge is scenario.expected_edge, outcome.mismatch
    assert outcome.phase is scenario.expected_phase, outcome.mismatch
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None
    context = outcome.record["ids"]["context"]
    assert context["scenario"] == scenario.name  # the record says which scenario made it


SDK_JOBS = plan(CATALOG, ("openai", "anthropic"))


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def played_sdk(request: pytest.FixtureRequest) -> dict[tuple[str, str], Outcome]:
    """The catalog's SDK paths (openai and anthropic SDKs through ``wrap()``), once per backend."""
    for sdk in ("openai", "anthropic"):
        why = sdk_available(sdk)
        assert why is None, f"the dev extra installs the SDKs: {why}"  # a missing SDK must not hide these

    async def play() -> list[Outcome]:
        with anyio.fail_after(BOUND):
            return await run_catalog(CATALOG, sdk=("openai", "anthropic"), concurrency=64)

    outcomes = anyio.run(play, backend=request.param)
    return {(outcome.via, outcome.name): outcome for outcome in outcomes}


@pytest.mark.parametrize(("scenario", "sdk"), SDK_JOBS, ids=[f"{sdk}:{s.name}" for s, sdk in SDK_JOBS])
def test_scenario_through_the_sdk_and_wrap(
    scenario: Scenario, sdk: str, played_sdk: dict[tuple[str, str], Outcome]
) -> None:
    outcome = played_sdk[sdk, scenario.name]
    assert outcome.failure_class is scenario.expected_class, outcome.mismatch
    assert outcome.verdict is scenario.expected_verdict, outcome.mismatch
    assert outcome.edge is scenario.expected_edge, outcome.mismatch
    assert outcome.phase is scenario.expected_phase, outcome.mismatch
    assert outcome.matched, outcome.mismatch


def test_every_sdk_speaking_scenario_has_an_sdk_path() -> None:
    covered = {s.name for s, _ in SDK_JOBS}
    wrapped = {fmt for sdk in WRAPPED_SDKS for fmt in SDK_FORMATS[sdk]}  # Ollama's client: the tap only
    for scenario in CATALOG:
        # A WebSocket scenario is the runtime's own source's (wrap() wraps the SDKs' HTTP streams).
        if (
            scenario.format in wrapped
            and scenario.streaming
            and scenario.meta.get("transport") != "websocket"
        ):
            assert scenario.name in covered


def test_every_record_of_our_client_and_of_wrap_walks_the_machine(
    played: dict[str, Outcome], played_sdk: dict[tuple[str, str], Outcome]
) -> None:
    """The core's properties, of each driver's records over the catalog: HTTP, WebSocket and both SDKs."""
    drivers: set[str] = set()
    for outcome in [*played.values(), *played_sdk.values()]:
        assert outcome.record is not None, outcome.name
        assert not machine_walk_problems(outcome.record), (outcome.via, outcome.name)
        drivers.add("websocket" if "/ws-" in outcome.name else outcome.via)
    assert drivers == {"runtime", "websocket", "openai", "anthropic"}


def test_the_walk_finds_a_record_the_machine_disputes(played: dict[str, Outcome]) -> None:
    played_record = played["openai-chat/text-then-fin"].record
    assert played_record is not None
    good = played_record.to_dict()
    assert not machine_walk_problems(good)  # the same record as plain dicts

    def broken(change: Any) -> list[str]:
        record = json.loads(json.dumps(good))
        change(record, record["timeline"]["entries"])
        return machine_walk_problems(record)

    assert broken(lambda r, e: e[-2].update(state="generating/none"))  # a state the moves do not reach
    assert broken(lambda r, e: e.append({"t": 1.0, "event": "text_delta", "state": e[-1]["state"]}))
    assert broken(lambda r, e: e.insert(0, {"t": 0.0, "event": "text_delta", "state": "generating/visible"}))
    assert broken(lambda r, e: r["outcome"].update(edge="reset"))
    assert broken(lambda r, e: r["outcome"].update(state="generating/visible"))


def test_no_raw_transport_message_ever_reaches_a_summary(played: dict[str, Outcome]) -> None:
    for outcome in played.values():
        assert outcome.record is not None
        summary = outcome.record["summary"]
        for raw in (*RAW_TRANSPORT_STRINGS, "Errno", "ECONNRESET"):
            assert raw not in summary["title"] and raw not in summary["detail"], (outcome.name, raw)


def test_provider_error_bodies_never_reach_a_record(played: dict[str, Outcome]) -> None:
    # The 401 body quotes part of an API key; the overflow bodies quote token counts. Only kinds, types and
    # codes may be kept.
    for name in (
        "openai-chat/http-401",
        "anthropic/http-400-context-overflow",
        "gemini/http-429-retry-delay",
    ):
        record = played[name].record
        assert record is not None
        text = record.to_json()
        for leaked in ("sk-proj", "Incorrect API key", "prompt is too long", "exceeded your current quota"):
            assert leaked not in text, (name, leaked)


# -- the seed cases, through the pytest plugin ---------------------------------------------------------------

anyio_test = pytest.mark.anyio  # per test: the catalog tests above are plain functions


@anyio_test
@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
async def test_seed_a_cut_while_tool_arguments_stream_says_the_tool_did_not_run(
    fault_provider: FaultProvider, fmt: str
) -> None:
    outcome = await fault_provider.run(f"{fmt}/tool-args-cut")
    assert outcome.matched, outcome.mismatch
    assert outcome.failure_class is not FailureClass.TOOL_SIDE_EFFECT
    assert outcome.failure_class is FailureClass.TOOL_INPUT_INTERRUPTED
    assert outcome.record is not None
    assert "The tool did not run." in outcome.record["summary"]["detail"]
    assert "`apply_patch`" in outcome.title
    assert outcome.record["tools"]["started"] == 0
    assert outcome.record["stream_events"]["tool_input_start"] == 1
    assert outcome.record["stream_events"].get("tool_call", 0) == 0


@anyio_test
@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
async def test_seed_a_cut_mid_arguments_after_an_effectful_tool_names_the_call_being_written(
    fault_provider: FaultProvider, fmt: str
) -> None:
    outcome = await fault_provider.run(f"{fmt}/parallel-effectful-then-args-cut")
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None
    detail = outcome.record["summary"]["detail"]
    assert "The tool did not run." in detail and "An earlier tool had already started" in detail
    assert "`apply_patch`" in outcome.title and "write_file" not in outcome.title


@anyio_test
@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_every_tool_call_is_its_own_stored_part(fault_provider: FaultProvider, fmt: str) -> None:
    outcome = await fault_provider.run(f"{fmt}/parallel-tool-calls")
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None
    assert outcome.record["stream_events"]["tool_call"] == 2
    assert outcome.record["stored_parts"]["tool"] == 2


@anyio_test
async def test_seed_gemini_cut_inside_its_whole_call_leaves_no_tool_behind(
    fault_provider: FaultProvider,
) -> None:
    outcome = await fault_provider.run("gemini/tool-call-chunk-cut")
    assert outcome.matched, outcome.mismatch
    assert outcome.failure_class is FailureClass.EARLY_STREAM


@anyio_test
@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_seed_a_user_abort_is_local_abort_with_its_source_never_a_disconnect(
    fault_provider: FaultProvider, fmt: str
) -> None:
    outcome = await fault_provider.run(f"{fmt}/user-abort")
    assert outcome.matched, outcome.mismatch
    assert outcome.failure_class is FailureClass.LOCAL_ABORT
    assert outcome.edge is not Trigger.DISCONNECTED
    assert outcome.edge is Trigger.LOCAL_ABORT
    assert outcome.record is not None
    assert outcome.record["abort"]["source"] == "user"
    assert outcome.record["abort"]["reason"] == "user pressed stop"
    assert outcome.record["transport"]["kind"] is None  # nothing about the socket is blamed


@anyio_test
async def test_seed_a_user_abort_is_not_a_disconnect_even_when_the_socket_then_breaks(
    fault_provider: FaultProvider,
) -> None:
    # The user presses stop on the first text; the server resets the connection right after it. The abort
    # was first: the record must say local_abort, never a reset.
    frames = text_stream("anthropic", ["Hello", " world"])
    scenario = Scenario(
        "seed/abort-then-rst",
        (Headers(), *(Send(f) for f in frames[:4]), Fin()),
        format="anthropic",
        expected_class=FailureClass.LOCAL_ABORT,
        expected_verdict=Verdict.NO_RETRY,
        expected_edge=Trigger.LOCAL_ABORT,
        expected_phase=Phase.MID_GENERATION,
        expected_cause="user",
        agent=Agent(abort_on=Trigger.TEXT_DELTA, abort_source=AbortSource.USER, abort_reason="stop"),
    )
    outcome = await fault_provider.run(scenario)
    assert outcome.matched, outcome.mismatch


@anyio_test
@pytest.mark.parametrize("fmt", SSE_FORMATS)
@pytest.mark.parametrize("kind", ["silent", "keepalive"])
async def test_seed_a_silent_stall_after_output_is_a_watchdog_failure_never_a_success(
    fault_provider: FaultProvider, fmt: str, kind: str
) -> None:
    outcome = await fault_provider.run(f"{fmt}/text-then-{kind}-stall")
    assert outcome.matched, outcome.mismatch
    assert outcome.failure_class is not FailureClass.COMPLETED
    assert outcome.failure_class is FailureClass.WATCHDOG
    assert outcome.state is not None and outcome.state.startswith("failed/")
    assert outcome.edge is Trigger.IDLE_TIMEOUT and outcome.phase is Phase.MID_GENERATION
    assert outcome.verdict is Verdict.USER_CONFIRMED_RETRY
    assert outcome.record is not None
    assert outcome.record["watchdog"]["fired"] == "idle_timeout"
    assert outcome.record["finish_reason"]["unified"] is None  # no finish reason was invented


@anyio_test
@pytest.mark.parametrize(
    "name", ["openai-chat/text-then-fin", "anthropic/text-then-rst", "gemini/fin-before-response"]
)
async def test_seed_a_raw_terminated_style_message_never_reaches_the_summary(
    fault_provider: FaultProvider, name: str
) -> None:
    outcome = await fault_provider.run(name)
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None
    summary = f"{outcome.record['summary']['title']} {outcome.record['summary']['detail']}"
    for raw in RAW_TRANSPORT_STRINGS:
        assert raw not in summary
    # The raw evidence is still there for engineers, in the transport section.
    assert outcome.record["transport"]["chain"]


@anyio_test
async def test_the_fixture_serves_catalog_names_scenarios_and_bare_scripts(
    fault_provider: FaultProvider,
) -> None:
    import streamfsm

    url = fault_provider.base_url_for("openai-chat/text-then-fin")
    assert url.startswith(fault_provider.base_url + "/scenario/")
    frames = text_stream("openai-chat", ["Hi"])
    bare = fault_provider.play((Headers(), *(Send(f) for f in frames[:2]), Fin()))
    for base in (url, bare):
        with pytest.raises(streamfsm.StreamFailed) as failed:
            async with streamfsm.open_stream(
                "openai-chat",
                base_url=base,
                json={"model": "m", "messages": []},
                client=fault_provider.client,
            ) as run:
                async for _ in run:
                    pass
        assert failed.value.diagnosis.failure_class is FailureClass.MID_GENERATION
    paths = [r.path for r in fault_provider.requests]
    assert paths[0].startswith("/scenario/openai-chat%2Ftext-then-fin/")
    assert paths[1].startswith("/scenario/play%2F0/")
    refused = fault_provider.base_url_for("anthropic/connection-refused")
    assert not refused.startswith(fault_provider.base_url)
    with pytest.raises(KeyError, match="did you mean"):
        find("openai-chat/text-then-fn")


# -- property: random wire faults over the real server -------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=faulty_streams())
@anyio_test
async def test_random_faults_in_random_streams_are_classified_as_the_oracle_says(
    fault_provider: FaultProvider, stream: FaultyStream
) -> None:
    with anyio.fail_after(10):
        outcome = await fault_provider.run(stream.scenario())
    assert outcome.matched, (outcome.mismatch, stream.format, stream.parts, stream.sent, stream.fault)


def _json_lines(outcomes: dict[str, Outcome]) -> list[dict[str, Any]]:
    return [json.loads(o.record.to_json()) for o in outcomes.values() if o.record is not None]


def test_every_record_round_trips_through_json(played: dict[str, Outcome]) -> None:
    lines = _json_lines(played)
    assert len(lines) == len(CATALOG)
    assert all(line["schema"] == "streamfsm.run/1" for line in lines)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count sockets")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_harness_leaves_no_socket_or_thread_behind(backend: str) -> None:
    paths: list[str | None] = [None] + [s for s in ("openai", "anthropic") if sdk_available(s) is None]
    chosen = [
        s for s in CATALOG if "stall" in s.name or "abort" in s.name or "cancel" in s.name or "rst" in s.name
    ]
    threads = set(threading.enumerate())  # a thread of an earlier test may end meanwhile: not a leak
    before = open_sockets()

    async def play() -> list[Outcome]:
        with anyio.fail_after(BOUND):
            return await run_catalog(chosen, sdk=paths, concurrency=32)

    outcomes = anyio.run(play, backend=backend)
    assert all(o.matched for o in outcomes), [o.mismatch for o in outcomes if not o.matched]
    deadline = time.monotonic() + 2.0  # asyncio may close a transport one loop turn late
    while open_sockets() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_sockets() - before == set()
    assert set(threading.enumerate()) - threads == set()
