"""The chaos soak at benchmark size: many concurrent runs against one fault server, a random catalog fault
per run, then throughput and every mismatch.

    python -m benchmarks.soak --runs 5000 --concurrency 1000 [--backend asyncio|trio|both] [--seed N] [--sdk]
                              [--timeout S]

Each run gets a fault drawn (with the printed seed) from the whole catalog; a sink counts the records. It
checks what the CI soak checks: exactly one record per run, none unclassified, every class (and verdict,
edge, phase) as the injected fault's scenario expects. Exit status 1 on any mismatch. The numbers are for
this machine only: compare backends and versions, not absolutes.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import platform
import random
import resource
import sys
import time
from typing import Any

import anyio

from streamfsm import RunRecord, StreamConfig
from streamfsm.testing import catalog, peak_in_flight, run_catalog, sdk_available


def _raise_fd_limit(concurrency: int) -> None:
    # Two sockets per run in flight (client and server side), plus the SDK pools: ask for room.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = concurrency * 3 + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


async def _soak(
    runs: int, concurrency: int, seed: int, sdk: list[str | None], timeout: float
) -> dict[str, Any]:
    rng = random.Random(seed)
    pool = catalog()
    scenarios = [
        dataclasses.replace(s, name=f"{s.name}#{i}") for i, s in enumerate(rng.choices(pool, k=runs))
    ]
    delivered: list[RunRecord] = []
    started = time.monotonic()
    outcomes = await run_catalog(
        scenarios,
        sdk=sdk,
        concurrency=concurrency,
        timeout=timeout,
        config=StreamConfig(sinks=(delivered.append,)),
    )
    seconds = time.monotonic() - started
    problems = [f"{o.name} ({o.via}): {o.mismatch}" for o in outcomes if not o.matched]
    per_run = collections.Counter(record.run_id for record in delivered)
    if len(delivered) != len(outcomes) or (per_run and max(per_run.values()) != 1):
        problems.append(f"{len(delivered)} records delivered for {len(outcomes)} runs")
    unclassified = [o.name for o in outcomes if o.failure_class is None]
    if unclassified:
        problems.append(f"{len(unclassified)} runs unclassified, e.g. {unclassified[:3]}")
    return {
        "runs": len(outcomes),
        "seconds": seconds,
        "peak": peak_in_flight(outcomes),
        "classes": collections.Counter(o.failure_class.value for o in outcomes if o.failure_class),
        "problems": problems,
        "slowest": max((o.seconds for o in outcomes), default=0.0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=1000)
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    parser.add_argument("--sdk", action="store_true", help="also play the openai / anthropic SDK paths")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="bound on each run, queueing included (default 60 s)"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    sdk: list[str | None] = [None]
    if args.sdk:
        sdk += [name for name in ("openai", "anthropic") if sdk_available(name) is None]
    _raise_fd_limit(args.concurrency)
    print(f"python {platform.python_version()} on {platform.machine()}, seed {seed}")
    failed = False
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    for backend in backends:
        result = anyio.run(_soak, args.runs, args.concurrency, seed, sdk, args.timeout, backend=backend)
        rate = result["runs"] / result["seconds"]
        print(
            f"{backend:>7}: {result['runs']} runs in {result['seconds']:.2f} s = {rate:.0f} runs/s,"
            f" up to {result['peak']} in flight, slowest run {result['slowest']:.2f} s,"
            f" {len(result['problems'])} mismatches"
        )
        print("         classes: " + ", ".join(f"{k}={v}" for k, v in sorted(result["classes"].items())))
        for problem in result["problems"][:20]:
            print(f"         ✗ {problem}")
        failed = failed or bool(result["problems"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
