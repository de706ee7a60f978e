"""Section 7: routes that cost nothing until a failure. ``retrying()`` over two `Route`s (the process's
circuit breakers, as a user gets them) against ``retrying()`` over one plain ``open_attempt``, no failure,
the same stream over section 1's in-memory transport; ``open_stream`` alone for what ``retrying()`` adds.

    python -m benchmarks.routes [--repeat N] [--quick]

Two streams per format: section 1's (2,000 text deltas, 200 reasoning, a tool call) and a short one (10 text
deltas), where a per-stream cost shows most. CPU time (``time.process_time``) per stream, and wall time (a
wait before the request costs no CPU); the contenders take turns in every round, so a change of load hits
all of them; each sample is a batch of streams, one after another, long enough to time (``BATCH_S``). A
row's value and baseline are the medians of the rounds; its note has the minima and both ratios.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from ._payloads import BODIES, Payload, make
from ._report import Row, print_table

SECTION: Final = "7. routes configured, no failure (in-memory transport)"
BASE_URL: Final = "http://bench.local"
BATCH_S: Final = 0.05  # CPU per sample, about: a few streams of the short payload, one of the long
TARGET: Final = 1.03  # "no more than without", within what a median of rounds can tell apart
SHORT: Final[dict[str, int]] = {"text": 10, "reasoning": 0, "tool_args": 0}

Contender = Callable[[], Awaitable[int]]


def contenders(payload: Payload) -> dict[str, Contender]:
    """``bare`` (open_stream), ``plain`` (retrying over one open_attempt) and ``routes`` (retrying over two
    Routes, the first answering), each one whole stream, returning the events it read."""
    import httpx

    from streamfsm import Ids, RetryPolicy, Route, Run, open_stream, retrying

    from ._transport import MemoryTransport

    client = httpx.AsyncClient(transport=MemoryTransport(payload.chunks("live")))
    fmt, body, base = payload.fmt, BODIES[payload.fmt], f"{BASE_URL}/v1"
    policy = RetryPolicy(3, 60)

    def open_attempt(ids: Ids) -> Run:
        return open_stream(fmt, base_url=base, json=body, client=client, ids=ids)

    routes = [Route("bench-primary", open_attempt), Route("bench-fallback", open_attempt)]

    async def bare() -> int:
        count = 0
        async with open_attempt(Ids()) as run:
            async for _ in run:
                count += 1
        assert run.finished, run.record
        return count

    def chained(target: Any, route: str | None) -> Contender:
        async def run_chain() -> int:
            count = 0
            async with retrying(policy, target) as run:
                async for _ in run:
                    count += 1
            record = run.record
            assert record is not None
            assert record.summary_key == "completed.finished", record
            assert len(run.attempts) == 1, run.attempts
            assert (record["route"] or {}).get("name") == route, record["route"]
            return count

        return run_chain

    return {"bare": bare, "plain": chained(open_attempt, None), "routes": chained(routes, "bench-primary")}


async def _batch(fn: Contender, streams: int) -> tuple[float, float]:
    """CPU and wall seconds per stream of ``streams`` streams, one after another."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(streams):
        await fn()
    return (time.process_time() - cpu) / streams, (time.perf_counter() - wall) / streams


async def samples(payload: Payload, repeat: int) -> dict[str, dict[str, list[float]]]:
    """CPU and wall seconds per stream of each contender (``cpu``, ``wall``: by contender), ``repeat``
    rounds, after a warm-up that also sizes the batches."""
    fns = contenders(payload)
    out: dict[str, dict[str, list[float]]] = {"cpu": {name: [] for name in fns}, "wall": {n: [] for n in fns}}
    # What exists now is kept out of every later collection: each sample's collection scans its own garbage.
    gc.collect()
    gc.freeze()
    try:
        per_stream = {name: (await _batch(fn, 2))[0] for name, fn in fns.items()}  # warm-up: imports, caches
        streams = max(1, round(BATCH_S / max(per_stream.values())))
        for _ in range(repeat):
            for name, fn in fns.items():
                cpu, wall = await _batch(fn, streams)
                out["cpu"][name].append(cpu)
                out["wall"][name].append(wall)
    finally:
        gc.unfreeze()
    return out


def rows_of(label: str, backend: str, measured: dict[str, dict[str, list[float]]], events: int) -> list[Row]:
    us = {name: [v * 1e6 for v in values] for name, values in measured["cpu"].items()}
    median = {name: statistics.median(values) for name, values in us.items()}
    least = {name: min(values) for name, values in us.items()}
    wall = {name: statistics.median(values) * 1e6 for name, values in measured["wall"].items()}
    extra = {"backend": backend, "events": events, "us_per_stream": us, "wall_us_per_stream": wall}
    tag = "" if backend == "asyncio" else " [trio]"
    return [
        Row(
            SECTION,
            f"{label}{tag}: retrying() over two Routes vs one open_attempt",
            median["routes"],
            "µs/stream",
            median["plain"],
            "retrying(open_attempt)",
            target=TARGET,
            note=f"min {least['routes']:.0f} vs {least['plain']:.0f} µs "
            f"({least['routes'] / least['plain']:.3f}x); median {median['routes'] / median['plain']:.3f}x",
            extra=extra,
        ),
        Row(
            SECTION,
            f"{label}{tag}: the same, wall time per stream",
            wall["routes"],
            "µs/stream",
            wall["plain"],
            "retrying(open_attempt)",
            note="streams one after another: a wait before the request shows here, not in CPU",
            extra=extra,
        ),
        Row(
            SECTION,
            f"{label}{tag}: retrying(open_attempt) vs open_stream",
            median["plain"],
            "µs/stream",
            median["bare"],
            "open_stream",
            note=f"informational; min {least['plain'] / least['bare']:.3f}x",
            extra=extra,
        ),
    ]


def measure(
    repeat: int, formats: tuple[str, ...] = ("openai-chat", "anthropic"), sizes: dict[str, int] | None = None
) -> list[Row]:
    """``sizes``: ``make()``'s keyword arguments for the long stream (the quick run's is shorter)."""
    warnings.simplefilter("ignore")
    rows: list[Row] = []
    for fmt in formats:
        for size, label in ((sizes or {}, f"{fmt} section 1's stream"), (SHORT, f"{fmt} 10 deltas")):
            payload = make(fmt, **size)
            for backend in ("asyncio", "trio"):
                measured = anyio.run(samples, payload, repeat, backend=backend)
                rows += rows_of(label, backend, measured, len(payload.frames))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.routes", description=__doc__)
    parser.add_argument("--repeat", type=int, help="rounds (default 11; quick 3)")
    parser.add_argument("--quick", action="store_true", help="a shorter long stream, 3 rounds")
    args = parser.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 11)
    print_table(SECTION, measure(repeat, sizes={"text": 300, "reasoning": 30} if args.quick else None))


if __name__ == "__main__":
    main()
