"""What particular frameworks do that the tap must take as it comes, and their seams for retry decisions.

* LangChain's own chunk watchdog (``stream_chunk_timeout``) cancels the SDK's read: a local abort.
* The openai SDK reads past ``[DONE]`` for 0.1 s (to reuse an HTTP/1.1 connection), then closes: finished.
* The openai SDK retries a 429 without reading its body: the tap reads it (briefly, bounded) as the SDK
  closes it, so the first attempt's record says ``insufficient_quota`` too.
* The OpenAI Agents SDK asks its model for retry advice (``Model.get_retry_advice``); fed from
  ``streamfsm.failure_of(request.error)``, the machine's verdict decides, within the runner's own veto (no
  retry once a stream event other than response.created / in_progress reached the consumer).
* pydantic-ai's ``FallbackModel`` falls back on an error raised before a stream's first event only.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import openai
import pytest

import streamfsm
from streamfsm.testing import End, FaultServer, Headers, Keepalive, Send, Stall, Status, find, keepalive
from streamfsm.testing import text_stream as _text_stream
from tests.support.frameworks import SDK_TIMEOUT_S, preload, sequence

pytestmark = pytest.mark.anyio
preload()

FMT = "openai-chat"
BOUND_S = 20.0


def text_stream(texts: list[str]) -> list[bytes]:
    return _text_stream(FMT, texts)


def tap_client(records: list[Any], **config: Any) -> Any:
    return streamfsm.async_http_client(
        http="httpx2", config=streamfsm.StreamConfig(sinks=(records.append,), **config)
    )


def keys(records: list[Any]) -> list[str]:
    return [record.to_dict()["outcome"]["summary_key"] for record in records]


# -- LangChain's chunk watchdog, and the openai SDK's read past [DONE] ---------------------------------------


async def _langchain(script: tuple[Any, ...], client: Any) -> tuple[str, str | None]:
    from langchain_openai import ChatOpenAI

    text, error = "", None
    async with FaultServer(script) as server:
        llm = ChatOpenAI(
            model="gpt-4o-mini",
            base_url=server.base_url + "/v1",
            api_key="sk-test-0000",
            max_retries=0,
            timeout=SDK_TIMEOUT_S,
            http_async_client=client,
            stream_chunk_timeout=0.3,
        )
        try:
            with anyio.fail_after(BOUND_S):
                async for chunk in llm.astream("hi"):
                    text += chunk.text if isinstance(chunk.text, str) else chunk.text()
        except Exception as exc:
            error = f"{type(exc).__module__}.{type(exc).__qualname__}"
        await client.aclose()
    return text, error


async def test_langchains_own_chunk_watchdog_cancels_the_read_a_local_abort() -> None:
    frames = text_stream(["Hel", "lo"])
    script = (Headers(), *(Send(f) for f in frames[:2]), Keepalive(0.05, 20, keepalive(FMT)), End())
    records: list[Any] = []
    plain = await _langchain(script, httpx2.AsyncClient())
    tapped = await _langchain(script, tap_client(records))
    assert plain == tapped
    assert tapped[1] is not None and tapped[1].endswith("StreamChunkTimeoutError")
    assert keys(records) == ["local_abort.cancelled"]
    record = records[0].to_dict()
    assert record["outcome"]["state"] == "failed/visible"
    assert record["timings"]["last_progress_age_s"] >= 0.25, "the record still shows how stale the stream was"


async def test_the_sdks_read_past_done_then_close_is_a_finished_stream() -> None:
    """After ``[DONE]`` the openai SDK reads the raw stream again for up to 0.1 s (a second iterator over the
    transport's stream, while the first is suspended), then closes; here the server holds the connection."""
    script = (Headers(), *(Send(f) for f in text_stream(["Hel", "lo"])), Stall())
    records: list[Any] = []
    plain = await _langchain(script, httpx2.AsyncClient())
    tapped = await _langchain(script, tap_client(records))
    assert plain == tapped == ("Hello", None)
    assert keys(records) == ["completed.finished"]


async def test_a_quota_429_the_sdk_retries_unread_is_not_called_safe() -> None:
    error = {
        "message": "You exceeded your current quota",
        "type": "insufficient_quota",
        "code": "insufficient_quota",
    }
    body = json.dumps({"error": {**error, "param": None}}).encode()
    records: list[Any] = []
    async with FaultServer((Status(429, (("content-type", "application/json"),), body),)) as server:
        client = openai.AsyncOpenAI(
            base_url=server.base_url + "/v1",
            api_key="sk-test-0000",
            max_retries=1,
            timeout=SDK_TIMEOUT_S,
            http_client=tap_client(records),
        )
        with anyio.fail_after(BOUND_S), pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        await client.close()
    assert keys(records) == ["provider_error.quota_exhausted"] * 2


# -- the OpenAI Agents SDK's retry advice --------------------------------------------------------------------


async def _agents_with_retry(first: str) -> tuple[Any, int, list[Any], list[str]]:
    from agents import (
        Agent,
        ModelRetrySettings,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        retry_policies,
        set_tracing_disabled,
    )

    from streamfsm.frameworks.openai_agents import with_verdicts

    set_tracing_disabled(True)
    asked: list[str] = []

    def advised(client: Any) -> Any:
        model = with_verdicts(OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))
        machine = model.get_retry_advice

        def spy(request: Any) -> Any:
            advice = machine(request)
            asked.append(f"{advice.suggested}/{advice.replay_safety}" if advice is not None else "none")
            return advice

        model.get_retry_advice = spy
        return model

    answer = (Headers(), *(Send(f) for f in text_stream(["It is ", "sunny."])), End())
    records: list[Any] = []
    async with FaultServer(sequence(find(f"{FMT}/{first}").script, answer)) as server:
        client = openai.AsyncOpenAI(
            base_url=server.base_url + "/v1",
            api_key="sk-test-0000",
            max_retries=0,
            timeout=SDK_TIMEOUT_S,
            http_client=tap_client(records),
        )
        retry = ModelRetrySettings(
            max_retries=1, backoff={"initial_delay": 0.01}, policy=retry_policies.provider_suggested()
        )
        agent = Agent(
            name="weather",
            model=advised(client),
            model_settings=ModelSettings(retry=retry),
        )
        outcome: Any
        try:
            with anyio.fail_after(BOUND_S):
                result = Runner.run_streamed(agent, "hi")
                async for _ in result.stream_events():
                    pass
            outcome = result.final_output
        except openai.APIError as exc:
            outcome = type(exc)
        await client.close()
        return outcome, server.requests_seen, records, asked


