"""The run wrapper against real loopback sockets: every fault of issue 3, for each of the four formats."""

from __future__ import annotations

import json
import zlib
from typing import Any

import anyio
import httpx
import pytest

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.runtime import ReasoningDelta, TextDelta, ToolCall, ToolInputDelta
from streamfsm.testing import (
    End,
    FaultServer,
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
    SSE_FORMATS,
    check_failure,
    consume,
    cut_before,
    cut_through,
    expect,
    script,
    validate_record,
)

pytestmark = pytest.mark.anyio

fmts = pytest.mark.parametrize("fmt", SSE_FORMATS)


async def fail(fmt: str, steps: tuple[Any, ...], config: StreamConfig | None = None) -> StreamFailed:
    """Run one stream against a scripted server; it must fail. Returns the failure, its record checked."""
    async with FaultServer(steps) as server:
        with pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                fmt, base_url=server.base_url, json=BODIES[fmt], config=config
            ) as run:
                await consume(run)
    return check_failure(info.value)


@fmts
async def test_a_normal_stream_finishes_with_counts_and_usage(fmt: str) -> None:
    frames = text_stream(fmt, ["Hel", "lo", " there"], reasoning=["think", "ing"])
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
            events = await consume(run)
    assert run.finished
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello there"
    assert sum(isinstance(e, ReasoningDelta) for e in events) == 2
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "completed"
    assert record["stream_events"]["text_delta"] == 3
    assert record["stream_events"]["reasoning_delta"] == 2
    assert record["stored_parts"] == {"text": 1, "reasoning": 1, "tool": 0}
    assert record["tokens"]["input"] == 25 and record["tokens"]["output"] == 40
    assert record["finish_reason"]["unified"] == "stop"
    assert record["delta_keys"], "raw delta field names are counted"
    assert record["ids"]["response_id"]
    assert record["timings"]["to_first_visible_s"] is not None


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_an_encoded_body_is_decoded_before_the_events_are_read(encoding: str) -> None:
    # Unencoded bodies skip httpx's decoding layers; an encoded one must still go through them.
    fmt = "anthropic"
    body = b"".join(text_stream(fmt, ["Hel", "lo", " there"]))
    packer = zlib.compressobj(wbits=31 if encoding == "gzip" else 15)
    packed = packer.compress(body) + packer.flush()
    pieces = [packed[i : i + 40] for i in range(0, len(packed), 40)]
    headers = Headers(headers=(("content-type", "text/event-stream"), ("content-encoding", encoding)))
    async with FaultServer((headers, *(Send(p) for p in pieces), End())) as server:
        async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
            events = await consume(run)
    assert run.finished
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there"
    assert validate_record(run.record)["transport"]["bytes_received"] == len(body)  # type: ignore[arg-type]


@fmts
async def test_cut_after_headers_is_early_stream_and_safe(fmt: str) -> None:
    failure = await fail(fmt, (Headers(), Fin()))
    expect(failure, "early_stream", "safe_auto_retry", "disconnected", "early_stream")
    assert failure.diagnosis.cause == "closed_mid_body"
    assert failure.record["transport"]["headers_received"] is True
    assert isinstance(failure.__cause__, Exception)


@fmts
async def test_cut_after_reasoning_is_still_safe(fmt: str) -> None:
    frames = text_stream(fmt, ["visible"], reasoning=["thinking", "more"])
    failure = await fail(fmt, script(cut_before(fmt, frames, TextDelta), Fin()))
    expect(failure, "early_stream", "safe_auto_retry", "disconnected", "early_stream")
    assert failure.record["stream_events"]["reasoning_delta"] >= 1
    assert failure.record["stream_events"].get("text_delta", 0) == 0


