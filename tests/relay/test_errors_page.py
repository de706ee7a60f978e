"""The errors page: in headless Chromium (the distribution's package, offline) what a person sees matches
``streamfsm report --json`` on the same log; its run pages draw the machine; the admin token guards it; and
``streamfsm report --html`` writes the same page as one file."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from cdp import Browser, chromium
from relaysupport import relay_to, wait_lines
from runsupport import BODIES, cut_through

from streamfsm import StreamConfig
from streamfsm.relay import Relay, RelayConfig
from streamfsm.runtime import TextDelta
from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Fin, Headers, Send, Stall, Status
from streamfsm.testing._server import FaultServerThread

TOKEN = "admin-token-for-the-page-test-0123"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "relay-errors-page.png"

# Edge labels (white-stroked text) whose box meets a state's box (a rounded rect): hidden under it.
LABELS_UNDER_NODES = """[...document.querySelectorAll('svg')].flatMap(svg => {
  const boxes = [...svg.querySelectorAll('rect[rx]')].map(r => r.getBBox());
  return [...svg.querySelectorAll('text[stroke]')].filter(t => { const b = t.getBBox();
    return boxes.some(r => b.x < r.x + r.width && r.x < b.x + b.width && b.y < r.y + r.height
      && r.y < b.y + b.height); }).map(t => t.textContent); })"""

needs_chromium = pytest.mark.skipif(
    chromium() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium)",
)


def route(request: Any) -> Any:
    """One upstream failure per path (the SDK-less client names it in the path's last part)."""
    fmt = "openai-chat"
    frames = text_stream(fmt, ["a", "b", "c"], reasoning=["r"])
    cut = tuple(Send(f) for f in cut_through(fmt, frames, TextDelta))
    if request.path.endswith("/fin/chat/completions"):
        return (Headers(), *cut, Fin())
    if request.path.endswith("/stall/chat/completions"):
        return (Headers(), *cut, Stall())
    if request.path.endswith("/busy/chat/completions"):
        return (Status(429, headers=(("content-type", "application/json"),), body=b'{"error":{}}'),)
    return (Headers(), *(Send(f) for f in frames), End())


def fill(base_url: str) -> None:
    """Failures of three signatures (two of one), and a clean run."""
    body = {**BODIES["openai-chat"], "stream": True}
    for kind, rid in (("fin", "rid-a"), ("fin", "rid-b"), ("stall", "rid-c"), ("busy", "rid-d"), ("ok", "")):
        headers = {"authorization": "Bearer sk-page-test", **({"x-request-id": rid} if rid else {})}
        with contextlib.suppress(httpx.HTTPError):  # the broken ones are cut
            httpx.post(f"{base_url}/v1/{kind}/chat/completions", json=body, headers=headers, timeout=20)


def report_json(log: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "streamfsm", "report", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


@pytest.fixture
def filled(tmp_path: Path) -> Any:
    log = tmp_path / "errors.jsonl"
    stream = StreamConfig(idle_timeout=0.4)
    with (
        FaultServerThread(route) as upstream,
        relay_to(upstream.base_url, error_log=str(log), admin_token=TOKEN, stream=stream) as relay,
    ):
        fill(relay.base_url)
        wait_lines(log, 4)
        yield relay, log


def test_the_json_page_groups_as_report_does(filled: Any) -> None:
    relay, log = filled
    page = httpx.get(
        relay.base_url + "/admin/errors",
        headers={"authorization": f"Bearer {TOKEN}", "accept": "application/json"},
    ).json()
    report = report_json(log)
    assert len(page["groups"]) == len(report["groups"]) == 3
    strip = ("sample_request_ids",)
    assert [{k: v for k, v in g.items() if k not in strip} for g in page["groups"]] == report["groups"]
    assert (page["runs"], page["failures"]) == (report["runs"], report["failures"]) == (4, 4)
    fin = page["groups"][0]
    assert fin["count"] == 2
    assert set(fin["sample_request_ids"]) == {"rid-a", "rid-b"}


@needs_chromium
def test_a_person_sees_the_groups_and_a_run_page_offline(filled: Any, tmp_path: Path) -> None:
    relay, log = filled
    report = report_json(log)
    executable = chromium()
    assert executable is not None
    with Browser(executable) as browser:
        page = browser.page()
        page.goto(relay.base_url + "/admin/errors")  # no token: the sign-in form, not the errors
        assert "admin token required" in page.js("document.body.innerText")
        assert page.js("document.querySelector('#groups')") is None
        page.headers({"Authorization": f"Bearer {TOKEN}"})
        page.goto(relay.base_url + "/admin/errors")
        assert page.js("document.querySelector('#summary').innerText") == (
            f"4 failed of 4 runs in {log}: 3 signatures"
        )
        rows = page.js(
            "[...document.querySelectorAll('tr.group')].map(r => ({"
            " count: +r.cells[0].innerText, title: r.cells[1].innerText,"
            " key: r.dataset.summaryKey,"
            " visible: r.getBoundingClientRect().height > 0 && getComputedStyle(r).visibility === 'visible',"
            " samples: [...r.querySelectorAll('a.sample')].map(a => a.innerText)}))"
        )
        assert [(r["count"], r["title"], r["key"]) for r in rows] == [
            (g["count"], g["title"], g["key"]["summary_key"]) for g in report["groups"]
        ]
        assert all(r["visible"] for r in rows)
        assert any("rid-a" in s for s in rows[0]["samples"])
        # a run page: the plain summary, the verdict, the machine with the failing state marked
        href = page.js("document.querySelector('tr.group a.sample').href")
        page.goto(href)
        seen = page.js(
            "({title: document.querySelector('h2.title').innerText,"
            " verdict: document.querySelector('.verdict').innerText,"
            " svg: document.querySelector('figure.diagram svg').getBoundingClientRect().width,"
            " failedHere: [...document.querySelectorAll('svg text')]"
            "   .some(t => t.textContent === 'failed here'),"
            " facts: document.querySelector('table.facts').innerText,"
            " timeline: document.querySelectorAll('table.timeline tr').length})"
        )
        assert seen["title"] == report["groups"][0]["title"]
        assert seen["verdict"].startswith("verdict: ")
        assert seen["svg"] > 600
        assert seen["failedHere"] is True
        assert "upstream_premature_close" in seen["facts"]
        assert seen["timeline"] > 3
        assert page.js(LABELS_UNDER_NODES) == []
        shot = page.screenshot()
        assert shot.startswith(b"\x89PNG")
        (tmp_path / "run.png").write_bytes(shot)
        if os.environ.get("STREAMFSM_WRITE_DOCS") == "1":
            SCREENSHOT.write_bytes(shot)
        # nothing but the relay was asked for
        asked = [url for url in page.requested() if not url.startswith(("data:", "about:"))]
        assert asked and all(url.startswith(relay.base_url) for url in asked), asked


@needs_chromium
def test_report_html_is_the_same_page_in_one_file(filled: Any, tmp_path: Path) -> None:
    _, log = filled
    out = tmp_path / "errors.html"
    subprocess.run(
        [sys.executable, "-m", "streamfsm", "report", str(log), "--html", str(out)], timeout=60, check=True
    )
    report = report_json(log)
    executable = chromium()
    assert executable is not None
    with Browser(executable) as browser:
        page = browser.page()
        page.goto(out.as_uri())
        rows = page.js("[...document.querySelectorAll('tr.group')].map(r => +r.cells[0].innerText)")
        assert rows == [g["count"] for g in report["groups"]]
        sections = page.js("document.querySelectorAll('section.run svg').length")
        assert sections == sum(len(g["sample_run_ids"]) for g in report["groups"])
        assert page.js(LABELS_UNDER_NODES) == []
        assert [u for u in page.requested() if not u.startswith(("file:", "data:"))] == []


def test_the_docs_screenshot_is_checked_in() -> None:
    assert SCREENSHOT.read_bytes().startswith(b"\x89PNG")


# -- the admin token ----------------------------------------------------------------------------------------


def test_a_wrong_or_missing_token_is_refused(filled: Any) -> None:
    relay, _ = filled
    url = relay.base_url + "/admin/errors"
    json_accept = {"accept": "application/json"}
    assert httpx.get(url, headers=json_accept).status_code == 401
    wrong = httpx.get(url, headers={**json_accept, "authorization": f"Bearer {TOKEN}x"})
    assert (wrong.status_code, wrong.json()["error"]["message"]) == (401, "wrong admin token")
    assert httpx.get(url).headers["www-authenticate"] == "Bearer"
    assert (
        httpx.get(
            relay.base_url + "/admin/errors/runs/nope", headers={"authorization": f"Bearer {TOKEN}"}
        ).status_code
        == 404
    )
    # a browser signs in with the token once; the cookie it gets is not the token
    with httpx.Client(base_url=relay.base_url) as client:
        signed = client.post("/admin/login", data={"token": TOKEN})
        assert signed.status_code == 303
        assert TOKEN not in signed.headers["set-cookie"]
        assert client.get("/admin/errors").status_code == 200
        assert client.post("/admin/login", data={"token": "nope"}).status_code == 401


def asgi_get(
    app: Relay, server_host: str, headers: list[tuple[bytes, bytes]], client_host: str = "127.0.0.1"
) -> int:
    """Call the app directly with a scope saying where it listens and who asks (no socket beyond loopback
    needed)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/admin/errors",
        "raw_path": b"/admin/errors",
        "query_string": b"",
        "headers": headers,
        "server": (server_host, 8787),
        "client": (client_host, 50000),
    }
    anyio.run(app, scope, receive, send)
    status: int = sent[0]["status"]
    return status


def test_without_a_token_admin_pages_are_served_on_loopback_only() -> None:
    open_app = Relay(RelayConfig(upstream="http://127.0.0.1:9"))
    assert asgi_get(open_app, "127.0.0.1", []) == 200
    assert asgi_get(open_app, "::1", []) == 200
    assert asgi_get(open_app, "10.1.2.3", []) == 403
    assert asgi_get(open_app, "0.0.0.0", []) == 403
    # A reverse proxy on this host makes every client look local: the client's address, and no proxy.
    assert asgi_get(open_app, "127.0.0.1", [], client_host="10.1.2.3") == 403
    assert asgi_get(open_app, "127.0.0.1", [(b"x-forwarded-for", b"203.0.113.9")]) == 403
    guarded = Relay(RelayConfig(upstream="http://127.0.0.1:9", admin_token=TOKEN))
    assert asgi_get(guarded, "10.1.2.3", [(b"authorization", f"Bearer {TOKEN}".encode())]) == 200
    assert asgi_get(guarded, "127.0.0.1", []) == 401


# -- the command --------------------------------------------------------------------------------------------


def test_the_command_serves_the_relay(tmp_path: Path) -> None:
    from streamfsm.testing import unused_port

    pytest.importorskip("uvicorn")
    frames = text_stream("openai-chat", ["hi"])
    port = unused_port()
    env = {**os.environ, "RELAY_TOKEN": TOKEN}
    with FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as upstream:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "streamfsm", "relay", "--upstream", upstream.base_url),
                *("--listen", f"127.0.0.1:{port}", "--audit-log", str(tmp_path / "audit.jsonl")),
                *("--admin-token-env", "RELAY_TOKEN"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    answer = httpx.post(
                        f"http://127.0.0.1:{port}/v1/chat/completions",
                        json={**BODIES["openai-chat"], "stream": True},
                    )
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, "the relay did not start"
                    time.sleep(0.1)
            assert answer.content == b"".join(frames)
            wait_lines(tmp_path / "audit.jsonl", 1)
        finally:
            process.terminate()
            _, err = process.communicate(timeout=20)
    assert process.returncode in (0, -15), err  # uvicorn re-raises the SIGTERM it handled
    assert TOKEN.encode() not in err
