"""The relay's memory under concurrent large non-streaming answers.

    python -m benchmarks.relay_answers [--clients 20] [--mib 48]

A ``streamfsm relay`` process (the CLI, uvicorn, one worker) in front of a fault server whose every answer
is one ``--mib`` MiB chat completion (not a stream, sent in 12 pieces over about 2.4 s); ``--clients``
clients each ask for one at once, and read it whole. Measured: the relay process's resident set before
(``VmRSS``), its peak (``VmHWM``) and after (``VmRSS`` once every client is done), and what the clients
got (status codes and the size of what they read).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import httpx

from streamfsm.testing._script import End, Headers, Send, Sleep

from .relay_bodies import posts_at_once

PIECES = 12
PAUSE_S = 0.2


def answer(mib: int) -> bytes:
    head = b'{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":'
    head += b'{"role":"assistant","content":"'
    tail = b'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'
    return head + b"x" * (mib * 2**20 - len(head) - len(tail)) + tail


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--mib", type=int, default=48)
    args = parser.parse_args()
    whole = answer(args.mib)
    piece = len(whole) // PIECES + 1
    # Sent in pieces over about PIECES * PAUSE_S, so that every client's answer is in flight at once.
    steps: tuple[Any, ...] = (Headers(headers=(("content-type", "application/json"),)),)
    for start in range(0, len(whole), piece):
        steps += (Send(whole[start : start + piece]), Sleep(PAUSE_S))
    steps += (End(),)
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()

    def outcome(got: httpx.Response) -> str:
        return f"{got.status_code} {len(got.content) >> 20} MiB"

    measured = posts_at_once(steps, request, args.clients, [], outcome, settle_s=1.0)
    print(json.dumps({"clients": args.clients, "mib": args.mib, **measured.fields()}, indent=2))


if __name__ == "__main__":
    main()
