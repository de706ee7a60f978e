"""The store on both databases: the same groups as ``streamfsm report`` over the same records, rates, trends,
filters, pages, lookups, rebuild from the logs (audit and error log deduplicated), retention."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from streamfsm.runtime import SIGNATURE, AuditLog, ErrorLog, RunRecord, field_value, group_failures, started
from streamfsm.store import Filters, Store
from tests.support.store import ACCOUNTS, ROUTES, T0, page_views, varied

GROUPINGS = [SIGNATURE, ("provider",), ("model",), ("class",), ("route",), ("account",), ("route", "class")]


def _report(records: list[Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    groups, _, _ = group_failures(records, names)
    return [g.to_json(names, request_ids=True) for g in groups]


def _stored(store: Store, names: tuple[str, ...], filters: Filters | None = None) -> list[dict[str, Any]]:
    out = []
    for group in store.groups(filters or Filters(), names):
        data = group.to_json(request_ids=True)
        del data["runs"], data["failure_rate"]
        out.append(data)
    return out


@pytest.mark.parametrize("names", GROUPINGS, ids="+".join)
def test_groups_match_the_report(store_url: str, names: tuple[str, ...]) -> None:
    records = varied(300, seed=len(names))
    with Store.open(store_url) as store:
        store.add(records)
        assert _stored(store, names) == _report(records, names)
        since = T0 + timedelta(hours=3)
        later = [r for r in records if (when := started(r)) is not None and when >= since]
        assert _stored(store, names, Filters(since=since)) == _report(later, names)


@pytest.mark.parametrize("name", ["route", "account", "model", "provider", "failure_class", "summary_key"])
def test_filters_match_the_report_over_the_filtered_records(store_url: str, name: str) -> None:
    records = varied(200, seed=7)
    field = "class" if name == "failure_class" else name
    value = next(
        v for r in records if (v := field_value(r, field)) is not None and r.failure_class != "completed"
    )
    chosen = [r for r in records if field_value(r, field) == value]
    with Store.open(store_url) as store:
        store.add(records)
        filters = Filters(**{name: value})
        assert _stored(store, SIGNATURE, filters) == _report(chosen, SIGNATURE)
        totals = store.totals(filters)
        assert totals.runs == len(chosen)
        assert totals.failures == sum(r.failure_class != "completed" for r in chosen)


def test_runs_that_do_not_say_when_they_started_group_as_in_the_report(store_url: str) -> None:
    records = []
    for record in varied(60, seed=14):
        data = record.to_dict()
        del data["started_at"]
        records.append(RunRecord(data))
    with Store.open(store_url) as store:
        store.add(records)
        assert _stored(store, SIGNATURE) == _report(records, SIGNATURE)
        assert all(g.first is None and g.last is None for g in store.groups())
        assert store.groups(Filters(since=T0)) == []  # a window holds only runs that say when they started


def test_a_limit_keeps_the_first_groups(store_url: str) -> None:
    with Store.open(store_url) as store:
        store.add(varied(300, seed=13))
        every = store.groups(by=("account", "class"))
        assert len(every) > 4
        assert store.groups(by=("account", "class"), limit=4) == every[:4]


def test_rates_count_every_run_of_the_key(store_url: str) -> None:
    records = varied(240, seed=3)
    with Store.open(store_url) as store:
        store.add(records)
        for group in store.groups(by=("route",)):
            runs = [r for r in records if field_value(r, "route") == group.key[0]]
            assert group.runs == len(runs)
            assert group.failures == sum(r.failure_class != "completed" for r in runs)
            assert 0 < group.failure_rate == group.failures / group.runs < 1


def test_a_signatures_rate_is_over_the_runs_of_its_provider_and_model(store_url: str) -> None:
    records = varied(240, seed=12)
    with Store.open(store_url) as store:
        store.add(records)
        groups = store.groups()
        by_class = store.groups(by=("class",))
    for group in groups:
        summary_key, provider, model, _ = group.key
        runs = [
            r for r in records if (field_value(r, "provider"), field_value(r, "model")) == (provider, model)
        ]
        assert group.runs == len(runs)  # the completed runs of its provider and model too
        assert group.failures == sum(r.summary_key == summary_key for r in runs)
        assert group.failure_rate < 1
    assert {g.runs for g in by_class} == {len(records)}


def test_trend_buckets_add_up_to_the_groups(store_url: str) -> None:
    records = varied(300, seed=4)
    since, until = T0 - timedelta(hours=1), T0 + timedelta(hours=7)
    with Store.open(store_url) as store:
        store.add(records)
        trends = store.trend(since, until, 8)
        groups = {g.key: g for g in store.groups(Filters(since=since, until=until))}
        assert {t.key for t in trends} == set(groups)
        for trend in trends:
            assert len(trend.failures) == len(trend.runs) == 8
            assert sum(trend.failures) == groups[trend.key].failures
            assert sum(trend.runs) == groups[trend.key].runs
            assert trend.failures[0] == 0  # nothing started in the first hour of the window
        # one bucket of the window, counted by hand
        bucket = (since + timedelta(hours=4), since + timedelta(hours=5))
        key = trends[0].key
        expected = sum(
            1
            for r in records
            if r.failure_class != "completed"
            and tuple(field_value(r, n) for n in SIGNATURE) == key
            and bucket[0] <= started(r) < bucket[1]  # type: ignore[operator]
        )
        assert trends[0].failures[4] == expected


def test_runs_page_through_every_match_once(store_url: str) -> None:
    records = varied(130, seed=5)
    with Store.open(store_url) as store:
        store.add(records)
        seen: list[str] = []
        before = None
        for _ in range(100):
            page = store.runs(Filters(route=ROUTES[0]), failed=True, limit=7, before=before)
            seen += [row.run_id for row in page.runs]
            assert all(row.route == ROUTES[0] and row.failure_class != "completed" for row in page.runs)
            before = page.next_before
            if before is None:
                break
        expected = [
            r.run_id
            for r in records
            if field_value(r, "route") == ROUTES[0] and r.failure_class != "completed"
        ]
        assert seen == list(reversed(expected))


def test_lookups_return_whole_records(store_url: str) -> None:
    records = varied(50, seed=6)
    with Store.open(store_url) as store:
        store.add(records)
        assert store.record("run-00017") == records[17]
        assert store.record("run-99999") is None
        assert [r.run_id for r in store.find_runs("run-0001")] == [f"run-{i:05d}" for i in range(10, 15)]
        assert store.by_request_id("req-00023") == [records[23]]
        provider_id = records[9]["ids"]["provider_request_id"]
        assert records[9] in store.by_provider_request_id(provider_id)
        assert store.by_request_id("nobody") == []


def test_rebuild_from_both_logs_counts_each_run_once(store_url: str, tmp_path: Path) -> None:
    records = varied(120, seed=8)
    audit, errors = (
        AuditLog(tmp_path / "audit.jsonl", max_bytes=50_000, backups=100),
        ErrorLog(tmp_path / "errors.jsonl"),
    )
    for record in records:
        audit(record)
        errors(record)
    with Store.open(store_url) as store:
        store.add(records[:5])  # stale content is replaced
        read = store.rebuild([tmp_path / "errors.jsonl", tmp_path / "audit.jsonl"])
        failed = sum(r.failure_class != "completed" for r in records)
        assert read == len(records) + failed
        assert store.count() == len(records)
        totals = store.totals()
        assert (totals.runs, totals.failures) == (len(records), failed)
        assert totals.by_class == dict(Counter(r.failure_class for r in records))
        assert _stored(store, SIGNATURE) == _report(records, SIGNATURE)


def test_retention_forgets_older_runs(store_url: str) -> None:
    records = varied(100, seed=9)
    cut = T0 + timedelta(hours=3)
    with Store.open(store_url) as store:
        store.add(records)
        kept = [r for r in records if started(r) >= cut]  # type: ignore[operator]
        assert store.prune(cut) == len(records) - len(kept)
        assert store.count() == len(kept)
        assert _stored(store, SIGNATURE) == _report(kept, SIGNATURE)


def test_no_password_in_the_label(store_url: str) -> None:
    from streamfsm.store import safe_label

    assert (
        safe_label("postgresql://relay:hunter2@db.example:5432/runs")
        == "postgresql://relay@db.example:5432/runs"
    )
    with Store.open(store_url) as store:
        assert "hunter2" not in repr(store)


def test_bad_urls_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a store URL"):
        Store.open("mysql://x/y")
    with pytest.raises(ValueError, match="names a file"):
        Store.open("sqlite://")


def test_groups_json_is_plain(store_url: str) -> None:
    with Store.open(store_url) as store:
        store.add(varied(40, seed=1))
        text = json.dumps([g.to_json() for g in store.groups(by=("account",))])
        groups = json.loads(text)
        assert {g["key"]["account"] for g in groups} <= {*ACCOUNTS, None}
        assert all(
            g["runs"] >= g["count"] > 0 and g["failure_rate"] == round(g["count"] / g["runs"], 6)
            for g in groups
        )


def _rewritten(records: list[RunRecord]) -> list[RunRecord]:
    """Later records of every fifth run, with another route, account and start hour (moving its counts)."""
    out = []
    for i, record in enumerate(records[::5]):
        data = record.to_dict()
        data["ids"] = {**data["ids"], "context": {**data["ids"]["context"], "route": ROUTES[i % 3]}}
        data["ids"]["context"]["account"] = ACCOUNTS[(i + 1) % 3]
        when = started(record)
        if when is not None:
            data["started_at"] = (when + timedelta(minutes=47)).isoformat()
        out.append(RunRecord(data))
    return out


def test_the_page_by_route_and_account_reads_counts_that_match_the_runs(store_url: str) -> None:
    """The SQLite property (test_store_properties) as an example on both databases: runs written, some
    again with other values, pruned; windows off the hour; then, with a count taken away, the page by
    route differs (it reads the counts)."""
    records = varied(300, seed=12)
    with Store.open(store_url) as store:
        store.add(records[:200])
        store.add(records[200:] + _rewritten(records))
        store.prune(T0 + timedelta(minutes=50))
        # (the page's 24 buckets of a 24-hour window are whole hours, of the others not)
        off = T0 + timedelta(minutes=31, seconds=5)
        for since, hours in ((off, 4.6), (T0, 24.0), (T0 - timedelta(minutes=7), 26.0), (T0, 0.5)):
            counted, scanned = page_views(store, since, since + timedelta(hours=hours))
            assert counted == scanned
            assert counted["route"]["runs"] > 0
            assert counted["account"]["groups"]
        second_hour = int(T0.timestamp()) // 3600 + 1
        store._db.write(lambda db: db.execute("DELETE FROM hourly_route WHERE hour = ?", [second_hour]))
        counted, scanned = page_views(store, T0, T0 + timedelta(hours=24))
        assert counted["route"] != scanned["route"]
        assert counted["account"] == scanned["account"]


def test_a_store_of_the_earlier_schema_gets_its_counts_when_opened(store_url: str) -> None:
    """A store written before the route and account counts existed (the same schema without their tables)
    counts them from its runs when opened, and its page is the page from the runs."""
    records = varied(200, seed=13)
    with Store.open(store_url) as store:
        store.add(records)
        new = ("hourly_route", "hourly_account")
        store._db.write(lambda db: [db.execute(f"DROP TABLE {table}") for table in new])
    with Store.open(store_url) as store:
        assert store._db.query("SELECT SUM(n) FROM hourly_route")[0][0] == len(records)
        assert store._db.query("SELECT SUM(n) FROM hourly_account")[0][0] == len(records)
        since = T0 + timedelta(minutes=17)
        counted, scanned = page_views(store, since, since + timedelta(hours=5))
        assert counted == scanned
        store.add(_rewritten(records))  # and keeps them from then on
        counted, scanned = page_views(store, since, since + timedelta(hours=5))
        assert counted == scanned


def test_runs_delivered_twice_at_once_are_counted_once(postgres_url: str) -> None:
    """Two writers (two relays re-delivering the same records) index the same runs at the same moment: each
    run is counted once. On PostgreSQL each found the runs new before the other committed, and both counted
    them; SQLite's writers take turns."""
    import threading

    records = varied(400, seed=21)
    stores = [Store.open(postgres_url) for _ in range(2)]
    try:
        stores[0].clear()
        for part in range(4):
            batch = records[part * 100 : (part + 1) * 100]
            start = threading.Barrier(2)

            def write(store: Store, batch: list[RunRecord] = batch, start: threading.Barrier = start) -> None:
                start.wait(10)
                store.add(batch)

            writers = [threading.Thread(target=write, args=(store,)) for store in stores]
            for writer in writers:
                writer.start()
            for writer in writers:
                writer.join(60)
        counted, scanned = page_views(stores[0], T0 - timedelta(hours=1), T0 + timedelta(hours=23))
        assert scanned["route"]["runs"] == 400
        assert counted == scanned
    finally:
        for store in stores:
            store.close()


