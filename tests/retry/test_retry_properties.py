"""Property: over random per-attempt fault sequences, through the real fault server, the retry executor only
retries automatically what the machine proved safe and nothing reached the consumer of, and the consumer
never receives an event twice or out of order.

Every wire text carries its attempt's tag (``A1``, ``A2``, ...), so a duplicate or a leak is visible in the
text itself, not only in object identity.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from streamfsm import Diagnosis, RetryPolicy, StreamFailed, Verdict, retrying
from streamfsm.runtime import (
    Continued,
    Finish,
    ReasoningDelta,
    Restarted,
    RetryingEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
)
from streamfsm.testing import (
    End,
    FaultServer,
    Fin,
    Headers,
    Send,
    Status,
    error_event,
    text_stream,
    tool_call_stream,
)
from tests.support.retry import (
    SSE_FORMATS,
    Spies,
    SpyRun,
    cut_before,
    cut_through,
    ok_script,
    per_attempt,
    validate_record,
)

pytestmark = pytest.mark.anyio

EXAMPLES = 50 if os.environ.get("CI") == "true" else 25
JSON = ("content-type", "application/json")
FAULTS = (
    "headers_fin",  # cut right after the headers
    "reasoning_fin",  # cut after reasoning, before any text
    "text_fin",  # cut after visible text
    "rate_limit",  # 429 with a small retry-after-ms
    "auth",  # 401
    "overloaded_before",  # in-band overload before any output
    "overloaded_after",  # in-band overload after visible text
    "tool_cut",  # cut right after a complete tool call
    "fin_before_response",  # the request was sent, the connection closed: possibly delivered
    "success",
)
_TAG = re.compile(r"A(\d+)")


def _stream(frames: list[bytes], *tail: Any) -> tuple[Any, ...]:
    return (Headers(), *(Send(f) for f in frames), *tail)


def script_for(fault: str, fmt: Any, attempt: int) -> tuple[Any, ...]:
    tag = f"A{attempt}"
    if fault == "headers_fin":
        return (Headers(), Fin())
    if fault == "reasoning_fin":
        frames = text_stream(fmt, [f"{tag} text"], reasoning=[f"{tag} think", f" {tag} more"])
        return _stream(cut_before(fmt, frames, TextDelta), Fin())
    if fault in ("text_fin", "overloaded_after"):
        frames = cut_through(fmt, text_stream(fmt, [f"{tag} Hello", f" {tag} world"]), TextDelta)
        if fault == "text_fin":
            return _stream(frames, Fin())
        return _stream(frames, Send(error_event(fmt, "overloaded", sequence_number=len(frames))), End())
    if fault == "rate_limit":
        return (Status(429, (JSON, ("retry-after-ms", "5")), b'{"error": {"type": "requests"}}'),)
    if fault == "auth":
        return (Status(401, (JSON,), b'{"error": {"type": "invalid_request_error"}}'),)
    if fault == "overloaded_before":
        return (Headers(), Send(error_event(fmt, "overloaded", sequence_number=0)), End())
    if fault == "tool_cut":
        frames = tool_call_stream(fmt, [("write_file", f'{{"path": "{tag}.txt"}}')])
        return _stream(cut_through(fmt, frames, ToolCall), Fin())
    if fault == "fin_before_response":
        return (Fin(),)
    assert fault == "success"
    return ok_script(fmt, tag)


@dataclass(frozen=True)
class Case:
    fmt: str
    faults: tuple[str, ...]  # attempt n plays faults[n - 1]; past the end, success
    attempts: int
    retry_possibly_delivered: bool
    confirm: bool | None  # None: no confirm callback
    runs_tools: bool  # the agent starts an effectful tool when its call arrives
    max_held_events: int


cases = st.builds(
    Case,
    fmt=st.sampled_from(SSE_FORMATS),
    faults=st.lists(st.sampled_from(FAULTS), min_size=1, max_size=5).map(tuple),
    attempts=st.integers(1, 4),
    retry_possibly_delivered=st.booleans(),
    confirm=st.sampled_from([None, True, False]),
    runs_tools=st.booleans(),
    max_held_events=st.sampled_from([10_000, 2]),
)


def _committed(spy: SpyRun, max_held: int) -> bool:
    """Whether the executor had to let this attempt's events through: it committed, or overflowed the hold."""
    return (
        any(isinstance(e, (TextDelta, ToolCall, Finish)) for e in spy.yielded) or len(spy.yielded) > max_held
    )


