"""The retry executor against a real fault server whose router hands each attempt its own script (issue 6)."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm import Diagnosis, Recovery, RetryPolicy, StreamConfig, StreamFailed, Verdict, retrying
from streamfsm.runtime import (
    ReasoningDelta,
    Restarted,
    RetryingEvent,
    RunRecord,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
)
from streamfsm.runtime.retry._retry import decide
from streamfsm.testing import (
    End,
    FaultServer,
    Fin,
    Headers,
    Rst,
    Send,
    Stall,
    Status,
    error_event,
    text_stream,
    tool_call_stream,
)
from tests.support.retry import (
    BUSY,
    FAST,
    JSON,
    SSE_FORMATS,
    Spies,
    cut_before,
    cut_through,
    ok_script,
    per_attempt,
    validate_record,
)

pytestmark = pytest.mark.anyio

STATUS_503 = BUSY
STATUS_401 = Status(401, (JSON,), b'{"error": {"type": "invalid_request_error", "code": "invalid_api_key"}}')


def policy(attempts: int = 3, total_s: float = 30.0, **options: Any) -> RetryPolicy:
    return RetryPolicy(attempts, total_s, **{**FAST, **options})


def stream(frames: list[bytes], *tail: Any) -> tuple[Any, ...]:
    return (Headers(), *(Send(f) for f in frames), *tail)


def texts(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, (TextDelta, ReasoningDelta)))


async def collect(run: streamfsm.RetryingRun, into: list[RetryingEvent]) -> None:
    async for event in run:
        into.append(event)


# -- automatic retries: the consumer sees one clean stream ---------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [("retry-after-ms", "50"), ("retry-after", "0.05")],
    ids=["retry-after-ms", "retry-after-seconds"],
)
async def test_rate_limit_waits_what_the_provider_asked_then_succeeds(header: tuple[str, str]) -> None:
    limited = Status(429, (JSON, header), b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}')
    async with FaultServer(per_attempt([(limited,), ok_script("openai-chat", "A2")])) as server:
        spies = Spies(server.base_url)
        started = time.monotonic()
        async with retrying(policy(), spies) as run:
            events = [event async for event in run]
        waited = time.monotonic() - started
    assert server.requests_seen == 2
    assert waited >= 0.045, "the provider's delay was honoured"
    assert events == spies[1].yielded and "A2 hello" in texts(events)
    assert run.finished
    first, last = run.attempts
    assert (first.decision, first.delay_reason, first.delay_s) == ("auto_retry", "retry_after", 0.05)
    assert first.summary_key == "provider_error.rate_limit"
    assert last.decision == "completed"


async def test_an_http_date_in_the_past_means_retry_now() -> None:
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    limited = Status(429, (JSON, ("retry-after", past)), b"{}")
    async with FaultServer(per_attempt([(limited,), ok_script("openai-chat", "A2")])) as server:
        async with retrying(policy(), Spies(server.base_url)) as run:
            await collect(run, [])
    assert run.finished
    assert (run.attempts[0].delay_reason, run.attempts[0].delay_s) == ("retry_after", 0.0)


def _cut_early(fmt: str, how: str) -> tuple[Any, ...]:
    if how == "headers":
        return (Headers(), Fin())
    if how == "reasoning":
        frames = text_stream(fmt, ["A1 visible"], reasoning=["A1 thinking", " A1 more"])  # type: ignore[arg-type]
        return stream(cut_before(fmt, frames, TextDelta), Fin())
    frames = tool_call_stream(fmt, [("apply_patch", '{"patch": "A1 ' + "x" * 40 + '"}')])  # type: ignore[arg-type]
    return stream(cut_through(fmt, frames, ToolInputDelta), Fin())


@pytest.mark.parametrize(
    ("fmt", "how"),
    [
        (fmt, how)
        for fmt in SSE_FORMATS
        for how in ("headers", "reasoning", "tool_input")
        if not (how == "tool_input" and fmt == "gemini")  # Gemini sends whole calls: no tool input to cut
    ],
)
async def test_a_cut_before_any_output_is_retried_and_the_consumer_sees_one_clean_stream(
    fmt: str, how: str
) -> None:
    async with FaultServer(per_attempt([_cut_early(fmt, how), ok_script(fmt, "A2")])) as server:
        spies = Spies(server.base_url, fmt)
        async with retrying(policy(), spies) as run:
            events = [event async for event in run]
    assert server.requests_seen == 2
    assert events == spies[1].yielded, "exactly the second attempt's events, in order"
    assert all(a is b for a, b in zip(events, spies[1].yielded, strict=True))
    assert "A1" not in texts(events)
    first = spies[0]
    if how == "reasoning":
        assert any(isinstance(e, ReasoningDelta) for e in first.yielded), "the first attempt had reasoning"
    if how == "tool_input":
        assert any(isinstance(e, ToolInputStart) for e in first.yielded), "the first attempt had tool input"
    assert first.diagnosis is not None and first.diagnosis.verdict is Verdict.SAFE_AUTO_RETRY
    assert run.attempts[0].decision == "auto_retry" and run.attempts[0].delay_reason == "backoff"


@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_an_in_band_overload_before_output_is_retried(fmt: str) -> None:
    overloaded = (Headers(), Send(error_event(fmt, "overloaded", sequence_number=0)), End())  # type: ignore[arg-type]
    async with FaultServer(per_attempt([overloaded, ok_script(fmt, "A2")])) as server:
        spies = Spies(server.base_url, fmt)
        async with retrying(policy(), spies) as run:
            events = [event async for event in run]
    assert events == spies[1].yielded
    assert run.attempts[0].summary_key == "provider_error.overloaded"


async def test_a_request_possibly_delivered_is_retried_by_default() -> None:
    async with FaultServer(per_attempt([(Fin(),), ok_script("openai-chat", "A2")])) as server:
        spies = Spies(server.base_url)
        async with retrying(policy(), spies) as run:
            await collect(run, [])
    assert run.finished and server.requests_seen == 2
    assert spies[0].diagnosis is not None and spies[0].diagnosis.possibly_delivered


# -- never retried automatically -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_a_cut_after_visible_text_is_not_retried(fmt: str) -> None:
    frames = text_stream(fmt, ["A1 Hello", " A1 world", " A1 again"])  # type: ignore[arg-type]
    scripts = [stream(cut_through(fmt, frames, TextDelta), Fin()), ok_script(fmt, "A2")]
    seen: list[RetryingEvent] = []
    async with FaultServer(per_attempt(scripts)) as server:
        spies = Spies(server.base_url, fmt)
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(), spies) as run:
                await collect(run, seen)
    failure = info.value
    assert server.requests_seen == 1
    assert failure.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
    assert failure.diagnosis.action.value == "continue_with_partial"
    assert failure.partial is not None and failure.partial.text == "A1 Hello"
    assert failure.partial.attempt == 1
    assert seen == spies[0].yielded
    assert failure.record is spies[0].record
    assert [a.decision for a in failure.attempts] == ["stopped"]
    assert failure.stop_reason is not None and "confirm" in failure.stop_reason
    validate_record(failure.record)


@pytest.mark.parametrize("sync", [False, True], ids=["async-confirm", "sync-confirm"])
async def test_a_confirmed_replay_restarts_then_delivers_the_new_attempt(sync: bool) -> None:
    # A one-argument confirm still works; it asks for a replay by name (True would continue, see
    # tests/retry/test_recovery.py).
    frames = text_stream("openai-chat", ["A1 Hello", " A1 world"])
    scripts = [stream(cut_through("openai-chat", frames, TextDelta), Fin()), ok_script("openai-chat", "A2")]
    asked: list[Diagnosis] = []

    def confirm_sync(diagnosis: Diagnosis) -> Recovery:
        asked.append(diagnosis)
        return Recovery.REPLAY

    async def confirm_async(diagnosis: Diagnosis) -> Recovery:
        await anyio.sleep(0)
        return confirm_sync(diagnosis)

    async with FaultServer(per_attempt(scripts)) as server:
        spies = Spies(server.base_url)
        async with retrying(policy(), spies, confirm=confirm_sync if sync else confirm_async) as run:
            events = [event async for event in run]
    assert [d.summary_key for d in asked] == ["mid_generation.closed_mid_body"]
    assert asked[0].verdict is Verdict.USER_CONFIRMED_RETRY
    restart = Restarted(2, "mid_generation.closed_mid_body")
    assert events == [*spies[0].yielded, restart, *spies[1].yielded]
    assert run.partial.attempt == 2 and run.partial.text == "A2 hello A2 world"
    assert [a.decision for a in run.attempts] == ["confirmed_retry", "completed"]
    assert run.attempts[0].delay_reason == "none"


async def test_a_declined_confirmation_stops() -> None:
    frames = text_stream("openai-chat", ["A1 Hello", " A1 world"])
    scripts = [stream(cut_through("openai-chat", frames, TextDelta), Fin()), ok_script("openai-chat", "A2")]
    async with FaultServer(per_attempt(scripts)) as server:
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(), Spies(server.base_url), confirm=lambda d: False) as run:
                await collect(run, [])
    assert server.requests_seen == 1
    assert info.value.stop_reason == "the retry was not confirmed"


@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_a_cut_after_an_effectful_tool_started_is_not_retried(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("write_file", '{"path": "A1.txt"}')])  # type: ignore[arg-type]
    scripts = [stream(cut_through(fmt, frames, ToolCall), Fin()), ok_script(fmt, "A2")]
    asked: list[Diagnosis] = []
    async with FaultServer(per_attempt(scripts)) as server:
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(), Spies(server.base_url, fmt), confirm=asked.append) as run:
                async for event in run:
                    if isinstance(event, ToolCall):
                        run.tool_started(event.call_id, "effectful")
    failure = info.value
    assert server.requests_seen == 1
    assert asked == [], "a no_retry failure is never offered for confirmation"
    assert failure.diagnosis.verdict is Verdict.NO_RETRY
    assert failure.diagnosis.failure_class.value == "tool_side_effect"
    assert failure.partial is not None
    [call] = failure.partial.tool_calls
    assert call.name == "write_file" and json.loads(call.arguments) == {"path": "A1.txt"}
    assert failure.partial.tool_results == ()
    # The tool finishes after the stream died: its result joins what the agent can continue from.
    run.tool_finished(call.call_id, result={"RESULT_MARKER": 3})
    [result] = run.partial.tool_results
    assert (result.call_id, result.name, result.ok, result.result) == (
        call.call_id,
        "write_file",
        True,
        {"RESULT_MARKER": 3},
    )
    assert "RESULT_MARKER" not in failure.record.to_json() + repr(run.partial)


async def test_a_cut_after_a_complete_tool_call_that_never_ran_needs_confirmation() -> None:
    # The machine calls this safe (the tool did not run), but the call already reached the agent.
    frames = tool_call_stream("openai-chat", [("read_file", '{"path": "A1.txt"}'), ("read_file", "{}")])
    scripts = [stream(cut_through("openai-chat", frames, ToolCall), Fin()), ok_script("openai-chat", "A2")]
    async with FaultServer(per_attempt(scripts)) as server:
        spies = Spies(server.base_url)
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(), spies) as run:
                await collect(run, [])
    failure = info.value
    assert server.requests_seen == 1
    assert spies[0].diagnosis is not None and spies[0].diagnosis.verdict is Verdict.SAFE_AUTO_RETRY
    assert failure.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
    assert "reached the consumer" in failure.diagnosis.reason
    assert failure.diagnosis.detail.endswith(f"Retry only with confirmation: {failure.diagnosis.reason}.")
    assert "executor=exposed" in failure.diagnosis.evidence
    assert failure.__cause__ is not None, "chained from the raw transport error"
    assert failure.partial is not None and [c.name for c in failure.partial.tool_calls] == ["read_file"]
    assert failure.record["retry"]["verdict"] == "safe_auto_retry", "the record keeps the machine's verdict"


async def test_an_auth_error_is_not_retried() -> None:
    asked: list[Diagnosis] = []
    async with FaultServer(per_attempt([(STATUS_401,), ok_script("openai-chat", "A2")])) as server:
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(), Spies(server.base_url), confirm=asked.append) as run:
                await collect(run, [])
    assert server.requests_seen == 1 and asked == []
    assert info.value.diagnosis.cause == "auth"
    assert info.value.diagnosis.verdict is Verdict.NO_RETRY


async def test_a_local_abort_is_not_retried_and_what_was_held_is_delivered() -> None:
    frames = text_stream("openai-chat", ["A1 visible"], reasoning=["A1 thinking"])
    scripts = [stream(cut_before("openai-chat", frames, TextDelta), Stall()), ok_script("openai-chat", "A2")]
    seen: list[RetryingEvent] = []
    async with FaultServer(per_attempt(scripts)) as server:
        spies = Spies(server.base_url)

        async def stop_soon(run: streamfsm.RetryingRun) -> None:
            await server.wait_for_requests(1)
            await anyio.sleep(0.2)
            run.abort("user pressed stop", source="user")

        failure = None
        with anyio.fail_after(10):
            async with retrying(policy(), spies) as run, anyio.create_task_group() as tg:
                tg.start_soon(stop_soon, run)
                try:
                    await collect(run, seen)
                except StreamFailed as caught:
                    failure = caught
    assert failure is not None
    assert server.requests_seen == 1
    assert failure.diagnosis.failure_class.value == "local_abort"
    assert failure.record["abort"]["reason"] == "user pressed stop"
    # The chain ended here: the consumer got the attempt's reasoning (held back until then), then the failure.
    assert seen == spies[0].yielded and texts(seen) == "A1 thinking"


async def test_abort_during_a_retry_delay_stops_at_once() -> None:
    slow = Status(503, (JSON, ("retry-after-ms", "5000")), b"{}")
    async with FaultServer(per_attempt([(slow,), ok_script("openai-chat", "A2")])) as server:

        async def stop_soon(run: streamfsm.RetryingRun) -> None:
            await server.wait_for_requests(1)
            await anyio.sleep(0.2)
            run.abort("app closing", source="app")

        failure = None
        with anyio.fail_after(5):
            async with (
                retrying(policy(max_provider_delay_s=60), Spies(server.base_url)) as run,
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(stop_soon, run)
                try:
                    await collect(run, [])
                except StreamFailed as caught:
                    failure = caught
    assert failure is not None
    assert server.requests_seen == 1
    assert failure.stop_reason is not None and "stopped locally (source: app)" in failure.stop_reason
    assert [a.decision for a in failure.attempts] == ["stopped"]


def _exposed_then_cut() -> tuple[Any, ...]:
    frames = tool_call_stream("openai-chat", [("get_weather", '{"city": "Paris"}')])
    return stream(cut_through("openai-chat", frames, ToolCall), Rst())


def _reasoning_then_cut() -> tuple[Any, ...]:
    frames = text_stream("openai-chat", ["A1 visible"], reasoning=["A1 thinking"])
    return stream(cut_before("openai-chat", frames, TextDelta), Rst())


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("exposed", Verdict.USER_CONFIRMED_RETRY),
        ("possibly_delivered", Verdict.USER_CONFIRMED_RETRY),
        ("held_only", Verdict.SAFE_AUTO_RETRY),
    ],
)
async def test_an_abort_during_the_failed_attempts_cleanup_still_reports_by_rule_2(
    how: str, expected: Verdict
) -> None:
    # The abort lands while the failed attempt closes (here from its sink), when no attempt is in flight:
    # the chain stops, but the reported verdict goes through rule 2 as without the abort.
    first = {
        "exposed": _exposed_then_cut(),
        "possibly_delivered": (Fin(),),
        "held_only": _reasoning_then_cut(),
    }
    holder: list[streamfsm.RetryingRun] = []

    def sink(record: RunRecord) -> None:
        if record["ids"]["attempt"] == 1:
            holder[0].abort("user pressed stop", source="user")

    seen: list[RetryingEvent] = []
    retry_policy = policy(retry_possibly_delivered=how != "possibly_delivered")
    async with FaultServer(per_attempt([first[how], ok_script("openai-chat", "A2")])) as server:
        spies = Spies(server.base_url, config=StreamConfig(sinks=(sink,)))
        with anyio.fail_after(10), pytest.raises(StreamFailed) as info:
            async with retrying(retry_policy, spies) as run:
                holder.append(run)
                await collect(run, seen)
    failure = info.value
    assert server.requests_seen == 1
    machine = spies[0].diagnosis
    assert machine is not None and machine.verdict is Verdict.SAFE_AUTO_RETRY, "the machine said safe"
    assert failure.diagnosis.verdict is expected
    assert run.diagnosis is failure.diagnosis
    assert failure.stop_reason == "the chain was stopped locally (source: user) before a retry"
    assert [a.decision for a in failure.attempts] == ["stopped"]
    assert failure.record is spies[0].record
    assert seen == spies[0].yielded, "everything the attempt yielded, nothing more"
    if how == "exposed":
        assert failure.diagnosis.action.value == "continue_with_partial"
        assert "executor=exposed" in failure.diagnosis.evidence
        assert failure.partial is not None and [c.name for c in failure.partial.tool_calls] == ["get_weather"]
    elif how == "possibly_delivered":
        assert failure.diagnosis.possibly_delivered and "billed" in failure.diagnosis.reason
        assert failure.diagnosis.action.value == "ask_user"
    else:
        assert failure.diagnosis is machine and texts(seen) == "A1 thinking"


async def test_an_abort_during_the_retry_delay_releases_the_held_events() -> None:
    holder: list[streamfsm.RetryingRun] = []
    delays: list[float] = []

    async def sleep(delay: float) -> None:  # the delay starts: abort it (deterministically), then wait
        delays.append(delay)
        holder[0].abort("app closing", source="app")
        await anyio.sleep_forever()

    seen: list[RetryingEvent] = []
    slow = policy(initial_delay_s=3, max_delay_s=3, jitter=0)
    async with FaultServer(per_attempt([_reasoning_then_cut(), ok_script("openai-chat", "A2")])) as server:
        spies = Spies(server.base_url)
        with anyio.fail_after(10), pytest.raises(StreamFailed) as info:
            async with retrying(slow, spies, sleep=sleep) as run:
                holder.append(run)
                await collect(run, seen)
    failure = info.value
    assert delays == [3.0] and server.requests_seen == 1
    assert any(isinstance(e, ReasoningDelta) for e in spies[0].yielded)
    # The chain stopped at attempt 1: its held reasoning reaches the consumer before the failure.
    assert seen == spies[0].yielded and texts(seen) == "A1 thinking"
    assert all(a is b for a, b in zip(seen, spies[0].yielded, strict=True))
    assert failure.stop_reason == "the chain was stopped locally (source: app) while waiting to retry"
    assert [a.decision for a in failure.attempts] == ["stopped"]
    assert failure.diagnosis.verdict is Verdict.SAFE_AUTO_RETRY
    assert failure.partial is not None and failure.partial.attempt == 1


# -- budgets and delays --------------------------------------------------------------------------------------


async def test_the_attempt_budget_stops_a_provider_that_always_fails() -> None:
    async with FaultServer((STATUS_503,)) as server:
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(3), Spies(server.base_url)) as run:
                await collect(run, [])
    failure = info.value
    assert server.requests_seen == 3
    assert [a.decision for a in failure.attempts] == ["auto_retry", "auto_retry", "stopped"]
    assert failure.stop_reason == "the attempt budget is used (3 of 3)"
    assert failure.diagnosis.verdict is Verdict.SAFE_AUTO_RETRY


async def test_the_time_budget_stops_a_provider_that_always_fails() -> None:
    tight = RetryPolicy(attempts=10, total_s=0.3, initial_delay_s=0.1, max_delay_s=1.0, jitter=0)
    async with FaultServer((STATUS_503,)) as server:
        with anyio.fail_after(5), pytest.raises(StreamFailed) as info:
            async with retrying(tight, Spies(server.base_url)) as run:
                await collect(run, [])
    failure = info.value
    assert 1 <= server.requests_seen < 10
    assert failure.stop_reason is not None and "time budget" in failure.stop_reason
    assert sum(a.delay_s for a in failure.attempts) <= 0.3, "never slept past the budget"


async def test_a_provider_delay_past_the_cap_stops_rather_than_retrying_early() -> None:
    limited = Status(429, (JSON, ("retry-after", "120")), b"{}")
    async with FaultServer(per_attempt([(limited,), ok_script("openai-chat", "A2")])) as server:
        with anyio.fail_after(5), pytest.raises(StreamFailed) as info:
            async with retrying(policy(max_provider_delay_s=5), Spies(server.base_url)) as run:
                await collect(run, [])
    assert server.requests_seen == 1
    assert info.value.stop_reason is not None and "asked to wait 120 s" in info.value.stop_reason


async def test_a_possibly_delivered_request_is_not_retried_when_the_policy_says_so() -> None:
    async with FaultServer(per_attempt([(Fin(),), ok_script("openai-chat", "A2")])) as server:
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(retry_possibly_delivered=False), Spies(server.base_url)) as run:
                await collect(run, [])
    failure = info.value
    assert server.requests_seen == 1
    assert failure.diagnosis.possibly_delivered
    assert failure.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
    assert "billed" in failure.diagnosis.reason
    assert failure.diagnosis.action.value == "ask_user"


async def test_past_the_hold_limit_an_attempt_is_exposed_and_not_retried() -> None:
    reasoning = [f"A1 r{i}" for i in range(6)]
    frames = text_stream("openai-chat", ["A1 visible"], reasoning=reasoning)
    scripts = [stream(cut_before("openai-chat", frames, TextDelta), Fin()), ok_script("openai-chat", "A2")]
    seen: list[RetryingEvent] = []
    async with FaultServer(per_attempt(scripts)) as server:
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(), Spies(server.base_url), max_held_events=2) as run:
                await collect(run, seen)
    assert server.requests_seen == 1
    assert texts(seen) == "".join(reasoning)
    assert info.value.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
    assert "held back" in info.value.diagnosis.reason


async def test_with_one_attempt_a_retrying_run_yields_what_the_plain_run_would() -> None:
    frames = text_stream("openai-chat", ["A1 visible"], reasoning=["A1 thinking", " A1 more"])
    steps = stream(cut_before("openai-chat", frames, TextDelta), Fin())
    seen: list[RetryingEvent] = []
    async with FaultServer(steps) as server:
        spies = Spies(server.base_url)
        with pytest.raises(StreamFailed) as info:
            async with retrying(policy(1), spies) as run:
                await collect(run, seen)
    assert seen == spies[0].yielded and len(seen) == 2
    assert info.value.diagnosis is spies[0].diagnosis
    assert info.value.stop_reason == "the attempt budget is used (1 of 1)"


# -- records -------------------------------------------------------------------------------------------------


async def test_records_of_all_attempts_are_linked_and_each_reaches_the_sinks_once() -> None:
    sunk: list[RunRecord] = []
    config = StreamConfig(sinks=(sunk.append,))
    scripts = [(STATUS_503,), (Headers(), Fin()), ok_script("anthropic", "A3")]
    async with FaultServer(per_attempt(scripts)) as server:
        spies = Spies(server.base_url, "anthropic", config)
        ids = {"session_id": "ses_1", "message_id": "msg_1", "context": {"route": "r1"}}
        async with retrying(policy(), spies, ids=ids) as run:
            await collect(run, [])
    assert run.finished and server.requests_seen == 3
    assert [r["ids"]["run_id"] for r in sunk] == [s.run_id for s in spies], "each record once, in order"
    assert list(run.records) == sunk
    data = [validate_record(r) for r in sunk]
    assert {d["ids"]["trace_id"] for d in data} == {run.trace_id}
    assert [d["ids"]["attempt"] for d in data] == [1, 2, 3]
    assert [d["ids"]["previous_run_id"] for d in data] == [None, spies[0].run_id, spies[1].run_id]
    assert all(d["ids"]["session_id"] == "ses_1" and d["ids"]["context"] == {"route": "r1"} for d in data)
    assert [len(d["attempts"]) for d in data] == [0, 1, 2]
    chain = data[-1]["attempts"]
    assert [link["run_id"] for link in chain] == [spies[0].run_id, spies[1].run_id]
    assert [link["summary_key"] for link in chain] == [
        "provider_error.server_error",
        "early_stream.closed_mid_body",
    ]
    assert all(link["verdict"] == "safe_auto_retry" and link["decision"] == "auto_retry" for link in chain)
    assert all(link["delay_reason"] == "backoff" and link["delay_s"] >= 0 for link in chain)
    assert [a.run_id for a in run.attempts] == [s.run_id for s in spies]


async def test_a_record_that_lists_a_chain_round_trips_through_the_schema() -> None:
    record = validate_record(streamfsm.RunRecord.from_json(_chained_record_json()))
    assert record["attempts"][0]["decision"] == "confirmed_retry"


def _chained_record_json() -> str:
    link = streamfsm.AttemptLink("r1", 1, "mid_generation.reset", "user_confirmed_retry", "confirmed_retry")
    ids = streamfsm.Ids(trace_id="t", attempt=2, previous_run_id="r1", attempts=(link,))
    from streamfsm.runtime.records._record import Recorder

    recorder = Recorder(
        provider="openai-chat",
        model="m",
        body={},
        url="http://x",
        ids=ids,
        config=StreamConfig(),
        run_id="r2",
        trace_id="t",
    )
    from streamfsm.classify import diagnose
    from streamfsm.machine import Trigger

    state = streamfsm.State.of(streamfsm.Activity.CONNECTING)
    diagnosis = diagnose(state, Trigger.CONNECT_FAILED)
    return recorder.finish(diagnosis, streamfsm.State.of(streamfsm.Activity.FAILED)).to_json()


# -- the API -------------------------------------------------------------------------------------------------


async def test_open_attempt_may_be_async_and_must_pass_its_ids() -> None:
    async with FaultServer(ok_script("openai-chat", "A1")) as server:
        spies = Spies(server.base_url)

        async def open_async(ids: streamfsm.Ids) -> streamfsm.Run:
            await anyio.sleep(0)
            return spies(ids)

        async with retrying(policy(), open_async) as run:
            await collect(run, [])
        assert run.finished

        def forgetful(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream("openai-chat", base_url=server.base_url, json={"model": "m"})

        with pytest.raises(TypeError, match="ids=ids"):
            async with retrying(policy(), forgetful) as run:
                await collect(run, [])


async def test_iterating_outside_the_block_is_an_error() -> None:
    run = retrying(policy(), Spies("http://127.0.0.1:9"))
    with pytest.raises(RuntimeError, match="async with"):
        await run.__anext__()


def test_policy_has_no_catch_all_default_and_validates() -> None:
    with pytest.raises(TypeError):
        RetryPolicy()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        RetryPolicy(3)  # type: ignore[call-arg]
    for bad, match in (
        ({"attempts": 0, "total_s": 1}, "attempts"),
        ({"attempts": 33, "total_s": 1}, "attempts"),
        ({"attempts": True, "total_s": 1}, "attempts"),
        ({"attempts": 2.0, "total_s": 1}, "attempts"),
        ({"attempts": 2, "total_s": 0}, "total_s"),
        ({"attempts": 2, "total_s": float("inf")}, "total_s"),
        ({"attempts": 2, "total_s": 1, "initial_delay_s": -1}, "initial_delay_s"),
        ({"attempts": 2, "total_s": 1, "initial_delay_s": 2, "max_delay_s": 1}, "max_delay_s"),
        ({"attempts": 2, "total_s": 1, "multiplier": 0.5}, "multiplier"),
        ({"attempts": 2, "total_s": 1, "jitter": 1.5}, "jitter"),
        ({"attempts": 2, "total_s": 1, "max_provider_delay_s": float("nan")}, "max_provider_delay_s"),
    ):
        with pytest.raises(ValueError, match=match):
            RetryPolicy(**bad)
    with pytest.raises(TypeError):
        RetryPolicy(2, 1, retry_possibly_delivered=1)  # type: ignore[arg-type]


def test_backoff_is_exponential_capped_and_jittered_within_its_fraction() -> None:
    exact = RetryPolicy(5, 60, initial_delay_s=0.5, multiplier=2, max_delay_s=3, jitter=0)
    assert [exact.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    equal = RetryPolicy(5, 60, initial_delay_s=1, max_delay_s=8, jitter=0.5)
    assert equal.backoff(3, 0.0) == 4.0 and equal.backoff(3, 0.999) > 2.0
    full = RetryPolicy(5, 60, initial_delay_s=1, max_delay_s=8, jitter=1)
    assert full.backoff(1, 0.5) == 0.5
    assert all(1.0 < equal.backoff(2) <= 2.0 for _ in range(50)), "equal jitter keeps at least half"


def test_decide_is_the_rule() -> None:
    from streamfsm.classify import Facts, ProviderError, ProviderErrorKind
    from streamfsm.machine import Activity, Commitment, State, Trigger

    streaming = State.of(Activity.STREAMING)
    safe = streamfsm.diagnose(streaming, Trigger.DISCONNECTED)
    assert safe.verdict is Verdict.SAFE_AUTO_RETRY
    p = RetryPolicy(3, 10, initial_delay_s=1, jitter=0)
    assert decide(p, safe, attempt=1, elapsed_s=0)[:4] == ("retry", safe, 1.0, "backoff")
    assert decide(p, safe, attempt=3, elapsed_s=0).kind == "stop"
    assert decide(p, safe, attempt=1, elapsed_s=9.5).kind == "stop"
    exposed = decide(p, safe, attempt=1, elapsed_s=0, exposed="the call reached the agent")
    assert exposed.kind == "ask" and exposed.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
    assert exposed.diagnosis.reason == "the call reached the agent" and exposed.delay_s == 0
    visible = streamfsm.diagnose(State.of(Activity.GENERATING, Commitment.VISIBLE), Trigger.DISCONNECTED)
    assert decide(p, visible, attempt=1, elapsed_s=0).kind == "ask"
    auth = streamfsm.diagnose(
        State.of(Activity.CONNECTING),
        Trigger.HTTP_ERROR,
        Facts(provider=ProviderError(ProviderErrorKind.AUTH)),
    )
    assert decide(p, auth, attempt=1, elapsed_s=0).kind == "stop"
    limited = streamfsm.diagnose(
        State.of(Activity.CONNECTING),
        Trigger.HTTP_ERROR,
        Facts(provider=ProviderError(ProviderErrorKind.RATE_LIMIT, retry_after_s=2.5)),
    )
    assert decide(p, limited, attempt=1, elapsed_s=0)[2:4] == (2.5, "retry_after")
    assert decide(RetryPolicy(3, 10, max_provider_delay_s=2), limited, attempt=1, elapsed_s=0).kind == "stop"


def test_the_retry_names_are_exported_lazily_from_the_top_level() -> None:
    for name in (
        "RetryPolicy",
        "retrying",
        "RetryingRun",
        "Restarted",
        "Partial",
        "ToolResult",
        "AttemptLink",
    ):
        assert getattr(streamfsm, name) is getattr(streamfsm.runtime, name)
        assert name in streamfsm.__all__ and name in streamfsm.runtime.__all__
    assert repr(streamfsm.Partial(1, "secret text")).startswith("Partial(attempt=1, <11 chars>")
