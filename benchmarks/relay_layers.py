"""The relay's cost per stream, layer by layer, in one process and without sockets: each layer added in turn
in front of the same in-memory upstream (an ``httpx.MockTransport`` streaming one short OpenAI chat answer).

    python -m benchmarks.relay_layers [--streams 3000] [--rounds 3]

Layers, each measured alone, CPU per stream (median of interleaved rounds):

1. ``httpx`` client over the in-memory upstream, the body read raw (the floor: what any relay pays);
2. the same client through the tap (the run, its record, no sink);
3. the whole relay as an ASGI application (request checks, body read, disconnect listener, the write
   deadlines, the downstream accounting), with no sink, no metrics and no journal;
4. then, one added at a time: the Prometheus metrics; the audit log's line of the record; the journal's
   begin line (now the relay as ``streamfsm relay --audit-log`` runs it: its errors page follows the audit
   log); a run store's index as each run ends (``StoreSink``, its call and its writer thread, flushed inside
   the measurement: a relay with ``--store``, or without an audit log, pays it);
5. the relay as ``Relay(RelayConfig(upstream, audit_log=...))`` builds it, nothing taken out (run with
   another checkout first on ``PYTHONPATH`` to compare trees).

The sockets, the ASGI server and the event loop's waits are left out: ``benchmarks.relay`` measures the
whole; this says which layer of streamfsm's own the per-stream cost is in.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from ._report import Row, print_table

SECTION = "relay layers: CPU per short stream in one process, no sockets"
_PATH = "/v1/chat/completions"


def _contenders(
    folder: Path,
) -> tuple[dict[str, Callable[[], Awaitable[None]]], list[Callable[[], object]]]:
    """The layers, and the flushes of their store sinks (a writer's work is the layer's cost)."""
    import anyio
    import httpx

    from streamfsm.relay import Relay, RelayConfig
    from streamfsm.relay._journal import Journal
    from streamfsm.relay._pool import UpstreamClient
    from streamfsm.runtime import AuditLog, StreamConfig
    from streamfsm.store import StoreSink
    from streamfsm.tap import async_transport
    from streamfsm.testing import text_stream

    frames = text_stream("openai-chat", ["hello"])
    body = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    )
    content = body.encode()

    class Answer(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for frame in frames:
                yield frame

    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Answer())

    def client(tapped: bool, config: StreamConfig) -> httpx.AsyncClient:
        inner = httpx.MockTransport(upstream)
        transport = async_transport(inner, http="httpx", config=config) if tapped else inner
        return UpstreamClient(transport=transport, timeout=600)  # the relay's: no cookie jar

    def direct(http: httpx.AsyncClient) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            request = httpx.Request("POST", "http://upstream.test" + _PATH, content=content)
            response = await http.send(request, stream=True)
            async for _ in response.aiter_raw():
                pass
            await response.aclose()

        return one

    flushes: list[Callable[[], object]] = []

    def relayed(*parts: str) -> Callable[[], Awaitable[None]]:
        """The relay with only ``parts`` of its per-stream work: metrics, store, audit, begin."""
        relay = Relay(RelayConfig(upstream="http://upstream.test", audit_log=str(folder / "audit.jsonl")))
        if "as built" in parts:  # nothing taken out or added
            sink = getattr(relay.errors, "sink", None)
            if sink is not None:
                flushes.append(sink.flush)
            relay._client = client(True, relay._stream_config)
            return asgi(relay)
        audit = [s for s in relay._stream_config.sinks if isinstance(s, AuditLog)]
        sinks: list[Any] = audit if "audit" in parts else []
        if "store" in parts:  # as with --store, or without an audit log
            store = StoreSink(str(folder / f"runs{len(flushes)}.db"))
            sinks.append(store)
            flushes.append(store.flush)
        if "metrics" in parts and relay.metrics is not None:
            sinks.append(relay.metrics.record)
        else:
            relay.metrics = None
        relay._stream_config = relay._stream_config.replace(sinks=tuple(sinks))
        if "begin" not in parts:
            relay._journal = Journal([], ())
        relay._client = client(True, relay._stream_config)
        return asgi(relay)

    def asgi(relay: Relay) -> Callable[[], Awaitable[None]]:
        scope = {
            "type": "http",
            "method": "POST",
            "path": _PATH,
            "raw_path": _PATH.encode(),
            "query_string": b"",
            "headers": [
                (b"host", b"relay.test"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                (b"authorization", b"Bearer sk-bench"),
            ],
        }

        async def one() -> None:
            messages = [{"type": "http.request", "body": content, "more_body": False}]

            async def receive() -> dict[str, Any]:
                if messages:
                    return messages.pop()
                await anyio.sleep_forever()  # the client stays: the listener waits until the exchange ends
                raise AssertionError

            async def send(message: Any) -> None:
                pass

            await relay(scope, receive, send)

        return one

    return {
        "httpx client, in-memory upstream (floor)": direct(client(False, StreamConfig())),
        "+ the tap (run and record, no sink)": direct(client(True, StreamConfig())),
        "+ the relay's ASGI exchange (no sink, metrics or journal)": relayed(),
        "+ the metrics": relayed("metrics"),
        "+ the audit log's record line": relayed("metrics", "audit"),
        "+ the journal's begin line (the whole relay)": relayed("metrics", "audit", "begin"),
        "+ a run store's index as runs end (StoreSink)": relayed("metrics", "audit", "begin", "store"),
        "the relay as built with an audit log (streamfsm relay --audit-log)": relayed("as built"),
    }, flushes


def measure(streams: int = 3000, rounds: int = 3) -> list[Row]:
    import anyio

    samples: dict[str, list[float]] = {}

    async def main(folder: Path) -> None:
        contenders, flushes = _contenders(folder)

        def flush() -> None:  # every store writer's batch, inside the layer that queued it
            for each in flushes:
                each()

        for name, one in contenders.items():  # warm
            samples[name] = []
            for _ in range(max(10, streams // 10)):
                await one()
            flush()
        for _ in range(rounds):  # interleaved: every layer sees the same window of the machine
            for name, one in contenders.items():
                start = time.process_time()
                for _ in range(streams):
                    await one()
                flush()
                samples[name].append((time.process_time() - start) / streams * 1e6)

    with tempfile.TemporaryDirectory() as folder:
        anyio.run(main, Path(folder))
    floor_name = next(iter(samples))
    base = statistics.median(samples[floor_name])
    rows = []
    previous = base
    for name, values in samples.items():
        median = statistics.median(values)
        layer = name.startswith("+")  # a layer over the row before; else a whole on its own
        added = f"; this layer adds {median - previous:,.0f} µs" if layer else ""
        rows.append(
            Row(
                SECTION,
                name,
                median,
                "µs",
                baseline=None if name == floor_name else base,
                baseline_name="" if name == floor_name else "the floor",
                note=f"min {min(values):,.0f} / max {max(values):,.0f} µs, {rounds}x{streams}{added}",
            )
        )
        previous = median
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.relay_layers", description=__doc__)
    parser.add_argument("--streams", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print_table(SECTION, measure(args.streams, args.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
