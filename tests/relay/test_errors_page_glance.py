"""The errors page at a glance, as a person sees it in headless Chromium at 1280 px (offline, the relay on
127.0.0.1 over a SQLite store): nothing wider than the window, more runs a screen, groups sorted by
failures, failure rate or change since the window before, a trend whose last hour is drawn apart and whose
numbers are written out, a class named by what it means, and a runs list saying how many of how many."""

from __future__ import annotations

import json
import random
import urllib.parse
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from streamfsm import RunRecord
from streamfsm.classify import CLASS_MEANING, PROVIDER_SAID, FailureClass
from streamfsm.store import Store
from tests.support.cdp import Browser, Page, chromium
from tests.support.logs import completed, mid_generation_disconnect, rate_limited
from tests.support.relay import RelayThread, relay_to

pytestmark = pytest.mark.skipif(
    chromium() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium)",
)

UNTIL = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)  # the views' end: a whole hour
DAY = timedelta(days=1)
RISING = (26, 16, 5)  # provider_error runs of 100, in the last day, the one before, the one before that
FLAT = 30  # mid_generation runs of 100 each day: more than the rising class, every day
PER_DAY = 100
MEMBERS = ("rate_limit", "overloaded", "quota_exhausted", "context_overflow", "server_error")
LATEST_TITLE = "The provider had an internal error"  # the latest provider_error's own title
# realistic widths: a UUID request id, a long route, a hashed account, a dated model name
ROUTE = "/v1/chat/completions"
MODEL = "claude-sonnet-4-5-20250929"


def seeded() -> list[dict[str, Any]]:
    """Three days of 100 runs each before ``UNTIL``: a provider_error share rising 5% → 16% → 26% (its
    members mixed, its latest a server error), a flat 30% of mid_generation, the rest completed; shuffled in
    time, each run at its own minute."""
    templates = {
        "provider_error": rate_limited().to_dict(),
        "mid_generation": mid_generation_disconnect().to_dict(),
        "completed": completed().to_dict(),
    }
    out = []
    for day, rising in reversed(list(enumerate(RISING))):  # the oldest first: the store's arrival order
        kinds = ["provider_error"] * rising + ["mid_generation"] * FLAT
        kinds += ["completed"] * (PER_DAY - len(kinds))
        random.Random(day).shuffle(kinds)
        start = UNTIL - (day + 1) * DAY
        for i, kind in enumerate(kinds):
            data = json.loads(json.dumps(templates[kind]))
            n = len(out)
            data["ids"]["run_id"] = f"{n:04d}" + "ab12cd34ef56ab12cd34ef56"
            data["ids"]["context"].update(
                request_id=f"{n:08x}-4b1e-4c3a-9d2f-6e7a8b9c0d1e",
                route=ROUTE,
                account=f"acct_{n % 7}f3a9c2e41b0d5c8",
            )
            data["model"] = MODEL
            data["started_at"] = (start + DAY * (i + 0.5) / PER_DAY).isoformat(timespec="milliseconds")
            if kind == "provider_error":
                member = MEMBERS[n % len(MEMBERS)]
                data["outcome"]["summary_key"] = f"provider_error.{member}"
                data["summary"]["title"] = PROVIDER_SAID[member]
            out.append(data)
    latest = max((r for r in out if r["outcome"]["class"] == "provider_error"), key=lambda r: r["started_at"])
    latest["outcome"]["summary_key"] = "provider_error.server_error"
    latest["summary"]["title"] = LATEST_TITLE
    return out


RECORDS = seeded()


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelayThread]:
    path = tmp_path_factory.mktemp("glance") / "runs.db"
    with Store.open(str(path)) as store:
        store.add([RunRecord(r) for r in RECORDS])
    with relay_to("http://127.0.0.1:9", store=f"sqlite:///{path}") as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium()
    assert executable is not None
    with Browser(executable) as opened:
        yield opened


def url(relay: RelayThread, path: str = "/admin/errors", **query: str) -> str:
    query = {"until": UNTIL.isoformat(), **query}
    return f"{relay.base_url}{path}?{urllib.parse.urlencode(query)}"


def data(relay: RelayThread, path: str = "/admin/errors", **query: str) -> dict[str, Any]:
    answer = httpx.get(url(relay, path, **query), headers={"accept": "application/json"}, timeout=30)
    assert answer.status_code == 200, answer.text
    out: dict[str, Any] = answer.json()
    return out


def opened(browser: Browser, address: str) -> Page:
    page = browser.page(width=1280, height=900)
    page.goto(address)
    return page


def failed_between(klass: str, since: datetime, until: datetime) -> tuple[int, int]:
    """(failed runs of ``klass``, all runs) seeded in ``[since, until)``."""
    inside = [r for r in RECORDS if since <= datetime.fromisoformat(r["started_at"]) < until]
    return sum(r["outcome"]["class"] == klass for r in inside), len(inside)


OVERFLOW = """({page: document.documentElement.scrollWidth,
  tables: [...document.querySelectorAll('table')].filter(t =>
    t.getBoundingClientRect().width > t.parentElement.clientWidth + 0.5).map(t => t.id || 'table'),
  cut: [...document.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => c.innerText.slice(0, 40))})"""


VIEWS = (
    ("/admin/errors", {}),
    ("/admin/errors", {"by": "class", "sort": "change"}),
    ("/admin/errors", {"by": "route"}),
    ("/admin/errors", {"by": "account", "since": "7d"}),
    ("/admin/errors/runs", {"class": "provider_error", "since": "7d"}),
)


