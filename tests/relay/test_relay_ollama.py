"""Ollama's own API through the relay: the real ``ollama`` client pointed at the relay, the relay in front of
loopback faults. Each call leaves one record with its close kind, streaming (NDJSON) or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamfsm import RunRecord
from streamfsm.testing import (
    End,
    FaultServerThread,
    Fin,
    Headers,
    Send,
    Status,
    build,
    error_event,
    whole_answer,
)
from tests.support.relay import relay_to, wait_lines
from tests.support.runs import validate_record

ollama = pytest.importorskip("ollama")

NDJSON = (("content-type", "application/x-ndjson"),)
JSON = (("content-type", "application/json; charset=utf-8"),)
LINES = build("ollama", [("text", "Hello"), ("text", " world")])


def chat(base_url: str, *, stream: bool, prompt: str = "hi") -> tuple[str, BaseException | None]:
    client = ollama.Client(host=base_url, timeout=30.0)
    text = ""
    try:
        answer = client.chat(model="llama3.2", messages=[{"role": "user", "content": prompt}], stream=stream)
        for part in answer if stream else [answer]:
            text += part.message.content or ""
    except Exception as exc:  # the client's own error, or httpx's for a cut
        return text, exc
    finally:
        client._client.close()
    return text, None


@pytest.mark.parametrize(
    ("stream", "steps", "summary", "close"),
    [
        (
            True,
            (Headers(headers=NDJSON), *(Send(line) for line in LINES), End()),
            "completed.finished",
            "completed",
        ),
        (
            True,
            (Headers(headers=NDJSON), Send(LINES[0]), Send(LINES[1][:20]), Fin()),
            "mid_generation.closed_mid_body",
            "upstream_premature_close",
        ),
        (
            True,
            (Headers(headers=NDJSON), Send(LINES[0]), Send(error_event("ollama", "overloaded")), End()),
            "provider_error.overloaded",
            "upstream_error",
        ),
        (False, (Status(200, JSON, whole_answer("ollama")),), "completed.finished", "completed"),
    ],
    ids=["stream", "stream-cut", "stream-error-line", "whole"],
)
def test_an_ollama_call_through_the_relay_leaves_one_record(
    tmp_path: Path, stream: bool, steps: tuple[Any, ...], summary: str, close: str
) -> None:
    logs = {"audit_log": str(tmp_path / "audit.jsonl")}
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs) as relay:
        text, error = chat(relay.base_url, stream=stream)
    assert (error is None) == (summary == "completed.finished")
    assert text.startswith("Hello") or not stream
    (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    validate_record(RunRecord.from_dict(record))  # type: ignore[arg-type]
    assert (record["provider"], record["model"], record["request"]["streaming"]) == (
        "ollama",
        "llama3.2",
        stream,
    )
    assert record["outcome"]["summary_key"] == summary
    assert record["relay"]["close"] == close


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_5_mib_ollama_request_cut_upstream_leaves_one_record(tmp_path: Path, stream: bool) -> None:
    steps = (
        (Headers(headers=NDJSON), Send(LINES[0]), Send(LINES[1][:20]), Fin())
        if stream
        else (Headers(headers=JSON), Send(whole_answer("ollama")[:40]), Fin())
    )
    logs = {"audit_log": str(tmp_path / "audit.jsonl")}
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs) as relay:
        _, error = chat(relay.base_url, stream=stream, prompt="x" * (5 << 20))
    assert error is not None
    (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    assert (record["model"], record["request"]["streaming"]) == ("llama3.2", stream)
    assert record["outcome"]["summary_key"].endswith(".closed_mid_body")
