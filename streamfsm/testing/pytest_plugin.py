"""The streamfsm pytest plugin: a fault-injecting provider as a fixture.

Installed with streamfsm (entry point ``pytest11: streamfsm``), so any suite can ask for ``fault_provider``.
It is an async fixture for the anyio pytest plugin: mark the test ``@pytest.mark.anyio`` (it runs on
whichever ``anyio_backend`` the suite selects, asyncio or trio). The fixture yields a running
`FaultProvider`: one `FaultServer` on 127.0.0.1 that can play any number of scenarios at once, each under
its own base URL. Leaving the test stops it and closes every socket.

Pick a scenario from the catalog by name, or play one of your own (a `Scenario`, or a bare script)::

    import pytest
    import streamfsm
    from streamfsm.testing import Fin, Headers, Send, text_stream

    pytestmark = pytest.mark.anyio


    async def test_my_agent_keeps_partial_text(fault_provider):
        url = fault_provider.base_url_for("openai-chat/text-then-fin")    # catalog scenario
        with pytest.raises(streamfsm.StreamFailed) as failed:
            async with streamfsm.open_stream("openai-chat", base_url=url, json=BODY) as run:
                async for event in run:
                    ...
        assert failed.value.diagnosis.verdict is streamfsm.Verdict.USER_CONFIRMED_RETRY


    async def test_a_script_of_my_own(fault_provider):
        frames = text_stream("anthropic", ["Hi"])
        url = fault_provider.play((Headers(), Send(frames[0]), Fin()))  # any script
        ...


    async def test_the_harness_checks_it_for_me(fault_provider):
        outcome = await fault_provider.run("anthropic/tool-args-cut")    # played and compared
        assert outcome.matched, outcome.mismatch

The URLs work for SDK clients too (``openai.AsyncOpenAI(base_url=url, ...)``): the scenario is picked by the
path prefix, whatever path the client appends.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest

from ._harness import DEFAULT_TIMEOUT_S, Outcome, ScenarioRouter, http_client, run_scenario, scenario_url
from ._scenarios import find
from ._script import Scenario, Step
from ._server import FaultServer, RequestRecord

__all__ = ["FaultProvider", "fault_provider"]


class FaultProvider:
    """A running fault server that plays scenarios by name. Made by the ``fault_provider`` fixture."""

    def __init__(self, server: FaultServer, router: ScenarioRouter, client: httpx.AsyncClient) -> None:
        self.server = server
        self.client = client  # a no-keep-alive httpx client, for runs that want one
        self._router = router
        self._played = itertools.count()

    @property
    def base_url(self) -> str:
        """The server's root URL (no scenario chosen)."""
        return self.server.base_url

    @property
    def requests(self) -> list[RequestRecord]:
        """The requests the server received so far (bounded, secrets redacted)."""
        return self.server.requests

    def add(self, scenario: Scenario) -> Scenario:
        """Register ``scenario`` under its name (again is fine; another one under that name is not)."""
        self._router.add(scenario)
        return scenario

    def _resolve(self, scenario: str | Scenario) -> Scenario:
        if isinstance(scenario, Scenario):
            return self.add(scenario)
        return self.add(find(scenario))

    def base_url_for(self, scenario: str | Scenario) -> str:
        """The base URL that plays ``scenario`` (a catalog name or a `Scenario`): pass it to ``open_stream``
        or an SDK client. A ``no_listener`` scenario gets a port nobody listens on."""
        chosen = self._resolve(scenario)
        if chosen.no_listener:
            from ._script import unused_port

            return f"http://127.0.0.1:{unused_port()}"
        return scenario_url(self.base_url, chosen.name)

    def play(self, scenario: str | Scenario | Sequence[Step]) -> str:
        """Like `base_url_for`, and also takes a bare script (a sequence of steps) to play as it is."""
        if isinstance(scenario, (str, Scenario)):
            return self.base_url_for(scenario)
        return self.base_url_for(Scenario(f"play/{next(self._played)}", tuple(scenario)))

    async def run(
        self, scenario: str | Scenario, *, sdk: str | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> Outcome:
        """Play ``scenario`` through the runtime (or ``sdk`` and ``wrap()``) and compare it with its
        expectation: see `streamfsm.testing.run_scenario`."""
        chosen = self._resolve(scenario)
        return await run_scenario(
            chosen, base_url=self.base_url, sdk=sdk, client=self.client, timeout=timeout
        )


@pytest.fixture
async def fault_provider(anyio_backend: object) -> AsyncIterator[FaultProvider]:
    """A running fault provider on 127.0.0.1 (see `FaultProvider`); stopped, every socket closed, after the
    test. Needs the anyio pytest plugin (``@pytest.mark.anyio``)."""
    router = ScenarioRouter()
    async with FaultServer(router) as server, http_client() as client:
        yield FaultProvider(server, router, client)
