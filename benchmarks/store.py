"""The run store at 10k, 100k and 1M runs, on SQLite and PostgreSQL: what the errors page, a run page,
``streamfsm report`` and ``streamfsm diagnose --request-id`` cost, and what keeping the index costs a stream.

    python -m benchmarks.store [--quick] [--sizes 10000 100000 1000000] [--backends sqlite postgres]
                               [--postgres URL] [--repeat 5]

Setup: the store is filled with synthetic rows (the six record shapes of the log tests, each row with its
own run id, request id, start time over 30 days, provider, model, route and account; 20% failed; every row
carries a real compressed record, the template's, so a lookup decodes as much as a real one), loaded in
bulk, not through real runs. PostgreSQL: a throwaway server on loopback started from the distribution's
packages with its default settings (tests/support/pgserver.py), unless ``--postgres`` names one.

Rows, wall time per query (median of ``--repeat``), target at most 300 ms at every size:

* ``errors page: groups``: ``Store.groups`` by signature over every run, and over the last 24 hours; by
  account over the last 24 hours;
* ``errors page: trend``: ``Store.trend``, 24 hourly buckets of the last 24 hours;
* ``run page: record by run id``: ``Store.record`` of a random run;
* ``relay errors page``: the relay's whole page as data (``page_report``: totals, groups with rates, a trend
  per group) by signature, class, route and account over 24 hours, 7 days and 30 days, and by signature over
  7 days filtered by one account, model, provider, class or route; ``relay runs page`` (``page_runs``: one
  page of failed runs) over 24 hours, 30 days, and 7 days of one route;
* ``report --json`` and ``diagnose --request-id``: the commands in this process, output discarded.

At the smallest size, when it is at most 10k, the commands are also timed over a JSON-lines audit log of as
many runs (today's path), the baseline.

``default setup`` (no ``--store``: the relay's own SQLite file beside its audit log, kept current from the
log by ``LogIndexer``): CPU per run of indexing what the audit log gained (the indexer's pass over real
audit lines), against the two ways before it in the same run: ``StoreSink`` (``--store``: each record as it
ends) and the page's own indexing at a view (``Store.add_logs`` over the log, what every view did with what
the log gained). Then the first view after N runs (the largest size): the relay's errors page (its default
view, ``ErrorsData.report``) over a store the indexer kept current through N runs, the log having gained the
last quarter second's runs (``APPENDED``) since its last pass; against the first view of the default setup
before, which indexed every run at that view: the page's own indexing per run (measured over
``default_records`` runs) times N, plus the same view's queries (an estimate: at 1M it takes minutes).

``keeping the index``: CPU per record of ``StoreSink`` (the call and its writer thread), as a ratio of one
``open_stream`` run's own CPU (the section-1 OpenAI payload over an in-memory transport); and of that, what
keeping the hourly counts per route and per account costs (the sink with them against the sink without).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ._report import Row, print_table

SECTION = "store: the run index at scale (SQLite and PostgreSQL)"
TARGET_MS = 300.0
SIZES = (10_000, 100_000, 1_000_000)
LOG_BASELINE_MAX = 10_000
APPENDED = 250
"""Runs a busy relay's audit log gains between two passes of its indexer (1,000 runs a second)."""
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
SPAN = timedelta(days=30)
ROUTES = tuple(f"/v1/route-{i}" for i in range(10))
ACCOUNTS = tuple(f"acct-{i:02d}" for i in range(50))
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-sonnet", "claude-haiku")
PAGE_WINDOWS = ("24h", "7d", "30d")
PAGE_FILTERS = (
    ("account", ACCOUNTS[0]),
    ("model", MODELS[0]),
    ("provider", "anthropic"),
    ("class", "mid_generation"),
)


def _templates() -> list[dict[str, Any]]:
    from tests.support.logs import SCENARIOS

    return [scenario().to_dict() for scenario in SCENARIOS]


