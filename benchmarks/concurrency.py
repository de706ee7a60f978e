"""Sections 3 and 5: many concurrent streams against the local fault provider over loopback.

    python -m benchmarks.concurrency [--streams 100 1000] [--backend asyncio trio] [--watchdog]

Setup. The provider (``benchmarks._provider``: ``streamfsm.testing.FaultServerThread``) runs in its own
process, so on two cores it has one to itself and the clients' CPU, lag and memory are theirs alone (an
in-process server would share the clients' event loop or GIL and its work would count as theirs). Each
configuration (contender, backend, number of streams) runs in a fresh client process, so memory left over by
one cannot flatter the next; the client raises its open-file limit first. Streams share
``httpx.AsyncClient`` instances, one per ``SHARD`` streams, built on one TLS context: httpcore's pool scans
every connection on every request and response, so a single pool of 1,000 connections is quadratic and
spends seconds in that scan (measured: 29 M ``is_idle`` calls for 1,000 streams), and ``httpx.AsyncClient()``
loads the CA bundle each time (~30 ms). Arrivals are spread: stream i starts ``i / N * ramp`` seconds in.

Section 3 streams: OpenAI chat, ``deltas`` text deltas in ``steps`` chunks ``interval`` ms apart (20 tokens/s
by default, so that the streams are live together), then finish, usage and ``[DONE]``.

Contenders, same streams, same process layout:

* ``httpx``: the floor. ``client.stream()``, the response's own byte stream, split lines, ``json.loads``
  each data line.
* ``open_stream``: the whole runtime, watchdogs armed at their defaults.

Measured per configuration:

* completed: streams that ended with their terminal event (the target: all of them);
* throughput: provider events (SSE data events) consumed per second of wall time, all streams together;
  and CPU per event (process CPU time over those events, connection set-up and teardown included);
* event-loop lag: a ticker task sleeps 10 ms in a loop; lag is how late it wakes (p50, p99, max);
* garbage collection: time spent in the cyclic collector (``gc.callbacks``), as a share of the CPU time;
* memory per live run: the ticker samples the resident set size (``/proc/self/statm``); per live run is
  (RSS when the most streams were live - RSS before the first request) / that number of live streams. A
  stream is live from its first byte to its end. ``--tracemalloc`` measures Python allocations instead
  (same arithmetic) and splits them by the package that allocated them, from a snapshot taken once 90% of
  the streams are live (divided by how many were): the ``streamfsm`` share is what a run itself costs.

Section 5 (``--watchdog``): each stream streams like a section 3 stream until every stream has connected,
then for 1 to ``steps`` chunks more (so the deadlines are spread over time while other streams are still
streaming: that is the load; a storm of new connections is section 3's event-loop lag), then sends only an
SSE comment every 500 ms: a stall kept alive. With ``idle_timeout`` armed, every run must fail with
``idle_timeout`` once its stall began (all its deltas received; one that fired in a gap between chunks is a
failure); lateness is the record's ``last_progress_age_s`` minus the timeout: how long after its
deadline the watchdog fired, as the run itself measured it. Delivered is how long after the deadline the
consumer caught the failure: the HTTP client unwinds the cancelled read (on trio, a scheduler pass per await
of httpcore's cleanup) and the run closes its response first. The baseline is the same with 10 streams (no
load). The full run repeats the loaded case with ``gc.set_threshold(*GC_TUNED)`` in the client: CPython's
full collections over thousands of live streams are the longest event-loop stalls, and a service can make
them rarer.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ._provider import provider
from ._report import Row, print_table

SECTION_3 = "3. concurrency (loopback, fault provider in its own process)"
SECTION_5 = "5. watchdog accuracy (idle timeout under load)"
SHARD = 16  # streams per httpx.AsyncClient
GC_TUNED = (10_000, 20, 100)  # a service's gc.set_threshold: fewer, cheaper passes over many live streams
TICK_S = 0.01
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGES = (
    "streamfsm",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "asyncio",
    "trio",
    "outcome",
    "selectors",
    "ssl",
)


@dataclass
class Config:
    contender: str  # "httpx" | "open_stream"
    backend: str
    streams: int
    deltas: int = 60
    steps: int = 12
    interval_ms: int = 250
    ramp_s: float = 0.5
    watchdog: bool = False
    idle_timeout: float = 1.0
    tracemalloc: bool = False
    gc_threshold: tuple[int, int, int] | None = None  # gc.set_threshold in the client process; None: default
    timeout_s: float = 600.0


@dataclass
class Result:
    config: dict[str, Any]
    completed: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    events: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    throughput_eps: float = 0.0
    cpu_us_per_event: float = 0.0
    lag_ms: dict[str, float] = field(default_factory=dict)
    peak_live: int = 0
    memory_per_live_kb: float = 0.0
    memory_method: str = ""
    breakdown_kb_per_run: dict[str, float] = field(default_factory=dict)
    lateness_ms: dict[str, float] = field(default_factory=dict)
    delivered_ms: dict[str, float] = field(default_factory=dict)
    gc_pauses_ms: dict[str, float] = field(default_factory=dict)
    fd_limit: int = 0


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "p50": round(at(0.50) * 1000, 2),
        "p99": round(at(0.99) * 1000, 2),
        "max": round(ordered[-1] * 1000, 2),
        "n": len(ordered),
    }


class _Live:
    """How many streams are live right now, and the memory at the moment the most were."""

    def __init__(self, traced: bool, target: int) -> None:
        self.now = 0
        self.peak = 0
        self.memory_at_peak = 0
        self.traced = traced
        self.target = target
        # Snapshot once most streams are live: all of them at once depends on timing and may never happen.
        self.snapshot_at = max(1, target * 9 // 10)
        self.snapshot: Any = None
        self.snapshot_live = 0

    def memory(self) -> int:
        return tracemalloc.get_traced_memory()[0] if self.traced else _rss()

    def sample(self) -> None:
        if self.now > self.peak:
            self.peak = self.now
            self.memory_at_peak = self.memory()
            if self.traced and self.snapshot is None and self.now >= self.snapshot_at:
                self.snapshot = tracemalloc.take_snapshot()
                self.snapshot_live = self.now


@contextlib.contextmanager
def _clients(n: int) -> Iterator[list[Any]]:
    import httpx

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=SHARD)
    timeout = httpx.Timeout(30.0, read=None)
    tls = httpx.create_ssl_context()
    yield [
        httpx.AsyncClient(limits=limits, timeout=timeout, verify=tls) for _ in range(max(1, -(-n // SHARD)))
    ]


def _watchdog_steps(cfg: Config, i: int) -> int:
    """Chunks stream ``i`` sends before it stalls: it streams until every stream has connected, then 1 to
    ``steps`` chunks more, so the stalls (and deadlines) are spread over time while other streams stream."""
    started = i / cfg.streams * cfg.ramp_s
    return -(-int((cfg.ramp_s - started) * 1000) // cfg.interval_ms) + 1 + i % cfg.steps


def _events_per_stream(cfg: Config, i: int) -> int:
    if cfg.watchdog:
        return 5 * _watchdog_steps(cfg, i) + 1  # deltas and the role chunk
    return cfg.deltas + 3  # role chunk, deltas, finish chunk, usage chunk


async def _run_config(cfg: Config) -> Result:
    import anyio
    import httpx

    from streamfsm import StreamConfig
    from streamfsm.runtime import StreamFailed, open_stream

    from ._payloads import CHAT_BODY
    from ._provider import path

    base = os.environ["BENCH_PROVIDER"]
    result = Result(config=asdict(cfg))
    live = _Live(cfg.tracemalloc, cfg.streams)
    lags: list[float] = []
    lateness: list[float] = []
    delivered: list[float] = []
    stream_config = StreamConfig(idle_timeout=cfg.idle_timeout) if cfg.watchdog else StreamConfig()

    def url_for(i: int) -> str:
        if cfg.watchdog:
            steps = _watchdog_steps(cfg, i)
            return base + path(steps * 5, steps, cfg.interval_ms, "ka500")
        return base + path(cfg.deltas, cfg.steps, cfg.interval_ms, "end")

    def fail(key: str) -> None:
        result.failed += 1
        result.failures[key] = result.failures.get(key, 0) + 1

    async def floor(client: httpx.AsyncClient, i: int) -> None:
        loads = json.loads
        seen = done = False
        try:
            async with client.stream("POST", url_for(i) + "/chat/completions", json=CHAT_BODY) as response:
                buffer = b""
                async for chunk in response.stream:  # as open_stream reads an unencoded body
                    if not seen:
                        seen = True
                        live.now += 1
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if line.startswith(b"data:"):
                            data = line[5:].strip()
                            if data == b"[DONE]":
                                done = True
                            else:
                                loads(data)
        except Exception as exc:
            fail(type(exc).__name__)
            return
        finally:
            if seen:
                live.now -= 1
        if done:
            result.completed += 1
            result.events += _events_per_stream(cfg, i)
        else:
            fail("no_terminal")

    async def ours(client: httpx.AsyncClient, i: int) -> None:
        seen = False
        opened = time.monotonic()
        try:
            async with open_stream(
                "openai-chat", base_url=url_for(i), json=CHAT_BODY, client=client, config=stream_config
            ) as run:
                async for _ in run:
                    if not seen:
                        seen = True
                        live.now += 1
        except StreamFailed as failure:
            record = failure.record
            idle = cfg.watchdog and record["watchdog"]["fired"] == "idle_timeout"
            if idle and record["stream_events"].get("text_delta", 0) == 5 * _watchdog_steps(cfg, i):
                timings = record["timings"]
                lateness.append(timings["last_progress_age_s"] - cfg.idle_timeout)
                deadline = timings["total_s"] - timings["last_progress_age_s"] + cfg.idle_timeout
                delivered.append(time.monotonic() - opened - deadline)
                result.completed += 1  # the expected outcome
                result.events += _events_per_stream(cfg, i)
            elif idle:
                fail("idle_timeout_before_the_stall")  # it fired in a gap between chunks
            else:
                fail(record.summary_key)
            return
        except Exception as exc:
            fail(type(exc).__name__)
            return
        finally:
            if seen:
                live.now -= 1
        if run.finished and not cfg.watchdog:
            result.completed += 1
            result.events += _events_per_stream(cfg, i)
        else:
            fail("finished_without_watchdog" if run.finished else "not_finished")

    stop = anyio.Event()

    async def ticker() -> None:
        clock = time.perf_counter
        while not stop.is_set():
            start = clock()
            await anyio.sleep(TICK_S)
            lags.append(max(0.0, clock() - start - TICK_S))
            live.sample()

    async def start(one: Any, client: Any, i: int, at: float) -> None:
        await anyio.sleep(at)
        await one(client, i)

    with _clients(cfg.streams) as clients:
        gc.collect()
        if cfg.tracemalloc:
            tracemalloc.start(1)
        baseline = live.memory()
        one = ours if cfg.contender == "open_stream" else floor
        began, cpu = time.perf_counter(), time.process_time()
        with anyio.fail_after(cfg.timeout_s):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                async with anyio.create_task_group() as streams:
                    for i in range(cfg.streams):
                        streams.start_soon(start, one, clients[i // SHARD], i, i / cfg.streams * cfg.ramp_s)
                stop.set()
        result.wall_s = time.perf_counter() - began
        result.cpu_s = time.process_time() - cpu
        for client in clients:
            await client.aclose()

    result.throughput_eps = result.events / result.wall_s if result.wall_s else 0.0
    result.cpu_us_per_event = result.cpu_s / result.events * 1e6 if result.events else 0.0
    result.lag_ms = _percentiles(lags)
    result.peak_live = live.peak
    if live.peak:
        result.memory_per_live_kb = round((live.memory_at_peak - baseline) / live.peak / 1024, 2)
    result.memory_method = "tracemalloc" if cfg.tracemalloc else "rss"
    if live.snapshot is not None:
        result.breakdown_kb_per_run = _breakdown(live.snapshot, live.snapshot_live)
    if cfg.tracemalloc:
        tracemalloc.stop()
    result.lateness_ms = _percentiles(lateness)
    result.delivered_ms = _percentiles(delivered)
    return result


def _breakdown(snapshot: Any, runs: int) -> dict[str, float]:
    """Traced bytes per live run, by the package that allocated them (innermost frame of each trace)."""
    sizes: dict[str, int] = {}
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename.replace("\\", "/")
        package = next(
            (p for p in _PACKAGES if f"/{p}/" in name or name.endswith(f"/{p}.py")),
            "other (stdlib, benchmark)",
        )
        sizes[package] = sizes.get(package, 0) + stat.size
    return {k: round(v / runs / 1024, 2) for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])}


class _GcPauses:
    """Durations of the garbage collector's passes, by generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.pauses[info["generation"]].append(time.perf_counter() - self.started)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for gen, values in self.pauses.items():
            if values:
                out[f"gen{gen}_count"] = len(values)
                out[f"gen{gen}_max"] = round(max(values) * 1000, 2)
                out[f"gen{gen}_total"] = round(sum(values) * 1000, 1)
        return out


