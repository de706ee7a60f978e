"""The relay's cost per event, layer by layer, in one process: the bytes ``benchmarks.relay``'s provider sends
(200 OpenAI chat deltas in 20 chunks, then the finish, usage and ``[DONE]``), each layer added in turn.

    python -m benchmarks.relay_events [--streams 300] [--rounds 5]
    python -m benchmarks.relay_events --layer NAME --streams N   # one layer alone (for callgrind)

Layers, CPU per event (median of interleaved rounds), each a whole stream's chunks:

1. the minimal diagnosing relay's own work (``benchmarks.relay.minimal_app``): each chunk split into lines,
   every ``data:`` line's JSON parsed with ``json.loads``, the id, model and finish reason noted;
2. streamfsm's SSE framing alone (``SSEDecoder.feed``);
3. + the wire adapter (``openai-chat``, lean as the tap and the relay run it);
4. + the machine and the record (``RunCore.feed``: what a run does per chunk, without I/O).

Under ``valgrind --tool=callgrind`` a layer's instructions per event are repeatable where wall or CPU time
on a loaded machine is not: run ``--layer NAME`` at two stream counts and divide the difference by the
events between them (``--callgrind`` does that and prints the table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._report import Row, print_table

SECTION = "relay events: CPU per event in one process, layer by layer"
LAYERS = ("minimal", "sse", "adapter", "core")
NAMES = {
    "minimal": "minimal relay: lines split, json.loads, id/model/finish noted (floor)",
    "sse": "streamfsm SSE framing (SSEDecoder)",
    "adapter": "+ the wire adapter (openai-chat, lean)",
    "core": "+ the machine and the record (RunCore.feed)",
}


def chunks(deltas: int = 200, steps: int = 20) -> list[bytes]:
    """The provider's body for ``benchmarks.relay``, as the chunks it sends."""
    from streamfsm.testing._script import Send

    from ._provider import script

    return [step.data for step in script(deltas, steps, 50, "end") if isinstance(step, Send)]


def _events(body: list[bytes]) -> int:
    return sum(chunk.count(b"data: ") for chunk in body)


def stream_of(layer: str, body: list[bytes]) -> Callable[[], object]:
    """One whole stream through ``layer`` and everything under it."""
    if layer == "minimal":
        loads = json.loads

        def minimal() -> object:
            rest = b""
            seen: dict[str, Any] = {"id": None, "model": None, "finish_reason": None, "done": False}
            for chunk in body:
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        seen["done"] = True
                        continue
                    payload = loads(data)
                    if seen["id"] is None:
                        seen["id"], seen["model"] = payload.get("id"), payload.get("model")
                    choices = payload.get("choices")
                    if choices:
                        finish = choices[0].get("finish_reason")
                        if finish is not None:
                            seen["finish_reason"] = finish
            return json.dumps(seen)

        return minimal
    from streamfsm.wire import SSEDecoder, format_named

    if layer == "sse":

        def sse() -> object:
            decoder = SSEDecoder()
            for chunk in body:
                decoder.feed(chunk)
            return decoder.close()

        return sse
    if layer == "adapter":
        fmt = format_named("openai-chat")

        def adapter() -> object:
            decoder, wire = SSEDecoder(), fmt.adapter()
            wire.lean()
            feed = wire.feed
            for chunk in body:
                for frame in decoder.feed(chunk):
                    feed(frame)
            return wire.end()

        return adapter
    if layer == "core":
        from streamfsm.runtime import StreamConfig
        from streamfsm.runtime.core._run_core import RunCore

        config = StreamConfig(sinks=())
        fmt = format_named("openai-chat")
        request = {"model": "gpt-4o-mini", "stream": True}

        def core() -> object:
            wire = fmt.adapter()
            wire.lean()
            run = RunCore(
                provider=wire.name,
                model="gpt-4o-mini",
                body=request,
                url="http://127.0.0.1/v1/chat/completions",
                config=config,
                delta_keys=wire.delta_keys,
            )
            run.begin()
            run.headers(200, {"content-type": "text/event-stream"}, run.stream_wire(wire))
            for chunk in body:
                run.feed(chunk)
            run.end()
            return run

        return core
    raise ValueError(f"no layer {layer!r}")


def measure(streams: int = 300, rounds: int = 5) -> list[Row]:
    body = chunks()
    events = _events(body)
    runs = {layer: stream_of(layer, body) for layer in LAYERS}
    samples: dict[str, list[float]] = {layer: [] for layer in LAYERS}
    for run in runs.values():  # warm
        for _ in range(max(3, streams // 10)):
            run()
    for _ in range(rounds):  # interleaved: every layer sees the same window of the machine
        for layer, run in runs.items():
            start = time.process_time()
            for _ in range(streams):
                run()
            samples[layer].append((time.process_time() - start) / (streams * events) * 1e6)
    return _rows(samples, "µs", f"{rounds}x{streams} streams of {events} events")


def _rows(samples: dict[str, list[float]], unit: str, size: str) -> list[Row]:
    floor = statistics.median(samples["minimal"])
    rows, previous = [], 0.0
    for layer in LAYERS:
        values = samples[layer]
        median = statistics.median(values)
        added = f"; this layer adds {median - previous:,.2f} {unit}" if layer in ("adapter", "core") else ""
        rows.append(
            Row(
                SECTION,
                NAMES[layer],
                median,
                unit,
                None if layer == "minimal" else floor,
                "" if layer == "minimal" else "the minimal relay's work",
                note=f"min {min(values):,.2f} / max {max(values):,.2f}, {size}{added}",
            )
        )
        previous = median
    return rows


def _instructions(layer: str, streams: int) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-m",
                "benchmarks.relay_events",
                "--layer",
                layer,
                "--streams",
                str(streams),
            ],
            check=True,
            capture_output=True,
            cwd=Path(__file__).resolve().parents[1],
            env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"},
        )
        found = re.search(rb"^summary: (\d+)", out.read_bytes(), re.M) or re.search(
            rb"^totals: (\d+)", out.read_bytes(), re.M
        )
        assert found is not None, "callgrind wrote no totals"
        return int(found.group(1))


def callgrind(low: int = 1, high: int = 5) -> list[Row]:
    """Instructions per event, per layer: (the count at ``high`` streams less at ``low``) / the events."""
    events = _events(chunks()) * (high - low)
    samples = {layer: [(_instructions(layer, high) - _instructions(layer, low)) / events] for layer in LAYERS}
    return _rows(samples, "instr", f"callgrind, {high} less {low} streams")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.relay_events", description=__doc__)
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layer", choices=LAYERS, help="run one layer's streams once, nothing printed")
    parser.add_argument("--callgrind", action="store_true", help="instructions per event (valgrind)")
    args = parser.parse_args(argv)
    if args.layer:
        run = stream_of(args.layer, chunks())
        for _ in range(args.streams):
            run()
        return 0
    rows = callgrind() if args.callgrind else measure(args.streams, args.rounds)
    print_table(SECTION, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
