"""The relay sends upstream through the tap, so the tap's decision is its own: a request of any size on a
format's path is a run, streaming or not (the response says which). The real ``openai`` SDK through the
relay, in front of loopback faults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamfsm import RunRecord
from streamfsm.testing import FaultServerThread, Fin, Headers, Send, Status, text_stream, whole_answer
from tests.support.relay import relay_to, wait_lines
from tests.support.runs import validate_record

openai = pytest.importorskip("openai")

BIG = 5 << 20


def chat(base_url: str, *, stream: bool) -> BaseException | None:
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="sk-test-0", max_retries=0, timeout=30.0)
    try:
        answer = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "x" * BIG}], stream=stream
        )
        if stream:
            for _ in answer:
                pass
    except openai.APIError as exc:
        return exc
    finally:
        client.close()
    return None


def the_record(tmp_path: Path) -> dict[str, Any]:
    (record,) = wait_lines(tmp_path / "audit.jsonl", 1)
    validate_record(RunRecord.from_dict(record))  # type: ignore[arg-type]
    return record


def test_a_5_mib_streaming_request_cut_upstream_leaves_one_record(tmp_path: Path) -> None:
    frames = text_stream("openai-chat", ["Hello", " wor", "ld"])
    steps = (Headers(), *(Send(f) for f in frames[:-3]), Fin())
    logs = {"audit_log": str(tmp_path / "audit.jsonl")}
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs) as relay:
        error = chat(relay.base_url, stream=True)
    assert error is not None
    record = the_record(tmp_path)
    assert record["outcome"]["summary_key"] == "mid_generation.closed_mid_body"
    assert (record["model"], record["request"]["streaming"]) == ("gpt-4o-mini", True)


JSON = (("content-type", "application/json"),)


@pytest.mark.parametrize(
    ("ending", "summary", "close"),
    [
        ("whole", "completed.finished", "completed"),
        ("cut", "early_stream.closed_mid_body", "upstream_premature_close"),
        ("error", "provider_error.overloaded", "upstream_error"),
    ],
)
def test_a_5_mib_non_streaming_request_leaves_one_record_with_its_close_kind(
    tmp_path: Path, ending: str, summary: str, close: str
) -> None:
    body = whole_answer("openai-chat")
    steps: tuple[Any, ...] = {
        "whole": (Status(200, headers=JSON, body=body),),
        "cut": (Headers(headers=JSON), Send(body[:40]), Fin()),
        "error": (
            Status(529, headers=JSON, body=b'{"error": {"type": "overloaded_error", "message": "x"}}'),
        ),
    }[ending]
    logs = {"audit_log": str(tmp_path / "audit.jsonl")}
    with FaultServerThread(steps) as upstream, relay_to(upstream.base_url, **logs) as relay:
        error = chat(relay.base_url, stream=False)
    assert (error is None) == (ending == "whole")
    record = the_record(tmp_path)
    assert record["outcome"]["summary_key"] == summary
    assert (record["model"], record["request"]["streaming"]) == ("gpt-4o-mini", False)
    assert record["relay"]["close"] == close


@pytest.mark.parametrize("name", ["openai-chat/whole/cut-mid-body", "openai-chat/whole/truncated-body"])
def test_a_non_streaming_answer_cut_upstream_gives_the_sdk_the_request_id(tmp_path: Path, name: str) -> None:
    """The relay holds a whole answer until its end: one the upstream broke is the relay's 502, which the
    openai SDK raises as a status error carrying the request id of the record (before, the response was
    cut after its headers, and the SDK said "Connection error." with no response to read an id from)."""
    from streamfsm.testing import catalog

    (scenario,) = [s for s in catalog() if s.name == name]
    logs = {"audit_log": str(tmp_path / "audit.jsonl")}
    with FaultServerThread(scenario.script) as upstream, relay_to(upstream.base_url, **logs) as relay:
        client = openai.OpenAI(base_url=f"{relay.base_url}/v1", api_key="sk-test-0", max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught, client:
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    record = the_record(tmp_path)
    request_id = record["ids"]["context"]["request_id"]
    assert caught.value.status_code == 502
    assert caught.value.request_id == request_id
    assert request_id in caught.value.message
    assert record["outcome"]["summary_key"] == f"early_stream.{scenario.expected_cause}"
    assert record["relay"]["end_sent"] and record["relay"]["bytes_written"] > 0