@fmts
async def test_cut_after_visible_text_needs_the_user(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world", " again"])
    failure = await fail(fmt, script(cut_through(fmt, frames, TextDelta), Fin()))
    expect(failure, "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation")
    assert failure.record["retry"]["action"] == "continue_with_partial"


@fmts
async def test_rst_after_text_is_a_reset(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"])
    failure = await fail(fmt, script(cut_through(fmt, frames, TextDelta), Rst()))
    expect(failure, "mid_generation", "user_confirmed_retry", "disconnected", "mid_generation")
    assert failure.diagnosis.cause == "reset"
    assert failure.record["transport"]["errno"] == 104


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
async def test_cut_while_tool_arguments_stream_says_the_tool_did_not_run(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("apply_patch", '{"patch": "' + "x" * 60 + '"}')])
    failure = await fail(fmt, script(cut_through(fmt, frames, ToolInputDelta), Fin()))
    expect(failure, "tool_input_interrupted", "safe_auto_retry", "disconnected", "tool_input")
    assert "apply_patch" in failure.diagnosis.title
    assert "The tool did not run." in failure.diagnosis.detail


async def test_gemini_cut_inside_a_function_call_chunk_is_early_stream() -> None:
    # Gemini sends whole calls: a cut inside the chunk leaves no tool state behind.
    frames = tool_call_stream("gemini", [("apply_patch", '{"patch": "x"}')])
    first = frames[0]
    failure = await fail("gemini", (Headers(), Send(first[: len(first) // 2]), Fin()))
    expect(failure, "early_stream", "safe_auto_retry", "disconnected", "early_stream")


@fmts
async def test_in_band_error_before_output_is_a_safe_provider_error(fmt: str) -> None:
    failure = await fail(fmt, (Headers(), Send(error_event(fmt, "overloaded", sequence_number=0)), End()))
    expect(failure, "provider_error", "safe_auto_retry", "provider_error_event", "early_stream")
    assert failure.diagnosis.cause == "overloaded"
    assert failure.record["retry"]["action"] == "retry_after_backoff"


@fmts
async def test_in_band_error_after_output_needs_the_user(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)
    error = error_event(fmt, "overloaded", sequence_number=len(frames))
    failure = await fail(fmt, script(frames, Send(error), End()))
    expect(failure, "provider_error", "user_confirmed_retry", "provider_error_event", "mid_generation")


@pytest.mark.parametrize("shape", ["flat", "nested", "failed"])
async def test_responses_error_shapes_are_all_provider_errors(shape: str) -> None:
    error = error_event("openai-responses", "rate_limit", shape=shape, sequence_number=0)  # type: ignore[arg-type]
    failure = await fail("openai-responses", (Headers(), Send(error), End()))
    assert failure.diagnosis.failure_class.value == "provider_error"
    assert failure.diagnosis.cause == "rate_limit"


@fmts
async def test_clean_eof_without_terminal_is_never_a_success(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)
    failure = await fail(fmt, script(frames, End()))
    expect(failure, "mid_generation", "user_confirmed_retry", "eof_without_terminal", "mid_generation")


@fmts
async def test_stall_kept_alive_by_keepalives_fires_the_idle_watchdog(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)
    alive = Keepalive(every=0.05, count=200, frame=keepalive(fmt))  # type: ignore[arg-type]
    config = StreamConfig(idle_timeout=0.4)
    with anyio.fail_after(10):
        failure = await fail(fmt, script(frames, alive, End()), config)
    expect(failure, "watchdog", "user_confirmed_retry", "idle_timeout", "mid_generation")
    assert failure.record["watchdog"]["fired"] == "idle_timeout"
    assert failure.record["stream_events"]["keepalive"] >= 2


async def test_silence_before_first_progress_fires_the_first_token_watchdog() -> None:
    config = StreamConfig(first_token_timeout=0.3)
    with anyio.fail_after(10):
        failure = await fail("openai-chat", (Headers(), Stall()), config)
    expect(failure, "watchdog", "safe_auto_retry", "first_token_timeout", "early_stream")


async def test_stall_before_headers_fires_the_connect_watchdog() -> None:
    config = StreamConfig(connect_timeout=0.3)
    with anyio.fail_after(10):
        failure = await fail("anthropic", (Stall(),), config)
    expect(failure, "watchdog", "safe_auto_retry", "connect_timeout", "before_connection")
    assert failure.diagnosis.possibly_delivered


async def test_total_deadline_fires_even_while_progress_flows() -> None:
    # The deadline is wide enough that a loaded machine still connects before it (CI saw a 0.5 s one
    # fire while connecting); the stream outlasts it many times over.
    frames = text_stream("openai-chat", ["a"] * 300)
    steps = (Headers(), *(step for f in frames for step in (Send(f), Sleep(0.05))), End())
    config = StreamConfig(total_timeout=2.0, idle_timeout=10)
    with anyio.fail_after(20):
        failure = await fail("openai-chat", steps, config)
    expect(failure, "watchdog", "user_confirmed_retry", "total_timeout", "mid_generation")
    assert failure.record["stream_events"]["text_delta"] >= 2


@fmts
async def test_local_abort_is_recorded_with_its_source_and_never_looks_like_a_disconnect(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"])
    steps = script(cut_through(fmt, frames, TextDelta), Stall())
    async with FaultServer(steps) as server:
        with anyio.fail_after(10), pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
                async for event in run:
                    if isinstance(event, TextDelta):
                        run.abort("user pressed stop", source="user")
    failure = info.value
    expect(failure, "local_abort", "no_retry", "local_abort", "mid_generation")
    abort = validate_record(failure.record)["abort"]
    assert abort["source"] == "user" and abort["reason"] == "user pressed stop"
    assert failure.record["transport"]["kind"] is None


async def test_abort_from_another_task_stops_a_blocked_read_promptly() -> None:
    async def stop_soon(run: streamfsm.Run) -> None:
        await anyio.sleep(0.1)
        run.abort("app shutting down", source="app")

    failure: StreamFailed | None = None
    async with FaultServer((Headers(), Stall())) as server:
        async with streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
        ) as run:
            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(stop_soon, run)
                    try:
                        await consume(run)
                    except StreamFailed as caught:
                        failure = caught
    assert failure is not None
    assert failure.diagnosis.cause == "app"
    assert failure.diagnosis.failure_class.value == "local_abort"
    assert failure.record["abort"]["reason"] == "app shutting down"


@fmts
async def test_outside_cancellation_is_recorded_then_propagates(fmt: str) -> None:
    frames = cut_through(fmt, text_stream(fmt, ["Hello", " world"]), TextDelta)
    async with FaultServer(script(frames, Stall())) as server:
        run = streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt])
        with anyio.move_on_after(0.3) as scope:
            async with run:
                await consume(run)
    assert scope.cancelled_caught, "the cancellation propagated out of the run unchanged"
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "local_abort"
    assert record["abort"]["source"] == "cancelled"


async def test_consumer_leaving_early_is_a_local_abort() -> None:
    frames = text_stream("anthropic", ["Hello", " world"])
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.open_stream(
            "anthropic", base_url=server.base_url, json=BODIES["anthropic"]
        ) as run:
            async for event in run:
                if isinstance(event, TextDelta):
                    break
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["abort"]["source"] == "consumer_stopped"


async def test_consumer_error_is_recorded_and_reraised_as_it_was() -> None:
    frames = text_stream("openai-chat", ["Hello", " world"])
    async with FaultServer(script(frames, End())) as server:
        with pytest.raises(KeyError, match="boom"):
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
            ) as run:
                async for _ in run:
                    raise KeyError("boom")
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "consumer_error"
    assert record["retry"]["verdict"] == "no_retry"


@pytest.mark.parametrize(("status", "headers", "body", "cause", "verdict", "retry_after"), HTTP_ERRORS)
async def test_http_errors_are_classified_before_any_stream(
    status: int, headers: tuple[tuple[str, str], ...], body: bytes, cause: str, verdict: str, retry_after: Any
) -> None:
    failure = await fail(
        "openai-chat", (Status(status, (("content-type", "application/json"), *headers), body),)
    )
    expect(failure, "provider_error", verdict, "http_error", "before_connection")
    assert failure.diagnosis.cause == cause
    assert failure.diagnosis.retry_after_s == retry_after
    assert failure.record["transport"]["status"] == status


async def test_connection_refused_is_before_connection_and_safe() -> None:
    with pytest.raises(StreamFailed) as info:
        async with streamfsm.open_stream(
            "openai-chat", base_url=f"http://127.0.0.1:{unused_port()}/v1", json=BODIES["openai-chat"]
        ) as run:
            await consume(run)
    failure = info.value
    expect(failure, "before_connection", "safe_auto_retry", "connect_failed", "before_connection")
    assert failure.diagnosis.cause == "refused"
    validate_record(failure.record)


async def test_fin_before_response_is_before_connection() -> None:
    failure = await fail("openai-chat", (Fin(),))
    assert failure.diagnosis.failure_class.value == "before_connection"
    assert failure.diagnosis.cause == "closed_before_response"
    assert failure.diagnosis.possibly_delivered


@fmts
async def test_parallel_tool_calls_complete_and_the_agent_tool_ledger_drives_the_machine(fmt: str) -> None:
    calls = [("read_file", '{"path": "a.txt"}'), ("write_file", '{"path": "b.txt", "text": "hi"}')]
    frames = tool_call_stream(fmt, calls)
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
            seen: list[ToolCall] = []
            async for event in run:
                if isinstance(event, ToolCall):
                    seen.append(event)
                    effect = "read_only" if event.name == "read_file" else "effectful"
                    run.tool_started(event.call_id, effect=effect)
    # Gemini sends arguments as an object, so compare what they mean, not their spacing.
    assert [(c.name, json.loads(c.arguments)) for c in seen] == [(n, json.loads(a)) for n, a in calls]
    for call in seen:
        run.tool_finished(call.call_id)
    record = validate_record(run.record)  # type: ignore[arg-type]
    assert record["outcome"]["class"] == "completed"
    assert record["finish_reason"]["unified"] == "tool_calls"
    assert record["tools"]["started"] == 2 and record["tools"]["effectful"] == 1


@fmts
async def test_cut_while_an_effectful_tool_runs_is_a_side_effect(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("write_file", '{"path": "b.txt"}')], text=["Writing it."])
    steps = script(cut_through(fmt, frames, ToolCall), Fin())
    async with FaultServer(steps) as server:
        with pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
                async for event in run:
                    if isinstance(event, ToolCall):
                        run.tool_started(event.call_id, effect="effectful")
    failure = info.value
    expect(failure, "tool_side_effect", "no_retry", "disconnected", "tool_execution")
    assert failure.record["retry"]["action"] == "continue_with_partial"
    assert "`write_file`" in failure.diagnosis.detail


async def test_unknown_tool_call_id_is_an_illegal_transition() -> None:
    frames = text_stream("openai-chat", ["hi"])
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
        ) as run:
            await consume(run)
            with pytest.raises(streamfsm.IllegalTransition) as info:
                run.tool_started("call_nope")
    assert info.value.trigger is streamfsm.Trigger.TOOL_EXECUTION_START_EFFECTFUL


