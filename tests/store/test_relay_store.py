"""``streamfsm relay --store URL``: every relayed run reaches the store, found afterwards by the request id
the client saw (``x-streamfsm-request-id``), with the same answer as from the relay's own audit log."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import httpx
import pytest
from relaysupport import RelayThread

from streamfsm.cli import main
from streamfsm.cli._relay import build_relay
from streamfsm.store import Store, StoreSink
from streamfsm.testing import End, Headers, Rst, Send, text_stream
from streamfsm.testing._server import FaultServerThread

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
    code, from_store, _ = _run(capsys, "diagnose", "--store", store_url, "--request-id", request_id)
    assert code == 0
    code, from_log, _ = _run(capsys, "diagnose", str(audit), "--request-id", request_id)
    assert code == 0
    assert from_store == from_log
    assert "request id           client-req-17" in from_store
    sink.close()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_two_relays_writing_one_store_show_on_one_errors_page(store_url: str) -> None:
    """Two relays (on two hosts, as far as the store can tell) index into one store: either's errors page
    counts both relays' runs, and finds a stream sent through the other by its request id."""
    from relaysupport import relay_to

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
