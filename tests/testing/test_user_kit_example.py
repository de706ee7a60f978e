"""The README's test-kit example, run for real: an agent author checks that their agent retries only what is
safe, over real sockets, against random faults in random streams of all four formats.

``my_agent`` is the code under test. ``faulty_streams`` draws a stream and cuts it somewhere (FIN, RST, or a
clean close without the terminal event); its oracle says from the delivered prefix alone whether a retry is
safe (nothing visible yet) or not. ``fault_provider`` (the streamfsm pytest plugin) serves each one.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import streamfsm
from streamfsm.testing import BODIES, find
from streamfsm.testing.pytest_plugin import FaultProvider
from streamfsm.testing.strategies import FaultyStream, faulty_streams

pytestmark = pytest.mark.anyio


async def my_agent(base_url: str, fmt: str) -> tuple[str, int]:
    """Stream once; retry automatically (once) only when the run record says it is safe."""
    attempts = 0
    while True:
        attempts += 1
        try:
            async with streamfsm.open_stream(fmt, base_url=base_url, json=BODIES[fmt]) as run:
                async for _ in run:
                    pass  # show text, start tools, ...
            return "done", attempts
        except streamfsm.StreamFailed as failure:
            if failure.diagnosis.verdict is not streamfsm.Verdict.SAFE_AUTO_RETRY or attempts == 2:
                return failure.diagnosis.verdict.value, attempts


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=faulty_streams())
async def test_my_agent_retries_only_what_is_safe(
    fault_provider: FaultProvider, stream: FaultyStream
) -> None:
    url = fault_provider.play(stream.scenario())
    outcome, attempts = await my_agent(url, stream.format)
    if stream.expected_class is streamfsm.FailureClass.COMPLETED:
        assert (outcome, attempts) == ("done", 1)
    elif stream.expected_verdict is streamfsm.Verdict.SAFE_AUTO_RETRY:
        assert attempts == 2  # it retried: nothing had reached the user yet
    else:
        assert attempts == 1  # text was already shown: never retried without asking


async def test_a_naive_agent_that_retries_every_network_error_is_caught(
    fault_provider: FaultProvider,
) -> None:
    """The same check catches the bug the seeds describe: retrying a stream that already showed text."""

    async def naive_agent(base_url: str, fmt: str) -> int:
        attempts = 0
        while attempts < 2:
            attempts += 1
            try:
                async with streamfsm.open_stream(fmt, base_url=base_url, json=BODIES[fmt]) as run:
                    async for _ in run:
                        pass
                break
            except streamfsm.StreamFailed:
                continue  # "it's just a network error"
        return attempts

    scenario = find("anthropic/text-then-fin")
    attempts = await naive_agent(fault_provider.play(scenario), "anthropic")
    assert scenario.expected_verdict is streamfsm.Verdict.USER_CONFIRMED_RETRY
    assert attempts == 2  # the naive agent replayed text the user had already seen
