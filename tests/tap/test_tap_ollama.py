"""Ollama's own API through the tap: the real ``ollama`` client (httpx, NDJSON, no SSE) attached in one line
(``ollama.AsyncClient(host=..., transport=streamfsm.tap.async_transport(http="httpx"))``), against loopback
faults: a clean stream, a cut, an error line, an error status, and ``stream=False``."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

import streamfsm
import streamfsm.tap
from streamfsm import StreamConfig
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Fin,
    Headers,
    Send,
    Status,
    build,
    error_event,
    whole_answer,
)
from tests.support.runs import validate_record

ollama = pytest.importorskip("ollama")  # in the sdk extra: it needs an httpx newer than the core's floor

BOUND_S = 20.0
NDJSON = (("content-type", "application/x-ndjson"),)
JSON = (("content-type", "application/json; charset=utf-8"),)
HI = [{"role": "user", "content": "hi"}]
TEXT = [("reasoning", "Hm"), ("text", "Hello"), ("text", " world")]
pytestmark = pytest.mark.anyio


def play(lines: list[bytes], *tail: Any) -> tuple[Any, ...]:
    return (Headers(headers=NDJSON), *(Send(line) for line in lines), *tail)


async def chat(
    steps: tuple[Any, ...], *, stream: bool = True, generate: bool = False, prompt: str = "hi"
) -> tuple[Any, Any, list[Any]]:
    """One call of the real async client through the tap: (the parts it yielded or its answer, what it
    raised, the records)."""
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,))
    got: list[Any] = []
    error: BaseException | None = None
    async with FaultServer(steps) as server:
        client = ollama.AsyncClient(
            host=server.base_url, transport=streamfsm.tap.async_transport(http="httpx", config=config)
        )
        try:
            with anyio.fail_after(BOUND_S):
                if generate:
                    call = client.generate(model="llama3.2", prompt=prompt, stream=stream)
                else:
                    messages = [{"role": "user", "content": prompt}]
                    call = client.chat(model="llama3.2", messages=messages, stream=stream)
                if stream:
                    async for part in await call:
                        got.append(part)
                else:
                    got.append(await call)
        except Exception as exc:
            error = exc
        finally:
            await client._client.aclose()
    for record in records:
        validate_record(record)
        assert record["provider"] == "ollama"
        assert record["request"]["streaming"] is stream
    return got, error, records


def key(record: Any) -> str:
    return str(record["outcome"]["summary_key"])


@pytest.mark.parametrize("generate", [False, True], ids=["chat", "generate"])
async def test_a_clean_stream_is_recorded_as_a_whole_answer(generate: bool) -> None:
    parts, error, (record,) = await chat(
        play(build("ollama", TEXT, generate=generate), End()), generate=generate
    )
    assert error is None
    assert parts[-1].done is True and parts[-1].done_reason == "stop"
    assert key(record) == "completed.finished"
    events = record["stream_events"]
    assert (events["text_delta"], events["reasoning_delta"], events["finish"]) == (2, 1, 1)
    assert (record["tokens"]["input"], record["tokens"]["output"]) == (25, 40)


async def test_a_tool_call_arrives_whole_and_complete() -> None:
    lines = build("ollama", [("text", "Let me look."), ("tool", "read_file", '{"path": "a.txt"}')])
    parts, error, (record,) = await chat(play(lines, End()))
    assert error is None
    (call,) = [c for part in parts for c in part.message.tool_calls or ()]
    assert call.function.name == "read_file" and call.function.arguments == {"path": "a.txt"}
    assert key(record) == "completed.finished"
    assert record["finish_reason"]["unified"] == "tool_calls"
    assert record["stream_events"]["tool_call"] == 1


async def test_a_cut_mid_line_fails_the_client_with_the_diagnosis() -> None:
    lines = build("ollama", TEXT)
    parts, error, (record,) = await chat(play(lines[:2], Send(lines[2][:25]), Fin()))
    assert [part.message.content for part in parts] == ["", "Hello"]  # the client saw the text, not the cut
    assert isinstance(error, httpx.RemoteProtocolError)
    failure = streamfsm.failure_of(error)
    assert failure is not None and failure.record is record
    assert key(record) == "mid_generation.closed_mid_body"
    assert record["retry"]["verdict"] == "user_confirmed_retry"


async def test_a_torn_last_line_is_no_finish() -> None:
    lines = build("ollama", TEXT)
    _, error, (record,) = await chat(play(lines[:-1], Send(lines[-1][:-20]), End()))
    assert error is not None  # the client cannot parse the torn line
    assert key(record) == "mid_generation.eof_without_terminal"


async def test_an_error_line_is_the_providers_error() -> None:
    lines = build("ollama", TEXT)
    parts, error, (record,) = await chat(play(lines[:1], Send(error_event("ollama", "overloaded")), End()))
    assert isinstance(error, ollama.ResponseError) and len(parts) == 1
    failure = streamfsm.failure_of(error)  # the client's own error, raised on the line the tap read
    assert failure is not None and failure.record is record
    assert key(record) == "provider_error.overloaded"
    assert record["retry"]["verdict"] == "safe_auto_retry"  # only reasoning arrived


async def test_an_error_status_is_the_providers_error() -> None:
    body = b'{"error":"model \\"llama3.2\\" not found, try pulling it first"}'
    _, error, (record,) = await chat((Status(404, JSON, body),))
    assert isinstance(error, ollama.ResponseError) and error.status_code == 404
    failure = streamfsm.failure_of(error)
    assert failure is not None and failure.record is record
    assert key(record) == "provider_error.not_found"
    assert "llama3.2" not in str(record)  # the provider's message is not kept


async def test_stream_false_is_a_non_streaming_run() -> None:
    answer = whole_answer("ollama", tools=[("read_file", '{"path": "a.txt"}')])
    (response,), error, (record,) = await chat((Status(200, JSON, answer),), stream=False)
    assert error is None and response.message.content == "Hello"
    assert key(record) == "completed.finished"
    assert record["finish_reason"]["unified"] == "tool_calls"
    assert (record["tokens"]["input"], record["tokens"]["output"]) == (5, 7)


async def test_stream_false_cut_mid_body_is_safe_to_retry() -> None:
    answer = whole_answer("ollama")
    _, error, (record,) = await chat((Headers(headers=JSON), Send(answer[:40]), Fin()), stream=False)
    assert error is not None
    assert key(record) == "early_stream.closed_mid_body"
    assert record["retry"]["verdict"] == "safe_auto_retry"


def test_the_sync_client_in_one_line() -> None:
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,))
    lines = build("ollama", TEXT)
    with FaultServerThread(play(lines, End())) as server:
        client = ollama.Client(
            host=server.base_url, transport=streamfsm.tap.transport(http="httpx", config=config)
        )
        try:  # ollama 0.4.0 (the floor) has no context manager
            text = "".join(
                part.message.content for part in client.chat(model="llama3.2", messages=HI, stream=True)
            )
        finally:
            client._client.close()
    assert text == "Hello world"
    (record,) = records
    validate_record(record)
    assert key(record) == "completed.finished"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_5_mib_request_leaves_one_record(stream: bool) -> None:
    """The tap decides by the path and the response: a prompt over the bounded look is tapped the same."""
    lines = build("ollama", TEXT)
    steps = (
        play(lines[:2], Send(lines[2][:25]), Fin())
        if stream
        else (Headers(headers=JSON), Send(whole_answer("ollama")[:40]), Fin())
    )
    _, error, (record,) = await chat(steps, stream=stream, prompt="x" * (5 << 20))
    assert error is not None and streamfsm.failure_of(error) is not None
    assert record["model"] == "llama3.2"
    assert key(record) == ("mid_generation" if stream else "early_stream") + ".closed_mid_body"


async def test_a_clean_end_before_the_done_line_fails_the_clients_read() -> None:
    """The client just ends there, as after a whole answer: the tap fails its read (``strict_eof``)."""
    lines = build("ollama", TEXT)
    parts, error, (record,) = await chat(play(lines[:-1], End()))
    assert [part.message.content for part in parts] == ["", "Hello", " world"]
    assert isinstance(error, httpx.RemoteProtocolError)
    failure = streamfsm.failure_of(error)
    assert failure is not None and failure.record is record
    assert key(record) == "mid_generation.eof_without_terminal"


# Ollama's client is httpx's; with openai 3.x (httpx2) installed, a tap made without http= is httpx2's.
OTHER = "httpx2"


@pytest.mark.parametrize("given", [{"http": OTHER}, {}], ids=["http=httpx2", "default"])
async def test_a_tap_of_the_other_library_says_which_http_its_client_needs(given: dict[str, str]) -> None:
    pytest.importorskip(OTHER)
    if not given and streamfsm.tap.default_library() != OTHER:
        pytest.skip("the installed SDKs are of httpx's generation: the default tap fits Ollama's client")
    async with FaultServer(play(build("ollama", TEXT), End())) as server:
        client = ollama.AsyncClient(host=server.base_url, transport=streamfsm.tap.async_transport(**given))
        try:
            with anyio.fail_after(BOUND_S), pytest.raises(TypeError) as raised:
                await client.chat(model="llama3.2", messages=HI, stream=False)
        finally:
            await client._client.aclose()
        assert server.requests_seen == 0
    assert "http='httpx'" in str(raised.value) and "streamfsm.tap.async_transport(" in str(raised.value)
    with FaultServerThread(play(build("ollama", TEXT), End())) as thread_server:
        sync = ollama.Client(host=thread_server.base_url, transport=streamfsm.tap.transport(**given))
        try:
            with pytest.raises(TypeError, match=r"http='httpx': streamfsm\.tap\.transport\(http='httpx'\)"):
                sync.chat(model="llama3.2", messages=HI, stream=False)
        finally:
            sync._client.close()
