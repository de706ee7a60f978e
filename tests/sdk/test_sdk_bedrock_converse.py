"""Bedrock ConverseStream through ``wrap()``: boto3's real ``bedrock-runtime`` client (fake AWS credentials,
``endpoint_url`` the fault server on loopback), its botocore ``EventStream`` driven through the machine. The
catalog's ``bedrock-converse`` scenarios: clean, cut mid-message and between messages, torn, stalled, an
exception message before and after output, a damaged CRC, and a 429 answered before the stream."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.testing import End, FaultServer, FaultServerThread, Headers, Scenario, Send, catalog
from streamfsm.testing._eventstream import EVENT_HEADERS, converse
from streamfsm.wire import encode_message
from tests.support.runs import validate_record

boto3 = pytest.importorskip("boto3")
botocore_config = pytest.importorskip("botocore.config")

MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"
MESSAGES = [{"role": "user", "content": [{"text": "hi"}]}]
STREAMING = [s for s in catalog("bedrock-converse") if s.streaming]


def client(base_url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="not-a-secret",
        config=botocore_config.Config(retries={"max_attempts": 1}, read_timeout=5, connect_timeout=5),
    )


@pytest.mark.parametrize("scenario", STREAMING, ids=[s.name for s in STREAMING])
def test_converse_stream_through_wrap(scenario: Scenario) -> None:
    """The call is made under the run (a 429 never makes a stream, so the format is named)."""
    records: list[Any] = []
    config = StreamConfig(**scenario.config).replace(sinks=(records.append,))
    events: list[Any] = []
    failure: StreamFailed | None = None
    with FaultServerThread(scenario.script) as server:
        bedrock = client(server.base_url)
        call = lambda: bedrock.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"]  # noqa: E731
        try:
            with streamfsm.wrap(call, provider="bedrock-converse", config=config) as run:
                events.extend(run)
        except StreamFailed as failed:
            failure = failed
    (record,) = records
    validate_record(record)
    assert record["provider"] == "bedrock-converse"
    assert scenario.expected_class is not None and scenario.expected_verdict is not None
    assert record["outcome"]["class"] == scenario.expected_class.value
    assert record["retry"]["verdict"] == scenario.expected_verdict.value
    assert (failure is None) is (scenario.expected_edge is None)
    if failure is not None:
        assert failure.diagnosis.edge is scenario.expected_edge
        assert failure.diagnosis.summary_key == record["outcome"]["summary_key"]
    else:
        assert any(type(e).__name__ == "TextDelta" for e in events)


def test_the_stream_object_itself_is_wrapped_too() -> None:
    scenario = next(s for s in STREAMING if s.name.endswith("/exception-after-output"))
    with FaultServerThread(scenario.script) as server:
        stream = client(server.base_url).converse_stream(modelId=MODEL, messages=MESSAGES)["stream"]
        with pytest.raises(StreamFailed) as failed, streamfsm.wrap(stream) as run:
            for _ in run:
                pass
    assert failed.value.diagnosis.summary_key == "provider_error.server_error"
    assert failed.value.record["provider"] == "bedrock-converse"  # told by the stream itself


def test_another_bedrock_event_stream_is_refused_in_plain_words() -> None:
    scenario = next(s for s in catalog("anthropic-bedrock") if s.name.endswith("/clean-end"))
    with FaultServerThread(scenario.script) as server:
        response = client(server.base_url).invoke_model_with_response_stream(modelId=MODEL, body=b"{}")
        with pytest.raises(ValueError, match="ConverseStream"):
            streamfsm.wrap(response["body"])


# botocore's own read timeout, far past the run's watchdogs: only the run can end the read in time.
SLOW_CLIENT_S = 30.0
WATCHDOG_BOUND_S = 10.0  # generous: the watchdog fires after 0.3 s


@pytest.mark.parametrize("how", ["idle_timeout", "abort"])
def test_a_stalled_botocore_read_is_interrupted_by_the_watchdog_and_by_abort(how: str) -> None:
    """The run shuts the urllib3 connection's socket under botocore's blocked read, as it does under an
    httpx read: the stall ends at the watchdog (or ``abort()``), not at botocore's read timeout."""
    scenario = next(s for s in STREAMING if s.name.endswith("/stall"))
    config = StreamConfig(**scenario.config) if how == "idle_timeout" else StreamConfig(idle_timeout=None)
    with FaultServerThread(scenario.script) as server:
        bedrock = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=server.base_url,
            aws_access_key_id="AKIDEXAMPLE",
            aws_secret_access_key="not-a-secret",
            config=botocore_config.Config(retries={"max_attempts": 1}, read_timeout=SLOW_CLIENT_S),
        )
        call = lambda: bedrock.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"]  # noqa: E731
        started = time.monotonic()
        with pytest.raises(StreamFailed) as failed, streamfsm.wrap(call, config=config) as run:
            if how == "abort":
                timer = threading.Timer(0.3, run.abort)
                timer.start()
            try:
                for _ in run:
                    pass
            finally:
                if how == "abort":
                    timer.cancel()
        took = time.monotonic() - started
    expected = "watchdog.idle_timeout" if how == "idle_timeout" else "local_abort.user"
    assert failed.value.diagnosis.summary_key == expected
    assert took < WATCHDOG_BOUND_S, f"the stall ended after {took:.1f} s, at botocore's read timeout"


def _cut_payload_stream() -> list[bytes]:
    """A whole ConverseStream but for one text delta whose JSON payload is cut short (its CRCs valid)."""
    frames = converse([("text", "Hello"), ("text", " world")], (5, 0, 2), None)
    headers = {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    frames[3] = encode_message(headers, b'{"contentBlockIndex":1,"delta":{"text":" wor')
    return frames


def test_a_delta_whose_payload_botocore_could_not_parse_is_no_whole_answer() -> None:
    """botocore reads a payload that is no JSON as an item without its fields (``{"contentBlockDelta": {}}``):
    the text it carried is lost, so the run must not be a whole answer (it was ``completed.finished``)."""
    script = [Headers(200, EVENT_HEADERS), *(Send(frame) for frame in _cut_payload_stream()), End()]
    with FaultServerThread(script) as server:
        bedrock = client(server.base_url)
        call = lambda: bedrock.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"]  # noqa: E731
        with pytest.raises(StreamFailed) as failed, streamfsm.wrap(call, provider="bedrock-converse") as run:
            for _ in run:
                pass
    assert failed.value.diagnosis.summary_key == "protocol_error.protocol_violation"


@pytest.mark.anyio
async def test_the_same_stream_read_from_its_bytes_is_no_whole_answer_either() -> None:
    script = [Headers(200, EVENT_HEADERS), *(Send(frame) for frame in _cut_payload_stream()), End()]
    async with FaultServer(script) as server:
        body = {"modelId": MODEL, "messages": MESSAGES}
        with pytest.raises(StreamFailed) as failed:
            async with streamfsm.open_stream("bedrock-converse", base_url=server.base_url, json=body) as run:
                async for _ in run:
                    pass
    assert failed.value.diagnosis.summary_key == "protocol_error.protocol_violation"