# -- the errors page at a glance: the window before, ranks, honest totals --------------------------------


def _counted(
    records: list[Any], names: tuple[str, ...], since: Any, until: Any
) -> tuple[Counter[Any], Counter[Any]]:
    """Failed runs per key of ``names`` and all runs per key's context, by hand, in ``[since, until)``."""
    context = [n for n in names if n not in ("summary_key", "class", "transport_kind", "close")]
    inside = [r for r in records if (when := started(r)) is not None and since <= when < until]
    failures = Counter(
        tuple(field_value(r, n) for n in names) for r in inside if r.failure_class != "completed"
    )
    runs = Counter(tuple(field_value(r, n) for n in context) for r in inside)
    return failures, runs


@pytest.mark.parametrize("names", [SIGNATURE, ("class",), ("route",), ("account",)], ids="+".join)
def test_the_window_before_is_counted_from_the_hourly_counts_alone(
    store_url: str, names: tuple[str, ...]
) -> None:
    records = varied(600, seed=21, span=timedelta(hours=12))
    window = Filters(since=T0 + timedelta(hours=6, minutes=20), until=T0 + timedelta(hours=11, minutes=50))
    with Store.open(store_url) as store:
        store.add(records)
        earlier = store.earlier(window, names)
        assert earlier is not None
        # as long as the window in whole hours, ending at the hour the window starts in
        assert (earlier.since, earlier.until) == (T0, T0 + timedelta(hours=6))
        failures, runs = _counted(records, names, earlier.since, earlier.until)
        assert dict(earlier.failures) == dict(failures)
        assert dict(earlier.runs) == dict(runs)
        store._db.execute("DELETE FROM runs")  # the hourly counts stay: the runs are never read for it
        again = store.earlier(window, names)
        assert again is not None
        assert (dict(again.failures), dict(again.runs)) == (dict(failures), dict(runs))