def synthetic_rows(count: int, seed: int = 0) -> Iterator[tuple[Any, ...]]:
    """``count`` store rows (``streamfsm.store._backends.COLUMNS``), start times rising over ``SPAN``."""
    rng = random.Random(seed)
    shapes = []
    for data in _templates():
        blob = zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 1)
        outcome = data["outcome"]
        kind = (data.get("transport") or {}).get("kind") or ""
        shapes.append((outcome["class"], outcome["summary_key"], kind, data["summary"]["title"], blob))
    completed = [s for s in shapes if s[0] == "completed"]
    failed = [s for s in shapes if s[0] != "completed"]
    start = NOW - SPAN
    step = SPAN / count
    for i in range(count):
        klass, key, kind, title, blob = rng.choice(failed) if rng.random() < 0.2 else rng.choice(completed)
        when = start + step * i
        yield (
            f"run-{i:08d}",
            int(when.timestamp() * 1_000_000),
            int(klass != "completed"),
            klass,
            key,
            "openai-chat" if i % 3 else "anthropic",
            rng.choice(MODELS),
            kind,
            rng.choice(ROUTES),
            rng.choice(ACCOUNTS),
            f"req-{i:08d}",
            f"preq-{i:08d}",
            "",
            title,
            blob,
        )


def _audit_log(path: Path, count: int, prefix: str = "run") -> None:
    """The same runs as ``synthetic_rows`` (without the provider/route variety), as an audit log (run ids
    ``<prefix>-<i>``)."""
    templates = _templates()
    rng = random.Random(0)
    completed = [t for t in templates if t["outcome"]["class"] == "completed"]
    failed = [t for t in templates if t["outcome"]["class"] != "completed"]
    start, step = NOW - SPAN, SPAN / count
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            data = rng.choice(failed) if rng.random() < 0.2 else rng.choice(completed)
            data = {**data, "ids": {**data["ids"], "run_id": f"{prefix}-{i:08d}"}}
            data["ids"]["context"] = {"request_id": f"req-{i:08d}", "route": rng.choice(ROUTES)}
            data["started_at"] = (start + step * i).isoformat(timespec="milliseconds")
            f.write(json.dumps(data, separators=(",", ":")) + "\n")


def _wall_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up: caches, the first page read from disk
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _command(*argv: str) -> Callable[[], None]:
    from streamfsm.cli import main

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(list(argv))
        if code != 0:
            raise RuntimeError(f"streamfsm {' '.join(argv[:2])} exited {code}")

    return run


def _fill(url: str, count: int) -> float:
    """Empty the store at ``url`` and load ``count`` synthetic rows; seconds taken."""
    from streamfsm.store import Store

    started = time.perf_counter()
    with Store.open(url) as store:
        store.clear()
        rows = synthetic_rows(count)
        while True:
            batch = [row for _, row in zip(range(50_000), rows, strict=False)]
            if not batch:
                break
            store._write(batch, fresh=True)
        # what a store that has run a while has: statistics, and on PostgreSQL a visibility map
        # (autovacuum's), without which an index-only scan still reads every row
        store._db.execute("VACUUM ANALYZE" if store.kind == "postgresql" else "ANALYZE")
    return time.perf_counter() - started


