"""Non-streaming calls through the tap: a run whose body is one JSON answer, read by the format's own
adapter. The real ``openai`` and ``anthropic`` SDKs' non-streaming calls (and Gemini's ``generateContent``
over a tapped httpx client) against loopback faults."""

from __future__ import annotations

import gzip
from typing import Any

import anthropic
import anyio
import openai
import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.tap import default_library
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Fin,
    Headers,
    Rst,
    Send,
    Stall,
    Status,
    whole_answer,
)
from tests.support.runs import validate_record

HTTP = default_library()
BOUND_S = 20.0
JSON = (("content-type", "application/json"),)
FMTS = ("openai-chat", "openai-responses", "anthropic")
fmts = pytest.mark.parametrize("fmt", FMTS)
TOOL = ("read_file", '{"path": "a.txt"}')
pytestmark = pytest.mark.anyio


async def call(
    fmt: str, steps: tuple[Any, ...], config: StreamConfig | None = None, **options: Any
) -> tuple[Any, BaseException | None, list[Any]]:
    """One non-streaming SDK call through the tap, with the call's ``options``: (what it returned, what it
    raised, the records)."""
    records: list[Any] = []
    config = (config or StreamConfig()).replace(sinks=(records.append,))
    async with FaultServer(steps) as server:
        http = streamfsm.async_http_client(http=HTTP, config=config)
        client: Any
        if fmt == "anthropic":
            client = anthropic.AsyncAnthropic(
                base_url=server.base_url, api_key="sk-ant-test-0", max_retries=0, http_client=http
            )
            make = client.messages.create(
                model="claude-test-model", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            )
        else:
            client = openai.AsyncOpenAI(
                base_url=server.base_url + "/v1", api_key="sk-test-0", max_retries=0, http_client=http
            )
            if fmt == "openai-chat":
                make = client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
                )
            else:
                make = client.responses.create(model="gpt-5-mini", input="hi", **options)
        answer: Any = None
        error: BaseException | None = None
        try:
            with anyio.fail_after(BOUND_S):
                answer = await make
        except Exception as exc:
            error = exc
        finally:
            await client.close()
    for record in records:
        validate_record(record)
        assert record["request"]["streaming"] is False
    return answer, error, records


def key(record: Any) -> str:
    return str(record["outcome"]["summary_key"])


@fmts
async def test_a_whole_answer_is_handed_over_unchanged_and_recorded_as_completed(fmt: str) -> None:
    answer, error, (record,) = await call(
        fmt, (Status(200, headers=JSON, body=whole_answer(fmt, tools=[TOOL])),)
    )
    assert error is None and answer is not None
    assert key(record) == "completed.finished"
    assert record["finish_reason"]["unified"] == "tool_calls"
    events = record["stream_events"]
    assert (events["text_delta"], events["tool_call"], events["finish"]) == (1, 1, 1)
    assert (record["tokens"]["input"], record["tokens"]["output"]) == (5, 7)


@fmts
async def test_a_body_cut_mid_json_fails_the_sdk_call_with_the_diagnosis(fmt: str) -> None:
    body = whole_answer(fmt)
    for end, summary in ((Fin(), "early_stream.closed_mid_body"), (Rst(), "early_stream.reset")):
        _, error, (record,) = await call(fmt, (Headers(headers=JSON), Send(body[:40]), end))
        assert isinstance(
            error, openai.APIConnectionError if fmt != "anthropic" else anthropic.APIConnectionError
        )
        failure = streamfsm.failure_of(error)
        assert failure is not None and failure.record is record
        assert key(record) == summary
        assert record["retry"]["verdict"] == "safe_auto_retry"  # nothing reached anyone


@fmts
async def test_json_truncated_at_a_clean_end_is_no_answer(fmt: str) -> None:
    body = whole_answer(fmt)
    _, error, (record,) = await call(fmt, (Headers(headers=JSON), Send(body[:-3]), End()))
    assert error is not None  # the SDK cannot parse it
    assert key(record) == "early_stream.eof_without_terminal"
    assert "detail=incomplete_body" in record["outcome"]["evidence"]
    assert streamfsm.failure_of(error) is not None


@fmts
async def test_a_stalled_body_is_ended_by_the_watchdog(fmt: str) -> None:
    body = whole_answer(fmt)
    config = StreamConfig(first_token_timeout=0.5)
    _, error, (record,) = await call(fmt, (Headers(headers=JSON), Send(body[:40]), Stall()), config)
    assert isinstance(error, openai.APITimeoutError if fmt != "anthropic" else anthropic.APITimeoutError)
    assert key(record) == "watchdog.first_token_timeout"
    assert streamfsm.failure_of(error) is not None


@fmts
@pytest.mark.parametrize("status", [429, 200])
async def test_a_provider_error_is_recorded_at_any_status(fmt: str, status: int) -> None:
    error_body = b'{"error": {"type": "overloaded_error", "message": "busy"}}'
    _, error, (record,) = await call(fmt, (Status(status, headers=JSON, body=error_body),))
    assert key(record) == "provider_error.overloaded"
    if status == 429:
        failure = streamfsm.failure_of(error)  # type: ignore[arg-type]
        assert failure is not None and failure.record is record


