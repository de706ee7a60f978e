"""The relay under load: 1,000 concurrent streams through ``streamfsm relay`` vs a plain pass-through relay
written with httpx alone, in the same run, on the same uvicorn.

    python -m benchmarks.relay [--quick] [--streams 1000] [--rounds 3] [--json out.json] [--against TREE]

Setup: four processes. The fault provider (``benchmarks._provider``) streams OpenAI chat deltas; both relays
run side by side for the whole measurement, each in its own process under uvicorn (h11, one worker) with the
same upstream pools (``streamfsm.relay._pool.ShardedPool``: 16 httpx pools taking the requests in
turn, no connection limit, 100 kept alive in all); the clients (httpx, one pool per
``SHARD`` streams) run in this process. Each relay is warmed by a round of its own (a tenth of the streams),
then each takes ``--rounds`` rounds (3), one per contender per round, the order alternating. Measured in the
relay process only (``/proc/<pid>/stat``: user + system CPU from before a round's first request to after
its last):

* CPU per relayed event: relay CPU time / SSE data events the clients received, min / median / max over
  the rounds; the ratio is of the medians (target: the streamfsm relay at most 1.3x the plain one's), and
  it is refused, printed as INVALID with the reason, when the two did not complete the same streams or the
  baseline's own rounds spread wider than ``MAX_BASELINE_SPREAD``;
* throughput: events per second of wall time, all streams together (median);
* completed: streams whose client got the whole body (``[DONE]`` at its end), and, for the streamfsm
  relay, records in its audit log: every stream must be recorded;
* CPU per stream and per event, apart: each round also runs the same streams with ``short_deltas`` (1)
  deltas each, and a line through the two points (median CPU per stream against events per stream) gives
  each relay's cost per stream (the intercept) and per event (the slope), and what streamfsm adds to each.

``--against TREE``: another checkout's streamfsm relay (its own ``streamfsm`` and ``benchmarks``, served from
that tree) runs as a third contender in the same rounds, the order rotating; extra rows compare this tree's
relay with it. Both relay processes settle the cyclic collector as ``streamfsm relay`` does
(``settle_collector``), and the streamfsm relay waits for a connection as long as the plain one.

Three contenders, always: the plain relay, a minimal diagnosing relay (``minimal_app``: the plain relay, and
every chunk split into SSE lines, every event's JSON parsed with ``json.loads``, the id, model, finish reason
and ``[DONE]`` noted, one record line per stream appended to a file), and the streamfsm relay; rows give
each one's CPU per event against the plain relay's and streamfsm's against the minimal one's. Beside the
CPU, what a client sees: the added time to first byte (p50 of the streams in a round, from the request
sent to the first body chunk, streamfsm's less the plain relay's) and the p99 gap between a stream's body
chunks (the provider sends them ``interval_ms`` apart), medians of the rounds.

The plain relay (``plain_app``) does what any pass-through proxy must: read the body, forward the request
with the hop-by-hop headers dropped, stream ``aiter_raw()`` chunks back. The streamfsm relay adds the run
(the tap), the downstream accounting, the client-disconnect listener, the write deadline and the audit log.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from ._provider import provider, raise_fd_limit, serving
from ._report import Row, print_table

SECTION = "relay: 1,000 concurrent streams through streamfsm relay vs a plain httpx relay"
SHARD = 50
TARGET = 1.3
MAX_BASELINE_SPREAD = 1.5  # the baseline's slowest round over its fastest: past it, a ratio says nothing
_TICK = os.sysconf("SC_CLK_TCK")
CONTENDERS = ("plain", "minimal", "streamfsm")


# -- the contenders (each in a relay process) -------------------------------------------------------------


def plain_app(upstream: str) -> Any:
    """A pass-through relay with httpx alone: the baseline."""
    import httpx

    hop = {b"connection", b"keep-alive", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"host"}
    hop |= {b"content-length", b"proxy-authorization", b"proxy-connection"}
    from streamfsm.relay._pool import ShardedPool  # httpx pools alone: the streamfsm relay's arrangement

    pool = ShardedPool(max_connections=None, max_keepalive_connections=100)
    client = httpx.AsyncClient(base_url=upstream, timeout=600, transport=pool, trust_env=False)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in hop]
        request = httpx.Request(
            scope["method"], upstream + scope["raw_path"].decode(), headers=headers, content=body
        )
        response = await client.send(request, stream=True)
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in hop]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    return app


def minimal_app(upstream: str, audit: str) -> Any:
    """The least a diagnosing relay must do, with the standard library: the plain relay, and each chunk split
    into SSE lines (a partial line kept for the next chunk), each event's JSON parsed with ``json.loads``,
    the id, model, finish reason and ``[DONE]`` noted, and one record line per stream appended to a file
    kept open. What streamfsm's relay adds beyond this is the cost of its machine's truth."""
    import httpx

    hop = {b"connection", b"keep-alive", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"host"}
    hop |= {b"content-length", b"proxy-authorization", b"proxy-connection"}
    from streamfsm.relay._pool import ShardedPool

    pool = ShardedPool(max_connections=None, max_keepalive_connections=100)
    client = httpx.AsyncClient(base_url=upstream, timeout=600, transport=pool, trust_env=False)
    log = open(audit, "a", encoding="utf-8")  # noqa: SIM115 - held for the process's life
    loads, dumps = json.loads, json.dumps

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in hop]
        request = httpx.Request(
            scope["method"], upstream + scope["raw_path"].decode(), headers=headers, content=body
        )
        started = time.time()
        response = await client.send(request, stream=True)
        seen: dict[str, Any] = {"id": None, "model": None, "finish_reason": None, "done": False}
        events = errors = 0
        rest = b""
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in hop]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        seen["done"] = True
                        continue
                    events += 1
                    try:
                        payload = loads(data)
                    except ValueError:
                        errors += 1
                        continue
                    if seen["id"] is None and type(payload) is dict:
                        seen["id"], seen["model"] = payload.get("id"), payload.get("model")
                    choices = payload.get("choices") if type(payload) is dict else None
                    if choices and type(choices[0]) is dict:
                        finish = choices[0].get("finish_reason")
                        if finish is not None:
                            seen["finish_reason"] = finish
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
            record = {"status": response.status_code, "events": events, "malformed": errors, **seen}
            record["started"], record["ended"] = started, time.time()
            log.write(dumps(record) + "\n")
            log.flush()

    return app


def streamfsm_app(upstream: str, audit: str) -> Any:
    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.relay._app import IDLE_TIMEOUT_S
    from streamfsm.runtime import StreamConfig

    # Admits what the plain relay admits (its default max_concurrent, 1,000, would answer 503 beyond it),
    # and waits for a connection as long as it does (httpx's 600 s): at 5,000 streams the provider's listen
    # queue overflows and a dropped SYN is sent again after 1, 2, 4, 8 and 16 s, past the default 30 s
    # connect watchdog, which then names the upstream's timeout (504) where the plain relay waits.
    stream = StreamConfig(idle_timeout=IDLE_TIMEOUT_S, connect_timeout=600.0)
    return Relay(RelayConfig(upstream=upstream, audit_log=audit, max_concurrent=100_000, stream=stream))


def serve(kind: str, upstream: str, audit: str, shards: int | None = None) -> None:
    import asyncio

    import uvicorn

    from streamfsm.relay import _pool

    if shards is not None:  # both relays' upstream pools (--shards 1: one httpx pool, as before)
        _pool.SHARDS = shards
    from ._provider import raise_fd_limit

    raise_fd_limit(1 << 16)
    if kind == "plain":
        app = plain_app(upstream)
    elif kind == "minimal":
        app = minimal_app(upstream, audit)
    else:
        app = streamfsm_app(upstream, audit)
    # The collector as `streamfsm relay` settles it, for both contenders alike (without it, at 1,000 streams
    # at once, its passes cost the streamfsm relay about 0.4 ms a stream and the plain one about 0.25 ms).
    from streamfsm.relay._app import settle_collector

    settle_collector()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="error",
        access_log=False,
        lifespan="off",
        backlog=4096,
        server_header=False,
        date_header=False,
        http="h11",
        loop="asyncio",
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        print(server.servers[0].sockets[0].getsockname()[1], flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the parent closes our stdin
        server.should_exit = True
        await task

    asyncio.run(main())


# -- the load (this process) ------------------------------------------------------------------------------


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


async def _load(base_url: str, streams: int, deltas: int, steps: int, interval_ms: int) -> dict[str, Any]:
    import anyio
    import httpx

    from ._provider import path

    url = base_url + path(deltas, steps, interval_ms) + "/chat/completions"
    body = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    )
    clients = [
        httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=None), trust_env=False)
        for _ in range(-(-streams // SHARD))
    ]
    done = events = 0
    ramp = 1.0
    first_bytes: list[float] = []  # s from the request sent to its first body chunk, per stream
    gaps: list[float] = []  # s between a stream's body chunks (the provider sends them interval_ms apart)
    clock = time.perf_counter

    async def one(i: int) -> None:
        nonlocal done, events
        await anyio.sleep(i / streams * ramp)
        client = clients[i // SHARD]
        data = b""
        sent = clock()
        last = 0.0
        try:
            async with client.stream(
                "POST", url, content=body, headers={"content-type": "application/json"}
            ) as r:
                async for chunk in r.aiter_raw():
                    now = clock()
                    if data:
                        gaps.append(now - last)
                    else:
                        first_bytes.append(now - sent)
                    last = now
                    data += chunk
        except httpx.HTTPError:
            return
        if data.rstrip().endswith(b"data: [DONE]"):
            done += 1
        events += data.count(b"\ndata: ") + data.startswith(b"data: ")

    start = time.perf_counter()
    with anyio.fail_after(300):
        async with anyio.create_task_group() as tasks:
            for i in range(streams):
                tasks.start_soon(one, i)
    wall = time.perf_counter() - start
    for client in clients:
        await client.aclose()
    return {
        "completed": done,
        "events": events,
        "wall_s": wall,
        "ttfb_p50_ms": _quantile(first_bytes, 0.5) * 1e3,
        "gap_p99_ms": _quantile(gaps, 0.99) * 1e3,
    }


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextmanager
def relay_process(
    kind: str, provider_url: str, audit: str, shards: int | None = None, root: Path | None = None
) -> Iterator[tuple[str, int]]:
    """A relay of ``kind`` in a process of its own: (its base URL, its pid), until the block ends. ``root``:
    the tree it runs from (another checkout: its own ``streamfsm``)."""
    args = ("--serve", kind, "--upstream", provider_url, "--audit", audit)
    args += ("--shards", str(shards)) if shards is not None else ()
    what = f"the {kind} relay"
    with serving("benchmarks.relay", *args, what=what, stop_wait_s=30, root=root) as (port, pid):
        yield f"http://127.0.0.1:{port}", pid


def load_round(
    base: str, pid: int, streams: int, deltas: int, steps: int, interval_ms: int
) -> dict[str, Any]:
    """One round of ``streams`` streams through a running relay; its CPU, events and completions."""
    import anyio

    before = _cpu(pid)
    result = anyio.run(_load, base, streams, deltas, steps, interval_ms)
    result["cpu_s"] = _cpu(pid) - before
    return result


def _spread(values: list[float]) -> str:
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}"


def _fit(short: list[dict[str, Any]], long: list[dict[str, Any]], streams: int) -> tuple[float, float]:
    """(CPU per stream, CPU per event) in µs, from the median rounds at two event counts per stream: CPU per
    stream = a + b x events per stream, through the two points."""
    points = []
    for rounds in (short, long):
        cpu = statistics.median(r["cpu_s"] for r in rounds) / streams * 1e6
        points.append((statistics.median(r["events"] for r in rounds) / streams, cpu))
    (e1, c1), (e2, c2) = points
    per_event = (c2 - c1) / (e2 - e1) if e2 != e1 else 0.0
    return c1 - per_event * e1, per_event


def measure(
    streams: int = 1000,
    *,
    deltas: int = 200,
    steps: int = 20,
    interval_ms: int = 50,
    rounds: int = 3,
    short_deltas: int = 1,
    shards: int | None = None,
    against: Path | None = None,
) -> list[Row]:
    """Both relays run side by side for the whole measurement, each warmed by a round of its own first;
    then ``rounds`` rounds, each contender once per round, the order alternating. The ratio is of the
    medians, and it is refused (no baseline, the reason in the note) when the two did not complete the same
    streams or the baseline's own rounds spread wider than ``MAX_BASELINE_SPREAD``. ``against``: another
    checkout whose streamfsm relay runs as a third contender in the same rounds (``before``: rows compare
    this tree's relay with it)."""
    raise_fd_limit(1 << 16)
    kinds: tuple[str, ...] = CONTENDERS + (("before",) if against is not None else ())
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    shorts: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}  # the fit's second point
    with provider() as url, tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        audit = Path(folder) / "audit.jsonl"
        relays = {
            kind: stack.enter_context(relay_process(kind, url, str(Path(folder) / f"{kind}.jsonl"), shards))
            for kind in CONTENDERS
            if kind != "streamfsm"
        }
        relays["streamfsm"] = stack.enter_context(relay_process("streamfsm", url, str(audit), shards))
        if against is not None:
            before = str(Path(folder) / "before.jsonl")
            relays["before"] = stack.enter_context(relay_process("streamfsm", url, before, shards, against))
        warm = max(1, streams // 10)
        for kind in kinds:
            load_round(*relays[kind], warm, deltas, steps, interval_ms)
        for i in range(rounds):
            for kind in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:  # each takes each place in turn
                runs[kind].append(load_round(*relays[kind], streams, deltas, steps, interval_ms))
                shorts[kind].append(load_round(*relays[kind], streams, short_deltas, 1, interval_ms))
        time.sleep(0.2)
        # Run records only: the audit log also holds the relay's begin lines (one per stream).
        lines = audit.read_text().splitlines() if audit.exists() else []
        recorded = sum(str(json.loads(line).get("schema")).startswith("streamfsm.run/") for line in lines)
        recorded -= warm
    per = {k: [r["cpu_s"] / max(r["events"], 1) * 1e6 for r in runs[k]] for k in kinds}
    rate = {k: statistics.median(r["events"] / r["wall_s"] for r in runs[k]) for k in kinds}
    completed = {k: sum(r["completed"] for r in runs[k]) for k in kinds}
    fit = {k: _fit(shorts[k], runs[k], streams) for k in kinds}
    short_done = {k: sum(r["completed"] for r in shorts[k]) for k in kinds}
    problems = []
    if short_done["plain"] != short_done["streamfsm"]:
        problems.append(f"short rounds: completed {short_done['streamfsm']} against {short_done['plain']}")
    for kind in ("minimal", "streamfsm"):
        if completed["plain"] != completed[kind]:
            problems.append(
                f"{kind}: completed {completed[kind]} streams against the baseline's {completed['plain']}"
            )
    spread = max(per["plain"]) / max(min(per["plain"]), 1e-9)
    if spread > MAX_BASELINE_SPREAD:
        problems.append(
            f"the baseline's rounds spread {spread:.2f}x (at most {MAX_BASELINE_SPREAD}x is read)"
        )
    note = (
        f"min / median / max over {rounds} rounds: streamfsm {_spread(per['streamfsm'])} us, "
        f"minimal {_spread(per['minimal'])} us, plain {_spread(per['plain'])} us"
    )
    ttfb = {k: statistics.median(r["ttfb_p50_ms"] for r in runs[k]) for k in kinds}
    gap = {k: statistics.median(r["gap_p99_ms"] for r in runs[k]) for k in kinds}
    if problems:
        note = f"ratio INVALID (target {TARGET}x): " + "; ".join(problems) + ". " + note
    extra = {"rounds": runs, "short_rounds": shorts, "streams": streams, "deltas": deltas}
    extra["valid"] = not problems
    fit_note = f"two-point fit over {short_deltas} and {deltas} deltas per stream, medians of {rounds} rounds"
    added = (fit["streamfsm"][0] - fit["plain"][0], fit["streamfsm"][1] - fit["plain"][1])
    total = streams * rounds * 2  # the long and the short rounds
    minimal = (fit["minimal"][0] - fit["plain"][0], fit["minimal"][1] - fit["plain"][1])
    rows = [
        Row(
            SECTION,
            "CPU per relayed event (median)",
            statistics.median(per["streamfsm"]),
            "us",
            None if problems else statistics.median(per["plain"]),
            "plain httpx relay",
            None if problems else TARGET,
            note=note,
            extra=extra,
        ),
        Row(
            SECTION,
            "CPU per relayed event (median), minimal diagnosing relay",
            statistics.median(per["minimal"]),
            "us",
            None if problems else statistics.median(per["plain"]),
            "plain httpx relay",
            note=f"SSE lines split, every event's JSON parsed (json), one record line a stream: "
            f"{_spread(per['minimal'])} us",
        ),
        Row(
            SECTION,
            "CPU per relayed event (median), streamfsm over the minimal relay",
            statistics.median(per["streamfsm"]),
            "us",
            None if problems else statistics.median(per["minimal"]),
            "minimal diagnosing relay",
            note="what the machine's truth costs past the least a diagnosing relay does",
        ),
        Row(
            SECTION,
            "added time to first byte, p50 (median of rounds)",
            ttfb["streamfsm"] - ttfb["plain"],
            "ms",
            note=f"p50 from the request sent to the first body chunk: plain {ttfb['plain']:.2f} ms, "
            f"minimal {ttfb['minimal']:.2f} ms (+{ttfb['minimal'] - ttfb['plain']:.2f}), "
            f"streamfsm {ttfb['streamfsm']:.2f} ms",
            extra={"ttfb_p50_ms": ttfb},
        ),
        Row(
            SECTION,
            "inter-event gap, p99 (median of rounds)",
            gap["streamfsm"],
            "ms",
            gap["plain"],
            "plain httpx relay",
            note=f"p99 between a stream's body chunks (sent {interval_ms} ms apart): plain "
            f"{gap['plain']:.1f} ms, minimal {gap['minimal']:.1f} ms, streamfsm {gap['streamfsm']:.1f} ms",
            extra={"gap_p99_ms": gap},
        ),
        Row(
            SECTION,
            "throughput (median)",
            rate["streamfsm"],
            "events/s",
            rate["plain"],
            "plain httpx relay",
            better="higher",
        ),
        Row(
            SECTION,
            "completed streams",
            completed["streamfsm"],
            "streams",
            completed["plain"],
            "plain httpx relay",
            1.0,
            "higher",
            note=f"{rounds} rounds of {streams}",
        ),
        Row(SECTION, "streams recorded (audit log)", recorded, "records", total, "streams", 1.0, "higher"),
        Row(
            SECTION,
            "CPU per stream (fit)",
            fit["streamfsm"][0],
            "us",
            None if problems else fit["plain"][0],
            "plain httpx relay",
            note=f"{fit_note}; added by streamfsm {added[0]:,.0f} us per stream (target 1,000)",
            extra={"added_us": added[0], "plain_us": fit["plain"][0]},
        ),
        Row(
            SECTION,
            "CPU per event (fit)",
            fit["streamfsm"][1],
            "us",
            None if problems else fit["plain"][1],
            "plain httpx relay",
            note=f"{fit_note}; added by streamfsm {added[1]:.1f} us per event (by the minimal relay "
            f"{minimal[1]:.1f} us, and {minimal[0]:,.0f} us per stream)",
            extra={"added_us": added[1], "plain_us": fit["plain"][1]},
        ),
    ]
    if against is not None:
        plain = fit["plain"]
        mine, theirs = fit["streamfsm"], fit["before"]
        vs = f"the streamfsm relay of {against}"
        rows += [
            Row(
                SECTION,
                "CPU per relayed event (median), this tree",
                statistics.median(per["streamfsm"]),
                "us",
                statistics.median(per["before"]),
                vs,
                note=f"{vs}: {_spread(per['before'])} us; completed {completed['before']} streams, "
                f"{short_done['before']} short",
            ),
            Row(
                SECTION,
                "added per stream (fit), this tree",
                mine[0] - plain[0],
                "us",
                theirs[0] - plain[0],
                vs,
                note=f"over the plain relay's {plain[0]:,.0f} us per stream, same rounds",
            ),
            Row(
                SECTION,
                "added per event (fit), this tree",
                mine[1] - plain[1],
                "us",
                theirs[1] - plain[1],
                vs,
                note=f"over the plain relay's {plain[1]:.1f} us per event, same rounds",
            ),
        ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.relay", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100 streams of 40 deltas")
    parser.add_argument("--streams", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per contender (default 3)")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--shards", type=int, default=None, help="upstream pools per relay (16; 1: one)")
    parser.add_argument(
        "--against", type=Path, metavar="TREE", help="another checkout's relay as a third contender"
    )
    parser.add_argument("--serve", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--audit", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.upstream, args.audit, args.shards)
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.quick:
        rows = measure(
            args.streams or 100,
            deltas=40,
            steps=8,
            interval_ms=20,
            rounds=args.rounds,
            shards=args.shards,
            against=args.against,
        )
    else:
        rows = measure(args.streams or 1000, rounds=args.rounds, shards=args.shards, against=args.against)
    print_table(SECTION, rows)
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in rows], indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