def _queries(url: str, count: int, repeat: int, baselines: dict[str, float]) -> list[Row]:
    from streamfsm.relay import PageQuery
    from streamfsm.relay._errors import page_report, page_runs
    from streamfsm.store import Filters, Store

    rng = random.Random(1)
    rows = []
    day = Filters(since=NOW - timedelta(days=1))
    with Store.open(url) as store:
        kind = store.kind
        size = f"{count:,}"

        def row(name: str, fn: Callable[[], Any], baseline: str | None = None) -> None:
            value = _wall_ms(fn, repeat)
            base = baselines.get(baseline) if baseline else None
            rows.append(
                Row(
                    SECTION,
                    f"{kind} {size}: {name}",
                    value,
                    "ms",
                    baseline=base,
                    baseline_name=f"the same from a {size}-run audit log" if base is not None else "",
                    target=None if base is not None else TARGET_MS,
                    note="" if base is not None else f"target: at most {TARGET_MS:.0f} ms",
                )
            )

        row("errors page: groups, all runs", lambda: store.groups())
        row("errors page: groups, last 24 h", lambda: store.groups(day))
        row("errors page: trend, last 24 h", lambda: store.trend(NOW - timedelta(days=1), NOW, 24))
        row("errors page: groups by account, last 24 h", lambda: store.groups(day, ("account",)))
        row("run page: record by run id", lambda: store.record(f"run-{rng.randrange(count):08d}"))
        # the relay's pages as data, as it asks the store for them: page_report (totals, groups with rates, a
        # trend per group) per view and window, filtered; page_runs (the failed runs, the latest first)
        end = NOW.isoformat()
        for by in ("signature", "class", "route", "account"):
            for window in PAGE_WINDOWS:
                view = PageQuery(by=by, since=window, until=end)
                row(f"relay errors page by {by}, {window}", lambda v=view: page_report(store, v, "bench"))
        for name, value in (*PAGE_FILTERS, ("route", ROUTES[0])):
            view = PageQuery(since="7d", until=end, filters=((name, value),))
            row(f"relay errors page, 7d, one {name}", lambda v=view: page_report(store, v, "bench"))
        for window, filters in (("24h", ()), ("30d", ()), ("7d", (("route", ROUTES[0]),))):
            view = PageQuery(since=window, until=end, filters=filters)
            label = f"relay runs page, {window}" + (", one route" if filters else "")
            row(label, lambda v=view: page_runs(store, v, "bench"))
    row("report --json", _command("report", "--store", url, "--json"), "report")
    request = f"req-{count // 2:08d}"
    row("diagnose --request-id", _command("diagnose", "--store", url, "--request-id", request), "diagnose")
    return rows


def _log_baselines(folder: Path, count: int, repeat: int) -> dict[str, float]:
    log = folder / "audit.jsonl"
    _audit_log(log, count)
    request = f"req-{count // 2:08d}"
    return {
        "report": _wall_ms(_command("report", str(log), "--json"), repeat),
        "diagnose": _wall_ms(_command("diagnose", str(log), "--request-id", request), repeat),
    }


def _stream_cpu(repeat: int) -> float:
    """CPU seconds of one open_stream run of the section-1 OpenAI payload, in memory."""
    import anyio
    import httpx

    from ._payloads import make
    from ._transport import MemoryTransport
    from .overhead import _ours

    payload = make("openai-chat")
    client = httpx.AsyncClient(transport=MemoryTransport(payload.chunks("bulk")))
    run = _ours(client, "openai-chat")

    async def measure() -> float:
        await run()
        samples = []
        for _ in range(repeat):
            started = time.process_time()
            await run()
            samples.append(time.process_time() - started)
        return statistics.median(samples)

    return anyio.run(measure)


def _sink_cpu(url: str, records: int, prefix: str = "sink") -> float:
    """CPU seconds per record of a StoreSink: the calls and the writer thread's inserts."""
    from streamfsm.store import StoreSink
    from tests.support.logs import SCENARIOS, with_ids

    templates = [scenario() for scenario in SCENARIOS]
    batch = [with_ids(templates[i % len(templates)], f"{prefix}-{i:06d}") for i in range(records)]
    sink = StoreSink(url)
    started = time.process_time()
    for record in batch:
        sink(record)
    if not sink.flush(600):
        raise RuntimeError("the store sink did not catch up")
    took = time.process_time() - started
    sink.close()
    return took / records


@contextlib.contextmanager
def _counting_only(*tables: str) -> Iterator[None]:
    """The store's writes keep only these tables of counts (what keeping the others costs, by difference)."""
    from streamfsm.store import _counts

    kept = _counts.COUNTS
    _counts.COUNTS = {table: kept[table] for table in tables}  # type: ignore[misc]
    try:
        yield
    finally:
        _counts.COUNTS = kept  # type: ignore[misc]


