"""OpenAI Responses over a WebSocket, through open_stream, against the fault server on 127.0.0.1.

Every WebSocket scenario of the catalog on both anyio backends (the record's diagnosis, where, whose fault and
whether a retry is safe, as the scenario says, and no prompt or output text in it); several responses on one
connection; the client message; where the close frame falls, as a property.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamfsm import FailureClass, StreamFailed, Trigger
from streamfsm.runtime import StreamConfig, open_stream
from streamfsm.runtime.drivers.websocket import WebSocketConnection, create_message, websocket_url
from streamfsm.testing import (
    BODIES,
    FaultServer,
    NextCreate,
    Scenario,
    ScenarioRouter,
    Send,
    Upgrade,
    WsClose,
    catalog,
    run_scenario,
    scenario_url,
    text_stream,
    unused_port,
)

WS_SCENARIOS = [s for s in catalog(["openai-responses"]) if s.meta.get("transport") == "websocket"]
PROMPT = "a prompt that must never reach a record"
OUTPUT = ("Hello", " world", ", again")
BOUND = 10.0


def _messages(parts: list[str]) -> list[bytes]:
    out = []
    for frame in text_stream("openai-responses", parts):
        data = [line[6:] for line in frame.splitlines() if line.startswith(b"data: ")]
        out += data
    return out


def _ws(server: FaultServer) -> str:
    return "ws" + server.base_url[len("http") :] + "/v1"


def _body() -> dict[str, Any]:
    return {"model": "gpt-test", "input": PROMPT}


def test_the_catalog_has_every_websocket_fault() -> None:
    slugs = {s.name.partition("/")[2] for s in WS_SCENARIOS}
    assert {
        "ws-clean-close",
        "ws-text-then-close-1000",
        "ws-text-then-close-without-code",
        "ws-text-then-fin",
        "ws-text-then-rst",
        "ws-text-then-stall",
        "ws-error-rate-limit",
        "ws-second-response",
    } <= slugs
    assert all(s.expects for s in WS_SCENARIOS)


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", WS_SCENARIOS, ids=[s.name for s in WS_SCENARIOS])
async def test_each_websocket_scenario_through_open_stream(scenario: Scenario) -> None:
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,))
    async with FaultServer(ScenarioRouter([scenario])) as server:
        outcome = await run_scenario(scenario, base_url=server.base_url, config=config, timeout=BOUND)
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None
    record = outcome.record.to_dict()
    assert record["outcome"]["class"] == scenario.expected_class.value  # type: ignore[union-attr]
    assert record["outcome"]["phase"] == scenario.expected_phase.value  # type: ignore[union-attr]
    assert record["retry"]["verdict"] == scenario.expected_verdict.value  # type: ignore[union-attr]
    edge = scenario.expected_edge
    assert record["outcome"]["edge"] == (edge.value if edge is not None else None)
    assert record["provider"] == "openai-responses"
    assert record["endpoint"].startswith("ws://"), record["endpoint"]
    # One record per run (a two-response scenario: two), and none holds the prompt or the output.
    assert len(records) == scenario.meta.get("responses", 1)
    async with FaultServer(ScenarioRouter([scenario])) as server:
        own = await _own_runs(scenario, scenario_url(server.base_url, scenario.name))
        assert own[-1].failure_class == record["outcome"]["class"]  # the last run is the one checked
        for each in own:
            dumped = each.to_json()
            assert PROMPT not in dumped
            assert (
                "Hello" not in dumped and ", again" not in dumped
            )  # the scenarios' output (" world": words)


async def _own_runs(scenario: Scenario, url: str) -> list[Any]:
    """``scenario`` through open_stream with a prompt of this test's: the records of its runs."""
    records: list[Any] = []
    config = StreamConfig(sinks=(records.append,)).replace(**scenario.config)
    ws = "ws" + url[len("http") :]
    if scenario.no_listener:
        ws = f"ws://127.0.0.1:{unused_port()}"
    with anyio.fail_after(BOUND):
        async with WebSocketConnection(websocket_url("openai-responses", ws)) as connection:
            for _ in range(scenario.meta.get("responses", 1)):  # type: ignore[call-overload]
                try:
                    async with open_stream(
                        "openai-responses", base_url=ws, json=_body(), client=connection, config=config
                    ) as run:
                        async for _ in run:
                            pass
                except StreamFailed:
                    pass
    return records


