"""The chaos soak: hundreds of concurrent runs against one fault server, a random catalog fault per run.

Afterwards every run has exactly one record (counted by a sink and in the audit log on disk, by run id and
by scenario), no run is left
unclassified, and every record's class (and verdict, edge, phase) is what the injected fault's scenario
expects. The RNG seed is printed; replay one with ``STREAMFSM_SOAK_SEED=<seed>``. The bigger variant is
``python -m benchmarks.soak --runs 5000 --concurrency 1000``.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import time
from pathlib import Path

import anyio
import pytest

from streamfsm import AuditLog, FailureClass, RunRecord, StreamConfig, read_records
from streamfsm.testing import Scenario, catalog, peak_in_flight, run_catalog

pytestmark = [pytest.mark.soak, pytest.mark.anyio]

RUNS = 600
CONCURRENCY = 300
BOUND = 50.0  # seconds: the soak takes a few on a 2-core machine


def chaos(runs: int, seed: int) -> list[Scenario]:
    """``runs`` scenarios drawn at random from the whole catalog, each under a name of its own."""
    rng = random.Random(seed)
    # Played through the runtime; one record per scenario is what the soak counts, so a scenario of several
    # runs on one connection (a WebSocket's second response) is left to test_scenarios.
    pool = [s for s in catalog() if s.streaming and s.meta.get("responses", 1) == 1]
    return [dataclasses.replace(s, name=f"{s.name}#{i}") for i, s in enumerate(rng.choices(pool, k=runs))]


async def test_chaos_soak(anyio_backend: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("STREAMFSM_SOAK_SEED") or random.SystemRandom().randrange(2**32))
    print(f"soak seed {seed} ({anyio_backend}): replay with STREAMFSM_SOAK_SEED={seed}")
    scenarios = chaos(RUNS, seed)
    delivered: list[RunRecord] = []
    started = time.monotonic()
    with anyio.fail_after(BOUND):
        outcomes = await run_catalog(
            scenarios,
            concurrency=CONCURRENCY,
            config=StreamConfig(sinks=(delivered.append, AuditLog(tmp_path / "audit.jsonl"))),
        )
    seconds = time.monotonic() - started
    peak = peak_in_flight(outcomes)
    print(f"{RUNS} runs, up to {peak} in flight, {seconds:.2f} s, {RUNS / seconds:.0f} runs/s")
    assert peak >= 100, f"only {peak} runs were ever in flight at once"

    assert len(outcomes) == RUNS
    # Exactly one record per run: one delivery per run id, one run id per scenario, nothing extra.
    by_run = collections.Counter(record.run_id for record in delivered)
    assert len(delivered) == RUNS, f"seed {seed}: {len(delivered)} records for {RUNS} runs"
    assert max(by_run.values()) == 1, f"seed {seed}: a run delivered twice"
    by_scenario = collections.Counter(record["ids"]["context"]["scenario"] for record in delivered)
    assert set(by_scenario) == {s.name for s in scenarios} and max(by_scenario.values()) == 1
    assert {o.record.run_id for o in outcomes if o.record is not None} == set(by_run)
    # The audit log on disk holds the same: one intact line per run, none lost, none twice.
    logged = collections.Counter(
        record.run_id for record in read_records(tmp_path / "audit.jsonl", rotated=True)
    )
    assert logged == by_run, f"seed {seed}: the audit log disagrees with the runs"
    # None unclassified, each as its fault says.
    known = {c.value for c in FailureClass}
    for record in delivered:
        assert record.failure_class in known and record.summary_key, (seed, record.summary_key)
    mismatched = [(o.name, o.mismatch) for o in outcomes if not o.matched]
    assert not mismatched, f"seed {seed}: {len(mismatched)} mismatched, e.g. {mismatched[:5]}"
    injected = collections.Counter(o.failure_class for o in outcomes)
    assert len(injected) >= 8, f"seed {seed}: the draw covered too few classes: {injected}"
