"""``streamfsm.wrap()`` around the real ``openai`` and ``anthropic`` SDK streams, against loopback faults.

The same faults as ``tests/runtime/test_run_faults.py`` (where ``open_stream`` meets them), through the SDKs'
own clients (``max_retries=0``, ``base_url`` on a ``FaultServer``), with the same expected classes; a
cross-check runs a table of faults through both paths and compares. Runs in whichever SDK generation the
environment has: the main one (openai 3.x / anthropic 2.x on httpx2) and ``.venv-sdk-legacy`` (openai 2.x /
anthropic 0.x on httpx); ``test_the_sdk_generation_is_the_one_this_environment_pins`` says which was seen.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import anyio
import openai
import pytest

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.runtime import ReasoningDelta, SdkRun, SyncSdkRun, TextDelta, ToolCall, ToolInputDelta
from streamfsm.runtime.drivers import _sdk as sdk_module
from streamfsm.runtime.drivers import _sync_reads as sync_reads_module
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Fin,
    Headers,
    Keepalive,
    Rst,
    Send,
    Sleep,
    Stall,
    Status,
    error_event,
    keepalive,
    text_stream,
    tool_call_stream,
    unused_port,
)
from tests.support.runs import (
    BODIES,
    HTTP_ERRORS,
    check_failure,
    consume,
    cut_before,
    cut_through,
    expect,
    script,
    validate_record,
)
from tests.support.sdk import (
    BOUND_S,
    SDK_BODIES,
    SDK_TIMEOUT_S,
    client_for,
    create,
    fmts,
    serving,
    sync_serving,
)

ROOT = Path(__file__).resolve().parents[2]
OPENAI_MAJOR = int(openai.__version__.split(".")[0])
ANTHROPIC_MAJOR = int(anthropic.__version__.split(".")[0])


async def fail(
    fmt: str, steps: tuple[Any, ...], config: StreamConfig | None = None, *, opened: bool = False
) -> StreamFailed:
    """One SDK stream against a scripted server; it must fail. ``opened``: the caller awaits the SDK call
    and wraps the stream; otherwise the run awaits it (and so classifies HTTP and connect errors too)."""
    async with serving(fmt, steps) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            source = create(fmt, client)
            if opened:
                source = await source
            async with streamfsm.wrap(source, config=config) as run:
                await consume(run)
    return check_failure(info.value)


# -- async: the faults of issue 3, through the SDKs ---------------------------------------------------------


@pytest.mark.anyio
@fmts
@pytest.mark.parametrize("opened", [False, True], ids=["call", "stream"])
async def test_a_normal_stream_finishes_with_counts_and_usage(fmt: str, opened: bool) -> None:
    frames = text_stream(fmt, ["Hel", "lo", " there"], reasoning=["think", "ing"])  # type: ignore[arg-type]
    async with serving(fmt, script(frames, End())) as (_, client):
        source = create(fmt, client)
        if opened:
            source = await source
        with anyio.fail_after(BOUND_S):
            async with streamfsm.wrap(source) as run:
                events = await consume(run)
    assert isinstance(run, SdkRun)
    assert run.finished
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello there"
    assert sum(isinstance(e, ReasoningDelta) for e in events) == 2
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["provider"] == fmt
    assert record["model"] == SDK_BODIES[fmt]["model"]
    assert record["endpoint"].startswith("http://127.0.0.1:")
    assert record["outcome"]["class"] == "completed"
    assert record["stream_events"]["text_delta"] == 3
    assert record["stream_events"]["reasoning_delta"] == 2
    assert record["stored_parts"] == {"text": 1, "reasoning": 1, "tool": 0}
    assert record["tokens"]["input"] == 25 and record["tokens"]["output"] == 40
    assert record["finish_reason"]["unified"] == "stop"
    assert record["delta_keys"], "raw delta field names are counted"
    assert record["ids"]["response_id"]
    assert record["timings"]["to_first_visible_s"] is not None
    assert record["transport"]["status"] == 200
    assert record["transport"]["bytes_received"] > 0
    assert record["request"]["streaming"] is True


@pytest.mark.anyio
@fmts
async def test_the_delta_keys_are_the_ones_open_stream_counts(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("read_file", '{"path": "a.txt"}')], text=["Hi"], reasoning=["hm"])  # type: ignore[arg-type]
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as http_run:
            await consume(http_run)
    async with serving(fmt, script(frames, End())) as (_, client):
        async with streamfsm.wrap(create(fmt, client)) as sdk_run:
            await consume(sdk_run)
    http, sdk = validate_record(http_run.record), validate_record(sdk_run.record)  # type: ignore[arg-type]
    assert sdk["delta_keys"] == http["delta_keys"]
    assert sdk["stored_parts"] == http["stored_parts"]
    assert sdk["tokens"] == http["tokens"]
    assert sdk["finish_reason"] == http["finish_reason"]
    for kind in ("text_delta", "reasoning_delta", "tool_input_start", "tool_input_delta", "tool_call"):
        assert sdk["stream_events"].get(kind) == http["stream_events"].get(kind), kind


@pytest.mark.anyio
@fmts
async def test_cut_after_headers_is_early_stream_and_safe(fmt: str) -> None:
    failure = await fail(fmt, (Headers(), Fin()))
    expect(failure, "early_stream", "safe_auto_retry", "disconnected", "early_stream")
    assert failure.diagnosis.cause == "closed_mid_body"
    assert failure.record["transport"]["headers_received"] is True
    assert isinstance(failure.__cause__, Exception)


@pytest.mark.anyio
@fmts
async def test_cut_after_reasoning_is_still_safe(fmt: str) -> None:
    frames = text_stream(fmt, ["visible"], reasoning=["thinking", "more"])  # type: ignore[arg-type]
    failure = await fail(fmt, script(cut_before(fmt, frames, TextDelta), Fin()))
    expect(failure, "early_stream", "safe_auto_retry", "disconnected", "early_stream")
    assert failure.record["stream_events"]["reasoning_delta"] >= 1
    assert failure.record["stream_events"].get("text_delta", 0) == 0


@pytest.mark.anyio
@fmts
@pytest.mark.parametrize("opened", [False, True], ids=["call", "stream"])
async def test_cut_after_visible_text_needs_the_user(fmt: str, opened: bool) -> None:
    frames = text_stream(fmt, ["Hello", " world", " again"])  # type: ignore[arg-type]
    failure = await fail(fmt, script(cut_through(fmt, frames, TextDelta), Fin()), opened=opened)
    expect(failure, "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation")
    assert failure.record["retry"]["action"] == "continue_with_partial"
    assert failure.diagnosis.cause == "closed_mid_body"


@pytest.mark.anyio
@fmts
async def test_rst_after_text_is_a_reset(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"])  # type: ignore[arg-type]
    failure = await fail(fmt, script(cut_through(fmt, frames, TextDelta), Rst()))
    expect(failure, "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation")
    assert failure.diagnosis.cause == "reset"
    assert failure.record["transport"]["errno"] == 104


@pytest.mark.anyio
@fmts
async def test_cut_while_tool_arguments_stream_says_the_tool_did_not_run(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("apply_patch", '{"patch": "' + "x" * 60 + '"}')])  # type: ignore[arg-type]
    failure = await fail(fmt, script(cut_through(fmt, frames, ToolInputDelta), Fin()))
    expect(failure, "tool_input_interrupted", "safe_auto_retry", "disconnected", "tool_input")
    assert "apply_patch" in failure.diagnosis.title
    assert "The tool did not run." in failure.diagnosis.detail


@pytest.mark.anyio
@fmts
async def test_in_band_error_before_output_is_a_safe_provider_error(fmt: str) -> None:
    error = error_event(fmt, "overloaded", sequence_number=0)  # type: ignore[arg-type]
    failure = await fail(fmt, (Headers(), Send(error), End()))
    expect(failure, "provider_error", "safe_auto_retry", "provider_error_event", "early_stream")
    assert failure.diagnosis.cause == "overloaded"
    assert failure.record["retry"]["action"] == "retry_after_backoff"


@pytest.mark.anyio
@fmts
async def test_in_band_error_after_output_needs_the_user(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)  # type: ignore[arg-type]
    error = error_event(fmt, "overloaded", sequence_number=len(frames))  # type: ignore[arg-type]
    failure = await fail(fmt, script(frames, Send(error), End()))
    expect(failure, "provider_error", "user_confirmed_retry", "provider_error_event", "mid_generation")
    assert failure.diagnosis.cause == "overloaded"


@pytest.mark.anyio
@pytest.mark.parametrize("shape", ["flat", "nested", "failed"])
async def test_responses_error_shapes_are_all_provider_errors(shape: str) -> None:
    # openai raises the nested shape as an APIError; the flat one and response.failed are yielded as items.
    error = error_event("openai-responses", "rate_limit", shape=shape, sequence_number=0)  # type: ignore[arg-type]
    failure = await fail("openai-responses", (Headers(), Send(error), End()))
    assert failure.diagnosis.failure_class.value == "provider_error"
    assert failure.diagnosis.cause == "rate_limit"


@pytest.mark.anyio
@fmts
async def test_clean_eof_without_terminal_is_never_a_success(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)  # type: ignore[arg-type]
    failure = await fail(fmt, script(frames, End()))
    expect(failure, "mid_generation", "user_confirmed_retry", "eof_without_terminal", "mid_generation")


@pytest.mark.anyio
async def test_a_chat_stream_cut_between_its_finish_reason_and_done_is_seen_through_the_sdk() -> None:
    # The openai SDK ends the same way with or without [DONE], and after a cut; wrap() reads the body itself,
    # so it tells a cut (FIN mid-body) from a clean end that only lacks [DONE] (issue 16, item 4).
    frames = text_stream("openai-chat", ["Hello"])
    without_done = frames[:-1]
    assert without_done[-1].startswith(b"data: {") and b"[DONE]" in frames[-1]
    failure = await fail("openai-chat", script(without_done, Fin()))
    expect(failure, "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation")
    assert failure.record["finish_reason"]["raw"] == "stop"
    async with serving("openai-chat", script(without_done, End())) as (_, client):
        with anyio.fail_after(BOUND_S):
            async with streamfsm.wrap(create("openai-chat", client)) as run:
                await consume(run)
    assert run.finished and run.record is not None
    assert "wire=done_missing" in run.record["outcome"]["evidence"]


@pytest.mark.anyio
@fmts
async def test_stall_kept_alive_by_keepalives_fires_the_idle_watchdog(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)  # type: ignore[arg-type]
    alive = Keepalive(every=0.05, count=200, frame=keepalive(fmt))  # type: ignore[arg-type]
    started = time.monotonic()
    failure = await fail(fmt, script(frames, alive, End()), StreamConfig(idle_timeout=0.4))
    assert time.monotonic() - started < 5
    expect(failure, "watchdog", "user_confirmed_retry", "idle_timeout", "mid_generation")
    assert failure.record["watchdog"]["fired"] == "idle_timeout"
    # The SDKs drop comments and pings; wrap() reads the body itself and counts them, as open_stream does.
    assert failure.record["stream_events"]["keepalive"] > 0
    assert failure.record["transport"]["bytes_received"] > sum(len(f) for f in frames)


@pytest.mark.anyio
@pytest.mark.parametrize("opened", [False, True], ids=["call", "stream"])
async def test_silence_before_first_progress_fires_the_first_token_watchdog(opened: bool) -> None:
    config = StreamConfig(first_token_timeout=0.3)
    failure = await fail("openai-chat", (Headers(), Stall()), config, opened=opened)
    expect(failure, "watchdog", "safe_auto_retry", "first_token_timeout", "early_stream")


@pytest.mark.anyio
@fmts
async def test_stall_before_headers_fires_the_connect_watchdog(fmt: str) -> None:
    failure = await fail(fmt, (Stall(),), StreamConfig(connect_timeout=0.3))
    expect(failure, "watchdog", "safe_auto_retry", "connect_timeout", "before_connection")
    assert failure.diagnosis.possibly_delivered


@pytest.mark.anyio
async def test_total_deadline_fires_even_while_progress_flows() -> None:
    # The deadline is wide enough that a loaded machine still connects before it (CI saw a 0.5 s one
    # fire while connecting); the stream outlasts it many times over.
    frames = text_stream("openai-chat", ["a"] * 300)
    steps = (Headers(), *(step for f in frames for step in (Send(f), Sleep(0.05))), End())
    failure = await fail("openai-chat", steps, StreamConfig(total_timeout=2.0, idle_timeout=10))
    expect(failure, "watchdog", "user_confirmed_retry", "total_timeout", "mid_generation")
    assert failure.record["stream_events"]["text_delta"] >= 2


@pytest.mark.anyio
@fmts
async def test_local_abort_is_recorded_with_its_source_and_never_looks_like_a_disconnect(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"])  # type: ignore[arg-type]
    async with serving(fmt, script(cut_through(fmt, frames, TextDelta), Stall())) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(create(fmt, client)) as run:
                async for event in run:
                    if isinstance(event, TextDelta):
                        run.abort("user pressed stop", source="user")
    failure = check_failure(info.value)
    expect(failure, "local_abort", "no_retry", "local_abort", "mid_generation")
    abort = failure.record["abort"]
    assert abort["source"] == "user" and abort["reason"] == "user pressed stop"
    assert failure.record["transport"]["kind"] is None


@pytest.mark.anyio
@fmts
async def test_abort_from_another_task_stops_a_blocked_read_promptly(fmt: str) -> None:
    async def stop_soon(run: streamfsm.Run) -> None:
        await anyio.sleep(0.1)
        run.abort("app shutting down", source="app")

    failure: StreamFailed | None = None
    async with serving(fmt, (Headers(), Stall())) as (_, client):
        async with streamfsm.wrap(create(fmt, client)) as run:
            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(stop_soon, run)
                    try:
                        await consume(run)
                    except StreamFailed as caught:
                        failure = caught
    assert failure is not None
    check_failure(failure)
    assert failure.diagnosis.cause == "app"
    assert failure.diagnosis.failure_class.value == "local_abort"
    assert failure.record["abort"]["reason"] == "app shutting down"


@pytest.mark.anyio
async def test_abort_while_the_request_is_in_flight_is_a_local_abort() -> None:
    async def stop_soon(run: streamfsm.Run) -> None:
        await anyio.sleep(0.1)
        run.abort("never mind", source="user")

    failure: StreamFailed | None = None
    async with serving("anthropic", (Stall(),)) as (_, client):
        run = streamfsm.wrap(create("anthropic", client))
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_soon, run)
                try:
                    async with run:
                        pass
                except StreamFailed as caught:
                    failure = caught
    assert failure is not None
    check_failure(failure)
    expect(failure, "local_abort", "no_retry", "local_abort", "before_connection")


@pytest.mark.anyio
@fmts
async def test_outside_cancellation_is_recorded_then_propagates(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)  # type: ignore[arg-type]
    async with serving(fmt, script(frames, Stall())) as (_, client):
        run = streamfsm.wrap(create(fmt, client))
        with anyio.move_on_after(0.3) as scope:
            async with run:
                await consume(run)
    assert scope.cancelled_caught, "the cancellation propagated out of the run unchanged"
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "local_abort"
    assert record["abort"]["source"] == "cancelled"


@pytest.mark.anyio
async def test_consumer_leaving_early_is_a_local_abort() -> None:
    frames = text_stream("anthropic", ["Hello", " world"])
    async with serving("anthropic", script(frames, End())) as (_, client):
        async with streamfsm.wrap(create("anthropic", client)) as run:
            async for event in run:
                if isinstance(event, TextDelta):
                    break
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["abort"]["source"] == "consumer_stopped"


@pytest.mark.anyio
async def test_consumer_error_is_recorded_and_reraised_as_it_was() -> None:
    frames = text_stream("openai-chat", ["Hello", " world"])
    async with serving("openai-chat", script(frames, End())) as (_, client):
        with pytest.raises(KeyError, match="boom"):
            async with streamfsm.wrap(create("openai-chat", client)) as run:
                async for _ in run:
                    raise KeyError("boom")
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "consumer_error"
    assert record["retry"]["verdict"] == "no_retry"


@pytest.mark.anyio
@pytest.mark.parametrize(("status", "headers", "body", "cause", "verdict", "retry_after"), HTTP_ERRORS)
async def test_http_errors_are_classified_before_any_stream(
    status: int, headers: tuple[tuple[str, str], ...], body: bytes, cause: str, verdict: str, retry_after: Any
) -> None:
    steps = (Status(status, (("content-type", "application/json"), *headers), body),)
    failure = await fail("openai-chat", steps)
    expect(failure, "provider_error", verdict, "http_error", "before_connection")
    assert failure.diagnosis.cause == cause
    assert failure.diagnosis.retry_after_s == retry_after
    assert failure.record["transport"]["status"] == status


@pytest.mark.anyio
@fmts
async def test_http_429_with_retry_after_is_a_rate_limit_for_every_sdk(fmt: str) -> None:
    body = (
        b'{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}'
        if fmt == "anthropic"
        else b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}'
    )
    steps = (
        Status(
            429, (("content-type", "application/json"), ("retry-after", "2"), ("request-id", "req_1")), body
        ),
    )
    failure = await fail(fmt, steps)
    expect(failure, "provider_error", "safe_auto_retry", "http_error", "before_connection")
    assert failure.diagnosis.cause == "rate_limit"
    assert failure.diagnosis.retry_after_s == 2.0
    assert failure.record["ids"]["provider_request_id"] == "req_1"


@pytest.mark.anyio
@fmts
async def test_connection_refused_is_before_connection_and_safe(fmt: str) -> None:
    client = client_for(fmt, f"http://127.0.0.1:{unused_port()}")
    try:
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(create(fmt, client)) as run:
                await consume(run)
    finally:
        await client.close()
    failure = check_failure(info.value)
    expect(failure, "before_connection", "safe_auto_retry", "connect_failed", "before_connection")
    assert failure.diagnosis.cause == "refused"
    assert not failure.diagnosis.possibly_delivered


@pytest.mark.anyio
async def test_fin_before_response_is_before_connection() -> None:
    failure = await fail("openai-chat", (Fin(),))
    assert failure.diagnosis.failure_class.value == "before_connection"
    assert failure.diagnosis.cause == "closed_before_response"
    assert failure.diagnosis.possibly_delivered


@pytest.mark.anyio
@fmts
async def test_parallel_tool_calls_complete_and_the_agent_tool_ledger_drives_the_machine(fmt: str) -> None:
    calls = [("read_file", '{"path": "a.txt"}'), ("write_file", '{"path": "b.txt", "text": "hi"}')]
    frames = tool_call_stream(fmt, calls)  # type: ignore[arg-type]
    async with serving(fmt, script(frames, End())) as (_, client):
        async with streamfsm.wrap(create(fmt, client)) as run:
            seen: list[ToolCall] = []
            async for event in run:
                if isinstance(event, ToolCall):
                    seen.append(event)
                    run.tool_started(
                        event.call_id, effect="read_only" if event.name == "read_file" else "effectful"
                    )
    assert [(c.name, json.loads(c.arguments)) for c in seen] == [(n, json.loads(a)) for n, a in calls]
    for call in seen:
        run.tool_finished(call.call_id)
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "completed"
    assert record["finish_reason"]["unified"] == "tool_calls"
    assert record["tools"]["started"] == 2 and record["tools"]["effectful"] == 1


@pytest.mark.anyio
@fmts
async def test_cut_while_an_effectful_tool_runs_is_a_side_effect(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("write_file", '{"path": "b.txt"}')], text=["Writing it."])  # type: ignore[arg-type]
    async with serving(fmt, script(cut_through(fmt, frames, ToolCall), Fin())) as (_, client):
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(create(fmt, client)) as run:
                async for event in run:
                    if isinstance(event, ToolCall):
                        run.tool_started(event.call_id, effect="effectful")
    failure = check_failure(info.value)
    expect(failure, "tool_side_effect", "no_retry", "disconnected", "tool_execution")
    assert "`write_file`" in failure.diagnosis.detail


@pytest.mark.anyio
async def test_unknown_tool_call_id_is_an_illegal_transition() -> None:
    async with serving("openai-chat", script(text_stream("openai-chat", ["hi"]), End())) as (_, client):
        async with streamfsm.wrap(create("openai-chat", client)) as run:
            await consume(run)
            with pytest.raises(streamfsm.IllegalTransition):
                run.tool_started("call_nope")


# -- the same faults through both paths: the classes must agree ----------------------------------------------


def _scenarios(fmt: str) -> dict[str, tuple[Any, ...]]:
    text = text_stream(fmt, ["Hello", " world"], reasoning=["hm"])  # type: ignore[arg-type]
    tool = tool_call_stream(fmt, [("apply_patch", '{"patch": "' + "x" * 40 + '"}')])  # type: ignore[arg-type]
    return {
        "finished": script(text, End()),
        "after_headers": (Headers(), Fin()),
        "after_reasoning": script(cut_before(fmt, text, TextDelta), Fin()),
        "mid_text": script(cut_through(fmt, text, TextDelta), Fin()),
        "mid_text_rst": script(cut_through(fmt, text, TextDelta), Rst()),
        "tool_input": script(cut_through(fmt, tool, ToolInputDelta), Fin()),
        "tool_ready": script(cut_through(fmt, tool, ToolCall), Fin()),
        "error_first": (Headers(), Send(error_event(fmt, "rate_limit", sequence_number=0)), End()),  # type: ignore[arg-type]
        "eof_mid_text": script(cut_through(fmt, text, TextDelta), End()),
        "eof_before_terminal": script(text[:-1], End()),
        "keepalives": (Headers(), Send(keepalive(fmt)), *(Send(f) for f in text), End()),  # type: ignore[arg-type]
        "http_429": (Status(429, (("retry-after", "3"), ("content-type", "application/json")), b"{}"),),
        "http_401": (Status(401, (("content-type", "application/json"),), b"{}"),),
        "fin_first": (Fin(),),
    }


SCENARIOS = tuple(_scenarios("openai-chat"))


def _outcome(run: streamfsm.Run, failure: StreamFailed | None) -> tuple[Any, ...]:
    record = failure.record if failure is not None else run.record
    assert record is not None
    validate_record(record)
    outcome = record["outcome"]
    return (
        outcome["class"],
        outcome["edge"],
        outcome["phase"],
        outcome["cause"],
        record["retry"]["verdict"],
        record["retry"]["action"],
        record["retry"]["retry_after_s"],
        record["stream_events"].get("text_delta", 0),
        record["stream_events"].get("keepalive", 0),
        record["delta_keys"],
    )


@pytest.mark.anyio
@fmts
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_the_sdk_path_classifies_each_fault_as_open_stream_does(fmt: str, scenario: str) -> None:
    steps = _scenarios(fmt)[scenario]
    outcomes = []
    with anyio.fail_after(BOUND_S):
        async with FaultServer(steps) as server:
            failure = None
            run: streamfsm.Run = streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt])
            try:
                async with run:
                    await consume(run)
            except StreamFailed as caught:
                failure = caught
            outcomes.append(_outcome(run, failure))
        async with serving(fmt, steps) as (_, client):
            failure = None
            run = streamfsm.wrap(create(fmt, client))
            try:
                async with run:
                    await consume(run)
            except StreamFailed as caught:
                failure = caught
            outcomes.append(_outcome(run, failure))
    http, sdk = outcomes
    assert sdk == http


# -- the item path: anthropic's MessageStream helper, and streams handed over after some use --------------


@pytest.mark.anyio
@pytest.mark.parametrize("entered", [False, True], ids=["manager", "stream"])
async def test_anthropic_message_stream_helper_events_are_skipped(entered: bool) -> None:
    frames = text_stream("anthropic", ["Hel", "lo"], reasoning=["th"])
    async with serving("anthropic", script(frames, End())) as (_, client):
        manager = client.messages.stream(**SDK_BODIES["anthropic"])
        if entered:
            async with manager as stream:
                async with streamfsm.wrap(stream) as run:
                    events = await consume(run)
                # The helper still accumulated what went by (the run closed the stream at its end).
                assert stream.current_message_snapshot.content[-1].text == "Hello"
        else:
            async with streamfsm.wrap(manager) as run:
                events = await consume(run)
        async with streamfsm.wrap(create("anthropic", client)) as raw:  # the same frames, no helper events
            await consume(raw)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "completed"
    assert record["stream_events"]["text_delta"] == 2
    assert record["stream_events"]["reasoning_delta"] == 1
    # Nothing more is counted than from the raw stream of the same frames, less the pings the SDK drops.
    raw_counts = {k: v for k, v in raw.record["stream_events"].items() if k != "keepalive"}  # type: ignore[index]
    assert record["stream_events"] == raw_counts


@pytest.mark.anyio
async def test_anthropic_message_stream_manager_classifies_http_errors() -> None:
    body = b'{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}'
    steps = (Status(529, (("content-type", "application/json"),), body),)
    async with serving("anthropic", steps) as (_, client):
        with pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(client.messages.stream(**SDK_BODIES["anthropic"])) as run:
                await consume(run)
    failure = check_failure(info.value)
    expect(failure, "provider_error", "safe_auto_retry", "http_error", "before_connection")
    assert failure.diagnosis.cause == "overloaded"


@pytest.mark.anyio
async def test_a_stream_already_iterated_is_read_item_by_item_and_watched() -> None:
    # The SDK's decoder may hold part of the body, so the run iterates the SDK's items: the scope goes
    # around each item, and what the SDK drops (keepalives) is not seen.
    frames = cut_through("openai-chat", text_stream("openai-chat", ["Hello", " world"]), TextDelta)
    alive = Keepalive(every=0.05, count=200, frame=keepalive("openai-chat"))
    async with serving("openai-chat", script(frames, alive, End())) as (_, client):
        stream = await create("openai-chat", client)
        first = await stream.__anext__()
        assert first.choices[0].delta.role == "assistant"
        with anyio.fail_after(BOUND_S), pytest.raises(StreamFailed) as info:
            async with streamfsm.wrap(stream, config=StreamConfig(idle_timeout=0.4)) as run:
                assert not run._reads_body
                await consume(run)
    failure = check_failure(info.value)
    expect(failure, "watchdog", "user_confirmed_retry", "idle_timeout", "mid_generation")
    assert failure.record["stream_events"].get("keepalive", 0) == 0


@pytest.mark.anyio
@fmts
@pytest.mark.parametrize("why", ["decoder", "content_type"])
async def test_a_body_the_sdk_does_not_decode_as_sse_is_read_item_by_item(
    fmt: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bedrock's client decodes an AWS event stream with a decoder of its own; only an SSE body served as
    # text/event-stream and read with the SDK's SSEDecoder is read by the run itself.
    served = "application/octet-stream" if why == "content_type" else "text/event-stream"
    frames = text_stream(fmt, ["Hel", "lo"])  # type: ignore[arg-type]
    async with serving(fmt, (Headers(headers=(("content-type", served),)), *map(Send, frames), End())) as (
        _,
        client,
    ):
        if why == "decoder":
            stock = type(client._make_sse_decoder())
            other = type("EventStreamDecoder", (stock,), {})
            # anthropic 2.16 passes the request options; older SDKs pass nothing
            monkeypatch.setattr(client, "_make_sse_decoder", lambda *args, **kwargs: other())
        async with streamfsm.wrap(create(fmt, client)) as run:
            events = await consume(run)
            assert not run._reads_body
    assert run.finished
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"


@pytest.mark.anyio
@fmts
async def test_a_finished_stream_leaves_the_sdk_clients_connection_for_the_next_request(fmt: str) -> None:
    # The run stops at the terminal event; the body's end is read after it, so HTTP/1.1 keeps the connection.
    frames = text_stream(fmt, ["Hel", "lo"])  # type: ignore[arg-type]
    async with serving(fmt, script(frames, End())) as (server, client):
        for _ in range(2):
            async with streamfsm.wrap(create(fmt, client)) as run:
                await consume(run)
            assert run.finished
    assert [r.connection for r in server.requests] == [0, 0]


async def _after_one_item(frames: list[bytes]) -> tuple[streamfsm.Run, StreamFailed | None]:
    """A chat stream the caller iterated one item of, then wrapped: the run reads the SDK's items."""
    async with serving("openai-chat", script(frames, End())) as (_, client):
        stream = await create("openai-chat", client)
        await stream.__anext__()
        run = streamfsm.wrap(stream)
        try:
            async with run:
                assert not run._reads_body
                await consume(run)
        except StreamFailed as failure:
            return run, check_failure(failure)
    return run, None


