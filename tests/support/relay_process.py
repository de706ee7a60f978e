"""A relay process: ``streamfsm relay`` (the command line, uvicorn) on 127.0.0.1, its stderr in a file."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_S = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RelayProcess:
    def __init__(self, process: subprocess.Popen[bytes], port: int, stderr: Path) -> None:
        self.process = process
        self.port = port
        self.stderr = stderr

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stderr_text(self) -> str:
        return self.stderr.read_text(errors="replace")


@contextmanager
def relay_process(
    upstream: str, tmp_path: Path, *args: str, max_fds: int | None = None
) -> Iterator[RelayProcess]:
    """The relay CLI in front of ``upstream`` (more ``args``; ``max_fds``: its descriptor limit), stopped with
    SIGTERM (then killed) on leaving, unless the test killed it already."""
    port = free_port()
    command = [sys.executable, "-m", "streamfsm", "relay", "--upstream", upstream]
    command += ["--listen", f"127.0.0.1:{port}", *args]

    def limit() -> None:
        if max_fds is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_fds, max_fds))

    stderr = tmp_path / f"relay-{port}.stderr"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=sink, preexec_fn=limit, env=dict(os.environ)
        )
    try:
        deadline = time.monotonic() + START_S
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the relay did not start: {stderr.read_text(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield RelayProcess(process, port, stderr)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