async def test_caller_client_is_used_and_left_open() -> None:
    import httpx

    frames = text_stream("openai-chat", ["hi"])
    async with FaultServer(script(frames, End())) as server, httpx.AsyncClient() as client:
        async with streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], client=client
        ) as run:
            await consume(run)
        assert not client.is_closed
        assert run.finished


async def test_cut_after_a_tool_ran_and_finished_says_it_ran() -> None:
    frames = tool_call_stream("anthropic", [("write_file", '{"path": "b.txt"}')])
    steps = script(cut_through("anthropic", frames, ToolCall), Fin())
    async with FaultServer(steps) as server:
        with pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "anthropic", base_url=server.base_url, json=BODIES["anthropic"]
            ) as run:
                async for event in run:
                    if isinstance(event, ToolCall):
                        async with run.tool(event.call_id, effect="effectful"):
                            pass
    diagnosis = info.value.diagnosis
    assert str(diagnosis.state) == "tool_call/side_effect"
    assert "after `write_file` had run" in diagnosis.detail
    assert "did not run" not in diagnosis.detail
    assert diagnosis.verdict.value == "no_retry"


async def test_a_read_only_tool_is_not_blamed_for_an_earlier_side_effect() -> None:
    calls = [("write_file", '{"path": "b.txt"}'), ("read_file", '{"path": "a.txt"}')]
    frames = tool_call_stream("openai-responses", calls)
    first_call = cut_through("openai-responses", frames, ToolCall)
    rest = frames[len(first_call) :]
    steps = script(first_call + cut_through("openai-responses", rest, ToolCall), Fin())
    async with FaultServer(steps) as server:
        with pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                "openai-responses", base_url=server.base_url, json=BODIES["openai-responses"]
            ) as run:
                async for event in run:
                    if isinstance(event, ToolCall):
                        effect = "effectful" if event.name == "write_file" else "read_only"
                        run.tool_started(event.call_id, effect=effect)
    detail = info.value.diagnosis.detail
    assert "`read_file`" in detail
    assert "That tool only reads" in detail
    assert "An earlier tool had already started" in detail