def _counts_cpu(url: str, records: int, rounds: int = 3) -> tuple[float, float]:
    """CPU seconds per record of a StoreSink with the route and account counts and without them:
    interleaved rounds (fresh run ids each), the medians."""
    every, signature_only = [], []
    for i in range(rounds):
        every.append(_sink_cpu(url, records, f"counts-{i}"))
        with _counting_only("hourly"):
            signature_only.append(_sink_cpu(url, records, f"hourly-{i}"))
    return statistics.median(every), statistics.median(signature_only)


def _indexing_cpu(folder: Path, records: int) -> dict[str, float]:
    """CPU seconds per run of three ways of indexing ``records`` runs of an audit log: the indexer's pass
    (``catch_up``), the page's own indexing at a view before it (``add_logs``), and ``StoreSink``."""
    from streamfsm.store import Store, catch_up

    log = folder / "indexed.jsonl"
    _audit_log(log, records, prefix="indexed")
    out = {}
    for name in ("indexer", "view"):
        path = folder / f"indexed-{name}.db"
        with Store.open(str(path)) as store:
            started = time.process_time()
            if name == "indexer":
                catch_up(store, [log], lambda problem: None)
            else:
                store.add_logs([log])
            out[name] = (time.process_time() - started) / records
            if store.count() != records:
                raise RuntimeError(f"{name}: {store.count()} runs indexed of {records}")
    out["sink"] = _sink_cpu(f"sqlite:///{folder / 'indexed-sink.db'}", records)
    return out


def _first_view(folder: Path, count: int, repeat: int, per_run_before: float) -> list[Row]:
    """The default setup's first view of the errors page after ``count`` runs, now and (estimated) before."""
    from streamfsm.relay import PageQuery
    from streamfsm.relay._errors import ErrorsData, default_store
    from streamfsm.runtime import AuditLog, read_records
    from streamfsm.store import Store, catch_up

    audit = folder / "relay-audit.jsonl"
    _audit_log(audit, APPENDED * (repeat + 2), prefix="relayed")
    lines = audit.read_bytes().splitlines(keepends=True)
    audit.write_bytes(b"".join(lines[:APPENDED]))
    path = default_store(audit)
    _fill(str(path), count)  # the runs the indexer kept indexed (the first ones read from the log too)
    with Store.open(str(path)) as store:
        catch_up(store, [audit], lambda problem: None)
    view = PageQuery(until=NOW.isoformat())
    data = ErrorsData(None, [str(audit)], journal=str(audit), audit=str(audit))
    samples = []
    try:
        assert data.indexer is not None
        assert data.indexer.flush(600)
        log = AuditLog(audit, max_bytes=None)
        for i in range(1, repeat + 2):  # the first round warms the caches, as _wall_ms does
            for record in read_records(io.BytesIO(b"".join(lines[APPENDED * i : APPENDED * (i + 1)]))):
                log(record)
            started = time.perf_counter()
            report = data.report(view)
            samples.append((time.perf_counter() - started) * 1000)
        assert data.store is not None
        indexed = data.store.count()
        queries = _wall_ms(lambda: data.report(view), repeat)
    finally:
        data.close()
    if indexed != count + APPENDED * (repeat + 2):
        raise RuntimeError(f"the first view found {indexed} runs indexed")
    if report["runs"] <= 0:
        raise RuntimeError("the first view found no run in its window")
    now = statistics.median(samples[1:])
    before = per_run_before * count * 1000 + queries
    return [
        Row(
            SECTION,
            f"sqlite {count:,}: default setup, first view of the errors page",
            now,
            "ms",
            baseline=before,
            baseline_name=f"the default setup before: every run indexed at the first view (estimated:"
            f" {per_run_before * 1e6:.0f} us a run x {count:,} + the view's queries)",
            note=f"the log gained {APPENDED} runs since the indexer's last pass; target: at most"
            f" {TARGET_MS:.0f} ms (the queries alone: {queries:.0f} ms)",
        )
    ]


