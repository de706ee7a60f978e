"""Section 6: what the tap adds to the bare SDK iteration, and where it goes (in-memory transport).

    python -m benchmarks.tap [--repeat N] [--quick]

The targets (issue 28): the SDK iterating a stream through a client whose transport is the tap
(``streamfsm.async_http_client(http="httpx2", transport=...)``) costs at most 1.10x (openai) and 1.20x
(anthropic) the CPU of the same SDK iterating the same bytes without it (issue 19 asked 1.05x); for the
``openai`` 3.x SDK (``AsyncOpenAI`` chat completions stream) and the ``anthropic`` 2.x SDK (the raw events of
``messages.create(stream=True)``), one SSE event per read (``live``) and random 64 B - 16 KiB reads
(``bulk``). Payloads, transport and clock are section 1's: the same
bytes for every contender through ``benchmarks._transport.MemoryTransport2`` (one event-loop checkpoint per
read), CPU time (``time.process_time``) per stream, medians over repeats with every contender of one payload
and chunking interleaved round-robin, reported per SSE event of the payload. Asyncio (the SDKs' loop).

Contenders, each the SDK's whole request and iteration to the end, on its own ``httpx2.AsyncClient``:

* ``sdk``: the bare SDK (the baseline of every row).
* ``tap``: the SDK on ``streamfsm.async_http_client(http="httpx2", transport=<the in-memory transport>)``:
  every chunk the SDK reads also goes through the run's SSE decoder, wire adapter, machine and recorder, and
  the record reaches a sink at the end.

And, to say where the tap's cost goes, the tap taken apart, each layer the one before it plus one part
(every layer under the same bare SDK iteration, in the same round-robin):

1. ``relay``: a byte stream between the SDK and the transport that hands each chunk on and does nothing
   else: what any tap that sits in the body's stream costs at the least.
2. ``scopeless``: the tap's own transport and stream, its run's pipeline stubbed (each chunk only counted;
   at the end the run is sealed and its record handed to the sink), and the read's cancel scope replaced by
   a no-op: request matching, run set-up, the per-read bookkeeping (the read timed for the idle watchdog),
   and the record.
3. ``wrapper``: with the read's cancel scope, which the loop's watchdog cancels when a deadline passes.
4. ``sse``: each chunk also through the SSE decoder.
5. ``adapter``: each frame also through the wire adapter (its JSON parsed, events made, not applied).
6. the whole tap: each event also through the machine and the recorder.

Beside them, ``parse``: layer 1 plus what any tap that reads the events must do at the least: split each
chunk into lines and parse each data line's JSON, with json's C scanner alone as the adapters do (cheaper
than section 1's ``json.loads``), nothing validated or interpreted. And ``alone``: the tap's run
fed the same chunks directly (``run.chunk()`` for each; no SDK, no IO): its decoder, adapter, machine and
record by themselves, to compare with what layers 4-6 add inside the SDK's iteration.

Before timing, every contender runs once and is checked: each SDK reads every item, each tapped run saw
every byte (the whole tap's record says completed), each pass-through stream relayed every byte.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from ._payloads import BODIES, CHUNKINGS, Payload, make
from ._report import Row, print_table

SECTION: Final = "6. the tap under the bare SDK iteration (in-memory transport, asyncio)"
SDKS: Final = {"openai-chat": "openai SDK", "anthropic": "anthropic SDK"}
TARGETS: Final = {"openai-chat": 1.10, "anthropic": 1.20}

# (key, row name, what the layer adds to the one before it)
LAYERS: Final = (
    ("relay", "1. pass-through byte stream", "a byte stream that hands each chunk on"),
    ("scopeless", "2. tap, pipeline stubbed, no read scope", "matching, run, per-read bookkeeping, record"),
    ("wrapper", "3. + the read's cancel scope", "each read in a cancel scope the watchdog can cancel"),
    ("sse", "4. + SSE decoder", "each chunk decoded into SSE frames"),
    ("adapter", "5. + wire adapter", "each frame's JSON parsed into events"),
    ("tap", "6. + machine and record (the tap)", "each event through the machine and the recorder"),
)
CONTENDERS: Final = ("sdk", "parse", "alone", *(key for key, _, _ in LAYERS))

Contender = Callable[[], Awaitable[int]]


class Seen:
    """What the tap side of one contender saw of its last stream: the run's record (it is the contender's
    sink), or the bytes and data lines a pass-through stream handed on."""

    def __init__(self) -> None:
        self.record: Any = None
        self.bytes = 0
        self.data_lines = 0

    def __call__(self, record: Any) -> None:
        self.record = record


class _NoScope:
    """A read scope that nothing can cancel (layer 2)."""

    cancel_called = cancelled_caught = False

    def __enter__(self) -> _NoScope:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def cancel(self) -> None:
        return None


def _run_classes() -> dict[str, type]:
    """The tap's run with its pipeline cut back, one class per layer below the whole tap."""
    from streamfsm.runtime import LoopReads
    from streamfsm.tap._run import TapRun

    class Stubbed(TapRun):
        def chunk(self, chunk: bytes | None) -> Any:
            if chunk is None:  # the clean end: the run fails (no terminal event seen) and is sealed
                return super().chunk(None)
            self.core.rec.bytes_received += len(chunk)
            return None

    class ScopelessReads(LoopReads):
        @property
        def scope_class(self) -> Callable[[], Any]:
            return _NoScope

        @scope_class.setter
        def scope_class(self, value: Any) -> None:
            pass

    class Scopeless(Stubbed):
        def _reader(self) -> Any:
            return ScopelessReads(self.core)

    class Decoded(TapRun):
        def chunk(self, chunk: bytes | None) -> Any:
            wire = self.core.wire
            if chunk is None or wire is None:
                return super().chunk(chunk)
            wire.frames(chunk)
            return None

    class Adapted(TapRun):
        def chunk(self, chunk: bytes | None) -> Any:
            wire = self.core.wire
            if chunk is None or wire is None:
                return super().chunk(chunk)
            feed = wire.feed
            for frame in wire.frames(chunk):
                feed(frame)
            return None

    return {"scopeless": Scopeless, "wrapper": Stubbed, "sse": Decoded, "adapter": Adapted, "tap": TapRun}


