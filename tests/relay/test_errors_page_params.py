"""The errors page's query parameters: any value, valid or not, is answered (a 400 naming what is wrong
for a value the page cannot honour), never a 500. Over real sockets, against the relay on 127.0.0.1."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.relay import RelayThread, relay_to

PAGES = ("/admin/errors", "/admin/errors/runs", "/admin/errors/search")
NAMES = ("by", "since", "until", "before", "q", "sort", "route", "account", "model", "class", "close")
JSON = {"accept": "application/json"}


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelayThread]:
    audit = tmp_path_factory.mktemp("page") / "audit.jsonl"
    with relay_to("http://127.0.0.1:9", audit_log=str(audit)) as served:
        yield served


@pytest.mark.parametrize(
    "query",
    [
        "before=99999999999999999999999",  # past SQLite's integers
        "by=route&before=18446744073709551616",
        "before=%C2%B2",  # a digit, but no number
        "until=0001-01-01T00:00:00&since=7d",  # a window starting before the year 1
        "since=99999d&until=0002-01-01",
        "since=0001-01-01T00:00:00%2B14:00",  # its zone puts it before the year 1 in UTC
        "until=9999-12-31T23:59:59-14:00",  # after the year 9999 in UTC
    ],
)
def test_a_bad_page_parameter_is_a_400(relay: RelayThread, query: str) -> None:
    for page in PAGES:
        answer = httpx.get(f"{relay.base_url}{page}?{query}", headers=JSON, timeout=10.0)
        assert answer.status_code == 400, (page, query, answer.text[:200])
        assert answer.json()["error"]["type"] == "invalid_request"


def test_no_page_parameter_makes_a_500(relay: RelayThread) -> None:
    """A property over arbitrary values of the page's parameters (numbers, times, windows, any text)."""
    values = st.one_of(
        st.text(max_size=30),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.from_regex(r"\d{1,6}[mhd]", fullmatch=True),
        st.datetimes(timezones=st.none() | st.timezones()).map(lambda when: when.isoformat()),
    )
    with httpx.Client() as client:

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(
            page=st.sampled_from(PAGES), pairs=st.lists(st.tuples(st.sampled_from(NAMES), values), max_size=3)
        )
        def answered(page: str, pairs: list[tuple[str, str]]) -> None:
            query = urllib.parse.urlencode(pairs)
            answer = client.get(f"{relay.base_url}{page}?{query}", headers=JSON, timeout=10.0)
            assert answer.status_code in (200, 400, 404), (page, query, answer.status_code)

        answered()
