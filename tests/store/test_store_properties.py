"""Properties: over any sequence of records (any shapes, providers, models, routes, accounts, start times,
some delivered twice, as the audit and error logs both hold a failed run), the store's groups, rates and
totals are what ``streamfsm report`` computes from the same runs read once; and over any sequence of writes
and prunes, the errors page counted from the store's hourly counts is the page counted from its runs. On
SQLite in memory (the same SQL runs on PostgreSQL in test_store.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.runtime import RunRecord, group_failures
from streamfsm.store import Filters, Store
from tests.support.logs import SCENARIOS
from tests.support.store import ACCOUNTS, MODELS, ROUTES, T0, page_views

TEMPLATES = [scenario().to_dict() for scenario in SCENARIOS]

runs = st.lists(
    st.tuples(
        st.integers(0, len(TEMPLATES) - 1),
        st.sampled_from(("openai-chat", "anthropic")),
        st.sampled_from(MODELS),
        st.sampled_from(ROUTES),
        st.sampled_from((*ACCOUNTS, None)),
        st.integers(0, 600),  # minutes after T0
        st.booleans(),  # delivered twice
    ),
    max_size=40,
)
GROUPINGS = [("summary_key", "provider", "model", "transport_kind"), ("class",), ("route", "summary_key")]


def _record(
    i: int, shape: int, provider: str, model: str | None, route: str, account: str | None, minute: int
) -> RunRecord:
    data = TEMPLATES[shape]
    context = {"route": route, "request_id": f"req-{i}"} | ({"account": account} if account else {})
    data = {**data, "ids": {**data["ids"], "run_id": f"run-{i:03d}", "context": context}}
    data["provider"], data["model"] = provider, model
    data["started_at"] = (T0 + timedelta(minutes=minute)).isoformat()
    return RunRecord(data)


@settings(max_examples=60, deadline=None)
@given(runs, st.sampled_from(GROUPINGS), st.integers(0, 600))
def test_the_store_says_what_the_report_says(
    spec: list[tuple[int, str, str | None, str, str | None, int, bool]], names: tuple[str, ...], since: int
) -> None:
    records = [_record(i, *fields[:6]) for i, fields in enumerate(spec)]
    delivered = [r for r, fields in zip(records, spec, strict=True) for _ in range(1 + fields[6])]
    window = T0 + timedelta(minutes=since)
    chosen = [r for r in records if r["started_at"] >= window.isoformat()]
    with Store.open("sqlite:///:memory:") as store:
        for record in delivered:
            store.add([record])
        expected, total, failures = group_failures(chosen, names)
        got = store.groups(Filters(since=window), names)
        assert [g.as_group() for g in got] == expected
        totals = store.totals(Filters(since=window))
        assert (totals.runs, totals.failures) == (total, failures)
        for group in got:
            context = [i for i, n in enumerate(names) if n in ("provider", "model", "route", "account")]
            assert group.runs == sum(
                1 for r in chosen if all(_value(r, names[i]) == group.key[i] for i in context)
            )
            assert 0 < group.failure_rate <= 1


def _value(record: RunRecord, name: str) -> str | None:
    from streamfsm.runtime import field_value

    return field_value(record, name)


@settings(max_examples=200, deadline=None)
@given(
    runs,
    st.sampled_from([*GROUPINGS, ("provider",)]),
    st.integers(-90, 600),  # the window's start, minutes after T0 (hours, buckets and window rarely align)
    st.integers(1, 59) | st.integers(120, 900),  # its length in minutes: within an hour, or over whole hours
    st.integers(1, 30),
    st.sampled_from((None, *MODELS)),
)
def test_the_trend_counts_each_bucket_as_the_runs_say(
    spec: list[tuple[int, str, str | None, str, str | None, int, bool]],
    names: tuple[str, ...],
    start: int,
    length: int,
    buckets: int,
    model: str | None,
) -> None:
    """Per bucket, failed runs per key and all runs of its context, counted from the records by hand; and
    the groups counted from that trend (as the errors page asks) are the groups counted on their own."""
    records = [_record(i, *fields[:6]) for i, fields in enumerate(spec)]
    since = T0 + timedelta(minutes=start, seconds=7)
    until = since + timedelta(minutes=length)
    filters = Filters(since=since, until=until, model=model)
    with Store.open("sqlite:///:memory:") as store:
        store.add(records)
        trends = store.trend(since, until, buckets, filters, names)
        chosen = [
            r
            for r in records
            if since.isoformat() <= r["started_at"] < until.isoformat()
            and model in (None, _value(r, "model"))
        ]
        context = [i for i, n in enumerate(names) if n in ("provider", "model", "route", "account")]
        width = trends[0].bucket if trends else (until - since) / buckets
        expected: dict[tuple[str | None, ...], list[int]] = {}
        for r in chosen:
            if r.failure_class != "completed":
                key = tuple(_value(r, n) for n in names)
                when = datetime.fromisoformat(r["started_at"])
                expected.setdefault(key, [0] * buckets)[(when - since) // width] += 1
        assert {t.key: list(t.failures) for t in trends} == expected
        for trend in trends:
            for i in range(buckets):
                low, high = since + width * i, min(until, since + width * (i + 1))
                assert trend.runs[i] == sum(
                    1
                    for r in chosen
                    if low.isoformat() <= r["started_at"] < high.isoformat()
                    and all(_value(r, names[c]) == trend.key[c] for c in context)
                )
        assert store.groups(filters, names, counted=trends) == store.groups(filters, names)


_HOUR_S = 3600


def _hours_and_some(hours: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """Seconds: whole hours, and as often as not some seconds more (on the hour and off it)."""
    return st.builds(lambda h, s: h * _HOUR_S + s, hours, st.just(0) | st.integers(1, _HOUR_S - 1))


seconds = _hours_and_some(st.integers(-1, 5))  # after T0
rewritten = st.tuples(
    st.integers(0, 39),  # the run: from a small pool, so that runs come again with other values
    st.integers(0, len(TEMPLATES) - 1),
    st.sampled_from(("openai-chat", "anthropic")),
    st.sampled_from(MODELS),
    st.sampled_from(ROUTES),
    st.sampled_from((*ACCOUNTS, None)),
    st.none() | seconds,  # None: the record does not say when the run started
)
writes = st.lists(
    st.lists(rewritten, min_size=1, max_size=20).map(lambda runs: ("add", runs))
    | seconds.map(lambda at: ("prune", at)),
    max_size=6,
)


def _run(
    i: int, shape: int, provider: str, model: str | None, route: str, account: str | None, at: int | None
) -> RunRecord:
    record = _record(i, shape, provider, model, route, account, 0)
    if at is None:
        return RunRecord({k: v for k, v in record.to_dict().items() if k != "started_at"})
    return RunRecord({**record.to_dict(), "started_at": (T0 + timedelta(seconds=at)).isoformat()})


@settings(max_examples=150, deadline=None)
@given(
    st.lists(rewritten, min_size=10, max_size=40),
    writes,
    _hours_and_some(st.integers(-1, 6)),  # the window's start
    # its length: over a day or two the page's 24 trend buckets are whole hours (read from the counts)
    _hours_and_some(st.integers(0, 8) | st.sampled_from((24, 48))).filter(bool),
    st.sampled_from(((), (("route", ROUTES[0]),), (("account", ACCOUNTS[0]),), (("model", MODELS[0]),))),
)
def test_the_page_from_the_counts_is_the_page_from_the_runs(
    first: list[tuple[int, int, str, str | None, str, str | None, int | None]],
    ops: list[tuple[str, Any]],
    start: int,
    length: int,
    filters: tuple[tuple[str, str], ...],
) -> None:
    """Every view of the errors page (totals, groups with rates, a trend per group) over any window, after
    any writes (a run written again with other values moves its counts) and prunes: the same numbers from
    the counts (whole hours; the window's partial hours from the runs) as from the runs alone."""
    since = T0 + timedelta(seconds=start)
    with Store.open("sqlite:///:memory:") as store:
        store.add([_run(*run) for run in first])
        for op, arg in ops:
            if op == "add":
                store.add([_run(*run) for run in arg])
            else:
                store.prune(T0 + timedelta(seconds=arg))
        counted, scanned = page_views(store, since, since + timedelta(seconds=length), filters)
        assert counted == scanned
        assert store.count() == store.totals().runs
