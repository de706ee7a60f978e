"""The errors page: in headless Chromium (the distribution's package, offline) what a person sees (groups,
failure rates, trends, filters, views by route and account, search by request id or run id, a group's
runs) matches ``streamfsm report --json`` and counts taken from the audit log on the same records; its run
pages draw the machine; the admin token guards it; and ``streamfsm report --html`` writes the same page as
one file."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from streamfsm import StreamConfig
from streamfsm.relay import Relay, RelayConfig
from streamfsm.runtime import TextDelta
from streamfsm.testing import End, FaultServerThread, Fin, Headers, Send, Stall, Status, text_stream
from tests.support.cdp import Browser, chromium
from tests.support.relay import relay_to, wait_lines
from tests.support.runs import BODIES, cut_through

TOKEN = "admin-token-for-the-page-test-0123"
AUTH = {"authorization": f"Bearer {TOKEN}"}
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "relay-errors-page.png"  # a run page
ERRORS_SHOT = ROOT / "docs" / "relay-errors-groups.png"  # the errors page
RUNS_SHOT = ROOT / "docs" / "relay-errors-runs.png"  # a group's runs

# Edge labels (white-stroked text) whose box meets a state's box (a rounded rect): hidden under it.
LABELS_UNDER_NODES = """[...document.querySelectorAll('svg')].flatMap(svg => {
  const boxes = [...svg.querySelectorAll('rect[rx]')].map(r => r.getBBox());
  return [...svg.querySelectorAll('text[stroke]')].filter(t => { const b = t.getBBox();
    return boxes.some(r => b.x < r.x + r.width && r.x < b.x + b.width && b.y < r.y + r.height
      && r.y < b.y + b.height); }).map(t => t.textContent); })"""
ROWS = """[...document.querySelectorAll('tr.group')].map(r => ({
  failed: +r.querySelector('td.failed').innerText, runs: +r.querySelector('td.runs').innerText,
  rate: r.querySelector('td.rate').innerText,
  trend: r.querySelector('.trend-window svg.trend').dataset.failures.split(',').map(Number),
  trendRuns: r.querySelector('.trend-window svg.trend').dataset.runs.split(',').map(Number),
  bars: r.querySelectorAll('.trend-window svg.trend rect.failed').length,
  title: r.querySelector('td.what').innerText, key: r.querySelector('td.key').innerText,
  visible: r.getBoundingClientRect().height > 0 && getComputedStyle(r).visibility === 'visible',
  samples: [...r.querySelectorAll('a.sample')].map(a => a.innerText)}))"""

needs_chromium = pytest.mark.skipif(
    chromium() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium)",
)


def route(request: Any) -> Any:
    """One upstream failure per path (the SDK-less client names it in the path's second part)."""
    fmt = "openai-chat"
    frames = text_stream(fmt, ["a", "b", "c"], reasoning=["r"])
    cut = tuple(Send(f) for f in cut_through(fmt, frames, TextDelta))
    if "/fin/" in request.path:
        return (Headers(), *cut, Fin())
    if "/stall/" in request.path:
        return (Headers(), *cut, Stall())
    if "/busy/" in request.path:
        return (Status(429, headers=(("content-type", "application/json"),), body=b'{"error":{}}'),)
    return (Headers(), *(Send(f) for f in frames), End())


# (kind, request id, account's key, model): two accounts, two models, four routes
SENT = (
    ("fin", "rid-a", "sk-alice", "gpt-4o-mini"),
    ("fin", "rid-b", "sk-bob", "gpt-4o-mini"),
    ("stall", "rid-c", "sk-alice", "gpt-4o-mini"),
    ("busy", "rid-d", "sk-bob", "gpt-4.1"),
    ("fin", "rid-e", "sk-bob", "gpt-4.1"),
    ("ok", "rid-f", "sk-alice", "gpt-4o-mini"),
    ("ok", "rid-g", "sk-alice", "gpt-4o-mini"),
    ("ok", "rid-h", "sk-bob", "gpt-4.1"),
)
FAILED = sum(kind != "ok" for kind, *_ in SENT)


def fill(base_url: str) -> None:
    for kind, rid, key, model in SENT:
        body = {**BODIES["openai-chat"], "model": model, "stream": True}
        headers = {"authorization": f"Bearer {key}", "x-request-id": rid}
        with contextlib.suppress(httpx.HTTPError):  # the broken ones are cut
            httpx.post(f"{base_url}/v1/{kind}/chat/completions", json=body, headers=headers, timeout=20)


def report_json(log: Path, *options: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "streamfsm", "report", str(log), "--json", *options],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("page")
    log, audit = folder / "errors.jsonl", folder / "audit.jsonl"
    stream = StreamConfig(idle_timeout=0.4)
    since = (datetime.now(timezone.utc) - timedelta(minutes=2)).isoformat(timespec="seconds")
    until = (datetime.now(timezone.utc) + timedelta(minutes=5)).isoformat(timespec="seconds")
    with (
        FaultServerThread(route) as upstream,
        relay_to(
            upstream.base_url, error_log=str(log), audit_log=str(audit), admin_token=TOKEN, stream=stream
        ) as relay,
    ):
        fill(relay.base_url)
        wait_lines(log, FAILED)
        records = wait_lines(audit, len(SENT))
        yield relay, audit, records, (since, until)


def page_json(relay: Any, path: str = "/admin/errors", **query: str) -> dict[str, Any]:
    url = relay.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
    answer = httpx.get(url, headers={**AUTH, "accept": "application/json"}, timeout=30)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


def context_value(record: dict[str, Any], name: str) -> Any:
    if name in ("route", "account"):
        return record["ids"]["context"].get(name)
    if name == "class":
        return record["outcome"]["class"]
    return record[name]


def test_the_json_page_groups_as_report_does_with_rates_from_the_audit_log(filled: Any) -> None:
    relay, audit, records, (since, until) = filled
    page = page_json(relay, since=since, until=until)
    report = report_json(audit, "--since", since)
    strip = ("sample_request_ids", "runs", "failure_rate", "trend", "recent", "earlier")
    assert [{k: v for k, v in g.items() if k not in strip} for g in page["groups"]] == report["groups"]
    assert len(page["groups"]) == 4
    assert (page["runs"], page["failures"]) == (report["runs"], report["failures"]) == (len(SENT), FAILED)
    # a signature's rate: its failures over every run of its provider and model (counted from the log)
    per_model = Counter(r["model"] for r in records)
    for group in page["groups"]:
        assert group["runs"] == per_model[group["key"]["model"]]
        assert group["failure_rate"] == pytest.approx(group["count"] / group["runs"])
    fin = page["groups"][0]
    assert fin["count"] == 2
    assert set(fin["sample_request_ids"]) == {"rid-a", "rid-b"}


def test_trends_put_each_failure_in_its_time_bucket(filled: Any) -> None:
    relay, _, records, (since, until) = filled
    page = page_json(relay, since=since, until=until)
    start = datetime.fromisoformat(page["trend"]["start"])
    width = page["trend"]["bucket_s"]
    for group in page["groups"]:
        key = group["key"]
        mine = [
            r
            for r in records
            if r["outcome"]["class"] != "completed"
            and (r["outcome"]["summary_key"], r["model"]) == (key["summary_key"], key["model"])
        ]
        expected = [0] * page["trend"]["buckets"]
        for r in mine:
            offset = (datetime.fromisoformat(r["started_at"]) - start).total_seconds()
            expected[int(offset // width)] += 1
        assert group["trend"]["failures"] == expected
        assert sum(group["trend"]["runs"]) == group["runs"]


@pytest.mark.parametrize(
    ("name", "pick"),
    [
        ("route", "/v1/fin/chat/completions"),
        ("account", 0),  # the first account seen
        ("model", "gpt-4.1"),
        ("provider", "openai-chat"),
        ("class", "mid_generation"),
    ],
)
def test_each_filter_selects_what_report_counts(filled: Any, name: str, pick: Any) -> None:
    relay, audit, records, (since, _) = filled
    value = pick if isinstance(pick, str) else context_value(records[pick], name)
    page = page_json(relay, since=since, **{name: value})
    by = report_json(audit, "--since", since, "--by", name)
    counted = {g["key"][name]: g["count"] for g in by["groups"]}
    assert page["failures"] == counted.get(value, 0) > 0
    assert page["runs"] == sum(1 for r in records if context_value(r, name) == value)
    assert page["filters"] == {name: value}
    # the runs of the filtered view are the ones the log holds
    listed = page_json(relay, "/admin/errors/runs", since=since, **{name: value})
    expected = {
        r["ids"]["run_id"]
        for r in records
        if context_value(r, name) == value and r["outcome"]["class"] != "completed"
    }
    assert {r["run_id"] for r in listed["runs"]} == expected
    # with how each closed (the record's relay close kind)
    closes = {r["ids"]["run_id"]: r["relay"]["close"] for r in records if r.get("relay")}
    assert [r["close"] for r in listed["runs"]] == [closes.get(r["run_id"]) for r in listed["runs"]]
    assert any(r["close"] for r in listed["runs"])


@pytest.mark.parametrize("by", ["route", "account", "class", "model"])
def test_the_views_by_route_and_account_are_report_by(filled: Any, by: str) -> None:
    relay, audit, _, (since, _) = filled
    page = page_json(relay, since=since, by=by)
    report = report_json(audit, "--since", since, "--by", by)
    assert [(g["key"], g["count"]) for g in page["groups"]] == [
        (g["key"], g["count"]) for g in report["groups"]
    ]


def test_what_the_page_cannot_honour_is_refused_not_ignored(filled: Any) -> None:
    relay, *_ = filled
    for query in ("by=colour", "since=yesterday", "colour=red", "before=x", "route=a&route=b", "sort=size"):
        answer = httpx.get(f"{relay.base_url}/admin/errors?{query}", headers=AUTH)
        assert answer.status_code == 400, query
        assert answer.json()["error"]["type"] == "invalid_request"


def test_search_finds_a_stream_by_request_id_or_run_id(filled: Any) -> None:
    relay, _, records, _ = filled
    by_rid = {r["ids"]["context"]["request_id"]: r["ids"]["run_id"] for r in records}
    found = page_json(relay, "/admin/errors/search", q="rid-c")
    assert [r["run_id"] for r in found["runs"]] == [by_rid["rid-c"]]
    found = page_json(relay, "/admin/errors/search", q=by_rid["rid-f"])  # a completed run too
    assert [r["request_id"] for r in found["runs"]] == ["rid-f"]
    missing = httpx.get(
        f"{relay.base_url}/admin/errors/search?q=rid-nope", headers={**AUTH, "accept": "application/json"}
    )
    assert missing.status_code == 404


@needs_chromium
def test_a_person_filters_searches_and_follows_a_group_offline(filled: Any, tmp_path: Path) -> None:
    relay, audit, records, (since, until) = filled
    window = urllib.parse.urlencode({"since": since, "until": until})
    report = report_json(audit, "--since", since)
    data = page_json(relay, since=since, until=until)
    executable = chromium()
    assert executable is not None
    write_docs = os.environ.get("STREAMFSM_WRITE_DOCS") == "1"
    with Browser(executable) as browser:
        page = browser.page()
        page.goto(relay.base_url + "/admin/errors")  # no token: the sign-in form, not the errors
        assert "admin token required" in page.js("document.body.innerText")
        assert page.js("document.querySelector('#groups')") is None
        page.headers({"Authorization": f"Bearer {TOKEN}"})
        page.goto(f"{relay.base_url}/admin/errors?{window}")
        utc = {
            end: data[end].replace("T", " ").split(".")[0].split("+")[0] + "Z" for end in ("since", "until")
        }
        assert page.js("document.querySelector('#summary').innerText") == (
            f"{FAILED} failed of {len(SENT)} runs ({100 * FAILED / len(SENT):.1f}%) from"
            f" {utc['since']} to {utc['until']}: 4 signatures"
        )
        rows = page.js(ROWS)
        assert [(r["failed"], r["title"]) for r in rows] == [
            (g["count"], g["title"]) for g in report["groups"]
        ]
        assert [r["runs"] for r in rows] == [g["runs"] for g in data["groups"]]
        assert [r["rate"] for r in rows] == [f"{100 * g['failure_rate']:.1f}%" for g in data["groups"]]
        assert [r["trend"] for r in rows] == [g["trend"]["failures"] for g in data["groups"]]
        assert all(r["bars"] == 24 and r["visible"] for r in rows)
        assert any("rid-a" in s for s in rows[0]["samples"])
        (tmp_path / "errors.png").write_bytes(page.screenshot())

        # the filter form: the view is its URL, and the numbers are the filtered ones
        page.follow(
            "document.querySelector('#filters [name=model]').value = 'gpt-4.1';"
            " document.querySelector('#filters').submit()"
        )
        assert "model=gpt-4.1" in page.js("location.search")
        filtered = page_json(relay, since=since, until=until, model="gpt-4.1")
        assert page.js(ROWS)[0]["failed"] == filtered["groups"][0]["count"]
        assert page.js("document.querySelector('#summary').innerText").startswith(
            f"{filtered['failures']} failed of {filtered['runs']} runs"
        )
        shared = page.js("location.href")
        page.goto(shared)  # shareable: the same view from its URL alone
        assert page.js("document.querySelector('#filters [name=model]').value") == "gpt-4.1"

        # the view by account, from its link, keeps the window
        page.goto(f"{relay.base_url}/admin/errors?{window}")
        page.follow(
            "[...document.querySelectorAll('#views a')].find(a => a.innerText === 'by account').click()"
        )
        by_account = report_json(audit, "--since", since, "--by", "account")
        rows = page.js(ROWS)
        assert [(r["failed"], r["key"]) for r in rows] == [
            (g["count"], g["key"]["account"]) for g in by_account["groups"]
        ]

        # a group's runs, from its link
        page.goto(f"{relay.base_url}/admin/errors?{window}")
        page.follow("document.querySelector('tr.group a.group-runs').click()")
        listed = page.js("[...document.querySelectorAll('tr.run')].map(r => r.dataset.runId)")
        assert sorted(listed) == sorted(report["groups"][0]["sample_run_ids"])
        if write_docs:
            RUNS_SHOT.write_bytes(page.screenshot())

        # search by the request id the client saw: its run's page
        page.goto(relay.base_url + "/admin/errors")
        page.follow(
            "document.querySelector('#search [name=q]').value = 'rid-c';"
            " document.querySelector('#search').submit()"
        )
        rid_c = next(r for r in records if r["ids"]["context"]["request_id"] == "rid-c")
        assert page.js("location.pathname").endswith(rid_c["ids"]["run_id"])
        assert "rid-c" in page.js("document.querySelector('table.facts').innerText")

        # a run page: the plain summary, the verdict, the machine with the failing state marked
        page.goto(f"{relay.base_url}/admin/errors?{window}")
        page.follow("document.querySelector('tr.group a.sample').click()")
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
        if write_docs:
            SCREENSHOT.write_bytes(shot)
        # nothing but the relay was asked for
        asked = [url for url in page.requested() if not url.startswith(("data:", "about:"))]
        assert asked and all(url.startswith(relay.base_url) for url in asked), asked


@needs_chromium
def test_report_html_is_the_same_page_in_one_file(filled: Any, tmp_path: Path) -> None:
    _, audit, _, _ = filled
    out = tmp_path / "errors.html"
    subprocess.run(
        [sys.executable, "-m", "streamfsm", "report", str(audit), "--html", str(out)], timeout=60, check=True
    )
    report = report_json(audit)
    executable = chromium()
    assert executable is not None
    with Browser(executable) as browser:
        page = browser.page()
        page.goto(out.as_uri())
        rows = page.js(ROWS)
        assert [r["failed"] for r in rows] == [g["count"] for g in report["groups"]]
        assert sum(r["failed"] for r in rows) == report["failures"] == FAILED
        assert all(sum(r["trend"]) == r["failed"] and r["runs"] >= r["failed"] for r in rows)
        assert page.js("document.querySelector('#summary').innerText").startswith(
            f"{FAILED} failed of {len(SENT)} runs"
        )
        sections = page.js("document.querySelectorAll('section.run svg').length")
        assert sections == sum(len(g["sample_run_ids"]) for g in report["groups"])
        assert page.js(LABELS_UNDER_NODES) == []
        assert [u for u in page.requested() if not u.startswith(("file:", "data:"))] == []


def test_the_docs_screenshots_are_checked_in() -> None:
    for shot in (SCREENSHOT, ERRORS_SHOT, RUNS_SHOT):
        assert shot.read_bytes().startswith(b"\x89PNG"), shot


# -- the admin token ----------------------------------------------------------------------------------------


def test_a_wrong_or_missing_token_is_refused(filled: Any) -> None:
    relay, *_ = filled
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


# -- records already in the logs: the page starts with them ------------------------------------------------

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'


def spread(records: list[dict[str, Any]], hours: int = 20) -> list[dict[str, Any]]:
    """Copies of the fixture's records over the last ``hours`` hours (failures rising towards now), one
    with hostile strings where a record carries provider- or client-shaped text."""
    now = datetime.now(timezone.utc)
    failed = [r for r in records if r["outcome"]["class"] != "completed"]
    ok = [r for r in records if r["outcome"]["class"] == "completed"]
    out = []
    for hour in range(hours):
        when = now - timedelta(hours=hours - hour - 0.5)
        picks = [*ok * 3, *failed[: 1 + hour // 5]]
        for n, template in enumerate(picks):
            copy = json.loads(json.dumps(template))
            copy["ids"]["run_id"] = f"{hour:02d}{n:02d}{template['ids']['run_id'][4:]}"
            copy["ids"]["context"]["request_id"] = f"old-{hour}-{n}"
            copy["started_at"] = (when + timedelta(seconds=n)).isoformat(timespec="milliseconds")
            out.append(copy)
    out[-1]["ids"]["context"]["route"] = HOSTILE
    out[-1]["model"] = HOSTILE
    return out


@needs_chromium
def test_the_page_starts_with_the_logs_records_and_escapes_them(filled: Any, tmp_path: Path) -> None:
    _, _, records, _ = filled
    old = spread(records)
    audit = tmp_path / "audit.jsonl"
    audit.write_text("".join(json.dumps(r) + "\n" for r in old))
    with FaultServerThread(route) as upstream, relay_to(upstream.base_url, audit_log=str(audit)) as relay:
        data = page_json(relay)  # loopback, no token: served
        report = report_json(audit, "--since", "24h")
        failed = sum(r["outcome"]["class"] != "completed" for r in old)
        assert (data["runs"], data["failures"]) == (report["runs"], report["failures"]) == (len(old), failed)
        assert [g["count"] for g in data["groups"]] == [g["count"] for g in report["groups"]]
        # failures rise hour by hour: the trend of the commonest signature says so
        trend = data["groups"][0]["trend"]["failures"]
        assert sum(trend) == data["groups"][0]["count"]
        assert trend[-4:] > trend[4:8]
        executable = chromium()
        assert executable is not None
        with Browser(executable) as browser:
            page = browser.page()
            page.goto(relay.base_url + "/admin/errors")
            assert page.js("document.querySelectorAll('main script, main img').length") == 0
            page.goto(relay.base_url + "/admin/errors?by=route")
            assert page.js("document.querySelectorAll('main script, main img').length") == 0
            assert HOSTILE in page.js("document.querySelector('#groups').innerText")
            page.goto(relay.base_url + "/admin/errors")
            rows = page.js(ROWS)
            assert [r["trend"] for r in rows] == [g["trend"]["failures"] for g in data["groups"]]
            shot = page.screenshot()
            (tmp_path / "errors.png").write_bytes(shot)
            if os.environ.get("STREAMFSM_WRITE_DOCS") == "1":
                ERRORS_SHOT.write_bytes(shot)


def test_a_view_of_many_groups_lists_the_first_hundred(filled: Any, tmp_path: Path) -> None:
    from streamfsm import RunRecord
    from streamfsm.relay import Links, PageQuery, errors_page
    from streamfsm.relay._errors import GROUP_LIMIT, page_report
    from streamfsm.store import Store

    _, _, records, _ = filled
    template = next(r for r in records if r["outcome"]["class"] != "completed")
    copies = []
    for n in range(GROUP_LIMIT + 5):
        copy = json.loads(json.dumps(template))
        copy["ids"]["run_id"] = f"many{n:04d}{template['ids']['run_id'][8:]}"
        copy["ids"]["context"]["account"] = f"acct_{n:04d}"
        copies.append(RunRecord(copy))
    with Store.open(tmp_path / "runs.db") as store:
        store.add(copies)
        report = page_report(store, PageQuery(by="account"), "test")
    assert (report["failures"], len(report["groups"]), report["limited"]) == (len(copies), GROUP_LIMIT, True)
    page = errors_page(report, Links(lambda run_id: run_id, PageQuery(by="account")))
    assert f": the first {GROUP_LIMIT} of {len(copies)} accounts</h2>" in page
