"""The relay passes OpenAI Responses' WebSocket mode through: each message unchanged, one record per response.

The real uvicorn server runs the relay on 127.0.0.1 in front of the fault server; the client is a real
WebSocket client (``websockets``' own, not ours), so the relay is seen as any Agents SDK or Codex sees it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamfsm.testing import FaultServerThread, Fin, NextCreate, Send, Upgrade, WsClose, text_stream
from tests.support.relay import relay_to, wait_lines

websockets_client = pytest.importorskip("websockets.sync.client", reason="the websocket extra")
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402

PROMPT = "a prompt the records never hold"
TEXT = ("Bonjour", " le monde")


def _messages() -> list[bytes]:
    out = []
    for frame in text_stream("openai-responses", list(TEXT)):
        out += [line[6:] for line in frame.splitlines() if line.startswith(b"data: ")]
    return out


def _create() -> str:
    return json.dumps({"type": "response.create", "model": "gpt-test", "input": PROMPT})


def test_two_responses_and_a_cut_one_pass_through_byte_exact_one_record_each(tmp_path: Path) -> None:
    messages = _messages()
    cut = messages[: len(messages) // 2 + 1]
    script = (
        Upgrade(),
        *map(Send, messages),
        NextCreate(),
        *map(Send, messages),
        NextCreate(),
        *map(Send, cut),
    )
    script += (Fin(),)
    audit = tmp_path / "audit.jsonl"
    with (
        FaultServerThread(script) as upstream,
        relay_to(upstream.base_url + "/v1", audit_log=str(audit)) as relay,
    ):
        url = "ws" + relay.base_url[len("http") :] + "/v1/responses"
        got: list[list[str]] = []
        with websockets_client.connect(url, additional_headers={"Authorization": "Bearer sk-secret"}) as ws:
            for turn in range(3):
                ws.send(_create())
                seen: list[str] = []
                try:
                    while True:
                        message = ws.recv(timeout=5)
                        assert isinstance(message, str)
                        seen.append(message)
                        if json.loads(message)["type"] in ("response.completed", "response.failed"):
                            break
                except ConnectionClosed:
                    assert turn == 2
                got.append(seen)
        records = wait_lines(audit, 3)
    # Byte-exact: every message the upstream sent, as it sent it.
    assert got[0] == got[1] == [m.decode() for m in messages]
    assert got[2] == [m.decode() for m in cut]
    first, second, third = records
    for record in (first, second):
        assert record["outcome"]["class"] == "completed"
        assert record["endpoint"].startswith("ws://") and record["provider"] == "openai-responses"
        assert record["relay"]["terminal_sent"] is True and record["relay"]["close"] == "completed"
        assert record["relay"]["events_sent"] == len(messages)
        assert record["relay"]["last_event_sent"] == "response.completed"
    assert third["outcome"]["class"] == "mid_generation"
    assert third["outcome"]["edge"] == "disconnected" and third["outcome"]["cause"] == "closed_mid_body"
    assert third["retry"]["verdict"] == "user_confirmed_retry"
    assert third["relay"]["close"] == "upstream_premature_close" and third["relay"]["terminal_sent"] is False
    dumped = audit.read_text()
    assert PROMPT not in dumped and "Bonjour" not in dumped and "sk-secret" not in dumped


def test_a_websocket_on_another_path_is_refused(tmp_path: Path) -> None:
    with FaultServerThread((Upgrade(), WsClose(1000))) as upstream, relay_to(upstream.base_url) as relay:
        url = "ws" + relay.base_url[len("http") :] + "/v1/chat/completions"
        with pytest.raises(InvalidStatus):
            websockets_client.connect(url, open_timeout=5)


def test_a_client_that_leaves_mid_response_is_its_abort(tmp_path: Path) -> None:
    messages = _messages()
    audit = tmp_path / "audit.jsonl"
    with (
        FaultServerThread((Upgrade(), *map(Send, messages[:6]))) as upstream,  # then the upstream holds on
        relay_to(upstream.base_url, audit_log=str(audit)) as relay,
    ):
        url = "ws" + relay.base_url[len("http") :] + "/v1/responses"
        with websockets_client.connect(url) as ws:
            ws.send(_create())
            for _ in range(6):
                ws.recv(timeout=5)
        (record,) = wait_lines(audit, 1)
    assert record["outcome"]["class"] == "local_abort"
    assert record["relay"]["close"] == "client_abort" and record["relay"]["events_sent"] == 6
    assert PROMPT not in audit.read_text()
