"""The tap decides by the path and the response, never by scanning the request body: a request of any size
on a format's path is an LLM call, and its response's content type says whether it streams. The real
``openai`` SDK against loopback faults."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import openai
import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.tap import DEFAULT_RULES, default_library
from streamfsm.tap._rules import llm_request
from streamfsm.testing import FaultServer, Fin, Headers, Send, text_stream, unused_port, whole_answer
from tests.support.runs import validate_record

HTTP = default_library()
BOUND_S = 30.0
BIG = 5 << 20  # a long prompt or a base64 image: over the 1 MiB the tap once parsed
JSON = (("content-type", "application/json"),)
pytestmark = pytest.mark.anyio


def prompt(size: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "x" * size}]


async def chat(base_url: str, records: list[Any], *, stream: bool, size: int = BIG) -> BaseException | None:
    config = StreamConfig(sinks=(records.append,))
    client = openai.AsyncOpenAI(
        base_url=f"{base_url}/v1",
        api_key="sk-test-0",
        max_retries=0,
        http_client=streamfsm.async_http_client(http=HTTP, config=config),
    )
    try:
        with anyio.fail_after(BOUND_S):
            answer = await client.chat.completions.create(
                model="gpt-4o-mini", messages=prompt(size), stream=stream
            )
            if stream:
                async for _ in answer:
                    pass
    except (openai.APIError, httpx.HTTPError) as exc:  # an older SDK lets a cut mid-stream through unwrapped
        return exc
    finally:
        await client.close()
    return None


@pytest.mark.parametrize("size", [1000, BIG])
async def test_a_large_streaming_request_cut_mid_stream_leaves_one_record(size: int) -> None:
    frames = text_stream("openai-chat", ["Hello", " wor", "ld"])
    records: list[Any] = []
    async with FaultServer((Headers(), *(Send(f) for f in frames[:-3]), Fin())) as server:
        error = await chat(server.base_url, records, stream=True, size=size)
    assert error is not None
    (record,) = records
    validate_record(record)
    assert record["outcome"]["summary_key"] == "mid_generation.closed_mid_body"
    assert record["model"] == "gpt-4o-mini"
    assert record["request"]["streaming"] is True
    failure = streamfsm.failure_of(error)
    assert failure is not None and failure.record is record


async def test_a_large_non_streaming_request_cut_mid_body_leaves_one_record() -> None:
    body = whole_answer("openai-chat")
    records: list[Any] = []
    async with FaultServer((Headers(headers=JSON), Send(body[:40]), Fin())) as server:
        error = await chat(server.base_url, records, stream=False)
    assert isinstance(error, openai.APIConnectionError)
    (record,) = records
    validate_record(record)
    assert record["outcome"]["summary_key"] == "early_stream.closed_mid_body"
    assert (record["model"], record["request"]["streaming"]) == ("gpt-4o-mini", False)
    failure = streamfsm.failure_of(error)
    assert failure is not None and failure.record is record


async def test_a_refused_connection_on_a_format_path_is_recorded_with_what_the_request_asked() -> None:
    records: list[Any] = []
    error = await chat(f"http://127.0.0.1:{unused_port()}", records, stream=True)
    assert error is not None
    (record,) = records
    assert record["outcome"]["summary_key"].startswith("before_connection.")
    assert record["request"]["streaming"] is True  # found by the bounded look at the body's tail
    assert streamfsm.failure_of(error) is not None


def test_the_bounded_look_finds_the_model_and_the_mode_without_parsing_a_large_body() -> None:
    small = b'{"model": "m", "messages": [], "stream": true}'
    call = llm_request(DEFAULT_RULES, "POST", "/v1/chat/completions", {}, small)
    assert call is not None and (call.body["model"], call.streams) == ("m", True)
    quoted = b'"model\\": \\"not-a-key\\", \\"stream\\": true'  # as a message's text holds them
    large = b'{"messages": [{"content": "' + quoted + b"y" * BIG + b'"}], "model": "m2"}'
    call = llm_request(DEFAULT_RULES, "POST", "/v1/chat/completions", {}, large)
    assert call is not None and (call.body, call.streams) == ({"model": "m2"}, None)
    gemini = llm_request(DEFAULT_RULES, "POST", "/v1beta/models/g:generateContent", {}, large)
    assert gemini is not None and gemini.streams is False
    assert llm_request(DEFAULT_RULES, "GET", "/v1/chat/completions", {}, None) is None
    assert llm_request(DEFAULT_RULES, "POST", "/v1/responses/input_tokens", {}, small) is None
    assert llm_request(DEFAULT_RULES, "GET", "/v1/responses/resp_1", {"stream": "true"}, None) is not None


def test_the_bounded_look_takes_the_bodys_own_model_not_a_tool_inputs() -> None:
    # The anthropic SDK writes messages before model; a tool_use's input is an object (model output): its
    # "model" and "stream" are not the request's.
    tool_use = {
        "type": "tool_use",
        "id": "t1",
        "name": "switch",
        "input": {"model": "OUTPUT", "stream": True},
    }
    body = {
        "max_tokens": 1024,
        "messages": [
            {"role": "assistant", "content": [tool_use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * BIG}]},
        ],
        "model": "claude-sonnet-4-5",
        "stream": False,
    }
    call = llm_request(DEFAULT_RULES, "POST", "/v1/messages", {}, json.dumps(body).encode())
    assert call is not None and (call.body, call.streams) == ({"model": "claude-sonnet-4-5"}, False)


@pytest.mark.parametrize(
    "head",
    [b'\\"', b'\\\n"', b'"\\', b"[", b'"x",'],
    ids=["escaped-quotes", "escaped-newlines", "quote-soup", "brackets", "tiny-strings"],
)
def test_the_bounded_look_reads_a_hostile_head_to_nothing(head: bytes) -> None:
    body = b'{"messages": [{"content": "' + head * (BIG // len(head))
    call = llm_request(DEFAULT_RULES, "POST", "/v1/messages", {}, body)
    assert call is not None and (call.body, call.streams) == ({}, None)