def _stub_tap(inner: Any, run_class: type, seen: Seen) -> Any:
    """The tap's httpx2 transport over ``inner``, whose runs are ``run_class``."""
    import httpx2

    from streamfsm import StreamConfig
    from streamfsm.tap._transport import library

    class StubTap(library("httpx2")[1]):  # type: ignore[misc]
        def _run_for(self, request: Any, cls: type) -> Any:
            return super()._run_for(request, run_class)

    return StubTap(inner, library=httpx2, config=StreamConfig(sinks=(seen,)), rules=(), strict_eof=False)


def _relay_transport(inner: Any, seen: Seen, *, parse: bool) -> Any:
    """A transport whose response body is ``inner``'s, handed on chunk by chunk (``parse``: each chunk also
    split into lines, and each data line's JSON parsed by json's C scanner, as the adapters parse it)."""
    import httpx2

    scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]

    class Relay(httpx2.AsyncByteStream):
        def __init__(self, stream: Any) -> None:
            self._stream = stream
            self._next: Any = None
            seen.bytes = seen.data_lines = 0

        def __aiter__(self) -> Relay:
            if self._next is None:
                self._next = self._stream.__aiter__().__anext__
            return self

        async def __anext__(self) -> bytes:
            chunk: bytes = await self._next()
            seen.bytes += len(chunk)
            return chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class Parse(Relay):
        _buffer = b""

        async def __anext__(self) -> bytes:
            chunk: bytes = await self._next()
            seen.bytes += len(chunk)
            lines = (self._buffer + chunk).split(b"\n") if self._buffer else chunk.split(b"\n")
            self._buffer = lines.pop()
            for line in lines:
                if line.startswith(b"data:"):
                    data = line[6:] if line[5:6] == b" " else line[5:]
                    if data != b"[DONE]":
                        scan(data.decode(), 0)
                        seen.data_lines += 1
            return chunk

    stream_class = Parse if parse else Relay

    class RelayTransport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            response = await inner.handle_async_request(request)
            response.stream = stream_class(response.stream)
            return response

        async def aclose(self) -> None:
            await inner.aclose()

    return RelayTransport()