@pytest.mark.anyio
async def test_item_path_chat_end_after_a_finish_reason_counts_as_finished() -> None:
    # The SDK ends the same way with or without [DONE]: on its items, a finish_reason is the terminal signal.
    run, failure = await _after_one_item(text_stream("openai-chat", ["Hello"])[:-1])
    assert failure is None
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "completed"
    assert record["finish_reason"] == {"raw": "stop", "unified": "stop"}


@pytest.mark.anyio
async def test_item_path_chat_end_without_a_finish_reason_says_so() -> None:
    frames = cut_through("openai-chat", text_stream("openai-chat", ["Hello", " world"]), TextDelta)
    _, failure = await _after_one_item(frames)
    assert failure is not None
    expect(failure, "mid_generation", "user_confirmed_retry", "eof_without_terminal", "mid_generation")
    assert "detail=no_finish_reason" in failure.record["outcome"]["evidence"]


# -- what wrap() accepts ------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
async def test_the_openai_format_is_read_from_the_first_item_when_the_stream_does_not_say(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stream whose item type cannot be read (the SDK's private ``_cast_to``): the first item decides.
    monkeypatch.setattr(sdk_module, "_stream_hint", lambda stream: (None, False))
    async with serving(fmt, script(text_stream(fmt, ["Hel", "lo"]), End())) as (_, client):  # type: ignore[arg-type]
        stream = await create(fmt, client)
        async with streamfsm.wrap(stream) as run:
            assert run.provider == "openai"
            events = await consume(run)
    assert run.provider == fmt
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert validate_record(run.record)["provider"] == fmt  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_any_awaitable_that_opens_an_sdk_stream_is_taken() -> None:
    async with serving("anthropic", script(text_stream("anthropic", ["Hi"]), End())) as (_, client):

        async def open_it() -> Any:
            return await create("anthropic", client)

        async with streamfsm.wrap(open_it()) as run:
            await consume(run)
    assert run.finished and run.provider == "anthropic"


@pytest.mark.parametrize("thing", [object(), [1, 2], "text", None])
def test_anything_but_an_sdk_stream_is_a_type_error(thing: Any) -> None:
    with pytest.raises(TypeError, match="openai or anthropic SDK"):
        streamfsm.wrap(thing)


def test_an_unknown_or_mismatched_provider_is_a_value_error() -> None:
    with FaultServerThread(script(text_stream("anthropic", ["hi"]), End())) as server:
        client = client_for("anthropic", server.base_url, sync=True)
        with create("anthropic", client) as stream:
            with pytest.raises(ValueError, match="provider formats"):
                streamfsm.wrap(stream, provider="gemini")
            with pytest.raises(ValueError, match="does not match"):
                streamfsm.wrap(stream, provider="openai-chat")
            with streamfsm.wrap(stream, provider="anthropic") as run:
                for _ in run:
                    pass
        client.close()
    assert run.finished


def test_an_openai_stream_of_another_endpoint_is_refused() -> None:
    frame = b'data: {"id": "cmpl-1", "object": "text_completion", "choices": [], "model": "m"}\n\n'
    with FaultServerThread((Headers(), Send(frame), End())) as server:
        client = client_for("openai-chat", server.base_url, sync=True)
        stream = client.completions.create(model="m", prompt="hi", stream=True)
        with pytest.raises(ValueError, match="Chat Completions and Responses"):
            streamfsm.wrap(stream)
        stream.close()
        client.close()


def test_streamfsm_never_imports_the_sdks() -> None:
    check = (
        "import streamfsm, streamfsm.runtime, sys; streamfsm.wrap; "
        "assert 'openai' not in sys.modules and 'anthropic' not in sys.modules, sorted(sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_sdk_generation_is_the_one_this_environment_pins() -> None:
    # openai >= 3 and anthropic >= 1 run on httpx2; openai 2.x and anthropic 0.x on httpx.
    wanted = {
        "openai-chat": "httpx2" if OPENAI_MAJOR >= 3 else "httpx",
        "anthropic": "httpx2" if ANTHROPIC_MAJOR >= 1 else "httpx",
    }
    frames = {fmt: text_stream(fmt, ["hi"]) for fmt in wanted}  # type: ignore[arg-type]
    for fmt, family in wanted.items():
        with FaultServerThread(script(frames[fmt], End())) as server:
            client = client_for(fmt, server.base_url, sync=True)
            with streamfsm.wrap(create(fmt, client)) as run:
                assert type(run._response).__module__.partition(".")[0] == family
                for _ in run:
                    pass
            client.close()
        assert run.finished
    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}: {wanted}")


# -- sync ---------------------------------------------------------------------------------------------------


def sync_fail(fmt: str, steps: tuple[Any, ...], config: StreamConfig | None = None) -> StreamFailed:
    with sync_serving(fmt, steps) as (_, client), pytest.raises(StreamFailed) as info:
        with streamfsm.wrap(create(fmt, client), config=config) as run:
            for _ in run:
                pass
    return check_failure(info.value)


@fmts
def test_sync_a_normal_stream_finishes(fmt: str) -> None:
    frames = text_stream(fmt, ["Hel", "lo"], reasoning=["th"])  # type: ignore[arg-type]
    with sync_serving(fmt, script(frames, End())) as (_, client):
        with streamfsm.wrap(create(fmt, client)) as run:
            assert isinstance(run, SyncSdkRun)
            events = list(run)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "completed"
    assert record["tokens"]["input"] == 25 and record["tokens"]["output"] == 40
    assert record["stream_events"]["text_delta"] == 2


@fmts
def test_sync_cut_after_visible_text_needs_the_user(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"])  # type: ignore[arg-type]
    failure = sync_fail(fmt, script(cut_through(fmt, frames, TextDelta), Fin()))
    expect(failure, "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation")


@fmts
def test_sync_stall_kept_alive_by_keepalives_fires_the_idle_watchdog(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)  # type: ignore[arg-type]
    alive = Keepalive(every=0.05, count=200, frame=keepalive(fmt))  # type: ignore[arg-type]
    started = time.monotonic()
    failure = sync_fail(fmt, script(frames, alive, End()), StreamConfig(idle_timeout=0.4))
    assert time.monotonic() - started < 5
    expect(failure, "watchdog", "user_confirmed_retry", "idle_timeout", "mid_generation")
    assert failure.record["watchdog"]["fired"] == "idle_timeout"


@fmts
def test_sync_a_blocked_read_is_interrupted_by_the_watchdog_thread(fmt: str) -> None:
    # Total silence after the headers: only the watchdog thread (shutting the socket down) can end the read.
    started = time.monotonic()
    failure = sync_fail(fmt, (Headers(), Stall()), StreamConfig(first_token_timeout=0.3))
    assert time.monotonic() - started < 5, "the SDK's own 10 s read timeout did not decide"
    expect(failure, "watchdog", "safe_auto_retry", "first_token_timeout", "early_stream")
    assert failure.record["watchdog"]["fired"] == "first_token_timeout"
    assert failure.record["transport"]["kind"] is None, "our own shutdown is not a transport fault"


def test_sync_abort_from_another_thread_stops_a_blocked_read() -> None:
    frames = cut_through("openai-chat", text_stream("openai-chat", ["Hello", " world"]), TextDelta)
    with sync_serving("openai-chat", script(frames, Stall())) as (_, client):
        with pytest.raises(StreamFailed) as info:
            with streamfsm.wrap(create("openai-chat", client)) as run:
                threading.Timer(0.2, run.abort, ("user pressed stop",)).start()
                started = time.monotonic()
                for _ in run:
                    pass
        assert time.monotonic() - started < 5
    failure = check_failure(info.value)
    expect(failure, "local_abort", "no_retry", "local_abort", "mid_generation")
    assert failure.record["abort"]["reason"] == "user pressed stop"


def test_sync_consumer_leaving_early_is_a_local_abort() -> None:
    with sync_serving("anthropic", script(text_stream("anthropic", ["Hello", " world"]), End())) as (
        _,
        client,
    ):
        with streamfsm.wrap(create("anthropic", client)) as run:
            for event in run:
                if isinstance(event, TextDelta):
                    break
    assert validate_record(run.record)["abort"]["source"] == "consumer_stopped"  # type: ignore[arg-type]


def test_sync_message_stream_manager_classifies_http_errors() -> None:
    body = b'{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}'
    steps = (Status(429, (("content-type", "application/json"), ("retry-after", "4")), body),)
    with sync_serving("anthropic", steps) as (_, client), pytest.raises(StreamFailed) as info:
        with streamfsm.wrap(client.messages.stream(**SDK_BODIES["anthropic"])) as run:
            for _ in run:
                pass
    failure = check_failure(info.value)
    expect(failure, "provider_error", "safe_auto_retry", "http_error", "before_connection")
    assert failure.diagnosis.retry_after_s == 4.0


def test_sync_message_stream_manager_stall_before_headers_fires_the_connect_watchdog() -> None:
    # The manager sends the request in __enter__: the connect deadline must end that wait, not the SDK's.
    with sync_serving("anthropic", (Stall(),)) as (_, client), pytest.raises(StreamFailed) as info:
        started = time.monotonic()
        with streamfsm.wrap(
            client.messages.stream(**SDK_BODIES["anthropic"]), config=StreamConfig(connect_timeout=0.3)
        ) as run:
            for _ in run:
                pass
    assert time.monotonic() - started < SDK_TIMEOUT_S / 2, "the SDK's own timeout decided"
    failure = check_failure(info.value)
    expect(failure, "watchdog", "safe_auto_retry", "connect_timeout", "before_connection")
    assert failure.diagnosis.possibly_delivered


def test_sync_abort_from_another_thread_stops_a_message_stream_manager_still_connecting() -> None:
    with sync_serving("anthropic", (Stall(),)) as (_, client), pytest.raises(StreamFailed) as info:
        run = streamfsm.wrap(client.messages.stream(**SDK_BODIES["anthropic"]))
        threading.Timer(0.2, run.abort, ("user pressed stop",)).start()
        started = time.monotonic()
        with run:
            for _ in run:
                pass
    assert time.monotonic() - started < SDK_TIMEOUT_S / 2, "the SDK's own timeout decided"
    failure = check_failure(info.value)
    expect(failure, "local_abort", "no_retry", "local_abort", "before_connection")
    assert failure.record["abort"]["reason"] == "user pressed stop"


def test_sync_a_manager_that_answers_after_the_connect_deadline_is_closed_by_its_helper() -> None:
    frames = text_stream("anthropic", ["Hel", "lo"])
    steps = (Sleep(0.6), *script(frames, Stall()))
    with sync_serving("anthropic", steps) as (server, client):
        manager = client.messages.stream(**SDK_BODIES["anthropic"])
        closed = threading.Event()
        exit_manager = manager.__exit__

        def spy(*args: Any) -> Any:
            closed.set()
            return exit_manager(*args)

        manager.__exit__ = spy
        with pytest.raises(StreamFailed) as info:
            with streamfsm.wrap(manager, config=StreamConfig(connect_timeout=0.3)) as run:
                for _ in run:
                    pass
        assert info.value.record["outcome"]["edge"] == "connect_timeout"
        assert closed.wait(5), "the late stream was left open"
        assert server.requests_seen == 1


def test_sync_abort_before_entering_sends_nothing() -> None:
    with sync_serving("anthropic", (Headers(), Stall())) as (server, client):
        run = streamfsm.wrap(client.messages.stream(**SDK_BODIES["anthropic"]))
        run.abort("changed my mind")
        with pytest.raises(StreamFailed) as info:
            with run:
                pass
        assert server.requests_seen == 0
    assert str(info.value.diagnosis.state) == "idle/none"
    assert info.value.record["abort"]["reason"] == "changed my mind"


def test_sync_message_stream_manager_that_connects_in_time_streams_as_before() -> None:
    frames = text_stream("anthropic", ["Hel", "lo"])
    steps = (Sleep(0.1), *script(frames, End()))
    with sync_serving("anthropic", steps) as (_, client):
        with streamfsm.wrap(
            client.messages.stream(**SDK_BODIES["anthropic"]), config=StreamConfig(connect_timeout=2)
        ) as run:
            text = "".join(e.text for e in run if isinstance(e, TextDelta))
    assert text == "Hello" and run.finished


@pytest.mark.anyio
async def test_a_sync_run_refuses_async_with() -> None:
    with sync_serving("openai-chat", script(text_stream("openai-chat", ["hi"]), End())) as (_, client):
        run = streamfsm.wrap(create("openai-chat", client))
        with pytest.raises(TypeError, match="sync SDK stream"):
            async with run:  # type: ignore[attr-defined]
                pass
        with run:
            list(run)
    assert run.finished


def test_sync_a_tool_thread_never_moves_the_deadline_of_a_read_it_did_not_see(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tool thread works out the resumed idle deadline of read N, then is pre-empted (a sleep stands in)
    # while read N ends and read N+1 arms its own. The stale deadline must not land on read N+1: each read
    # waits 0.7-0.8 s, under the 1 s idle timeout, so the stream completes.
    frames = tool_call_stream("anthropic", [("write_file", "{}"), ("read_file", "{}")])
    first = cut_through("anthropic", frames, ToolCall)
    rest = frames[len(first) :]
    steps = (
        *script(first),
        Sleep(0.7),
        Send(rest[0]),
        Send(rest[1]),
        Sleep(0.8),
        *(Send(f) for f in rest[2:]),
        End(),
    )
    move = sync_reads_module.ReadWatchdog.move

    def preempted_move(self: Any, deadline: float) -> None:
        if threading.current_thread().name == "tool" and deadline != float("inf"):  # tool_finished's
            time.sleep(0.4)
        move(self, deadline)

    monkeypatch.setattr(sync_reads_module.ReadWatchdog, "move", preempted_move)
    config = StreamConfig(idle_timeout=1.0, pause_idle_during_tools=True)
    tools: list[threading.Thread] = []
    with sync_serving("anthropic", steps) as (_, client):
        with streamfsm.wrap(create("anthropic", client), config=config) as run:
            for event in run:
                if isinstance(event, ToolCall) and event.name == "write_file":

                    def tool(call_id: str = event.call_id) -> None:
                        time.sleep(0.3)
                        run.tool_started(call_id)
                        time.sleep(0.2)
                        run.tool_finished(call_id)

                    tools.append(threading.Thread(target=tool, name="tool"))
                    tools[-1].start()
    for thread in tools:
        thread.join(5)
    assert run.finished, run.record


def test_sync_iterating_a_run_outside_its_block_is_a_clear_error() -> None:
    with sync_serving("anthropic", script(text_stream("anthropic", ["hi"]), End())) as (_, client):
        run = streamfsm.wrap(create("anthropic", client))
        with pytest.raises(RuntimeError, match="inside its `with` block"):
            next(iter(run))
        with run:
            assert [e for e in run if isinstance(e, TextDelta)]
