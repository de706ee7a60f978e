"""SSE decoding: our ``SSEDecoder`` vs ``httpx-sse``, and the per-event cost of each wire adapter.

    python -m benchmarks.sse [--events N] [--repeat N] [--seed N]

Payload: N realistic OpenAI chat chunks (text deltas of one to three words, ids, model, fingerprint), the
usage chunk and ``[DONE]``, split into random network-sized chunks (64 B to 16 KiB, seeded). Sides:

* ``ours``: ``SSEDecoder.feed`` on each byte chunk, then ``close()``.
* ``httpx-sse``: ``EventSource(response).iter_sse()`` over an ``httpx.Response`` streaming the same chunks,
  which is how it is used (bytes → httpx's text decoder → its line decoder → its event decoder).
* ``httpx-sse decoders``: its line and event decoders alone, fed pre-decoded text (a lower bound for it).

Adapters: each format's stream from ``streamfsm.testing`` (mostly text deltas), decoded once up front; the
timing is ``adapter.feed`` over the SSE events, per event, beside the cost of ``json.loads`` alone on the
same data (the floor). Medians over repeats; numbers are for this machine only, compare ratios.
"""

from __future__ import annotations

import argparse
import codecs
import json
import platform
import random
import statistics
import sys
import timeit
from collections.abc import Callable

import httpx
from httpx_sse import EventSource
from httpx_sse._decoders import SSEDecoder as HttpxSSEEventDecoder
from httpx_sse._decoders import SSELineDecoder

from streamfsm.testing import build
from streamfsm.wire import FORMAT_NAMES, adapter_for
from streamfsm.wire._sse import Frame, SSEDecoder

WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "tokens", "arrive")


def chat_payload(events: int, rng: random.Random) -> bytes:
    base = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_560af6e559",
    }
    out = []
    for _ in range(events):
        text = " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        choice = {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}
        out.append(f"data: {json.dumps({**base, 'choices': [choice]}, separators=(',', ':'))}\n\n")
    usage = {"prompt_tokens": 25, "completion_tokens": events, "total_tokens": events + 25}
    out.append(f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n")
    return "".join(out).encode()


def split(payload: bytes, rng: random.Random, low: int = 64, high: int = 16384) -> list[bytes]:
    chunks, i = [], 0
    while i < len(payload):
        n = rng.randint(low, high)
        chunks.append(payload[i : i + n])
        i += n
    return chunks


def run_ours(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    decoder.close()
    return count


def run_httpx_sse(chunks: list[bytes]) -> int:
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))
    return sum(1 for _ in EventSource(response).iter_sse())


def run_httpx_sse_decoders(texts: list[str]) -> int:
    lines, events = SSELineDecoder(), HttpxSSEEventDecoder()
    count = 0
    for text in texts:
        for line in lines.decode(text):
            if events.decode(line) is not None:
                count += 1
    for line in lines.flush():
        if events.decode(line) is not None:
            count += 1
    return count


def median_s(fn: Callable[[], object], repeat: int) -> float:
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat))


def adapter_events(fmt: str, deltas: int, rng: random.Random) -> list[Frame]:
    texts = [" " + rng.choice(WORDS) for _ in range(deltas)]
    parts = [("reasoning", t) for t in texts[: deltas // 10]] + [("text", t) for t in texts]
    parts.append(("tool", "get_weather", json.dumps({"city": "Paris", "days": list(range(40))})))
    decoder = SSEDecoder()
    out: list[Frame] = []
    for frame in build(fmt, parts):  # type: ignore[arg-type]
        out += decoder.feed(frame)
    return out


def run_adapter(fmt: str, events: list[Frame]) -> int:
    feed = adapter_for(fmt).feed
    count = 0
    for event in events:
        count += len(feed(event))
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    payload = chat_payload(args.events, rng)
    chunks = split(payload, rng)
    decoder = codecs.getincrementaldecoder("utf-8")()
    texts = [decoder.decode(c) for c in chunks]
    expected = args.events + 2
    counts = {run_ours(chunks), run_httpx_sse(chunks), run_httpx_sse_decoders(texts)}
    if counts != {expected}:
        raise SystemExit(f"decoders disagree on the event count: {counts}, expected {expected}")

    print(f"python {platform.python_version()} on {platform.machine()} ({sys.platform})")
    print(f"payload: {expected} events, {len(payload)} bytes, {len(chunks)} chunks of 64 B..16 KiB")
    ours = median_s(lambda: run_ours(chunks), args.repeat)
    theirs = median_s(lambda: run_httpx_sse(chunks), args.repeat)
    theirs_bare = median_s(lambda: run_httpx_sse_decoders(texts), args.repeat)
    for name, seconds in (("ours", ours), ("httpx-sse", theirs), ("httpx-sse decoders", theirs_bare)):
        rate = expected / seconds
        print(f"  {name:<20} {rate / 1e3:9.0f} k events/s  {seconds / expected * 1e6:6.2f} µs/event")
    print(f"  ratio httpx-sse / ours: {theirs / ours:.2f}x   (decoders only: {theirs_bare / ours:.2f}x)")

    print("adapters (adapter.feed per SSE event, mostly text deltas):")
    for fmt in FORMAT_NAMES:
        events = adapter_events(fmt, 5_000, rng)
        seconds = median_s(lambda fmt=fmt, events=events: run_adapter(fmt, events), args.repeat)  # type: ignore[misc]
        datas = [e.data for e in events if e.data.startswith("{")]
        parse = median_s(lambda datas=datas: [json.loads(d) for d in datas], args.repeat)  # type: ignore[misc]
        per, loads = seconds / len(events) * 1e6, parse / len(events) * 1e6
        print(f"  {fmt:<18} {per:6.2f} µs/event, of which json.loads {loads:.2f}  ({len(events)} events)")


if __name__ == "__main__":
    main()
