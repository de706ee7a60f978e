"""The relay under test: the real uvicorn server on 127.0.0.1 in a thread, in front of a fault server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from streamfsm.relay import Relay, RelayConfig

uvicorn = pytest.importorskip("uvicorn", reason="the relay tests need uvicorn (the relay extra)")

START_S = 10.0


class RelayThread:
    """``Relay`` served by uvicorn on its own thread and event loop (no signal handlers)."""

    def __init__(self, relay: Relay, *, host: str = "127.0.0.1", grace: int = 2) -> None:
        self.relay = relay
        config = uvicorn.Config(
            relay,
            host=host,
            port=0,
            log_level="warning",
            server_header=False,
            date_header=False,
            lifespan="on",
            timeout_graceful_shutdown=grace,
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, name="relay", daemon=True)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RelayThread:
        self._thread.start()
        deadline = time.monotonic() + START_S
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the relay did not start")
            time.sleep(0.01)
        sock: socket.socket = self.server.servers[0].sockets[0]
        self.port = sock.getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(START_S)
        assert not self._thread.is_alive(), "the relay did not stop"


@contextmanager
def relay_to(upstream: str, **options: Any) -> Iterator[RelayThread]:
    with RelayThread(Relay(RelayConfig(upstream=upstream, **options))) as served:
        yield served


def run_lines(path: Any) -> list[dict[str, Any]]:
    """The run records among the JSON lines of ``path`` (the relay's begin and end lines left out)."""
    import json
    from pathlib import Path

    file = Path(path)
    text = file.read_text() if file.exists() else ""
    # Whole lines only: a line the relay is still writing has no newline yet.
    items = [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]
    return [item for item in items if str(item.get("schema", "")).startswith("streamfsm.run/")]


def wait_lines(path: Any, count: int, *, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The run records of ``path`` once it holds ``count`` (bounded wait; more than ``count`` fails)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(run_lines(path)) < count:
        time.sleep(0.02)
    time.sleep(0.1)  # nothing more may arrive
    records = run_lines(path)
    assert len(records) == count, f"{path}: {len(records)} records, expected {count}"
    return records


def read_answer(sock: socket.socket, within: float) -> bytes:
    """What the relay answers on ``sock`` until it closes (bounded)."""
    sock.settimeout(within)
    got = b""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            part = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not part:
            break
        got += part
    return got
