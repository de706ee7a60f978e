"""What ``streamfsm.wrap()`` adds to iterating an SDK stream: bare SDK iteration vs the wrapped run, per item.

    python -m benchmarks.sdk [--items N] [--repeat N] [--group N] [--backend asyncio|trio] [--sync]

Setup: a ``FaultServerThread`` on 127.0.0.1 serves one realistic stream per request (``streamfsm.testing``:
N text deltas of one short word, then the format's usage and terminal events), ``--group`` SSE frames per
HTTP chunk (64 by default, about what a fast stream delivers per read; ``--group 1`` sends one frame per
chunk). The real SDK clients (``openai``, ``anthropic``, ``max_retries=0``) request it. Sides, alternated:

* ``bare``: ``stream = await client...create(stream=True)``, then ``async for item in stream``.
* ``wrapped``: ``async with streamfsm.wrap(client...create(stream=True)) as run: async for event in run``
  (the SDK sends the request on entry, under the connect watchdog; the run reads the body itself, and every
  event is decoded, driven through the machine, counted and timed; the record is built at the end).

Each timing covers the request and the whole iteration; per item is that over the SDK's item count. Two
clocks: the client thread's CPU time (``time.thread_time``: it leaves out the server thread and time spent
descheduled, so it holds on a busy machine) and wall time. Medians over ``--repeat`` runs, sides alternated.
Numbers are for this machine only: compare the ratios.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

import streamfsm
from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Headers, Send
from streamfsm.testing._server import FaultServerThread

FORMATS = ("openai-chat", "openai-responses", "anthropic")


def steps(fmt: str, items: int, group: int) -> tuple[Any, ...]:
    frames = text_stream(fmt, [" tok"] * items)  # type: ignore[arg-type]
    chunks = [b"".join(frames[i : i + group]) for i in range(0, len(frames), group)]
    return (Headers(), *(Send(c) for c in chunks), End())


def async_call(fmt: str, base_url: str) -> tuple[Any, Callable[[], Any]]:
    """(client, call): the async client (to close) and the call that opens one stream."""
    if fmt == "anthropic":
        import anthropic

        aclient = anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-ant-bench", max_retries=0)
        messages: Any = [{"role": "user", "content": "hi"}]
        return aclient, lambda: aclient.messages.create(
            model="m", max_tokens=8, messages=messages, stream=True
        )
    import openai

    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="sk-bench", max_retries=0)
    if fmt == "openai-chat":
        chat: Any = [{"role": "user", "content": "hi"}]
        return client, lambda: client.chat.completions.create(model="m", messages=chat, stream=True)
    return client, lambda: client.responses.create(model="m", input="hi", stream=True)


def sync_call(fmt: str, base_url: str) -> Callable[[], Any]:
    if fmt == "anthropic":
        import anthropic

        aclient = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-bench", max_retries=0)
        messages: Any = [{"role": "user", "content": "hi"}]
        return lambda: aclient.messages.create(model="m", max_tokens=8, messages=messages, stream=True)
    import openai

    client = openai.OpenAI(base_url=base_url + "/v1", api_key="sk-bench", max_retries=0)
    if fmt == "openai-chat":
        chat: Any = [{"role": "user", "content": "hi"}]
        return lambda: client.chat.completions.create(model="m", messages=chat, stream=True)
    return lambda: client.responses.create(model="m", input="hi", stream=True)


Timing = tuple[float, float, int]  # thread CPU seconds, wall seconds, SDK items


def _clocks() -> tuple[float, float]:
    return time.thread_time(), time.perf_counter()


def _since(start: tuple[float, float], count: int) -> Timing:
    cpu, wall = _clocks()
    return cpu - start[0], wall - start[1], count


async def bare_async(call: Callable[[], Any]) -> Timing:
    start = _clocks()
    stream = await call()
    count = 0
    async for _ in stream:
        count += 1
    return _since(start, count)


async def wrapped_async(call: Callable[[], Any]) -> Timing:
    start = _clocks()
    count = 0
    async with streamfsm.wrap(call()) as run:
        async for _ in run:
            count += 1
    timing = _since(start, count)
    assert run.finished, run.record
    return timing


def bare_sync(call: Callable[[], Any]) -> Timing:
    start = _clocks()
    count = sum(1 for _ in call())
    return _since(start, count)


def wrapped_sync(call: Callable[[], Any]) -> Timing:
    start = _clocks()
    count = 0
    with streamfsm.wrap(call()) as run:
        for _ in run:
            count += 1
    timing = _since(start, count)
    assert run.finished, run.record
    return timing


def measure(fmt: str, args: argparse.Namespace) -> tuple[list[Timing], list[Timing]]:
    """(bare, wrapped) timings, ``--repeat`` of each, alternated."""
    bare: list[Timing] = []
    wrapped: list[Timing] = []
    with FaultServerThread(steps(fmt, args.items, args.group)) as server:
        if args.sync:
            call = sync_call(fmt, server.base_url)
            for _ in range(args.repeat):
                bare.append(bare_sync(call))
                wrapped.append(wrapped_sync(call))
        else:

            async def main() -> None:
                client, call = async_call(fmt, server.base_url)
                try:
                    for _ in range(args.repeat):
                        bare.append(await bare_async(call))
                        wrapped.append(await wrapped_async(call))
                finally:
                    await client.close()

            anyio.run(main, backend=args.backend)
    return bare, wrapped


def per_item_us(timings: list[Timing], clock: int) -> float:
    """Median µs per item on one clock (0: thread CPU, 1: wall)."""
    return statistics.median(t[clock] / t[2] for t in timings) * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=5000, help="text deltas per stream (default 5000)")
    parser.add_argument("--repeat", type=int, default=7, help="runs per side (default 7)")
    parser.add_argument("--group", type=int, default=64, help="SSE frames per HTTP chunk (default 64)")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--sync", action="store_true", help="the sync clients and sync runs instead")
    parser.add_argument("--formats", nargs="*", choices=FORMATS, default=list(FORMATS))
    args = parser.parse_args(argv)

    import anthropic
    import openai

    mode = "sync" if args.sync else f"async ({args.backend})"
    print(
        f"python {platform.python_version()}, openai {openai.__version__}, anthropic {anthropic.__version__}"
    )
    print(f"{mode}; {args.items} deltas per stream, {args.group} frames per chunk, median of {args.repeat}")
    print("µs per SDK item; cpu = client thread CPU time, wall = elapsed")
    print(
        f"{'format':<18}{'items':>6}{'bare cpu':>10}{'wrapped cpu':>13}{'added':>8}"
        f"{'bare wall':>11}{'wrapped wall':>14}{'added':>8}"
    )
    for fmt in args.formats:
        bare, wrapped = measure(fmt, args)
        row = f"{fmt:<18}{bare[0][2]:>6}"
        for clock, (width_bare, width_wrapped) in enumerate(((10, 13), (11, 14))):
            b, w = per_item_us(bare, clock), per_item_us(wrapped, clock)
            row += f"{b:>{width_bare}.2f}{w:>{width_wrapped}.2f}{(w / b - 1) * 100:>7.1f}%"
        print(row)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
