"""The JSON-lines logs under a burst of writers: records lost, torn and doubled, and how long the event
loop of a writing process stands still, with other processes writing to the same file as fast as they can.

    python -m benchmarks.logs [--quick] [--writers 6] [--records 2000] [--max-bytes 1048576]

Setup: ``--writers - 1`` spawned processes append records to one ``AuditLog`` as fast as they can (rotating at
``--max-bytes``, with backups enough to keep every line), while this process's event loop delivers records
to the same log from a task and a ticker measures the loop's lag (the longest gap between 1 ms sleeps). The
baseline is the same loop and ticker delivering to a log nobody else writes. Targets: 0 lost, 0 torn, 0
doubled; the loop's longest stall at most 50 ms.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ._report import Row, print_table

SECTION = "logs: several processes appending to one audit log, with rotation"
STALL_TARGET_MS = 50.0


def _writer(path: str, worker: int, count: int, max_bytes: int, start: Any) -> None:
    from streamfsm.runtime.records._sinks import AuditLog
    from tests.support.logs import SCENARIOS, with_ids

    sink = AuditLog(path, max_bytes=max_bytes, backups=10_000)
    templates = [scenario() for scenario in SCENARIOS]
    if not start.wait(60):
        raise TimeoutError("start gate never opened")
    for i in range(count):
        sink(with_ids(templates[i % len(templates)], f"w{worker}-{i:06d}"))


def _loop_stall(path: Path, count: int, max_bytes: int) -> float:
    """Deliver ``count`` records from a task on an event loop; the loop's longest stall, in ms."""
    import anyio

    from streamfsm.runtime.records._sinks import AuditLog, deliver
    from tests.support.logs import SCENARIOS, with_ids

    sink = AuditLog(path, max_bytes=max_bytes, backups=10_000)
    templates = [scenario() for scenario in SCENARIOS]
    worst = 0.0

    async def main() -> None:
        nonlocal worst
        done = anyio.Event()

        async def ticker() -> None:
            nonlocal worst
            last = time.perf_counter()
            while not done.is_set():
                await anyio.sleep(0.001)
                now = time.perf_counter()
                worst = max(worst, now - last - 0.001)
                last = now

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            for i in range(count):
                deliver([sink], with_ids(templates[i % len(templates)], f"loop-{i:06d}"))
                await anyio.sleep(0)
            done.set()

    anyio.run(main)
    return worst * 1000


def _count(path: Path) -> tuple[int, Counter[str]]:
    """Lines that do not parse (torn), and run ids seen, over the log and its backups."""
    import json

    from streamfsm.runtime.records._logs import log_files

    torn, ids = 0, Counter[str]()
    for file in log_files(path):
        for line in file.read_bytes().split(b"\n"):
            if not line.strip():
                continue
            try:
                ids[json.loads(line)["ids"]["run_id"]] += 1
            except ValueError:
                torn += 1
    return torn, ids


def measure(writers: int, records: int, max_bytes: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        baseline_ms = _loop_stall(Path(folder) / "alone.jsonl", records, max_bytes)
        path = Path(folder) / "audit.jsonl"
        ctx = multiprocessing.get_context("spawn")
        start = ctx.Event()
        procs = [
            ctx.Process(target=_writer, args=(str(path), w, records, max_bytes, start))
            for w in range(writers - 1)
        ]
        for proc in procs:
            proc.start()
        started = time.perf_counter()
        start.set()
        stall_ms = _loop_stall(path, records, max_bytes)
        for proc in procs:
            proc.join(600)
        took = time.perf_counter() - started
        if any(proc.exitcode != 0 for proc in procs):
            raise RuntimeError("a writer process failed")
        torn, ids = _count(path)
        files = len(list(path.parent.glob(path.name + "*"))) - 1  # less the lock file
    expected = writers * records
    lost = expected - len(ids)
    doubled = sum(n - 1 for n in ids.values() if n > 1)
    note = f"{writers} processes x {records} records, {files} files, {expected / took:,.0f} records/s in all"
    return [
        Row(SECTION, "records lost", lost, "", target=0, note=note),
        Row(SECTION, "lines torn", torn, "", target=0),
        Row(SECTION, "records doubled", doubled, "", target=0),
        Row(
            SECTION,
            "event loop's longest stall",
            stall_ms,
            "ms",
            baseline=baseline_ms,
            baseline_name="the same loop, no other writer",
            note=f"target: at most {STALL_TARGET_MS:.0f} ms",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.logs", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 records per writer")
    parser.add_argument("--writers", type=int, default=6, help="processes writing, this one included")
    parser.add_argument("--records", type=int, default=2000, help="records per writer")
    parser.add_argument("--max-bytes", type=int, default=1 << 20, help="rotation size")
    args = parser.parse_args(argv)
    if args.writers < 1 or args.records < 1 or args.max_bytes < 1:
        parser.error("--writers, --records and --max-bytes must be positive")
    rows = measure(args.writers, 500 if args.quick else args.records, args.max_bytes)
    print_table(SECTION, rows)
    stall = rows[-1].value
    return 0 if all(row.value == 0 for row in rows[:3]) and stall <= STALL_TARGET_MS else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
