"""The relay's memory under concurrent large request bodies (issue 25 item 6).

    python -m benchmarks.relay_bodies [--clients 20] [--mib 30] [--relay-arg=--body-budget-bytes=...]

A ``streamfsm relay`` process (the CLI, uvicorn, one worker) in front of a fault server that reads each
request, then holds the response for ``HOLD_S`` before ending it; ``--clients`` clients each send one
``--mib`` MiB streaming chat request at once. Measured: the relay process's resident set before the bodies
(``VmRSS``) and its peak (``VmHWM``, ``/proc/<pid>/status``), and what the clients got (status codes, or the
exception's type).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from streamfsm.testing._script import End, Headers, Sleep
from streamfsm.testing._server import FaultServerThread

HOLD_S = 3.0
START_S = 20.0


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_relay(upstream: str, extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "streamfsm", "relay", "--upstream", upstream]
    command += ["--listen", f"127.0.0.1:{port}", *extra]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the relay did not start")


def body(mib: int) -> bytes:
    head = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"'
    tail = b'"}]}'
    return head + b"x" * (mib * 2**20 - len(head) - len(tail)) + tail


@dataclass
class Measured:
    """The relay process's resident set before the posts, at its peak and after them; what the clients got."""

    before_kib: int
    peak_kib: int
    after_kib: int
    outcomes: Counter[str]
    seconds: float
    stderr: bytes

    def fields(self) -> dict[str, Any]:
        return {
            "rss_before_mb": round(self.before_kib / 1024, 1),
            "rss_peak_mb": round(self.peak_kib / 1024, 1),
            "rss_after_mb": round(self.after_kib / 1024, 1),
            "outcomes": dict(self.outcomes),
        }


def posts_at_once(
    steps: tuple[Any, ...],
    content: bytes,
    clients: int,
    relay_args: list[str],
    outcome: Callable[[httpx.Response], str],
    settle_s: float = 0.0,
) -> Measured:
    """``clients`` posts of ``content`` at once through a relay process in front of a fault server playing
    ``steps``, each named by ``outcome`` (an exception by its type); memory measured after ``settle_s``."""
    with FaultServerThread(steps, max_body=64 << 20) as upstream:
        relay, base = start_relay(upstream.base_url, relay_args)
        try:
            time.sleep(0.5)
            before = status_kib(relay.pid, "VmRSS")
            outcomes: Counter[str] = Counter()
            lock = threading.Lock()

            def one() -> None:
                try:
                    with httpx.Client(timeout=120) as client:
                        named = outcome(client.post(f"{base}/v1/chat/completions", content=content))
                except httpx.HTTPError as exc:
                    named = type(exc).__name__
                with lock:
                    outcomes[named] += 1

            started = time.monotonic()
            threads = [threading.Thread(target=one) for _ in range(clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(300)
            elapsed = time.monotonic() - started
            time.sleep(settle_s)
            peak = status_kib(relay.pid, "VmHWM")
            after = status_kib(relay.pid, "VmRSS")
        finally:
            relay.send_signal(signal.SIGTERM)
            try:
                relay.wait(15)
            except subprocess.TimeoutExpired:
                relay.kill()
            stderr = relay.stderr.read() if relay.stderr else b""
    return Measured(before, peak, after, outcomes, elapsed, stderr)


def _status(answer: httpx.Response) -> str:
    named = str(answer.status_code)
    if answer.status_code == 503:
        named += f" retry-after={answer.headers.get('retry-after')}"
    return named


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--mib", type=int, default=30)
    parser.add_argument("--relay-arg", action="append", default=[])
    args = parser.parse_args()
    measured = posts_at_once(
        (Headers(), Sleep(HOLD_S), End()), body(args.mib), args.clients, args.relay_arg, _status
    )
    result: dict[str, Any] = {
        "clients": args.clients,
        "mib": args.mib,
        "relay_args": args.relay_arg,
        **measured.fields(),
        "seconds": round(measured.seconds, 1),
        "relay_stderr_bytes": len(measured.stderr),
    }
    print(json.dumps(result))
    if os.environ.get("SHOW_STDERR"):
        print(measured.stderr.decode(errors="replace")[-3000:], file=sys.stderr)


if __name__ == "__main__":
    main()
