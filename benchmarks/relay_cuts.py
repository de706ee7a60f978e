"""The relay under load while its event loop is held: every upstream cut recorded as a cut, every stream one
record with a close kind (issue 25's load acceptance).

    python -m benchmarks.relay_cuts [--streams 1000] [--concurrency 1000]

Setup: the fault provider in a process of its own (a cut leaves it when it should, whatever the relay's loop
does); the relay (real uvicorn, one worker, ``--idle-timeout`` 0.3 s) in a thread of this process behind a
route that holds its loop 0.5 s (``time.sleep`` in a handler, again and again, 0.05-0.3 s apart); the clients
here. Each stream is, at random, cut by the upstream (FIN or RST after three frames), whole, or left by its
client after the first chunk. Printed: streams per (kind, close kind), request ids without exactly one
record, and cuts recorded as anything but ``upstream_premature_close`` (must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

IDLE_S = 0.3
STALL_S = 0.5
KINDS = ("fin", "rst", "ok", "abort")

_UPSTREAM = """
import sys
from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Fin, Headers, Keepalive, Rst, Send, Sleep
from streamfsm.testing._server import FaultServerThread

frames = text_stream("openai-chat", ["a", "b", "c"])


def route(request):
    kind = request.query.partition("kind=")[2].partition("&")[0]
    if kind in ("fin", "rst"):
        return (Headers(), *(Send(f) for f in frames[:3]), Sleep(0.05), Fin() if kind == "fin" else Rst())
    if kind == "abort":
        return (Headers(), *(Send(f) for f in frames[:2]), Keepalive(every=0.05, count=100), End())
    return (Headers(), *(Send(f) for f in frames), End())


with FaultServerThread(route, backlog=4096) as server:
    print(server.port, flush=True)
    sys.stdin.read()
"""


class _Stalling:
    """The relay behind ``POST /stall``, which holds the event loop ``STALL_S`` (a task that never yields)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/stall":
            time.sleep(STALL_S)  # the point
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


async def _clients(base: str, kinds: list[str], concurrency: int) -> float:
    import httpx

    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    gate = asyncio.Semaphore(concurrency)
    done = asyncio.Event()

    async def one(client: httpx.AsyncClient, i: int, kind: str) -> None:
        async with gate:
            url = f"{base}/v1/chat/completions?kind={kind}"
            try:
                async with client.stream("POST", url, json=body, headers={"x-request-id": f"r{i}"}) as answer:
                    async for _ in answer.aiter_raw():
                        if kind == "abort":
                            return
            except httpx.HTTPError:
                pass

    async def stall() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            while not done.is_set():
                await client.post(base + "/stall")
                await asyncio.sleep(random.uniform(0.05, 0.3))

    staller = asyncio.create_task(stall())
    limits = httpx.Limits(max_connections=concurrency)
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(*(one(client, i, kind) for i, kind in enumerate(kinds)))
    took = time.monotonic() - started
    done.set()
    await staller
    return took


def run(streams: int, concurrency: int) -> int:
    import uvicorn

    from streamfsm import StreamConfig
    from streamfsm.relay import Relay, RelayConfig

    kinds = [random.choice(KINDS) for _ in range(streams)]
    folder = Path(tempfile.mkdtemp())
    upstream = subprocess.Popen(
        [sys.executable, "-c", _UPSTREAM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert upstream.stdout is not None
    config = RelayConfig(
        upstream=f"http://127.0.0.1:{int(upstream.stdout.readline())}",
        stream=StreamConfig(idle_timeout=IDLE_S),
        audit_log=str(folder / "audit.jsonl"),
    )
    server = uvicorn.Server(
        uvicorn.Config(_Stalling(Relay(config)), host="127.0.0.1", port=0, log_level="critical")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        took = asyncio.run(_clients(f"http://127.0.0.1:{port}", kinds, concurrency))
        time.sleep(2.0)  # the last records
    finally:
        server.should_exit = True
        thread.join(30)
        upstream.communicate(timeout=30)
    lines = (folder / "audit.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    per_id = collections.Counter(r["ids"]["context"]["request_id"] for r in records)
    table: collections.Counter[tuple[str, str | None]] = collections.Counter()
    for record in records:
        kind = kinds[int(record["ids"]["context"]["request_id"][1:])]
        table[(kind, (record["relay"] or {}).get("close"))] += 1
    not_once = sum(1 for i in range(streams) if per_id.get(f"r{i}", 0) != 1)
    cuts_not_cuts = sum(
        n
        for (kind, close), n in table.items()
        if kind in ("fin", "rst") and close != "upstream_premature_close"
    )
    print(f"{streams} streams, {concurrency} at once, {took:.1f} s, {len(records)} records")
    for (kind, close), n in sorted(table.items(), key=str):
        print(f"  {kind:6} -> {close}: {n}")
    print(f"request ids without exactly one record: {not_once}; cuts recorded otherwise: {cuts_not_cuts}")
    return 1 if not_once or cuts_not_cuts else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=1000)
    args = parser.parse_args()
    return run(args.streams, args.concurrency)


if __name__ == "__main__":
    sys.exit(main())