async def test_abort_before_entering_sends_nothing() -> None:
    async with FaultServer((Headers(), Stall())) as server:
        run = streamfsm.open_stream("openai-chat", base_url=server.base_url, json=BODIES["openai-chat"])
        run.abort("changed my mind")
        with pytest.raises(StreamFailed) as info:
            async with run:
                pass
        assert server.requests_seen == 0
    assert str(info.value.diagnosis.state) == "idle/none"
    assert info.value.record["abort"]["reason"] == "changed my mind"


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_a_finished_run_leaves_its_connection_for_the_next_request(fmt: str) -> None:
    # The run stops at the terminal event; the body's end is read after it, so HTTP/1.1 keeps the connection.
    frames = text_stream(fmt, ["Hel", "lo"])
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        async with httpx.AsyncClient() as client:
            for _ in range(2):
                async with streamfsm.open_stream(
                    fmt, base_url=server.base_url, json=BODIES[fmt], client=client
                ) as run:
                    await consume(run)
                assert run.finished
    assert [r.connection for r in server.requests] == [0, 0]


@pytest.mark.parametrize("when", ["before_exit", "during_drain"])
async def test_a_cancellation_while_a_finished_run_drains_still_closes_it_and_delivers_its_record(
    when: str,
) -> None:
    # The body stays open after [DONE], so the drain waits on it when the outer scope is cancelled.
    frames = text_stream("openai-chat", ["Hel", "lo"])
    delivered: list[Any] = []
    config = StreamConfig(sinks=(delivered.append,))
    async with FaultServer((Headers(), *(Send(f) for f in frames), Sleep(2.0), End())) as server:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                with anyio.CancelScope() as outer:
                    run = streamfsm.open_stream(
                        "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
                    )
                    async with run:
                        await consume(run)
                        if when == "before_exit":
                            outer.cancel()
                        else:

                            async def cancel_soon() -> None:
                                await anyio.sleep(0.03)
                                outer.cancel()

                            tg.start_soon(cancel_soon)
    assert run.finished
    assert delivered == [run.record]
    assert run._response.is_closed and run._client is not None and run._client.is_closed


