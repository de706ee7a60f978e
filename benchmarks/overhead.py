"""Section 1: per-stream CPU overhead over an in-memory transport, every contender on the same bytes.

    python -m benchmarks.overhead [--repeat N] [--quick]

Payloads (``benchmarks._payloads``): an OpenAI chat stream and an Anthropic stream, each 200 reasoning deltas,
2,000 text deltas of one to three words, one tool call in 40 argument fragments, usage and the terminal
event; cut into reads one event at a time (``live``) and in random 64 B - 16 KiB reads (``bulk``).

Contenders, each a whole request and iteration to the end, on the same bytes through the same kind of
transport (``benchmarks._transport``, one event-loop checkpoint per read):

* ``httpx floor``: ``client.stream()``, the response's own byte stream (as ``open_stream`` reads an
  unencoded body), split lines, ``json.loads`` of each data line: the floor the issue names. Nothing is
  validated or interpreted. (Not the least possible: ``open_stream`` parses with json's scanner alone.)
* ``open_stream``: SSE decoding, the wire adapter, the machine, watchdogs (each read in a plain cancel scope
  that the loop's watchdog cancels), the recorder and the sealed run record, with a shared
  ``httpx.AsyncClient``.
* ``openai SDK`` / ``anthropic SDK``: ``await client...create(stream=True)`` and ``async for`` over it, the
  SDK on an ``httpx2.AsyncClient`` with the same transport (``http_client=``), ``max_retries=0``.
* ``wrap(SDK)``: ``async with streamfsm.wrap(client...create(stream=True))`` (``benchmarks.sdk``'s sides): the
  SDK sends the request, the run reads the body itself.
* ``MessageStream`` / ``wrap(MessageStream)`` (anthropic): ``client.messages.stream()`` iterated bare, and
  wrapped, where the run iterates the SDK's items (the snapshot stays the caller's): ``wrap()``'s item path.

CPU time (``time.process_time``) per stream, median over repeats, contenders interleaved round-robin so a
change in the machine's load hits all of them; reported per SSE event of the payload (the same denominator
for every contender). Ratios are to the floor, to the SDK, and wrap() to the bare SDK.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from ._payloads import BODIES, CHUNKINGS, Payload, make
from ._report import Row, print_table

SECTION = "1. per-stream CPU overhead (in-memory transport)"
BASE_URL = "http://bench.local"

Contender = Callable[[], Awaitable[Any]]


def _floor(client: Any, fmt: str) -> Contender:
    url = f"{BASE_URL}/v1/chat/completions" if fmt == "openai-chat" else f"{BASE_URL}/v1/messages"
    body = BODIES[fmt]
    loads = json.loads

    async def run() -> int:
        count = 0
        async with client.stream("POST", url, json=body) as response:
            buffer = b""
            # The body's own stream, as open_stream reads an unencoded body (aiter_bytes: two layers more).
            async for chunk in response.stream:
                lines = (buffer + chunk).split(b"\n") if buffer else chunk.split(b"\n")
                buffer = lines.pop()
                for line in lines:
                    if line.startswith(b"data:"):
                        data = line[5:]
                        if data.strip() != b"[DONE]":
                            loads(data)
                            count += 1
        return count

    return run


def _ours(client: Any, fmt: str) -> Contender:
    from streamfsm.runtime import open_stream

    body = BODIES[fmt]
    base = f"{BASE_URL}/v1"

    async def run() -> int:
        count = 0
        async with open_stream(fmt, base_url=base, json=body, client=client) as stream:
            async for _ in stream:
                count += 1
        assert stream.finished, stream.record
        return count

    return run


def _sdk_call(
    fmt: str, chunks: list[bytes], *, helper: bool = False, http_client: Any = None
) -> Callable[[], Any]:
    """The SDK call that opens one stream; ``helper``: anthropic's ``messages.stream()`` manager instead.
    ``http_client``: the SDK's ``httpx2.AsyncClient`` (default: on a ``MemoryTransport2`` of ``chunks``)."""
    import httpx2

    from ._transport import MemoryTransport2

    if http_client is None:
        http_client = httpx2.AsyncClient(transport=MemoryTransport2(chunks))
    if fmt == "anthropic":
        import anthropic

        aclient = anthropic.AsyncAnthropic(
            api_key="sk-ant-bench", base_url=BASE_URL, http_client=http_client, max_retries=0
        )
        messages: Any = BODIES[fmt]["messages"]
        if helper:
            return lambda: aclient.messages.stream(model="claude-bench", max_tokens=4096, messages=messages)
        return lambda: aclient.messages.create(
            model="claude-bench", max_tokens=4096, messages=messages, stream=True
        )
    import openai

    client = openai.AsyncOpenAI(
        api_key="sk-bench", base_url=f"{BASE_URL}/v1", http_client=http_client, max_retries=0
    )
    chat: Any = BODIES[fmt]["messages"]
    return lambda: client.chat.completions.create(model="gpt-4o-mini", messages=chat, stream=True)


