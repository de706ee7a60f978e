"""Sync runs as complete as async ones: ``with run.tool(...)`` on a sync run, and the sync form of
``retrying()`` (the async executor's own decisions, budgets, records and holding back) over sync SDK runs.
Real sockets, the real sync SDKs."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import streamfsm
from streamfsm import Restarted, StreamFailed, TextDelta, ToolCall
from streamfsm.testing import (
    End,
    Fin,
    Headers,
    RefusesPrefill,
    Send,
    Status,
    text_stream,
    tool_call_stream,
)
from tests.support.runs import check_failure, script
from tests.support.sdk import SDK_BODIES, create, fmts, sync_serving

RATE_LIMITED = Status(
    429,
    (("content-type", "application/json"), ("retry-after", "0")),
    b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}',
)


def _router(scripts: list[tuple[Any, ...]]) -> Any:
    return lambda request: scripts[min(request.seq, len(scripts) - 1)]


@fmts
def test_with_run_tool_brackets_a_tool_on_a_sync_run(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("write_file", '{"path": "b.txt"}')])  # type: ignore[arg-type]
    with sync_serving(fmt, script(frames, End())) as (_, client):
        with streamfsm.wrap(lambda: create(fmt, client)) as run:
            for event in run:
                if isinstance(event, ToolCall):
                    with run.tool(event.call_id, effect="effectful"):
                        pass
    assert run.record is not None
    assert run.record["tools"] == {"started": 1, "effectful": 1, "finished": 1, "failed": 0}


def test_a_tool_that_raises_inside_with_run_tool_is_recorded_failed() -> None:
    frames = tool_call_stream("openai-chat", [("write_file", "{}")])
    with sync_serving("openai-chat", script(frames, End())) as (_, client):
        with (
            pytest.raises(ValueError, match="the tool broke"),
            streamfsm.wrap(lambda: create("openai-chat", client)) as run,
        ):
            for event in run:
                if isinstance(event, ToolCall):
                    with run.tool(event.call_id):
                        raise ValueError("the tool broke")
    assert run.record is not None and run.record["tools"]["failed"] == 1


@fmts
def test_sync_retrying_retries_a_429_and_links_the_attempts(fmt: str) -> None:
    ok = script(text_stream(fmt, ["Hel", "lo"]), End())  # type: ignore[arg-type]
    with sync_serving(fmt, _router([(RATE_LIMITED,), ok])) as (_, client):  # type: ignore[arg-type]

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.wrap(lambda: create(fmt, client), ids=ids)

        with streamfsm.retrying(streamfsm.RetryPolicy(3, 20), open_attempt) as run:
            text = "".join(e.text for e in run.collect() if isinstance(e, TextDelta))
    assert text == "Hello" and run.finished and run.result().text == "Hello"
    assert [a.decision for a in run.attempts] == ["auto_retry", "completed"]
    assert len(run.records) == 2 and len({r["ids"]["trace_id"] for r in run.records}) == 1


def test_sync_retrying_asks_a_sync_confirm_and_replays() -> None:
    frames = text_stream("openai-chat", ["Hello", " world"])
    cut = (Headers(), *(Send(f) for f in frames[:2]), Fin())  # text shown, then the connection closes
    asked: list[streamfsm.Diagnosis] = []

    def confirm(diagnosis: streamfsm.Diagnosis) -> bool:
        asked.append(diagnosis)
        return True

    with sync_serving("openai-chat", _router([cut, script(frames, End())])) as (_, client):

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.wrap(lambda: create("openai-chat", client), ids=ids)

        with streamfsm.retrying(streamfsm.RetryPolicy(3, 20), open_attempt, confirm=confirm) as run:
            events = list(run)
    assert [d.summary_key for d in asked] == ["mid_generation.closed_mid_body"]
    assert sum(isinstance(e, Restarted) for e in events) == 1
    after = events[next(i for i, e in enumerate(events) if isinstance(e, Restarted)) :]
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == "Hello world"


def test_sync_retrying_stops_with_the_last_failure_when_the_budget_is_spent() -> None:
    with sync_serving("openai-chat", (RATE_LIMITED,)) as (server, client):

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.wrap(lambda: create("openai-chat", client), ids=ids)

        with pytest.raises(StreamFailed) as info:
            with streamfsm.retrying(streamfsm.RetryPolicy(2, 20), open_attempt) as run:
                for _ in run:
                    pass
    check_failure(info.value)
    assert len(server.requests) == 2 and len(info.value.attempts) == 2


def test_abort_from_another_thread_ends_a_sync_delay_at_once() -> None:
    slow = Status(429, (("content-type", "application/json"), ("retry-after", "30")), b"{}")
    with sync_serving("openai-chat", (slow,)) as (_, client):

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.wrap(lambda: create("openai-chat", client), ids=ids)

        policy = streamfsm.RetryPolicy(3, 60, max_provider_delay_s=60)
        with streamfsm.retrying(policy, open_attempt) as run:
            threading.Timer(0.3, run.abort).start()
            started = time.monotonic()
            with pytest.raises(StreamFailed) as info:
                for _ in run:
                    pass
    assert time.monotonic() - started < 5
    assert "stopped locally" in info.value.stop_reason


def test_sync_retrying_never_sends_a_prefill_to_a_model_that_refuses_one() -> None:
    # The sync form does not continue (its runs are SDK calls the executor cannot rewrite): even with a
    # prefill asked for, a confirmed recovery is a replay, so a model that refuses prefill is never sent one.
    fmt = "anthropic"
    frames = text_stream(fmt, ["Hello", " world"])
    cut = (Headers(), *(Send(f) for f in frames[:4]), Fin())  # "Hello" shown, then the connection closes
    provider = RefusesPrefill(_router([cut, script(frames, End())]))
    with sync_serving(fmt, provider) as (_, client):  # type: ignore[arg-type]

        def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.wrap(lambda: create(fmt, client), ids=ids)

        prefill = streamfsm.ContinueStyle.PREFILL
        confirm = lambda diagnosis, offer: True  # noqa: E731
        with streamfsm.retrying(
            streamfsm.RetryPolicy(3, 20), open_attempt, confirm=confirm, continue_with=prefill
        ) as run:
            events = list(run)
    assert provider.refused == 0 and [a.next for a in run.attempts[:-1]] == ["replay"]
    after = events[next(i for i, e in enumerate(events) if isinstance(e, Restarted)) :]
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == "Hello world"

    # A caller's own prefill to such a model: refused once (the 400 Anthropic answers), never retried.
    own = {
        **SDK_BODIES[fmt],
        "messages": [*SDK_BODIES[fmt]["messages"], {"role": "assistant", "content": "Hi"}],
    }
    provider = RefusesPrefill(script(frames, End()))
    with sync_serving(fmt, provider) as (server, client):  # type: ignore[arg-type]

        def open_own(ids: streamfsm.Ids) -> streamfsm.Run:
            return streamfsm.wrap(lambda: client.messages.create(**own, stream=True), ids=ids)

        with pytest.raises(StreamFailed) as info:
            with streamfsm.retrying(streamfsm.RetryPolicy(3, 20), open_own) as run:
                for _ in run:
                    pass
    failure = check_failure(info.value)
    assert provider.refused == 1 and len(server.requests) == 1
    assert failure.diagnosis.summary_key == "provider_error.invalid_request"
    assert failure.diagnosis.verdict is streamfsm.Verdict.NO_RETRY
