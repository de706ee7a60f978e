"""Bedrock through the relay: the real ``AnthropicBedrock`` (fake AWS credentials) against the relay
in front of the fault server. The AWS event-stream body passes byte for byte, and each call lands once in the
audit log with its close kind: a clean stream, cut ones, an exception message, and a non-streaming invoke. A
cut stream ends with the relay's own exception message (Bedrock's in-band error, from the format registry)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from streamfsm.testing import FaultServerThread, find
from tests.support.relay import relay_to, run_lines

anthropic = pytest.importorskip("anthropic")
boto3 = pytest.importorskip("boto3")  # AnthropicBedrock signs its requests with a boto3 session
botocore_config = pytest.importorskip("botocore.config")

MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"
CREDENTIALS = {"aws_access_key": "AKIDEXAMPLE", "aws_secret_key": "not-a-secret", "aws_region": "us-east-1"}
MESSAGES = [{"role": "user", "content": "hi"}]
CONVERSE_MESSAGES = [{"role": "user", "content": [{"text": "hi"}]}]


def call(base_url: str, *, stream: bool) -> tuple[list[Any], BaseException | None]:
    client = anthropic.AnthropicBedrock(**CREDENTIALS, base_url=base_url, max_retries=0, timeout=10.0)
    items: list[Any] = []
    try:
        if stream:
            for event in client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES, stream=True):
                items.append(event.model_dump(mode="json"))
        else:
            items.append(client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES).model_dump())
    except Exception as exc:
        return items, exc
    finally:
        client.close()
    return items, None


def the_record(audit: Path) -> dict[str, Any]:
    """The one run record of the audit log (a second one would have arrived in the grace time)."""
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and not run_lines(audit):
        time.sleep(0.02)
    time.sleep(0.1)
    (record,) = run_lines(audit)
    return record


@pytest.mark.parametrize(
    ("slug", "close", "summary"),
    [
        ("clean-end", "completed", "completed.finished"),
        ("cut-mid-message", "upstream_premature_close", "mid_generation.closed_mid_body"),
        ("cut-between-messages", "upstream_premature_close", "mid_generation.closed_mid_body"),
        ("exception-after-output", "upstream_error", "provider_error.server_error"),
        ("whole/clean-end", "completed", "completed.finished"),
    ],
)
def test_a_bedrock_call_through_the_relay(slug: str, close: str, summary: str, tmp_path: Path) -> None:
    scenario = find(f"anthropic-bedrock/{slug}")
    audit = tmp_path / "audit.jsonl"
    with FaultServerThread(scenario.script) as upstream:
        direct = call(upstream.base_url, stream=scenario.streaming)
    with (
        FaultServerThread(scenario.script) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit)) as relay,
    ):
        relayed = call(relay.base_url, stream=scenario.streaming)
        record = the_record(audit)
    assert relayed[0] == direct[0]  # the SDK reads the same events through the relay
    assert (relayed[1] is None) is (direct[1] is None) is (scenario.expected_edge is None)
    if slug == "cut-between-messages":  # the relay's own exception message ends the cut stream
        # (anthropic 2.x raises it as an APIStatusError, 0.x as a ValueError: both quote it)
        assert "the upstream stream failed" in str(relayed[1])
    elif slug != "cut-mid-message":  # there it lands inside the torn message: the client's CRC check fails
        assert type(relayed[1]) is type(direct[1])
    assert record["provider"] == "anthropic-bedrock"
    assert record["request"]["streaming"] is scenario.streaming
    assert record["outcome"]["summary_key"] == summary
    assert record["relay"]["close"] == close
    assert record["ids"]["context"]["route"].startswith("/model/")


def converse(base_url: str) -> tuple[list[Any], BaseException | None]:
    """One ConverseStream call with boto3's own client: (the items it yielded, what it raised)."""
    config = botocore_config.Config(retries={"max_attempts": 1}, read_timeout=10, connect_timeout=10)
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="not-a-secret",
        config=config,
    )
    items: list[Any] = []
    try:
        items.extend(client.converse_stream(modelId=MODEL, messages=CONVERSE_MESSAGES)["stream"])
    except Exception as exc:
        return items, exc
    return items, None


@pytest.mark.parametrize(
    ("slug", "close", "summary"),
    [
        ("clean-end", "completed", "completed.finished"),
        ("cut-between-messages", "upstream_premature_close", "mid_generation.closed_mid_body"),
        ("exception-after-output", "upstream_error", "provider_error.server_error"),
    ],
)
def test_a_converse_stream_through_the_relay(slug: str, close: str, summary: str, tmp_path: Path) -> None:
    """boto3 reads the same items through the relay, and the relay records the run as bedrock-converse."""
    scenario = find(f"bedrock-converse/{slug}")
    audit = tmp_path / "audit.jsonl"
    with FaultServerThread(scenario.script) as upstream:
        direct = converse(upstream.base_url)
    with (
        FaultServerThread(scenario.script) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit)) as relay,
    ):
        relayed = converse(relay.base_url)
        record = the_record(audit)
    assert relayed[0] == direct[0]
    assert (relayed[1] is None) is (direct[1] is None) is (scenario.expected_edge is None)
    assert record["provider"] == "bedrock-converse"
    assert record["outcome"]["summary_key"] == summary
    assert record["relay"]["close"] == close