def _sdk(call: Callable[[], Any]) -> Contender:
    async def run() -> int:
        count = 0
        stream = await call()
        async for _ in stream:
            count += 1
        return count

    return run


def _sdk_helper(manager: Callable[[], Any]) -> Contender:
    async def run() -> int:
        count = 0
        async with manager() as stream:
            async for _ in stream:
                count += 1
        return count

    return run


def _wrapped(call: Callable[[], Any]) -> Contender | None:
    try:
        from .sdk import wrapped_async
    except ImportError:
        return None

    async def run() -> int:
        return (await wrapped_async(call))[2]

    return run


async def _median_cpu(contenders: dict[str, Contender], repeat: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():  # warm-up: imports, first-request setup, caches
        await fn()
    for _ in range(repeat):
        for name, fn in contenders.items():
            gc.collect()
            start = time.process_time()
            await fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def _contenders(payload: Payload, chunking: str, backend: str) -> dict[str, Contender]:
    import httpx

    from ._transport import MemoryTransport

    chunks = payload.chunks(chunking)  # type: ignore[arg-type]
    client = httpx.AsyncClient(transport=MemoryTransport(chunks))
    out: dict[str, Contender] = {"floor": _floor(client, payload.fmt), "ours": _ours(client, payload.fmt)}
    if backend == "asyncio":
        call = _sdk_call(payload.fmt, chunks)
        out["sdk"] = _sdk(call)
        wrapped = _wrapped(call)
        if wrapped is not None:
            out["wrap"] = wrapped
        if payload.fmt == "anthropic":
            # A MessageStream keeps its snapshot for the caller, so wrap() reads its items: the item path.
            manager = _sdk_call(payload.fmt, chunks, helper=True)
            wrapped_items = _wrapped(manager)
            if wrapped_items is not None:
                out["sdk_items"], out["wrap_items"] = _sdk_helper(manager), wrapped_items
    return out


async def _scope_cost(repeat: int) -> dict[str, float]:
    """CPU per read of a checkpoint: bare, in the plain cancel scope each read of a run waits in (the loop's
    watchdog cancels it), and in a scope with a deadline (a loop timer armed and disarmed per read)."""
    from streamfsm.runtime.drivers._watchdog import plain_scope_class

    n = 20_000
    checkpoint = anyio.lowlevel.checkpoint
    plain_scope = plain_scope_class()

    async def bare() -> None:
        for _ in range(n):
            await checkpoint()

    async def plain() -> None:
        for _ in range(n):
            with plain_scope():
                await checkpoint()

    async def deadline() -> None:
        for _ in range(n):
            with anyio.CancelScope(deadline=anyio.current_time() + 600):
                await checkpoint()

    result = await _median_cpu({"bare": bare, "plain": plain, "deadline": deadline}, repeat)
    return {k: v / n for k, v in result.items()}


def measure(
    repeat: int, formats: tuple[str, ...] = ("openai-chat", "anthropic"), sizes: dict[str, int] | None = None
) -> list[Row]:
    """``sizes``: ``make()``'s keyword arguments (the quick run uses a shorter stream)."""
    warnings.simplefilter("ignore")
    rows: list[Row] = []
    for fmt in formats:
        payload = make(fmt, **(sizes or {}))
        events = len(payload.frames)
        sdk_name = "openai SDK" if fmt == "openai-chat" else "anthropic SDK"
        for chunking in CHUNKINGS:
            chunks = len(payload.chunks(chunking))  # type: ignore[arg-type]
            label = f"{fmt} {chunking}"
            info = {"format": fmt, "chunking": chunking, "events": events, "reads": chunks}
            for backend in ("asyncio", "trio"):

                async def main(
                    payload: Payload = payload, chunking: str = chunking, backend: str = backend
                ) -> dict[str, float]:
                    return await _median_cpu(_contenders(payload, chunking, backend), repeat)

                cpu = anyio.run(main, backend=backend)
                us = {k: v / events * 1e6 for k, v in cpu.items()}
                tag = "" if backend == "asyncio" else " [trio]"
                extra = dict(info, backend=backend, cpu_us_per_event=us)
                rows.append(
                    Row(
                        SECTION,
                        f"{label}{tag}: open_stream vs httpx floor",
                        us["ours"],
                        "µs/event",
                        us["floor"],
                        "floor",
                        target=2.0,
                        extra=extra,
                    )
                )
                if "sdk" in us:
                    target = 0.5 if fmt == "openai-chat" else None
                    rows.append(
                        Row(
                            SECTION,
                            f"{label}: open_stream vs {sdk_name}",
                            us["ours"],
                            "µs/event",
                            us["sdk"],
                            sdk_name,
                            target=target,
                            note="" if target else "informational (target is vs openai)",
                            extra=extra,
                        )
                    )
                    rows.append(
                        Row(
                            SECTION,
                            f"{label}: {sdk_name} vs httpx floor",
                            us["sdk"],
                            "µs/event",
                            us["floor"],
                            "floor",
                            note="informational",
                            extra=extra,
                        )
                    )
                if "wrap" in us:
                    rows.append(
                        Row(
                            SECTION,
                            f"{label}: wrap({sdk_name}) vs bare",
                            us["wrap"],
                            "µs/event",
                            us["sdk"],
                            f"bare {sdk_name}",
                            target=1.10,
                            note="the run reads the body itself",
                            extra=extra,
                        )
                    )
                if "wrap_items" in us:
                    rows.append(
                        Row(
                            SECTION,
                            f"{label}: wrap(MessageStream) vs bare",
                            us["wrap_items"],
                            "µs/event",
                            us["sdk_items"],
                            "bare MessageStream",
                            target=1.10,
                            note="item path: each item waits in its own watched scope (README)",
                            extra=extra,
                        )
                    )
    for backend in ("asyncio", "trio"):
        rows += scope_rows(backend, anyio.run(_scope_cost, repeat, backend=backend))
    return rows


def scope_rows(backend: str, scope: dict[str, float]) -> list[Row]:
    """What a cancel scope adds to a read: a difference of two noisy timings (CPU s per read), which on a
    loaded machine can come out at or below zero; that is said as within noise, never as a negative cost."""
    rows = []
    bare_us = scope["bare"] * 1e6
    for kind, note in (
        ("plain", "what each read's watchdog scope costs; paid once per read, not per event"),
        ("deadline", "a deadline per read (a loop timer per read), as before the loop's watchdog"),
    ):
        scope_us = scope[kind] * 1e6
        cost = scope_us - bare_us
        if cost <= 0:
            note = f"within noise: no dearer than a bare checkpoint in this run ({cost:.2f} µs)"
        rows.append(
            Row(
                SECTION,
                f"cancel scope ({kind}) per read [{backend}]",
                max(cost, 0.0),
                "µs/read",
                bare_us,
                "bare checkpoint",
                note=note
                if cost > 0
                else f"within noise: no dearer than a bare checkpoint here ({cost:.2f} µs)",
                extra={"backend": backend, "scope_us": scope_us, "bare_us": bare_us},
            )
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.overhead", description=__doc__)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args(argv)
    print_table(SECTION, measure(args.repeat))


if __name__ == "__main__":
    main()