def test_no_window_before_where_the_hourly_counts_do_not_count_the_view(store_url: str) -> None:
    window = Filters(since=T0, until=T0 + timedelta(hours=6))
    with Store.open(store_url) as store:
        store.add(varied(50, seed=2))
        assert store.earlier(Filters(since=T0, until=T0 + timedelta(hours=6), route=ROUTES[0])) is None
        assert store.earlier(window, ("route", "class")) is None
        assert store.earlier(Filters(since=T0)) is None  # open at its end
        assert store.earlier(window, ("route",)) is not None


def test_a_rank_orders_the_groups_and_a_limit_keeps_the_highest(store_url: str) -> None:
    def rate(key: Any, failures: int, runs: int) -> float:
        return failures / runs

    with Store.open(store_url) as store:
        store.add(varied(400, seed=5))
        every = store.groups(by=("account", "class"), rank=rate)
        rates = [g.failure_rate for g in every]
        assert rates == sorted(rates, reverse=True) and len(set(rates)) > 2
        assert store.groups(by=("account", "class"), rank=rate, limit=3) == every[:3]


def test_matching_counts_every_run_a_view_pages_through(store_url: str) -> None:
    records = varied(300, seed=8)
    with Store.open(store_url) as store:
        store.add(records)
        for filters in (
            Filters(route=ROUTES[1]),
            Filters(failure_class="mid_generation"),
            Filters(since=T0 + timedelta(hours=2), until=T0 + timedelta(hours=4, minutes=30)),
        ):
            listed, before = 0, None
            while True:
                page = store.runs(filters, failed=True, limit=40, before=before)
                listed += len(page.runs)
                if page.next_before is None:
                    break
                before = page.next_before
            assert store.matching(filters, failed=True) == listed > 0
            assert store.matching(filters) == store.totals(filters).runs


def test_a_trend_also_answers_for_keys_without_a_failure(store_url: str) -> None:
    records = varied(300, seed=9)
    since, until = T0, T0 + timedelta(hours=6)
    with Store.open(store_url) as store:
        store.add(records)
        failing = {t.key for t in store.trend(since, until, 6, by=("class",))}
        quiet = ("consumer_error",)
        assert quiet not in failing
        trends = store.trend(since, until, 6, by=("class",), also=[quiet])
        extra = next(t for t in trends if t.key == quiet)
        assert extra.failures == (0,) * 6
        assert sum(extra.runs) == sum(
            1 for r in records if (w := started(r)) is not None and since <= w < until
        )
        assert {t.key for t in trends} == failing | {quiet}
