"""streamfsm benchmarks: every figure as a ratio to a baseline measured in the same run.

Run with the project's venv (streamfsm, the SDKs, trio): ``.venv/bin/python -m benchmarks``.

    python -m benchmarks                  # the full run (about 8 minutes on 2 cores)
    python -m benchmarks --quick          # every section, smaller, under a minute
    python -m benchmarks --json out.json  # also write every result, with machine and package versions

Sections (``--only 1 3`` runs a subset):

1. Per-stream CPU overhead over an in-memory transport (``benchmarks.overhead``): ``open_stream`` vs the
   raw floor (plain httpx + ``json.loads``), vs the ``openai`` / ``anthropic`` SDKs' own iteration of the
   same bytes, and ``wrap()`` around an SDK stream vs the bare SDK stream.
2. Per-event machine cost (``benchmarks.machine``): the compiled table vs a ``transitions`` trigger.
3. Concurrency against the local fault provider over loopback (``benchmarks.concurrency``): completion,
   throughput, CPU per event, event-loop lag, memory per live run, vs plain httpx; both anyio backends.
4. Bounded memory (``benchmarks.memory``): record size and process memory for 1k, 100k, 1M deltas.
5. Watchdog accuracy: how late idle timeouts fire under the load of 1,000 streams.
6. The tap (``benchmarks.tap``): the ``openai`` / ``anthropic`` SDKs' own iteration with and without the tap
   in their client's transport, over section 1's in-memory transport, and the tap taken apart layer by layer.
7. Routes configured, no failure (``benchmarks.routes``): ``retrying()`` over two ``Route``s vs over one plain
   ``open_attempt``, the same stream over section 1's in-memory transport, CPU and wall time per stream.

Targets are the issue's; they are measured and reported, never asserted. Numbers are for the machine they
ran on: compare ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Any

from ._report import Row, machine_info, print_table, write_json

_T0 = time.perf_counter()


def _log(message: str) -> None:
    print(f"[{time.perf_counter() - _T0:5.1f} s] {message}", file=sys.stderr, flush=True)


_NEEDS = ("streamfsm", "httpx", "anyio", "trio", "openai", "anthropic")
_HEARTBEAT_S = 20.0


class _Heartbeat:
    """A line on standard error every ``_HEARTBEAT_S`` while a long section runs, so a quiet terminal is
    not mistaken for a hang (the sections measure CPU: a line costs nothing they count)."""

    def __init__(self) -> None:
        self._what = ""
        self._since = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="benchmarks-heartbeat", daemon=True)
        self._thread.start()

    def section(self, what: str) -> None:
        self._what, self._since = what, time.perf_counter()
        _log(f"{what} ...")

    def _beat(self) -> None:
        while not self._stop.wait(_HEARTBEAT_S):
            if self._what:
                _log(f"{self._what}: still running ({time.perf_counter() - self._since:.0f} s so far)")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


def _missing() -> list[str]:
    import importlib.util

    return [m for m in _NEEDS if importlib.util.find_spec(m) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (under 60 s)")
    parser.add_argument("--json", metavar="PATH", help="write all results to PATH as JSON")
    parser.add_argument("--only", nargs="*", type=int, choices=range(1, 8), help="run only these sections")
    parser.add_argument("--repeat", type=int, help="repeats for sections 1, 2, 6 and 7 (default 11; quick 3)")
    args = parser.parse_args(argv)
    missing = _missing()
    if missing:
        print(
            f"python -m benchmarks: {sys.executable} lacks {', '.join(missing)}; run it with the project's"
            " venv: .venv/bin/python -m benchmarks",
            file=sys.stderr,
        )
        return 2
    heartbeat = _Heartbeat()
    try:
        return _main(args, heartbeat, argv)
    finally:
        heartbeat.stop()


def _main(args: argparse.Namespace, heartbeat: _Heartbeat, argv: list[str] | None) -> int:
    quick: bool = args.quick
    sections = set(args.only or range(1, 8))
    repeat = args.repeat or (3 if quick else 11)

    started = time.perf_counter()
    info = machine_info()
    command = " ".join(["python -m benchmarks", *(sys.argv[1:] if argv is None else argv)])
    print(
        f"streamfsm benchmarks ({'quick' if quick else 'full'}): python {info['python']}, "
        f"{info['cpu_count']} CPUs, {info['platform']}"
    )
    versions = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)
    print(f"packages: {versions}")
    rows: list[Row] = []
    raw: dict[str, Any] = {}

    if 1 in sections:
        from . import overhead

        heartbeat.section("section 1: per-stream CPU overhead")
        sizes = {"text": 300, "reasoning": 30} if quick else {}
        section = overhead.measure(repeat, sizes=sizes)
        print_table(overhead.SECTION, section)
        rows += section

    if 2 in sections:
        from . import machine

        heartbeat.section("section 2: machine per event")
        m = machine.measure(repeat=max(3, repeat // 2) if quick else repeat)
        raw["machine"] = m
        section = [
            Row(
                "2. machine per event",
                "compiled table, per event",
                m["compiled_ns"] / 1000,
                "µs",
                m["transitions_activity_ns"] / 1000,
                "transitions trigger",
                target=1 / 20,
                note=f"{m['transitions_activity_ns'] / m['compiled_ns']:.0f}x cheaper; "
                f"both regions in transitions: {m['transitions_both_ns'] / 1000:.2f} µs",
            ),
            Row(
                "2. machine per event",
                "build one machine",
                m["build_compiled_ns"] / 1000,
                "µs",
                m["build_activity_ns"] / 1000,
                "transitions Machine()",
                note=f"{m['build_activity_ns'] / m['build_compiled_ns']:.0f}x cheaper",
            ),
        ]
        print_table("2. machine per event (same legal stream of 2,157 triggers)", section)
        rows += section

    if sections & {3, 5}:
        from . import concurrency

        with concurrency.provider() as base_url:
            if 3 in sections:
                heartbeat.section("section 3: concurrency")
                streams = (1000,) if quick else (100, 1000, 10_000)
                section, raw["concurrency"] = concurrency.concurrency_rows(
                    base_url,
                    streams,
                    ("asyncio", "trio"),
                    steps=4 if quick else 12,
                    traced=not quick,
                    log=_log,
                )
                print_table(concurrency.SECTION_3, section)
                rows += section
            if 5 in sections:
                heartbeat.section("section 5: watchdog accuracy")
                section, raw["watchdog"] = concurrency.watchdog_rows(
                    base_url,
                    1000,
                    ("asyncio", "trio"),
                    idle_timeout=0.5 if quick else 1.0,
                    steps=4 if quick else 16,
                    gc_tuned=not quick,
                    log=_log,
                )
                print_table(concurrency.SECTION_5, section)
                rows += section

    if 4 in sections:
        from . import memory

        heartbeat.section("section 4: bounded memory")
        sizes_4 = (1_000, 100_000) if quick else (1_000, 100_000, 1_000_000)
        section = memory.measure(sizes_4, traced_max=100_000 if quick else 1_000_000)
        print_table(memory.SECTION, section)
        rows += section

    if 6 in sections:
        from . import tap

        heartbeat.section("section 6: the tap under the SDKs")
        section = tap.measure(repeat, sizes={"text": 300, "reasoning": 30} if quick else None)
        print_table(tap.SECTION, section)
        rows += section

    if 7 in sections:
        from . import routes

        heartbeat.section("section 7: routes configured, no failure")
        section = routes.measure(repeat, sizes={"text": 300, "reasoning": 30} if quick else None)
        print_table(routes.SECTION, section)
        rows += section

    elapsed = time.perf_counter() - started
    targets = [r for r in rows if r.met is not None]
    missed = [r for r in targets if not r.met]
    print(f"\n{len(targets) - len(missed)} of {len(targets)} targets met; total {elapsed:.0f} s ({command})")
    for r in missed:
        print(f"  missed: {r.section.split(' ', 1)[0]} {r.name}")
    if args.json:
        write_json(
            args.json,
            {
                "command": command,
                "quick": quick,
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "elapsed_s": round(elapsed, 1),
                "machine": info,
                "load_average_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
                "results": [r.to_json() for r in rows],
                "raw": raw,
            },
        )
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