def run_child(cfg: Config) -> Result:
    import anyio

    from ._provider import raise_fd_limit

    limit = raise_fd_limit(max(4096, cfg.streams * 2 + 256))
    if cfg.gc_threshold is not None:
        gc.set_threshold(*cfg.gc_threshold)
    pauses = _GcPauses()
    gc.callbacks.append(pauses)
    try:
        result: Result = anyio.run(_run_config, cfg, backend=cfg.backend)
    finally:
        gc.callbacks.remove(pauses)
    result.fd_limit = limit
    result.gc_pauses_ms = pauses.summary()
    return result


# -- the parent side -----------------------------------------------------------------------------------------


def measure_one(cfg: Config, base_url: str) -> Result:
    """Run one configuration in a fresh client process."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.concurrency", "--child", json.dumps(asdict(cfg))],
        env=dict(os.environ, BENCH_PROVIDER=base_url),
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=cfg.timeout_s + 120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({asdict(cfg)}):\n{proc.stderr[-4000:]}")
    return Result(**json.loads(proc.stdout.strip().splitlines()[-1]))


def _gc_share(result: Result) -> str:
    pauses = result.gc_pauses_ms
    total = sum(v for k, v in pauses.items() if k.endswith("_total")) / 1000
    return f"{total / result.cpu_s:.0%}" if result.cpu_s else "-"


def _ramp(streams: int) -> float:
    return min(2.0, max(0.05, streams / 2000))  # at most 2,000 new connections per second


def concurrency_rows(
    base_url: str,
    streams: tuple[int, ...],
    backends: tuple[str, ...],
    *,
    steps: int = 12,
    traced: bool = True,
    log: Any = None,
) -> tuple[list[Row], list[dict[str, Any]]]:
    rows: list[Row] = []
    raw: list[dict[str, Any]] = []
    for n in streams:
        for backend in backends:
            results = {}
            for contender in ("httpx", "open_stream"):
                cfg = Config(contender, backend, n, deltas=steps * 5, steps=steps, ramp_s=_ramp(n))
                results[contender] = r = measure_one(cfg, base_url)
                raw.append(asdict(r))
                if log:
                    log(
                        f"  {n} streams, {backend}, {contender}: {r.completed}/{n} in {r.wall_s:.1f} s, "
                        f"CPU {r.cpu_s:.1f} s, lag p99 {r.lag_ms.get('p99')} ms, GC {r.gc_pauses_ms}"
                    )
            floor, ours = results["httpx"], results["open_stream"]
            label = f"{n:,} streams [{backend}]"
            failures = ", ".join(f"{k}: {v}" for k, v in ours.failures.items()) or "none failed"
            rows += [
                Row(
                    SECTION_3,
                    f"{label}: completed",
                    ours.completed,
                    "streams",
                    n,
                    "started",
                    target=1.0,
                    better="higher",
                    note=f"httpx floor {floor.completed}/{n}; {failures}",
                ),
                Row(
                    SECTION_3,
                    f"{label}: throughput",
                    ours.throughput_eps,
                    "events/s",
                    floor.throughput_eps,
                    "httpx floor",
                    note=f"wall {ours.wall_s:.1f} s vs {floor.wall_s:.1f} s",
                ),
                Row(
                    SECTION_3,
                    f"{label}: CPU per event",
                    ours.cpu_us_per_event,
                    "µs",
                    floor.cpu_us_per_event,
                    "httpx floor",
                    note=f"sockets, HTTP parsing, set-up included; garbage collector {_gc_share(ours)} of "
                    f"the CPU (floor {_gc_share(floor)})",
                ),
                Row(
                    SECTION_3,
                    f"{label}: event-loop lag p99",
                    ours.lag_ms.get("p99", 0.0),
                    "ms",
                    floor.lag_ms.get("p99", 0.0),
                    "httpx floor",
                    note=f"p50 {ours.lag_ms.get('p50', 0)} ms, max {ours.lag_ms.get('max', 0)} ms "
                    f"(floor p50 {floor.lag_ms.get('p50', 0)}, max {floor.lag_ms.get('max', 0)})",
                ),
                Row(
                    SECTION_3,
                    f"{label}: RSS per live stream",
                    ours.memory_per_live_kb,
                    "KB",
                    floor.memory_per_live_kb,
                    "httpx floor",
                    note=f"{ours.peak_live:,} live at the peak; the run's own share: "
                    f"{ours.memory_per_live_kb - floor.memory_per_live_kb:.1f} KB",
                ),
            ]
    if traced and any(s <= 1000 for s in streams):
        n = max(s for s in streams if s <= 1000)
        results = {}
        for contender in ("httpx", "open_stream"):
            cfg = Config(
                contender, "asyncio", n, deltas=steps * 5, steps=steps, ramp_s=_ramp(n), tracemalloc=True
            )
            results[contender] = r = measure_one(cfg, base_url)
            raw.append(asdict(r))
        ours, floor = results["open_stream"], results["httpx"]
        own = ours.breakdown_kb_per_run.get("streamfsm", math.nan)  # nan: no snapshot, so not met
        parts = ", ".join(f"{k} {v}" for k, v in ours.breakdown_kb_per_run.items() if v >= 0.5)
        rows += [
            Row(
                SECTION_3,
                f"{n:,} streams [asyncio]: Python memory per live run",
                ours.memory_per_live_kb,
                "KB",
                floor.memory_per_live_kb,
                "httpx floor",
                note=f"tracemalloc; by package, KB per run: {parts}",
            ),
            Row(
                SECTION_3,
                f"{n:,} streams [asyncio]: streamfsm's own memory per live run",
                own,
                "KB",
                target=32,
                note="allocated by streamfsm's code (Run, recorder, machine, adapter, decoder)"
                if ours.breakdown_kb_per_run
                else "not measured: fewer than 90% of the streams were ever live at once",
            ),
        ]
    return rows, raw


def watchdog_rows(
    base_url: str,
    streams: int,
    backends: tuple[str, ...],
    idle_timeout: float,
    *,
    steps: int = 16,
    gc_tuned: bool = False,
    log: Any = None,
) -> tuple[list[Row], list[dict[str, Any]]]:
    """``gc_tuned``: also run the loaded case with ``gc.set_threshold(*GC_TUNED)`` in the client process."""
    rows: list[Row] = []
    raw: list[dict[str, Any]] = []
    for backend in backends:
        results = {}
        for n in (10, streams):
            cfg = Config(
                "open_stream",
                backend,
                n,
                steps=steps,
                ramp_s=_ramp(n),
                watchdog=True,
                idle_timeout=idle_timeout,
            )
            results[n] = r = measure_one(cfg, base_url)
            raw.append(asdict(r))
            if log:
                log(f"  watchdog, {n} streams, {backend}: {r.completed}/{n} fired in {r.wall_s:.1f} s")
        idle, loaded = results[10], results[streams]
        label = f"{streams:,} streams [{backend}]"
        tuned = None
        if gc_tuned:
            cfg = Config(
                "open_stream",
                backend,
                streams,
                steps=steps,
                ramp_s=_ramp(streams),
                watchdog=True,
                idle_timeout=idle_timeout,
                gc_threshold=GC_TUNED,
            )
            tuned = measure_one(cfg, base_url)
            raw.append(asdict(tuned))
            if log:
                log(f"  watchdog, {streams} streams, {backend}, gc {GC_TUNED}: {tuned.completed} fired")
        failures = ", ".join(f"{k}: {v}" for k, v in loaded.failures.items()) or "none other"
        rows += [
            Row(
                SECTION_5,
                f"{label}: idle timeouts fired",
                loaded.completed,
                "runs",
                streams,
                "stalled runs",
                target=1.0,
                better="higher",
                note=failures,
            ),
            Row(
                SECTION_5,
                f"{label}: lateness p99",
                loaded.lateness_ms.get("p99", 0.0),
                "ms",
                idle.lateness_ms.get("p99", 0.0),
                "10 streams",
                target=None,
                note=f"p50 {loaded.lateness_ms.get('p50', 0)} ms; "
                f"unloaded p50 {idle.lateness_ms.get('p50', 0)} ms",
            ),
            Row(
                SECTION_5,
                f"{label}: lateness max",
                loaded.lateness_ms.get("max", math.nan),  # nan: none fired, so not met
                "ms",
                target=100,
                note=f"idle_timeout {idle_timeout} s; event-loop lag p99 {loaded.lag_ms.get('p99', 0)} ms",
            ),
            Row(
                SECTION_5,
                f"{label}: failure delivered, max",
                loaded.delivered_ms.get("max", 0.0),
                "ms",
                idle.delivered_ms.get("max", 0.0),
                "10 streams",
                note=f"after the deadline, when the consumer catches StreamFailed (the client has unwound "
                f"the read, the run has closed it); p99 {loaded.delivered_ms.get('p99', 0)} ms",
            ),
        ]
        if tuned is not None:
            pauses = loaded.gc_pauses_ms
            rows.append(
                Row(
                    SECTION_5,
                    f"{label}: lateness p99, gc.set_threshold{GC_TUNED}",
                    tuned.lateness_ms.get("p99", 0.0),
                    "ms",
                    loaded.lateness_ms.get("p99", 0.0),
                    "default thresholds",
                    note=f"max {tuned.lateness_ms.get('max', 0)} ms; {tuned.completed}/{streams} fired; "
                    f"default gen2 pause max {pauses.get('gen2_max', 0)} ms, "
                    f"tuned {tuned.gc_pauses_ms.get('gen2_max', 0)} ms",
                )
            )
    return rows, raw


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.concurrency", description=__doc__)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--streams", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--backend", nargs="*", default=["asyncio", "trio"])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--watchdog", action="store_true", help="section 5 instead of section 3")
    parser.add_argument("--idle-timeout", type=float, default=1.0)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asdict(run_child(Config(**json.loads(args.child))))))
        return
    with provider() as base_url:
        if args.watchdog:
            rows, _ = watchdog_rows(
                base_url,
                max(args.streams),
                tuple(args.backend),
                args.idle_timeout,
                steps=args.steps,
                log=print,
            )
            print_table(SECTION_5, rows)
        else:
            rows, _ = concurrency_rows(
                base_url, tuple(args.streams), tuple(args.backend), steps=args.steps, log=print
            )
            print_table(SECTION_3, rows)


if __name__ == "__main__":
    main()
