"""A configuration mistake is no transient fault: an unusable base URL is refused before anything is sent
(``open_stream`` raises ``ValueError``; ``streamfsm probe`` exits 2), never diagnosed as a retryable
``before_connection.connect_failed``. A base URL without its ``/v1`` sends OpenAI's endpoints to the server's
root: the 404 that follows asks whether ``.../v1`` was meant."""

from __future__ import annotations

import anyio
import openai
import pytest

import streamfsm
from streamfsm.classify import Facts, diagnose
from streamfsm.classify._provider import provider_error_from_http
from streamfsm.classify._taxonomy import ENDPOINT_AT_ROOT
from streamfsm.cli import main
from streamfsm.machine import Activity, Commitment, State, Trigger
from streamfsm.testing import FaultServer, Headers, Send, Status, text_stream

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
BODIES = {"openai-chat": BODY, "openai-responses": {"model": "m", "input": "hi"}}
NOT_FOUND = Status(404, (("content-type", "application/json"),), b'{"detail":"Not Found"}')
HINT = "did you mean a base_url ending in /v1"
BAD = ["not-a-url", "ftp://x", "http://", "https:///v1", "", "localhost:8080/v1", "http://h:99999/v1"]


@pytest.mark.parametrize("url", BAD)
def test_open_stream_refuses_a_bad_base_url_at_once(url: str) -> None:
    records: list[streamfsm.RunRecord] = []
    with pytest.raises(ValueError, match="base_url"):
        streamfsm.open_stream(
            "openai-chat", base_url=url, json=BODY, config=streamfsm.StreamConfig(sinks=(records.append,))
        )
    assert records == []  # nothing was sent, so nothing to record


def test_the_message_never_quotes_the_url() -> None:
    with pytest.raises(ValueError, match="scheme") as info:
        streamfsm.open_stream("openai-chat", base_url="ftp://user:sk-secret@host/v1", json=BODY)
    assert "sk-secret" not in str(info.value)


@pytest.mark.anyio
async def test_a_good_base_url_still_streams() -> None:
    frames = text_stream("openai-chat", ["hi"])
    async with FaultServer((Headers(), *(Send(f) for f in frames))) as server:
        async with streamfsm.open_stream("openai-chat", base_url=server.base_url, json=BODY) as run:
            async for _ in run:
                pass
    assert run.finished


@pytest.mark.parametrize("url", ["not-a-url", "ftp://x", "http://"])
def test_probe_calls_a_bad_base_url_a_usage_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--provider", "openai-chat", "--base-url", url, "--model", "m", "--json"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == "" and "base_url" in err and "Retrying" not in err


@pytest.mark.anyio
@pytest.mark.parametrize("provider", sorted(BODIES))
@pytest.mark.parametrize(("suffix", "hinted"), [("", True), ("/", True), ("/v1", False)])
async def test_a_404_from_the_servers_root_asks_for_v1(provider: str, suffix: str, hinted: bool) -> None:
    async with FaultServer((NOT_FOUND,)) as server:
        base_url = server.base_url + suffix
        with anyio.fail_after(30), pytest.raises(streamfsm.StreamFailed) as info:
            async with streamfsm.open_stream(provider, base_url=base_url, json=BODIES[provider]) as run:
                async for _ in run:
                    pass
    diagnosis = info.value.diagnosis
    assert diagnosis.summary_key == "provider_error.not_found"
    assert (HINT in diagnosis.detail) is hinted
    assert ("detail=endpoint_at_root" in diagnosis.evidence) is hinted


@pytest.mark.anyio
async def test_the_openai_sdk_through_the_tap_is_asked_for_v1_too() -> None:
    async with FaultServer((NOT_FOUND,)) as server:
        client = openai.AsyncOpenAI(
            base_url=server.base_url,
            api_key="sk-test-0",
            max_retries=0,
            http_client=streamfsm.async_http_client(),
        )
        with anyio.fail_after(30), pytest.raises(openai.NotFoundError) as info:
            await client.chat.completions.create(**BODY, stream=True)  # type: ignore[call-overload]
        await client.close()
    failure = streamfsm.failure_of(info.value)
    assert failure is not None and HINT in failure.diagnosis.detail


def test_the_hint_is_for_a_404_only() -> None:
    state = State(Activity.CONNECTING, Commitment.NONE)
    for status, hinted in ((404, True), (429, False), (500, False)):
        provider = provider_error_from_http(status, {}, b"")
        d = diagnose(state, Trigger.HTTP_ERROR, Facts(provider=provider, detail=ENDPOINT_AT_ROOT))
        assert (HINT in d.detail) is hinted, status
    d = diagnose(state, Trigger.HTTP_ERROR, Facts(provider=provider_error_from_http(404, {}, b"")))
    assert HINT not in d.detail
