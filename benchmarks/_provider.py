"""The local fault provider for the loopback sections, in its own process.

    python -m benchmarks._provider      # prints the port, serves until stdin closes

Why a separate process: on a 2-core machine a server in the benchmark's own process would share the
clients' event loop (or their GIL, as a ``FaultServerThread``), so its work would be counted as theirs. In
its own process it gets the other core and the clients' CPU, lag and memory are their own.

It is ``streamfsm.testing.FaultServerThread`` with a router that reads the script from the path:

    /s/{deltas}/{steps}/{interval_ms}/{tail}/v1/chat/completions

``deltas`` OpenAI chat text deltas (then the finish, usage and ``[DONE]`` chunks), spread evenly over
``steps`` HTTP chunks sent ``interval_ms`` apart; ``tail`` is ``end`` (a complete response) or ``ka{ms}``
(no terminal event: after the deltas, an SSE comment every ``ms`` milliseconds, a stall kept alive, until
the client leaves). Scripts are built once per distinct path.
"""

from __future__ import annotations

import contextlib
import functools
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from streamfsm.testing import FaultServerThread, Request, text_stream
from streamfsm.testing._script import End, Headers, Keepalive, Send, Sleep, Stall

from ._payloads import _words

_ROOT: Final = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def serving(
    module: str, *args: str, what: str, stop_wait_s: float = 15.0, root: Path | None = None
) -> Iterator[tuple[int, int]]:
    """``python -m <module> <args>`` in a process of its own that prints its port and serves until its stdin
    closes: (the port, the pid) until the block ends. ``root``: the tree it runs from (default this one;
    another checkout's ``streamfsm`` and ``benchmarks`` are imported from there)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=root or _ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"{what} did not start")
        yield int(line), proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(stop_wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def provider() -> Iterator[str]:
    """Start the provider process; yields its base URL; stops it on exit."""
    with serving("benchmarks._provider", what="the provider process") as (port, _pid):
        yield f"http://127.0.0.1:{port}"


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft limit on open files towards ``wanted`` (up to the hard limit); the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def path(deltas: int, steps: int, interval_ms: int, tail: str = "end") -> str:
    return f"/s/{deltas}/{steps}/{interval_ms}/{tail}/v1"


@functools.lru_cache(maxsize=256)
def script(deltas: int, steps: int, interval_ms: int, tail: str) -> tuple[Any, ...]:
    import random

    rng = random.Random(deltas)
    frames = text_stream("openai-chat", [_words(rng) for _ in range(deltas)])
    head, body, rest = frames[:1], frames[1 : 1 + deltas], frames[1 + deltas :]
    steps = max(1, min(steps, deltas))
    per = -(-deltas // steps)
    groups = [b"".join(head + body[:per])] + [b"".join(body[i : i + per]) for i in range(per, deltas, per)]
    out: list[Any] = [Headers()]
    for i, group in enumerate(groups):
        if i:
            out.append(Sleep(interval_ms / 1000))
        out.append(Send(group))
    if tail.startswith("ka"):
        out += [Keepalive(int(tail[2:]) / 1000, 1_000_000), Stall()]
    else:
        out += [Send(b"".join(rest)), End()]
    return tuple(out)


def route(request: Request) -> tuple[Any, ...]:
    _, _prefix, deltas, steps, interval, tail, *_ = request.path.split("/")
    return script(int(deltas), int(steps), int(interval), tail)


def main() -> None:
    raise_fd_limit(1 << 16)
    with FaultServerThread(route, max_records=1) as server:
        print(server.port, flush=True)
        sys.stdin.read()  # until the parent closes our stdin


if __name__ == "__main__":
    main()
