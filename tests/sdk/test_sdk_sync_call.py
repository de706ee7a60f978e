"""Sync ``wrap()`` of a zero-argument callable: the SDK call runs under the run, so an HTTP or connection
error raised by the sync SDK before any stream exists is diagnosed and recorded, with one ``except``."""

from __future__ import annotations

from typing import Any

import pytest

import streamfsm
from streamfsm import StreamFailed, SyncSdkRun, TextDelta
from streamfsm.testing import End, Status, text_stream, unused_port
from tests.support.runs import check_failure, expect, script
from tests.support.sdk import SDK_BODIES, client_for, create, fmts, sync_serving


def _call(fmt: str, client: Any) -> Any:
    return lambda: create(fmt, client)


@fmts
def test_a_sync_call_handed_over_finishes_like_its_stream(fmt: str) -> None:
    records: list[streamfsm.RunRecord] = []
    config = streamfsm.StreamConfig(sinks=(records.append,))
    with sync_serving(fmt, script(text_stream(fmt, ["Hel", "lo"]), End())) as (_, client):  # type: ignore[arg-type]
        with streamfsm.wrap(_call(fmt, client), config=config) as run:
            assert isinstance(run, SyncSdkRun)
            text = "".join(e.text for e in run if isinstance(e, TextDelta))
    assert text == "Hello" and run.finished and run.provider == fmt
    assert len(records) == 1 and records[0].failure_class == "completed"


@fmts
def test_a_sync_429_is_diagnosed_and_recorded(fmt: str) -> None:
    body = b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}'
    steps = (Status(429, (("content-type", "application/json"), ("retry-after", "2")), body),)
    records: list[streamfsm.RunRecord] = []
    config = streamfsm.StreamConfig(sinks=(records.append,))
    with sync_serving(fmt, steps) as (_, client), pytest.raises(StreamFailed) as info:
        with streamfsm.wrap(_call(fmt, client), config=config) as run:
            for _ in run:
                pass
    failure = check_failure(info.value)
    expect(failure, "provider_error", "safe_auto_retry", "http_error", "before_connection")
    assert failure.diagnosis.cause == "rate_limit" and failure.diagnosis.retry_after_s == 2.0
    assert type(failure.__cause__).__name__ == "RateLimitError"  # the SDK's own error, chained
    assert [r.summary_key for r in records] == ["provider_error.rate_limit"]


@fmts
def test_a_sync_connection_error_is_diagnosed(fmt: str) -> None:
    client = client_for(fmt, f"http://127.0.0.1:{unused_port()}", sync=True)
    try:
        with pytest.raises(StreamFailed) as info, streamfsm.wrap(_call(fmt, client)) as run:
            for _ in run:
                pass
    finally:
        client.close()
    failure = check_failure(info.value)
    expect(failure, "before_connection", "safe_auto_retry", "connect_failed", "before_connection")
    assert failure.diagnosis.cause == "refused"


def test_a_callable_that_raises_its_own_error_lets_it_through() -> None:
    def broken() -> Any:
        raise KeyError("the caller's bug")

    run = streamfsm.wrap(broken)
    with pytest.raises(KeyError), run:
        pass
    assert run.record is not None and run.record.failure_class != "completed"


def test_an_async_function_is_refused_with_the_form_to_use() -> None:
    async def opener() -> Any:
        return None

    with pytest.raises(TypeError, match="un-awaited"):
        streamfsm.wrap(opener)
    assert SDK_BODIES  # the bodies the calls above send
