"""The sync ``open_stream`` (``open_sync_stream``) over real sockets against the fault provider: every
streaming catalog scenario our own client plays ends as its expectation says, and its record says what the
async ``open_stream``'s says for the same scenario (state, edge, facts, counts), with the same agent role.

Left out: the scenarios whose agent cancels the run from outside (a sync run has no cancel scope) and the
formats whose extra is not installed.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm.runtime import Ids, StreamConfig, StreamFailed
from streamfsm.testing import End, FaultServerThread, Headers, Send, Status, catalog, text_stream
from streamfsm.testing._harness import BODIES, ScenarioRouter, _AgentError, _outcome, _Role, run_scenario
from streamfsm.testing._script import unused_port
from streamfsm.wire import adapter_for
from tests.support.runs import machine_walk_problems


def _playable(scenario: Any) -> bool:
    if not scenario.streaming or scenario.format not in BODIES or scenario.agent.cancel_on is not None:
        return False
    if scenario.meta.get("transport") == "websocket":  # a WebSocket's source is async only
        return False
    try:
        adapter_for(scenario.format)
    except ImportError:
        return False
    return True


SCENARIOS = [scenario for scenario in catalog() if _playable(scenario)]


@pytest.fixture(scope="module")
def server() -> Any:
    with FaultServerThread(ScenarioRouter(SCENARIOS)) as running:
        yield running


def _url(scenario: Any, base_url: str) -> str:
    if scenario.no_listener:
        return f"http://127.0.0.1:{unused_port()}"
    return f"{base_url}/scenario/{scenario.name.replace('/', '%2F')}"


def _play_sync(scenario: Any, base_url: str) -> Any:
    config = StreamConfig(sinks=()).replace(**scenario.config)
    ids = Ids(context={"scenario": scenario.name, "harness_path": "sync"})
    run = streamfsm.open_sync_stream(
        scenario.format,
        base_url=_url(scenario, base_url),
        json=BODIES[scenario.format],
        config=config,
        ids=ids,
    )
    role = _Role(scenario.agent, None)  # type: ignore[arg-type]  # no cancel scope: no cancel_on here
    started = time.monotonic()
    try:
        with run:
            for event in run:
                if role.on_event(run, event):  # type: ignore[arg-type]  # a run of the same interface
                    break
    except (StreamFailed, _AgentError):
        pass
    return _outcome(scenario, "sync", run.record, [], started, time.monotonic() - started, ())


def _said(record: Any) -> dict[str, Any]:
    """What the code decided: no times, ids or port, and not the counts a stall leaves to the clock."""
    said = {key: record[key] for key in ("outcome", "stream_events", "delta_keys", "tokens", "finish_reason")}
    said["transport"] = {k: v for k, v in record["transport"].items() if k not in ("bytes_received", "chain")}
    said["transport"].pop("response_headers", None)
    said["tools"], said["relay"] = record["tools"], record["relay"]
    said["abort"] = record["abort"] and {k: v for k, v in record["abort"].items() if k != "at_s"}
    said["watchdog"] = record["watchdog"]["fired"]
    said["events"] = [entry["event"] for entry in record["timeline"]["entries"]]
    if "stall" in record["ids"]["context"]["scenario"]:
        said["stream_events"] = {k: v for k, v in said["stream_events"].items() if k != "keepalive"}
        said["events"] = [event for event in said["events"] if event != "keepalive"]
    said["outcome"] = {k: v for k, v in said["outcome"].items() if k != "evidence"}
    return said


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def test_a_sync_run_ends_as_the_catalog_says_and_records_what_the_async_run_records(
    scenario: Any, server: Any
) -> None:
    outcome = _play_sync(scenario, server.base_url)
    assert outcome.matched, outcome.mismatch
    assert outcome.record is not None and not machine_walk_problems(outcome.record)
    played = anyio.run(lambda: run_scenario(scenario, base_url=server.base_url))
    assert played.matched, played.mismatch
    assert _said(outcome.record) == _said(played.record)


def test_the_scenarios_are_many_and_every_format_plays() -> None:
    assert len(SCENARIOS) > 200
    assert {scenario.format for scenario in SCENARIOS} >= {"openai-chat", "openai-responses", "anthropic"}


def test_a_sync_run_refuses_async_use_and_abort_from_another_thread_ends_a_stalled_read(server: Any) -> None:
    stall = next(s for s in SCENARIOS if s.name == "openai-chat/text-then-silent-stall")
    run = streamfsm.open_sync_stream(
        "openai-chat",
        base_url=_url(stall, server.base_url),
        json=BODIES["openai-chat"],
        config=StreamConfig(),
    )
    with pytest.raises(TypeError):
        run.__aiter__()
    timer = threading.Timer(0.3, run.abort, args=("enough",))
    with pytest.raises(StreamFailed) as failed, run:
        timer.start()
        for _ in run:
            pass
    timer.join(5)
    assert failed.value.diagnosis.edge.value == "local_abort"
    assert run.record is not None and run.record["abort"]["reason"] == "enough"


def test_the_sync_retrying_form_retries_sync_open_stream_runs() -> None:
    sse = (("content-type", "text/event-stream"),)
    answer = (Headers(200, sse), *(Send(frame) for frame in text_stream("openai-chat", ["Hel", "lo"])), End())
    scripts = [
        (Status(503, (("content-type", "application/json"),), b'{"error": {"message": "busy"}}'),),
        answer,
    ]
    served: list[Any] = []

    def router(request: Any) -> Any:
        served.append(request)
        return scripts[min(len(served), len(scripts)) - 1]

    records: list[Any] = []
    with FaultServerThread(router) as server:

        def open_attempt(ids: Ids) -> Any:
            return streamfsm.open_sync_stream(
                "openai-chat",
                base_url=server.base_url,
                json=BODIES["openai-chat"],
                config=StreamConfig(sinks=(records.append,)),
                ids=ids,
            )

        policy = streamfsm.RetryPolicy(3, 30, initial_delay_s=0.01, max_delay_s=0.02)
        with streamfsm.retrying(policy, open_attempt) as run:
            text = "".join(event.text for event in run if isinstance(event, streamfsm.TextDelta))
    assert text == "Hello" and len(served) == 2
    assert [record["outcome"]["edge"] for record in records] == ["http_error", None]
    assert records[1]["ids"]["previous_run_id"] == records[0]["ids"]["run_id"]