def _sdk(call: Callable[[], Any]) -> Contender:
    async def run() -> int:
        count = 0
        stream = await call()
        async for _ in stream:
            count += 1
        return count

    return run


def _alone(fmt: str, chunks: list[bytes], seen: Seen) -> Contender:
    """The tap's run fed ``chunks`` directly, as the tap's stream feeds it (the run over, it stops)."""
    from streamfsm import Ids, StreamConfig
    from streamfsm.tap._run import TapRun

    from ._transport import HEADERS

    config = StreamConfig(sinks=(seen,))
    headers = dict(HEADERS)
    url = (
        "http://bench.local/v1/chat/completions" if fmt == "openai-chat" else "http://bench.local/v1/messages"
    )

    async def run() -> int:
        tap_run = TapRun(fmt, body=BODIES[fmt], url=url, config=config, ids=Ids())
        tap_run.begin()
        tap_run.connected(200, headers)
        applied = 0
        for chunk in chunks:
            if tap_run.done:
                break
            tap_run.chunk(chunk)
            applied += 1
        if not tap_run.done:
            tap_run.chunk(None)
        tap_run.end()
        return applied

    return run


def contenders(payload: Payload, chunking: str) -> tuple[dict[str, Contender], dict[str, Seen]]:
    """Every contender on ``payload`` cut by ``chunking`` (call inside the event loop that runs them), and
    what each one's tap side saw of its last stream."""
    import httpx2

    import streamfsm

    from ._transport import MemoryTransport2
    from .overhead import _sdk_call

    chunks = payload.chunks(chunking)  # type: ignore[arg-type]
    fmt = payload.fmt
    seen = {name: Seen() for name in CONTENDERS if name != "sdk"}
    runs = _run_classes()

    def client(name: str) -> Any:
        inner = MemoryTransport2(chunks)
        if name == "sdk":
            return httpx2.AsyncClient(transport=inner)
        if name == "tap":  # the public way, as a user writes it
            config = streamfsm.StreamConfig(sinks=(seen[name],))
            return streamfsm.async_http_client(http="httpx2", config=config, transport=inner)
        if name in ("relay", "parse"):
            return httpx2.AsyncClient(transport=_relay_transport(inner, seen[name], parse=name == "parse"))
        return httpx2.AsyncClient(transport=_stub_tap(inner, runs[name], seen[name]))

    fns: dict[str, Contender] = {}
    for name in CONTENDERS:
        if name == "alone":
            fns[name] = _alone(fmt, chunks, seen[name])
        else:
            fns[name] = _sdk(_sdk_call(fmt, chunks, http_client=client(name)))
    return fns, seen


def problems(payload: Payload, counts: dict[str, int], seen: dict[str, Seen]) -> list[str]:
    """What a contender missed of the stream it was given (empty when each read the whole of it)."""
    size = payload.size
    out: list[str] = []
    sdk_items = counts["sdk"]
    if sdk_items <= 0:
        out.append("the bare SDK read no items")
    for name, items in counts.items():
        if name not in ("sdk", "alone") and items != sdk_items:
            out.append(f"{name}: the SDK read {items} items, bare {sdk_items}")
    for name in ("relay", "parse"):
        if seen[name].bytes != size:
            out.append(f"{name}: relayed {seen[name].bytes} of {size} bytes")
    data_lines = sum(
        1
        for frame in payload.frames
        for line in frame.split(b"\n")
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
    )
    if seen["parse"].data_lines != data_lines:
        out.append(f"parse: parsed {seen['parse'].data_lines} of {data_lines} data lines")
    for name in ("scopeless", "wrapper", "sse", "adapter", "tap", "alone"):
        record = seen[name].record
        if record is None:
            out.append(f"{name}: no record reached the sink")
            continue
        received = record["transport"]["bytes_received"]
        if received != size:
            out.append(f"{name}: the run saw {received} of {size} bytes")
        if name in ("tap", "alone") and record["outcome"]["class"] != "completed":
            out.append(f"{name}: the run ended {record['outcome']['summary_key']}, not completed")
    return out


