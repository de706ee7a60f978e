"""Claude on Bedrock through the tap in one line: the real ``AnthropicBedrock`` and ``AsyncAnthropicBedrock``
(fake AWS credentials: the SDK signs with boto3, the fault server does not check) against the catalog's
``anthropic-bedrock`` scenarios, streaming (AWS event-stream framing) and not (``/invoke``)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.testing import FaultServer, FaultServerThread, Scenario, find
from tests.support.runs import validate_record

anthropic = pytest.importorskip("anthropic")
pytest.importorskip("boto3")  # AnthropicBedrock signs its requests with a boto3 session

BOUND_S = 20.0
MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"
CREDENTIALS = {"aws_access_key": "AKIDEXAMPLE", "aws_secret_key": "not-a-secret", "aws_region": "us-east-1"}
MESSAGES = [{"role": "user", "content": "hi"}]
SLUGS = (
    "clean-end",
    "cut-mid-message",
    "exception-after-output",
    "damaged-crc",
    "http-429-throttled",
    "stall",
    "whole/clean-end",
    "whole/truncated-body",
)
pytestmark = pytest.mark.anyio


def config_of(scenario: Scenario, records: list[Any]) -> StreamConfig:
    return StreamConfig(**scenario.config).replace(sinks=(records.append,))


def check(scenario: Scenario, error: BaseException | None, records: list[Any]) -> None:
    """One record, as the scenario expects; the SDK's exception leads to the same diagnosis."""
    (record,) = records
    validate_record(record)
    assert record["provider"] == "anthropic-bedrock"
    assert record["request"]["streaming"] is scenario.streaming
    assert scenario.expected_class is not None
    assert record["outcome"]["class"] == scenario.expected_class.value
    assert record["retry"]["verdict"] == scenario.expected_verdict.value  # type: ignore[union-attr]
    if scenario.expected_edge is None:
        assert error is None
    else:
        failure = streamfsm.failure_of(error)
        assert failure is not None, repr(error)
        assert failure.record["outcome"]["summary_key"] == record["outcome"]["summary_key"]


@pytest.mark.parametrize("slug", SLUGS)
async def test_async_bedrock_client_through_the_tap(slug: str) -> None:
    scenario = find(f"anthropic-bedrock/{slug}")
    records: list[Any] = []
    error: BaseException | None = None
    with anyio.fail_after(BOUND_S):
        async with FaultServer(scenario.script) as server:
            http = streamfsm.async_http_client(config=config_of(scenario, records))
            client = anthropic.AsyncAnthropicBedrock(
                **CREDENTIALS, base_url=server.base_url, max_retries=0, timeout=5.0, http_client=http
            )
            try:
                if scenario.streaming:
                    stream = await client.messages.create(
                        model=MODEL, max_tokens=64, messages=MESSAGES, stream=True
                    )
                    async for _ in stream:
                        pass
                else:
                    await client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
            except Exception as exc:
                error = exc
            finally:
                await client.close()
    check(scenario, error, records)


@pytest.mark.parametrize("slug", SLUGS)
def test_sync_bedrock_client_through_the_tap(slug: str) -> None:
    scenario = find(f"anthropic-bedrock/{slug}")
    records: list[Any] = []
    error: BaseException | None = None
    with FaultServerThread(scenario.script) as server:
        http = streamfsm.http_client(config=config_of(scenario, records))
        client = anthropic.AnthropicBedrock(
            **CREDENTIALS, base_url=server.base_url, max_retries=0, timeout=5.0, http_client=http
        )
        try:
            if scenario.streaming:
                for _ in client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES, stream=True):
                    pass
            else:
                client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
        except Exception as exc:
            error = exc
        finally:
            client.close()
    check(scenario, error, records)


@pytest.mark.parametrize("strict_eof", [None, False], ids=["default", "strict_eof=False"])
async def test_a_torn_last_message_fails_the_sdks_read_and_the_record_says_truncated(
    strict_eof: bool | None,
) -> None:
    """botocore's buffer keeps a torn message and the SDK's stream would just end: the tap fails its read
    there (unless ``strict_eof=False``); the record says truncated either way."""
    scenario = find("anthropic-bedrock/torn-last-message")
    records: list[Any] = []
    error: BaseException | None = None
    with anyio.fail_after(BOUND_S):
        async with FaultServer(scenario.script) as server:
            http = streamfsm.async_http_client(config=config_of(scenario, records), strict_eof=strict_eof)
            client = anthropic.AsyncAnthropicBedrock(
                **CREDENTIALS, base_url=server.base_url, max_retries=0, http_client=http
            )
            try:
                stream = await client.messages.create(
                    model=MODEL, max_tokens=64, messages=MESSAGES, stream=True
                )
                async for _ in stream:
                    pass
            except Exception as exc:
                error = exc
            finally:
                await client.close()
    (record,) = records
    assert record["outcome"]["summary_key"] == "mid_generation.eof_without_terminal"
    if strict_eof is False:
        assert error is None
    else:
        failure = streamfsm.failure_of(error) if error is not None else None
        assert failure is not None and failure.record is record


def test_without_botocore_the_tap_passes_bedrock_calls_untouched_and_says_so_once() -> None:
    """The tap never breaks a call: a format whose extra is missing is not read, with one warning."""
    script = (
        "import sys, warnings; sys.modules['botocore'] = None\n"
        "import httpx, streamfsm\n"
        "from streamfsm.testing import FaultServerThread, find\n"
        "records = []\n"
        "config = streamfsm.StreamConfig(sinks=(records.append,))\n"
        "with FaultServerThread(find('anthropic-bedrock/clean-end').script) as server:\n"
        "    client = streamfsm.http_client(http='httpx', config=config)\n"
        "    url = server.base_url + '/model/m/invoke-with-response-stream'\n"
        "    with warnings.catch_warnings(record=True) as said:\n"
        "        warnings.simplefilter('always')\n"
        "        codes = [client.post(url, json={}).status_code for _ in range(2)]\n"
        "print(*codes, len(records), len(said), 'streamfsm[bedrock]' in str(said[0].message))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["200", "200", "0", "1", "True"]


# A model named by its ARN (an inference profile, provisioned throughput): the SDKs send its "/" as %2F.
ARN_MODEL = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"


@pytest.mark.parametrize("slug", ["clean-end", "whole/clean-end"])
def test_a_model_named_by_its_arn_is_tapped_too(slug: str) -> None:
    """The tap matches the path httpx decodes (``%2F`` becomes ``/``): the model segment may hold a slash."""
    scenario = find(f"anthropic-bedrock/{slug}")
    records: list[Any] = []
    with FaultServerThread(scenario.script) as server:
        http = streamfsm.http_client(config=config_of(scenario, records))
        client = anthropic.AnthropicBedrock(
            **CREDENTIALS, base_url=server.base_url, max_retries=0, timeout=5.0, http_client=http
        )
        try:
            if scenario.streaming:
                for _ in client.messages.create(
                    model=ARN_MODEL, max_tokens=64, messages=MESSAGES, stream=True
                ):
                    pass
            else:
                client.messages.create(model=ARN_MODEL, max_tokens=64, messages=MESSAGES)
        finally:
            client.close()
    check(scenario, None, records)
