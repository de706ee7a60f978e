"""The SDK's hidden retries under ``wrap()`` + ``retrying()``: the run reads the SDK's retry count (the
``x-stainless-retry-count`` header of the request its response carries, as the tap does), records it, the
executor lists those requests in the attempt chain (``sdk_retry``) and counts them against the policy, and
warns once that both layers retry. Real sockets, the real SDKs with their default ``max_retries`` (2), a
persistent 429 with ``retry-after: 0``."""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import anyio
import openai
import pytest

import streamfsm
from streamfsm.runtime.retry import _retry
from streamfsm.testing import FaultServer, Status
from tests.support.runs import check_failure
from tests.support.sdk import create, sync_serving

RATE_LIMITED = Status(
    429,
    (("content-type", "application/json"), ("retry-after", "0")),
    b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}',
)
SDK_DEFAULT_RETRIES = 2
BOUND_S = 30.0


def _default_client(fmt: str, base_url: str, *, sync: bool) -> Any:
    """A client as a user makes one: the SDK's default max_retries."""
    if fmt == "anthropic":
        cls: Any = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
        return cls(base_url=base_url, api_key="sk-ant-test-0000", timeout=10.0)
    cls = openai.OpenAI if sync else openai.AsyncOpenAI
    return cls(base_url=base_url + "/v1", api_key="sk-test-0000", timeout=10.0)


@pytest.fixture(autouse=True)
def _warn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_retry, "_warned_both_layers", False)


def _check(failure: streamfsm.StreamFailed, requests: int, caplog: pytest.LogCaptureFixture) -> None:
    check_failure(failure)
    assert requests == 3  # attempts=3 means three requests, not 3 x (1 + the SDK's 2 retries) = 9
    assert [a.decision for a in failure.attempts] == ["sdk_retry", "sdk_retry", "stopped"]
    assert "attempt budget is used (3 of 3)" in failure.stop_reason
    assert failure.record["sdk_retries"] == SDK_DEFAULT_RETRIES
    warnings = [r for r in caplog.records if "max_retries=0" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
async def test_the_sdks_hidden_retries_are_seen_recorded_and_counted(
    fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="streamfsm")
    async with FaultServer((RATE_LIMITED,)) as server:
        client = _default_client(fmt, server.base_url, sync=False)
        try:

            def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
                return streamfsm.wrap(create(fmt, client), ids=ids)

            with anyio.fail_after(BOUND_S), pytest.raises(streamfsm.StreamFailed) as info:
                async with streamfsm.retrying(streamfsm.RetryPolicy(3, 30), open_attempt) as run:
                    async for _ in run:
                        pass
        finally:
            await client.close()
        _check(info.value, len(server.requests), caplog)
    assert [r.get("sdk_retries") for r in run.records] == [SDK_DEFAULT_RETRIES]


def test_the_sync_form_sees_them_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="streamfsm")
    with sync_serving("openai-chat", (RATE_LIMITED,)) as (server, _):
        client = _default_client("openai-chat", server.base_url, sync=True)
        try:

            def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
                return streamfsm.wrap(lambda: create("openai-chat", client), ids=ids)

            with pytest.raises(streamfsm.StreamFailed) as info:
                with streamfsm.retrying(streamfsm.RetryPolicy(3, 30), open_attempt) as run:
                    for _ in run:
                        pass
        finally:
            client.close()
        _check(info.value, len(server.requests), caplog)


@pytest.mark.anyio
async def test_with_max_retries_0_the_executor_alone_retries_and_nothing_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="streamfsm")
    async with FaultServer((RATE_LIMITED,)) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-test-0000", max_retries=0)
        try:

            def open_attempt(ids: streamfsm.Ids) -> streamfsm.Run:
                return streamfsm.wrap(create("openai-chat", client), ids=ids)

            with anyio.fail_after(BOUND_S), pytest.raises(streamfsm.StreamFailed) as info:
                async with streamfsm.retrying(
                    streamfsm.RetryPolicy(3, 30), open_attempt, sleep=lambda s: anyio.sleep(0)
                ) as run:
                    async for _ in run:
                        pass
        finally:
            await client.close()
        assert len(server.requests) == 3
    assert [a.decision for a in info.value.attempts] == ["auto_retry", "auto_retry", "stopped"]
    assert "sdk_retries" not in info.value.record.to_dict()
    assert not [r for r in caplog.records if "max_retries=0" in r.getMessage()]
    assert len(run.records) == 3