async def read_once(payload: Payload, chunking: str) -> tuple[dict[str, int], dict[str, Seen]]:
    """Every contender once: (what each returned, what each saw)."""
    warnings.simplefilter("ignore")
    fns, seen = contenders(payload, chunking)
    return {name: await fn() for name, fn in fns.items()}, seen


async def _samples(payload: Payload, chunking: str, repeat: int) -> dict[str, list[float]]:
    """CPU seconds of each contender, ``repeat`` rounds of all of them in turn (section 1's way), after one
    round that warms them up and checks that each read the whole stream."""
    fns, seen = contenders(payload, chunking)
    counts = {name: await fn() for name, fn in fns.items()}
    missed = problems(payload, counts, seen)
    if missed:
        raise RuntimeError(f"{payload.fmt} {chunking}: " + "; ".join(missed))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            start = time.process_time()
            await fn()
            samples[name].append(time.process_time() - start)
    return samples


def measure(
    repeat: int, formats: tuple[str, ...] = tuple(SDKS), sizes: dict[str, int] | None = None
) -> list[Row]:
    """``sizes``: ``make()``'s keyword arguments (the quick run uses a shorter stream)."""
    warnings.simplefilter("ignore")
    rows: list[Row] = []
    for fmt in formats:
        payload = make(fmt, **(sizes or {}))
        events = len(payload.frames)
        sdk_name = SDKS[fmt]
        for chunking in CHUNKINGS:
            label = f"{fmt} {chunking}"
            samples = anyio.run(_samples, payload, chunking, repeat, backend="asyncio")
            us = {k: statistics.median(v) / events * 1e6 for k, v in samples.items()}
            # The tap's ratio in each round (both measured within a second or two of each other): its spread
            # is the noise of this machine at that time.
            rounds = [tap / sdk for tap, sdk in zip(samples["tap"], samples["sdk"], strict=True)]
            info = {
                "format": fmt,
                "chunking": chunking,
                "events": events,
                "reads": len(payload.chunks(chunking)),  # type: ignore[arg-type]
                "cpu_us_per_event": us,
                "tap_ratio_per_round": [round(r, 4) for r in rounds],
                "cpu_s_samples": samples,
            }
            added = us["tap"] - us["sdk"]
            keys = [key for key, _, _ in LAYERS]
            steps = {key: us[key] - us[before] for key, before in zip(keys, ["sdk", *keys[:-1]], strict=True)}
            info["layer_us_per_event"] = steps
            rows.append(
                Row(
                    SECTION,
                    f"{label}: {sdk_name} + tap vs bare",
                    us["tap"],
                    "µs/event",
                    us["sdk"],
                    f"bare {sdk_name}",
                    target=TARGETS[fmt],
                    note=f"adds {added:+.2f} µs/event; per round {min(rounds):.2f}-{max(rounds):.2f}x",
                    extra=info,
                )
            )
            rows.append(
                Row(
                    SECTION,
                    f"{label}: least a parsing tap adds (relay, split, JSON scan)",
                    us["parse"],
                    "µs/event",
                    us["sdk"],
                    f"bare {sdk_name}",
                    note=f"{us['parse'] - us['sdk']:+.2f} µs/event; split lines, scan each data line's JSON",
                    extra=info,
                )
            )
            for key, name, adds in LAYERS:
                rows.append(
                    Row(
                        SECTION,
                        f"{label}: layer {name}",
                        us[key],
                        "µs/event",
                        us["sdk"],
                        f"bare {sdk_name}",
                        note=f"{steps[key]:+.2f} µs/event: {adds}",
                        extra=info,
                    )
                )
            in_sdk = us["tap"] - us["wrapper"]
            rows.append(
                Row(
                    SECTION,
                    f"{label}: the run's pipeline alone (no SDK, no IO)",
                    us["alone"],
                    "µs/event",
                    us["sdk"],
                    f"bare {sdk_name}",
                    note=f"decoder, adapter, machine, record by themselves; layers 4-6 added {in_sdk:+.2f}",
                    extra=info,
                )
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tap",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="a shorter stream (300 text deltas)")
    args = parser.parse_args(argv)
    sizes = {"text": 300, "reasoning": 30} if args.quick else None
    print_table(SECTION, measure(args.repeat, sizes=sizes))


if __name__ == "__main__":
    main()
