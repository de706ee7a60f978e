"""Issue 16: wire shapes from real providers' bug reports, over real loopback sockets, and what the run says.

Each test here failed before the fix it names; the catalog (``streamfsm harness``) plays most of the same
shapes for class, verdict and cause, and these tests check the words and the record besides.
"""

from __future__ import annotations

from typing import Any

import pytest
from runsupport import BODIES, consume, validate_record

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.testing import find
from streamfsm.testing._script import Scenario
from streamfsm.testing._server import FaultServer

pytestmark = pytest.mark.anyio


async def play(scenario: Scenario | str, config: StreamConfig | None = None) -> streamfsm.RunRecord:
    """Play a catalog scenario (or one written here) through open_stream; the record, checked."""
    if isinstance(scenario, str):
        scenario = find(scenario)
    fmt = scenario.format or "openai-chat"
    config = config or StreamConfig().replace(**scenario.config)
    async with FaultServer(scenario.script) as server:
        run = streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt], config=config)
        try:
            async with run:
                await consume(run)
        except StreamFailed:
            pass
    assert run.record is not None
    validate_record(run.record)
    return run.record


def words(record: Any) -> str:
    return f"{record['summary']['title']}. {record['summary']['detail']}"


# -- item 1: too large for the window is not a rate limit ----------------------------------------------------


@pytest.mark.parametrize(
    "name", ["openai-chat/http-429-request-too-large", "openai-chat/http-413-rate-limit-code"]
)
async def test_a_request_too_large_for_the_window_says_to_shorten_it(name: str) -> None:
    record = await play(name)
    assert record["outcome"]["summary_key"] == "provider_error.request_too_large"
    assert (record["retry"]["verdict"], record["retry"]["action"]) == ("no_retry", "fix_request")
    assert "shorten the request" in words(record)
    assert "waiting will not help" in words(record)