@pytest.mark.parametrize(
    ("first", "retried"),
    [
        ("headers-then-fin", True),  # early_stream: safe, the runner retries
        ("http-503-overloaded", True),  # provider_error: safe after its delay
        ("text-then-fin", False),  # visible output: the machine says no (and so does the runner's own veto)
        ("tool-args-cut", False),  # safe for the machine, but a tool-call event already reached the consumer
    ],
)
async def test_the_agents_sdk_retries_on_the_machines_advice(first: str, retried: bool) -> None:
    outcome, requests, records, asked = await _agents_with_retry(first)
    expected = find(f"{FMT}/{first}")
    assert expected.expected_class is not None and expected.expected_verdict is not None
    safe = expected.expected_verdict is streamfsm.Verdict.SAFE_AUTO_RETRY
    shown = first == "text-then-fin"  # visible output: replay-unsafe; else nothing escaped yet
    assert asked == ["True/safe" if safe else ("False/unsafe" if shown else "False/None")], asked
    assert keys(records)[0] == f"{expected.expected_class.value}.{expected.expected_cause}"
    if retried:
        assert (outcome, requests) == ("It is sunny.", 2)
        assert keys(records)[1:] == ["completed.finished"]
    else:
        assert outcome is openai.APIConnectionError and requests == 1


# -- pydantic-ai's FallbackModel -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "falls_back", "falls_back_when_safe"),
    [
        ("headers-then-fin", True, True),  # no event yet: falls back
        ("first-token-stall", True, True),  # the tap's first-token watchdog fails the read before any event
        ("http-503-overloaded", True, True),  # another model may serve it
        ("http-401", True, True),  # nothing escaped: another provider, with its own key, may serve it
        ("reasoning-then-fin", False, False),  # pydantic-ai already had its first (thinking) event
        ("tool-args-cut", False, False),  # a tool-call part had started
        ("text-then-fin", False, False),  # visible output: rightly not replayed
    ],
)
@pytest.mark.parametrize("verdicts", [False, True], ids=["default", "fall_back_when_safe"])
async def test_pydantic_ais_fallback_model(
    first: str, falls_back: bool, falls_back_when_safe: bool, verdicts: bool
) -> None:
    """By default ``FallbackModel`` falls back on any ``ModelAPIError`` before a stream's first event; with
    ``fallback_on=fall_back_when_safe`` only where the machine says another attempt is worth it."""
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelAPIError
    from pydantic_ai.models.fallback import FallbackModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from streamfsm.frameworks.pydantic_ai import fall_back_when_safe

    expect_fallback = falls_back_when_safe if verdicts else falls_back
    answer = (Headers(), *(Send(f) for f in text_stream(["From ", "backup."])), End())
    records: list[Any] = []
    async with FaultServer(find(f"{FMT}/{first}").script) as bad, FaultServer(answer) as good:
        http = tap_client(records, first_token_timeout=0.3)

        def model(url: str) -> OpenAIChatModel:
            client = openai.AsyncOpenAI(
                base_url=url + "/v1",
                api_key="sk-test-0000",
                max_retries=0,
                timeout=SDK_TIMEOUT_S,
                http_client=http,
            )
            return OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))

        options: dict[str, Any] = {"fallback_on": fall_back_when_safe} if verdicts else {}
        agent = Agent(FallbackModel(model(bad.base_url), model(good.base_url), **options))
        text, error = "", None
        try:
            with anyio.fail_after(BOUND_S):
                async with agent.run_stream("hi") as result:
                    async for piece in result.stream_text(delta=True, debounce_by=None):
                        text += piece
        except ModelAPIError as exc:
            error = exc
        await http.aclose()
        used_backup = good.requests_seen == 1
    assert used_backup is expect_fallback
    assert (text == "From backup.") is expect_fallback and (error is None) is expect_fallback
    failure = streamfsm.failure_of(error) if error is not None else None
    expected = find(f"{FMT}/{first}")
    assert expected.expected_class is not None
    assert keys(records)[0] == f"{expected.expected_class.value}.{expected.expected_cause}"
    if failure is not None:
        assert failure.diagnosis.summary_key == keys(records)[0], "failure_of reaches through ModelAPIError"
