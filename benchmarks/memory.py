"""Section 4: bounded memory. Record size and process memory for streams of 1k, 100k and 1M deltas.

    python -m benchmarks.memory [--deltas 1000 100000 1000000]

Each size runs in a fresh process (so one size's leftovers cannot hide the next one's growth): one
``open_stream`` OpenAI chat stream of N text deltas over the in-memory transport, whose body is generated
while it is read (the payload is never held in memory: 64 distinct delta frames, cycled), in 16 KiB reads.
Measured:

* record size: ``len(run.record.to_json())`` in bytes, and the number of timeline entries;
* process memory: peak RSS growth during the stream (``/proc/self/statm``, sampled every 1,000 events, minus
  the RSS before it), and the peak of Python allocations during the stream (``tracemalloc``, reset just
  before the request).

tracemalloc slows allocation-heavy code several times over, so the 1M stream measures RSS in one process
and tracemalloc in another only when ``--traced-max`` allows it. Ratios are to the 1k stream.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

from ._report import Row, print_table

SECTION = "4. bounded memory (one stream of N deltas)"
READ_SIZE = 16 * 1024
POOL = 64
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def generated_body(deltas: int) -> Iterator[bytes]:
    """The chat stream of ``deltas`` text deltas, produced in READ_SIZE reads as it is consumed."""
    from ._payloads import make

    pool = make("openai-chat", text=POOL, reasoning=0, tool_args=0)
    head, body, tail = pool.frames[:1], pool.frames[1 : 1 + POOL], pool.frames[1 + POOL :]
    buffer = bytearray(b"".join(head))
    for i in range(deltas):
        buffer += body[i % POOL]
        if len(buffer) >= READ_SIZE:
            yield bytes(buffer[:READ_SIZE])
            del buffer[:READ_SIZE]
    buffer += b"".join(tail)
    while buffer:
        yield bytes(buffer[:READ_SIZE])
        del buffer[:READ_SIZE]


def run_one(deltas: int, traced: bool) -> dict[str, Any]:
    import anyio
    import httpx

    from streamfsm.runtime import open_stream

    from ._payloads import CHAT_BODY
    from ._transport import MemoryTransport

    client = httpx.AsyncClient(transport=MemoryTransport(lambda: generated_body(deltas)))
    out: dict[str, Any] = {"deltas": deltas, "traced": traced}

    async def main() -> None:
        # Warm up: imports and first-use caches are not the stream's memory.
        async with open_stream(
            "openai-chat", base_url="http://bench.local/v1", json=CHAT_BODY, client=client
        ) as run:
            async for _ in run:
                pass
        gc.collect()
        if traced:
            tracemalloc.start()
            tracemalloc.reset_peak()
            traced_before = tracemalloc.get_traced_memory()[0]
        rss_before = _rss()
        cpu = time.process_time()
        count = 0
        rss_peak = rss_before
        async with open_stream(
            "openai-chat", base_url="http://bench.local/v1", json=CHAT_BODY, client=client
        ) as run:
            async for _ in run:
                count += 1
                if not count % 1000:
                    rss_peak = max(rss_peak, _rss())
        rss_peak = max(rss_peak, _rss())
        out["cpu_s"] = time.process_time() - cpu
        if traced:
            out["traced_peak_kb"] = (tracemalloc.get_traced_memory()[1] - traced_before) / 1024
            tracemalloc.stop()
        out["rss_growth_kb"] = (rss_peak - rss_before) / 1024
        assert run.record is not None, "the run left no record"
        assert run.finished, run.record
        text = run.record.to_json()
        out["record_bytes"] = len(text)
        out["timeline_entries"] = len(run.record["timeline"]["entries"])
        out["events"] = count
        out["text_delta_count"] = run.record["stream_events"].get("text_delta", 0)

    anyio.run(main)
    return out


def _child(deltas: int, traced: bool) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--child", json.dumps([deltas, traced])],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memory benchmark child failed:\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def measure(sizes: tuple[int, ...], traced_max: int) -> list[Row]:
    results = []
    for n in sizes:
        result = _child(n, traced=False)
        if n <= traced_max:
            result["traced_peak_kb"] = _child(n, traced=True)["traced_peak_kb"]
        results.append(result)
    base = results[0]
    rows = []
    for r in results:
        n = r["deltas"]
        label = f"{n:,} deltas"
        rows.append(
            Row(
                SECTION,
                f"{label}: record size",
                r["record_bytes"],
                "B",
                base["record_bytes"],
                f"{base['deltas']:,} deltas",
                target=1.05,
                note=f"{r['timeline_entries']} timeline entries; "
                f"{r['text_delta_count']:,} text deltas counted",
                extra=r,
            )
        )
        rows.append(
            Row(
                SECTION,
                f"{label}: peak RSS growth",
                r["rss_growth_kb"],
                "KB",
                base["rss_growth_kb"] or None,
                f"{base['deltas']:,} deltas",
                note=f"{r['cpu_s']:.1f} s CPU",
                extra=r,
            )
        )
        if "traced_peak_kb" in r and "traced_peak_kb" in base:
            rows.append(
                Row(
                    SECTION,
                    f"{label}: peak Python allocations",
                    r["traced_peak_kb"],
                    "KB",
                    base["traced_peak_kb"],
                    f"{base['deltas']:,} deltas",
                    target=1.5,
                    note="tracemalloc peak during the stream",
                    extra=r,
                )
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--deltas", type=int, nargs="*", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--traced-max", type=int, default=100_000)
    args = parser.parse_args(argv)
    if args.child:
        deltas, traced = json.loads(args.child)
        print(json.dumps(run_one(deltas, traced)))
        return
    print_table(SECTION, measure(tuple(args.deltas), args.traced_max))


if __name__ == "__main__":
    main()
