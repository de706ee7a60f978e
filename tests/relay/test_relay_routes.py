"""The relay's route table over real sockets: the real uvicorn server on 127.0.0.1, a fault server per route
(so what each route was asked is its own request log), the real openai SDK as the client.

A model whose first route fails before the first byte reaches the client (503, quota, silence) is answered
by the next route as one clean stream; a route that fails after bytes reached the client is never replayed;
a route's circuit breaker opens across client calls, keeps the relay off it, probes it after the cool-down
and closes; ``/admin/metrics`` and the errors page show it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamfsm import RunRecord
from streamfsm.relay._table import RouteTable
from streamfsm.testing import (
    End,
    FaultServerThread,
    Fin,
    Headers,
    Request,
    Rst,
    Send,
    Stall,
    Status,
    text_stream,
)
from tests.support.cdp import Browser, chromium
from tests.support.relay import relay_to, run_lines, wait_lines
from tests.support.runs import BODIES, validate_record

openai = pytest.importorskip("openai")

CLIENT_KEY = "sk-client-own-key-0123456789abcdef"
KEYS = {"KEY_A": "sk-route-a-SECRET-0123456789", "KEY_B": "sk-route-b-SECRET-9876543210"}
JSON = ("content-type", "application/json")
BUSY = (Status(503, (JSON,), b'{"error": {"type": "server_error", "message": "busy"}}'),)
QUOTA = (Status(429, (JSON,), b'{"error": {"type": "insufficient_quota", "code": "insufficient_quota"}}'),)
SILENT = (Stall(),)  # takes the request, says nothing
LATE = (Headers(), Stall())  # a 200, then no first token
COOL_DOWN_S = 1.5  # longer than a few calls through the SDK take


def ok(text: str) -> tuple[Any, ...]:
    return (Headers(), *(Send(frame) for frame in text_stream("openai-chat", [text, " there"])), End())


class Upstream:
    """A fault server whose script can change, and which keeps the key each request carried."""

    def __init__(self, script: tuple[Any, ...]) -> None:
        self.script = script
        self.keys: list[str | None] = []
        self.models: list[object] = []
        self._lock = threading.Lock()
        self.server = FaultServerThread(self._route)

    def _route(self, request: Request) -> tuple[Any, ...]:
        with self._lock:
            self.keys.append(request.header("authorization"))
            self.models.append(json.loads(request.body).get("model"))
            return self.script

    @property
    def asked(self) -> int:
        return self.server.requests_seen


@contextmanager
def upstreams(*scripts: tuple[Any, ...]) -> Iterator[list[Upstream]]:
    servers = [Upstream(script) for script in scripts]
    for server in servers:
        server.server.__enter__()
    try:
        yield servers
    finally:
        for server in servers:
            server.server.__exit__(None, None, None)


def table(a: Upstream, b: Upstream, cool_down_s: float = COOL_DOWN_S, **first: Any) -> RouteTable:
    data = {
        "routes": {
            "a": {"upstream": a.server.base_url, "key_env": "KEY_A", "tries": 1, **first},
            "b": {"upstream": b.server.base_url, "key_env": "KEY_B", "model": "gpt-b"},
        },
        "models": {"gpt-test": ["a", "b"]},
        "breakers": {"threshold": 2, "cool_down_s": cool_down_s, "min_spacing_s": 0},
        "total_s": 10,
    }
    return RouteTable.from_dict(data, environ=KEYS)


def chat(base_url: str) -> tuple[str, BaseException | None]:
    """One streaming call through the openai SDK: the text it got, and what it raised."""
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=CLIENT_KEY, max_retries=0, timeout=10.0)
    got = ""
    try:
        for chunk in client.chat.completions.create(
            **{**BODIES["openai-chat"], "model": "gpt-test"}, stream=True
        ):
            got += "".join(choice.delta.content or "" for choice in chunk.choices)
    except Exception as exc:
        return got, exc
    finally:
        client.close()
    return got, None


def records(audit: Path, count: int) -> list[dict[str, Any]]:
    found = sorted(wait_lines(audit, count, timeout=5.0), key=lambda r: r["ids"]["attempt"])
    for record in found:
        validate_record(RunRecord.from_dict(record))  # type: ignore[arg-type]
    return found


@pytest.mark.parametrize(
    ("first", "options"),
    [(BUSY, {}), (QUOTA, {}), (SILENT, {"first_token_s": 0.3}), (LATE, {"first_token_s": 0.3})],
    ids=["503", "quota", "silent", "headers-then-silent"],
)
def test_a_first_route_that_fails_before_the_first_byte_falls_back(
    tmp_path: Path, first: tuple[Any, ...], options: dict[str, Any]
) -> None:
    audit = tmp_path / "audit.jsonl"
    with (
        upstreams(first, ok("B")) as (a, b),
        relay_to(a.server.base_url, routes=table(a, b, **options), audit_log=str(audit)) as relay,
    ):
        text, raised = chat(relay.base_url)
        failed, answered = records(audit, 2)
    assert raised is None and text == "B there", "one clean stream, from the second route"
    assert (a.asked, b.asked) == (1, 1)
    assert a.keys == [f"Bearer {KEYS['KEY_A']}"] and b.keys == [f"Bearer {KEYS['KEY_B']}"]
    assert a.models == ["gpt-test"] and b.models == ["gpt-b"], "the second route's own model name"
    assert failed["route"] == {"name": "a", "breaker": "closed", "tried": []}
    assert failed["outcome"]["class"] != "completed" and failed["relay"]["bytes_written"] == 0
    assert answered["outcome"]["class"] == "completed" and answered["relay"]["close"] == "completed"
    assert answered["route"] == {"name": "b", "breaker": "closed", "tried": ["a"]}
    assert answered["ids"]["trace_id"] == failed["ids"]["trace_id"]
    (link,) = answered["attempts"]
    assert (link["run_id"], link["route"], link["delay_reason"]) == (
        failed["ids"]["run_id"],
        "a",
        "next_route",
    )
    text = audit.read_text()
    assert not any(key in text for key in (*KEYS.values(), CLIENT_KEY)), "no key in any record"


def test_a_route_that_fails_after_bytes_reached_the_client_is_not_replayed(tmp_path: Path) -> None:
    frames = text_stream("openai-chat", ["Half"])
    broken = (Headers(), Send(frames[0]), Send(frames[1]), Fin())  # a delta, then the connection ends
    audit = tmp_path / "audit.jsonl"
    with (
        upstreams(broken, ok("B")) as (a, b),
        relay_to(a.server.base_url, routes=table(a, b), audit_log=str(audit)) as relay,
    ):
        text, raised = chat(relay.base_url)
        (record,) = records(audit, 1)
    assert text == "Half" and raised is not None, "the client heard the failure, in the format's error event"
    assert "streamfsm relay: the upstream stream failed" in str(raised)
    assert (a.asked, b.asked) == (1, 0), "never replayed behind the client's back"
    assert record["route"] == {"name": "a", "breaker": "closed", "tried": []}
    assert record["relay"]["error_sent"] == "relay" and record["relay"]["bytes_written"] > 0


WHOLE = json.dumps(
    {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()


def test_a_non_streaming_answer_cut_before_its_end_falls_back(tmp_path: Path) -> None:
    """The relay passes a non-streaming answer on only once whole: one the route cuts never reached the
    client, so the next route answers it."""
    cut = (Headers(headers=(JSON,)), Send(WHOLE[:40]), Rst())
    audit = tmp_path / "audit.jsonl"
    with (
        upstreams(cut, (Headers(headers=(JSON,)), Send(WHOLE), End())) as (a, b),
        relay_to(a.server.base_url, routes=table(a, b), audit_log=str(audit)) as relay,
    ):
        client = openai.OpenAI(
            base_url=f"{relay.base_url}/v1", api_key=CLIENT_KEY, max_retries=0, timeout=10.0
        )
        try:
            answer = client.chat.completions.create(**{**BODIES["openai-chat"], "model": "gpt-test"})
        finally:
            client.close()
        failed, answered = records(audit, 2)
    assert answer.choices[0].message.content == "B"
    assert (a.asked, b.asked) == (1, 1)
    assert failed["relay"]["bytes_written"] == 0 and answered["route"]["tried"] == ["a"]


def metric(text: str, name: str, **labels: str) -> float | None:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} "):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_breaker_opens_keeps_the_relay_off_a_down_route_probes_and_closes(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with (
        upstreams(BUSY, ok("B")) as (a, b),
        relay_to(a.server.base_url, routes=table(a, b), audit_log=str(audit)) as relay,
    ):
        for _ in range(2):
            assert chat(relay.base_url) == ("B there", None)
        opened = time.monotonic()
        for _ in range(2):
            assert chat(relay.base_url) == ("B there", None)
        assert (a.asked, b.asked) == (2, 4), "two failures opened a's breaker: the relay stopped asking it"
        metrics = httpx.get(relay.base_url + "/admin/metrics").text
        assert metric(metrics, "streamfsm_relay_route_breaker_state", route="a", state="open") == 1.0
        assert metric(metrics, "streamfsm_relay_route_breaker_state", route="b", state="closed") == 1.0
        assert metric(metrics, "streamfsm_relay_route_breaker_transitions_total", route="a", to="open") == 1.0
        assert metric(metrics, "streamfsm_relay_route_fallbacks_total", from_route="a", to_route="b") == 2.0
        a.script = ok("A")  # the upstream is back
        time.sleep(max(0.0, COOL_DOWN_S + 0.05 - (time.monotonic() - opened)))
        assert chat(relay.base_url) == ("A there", None), "the probe"
        assert chat(relay.base_url) == ("A there", None), "closed again"
        assert (a.asked, b.asked) == (4, 4)
        metrics = httpx.get(relay.base_url + "/admin/metrics").text
        assert metric(metrics, "streamfsm_relay_route_breaker_state", route="a", state="closed") == 1.0
        for to in ("open", "half_open", "closed"):
            assert metric(metrics, "streamfsm_relay_route_breaker_transitions_total", route="a", to=to) == 1.0
        found = records(audit, 2 * 2 + 2 + 2)
    probe, after = (r for r in found if r["route"]["name"] == "a" and r["outcome"]["class"] == "completed")
    assert probe["route"]["breaker"] == "half_open" and after["route"]["breaker"] == "closed"
    straight = [r for r in found if r["route"]["name"] == "b" and r["ids"]["attempt"] == 1]
    assert len(straight) == 2, "while a's breaker was open, requests went straight to b"
    assert sum(r["outcome"]["class"] == "completed" for r in found) == 6, "failed attempts are not answers"


def test_with_every_breaker_open_the_relay_answers_503_and_asks_no_one(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with (
        upstreams(BUSY, BUSY) as (a, b),
        relay_to(a.server.base_url, routes=table(a, b), audit_log=str(audit)) as relay,
    ):
        for _ in range(2):
            _, raised = chat(relay.base_url)
            assert isinstance(raised, openai.InternalServerError)  # b's own 503, passed on
        asked = (a.asked, b.asked)
        refused = httpx.post(
            relay.base_url + "/v1/chat/completions",
            json={**BODIES["openai-chat"], "model": "gpt-test", "stream": True},
        )
        assert (a.asked, b.asked) == asked == (2, 2)
    assert refused.status_code == 503 and 1 <= int(refused.headers["retry-after"]) <= 2
    assert "no route's circuit breaker lets it in" in refused.json()["error"]["message"]
    last = [r for r in run_lines(audit) if r["relay"]["close"] == "overloaded"]
    assert len(last) == 1 and last[0]["relay"]["limit"] == "circuit_breaker"
    validate_record(RunRecord.from_dict(last[0]))  # type: ignore[arg-type]


def test_a_person_sees_the_open_breaker_and_the_fallbacks_on_the_errors_page(tmp_path: Path) -> None:
    executable = chromium()
    assert executable is not None, "the page tests need chromium on PATH"
    audit = tmp_path / "audit.jsonl"
    with (
        upstreams(BUSY, ok("B")) as (a, b),
        relay_to(a.server.base_url, routes=table(a, b, cool_down_s=60), audit_log=str(audit)) as relay,
    ):
        for _ in range(2):
            assert chat(relay.base_url) == ("B there", None)
        data = httpx.get(relay.base_url + "/admin/errors", headers={"accept": "application/json"}).json()
        answered = records(audit, 4)[-1]  # a, b for each call
        with Browser(executable) as browser:
            page = browser.page()
            page.goto(relay.base_url + "/admin/errors")
            heading = page.js("document.querySelector('#routes').innerText")
            row = page.js(
                "(() => { const r = document.querySelector('tr[data-route=a]');"
                " const box = r.getBoundingClientRect();"
                " return {text: r.innerText, visible: box.height > 0 && box.top < innerHeight}; })()"
            )
            page.goto(f"{relay.base_url}/admin/errors/runs/{answered['ids']['run_id']}")
            facts = page.js("document.querySelector('table.facts').innerText")
    assert [(r["name"], r["breaker"], r["fallbacks"]) for r in data["routes"]] == [
        ("a", "open", {"b": 2}),
        ("b", "closed", {}),
    ]
    assert heading == "Routes: 1 circuit breaker not closed, 2 fallbacks"
    assert "OPEN" in row["text"] and "2 to b" in row["text"] and row["visible"]
    # The answering run's page names its route and the routes tried before it.
    assert "upstream route\tb (breaker closed)" in facts
    assert "routes tried before\ta" in facts
    assert "earlier attempts\t1: a, provider_error.server_error, auto_retry" in facts