def test_nothing_is_wider_than_the_window_at_1280_px(relay: RelayThread, browser: Browser) -> None:
    for path, query in VIEWS:
        page = opened(browser, url(relay, path, **query))
        assert page.js("document.querySelectorAll('tbody tr').length") > 0, (path, query)
        assert page.js(OVERFLOW) == {"page": 1280, "tables": [], "cut": []}, (path, query)


def test_a_screen_shows_more_runs_each_one_readable(relay: RelayThread, browser: Browser) -> None:
    page = opened(browser, url(relay, "/admin/errors/runs", since="7d"))
    seen = page.js(
        """({shown: [...document.querySelectorAll('tr.run')]
              .filter(r => r.getBoundingClientRect().bottom <= innerHeight).length,
            what: Math.min(...[...document.querySelectorAll('tr.run')].map(r => r.cells[3].clientWidth))})"""
    )
    assert seen["shown"] >= 14  # 7 before
    assert seen["what"] >= 240  # what happened: six words a line or more, not one or two


def test_sorted_by_change_the_rising_class_comes_first(relay: RelayThread, browser: Browser) -> None:
    rows = "[...document.querySelectorAll('tr.group')].map(r => r.querySelector('a.filter-by').innerText)"
    page = opened(browser, url(relay, by="class"))
    assert page.js(rows) == ["mid_generation", "provider_error"]  # the most failures first: 30 against 26
    page.follow("document.querySelector('#sort a[data-sort=rate]').click()")
    assert "sort=rate" in page.js("location.search")
    assert page.js(rows) == ["mid_generation", "provider_error"]  # 30% against 26%
    page.follow("document.querySelector('#sort a[data-sort=change]').click()")
    assert "sort=change" in page.js("location.search")
    assert page.js(rows) == ["provider_error", "mid_generation"]  # +10 points against none
    changes = page.js("[...document.querySelectorAll('tr.group td.change')].map(c => c.innerText)")
    assert changes == ["+10.0 pts\nfrom 16.0%", "+0.0 pts\nfrom 30.0%"]
    # the window before is the day before, counted from the store's hourly counts
    report = data(relay, by="class", sort="change")
    bounds = [
        datetime.fromisoformat(report["earlier"][end].replace("Z", "+00:00")) for end in ("since", "until")
    ]
    assert bounds == [UNTIL - 2 * DAY, UNTIL - DAY]
    rising = report["groups"][0]
    assert (rising["earlier"]["count"], rising["earlier"]["runs"]) == failed_between(
        "provider_error", UNTIL - 2 * DAY, UNTIL - DAY
    )
    assert httpx.get(url(relay, sort="colour"), headers={"accept": "application/json"}).status_code == 400


def test_the_trend_draws_the_last_hour_apart_and_says_its_numbers(
    relay: RelayThread, browser: Browser
) -> None:
    report = data(relay, by="class")
    assert report["recent"]["buckets"] == 12 and report["recent"]["bucket_s"] == 300
    page = opened(browser, url(relay, by="class"))
    seen = page.js(
        """[...document.querySelectorAll('tr.group')].map(r => { const t = r.querySelector('.trend-last');
          const box = t.getBoundingClientRect();
          return {key: r.querySelector('a.filter-by').innerText, text: t.innerText,
            visible: box.width > 0 && box.height > 0 && box.bottom <= innerHeight
              && getComputedStyle(t).visibility === 'visible',
            recent: r.querySelector('.trend-recent svg.trend').dataset.failures.split(',').map(Number)}; })"""
    )
    start = UNTIL - timedelta(hours=1)
    for row in seen:
        failed, runs = failed_between(row["key"], start, UNTIL)
        assert row["text"] == f"last hour: {failed} of {runs} runs failed ({100 * failed / runs:.1f}%)"
        assert row["visible"], row
        expected = [
            failed_between(
                row["key"], start + i * timedelta(minutes=5), start + (i + 1) * timedelta(minutes=5)
            )[0]
            for i in range(12)
        ]
        assert row["recent"] == expected
    assert any(sum(row["recent"]) for row in seen)


def test_the_class_view_names_a_class_by_what_it_means(relay: RelayThread, browser: Browser) -> None:
    title, description = CLASS_MEANING[FailureClass.PROVIDER_ERROR]
    page = opened(browser, url(relay, by="class"))
    row = (
        "[...document.querySelectorAll('tr.group')]"
        ".find(r => r.querySelector('a.filter-by').innerText === 'provider_error')"
    )
    assert LATEST_TITLE not in page.js(f"{row}.innerText")  # not its latest member's title
    assert page.js(f"{row}.querySelector('td.what').innerText") == f"{title}\n{description}"
    page.follow(f"{row}.querySelector('a.group-runs').click()")
    assert page.js("document.querySelector('h2').innerText") == title


def test_the_runs_list_says_how_many_of_how_many(relay: RelayThread, browser: Browser) -> None:
    total = sum(r["outcome"]["class"] == "mid_generation" for r in RECORDS)
    assert total > 50
    page = opened(browser, url(relay, "/admin/errors/runs", since="7d", **{"class": "mid_generation"}))
    summary = "document.querySelector('#summary').innerText"
    assert page.js(summary) == f"showing 50 of {total} failed runs where class mid_generation"
    assert page.js("document.querySelectorAll('tr.run').length") == 50
    page.follow("document.querySelector('#older').click()")
    assert page.js(summary) == f"{total - 50} older of {total} failed runs where class mid_generation"
    assert page.js("document.querySelectorAll('tr.run').length") == total - 50