@contextlib.contextmanager
def _postgres(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    from tests.support.pgserver import postgres_server

    with postgres_server(durable=True) as url:
        yield url


def measure(
    sizes: tuple[int, ...] = SIZES,
    backends: tuple[str, ...] = ("sqlite", "postgres"),
    *,
    repeat: int = 5,
    postgres: str | None = None,
    sink_records: int = 2000,
    default_records: int = 5000,
) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        if "sqlite" in backends:
            ways = _indexing_cpu(folder, default_records)
            note = f"{default_records:,} runs of an audit log"
            for way, name in (
                ("sink", "StoreSink (--store, before and now)"),
                ("view", "at a view (before)"),
            ):
                rows.append(
                    Row(
                        SECTION,
                        f"sqlite: default setup, indexing CPU per run, the indexer against {name}",
                        ways["indexer"] * 1e6,
                        "us",
                        baseline=ways[way] * 1e6,
                        baseline_name=f"indexing {name}",
                        note=note,
                    )
                )
            rows += _first_view(folder, max(sizes), repeat, ways["view"])
        urls = {}
        if "sqlite" in backends:
            urls["sqlite"] = f"sqlite:///{folder / 'runs.db'}"
        if "postgres" in backends:
            urls["postgres"] = stack.enter_context(_postgres(postgres))
        # Today's path reads the whole log per command: measured at 10k runs at most (1M would take hours).
        logged = min(sizes) if min(sizes) <= LOG_BASELINE_MAX else None
        baselines = _log_baselines(folder, logged, repeat) if logged else {}
        stream = _stream_cpu(repeat)
        for name, url in urls.items():
            per_record = _sink_cpu(url, sink_records)
            rows.append(
                Row(
                    SECTION,
                    f"{name}: keeping the index, CPU per record",
                    per_record * 1e6,
                    "us",
                    baseline=stream * 1e6,
                    baseline_name="one open_stream run's own CPU (section 1's OpenAI payload)",
                    note=f"StoreSink calls and writer thread, {sink_records} records",
                )
            )
            with_counts, without = _counts_cpu(url, sink_records)
            rows.append(
                Row(
                    SECTION,
                    f"{name}: keeping the index with the route and account counts, CPU per record",
                    with_counts * 1e6,
                    "us",
                    baseline=without * 1e6,
                    baseline_name="the same without them (the signature and class counts only)",
                    note=f"median of 3 interleaved rounds of {sink_records} records each",
                )
            )
            for count in sizes:
                loaded = _fill(url, count)
                size_baselines = baselines if count == logged else {}
                measured = _queries(url, count, repeat, size_baselines)
                measured[0].note = f"{count:,} synthetic runs loaded in {loaded:.1f} s; " + measured[0].note
                rows += measured
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k runs only")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="runs in the store")
    parser.add_argument(
        "--backends", nargs="+", choices=("sqlite", "postgres"), default=["sqlite", "postgres"]
    )
    parser.add_argument("--postgres", metavar="URL", help="an existing server (default: a throwaway one)")
    parser.add_argument("--repeat", type=int, default=5, help="timings per query (median)")
    parser.add_argument(
        "--default-records",
        type=int,
        default=5000,
        help="audit log runs the indexing costs are measured over",
    )
    args = parser.parse_args(argv)
    sizes = (10_000,) if args.quick else tuple(args.sizes)
    if min(sizes) < 1 or args.repeat < 1:
        parser.error("--sizes and --repeat must be positive")
    rows = measure(
        sizes,
        tuple(args.backends),
        repeat=args.repeat,
        postgres=args.postgres,
        default_records=args.default_records,
    )
    print_table(SECTION, rows)
    return 0 if all(row.met is not False for row in rows) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
