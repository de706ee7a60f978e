"""A configuration mistake is no transient fault: an unusable base URL is refused before anything is sent
(``open_stream`` raises ``ValueError``; ``streamfsm probe`` exits 2), never diagnosed as a retryable
``before_connection.connect_failed``."""

from __future__ import annotations

import pytest

import streamfsm
from streamfsm.cli import main
from streamfsm.testing import FaultServer, Headers, Send, text_stream

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
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
