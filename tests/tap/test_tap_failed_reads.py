"""A run the tap failed fails the caller's next read, over real sockets with the real clients: where the bytes
show the client nothing wrong (an oversize line: the record says protocol violation), the client would read
on into the stall behind the line, and Ollama's client has no timeout of its own. The read after the chunk
that broke the stream raises the library's ``RemoteProtocolError``, carrying the failure; the chunk itself
reaches the client as it came. A provider's error line, which the client reads itself, is left to it."""

from __future__ import annotations

import time
from typing import Any

import anyio
import openai
import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.runtime.core import _whole
from streamfsm.tap import default_library, library
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Headers,
    Send,
    Stall,
    error_event,
    find,
    text_stream,
    whole_answer,
)

ollama = pytest.importorskip("ollama")  # in the sdk extra

pytestmark = pytest.mark.anyio
BOUND_S = 5.0  # the stall behind the line lasts until the client goes: only a failed read ends it in time
FAST_S = 2.0
HI = [{"role": "user", "content": "hi"}]
BODY = {"model": "gpt-4o-mini", "messages": HI, "stream": True}
HTTP = default_library()


def config(slug: str, records: list[Any]) -> StreamConfig:
    return StreamConfig(sinks=(records.append,)).replace(**find(slug).config)


def check(error: BaseException | None, records: list[Any], http: str, took: float) -> None:
    assert took < FAST_S, f"the read failed only after {took:.1f} s"
    assert error is not None
    module = library(http)[0]
    assert isinstance(error, module.RemoteProtocolError) or isinstance(
        error.__cause__, module.RemoteProtocolError
    ), repr(error)
    failure = streamfsm.failure_of(error)
    (record,) = records
    assert failure is not None and failure.record is record
    assert record["outcome"]["summary_key"] == "protocol_error.protocol_violation"


async def test_ollamas_async_client_fails_after_an_oversize_line() -> None:
    records: list[Any] = []
    error: BaseException | None = None
    parts: list[Any] = []
    async with FaultServer(find("ollama/oversize-line").script) as server:
        tap = streamfsm.tap.async_transport(http="httpx", config=config("ollama/oversize-line", records))
        client = ollama.AsyncClient(host=server.base_url, transport=tap)
        start = time.monotonic()
        try:
            with anyio.fail_after(BOUND_S):
                async for part in await client.chat(model="llama3.2", messages=HI, stream=True):
                    parts.append(part)
        except Exception as exc:
            error = exc
        finally:
            await client._client.aclose()
    check(error, records, "httpx", time.monotonic() - start)
    assert parts and set(parts[-1].message.content) == {"y"}  # the line itself came through, as it was


def test_ollamas_sync_client_fails_after_an_oversize_line() -> None:
    records: list[Any] = []
    error: BaseException | None = None
    with FaultServerThread(find("ollama/oversize-line").script) as server:
        tap = streamfsm.tap.transport(http="httpx", config=config("ollama/oversize-line", records))
        client = ollama.Client(host=server.base_url, transport=tap, timeout=BOUND_S)
        start = time.monotonic()
        try:
            for _ in client.chat(model="llama3.2", messages=HI, stream=True):
                pass
        except Exception as exc:
            error = exc
        finally:
            client._client.close()
    check(error, records, "httpx", time.monotonic() - start)


async def test_the_openai_sdks_async_stream_fails_after_an_oversize_line() -> None:
    records: list[Any] = []
    error: BaseException | None = None
    slug = "openai-chat/oversize-line"
    async with FaultServer(find(slug).script) as server:
        http = streamfsm.async_http_client(http=HTTP, config=config(slug, records))
        client = openai.AsyncOpenAI(
            base_url=server.base_url + "/v1", api_key="sk-test-0", max_retries=0, http_client=http
        )
        start = time.monotonic()
        try:
            with anyio.fail_after(BOUND_S):
                async for _ in await client.chat.completions.create(**BODY):
                    pass
        except Exception as exc:
            error = exc
        finally:
            await client.close()
    check(error, records, HTTP, time.monotonic() - start)


def test_the_openai_sdks_sync_stream_fails_after_an_oversize_line() -> None:
    records: list[Any] = []
    error: BaseException | None = None
    slug = "openai-chat/oversize-line"
    with FaultServerThread(find(slug).script) as server:
        client = openai.OpenAI(
            base_url=server.base_url + "/v1",
            api_key="sk-test-0",
            max_retries=0,
            timeout=BOUND_S,
            http_client=streamfsm.http_client(http=HTTP, config=config(slug, records)),
        )
        start = time.monotonic()
        try:
            for _ in client.chat.completions.create(**BODY):
                pass
        except Exception as exc:
            error = exc
        finally:
            client.close()
    check(error, records, HTTP, time.monotonic() - start)


async def test_a_providers_error_line_is_left_to_the_client_that_reads_it() -> None:
    """The failure is in the bytes the client reads: it raises its own error there, not ours."""
    records: list[Any] = []
    lines = [text_stream("ollama", ["Hi"])[0], error_event("ollama", "overloaded")]
    script = (Headers(headers=(("content-type", "application/x-ndjson"),)), *map(Send, lines), Stall())
    async with FaultServer(script) as server:
        tap = streamfsm.tap.async_transport(http="httpx", config=StreamConfig(sinks=(records.append,)))
        client = ollama.AsyncClient(host=server.base_url, transport=tap)
        try:
            with anyio.fail_after(BOUND_S), pytest.raises(ollama.ResponseError) as raised:
                async for _ in await client.chat(model="llama3.2", messages=HI, stream=True):
                    pass
        finally:
            await client._client.aclose()
    assert streamfsm.failure_of(raised.value) is not None
    assert records[0]["outcome"]["edge"] == "provider_error_event"


def test_a_whole_answer_over_the_taps_bound_fails_the_sdks_next_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tap keeps no more than ``MAX_ANSWER_BYTES`` of a non-streaming answer: that run fails (the record
    says ``answer_too_large``), and so does the SDK's read after the chunk that passed the bound."""
    monkeypatch.setattr(_whole, "MAX_ANSWER_BYTES", 1000)
    answer = whole_answer("openai-chat", "y" * 1500)
    json_headers = (("content-type", "application/json"),)
    script = (Headers(headers=json_headers), Send(answer[:800]), Send(answer[800:]), End())
    records: list[Any] = []
    with FaultServerThread(script) as server:
        client = openai.OpenAI(
            base_url=server.base_url + "/v1",
            api_key="sk-test-0",
            max_retries=0,
            timeout=BOUND_S,
            http_client=streamfsm.http_client(http=HTTP, config=StreamConfig(sinks=(records.append,))),
        )
        try:
            with pytest.raises(openai.APIConnectionError) as raised:
                client.chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]
        finally:
            client.close()
    failure = streamfsm.failure_of(raised.value)
    (record,) = records
    assert failure is not None and failure.record is record
    assert record.summary_key == "protocol_error.protocol_violation"
    assert _whole.ANSWER_TOO_LARGE in str(record["outcome"])