def _tags(events: list[RetryingEvent]) -> list[int]:
    tags = []
    for item in events:
        text = getattr(item, "text", None) or getattr(item, "arguments", None) or ""
        if isinstance(item, ToolInputDelta):
            text = item.arguments_delta
        tags += [int(n) for n in _TAG.findall(text)]
    return tags


async def _drive(
    case: Case,
) -> tuple[list[RetryingEvent], Spies, Any, StreamFailed | None, list[Diagnosis], int]:
    scripts = [script_for(fault, case.fmt, n) for n, fault in enumerate(case.faults, start=1)]
    scripts.append(ok_script(case.fmt, f"A{len(scripts) + 1}"))
    policy = RetryPolicy(
        case.attempts,
        30,
        initial_delay_s=0.001,
        max_delay_s=0.005,
        retry_possibly_delivered=case.retry_possibly_delivered,
    )
    asked: list[Diagnosis] = []

    def confirm(diagnosis: Diagnosis) -> bool:
        asked.append(diagnosis)
        return bool(case.confirm)

    received: list[RetryingEvent] = []
    failure: StreamFailed | None = None
    async with FaultServer(per_attempt(scripts)) as server:
        spies = Spies(server.base_url, case.fmt)
        try:
            async with retrying(
                policy,
                spies,
                confirm=None if case.confirm is None else confirm,
                max_held_events=case.max_held_events,
            ) as run:
                async for event in run:
                    received.append(event)
                    if case.runs_tools and isinstance(event, ToolCall):
                        run.tool_started(event.call_id, "effectful")
        except StreamFailed as caught:
            failure = caught
        requests = server.requests_seen
    return received, spies, run, failure, asked, requests


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases)
async def test_only_proven_safe_unexposed_attempts_are_retried_and_nothing_is_delivered_twice(
    case: Case,
) -> None:
    received, spies, run, failure, asked, requests = await _drive(case)
    links = run.attempts
    for link in links:
        event(f"{link.summary_key} -> {link.decision}")

    # (c) the attempt budget holds, and every attempt was one request and one run, linked in order.
    assert 1 <= len(spies) == requests == len(links) <= case.attempts
    assert [link.run_id for link in links] == [spy.run_id for spy in spies]
    assert (failure is None) == run.finished == (links[-1].decision == "completed")
    if failure is not None:
        assert links[-1].decision == "stopped" and failure.attempts == links

    delivered_ids = {id(e) for e in received}
    for index, link in enumerate(links[:-1]):
        spy = spies[index]
        diagnosis = spy.diagnosis
        assert diagnosis is not None
        reached = any(id(e) in delivered_ids for e in spy.yielded)
        if link.decision == "auto_retry":
            # (a) retried automatically: the machine proved it safe and nothing of it reached the consumer.
            assert diagnosis.verdict is Verdict.SAFE_AUTO_RETRY, link
            assert not reached, f"attempt {index + 1} was retried after its events reached the consumer"
            assert case.retry_possibly_delivered or not diagnosis.possibly_delivered
        else:
            assert link.decision == "confirmed_retry"
            assert case.confirm is True and diagnosis.verdict is not Verdict.NO_RETRY
            assert any(d.summary_key == diagnosis.summary_key for d in asked)
    assert all(d.verdict is Verdict.USER_CONFIRMED_RETRY for d in asked), (
        "only confirmable failures are asked"
    )

    # (b) exactly the delivering attempts' events, once each, in order; Continued or Restarted before a
    # confirmed retry.
    expected: list[RetryingEvent] = []
    for index, spy in enumerate(spies):
        last = index == len(spies) - 1
        if last or _committed(spy, case.max_held_events):
            expected += spy.yielded
        link = links[index]
        if not last and link.decision == "confirmed_retry":
            # True takes a continuation when the delivered answer can be carried (no uncarried call), else
            # a replay.
            if link.next == "continue":
                expected.append(Continued(index + 2, link.summary_key, link.continue_after_chars or 0))
            else:
                assert link.next == "replay"
                expected.append(Restarted(index + 2, link.summary_key))
    assert received == expected
    assert len(delivered_ids) == len(received), "no event object delivered twice"
    tags = _tags(received)
    assert tags == sorted(tags), "attempts never interleave"
    auto_retried = {index + 1 for index, link in enumerate(links[:-1]) if link.decision == "auto_retry"}
    assert not auto_retried & set(tags), "nothing of an automatically retried attempt reached the consumer"
    assert not any(isinstance(e, ReasoningDelta) and _TAG.search(e.text) is None for e in received)

    for record in run.records:
        validate_record(record)
    assert len(run.records) == len(spies)