@pytest.mark.anyio
async def test_responses_one_after_another_on_one_connection() -> None:
    messages = _messages(list(OUTPUT))
    script = (Upgrade(), *map(Send, messages), NextCreate(), *map(Send, messages), NextCreate())
    script += (*map(Send, messages), WsClose(1000))
    async with FaultServer(script) as server:
        async with WebSocketConnection(websocket_url("openai-responses", _ws(server))) as connection:
            texts = []
            for turn in range(3):
                async with open_stream(
                    "openai-responses", base_url=_ws(server), json=_body(), client=connection
                ) as run:
                    async for _ in run.collect():
                        pass
                texts.append(run.result().text)
                assert run.diagnosis is not None
                assert run.diagnosis.failure_class is FailureClass.COMPLETED
                assert connection.usable or turn == 2  # the server closes after the third
        assert server.requests_seen == 1  # one upgrade, three responses
    assert texts == ["".join(OUTPUT)] * 3


@pytest.mark.anyio
async def test_a_response_left_half_read_closes_a_shared_connection() -> None:
    messages = _messages(list(OUTPUT))
    async with FaultServer((Upgrade(), *map(Send, messages[:-1]))) as server:
        async with WebSocketConnection(websocket_url("openai-responses", _ws(server))) as connection:
            with anyio.fail_after(BOUND):
                async with open_stream(
                    "openai-responses", base_url=_ws(server), json=_body(), client=connection
                ) as run:
                    async for _ in run:
                        break  # the consumer leaves before the terminal event
            assert run.diagnosis is not None and run.diagnosis.edge is Trigger.LOCAL_ABORT
            assert not connection.usable
            late = open_stream("openai-responses", base_url=_ws(server), json=_body(), client=connection)
            with pytest.raises(RuntimeError, match="left half read"):
                async with late:
                    pass


def test_the_client_message_is_the_create_body_without_the_transport_fields() -> None:
    body = {
        **BODIES["openai-responses"],
        "stream": True,
        "background": True,
        "previous_response_id": "resp_1",
    }
    sent = json.loads(create_message("openai-responses", body))
    assert sent["type"] == "response.create"
    assert "stream" not in sent and "background" not in sent
    assert sent["previous_response_id"] == "resp_1" and sent["model"] == body["model"]
    with pytest.raises(ValueError, match="not spoken over a WebSocket"):
        create_message("anthropic", body)
    with pytest.raises(ValueError, match="ws:// or wss://"):
        websocket_url("openai-responses", "http://127.0.0.1:1/v1")


MESSAGES = _messages(list(OUTPUT))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cut=st.integers(min_value=0, max_value=len(MESSAGES)),
    code=st.sampled_from([1000, 1001, 1011, 4000, None]),
)
def test_a_run_completes_exactly_when_its_terminal_event_came_before_the_close(
    anyio_backend: str, cut: int, code: int | None
) -> None:
    async def play() -> tuple[FailureClass, Trigger | None, list[str]]:
        async with FaultServer((Upgrade(), *map(Send, MESSAGES[:cut]), WsClose(code))) as server:
            run = open_stream("openai-responses", base_url=_ws(server), json=_body())
            with anyio.fail_after(BOUND):
                try:
                    async with run:
                        async for _ in run:
                            pass
                except StreamFailed:
                    pass
        assert run.diagnosis is not None and run.record is not None
        return run.diagnosis.failure_class, run.diagnosis.edge, list(run.record["outcome"]["evidence"])

    klass, edge, evidence = anyio.run(play, backend=anyio_backend)
    if cut == len(MESSAGES):
        assert klass is FailureClass.COMPLETED and edge is None
    else:
        assert edge is Trigger.EOF_WITHOUT_TERMINAL, (cut, code, klass)
        assert klass is not FailureClass.COMPLETED
        assert f"detail=websocket_close_{1005 if code is None else code}" in evidence  # the code, kept


def test_a_websocket_script_is_checked_like_any_other() -> None:
    from streamfsm.testing import Headers, ScriptError, check_script

    assert check_script((Upgrade(), Send(b"{}"), NextCreate(), Send(b"{}"), WsClose(None)))
    for wrong in (
        (NextCreate(),),  # no WebSocket yet
        (Headers(), WsClose(1000)),  # an HTTP body has no close frame
        (Upgrade(), WsClose(1000), Send(b"{}")),  # nothing is sent after the close frame
        (Upgrade(), Headers()),  # one response start
    ):
        with pytest.raises(ScriptError):
            check_script(wrong)
    with pytest.raises(ScriptError):
        WsClose(999)
    with pytest.raises(ScriptError):
        WsClose(None, "a reason needs a code")
