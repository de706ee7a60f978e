"""``streamfsm relay --store URL``: every relayed run reaches the store, found afterwards by the request id
the client saw (``x-streamfsm-request-id``), with the same answer as from the relay's own audit log."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamfsm.cli._relay import build_relay
from streamfsm.runtime import read_records
from streamfsm.store import Store, StoreSink
from streamfsm.testing import End, FaultServerThread, Headers, Rst, Send, text_stream
from tests.support.cli import run_cli
from tests.support.relay import RelayThread

BODY = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True})


@pytest.mark.parametrize("cut", [False, True], ids=["completed", "cut"])
def test_a_relayed_run_is_found_in_the_store_by_its_request_id(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: bool
) -> None:
    frames = text_stream("openai-chat", ["Hel", "lo"])
    steps = (Headers(headers=(("content-type", "text/event-stream"),)), Send(frames[0]))
    steps += (Rst(),) if cut else (*(Send(f) for f in frames[1:]), End())
    audit = tmp_path / "audit.jsonl"
    with FaultServerThread(steps) as upstream:
        relay = build_relay({"upstream": upstream.base_url, "store": store_url, "audit_log": str(audit)})
        sink = relay.errors.sink  # the relay indexes its runs in the store its errors page queries
        assert isinstance(sink, StoreSink)
        with RelayThread(relay) as served:
            try:
                response = httpx.post(
                    served.base_url + "/v1/chat/completions",
                    content=BODY,
                    headers={"content-type": "application/json", "x-request-id": "client-req-17"},
                    timeout=10,
                )
                request_id = response.headers["x-streamfsm-request-id"]
            except httpx.RemoteProtocolError:  # the relay cut the response, as the upstream did
                request_id = "client-req-17"
            assert sink.flush(10)
    assert request_id == "client-req-17"  # the client's own plain id is the request id
    with Store.open(store_url) as store:
        [record] = store.by_request_id(request_id)
    assert (record.failure_class == "completed") is not cut
    assert (record["relay"]["close"] == "completed") is not cut
    code, from_store, _ = run_cli(capsys, "diagnose", "--store", store_url, "--request-id", request_id)
    assert code == 0
    code, from_log, _ = run_cli(capsys, "diagnose", str(audit), "--request-id", request_id)
    assert code == 0
    assert from_store == from_log
    assert "request id           client-req-17" in from_store
    sink.close()


def test_two_relays_writing_one_store_show_on_one_errors_page(store_url: str) -> None:
    """Two relays (on two hosts, as far as the store can tell) index into one store: either's errors page
    counts both relays' runs, and finds a stream sent through the other by its request id."""
    from tests.support.relay import relay_to

    frames = text_stream("openai-chat", ["Hel", "lo"])
    steps = (Headers(headers=(("content-type", "text/event-stream"),)), Send(frames[0]), Rst())
    headers = {"content-type": "application/json", "accept": "application/json"}
    with FaultServerThread(steps) as upstream:
        with (
            relay_to(upstream.base_url, store=store_url) as one,
            relay_to(upstream.base_url, store=store_url) as two,
        ):
            for served, rid in ((one, "via-one"), (two, "via-two"), (two, "via-two-again")):
                with contextlib.suppress(httpx.RemoteProtocolError):  # the relay cut it, as upstream did
                    httpx.post(
                        served.base_url + "/v1/chat/completions",
                        content=BODY,
                        headers={**headers, "x-request-id": rid},
                        timeout=10,
                    )
            for served in (one, two):
                assert served.relay.errors.sink.flush(10)
            page = httpx.get(one.base_url + "/admin/errors", headers=headers, timeout=10).json()
            found = httpx.get(
                one.base_url + "/admin/errors/search?q=via-two-again", headers=headers, timeout=10
            ).json()
    assert (page["runs"], page["failures"]) == (3, 3)
    assert page["groups"][0]["count"] == 3
    assert set(page["groups"][0]["sample_request_ids"]) == {"via-one", "via-two", "via-two-again"}
    assert [r["request_id"] for r in found["runs"]] == ["via-two-again"]


def test_a_lone_surrogate_from_a_client_or_a_provider_is_recorded_everywhere(
    store_url: str, tmp_path: Path
) -> None:
    """Through the relay over real sockets: a request whose model is ``"\\ud800"`` (a JSON escape) and a
    provider answer carrying one (its id and finish reason) leave their audit line, error-log line and store
    row, replaced and counted, and the runs around them are stored too."""
    clean = text_stream("openai-chat", ["Hel", "lo"])
    hostile = [f.replace(b'"id":"chatcmpl-', b'"id":"chatcmpl-\\ud800') for f in clean]
    hostile = [f.replace(b'"finish_reason":"stop"', b'"finish_reason":"st\\udfffop"') for f in hostile]
    sse = Headers(headers=(("content-type", "text/event-stream"),))

    def router(request: Any) -> Any:
        if request.header("x-answer") == "hostile":
            return (sse, *(Send(f) for f in hostile), End())
        if request.header("x-answer") == "cut":
            return (sse, Send(clean[0]), Send(clean[1]), Rst())
        return (sse, *(Send(f) for f in clean), End())

    audit, errors = tmp_path / "audit.jsonl", tmp_path / "errors.jsonl"
    sent = [
        ("before", "gpt-4o-mini", "clean"),
        ("client", "gpt-\\ud800-\\u0000", "cut"),  # the JSON escapes as the client sent them
        ("provider", "gpt-4o-mini", "hostile"),
        ("after", "gpt-4o-mini", "clean"),
    ]
    with FaultServerThread(router) as upstream:
        relay = build_relay(
            {
                "upstream": upstream.base_url,
                "store": store_url,
                "audit_log": str(audit),
                "error_log": str(errors),
            }
        )
        with RelayThread(relay) as served:
            for rid, model, answer in sent:
                body = (
                    '{"model": "'
                    + model
                    + '", "messages": [{"role": "user", "content": "hi"}], "stream": true}'
                )
                with contextlib.suppress(httpx.RemoteProtocolError):
                    httpx.post(
                        served.base_url + "/v1/chat/completions",
                        content=body.encode(),
                        headers={"content-type": "application/json", "x-request-id": rid, "x-answer": answer},
                        timeout=10,
                    )
            assert relay.errors.sink is not None and relay.errors.sink.flush(10)
    runs = [r.to_dict() for r in read_records(audit, on_problem=pytest.fail)]
    by_request = {r["ids"]["context"]["request_id"]: r for r in runs}
    assert set(by_request) == {rid for rid, _, _ in sent}
    assert by_request["client"]["model"] == "gpt-\ufffd-\ufffd"
    assert by_request["client"]["replaced_characters"] >= 2
    assert by_request["provider"]["ids"]["response_id"] == "chatcmpl-\ufffdB9MHDbslfkBeAs8l4bebGdFOJ6PeG"
    assert by_request["provider"]["replaced_characters"] >= 2
    assert "replaced_characters" not in by_request["before"]
    failed = [r["ids"]["context"]["request_id"] for r in read_records(errors, on_problem=pytest.fail)]
    assert "client" in failed
    with Store.open(store_url) as store:
        for rid, _, _ in sent:
            [record] = store.by_request_id(rid)
            assert record.to_dict() == by_request[rid]
