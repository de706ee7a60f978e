"""Recovery after visible output (issue 18), over real sockets with the fault provider: resume a background
Responses stream by its cursor, continue by a request that carries what was delivered, never replay
silently.

Every test can fail: the consumer's events are compared with the uncut stream's, event for event.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm
from streamfsm import Diagnosis, Recovery, RetryPolicy, StreamConfig, StreamFailed, Verdict, retrying
from streamfsm.cli._logs import format_record
from streamfsm.runtime import (
    CONTINUE_INSTRUCTION,
    Continuation,
    Continued,
    ContinueStyle,
    Offer,
    Restarted,
    ResumeRefusal,
    RetryingEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    continuation_body,
)
from streamfsm.testing import (
    PREFILL_REFUSAL,
    BackgroundResponses,
    Cut,
    End,
    FaultServer,
    Fin,
    Headers,
    Keepalive,
    RefusesPrefill,
    Request,
    Rst,
    Send,
    Stall,
    Status,
    Step,
    build,
    cut_chunk,
    ends_with_assistant,
    error_event,
    text_stream,
    tool_call_stream,
)
from streamfsm.wire import CONSUMER_EVENT_TYPES, SSEDecoder, adapter_for, prefill_refused
from tests.support.retry import BODIES, cut_through, per_attempt, validate_record

pytestmark = pytest.mark.anyio

RESPONSES = "openai-responses"
BACKGROUND = {**BODIES[RESPONSES], "background": True}
FAST: dict[str, Any] = {"initial_delay_s": 0.001, "max_delay_s": 0.01}
SECRET = "S3CRET-TEXT-MARKER"


def policy(attempts: int = 6) -> RetryPolicy:
    return RetryPolicy(attempts, 30.0, **FAST)


def decoded(fmt: str, frames: list[bytes]) -> list[Any]:
    """The consumer events of a whole stream, decoded without a socket: the ground truth."""
    adapter, decoder = adapter_for(fmt), SSEDecoder()
    out = []
    for raw in frames:
        for sse in decoder.feed(raw):
            out += [e for e in adapter.feed(sse) if type(e) in CONSUMER_EVENT_TYPES]
    return out + [e for e in adapter.end() if type(e) in CONSUMER_EVENT_TYPES]  # Gemini finishes at the end


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def resume_chain(
    router: BackgroundResponses, *, body: dict[str, Any] = BACKGROUND, confirm: Any = None, **config: Any
) -> tuple[list[RetryingEvent], streamfsm.RetryingRun, StreamFailed | None]:
    received: list[RetryingEvent] = []
    failure = None
    async with FaultServer(router) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            url = server.base_url + "/v1"
            return streamfsm.open_stream(
                RESPONSES, base_url=url, json=body, ids=ids, config=StreamConfig(**config)
            )

        with anyio.fail_after(20):
            try:
                async with retrying(policy(), open_attempt, confirm=confirm) as run:
                    async for event in run:
                        received.append(event)
            except StreamFailed as caught:
                failure = caught
    for record in run.records:
        validate_record(record)
    return received, run, failure


# -- resume: one continuous stream --------------------------------------------------------------------------

ANSWER = ["The quick", " brown fox", " jumps over", " the lazy", " dog."]


@pytest.mark.parametrize(
    "how",
    [(Fin(),), (Rst(),), (Keepalive(0.05, 60), Fin()), (Stall(),)],
    ids=["fin", "rst", "keepalive-stall", "silent-stall"],
)
async def test_a_background_stream_cut_mid_answer_resumes_to_the_uncut_answer(how: tuple[Any, ...]) -> None:
    frames = text_stream(RESPONSES, ANSWER, reasoning=["thinking"])
    at = next(i for i, f in enumerate(frames) if b"brown fox" in f) + 1  # after visible text
    router = BackgroundResponses(frames, [Cut(at, how)])
    received, run, failure = await resume_chain(router, idle_timeout=0.3)
    assert failure is None and run.finished
    assert received == decoded(RESPONSES, frames), "one continuous stream: every event once, in order"
    assert text_of(received) == "".join(ANSWER)
    assert not any(isinstance(e, (Restarted, Continued)) for e in received)
    assert router.requests == [("POST", None), ("GET", at - 1)], "resumed after the last event received"
    first, last = run.attempts
    assert (first.next, first.resume_from, first.decision) == ("resume", at - 1, "auto_retry")
    assert first.verdict == "user_confirmed_retry", "text was shown, yet resuming needs no confirmation"
    assert last.decision == "completed"
    chain = run.records[-1]
    assert chain["recovery"] == {"kind": "resume", "starting_after": at - 1}
    assert chain["attempts"][0]["next"] == "resume" and chain["attempts"][0]["resume_from"] == at - 1
    assert chain["outcome"]["state"] == "finished/visible", "the resumed run starts where the stream was"


async def test_a_cut_inside_a_frame_resumes_from_the_last_whole_event() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    at = next(i for i, f in enumerate(frames) if b"jumps" in f)
    router = BackgroundResponses(frames, [Cut(at, (cut_chunk(frames[at], 20), Fin()))])
    received, _run, _ = await resume_chain(router)
    assert received == decoded(RESPONSES, frames)
    assert router.requests[1] == ("GET", at - 1), "the half-received event is sent again, whole"


async def test_a_cut_during_a_tool_calls_arguments_resumes_to_one_whole_call() -> None:
    arguments = json.dumps({"path": "src/app.py", "patch": "x" * 60})
    frames = tool_call_stream(RESPONSES, [("apply_patch", arguments)], text=["Patching now."])
    at = next(i for i, f in enumerate(frames) if b"function_call_arguments.delta" in f) + 2
    router = BackgroundResponses(frames, [Cut(at, (Rst(),))])
    received, run, failure = await resume_chain(router)
    assert failure is None
    assert received == decoded(RESPONSES, frames)
    [call] = [e for e in received if isinstance(e, ToolCall)]
    assert (call.name, call.arguments) == ("apply_patch", arguments), "one whole call"
    assert sum(isinstance(e, ToolInputStart) for e in received) == 1
    assert "".join(e.arguments_delta for e in received if isinstance(e, ToolInputDelta)) == arguments
    assert run.records[0]["outcome"]["class"] == "tool_input_interrupted"
    assert run.records[1]["outcome"]["state"] == "finished/visible"


async def test_a_stream_cut_again_and_again_resumes_each_time() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    cuts = [Cut(5, (Fin(),)), Cut(7, (Rst(),)), Cut(9, (Fin(),))]
    router = BackgroundResponses(frames, cuts)
    received, run, _ = await resume_chain(router)
    assert received == decoded(RESPONSES, frames)
    assert [a.resume_from for a in run.attempts[:-1]] == [4, 6, 8]


async def test_a_failed_re_attach_is_tried_again_and_then_resumes() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    router = BackgroundResponses(frames, [Cut(6)])
    busy = Status(503, (("content-type", "application/json"),), b'{"error": {"type": "server_error"}}')
    gets = 0

    def route(request: Request) -> Any:
        nonlocal gets
        if request.method == "GET":
            gets += 1
            if gets == 1:
                return (busy,)
        return router(request)

    received: list[RetryingEvent] = []
    async with FaultServer(route) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream(RESPONSES, base_url=server.base_url, json=BACKGROUND, ids=ids)

        with anyio.fail_after(20):
            async with retrying(policy(), open_attempt) as run:
                received = [e async for e in run]
    assert received == decoded(RESPONSES, frames)
    assert [(a.next, a.resume_from) for a in run.attempts[:-1]] == [("resume", 5), ("resume", 5)]
    assert router.requests == [("POST", None), ("GET", 5)]


async def test_a_gap_in_a_resumed_stream_is_a_protocol_violation() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    router = BackgroundResponses([*frames[:7], *frames[8:]], [Cut(6)])  # event 7 went missing upstream
    received, run, failure = await resume_chain(router, confirm=lambda d: False)
    assert failure is not None
    assert run.records[1]["outcome"]["edge"] == "protocol_violation"
    assert "sequence_gap" in " ".join(run.records[1]["outcome"]["evidence"])
    assert text_of(received) == text_of(decoded(RESPONSES, frames[:7])), "nothing past the gap"


async def test_a_response_that_failed_upstream_is_reported_after_resuming() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    head = frames[:6]
    failed = [*head, error_event(RESPONSES, "server_error", shape="failed", sequence_number=len(head))]
    router = BackgroundResponses(failed, [Cut(4)])
    received, _run, failure = await resume_chain(router)
    assert failure is not None
    assert [request for request, _ in router.requests] == ["POST", "GET"]
    assert failure.diagnosis.failure_class.value == "provider_error"
    assert failure.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY, "text was shown before it failed"
    assert text_of(received) == text_of(decoded(RESPONSES, head))


# -- resume refused: the next option, with a clear diagnosis -----------------------------------------------


@pytest.mark.parametrize("refusal", list(ResumeRefusal), ids=lambda r: r.value)
async def test_a_refused_resume_after_visible_text_offers_continuation_and_says_why(
    refusal: ResumeRefusal,
) -> None:
    frames = text_stream(RESPONSES, ANSWER)
    at = 6
    offers: list[tuple[Diagnosis, Offer]] = []
    continuation = text_stream(RESPONSES, [" jumps over the lazy dog."])
    router = BackgroundResponses(frames, [Cut(at)], refuse=refusal)
    bodies: list[dict[str, Any]] = []

    def route(request: Request) -> Any:
        if request.method == "POST" and router.requests:  # the continuation request
            bodies.append(json.loads(request.body))
            return (Headers(), *(Send(f) for f in continuation), End())
        return router(request)

    def confirm(diagnosis: Diagnosis, offer: Offer) -> bool:
        offers.append((diagnosis, offer))
        return True

    received: list[RetryingEvent] = []
    async with FaultServer(route) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream(RESPONSES, base_url=server.base_url, json=BACKGROUND, ids=ids)

        with anyio.fail_after(20):
            async with retrying(policy(), open_attempt, confirm=confirm) as run:
                received = [e async for e in run]
    [(diagnosis, offer)] = offers
    assert offer.resume_refused is refusal
    assert offer.recoveries == (Recovery.CONTINUE, Recovery.REPLAY)
    assert f"resume_refused={refusal.value}" in diagnosis.evidence
    assert "Resuming the stream was refused: " + refusal.reason in diagnosis.detail
    assert diagnosis.summary_key == "mid_generation.closed_mid_body", "the break itself, not the refusal"
    delivered = text_of(decoded(RESPONSES, frames[:at]))
    assert bodies[0]["input"][1]["content"][0]["text"] == delivered
    kinds = [type(e).__name__ for e in received]
    assert kinds.count("Continued") == 1 and "Restarted" not in kinds
    assert text_of(received) == delivered + " jumps over the lazy dog."
    refused_link = run.attempts[1]
    assert refused_link.resume_refused == refusal.value and refused_link.next == "continue"
    assert run.records[1]["recovery"]["refused"] == refusal.value


async def test_a_refused_resume_without_confirm_stops_with_the_reason() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    router = BackgroundResponses(frames, [Cut(6)], max_age_s=0.0)  # every resume comes too late
    _received, _run, failure = await resume_chain(router)
    assert failure is not None
    assert router.refused == [ResumeRefusal.TOO_OLD]
    assert failure.diagnosis.verdict is Verdict.USER_CONFIRMED_RETRY
    assert "too old" in str(failure) and "needs confirmation" in (failure.stop_reason or "")
    assert [a.decision for a in failure.attempts] == ["auto_retry", "stopped"]
    assert failure.attempts[1].resume_refused == "too_old"


async def test_a_refused_resume_before_any_text_falls_back_to_a_fresh_request() -> None:
    frames = text_stream(RESPONSES, ANSWER, reasoning=["thinking"])
    at = next(i for i, f in enumerate(frames) if b"reasoning_summary_text.delta" in f) + 1
    router = BackgroundResponses(frames, [Cut(at)], refuse=ResumeRefusal.UNKNOWN_ID)
    received, run, failure = await resume_chain(router)
    assert failure is None
    assert [r for r, _ in router.requests] == ["POST", "GET", "POST"]
    assert received == decoded(RESPONSES, frames), "the held reasoning of the broken attempt never shows"
    assert [a.next for a in run.attempts[:-1]] == ["resume", "retry"]


async def test_a_request_not_in_background_mode_is_never_resumed() -> None:
    frames = text_stream(RESPONSES, ANSWER)
    router = BackgroundResponses(frames, [Cut(6)])
    _received, _run, failure = await resume_chain(router, body=BODIES[RESPONSES])
    assert failure is not None and router.requests == [("POST", None)]
    assert failure.stop_reason == "the retry needs confirmation; no confirm was given"


# -- continuation ------------------------------------------------------------------------------------------

CONTINUE_FORMATS = ("anthropic", "openai-chat", "gemini", RESPONSES)


def continuation_route(first: tuple[Any, ...], second: list[bytes], bodies: list[dict[str, Any]]) -> Any:
    def route(request: Request) -> Any:
        bodies.append(json.loads(request.body))
        return first if request.seq == 0 else (Headers(), *(Send(f) for f in second), End())

    return route


def carried_text(fmt: str, body: dict[str, Any]) -> str:
    """The assistant text a continuation request carries, read the way the provider would."""
    if fmt == "anthropic":
        message = next((m for m in reversed(body["messages"]) if m["role"] == "assistant"), None)
        content = message["content"] if message else ""
        return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    if fmt == "openai-chat":
        return next(m for m in reversed(body["messages"]) if m["role"] == "assistant")["content"] or ""
    if fmt == "gemini":
        model = next(c for c in reversed(body["contents"]) if c["role"] == "model")
        return "".join(p.get("text", "") for p in model["parts"])
    item = next((i for i in reversed(body["input"]) if i.get("role") == "assistant"), None)
    return "".join(part["text"] for part in item["content"]) if item else ""


def carried_calls(body: Any) -> list[Any]:
    """The arguments of every tool call a request body carries, in any of the four formats."""
    found: list[Any] = []
    if isinstance(body, dict):
        kind = body.get("type")
        if kind in ("function", "function_call") or "functionCall" in body:
            call = body.get("function", body.get("functionCall", body))
            raw = call.get("arguments", call.get("args"))
            found.append(json.loads(raw) if isinstance(raw, str) else raw)
        elif kind == "tool_use":
            found.append(body["input"])
        else:
            for value in body.values():
                found += carried_calls(value)
    elif isinstance(body, list):
        for value in body:
            found += carried_calls(value)
    return found


async def continuation_chain(
    fmt: str, route: Any, confirm: Any = True, **options: Any
) -> tuple[list[RetryingEvent], streamfsm.RetryingRun, StreamFailed | None]:
    received: list[RetryingEvent] = []
    failure = None
    async with FaultServer(route) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            body = (
                {**BODIES[fmt], "messages": [{"role": "user", "content": SECRET}]}
                if "messages" in BODIES[fmt]
                else BODIES[fmt]
            )
            return streamfsm.open_stream(fmt, base_url=server.base_url, json=body, ids=ids)

        answer = confirm if callable(confirm) else (lambda d: confirm)
        with anyio.fail_after(20):
            try:
                async with retrying(policy(), open_attempt, confirm=answer, **options) as run:
                    async for event in run:
                        received.append(event)
            except StreamFailed as caught:
                failure = caught
    for record in run.records:
        validate_record(record)
    return received, run, failure


@pytest.mark.parametrize("fmt", CONTINUE_FORMATS)
async def test_a_confirmed_continuation_carries_exactly_the_delivered_text_and_shows_only_what_is_new(
    fmt: str,
) -> None:
    pieces = [f"{SECRET} one", " two", " three"]
    frames = text_stream(fmt, pieces)  # type: ignore[arg-type]
    first = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)), Fin())
    delivered = text_of(decoded(fmt, cut_through(fmt, frames, TextDelta)))
    rest = text_stream(fmt, [" two", " three"])  # type: ignore[arg-type]
    bodies: list[dict[str, Any]] = []
    received, run, failure = await continuation_chain(fmt, continuation_route(first, rest, bodies))
    assert failure is None and run.finished
    assert carried_text(fmt, bodies[1]) == delivered, "the second request carries exactly what was shown"
    index = next(i for i, e in enumerate(received) if isinstance(e, Continued))
    assert received[index] == Continued(2, "mid_generation.closed_mid_body", len(delivered))
    assert text_of(received[:index]) == delivered
    assert received[index + 1 :] == decoded(fmt, rest), "then only the continuation"
    assert text_of(received) == "".join(pieces)
    assert (
        bodies[1][next(k for k in ("messages", "contents", "input") if k in bodies[1])][-1]["role"] == "user"
    )
    assert CONTINUE_INSTRUCTION in json.dumps(bodies[1]), "every format continues by instruction by default"
    link = run.attempts[0]
    assert (link.next, link.continue_after_chars, link.decision) == (
        "continue",
        len(delivered),
        "confirmed_retry",
    )
    record = run.records[1]
    assert record["recovery"] == {
        "kind": "continue",
        "after_chars": len(delivered),
        "tool_calls": 0,
        "style": "instruction",
    }
    for r in run.records:
        assert SECRET not in r.to_json(), "records say 'continue after K characters', never the text"
    assert SECRET not in repr(run.records[1]) + repr(link) + repr(received[index])


async def test_a_prefill_drops_trailing_whitespace_and_the_repeated_space_is_not_shown_twice() -> None:
    fmt = "anthropic"
    frames = text_stream(fmt, ["Hello ", "world"])
    first = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)), Fin())
    rest = text_stream(fmt, [" world", "!"])  # the model starts with the space it was not given
    bodies: list[dict[str, Any]] = []
    received, run, _ = await continuation_chain(
        fmt, continuation_route(first, rest, bodies), continue_with=ContinueStyle.PREFILL
    )
    assert bodies[1]["messages"][-1] == {"role": "assistant", "content": "Hello"}
    assert run.records[1]["recovery"]["style"] == "prefill"
    assert text_of(received) == "Hello world!"


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat", RESPONSES])
async def test_a_call_cut_mid_arguments_is_discarded_and_requested_again_whole(fmt: str) -> None:
    arguments = json.dumps({"path": "a.txt", "text": "y" * 40})
    frames = tool_call_stream(fmt, [("write_file", arguments)], text=["Writing it."])  # type: ignore[arg-type]
    cut = cut_through(fmt, frames, ToolInputDelta)
    first = (Headers(), *(Send(f) for f in cut), Fin())
    rest = tool_call_stream(fmt, [("write_file", arguments)])  # type: ignore[arg-type]
    bodies: list[dict[str, Any]] = []
    received, _run, failure = await continuation_chain(
        fmt, continuation_route(first, rest, bodies), resume=False
    )
    assert failure is None
    [started] = [e for e in decoded(fmt, cut) if isinstance(e, ToolInputStart)]
    continued = next(e for e in received if isinstance(e, Continued))
    assert continued.discarded_calls == (started.call_id,)
    assert "write_file" not in json.dumps(bodies[1]), "the cut call is not carried"
    calls = [e for e in received if isinstance(e, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [("write_file", arguments)], "one whole call, once"


async def _continued_reading_files(
    fmt: str, first: tuple[Step, ...], rest: list[bytes]
) -> tuple[list[dict[str, Any]], list[Offer], list[RetryingEvent]]:
    """A confirmed continuation of ``first`` by ``rest``, the agent reading a file per call: the request
    bodies sent, the offers made and the events received."""
    bodies: list[dict[str, Any]] = []
    offers: list[Offer] = []

    def confirm(diagnosis: Diagnosis, offer: Offer) -> bool:
        offers.append(offer)
        return True

    received: list[RetryingEvent] = []
    async with FaultServer(continuation_route(first, rest, bodies)) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt], ids=ids)

        with anyio.fail_after(20):
            async with retrying(policy(), open_attempt, confirm=confirm) as run:
                async for event in run:
                    received.append(event)
                    if isinstance(event, ToolCall):
                        run.tool_started(event.call_id, "read_only")
                        run.tool_finished(event.call_id, result={"content": "file " + event.arguments})
    return bodies, offers, received


@pytest.mark.parametrize("fmt", [f for f in CONTINUE_FORMATS if f != "gemini"])  # Gemini: see below
async def test_complete_calls_with_results_are_carried_and_never_requested_twice(fmt: str) -> None:
    frames = build(
        fmt,  # type: ignore[arg-type]
        [
            ("text", "Reading both."),
            ("tool", "read_file", '{"path": "a"}'),
            ("tool", "read_file", '{"path": "b"}'),
        ],
        parallel=False,  # Gemini: one call per chunk, so the cut falls between them
    )
    cut = cut_through(fmt, frames, ToolCall)
    [first_call] = [e for e in decoded(fmt, cut) if isinstance(e, ToolCall)]
    first = (Headers(), *(Send(f) for f in cut), Fin())
    rest = build(fmt, [("tool", "read_file", '{"path": "b"}')])  # type: ignore[arg-type]
    bodies, offers, received = await _continued_reading_files(fmt, first, rest)
    assert offers[0].recoveries[0] is Recovery.CONTINUE and offers[0].tool_calls == 1
    assert carried_calls(bodies[1]) == [json.loads(first_call.arguments)], "the complete call, carried once"
    assert "file " in json.dumps(bodies[1]), "the call's result is carried with it"
    calls = [e for e in received if isinstance(e, ToolCall)]
    assert [json.loads(c.arguments) for c in calls] == [{"path": "a"}, {"path": "b"}], "each call once, whole"


async def test_gemini_calls_cut_before_their_finish_were_never_handed_out_and_are_asked_again() -> None:
    """Gemini hands a call out only with a whole-answer finish: a cut after the first of two calls leaves
    nothing handed out (no tool ran), so the continuation carries the text and no call, and both calls come
    whole, once each, from the continued answer."""
    fmt = "gemini"
    calls_made = [("tool", "read_file", '{"path": "a"}'), ("tool", "read_file", '{"path": "b"}')]
    frames = build(fmt, [("text", "Reading both."), *calls_made], parallel=False)
    first = (Headers(), *(Send(f) for f in frames[:-1]), Fin())  # the chunk with the second call and STOP
    rest = build(fmt, calls_made)
    bodies, offers, received = await _continued_reading_files(fmt, first, rest)
    assert offers[0].recoveries[0] is Recovery.CONTINUE and offers[0].tool_calls == 0
    assert carried_calls(bodies[1]) == [], "no call was handed out, so none is carried"
    calls = [e for e in received if isinstance(e, ToolCall)]
    assert [json.loads(c.arguments) for c in calls] == [{"path": "a"}, {"path": "b"}], "each call once, whole"


async def test_a_complete_call_without_a_result_is_offered_a_replay_only() -> None:
    fmt = "openai-chat"
    frames = tool_call_stream(fmt, [("read_file", '{"path": "a"}'), ("read_file", "{}")])
    first = (Headers(), *(Send(f) for f in cut_through(fmt, frames, ToolCall)), Fin())
    offers: list[Offer] = []

    def confirm(diagnosis: Diagnosis, offer: Offer) -> bool:
        offers.append(offer)
        return False

    _, _, failure = await continuation_chain(fmt, per_attempt([first]), confirm=confirm)
    assert failure is not None and offers[0].recoveries == (Recovery.REPLAY,)


async def test_a_one_argument_confirm_continues_and_an_unoffered_choice_stops() -> None:
    fmt = "openai-chat"
    frames = text_stream(fmt, ["Hello", " world"])
    first = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)), Fin())
    _, run, failure = await continuation_chain(
        fmt, continuation_route(first, text_stream(fmt, [" world"]), []), confirm=lambda d: True
    )
    assert failure is None and run.attempts[0].next == "continue"
    _, _, failure = await continuation_chain(
        fmt, continuation_route(first, text_stream(fmt, [" world"]), []), confirm=lambda d: Recovery.RESUME
    )
    assert failure is not None and failure.stop_reason == "the retry was not confirmed"


async def test_a_rewrite_of_ones_own_and_a_style_are_used() -> None:
    fmt = "openai-chat"
    frames = text_stream(fmt, ["Hello", " world"])
    first = (Headers(), *(Send(f) for f in cut_through(fmt, frames, TextDelta)), Fin())
    seen: list[Continuation] = []

    def rewrite(body: Any, continuation: Continuation) -> dict[str, Any]:
        seen.append(continuation)
        return {
            **body,
            "messages": [
                *body["messages"],
                {"role": "assistant", "content": continuation.text, "prefix": True},
            ],
        }

    bodies: list[dict[str, Any]] = []
    await continuation_chain(
        fmt, continuation_route(first, text_stream(fmt, [" world"]), bodies), continue_with=rewrite
    )
    assert bodies[1]["messages"][-1] == {"role": "assistant", "content": "Hello", "prefix": True}
    assert repr(seen[0]) == "Continuation(<5 chars>, calls=0)"
    bodies.clear()
    await continuation_chain(
        fmt,
        continuation_route(first, text_stream(fmt, [" world"]), bodies),
        continue_with=ContinueStyle.PREFILL,
    )
    assert bodies[1]["messages"][-1] == {"role": "assistant", "content": "Hello"}


# -- a model that takes no prefill (Anthropic's current models) ----------------------------------------------


def prefill_case() -> tuple[tuple[Any, ...], list[bytes], str]:
    """An Anthropic answer cut after "Hello " was shown: the first script, the rest, the whole text."""
    frames = text_stream("anthropic", ["Hello ", "world", "!"])
    first = (Headers(), *(Send(f) for f in cut_through("anthropic", frames, TextDelta)), Fin())
    return first, text_stream("anthropic", ["world", "!"]), "Hello world!"


def ends_with(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["role"])


async def test_a_model_that_refuses_prefill_is_continued_by_instruction_by_default() -> None:
    first, rest, whole = prefill_case()
    bodies: list[dict[str, Any]] = []
    provider = RefusesPrefill(continuation_route(first, rest, bodies))
    received, run, failure = await continuation_chain("anthropic", provider)
    assert failure is None and run.finished
    assert provider.refused == 0 and len(bodies) == 2, "the continuation was accepted as sent"
    assert ends_with(bodies[1]) == "user" and bodies[1]["messages"][-1]["content"] == CONTINUE_INSTRUCTION
    assert carried_text("anthropic", bodies[1]) == "Hello ", "the delivered text quoted back whole"
    assert text_of(received) == whole and sum(isinstance(e, Continued) for e in received) == 1
    assert [a.next for a in run.attempts[:-1]] == ["continue"]
    assert run.records[1]["recovery"]["style"] == "instruction"


@pytest.mark.parametrize("sdk_spelling", [False, True], ids=["direct", "wrapped-by-a-gateway"])
async def test_a_prefill_asked_for_and_refused_falls_back_once_to_an_instruction(sdk_spelling: bool) -> None:
    first, rest, whole = prefill_case()
    bodies: list[dict[str, Any]] = []
    route = continuation_route(first, rest, bodies)
    if sdk_spelling:  # a gateway (Vertex, Antigravity) wraps Anthropic's error in its own, status 400 kept
        wrapped = json.dumps({"error": {"code": 400, "message": PREFILL_REFUSAL.decode()}}).encode()

        def provider(request: Request) -> Any:
            if ends_with_assistant(request.body):
                bodies.append(json.loads(request.body))
                return (Status(400, (("content-type", "application/json"),), wrapped),)
            return route(request)

    else:
        refuser = RefusesPrefill(route)

        def provider(request: Request) -> Any:
            if ends_with_assistant(request.body):
                bodies.append(json.loads(request.body))
            return refuser(request)

    received, run, failure = await continuation_chain(
        "anthropic", provider, continue_with=ContinueStyle.PREFILL
    )
    assert failure is None and run.finished
    assert [ends_with(b) for b in bodies] == ["user", "assistant", "user"], (
        "prefill, refused, then instruction"
    )
    assert (
        bodies[1]["messages"][-1]["content"] == "Hello" and carried_text("anthropic", bodies[2]) == "Hello "
    )
    assert text_of(received) == whole, "nothing shown twice, nothing missing"
    assert sum(isinstance(e, Continued) for e in received) == 1, "the fallback is invisible to the consumer"
    confirmed, refused, done = run.attempts
    assert (confirmed.decision, confirmed.next, confirmed.continue_refused) == (
        "confirmed_retry",
        "continue",
        None,
    )
    assert (refused.decision, refused.next, refused.continue_refused) == (
        "auto_retry",
        "continue",
        "prefill_unsupported",
    )
    assert refused.continue_after_chars == len("Hello ") and done.decision == "completed"
    second, third = run.records[1], run.records[2]
    assert second["recovery"] == {
        "kind": "continue",
        "after_chars": 6,
        "tool_calls": 0,
        "style": "prefill",
        "refused": "prefill_unsupported",
    }
    assert second["outcome"]["summary_key"].startswith("provider_error.")
    assert "continue_refused=prefill_unsupported" in second["outcome"]["evidence"]
    assert third["recovery"]["style"] == "instruction" and "refused" not in third["recovery"]
    assert third["attempts"][1]["continue_refused"] == "prefill_unsupported", "the chain says why"
    shown = format_record(third)
    assert "continuation refused: prefill_unsupported; then continued after 6 characters" in shown
    assert "began by continuing after 6 characters by instruction" in shown
    for record in run.records:
        assert "must end with a user message" not in record.to_json(), (
            "the provider's words are read, not kept"
        )


async def test_a_refused_prefill_falls_back_only_once_and_a_later_retry_stays_an_instruction() -> None:
    first, rest, _ = prefill_case()
    bodies: list[dict[str, Any]] = []
    unavailable = (Status(503, (("content-type", "application/json"),), b'{"error": {"type": "api_error"}}'),)

    def route(request: Request) -> Any:
        bodies.append(json.loads(request.body))
        if request.seq == 0:
            return first
        if request.seq == 2:
            return unavailable  # the instruction meets a safe retry: it is sent again as an instruction
        return (Headers(), *(Send(f) for f in rest), End())

    received, run, failure = await continuation_chain(
        "anthropic", RefusesPrefill(route), continue_with=ContinueStyle.PREFILL
    )
    assert failure is None and text_of(received) == "Hello world!"
    assert [ends_with(b) for b in bodies] == ["user", "user", "user"], (
        "the refused prefill never reached route"
    )
    assert [a.next for a in run.attempts[:-1]] == ["continue", "continue", "continue"]
    assert [a.continue_refused for a in run.attempts] == [None, "prefill_unsupported", None, None]

    # A model that refuses the instruction too (with the same words): one fallback, then the chain stops.
    def refuse_all(request: Request) -> Any:
        if request.seq == 0:
            return first
        return (Status(400, (("content-type", "application/json"),), PREFILL_REFUSAL),)

    _, run, failure = await continuation_chain("anthropic", refuse_all, continue_with=ContinueStyle.PREFILL)
    assert failure is not None and len(run.attempts) == 3
    assert [a.continue_refused for a in run.attempts] == [None, "prefill_unsupported", None]
    assert failure.diagnosis.verdict is Verdict.NO_RETRY
    assert failure.stop_reason is not None and failure.stop_reason.startswith(
        "the attempt must not be retried"
    )


def test_a_prefill_refusal_is_read_from_the_status_and_the_words() -> None:
    assert prefill_refused(400, PREFILL_REFUSAL)
    reworded = {"error": {"type": "invalid_request_error", "message": "Prefill is  not supported here"}}
    assert prefill_refused(400, json.dumps(reworded).encode())
    ended = {"error": {"message": "The conversation must end with a user message."}}
    assert prefill_refused(400, json.dumps(ended).encode())
    other = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}
    assert not prefill_refused(400, json.dumps(other).encode())
    assert not prefill_refused(500, PREFILL_REFUSAL), "a server error is not a refusal of the request's shape"
    assert not prefill_refused(400, b"<html>bad request</html>") and not prefill_refused(400, b"[1]")
    assert ends_with_assistant(b'{"messages": [{"role": "user"}, {"role": "assistant"}]}')
    assert ends_with_assistant(b'{"contents": [{"role": "model", "parts": []}]}')
    assert not ends_with_assistant(b'{"messages": [{"role": "assistant"}, {"role": "user"}]}')
    assert not ends_with_assistant(b"not json") and not ends_with_assistant(b"[]")


def test_the_rewrites_are_pure_and_refuse_a_call_without_its_result() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    before = json.dumps(body)
    out = continuation_body("openai-chat", body, Continuation("Hel"))
    assert json.dumps(body) == before and out is not body
    assert out["messages"][-2:] == [
        {"role": "assistant", "content": "Hel"},
        {"role": "user", "content": CONTINUE_INSTRUCTION},
    ]
    call = ToolCall("c1", "f", "{}")
    with pytest.raises(ValueError, match="result"):
        continuation_body("anthropic", body, Continuation("", (call,)))
    prefill = ContinueStyle.PREFILL
    assert continuation_body("anthropic", body, Continuation("Hel "))["messages"][-2:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Hel "}]},
        {"role": "user", "content": CONTINUE_INSTRUCTION},
    ], "the default: the delivered text quoted back whole, then an instruction"
    assert continuation_body("anthropic", body, Continuation("Hel "), prefill)["messages"][-1] == {
        "role": "assistant",
        "content": "Hel",
    }, "a prefill only when asked for, without its trailing whitespace"
    thinking = {**body, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert (
        continuation_body("anthropic", thinking, Continuation("Hel"), prefill)["messages"][-1]["content"]
        == CONTINUE_INSTRUCTION
    ), "never a prefill with extended thinking on"
    own = {**body, "messages": [*body["messages"], {"role": "assistant", "content": "Sure: "}]}
    assert continuation_body("anthropic", own, Continuation("Hel"), prefill)["messages"][-1]["content"] == (
        "Sure: Hel"
    )
    extended = continuation_body("anthropic", own, Continuation("Hel"))["messages"]
    assert extended[1:] == [
        {"role": "assistant", "content": "Sure: Hel"},
        {"role": "user", "content": CONTINUE_INSTRUCTION},
    ], "the caller's own prefill, extended, then an instruction"


# -- properties ---------------------------------------------------------------------------------------------

pieces = st.lists(st.text(alphabet="abcdefgh .,", min_size=1, max_size=8), min_size=1, max_size=6)
HOWS = ("fin", "rst", "mid_frame")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=pieces,
    calls=st.lists(
        st.sampled_from(['{"a": 1}', '{"path": "src/x.py", "body": "' + "z" * 30 + '"}']), max_size=2
    ),
    cuts=st.lists(st.tuples(st.floats(0, 1), st.sampled_from(HOWS)), min_size=1, max_size=3),
)
async def test_property_a_resumed_stream_is_the_uncut_stream(
    texts: list[str], calls: list[str], cuts: list[tuple[float, str]]
) -> None:
    parts = [("text", t) for t in texts] + [("tool", f"tool_{i}", a) for i, a in enumerate(calls)]
    frames = build(RESPONSES, parts)
    positions = sorted({1 + int(f * (len(frames) - 2)) for f, _ in cuts})  # after response.created
    steps = {"fin": (Fin(),), "rst": (Rst(),)}
    plan = [
        Cut(at, (cut_chunk(frames[at], len(frames[at]) // 2), Fin()) if how == "mid_frame" else steps[how])
        for at, (_, how) in zip(positions, cuts, strict=False)
    ]
    router = BackgroundResponses(frames, plan)
    received, run, failure = await resume_chain(router)
    assert failure is None, failure
    truth = decoded(RESPONSES, frames)
    assert received == truth, "every event exactly once, in order, nothing missing"
    assert text_of(received) == "".join(texts)
    whole = [e for e in received if isinstance(e, ToolCall)]
    assert [c.arguments for c in whole] == calls and len({c.call_id for c in whole}) == len(calls)
    assert all(a.next == "resume" for a in run.attempts[:-1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(CONTINUE_FORMATS),
    texts=pieces,
    call=st.sampled_from([None, '{"path": "a"}']),
    fraction=st.floats(0, 1),
    style=st.sampled_from([None, ContinueStyle.PREFILL]),
    refuses_prefill=st.booleans(),
)
async def test_property_a_continued_answer_is_the_uncut_answer_and_no_call_is_doubled_or_partial(
    fmt: str,
    texts: list[str],
    call: str | None,
    fraction: float,
    style: ContinueStyle | None,
    refuses_prefill: bool,
) -> None:
    parts: list[tuple[str, ...]] = [("text", t) for t in texts] + ([("tool", "lookup", call)] if call else [])
    frames = build(fmt, parts)  # type: ignore[arg-type]
    truth = decoded(fmt, frames)
    first_text = next(i for i, f in enumerate(frames) if text_of(decoded(fmt, frames[: i + 1])))
    # After visible text, before the terminal event (Gemini's is the clean end of the body itself).
    last = len(frames) if fmt == "gemini" else len(frames) - 1
    at = first_text + 1 + int(fraction * (last - first_text - 1))
    shown = decoded(fmt, frames[:at])
    delivered = text_of(shown)
    complete = [e for e in shown if isinstance(e, ToolCall)]
    # The provider's continuation is the rest of the answer after what the request carried, and the calls
    # not yet complete. An Anthropic prefill (asked for, taken) drops trailing whitespace, which the model
    # writes again; a refused one is sent again as an instruction, which carries the text whole.
    prefilled = style is ContinueStyle.PREFILL and not complete and not refuses_prefill
    carried = delivered.rstrip() if fmt == "anthropic" and prefilled else delivered
    rest_text = "".join(texts)[len(carried) :]
    rest_parts: list[tuple[str, ...]] = ([("text", rest_text)] if rest_text else []) + (
        [("tool", "lookup", call)] if call and not complete else []
    )
    rest = build(fmt, rest_parts)  # type: ignore[arg-type]
    bodies: list[dict[str, Any]] = []
    first = (Headers(), *(Send(f) for f in frames[:at]), Rst())

    def confirm(diagnosis: Diagnosis, offer: Offer) -> Recovery:
        return offer.recoveries[0]

    received: list[RetryingEvent] = []
    route = continuation_route(first, rest, bodies)
    async with FaultServer(RefusesPrefill(route) if refuses_prefill else route) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt], ids=ids)

        with anyio.fail_after(20):
            async with retrying(policy(), open_attempt, confirm=confirm, continue_with=style) as run:
                async for event in run:
                    received.append(event)
                    if isinstance(event, ToolCall):
                        run.tool_started(event.call_id, "read_only")
                        run.tool_finished(event.call_id, result="ok")
    assert text_of(received) == "".join(texts)
    assert carried_text(fmt, bodies[1]) == (carried if carried.strip() or fmt != "anthropic" else "")
    whole = [e for e in received if isinstance(e, ToolCall)]
    truth_calls = [e.arguments for e in truth if isinstance(e, ToolCall)]
    assert [c.arguments for c in whole] == truth_calls, "never twice, never in part"
    assert [c.name for c in whole] == [e.name for e in truth if isinstance(e, ToolCall)]
    assert sum(isinstance(e, Continued) for e in received) == 1


# -- the chain, for people -----------------------------------------------------------------------------------


async def test_diagnose_shows_how_each_attempt_ended_and_how_the_next_began(tmp_path: Any) -> None:
    # POST cut -> resumed after 4, cut again -> resumed after 6, refused (too old) -> continued -> completed
    frames = text_stream(RESPONSES, ANSWER)
    router = BackgroundResponses(frames, [Cut(5), Cut(7, (Rst(),))])

    def route(request: Request) -> Any:
        gets = sum(1 for method, _ in router.requests if method == "GET")
        if request.method == "GET" and gets >= 1:
            router.refuse = ResumeRefusal.TOO_OLD
        if request.method == "POST" and router.requests:
            return (Headers(), *(Send(f) for f in text_stream(RESPONSES, [" the lazy dog."])), End())
        return router(request)

    log = tmp_path / "audit.jsonl"
    async with FaultServer(route) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            config = StreamConfig(sinks=(streamfsm.AuditLog(log),))
            return streamfsm.open_stream(
                RESPONSES, base_url=server.base_url, json=BACKGROUND, ids=ids, config=config
            )

        with anyio.fail_after(20):
            async with retrying(policy(), open_attempt, confirm=lambda d, offer: True) as run:
                received = [e async for e in run]
    assert [a.next for a in run.attempts[:-1]] == ["resume", "resume", "continue"]
    assert text_of(received).endswith(" the lazy dog.")
    done = await anyio.run_process(
        [sys.executable, "-m", "streamfsm", "diagnose", str(log), "--last", "1"], check=False
    )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    chain = out[out.index("attempts (this run is attempt 4)") :].splitlines()
    assert "then resumed after event 4" in chain[1]
    assert "then resumed after event 6" in chain[2]
    assert "resume refused: too_old; then continued after" in chain[3] and "(confirmed)" in chain[3]
    assert "began by continuing after" in chain[4] and "completed.finished" in chain[4]


# -- the harness's recovery scenarios ------------------------------------------------------------------------


async def test_every_recovery_scenario_matches() -> None:
    from streamfsm.testing._recovery_scenarios import recovery_catalog, run_recovery

    chains = recovery_catalog()
    assert {s.chain[-1] for s in chains} >= {"resume", "continue", "replay", "retry"}
    assert {s.format for s in chains if "continue" in s.chain} == set(CONTINUE_FORMATS)
    for scenario in chains:
        outcome, records = await run_recovery(scenario)
        assert outcome.matched, (scenario.name, outcome.mismatch)
        assert len(records) == len(scenario.chain) + 1
        for record in records:
            validate_record(record)


async def test_a_recovery_scenario_that_expects_another_chain_or_text_is_a_mismatch() -> None:
    import dataclasses

    from streamfsm.testing._recovery_scenarios import recovery_catalog, run_recovery

    [resume] = recovery_catalog(["recovery/openai-responses/resume-after-fin"])
    outcome, _ = await run_recovery(dataclasses.replace(resume, chain=("continue",), text=resume.text + "!"))
    assert not outcome.matched
    assert outcome.mismatch is not None and "chain: expected continue, got resume" in outcome.mismatch
    assert "characters" in outcome.mismatch


def test_streamfsm_harness_plays_the_recovery_scenarios(tmp_path: Any) -> None:
    import subprocess

    out = tmp_path / "runs.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm", "harness", "--scenario", "recovery/*", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("15 scenario runs in ") and last.endswith("all matched")
    assert "recovery/openai-responses/resume-refused-too-old-then-continue" in done.stdout
    from streamfsm.testing._recovery_scenarios import recovery_catalog

    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == sum(len(s.chain) + 1 for s in recovery_catalog()), "every attempt's record"
    assert {r["recovery"]["kind"] for r in records if r["recovery"]} == {"resume", "continue"}


async def test_a_format_without_a_continuation_rewrite_is_offered_a_replay_only() -> None:
    """Ollama's API has no continuation rewrite: a continuation was offered first all the same, and taking
    it raised ValueError out of the chain. A replay alone is on offer (a rewrite of one's own allows one)."""
    fmt = "ollama"
    frames = text_stream(fmt, ["Hello", " world"])
    ndjson = Headers(200, (("content-type", "application/x-ndjson"),))
    cut = (ndjson, Send(frames[0]), Fin())  # "Hello", then the connection closes
    whole = (ndjson, *(Send(f) for f in frames), End())
    offers: list[tuple[Recovery, ...]] = []

    def confirm(diagnosis: Diagnosis, offered: Offer) -> bool:
        offers.append(offered.recoveries)
        return True

    async with FaultServer(per_attempt([cut, whole])) as server:

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt], ids=ids)

        with anyio.fail_after(20):
            async with retrying(policy(), open_attempt, confirm=confirm) as run:
                async for _ in run:
                    pass
    assert offers == [(Recovery.REPLAY,)]
    assert run.finished