@pytest.mark.parametrize("status", ["queued", "in_progress"])
async def test_a_background_request_answered_queued_is_accepted_not_failed(status: str) -> None:
    # OpenAI's background mode: the call returns at once, the answer is fetched later by the response's id.
    body = whole_answer("openai-responses", "", finish=status, usage=False)
    answer, error, (record,) = await call(
        "openai-responses", (Status(200, headers=JSON, body=body),), background=True
    )
    assert error is None and answer.status == status
    assert key(record) == "completed.background"
    assert record["finish_reason"] == {**record["finish_reason"], "raw": status, "unified": "other"}
    assert record["retry"]["verdict"] == "no_retry"  # a retry would start a second background job
    assert record["ids"]["response_id"] == "resp_0"  # the id to fetch the answer by


async def test_an_error_object_in_a_whole_answer_is_marked_as_such() -> None:
    error_body = b'{"error": {"type": "overloaded_error", "message": "busy"}}'
    _, _, (record,) = await call("openai-chat", (Status(200, headers=JSON, body=error_body),))
    assert "body=whole_answer" in record["outcome"]["evidence"]
    assert "body=not_event_stream" not in record["outcome"]["evidence"]


@fmts
async def test_json_that_is_not_an_answer_is_a_protocol_error(fmt: str) -> None:
    _, _, (record,) = await call(fmt, (Status(200, headers=JSON, body=b'{"hello": 1}'),))
    assert key(record) == "protocol_error.protocol_violation"
    assert "detail=unexpected_shape" in record["outcome"]["evidence"]


async def test_a_gemini_generate_content_call_is_a_run_too() -> None:
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,))
    body = whole_answer("gemini", tools=[TOOL])
    async with FaultServer((Status(200, headers=JSON, body=body),)) as server:
        async with streamfsm.async_http_client(http=HTTP, config=config) as http:
            url = server.base_url + "/v1beta/models/gemini-2.5-flash:generateContent"
            response = await http.post(url, json={"contents": []})
    assert response.content == body
    (record,) = records
    validate_record(record)
    assert (key(record), record["request"]["streaming"]) == ("completed.finished", False)
    assert record["stream_events"]["tool_call"] == 1


@pytest.mark.parametrize(
    ("ending", "summary"),
    [
        ("gzip", "completed.finished"),
        ("cut", "early_stream.closed_mid_body"),
        ("truncated", "early_stream.eof_without_terminal"),
    ],
)
async def test_a_gemini_answer_encoded_cut_or_truncated(ending: str, summary: str) -> None:
    body = whole_answer("gemini")
    steps: tuple[Any, ...] = {
        "gzip": (Status(200, headers=(*JSON, ("content-encoding", "gzip")), body=gzip.compress(body)),),
        "cut": (Headers(headers=JSON), Send(body[:30]), Fin()),
        "truncated": (Headers(headers=JSON), Send(body[:-1]), End()),
    }[ending]
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,))
    error: Exception | None = None
    async with FaultServer(steps) as server:
        async with streamfsm.async_http_client(http=HTTP, config=config) as http:
            url = server.base_url + "/v1beta/models/gemini-2.5-flash:generateContent"
            try:
                await http.post(url, json={"contents": []})
            except Exception as exc:
                error = exc
    assert (error is not None) == (ending == "cut")
    assert error is None or streamfsm.failure_of(error) is not None
    (record,) = records
    validate_record(record)
    assert key(record) == summary
    if ending == "gzip":
        assert record["tokens"]["output"] == 7


def test_a_sync_client_records_a_whole_answer_a_cut_and_a_stall() -> None:
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,), first_token_timeout=0.5)
    body = whole_answer("openai-chat")
    errors: list[BaseException | None] = []
    for steps in (
        (Status(200, headers=JSON, body=body),),
        (Headers(headers=JSON), Send(body[:40]), Fin()),
        (Headers(headers=JSON), Send(body[:40]), Stall()),
    ):
        with FaultServerThread(steps) as server:
            client = openai.OpenAI(
                base_url=server.base_url + "/v1",
                api_key="sk-test-0",
                max_retries=0,
                http_client=streamfsm.http_client(http=HTTP, config=config),
            )
            try:
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
                )
                errors.append(None)
            except openai.APIConnectionError as exc:  # APITimeoutError is one
                errors.append(exc)
            finally:
                client.close()
    assert [key(r) for r in records] == [
        "completed.finished",
        "early_stream.closed_mid_body",
        "watchdog.first_token_timeout",
    ]
    assert errors[0] is None and isinstance(errors[2], openai.APITimeoutError)
    for error, record in zip(errors[1:], records[1:], strict=True):
        failure = streamfsm.failure_of(error)  # type: ignore[arg-type]
        assert failure is not None and failure.record is record