async def test_a_slow_consumer_is_not_blamed_on_the_provider() -> None:
    # The provider sends everything promptly; the consumer takes longer than idle_timeout per event.
    frames = text_stream("openai-chat", ["a", "b", "c", "d"])
    steps = (Headers(), *(step for f in frames for step in (Send(f), Sleep(0.02))), End())
    async with FaultServer(steps) as server:
        with anyio.fail_after(10):
            async with streamfsm.open_stream(
                "openai-chat",
                base_url=server.base_url,
                json=BODIES["openai-chat"],
                config=StreamConfig(idle_timeout=0.3),
            ) as run:
                async for _ in run:
                    await anyio.sleep(0.5)
    assert run.finished


async def test_the_idle_clock_resumes_for_a_read_already_waiting_when_a_paused_tool_ends() -> None:
    frames = cut_through("openai-chat", tool_call_stream("openai-chat", [("write_file", "{}")]), ToolCall)
    config = StreamConfig(idle_timeout=0.4, pause_idle_during_tools=True)
    failure: StreamFailed | None = None
    async with FaultServer(script(frames, Stall())) as server:
        with anyio.fail_after(5):
            async with (
                streamfsm.open_stream(
                    "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
                ) as run,
                anyio.create_task_group() as tg,
            ):

                async def run_tool(call_id: str) -> None:
                    async with run.tool(call_id, effect="effectful"):
                        await anyio.sleep(0.3)  # the consumer is already waiting on the next read

                try:
                    async for event in run:
                        if isinstance(event, ToolCall):
                            tg.start_soon(run_tool, event.call_id)
                except StreamFailed as caught:
                    failure = caught
    assert failure is not None, "the idle watchdog fired after the tool ended"
    record = failure.record
    assert record["watchdog"]["fired"] == "idle_timeout"
    assert record["watchdog"]["idle_paused_s"] >= 0.25
    assert record["tools"]["finished"] == 1


class _BodyThatFailsToClose(httpx.AsyncByteStream):
    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames

    async def __aiter__(self) -> Any:
        for data in self.frames:
            yield data
        await anyio.sleep(3600)

    async def aclose(self) -> None:
        raise OSError("close failed")


async def test_a_failing_close_never_replaces_an_outside_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    frames = text_stream("openai-chat", ["hi"])[:1]
    transport = httpx.MockTransport(
        lambda _: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_BodyThatFailsToClose(frames)
        )
    )
    async with httpx.AsyncClient(transport=transport) as client:
        run = streamfsm.open_stream(
            "openai-chat", base_url="http://provider", json=BODIES["openai-chat"], client=client
        )
        with anyio.move_on_after(0.3) as scope:
            async with run:
                await consume(run)
    assert scope.cancelled_caught, "the cancellation reached its scope"
    assert run.record is not None
    assert run.record["abort"]["source"] == "cancelled"
    assert any("closing the stream's source failed (OSError)" in r.getMessage() for r in caplog.records)


async def test_iterating_a_run_outside_its_block_is_a_clear_error() -> None:
    run = streamfsm.open_stream("openai-chat", base_url="http://127.0.0.1:9", json=BODIES["openai-chat"])
    with pytest.raises(RuntimeError, match="inside its `async with` block"):
        await run.__anext__()
    assert run.record is None  # nothing was sent, nothing ended
