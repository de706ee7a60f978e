"""Exceptions the frameworks make themselves, chained to nothing the tap raised: ``streamfsm.failure_of``
still finds the run that failed (the last failed run of the same place, within moments:
``streamfsm.tap._notes``), and the verdict helpers use it.

* pydantic-ai: ``UnexpectedModelBehavior`` for a stream that ended quietly with nothing in it;
  ``ModelServerError`` (its ``_HTTPModelServerError``) for a Responses ``error`` event it reads itself.
* the OpenAI Agents SDK: ``ModelBehaviorError`` for a Responses stream without ``response.completed`` or with
  ``response.failed``; ``MaxTurnsExceeded`` after a turn whose tool call the stream never finished.

The Agents runner asks ``get_retry_advice`` about none of these (the Responses model marks its own
``ModelBehaviorError`` to drain, and the others are raised outside the model call), so ``with_verdicts`` is
shown answering for the real exception directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import openai
import pytest

import streamfsm
from streamfsm.tap import _notes
from streamfsm.testing import (
    End,
    FaultServer,
    Headers,
    Send,
    error_event,
    find,
    text_stream,
    tool_call_stream,
)
from tests.support.frameworks import SDK_TIMEOUT_S, chain_of, preload

pytestmark = pytest.mark.anyio
preload()
BOUND_S = 20.0


def _script(frames: list[bytes]) -> tuple[Any, ...]:
    return (Headers(), *(Send(f) for f in frames), End())


EMPTY = (Headers(), End())  # the headers, then a clean end: no event at all
SERVER_ERROR = error_event("openai-responses", "server_error", shape="flat", sequence_number=0)
SERVER_ERROR_EVENT = _script([SERVER_ERROR])  # the first event: a Responses error, which pydantic-ai reads
TOOL_CALL = tool_call_stream("openai-chat", [("get_weather", '{"city": "Paris"}')])
TOOL_CALL_UNFINISHED = _script(TOOL_CALL[:4])  # the call's arguments, no finish_reason, no [DONE]


def _client(url: str, records: list[Any], *, strict_eof: bool | None = False) -> Any:
    # strict_eof=False: the framework itself raises at a quiet end (by default the tap's read fails first).
    config = streamfsm.StreamConfig(sinks=(records.append,))
    http = streamfsm.async_http_client(http="httpx2", config=config, strict_eof=strict_eof)
    return openai.AsyncOpenAI(
        base_url=url + "/v1", api_key="sk-test-0000", max_retries=0, timeout=SDK_TIMEOUT_S, http_client=http
    )


def _pydantic_model(api: str, client: Any) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    cls: Any = OpenAIResponsesModel if api == "responses" else OpenAIChatModel
    return cls("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))


async def _pydantic_ai(api: str, url: str, records: list[Any]) -> Any:
    from pydantic_ai import Agent

    client = _client(url, records)
    try:
        async with Agent(_pydantic_model(api, client)).run_stream("hi") as result:
            async for _ in result.stream_text(delta=True, debounce_by=None):
                pass
    finally:
        await client.close()


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"sunny in {city}"


def _agents_model(api: str, client: Any) -> Any:
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel

    cls: Any = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel
    return cls(model="gpt-4o-mini", openai_client=client)


async def _agents(api: str, url: str, records: list[Any], *, max_turns: int = 10) -> Any:
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    client = _client(url, records)
    agent = Agent(name="weather", model=_agents_model(api, client), tools=[function_tool(get_weather)])
    try:
        result = Runner.run_streamed(agent, "hi", max_turns=max_turns)  # streams in a task of its own
        async for _ in result.stream_events():
            pass
    finally:
        await client.close()


@dataclass(frozen=True)
class Case:
    raises: str  # the framework's exception: module.qualname, or a base class it is an instance of
    run: Callable[[str, list[Any]], Any]
    script: tuple[Any, ...]
    summary_key: str
    verdict: str


def _raised_class(name: str) -> type[BaseException]:
    module, _, qualname = name.rpartition(".")
    found: type[BaseException] = getattr(__import__(module, fromlist=[qualname]), qualname)
    return found


CASES = {
    "pydantic-ai-UnexpectedModelBehavior": Case(
        "pydantic_ai.exceptions.UnexpectedModelBehavior",
        lambda url, records: _pydantic_ai("chat", url, records),
        EMPTY,
        "early_stream.eof_without_terminal",
        "safe_auto_retry",
    ),
    "pydantic-ai-ModelServerError": Case(
        "pydantic_ai.exceptions.ModelServerError",
        lambda url, records: _pydantic_ai("responses", url, records),
        SERVER_ERROR_EVENT,
        "provider_error.server_error",
        "safe_auto_retry",
    ),
    "agents-ModelBehaviorError-no-final-response": Case(
        "agents.exceptions.ModelBehaviorError",
        lambda url, records: _agents("responses", url, records),
        find("openai-responses/text-then-clean-close").script,
        "mid_generation.eof_without_terminal",
        "user_confirmed_retry",
    ),
    "agents-ModelBehaviorError-response-failed": Case(
        "agents.exceptions.ModelBehaviorError",
        lambda url, records: _agents("responses", url, records),
        find("openai-responses/response-failed-before-output").script,
        "provider_error.server_error",
        "safe_auto_retry",
    ),
    "agents-MaxTurnsExceeded": Case(
        "agents.exceptions.MaxTurnsExceeded",
        lambda url, records: _agents("chat", url, records, max_turns=1),
        TOOL_CALL_UNFINISHED,
        "tool_input_interrupted.eof_without_terminal",
        "safe_auto_retry",
    ),
}


async def _raised(case: Case, *, block: bool) -> tuple[Exception, list[Any]]:
    """The framework's own exception from one real run through the tap, and the tap's records."""
    records: list[Any] = []
    async with FaultServer(case.script) as server:
        with anyio.fail_after(BOUND_S), pytest.raises(_raised_class(case.raises)) as raised:
            if block:
                with streamfsm.context(session_id="sess-own-exceptions"):
                    await case.run(server.base_url, records)
            else:
                await case.run(server.base_url, records)
    exc = raised.value
    assert isinstance(exc, Exception)
    assert not [e for e in chain_of(exc) if _notes._carried(e)], "chained to nothing the tap raised"
    return exc, records


@pytest.mark.parametrize("block", [False, True], ids=["as-is", "in-a-context-block"])
@pytest.mark.parametrize("name", list(CASES))
async def test_failure_of_finds_the_run_behind_the_frameworks_own_exception(name: str, block: bool) -> None:
    case = CASES[name]
    exc, records = await _raised(case, block=block)
    failure = streamfsm.failure_of(exc)
    assert failure is not None, f"{name}: no failure found for {type(exc).__name__}"
    diagnosis = failure.diagnosis
    assert (diagnosis.summary_key, diagnosis.verdict.value) == (case.summary_key, case.verdict)
    assert failure.record["ids"]["run_id"] == records[-1]["ids"]["run_id"], "the run that failed last"
    assert streamfsm.failure_of(exc) is failure, "asking again finds the same"


@pytest.mark.parametrize(
    ("name", "falls_back_by_default"),
    [("pydantic-ai-UnexpectedModelBehavior", False), ("pydantic-ai-ModelServerError", True)],
)
@pytest.mark.parametrize("verdicts", [False, True], ids=["default", "fall_back_when_safe"])
async def test_fall_back_when_safe_reads_the_verdict_behind_pydantic_ais_own_exceptions(
    name: str, falls_back_by_default: bool, verdicts: bool
) -> None:
    """Nothing had escaped either stream, so another model may answer: pydantic-ai's default falls back only
    on its ``ModelAPIError`` (not on ``UnexpectedModelBehavior``); ``fall_back_when_safe`` on the verdict."""
    from pydantic_ai import Agent
    from pydantic_ai.models.fallback import FallbackModel

    from streamfsm.frameworks.pydantic_ai import fall_back_when_safe

    case = CASES[name]
    api = "responses" if name.endswith("ModelServerError") else "chat"
    fmt = "openai-responses" if api == "responses" else "openai-chat"
    answer = _script(text_stream(fmt, ["From ", "backup."]))
    records: list[Any] = []
    async with FaultServer(case.script) as bad, FaultServer(answer) as good:
        primary, backup = _client(bad.base_url, records), _client(good.base_url, records)
        options: dict[str, Any] = {"fallback_on": fall_back_when_safe} if verdicts else {}
        model = FallbackModel(_pydantic_model(api, primary), _pydantic_model(api, backup), **options)
        text, error = "", None
        try:
            with anyio.fail_after(BOUND_S):
                async with Agent(model).run_stream("hi") as result:
                    async for piece in result.stream_text(delta=True, debounce_by=None):
                        text += piece
        except Exception as exc:
            error = exc
        finally:
            await primary.close()
            await backup.close()
        used_backup = good.requests_seen == 1
    expected = True if verdicts else falls_back_by_default
    assert (used_backup, text == "From backup.", error is None) == (expected, expected, expected), error
    assert records[0]["outcome"]["summary_key"] == case.summary_key


@pytest.mark.parametrize("name", ["agents-ModelBehaviorError-no-final-response", "agents-MaxTurnsExceeded"])
async def test_with_verdicts_answers_for_the_agents_sdks_own_exceptions(name: str) -> None:
    from agents.retry import ModelRetryAdviceRequest

    from streamfsm.frameworks.openai_agents import with_verdicts

    case = CASES[name]
    exc, _ = await _raised(case, block=False)
    request = ModelRetryAdviceRequest(error=exc, attempt=1, stream=True)
    api = "chat" if name.endswith("MaxTurnsExceeded") else "responses"
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test-0000")
    assert _agents_model(api, client).get_retry_advice(request) is None, "the SDK's own: no advice"
    advice = with_verdicts(_agents_model(api, client)).get_retry_advice(request)
    await client.close()
    assert advice is not None
    assert advice.reason is not None and advice.reason.startswith(f"{case.summary_key}:")
    assert advice.suggested is (case.verdict == "safe_auto_retry")
    failure = streamfsm.failure_of(exc)
    assert failure is not None and failure.diagnosis.summary_key == case.summary_key


@pytest.mark.parametrize("strict_eof", [None, False], ids=["default", "strict_eof=False"])
async def test_by_default_a_quiet_end_fails_pydantic_ais_run_stream(strict_eof: bool | None) -> None:
    """Text, then a clean end without the terminal event: pydantic-ai alone hands back the truncated text as a
    success; by default the tap fails the read there, so ``run_stream`` raises, with the failure."""
    from pydantic_ai import Agent

    records: list[Any] = []
    text, error = "", None
    async with FaultServer(find("openai-chat/text-then-clean-close").script) as server:
        client = _client(server.base_url, records, strict_eof=strict_eof)
        try:
            with anyio.fail_after(BOUND_S):
                async with Agent(_pydantic_model("chat", client)).run_stream("hi") as result:
                    async for piece in result.stream_text(delta=True, debounce_by=None):
                        text += piece
        except Exception as exc:
            error = exc
        finally:
            await client.close()
    assert text  # what came before the end reached the caller either way
    assert records[0]["outcome"]["summary_key"] == "mid_generation.eof_without_terminal"
    if strict_eof is False:
        assert error is None, "the truncated answer, as a success"
    else:
        failure = streamfsm.failure_of(error) if error is not None else None
        assert failure is not None and failure.record["ids"]["run_id"] == records[0]["ids"]["run_id"]
