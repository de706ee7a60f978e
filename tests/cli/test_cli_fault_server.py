"""``streamfsm fault-server``: the fault provider as a real server process, for clients in other processes. It
prints its URL and how to pick a scenario, serves one by header (httpx) and by path (the openai SDK over the
tap, whose diagnosis is the scenario's), answers a request naming none with a 404 that says how, and stops
cleanly on SIGTERM and on Ctrl-C (SIGINT). Every wait is bounded."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

import httpx
import openai
import pytest

import streamfsm
from streamfsm.cli import main
from streamfsm.cli._common import STARTUP_FAILED
from streamfsm.testing import SCENARIO_HEADER, Send, catalog, find, scenario_url, unused_port

START_S = 60.0  # the catalog is built at start: seconds on a loaded machine
STOP_S = 10.0
CUT = "openai-chat/text-then-fin"  # some text, then the peer closes mid-body


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    out: list[str]  # what it printed on stdout before the URL line, that line included
    err: queue.Queue[str] = field(default_factory=queue.Queue)

    def stop(self, signum: int) -> tuple[int, str]:
        """Send ``signum``; the exit status and everything it wrote on stderr."""
        self.process.send_signal(signum)
        code = self.process.wait(STOP_S)
        lines = []
        while not self.err.empty():
            lines.append(self.err.get_nowait())
        return code, "".join(lines)


def _pump(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


@contextmanager
def fault_server(*args: str) -> Iterator[Server]:
    port = unused_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamfsm", "fault-server", "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out: queue.Queue[str] = queue.Queue()
    err: queue.Queue[str] = queue.Queue()
    for stream, into in ((process.stdout, out), (process.stderr, err)):
        threading.Thread(target=_pump, args=(stream, into), daemon=True).start()
    try:
        printed = []
        while not any("scenarios at" in line for line in printed):
            try:
                printed.append(out.get(timeout=START_S))
            except queue.Empty:
                pytest.fail(f"no URL within {START_S} s; stderr: {list(err.queue)}")
        url = printed[-1].split(" at ")[-1].strip()
        for _ in range(5):  # the rest of the how-to, already on its way
            printed.append(out.get(timeout=STOP_S))
        assert url == f"http://127.0.0.1:{port}", printed
        yield Server(process, url, printed, err)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(STOP_S)


def _sent(name: str) -> bytes:
    return b"".join(step.data for step in find(name).script if isinstance(step, Send))


def test_it_serves_a_scenario_by_header_and_by_path_then_stops_on_sigterm() -> None:
    with fault_server() as server:
        how = "".join(server.out)
        assert f"{SCENARIO_HEADER}: NAME" in how and scenario_url(server.url, CUT) in how, how

        # by header, on the API's own path, with httpx: the scenario's bytes, then the cut
        received = b""
        with httpx.Client(timeout=STOP_S) as client, pytest.raises(httpx.RemoteProtocolError):
            path, headers = "/v1/chat/completions", {SCENARIO_HEADER: CUT}
            with client.stream("POST", server.url + path, json={}, headers=headers) as answer:
                assert answer.status_code == 200
                for chunk in answer.iter_bytes():
                    received += chunk
        assert received == _sent(CUT)

        # by path, with the real openai SDK over the tap: the tap's diagnosis is the scenario's
        expected = find(CUT)
        sdk = openai.OpenAI(
            base_url=scenario_url(server.url, CUT) + "/v1",
            api_key="sk-test",
            max_retries=0,
            timeout=STOP_S,
            http_client=streamfsm.http_client(),
        )
        text = ""
        # The httpx-based SDK generation (openai 2.x) lets the HTTP library's error out of the iteration.
        with pytest.raises((openai.APIConnectionError, httpx.RemoteProtocolError)) as raised:
            for chunk in sdk.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}], stream=True
            ):
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
        sdk.close()
        failure = streamfsm.failure_of(raised.value)
        assert failure is not None and expected.expected_class is not None
        assert failure.diagnosis.summary_key == f"{expected.expected_class.value}.{expected.expected_cause}"
        assert text

        # naming no scenario: a 404 that says how to name one
        nothing = httpx.post(server.url + "/v1/chat/completions", json={}, timeout=STOP_S)
        assert nothing.status_code == 404 and SCENARIO_HEADER in nothing.text

        code, logged = server.stop(signal.SIGTERM)
    assert code == 0, logged
    assert f"POST /v1/chat/completions -> {CUT}" in logged
    assert "SIGTERM, stopped" in logged and "Traceback" not in logged, logged


def test_ctrl_c_stops_it_cleanly_and_a_default_serves_requests_naming_none() -> None:
    with fault_server("--format", "anthropic", "--default", "anthropic/tool-call-completes") as server:
        assert "scenarios at" in server.out[0]
        answer = httpx.post(server.url + "/v1/messages", json={}, timeout=STOP_S)
        assert answer.status_code == 200 and b"event: message_start" in answer.content
        code, logged = server.stop(signal.SIGINT)
    assert code == 0, logged
    assert "anthropic/tool-call-completes (the default)" in logged
    assert "SIGINT, stopped" in logged and "Traceback" not in logged and "KeyboardInterrupt" not in logged


def test_a_port_in_use_exits_3() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "streamfsm", "fault-server", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=START_S,
            check=False,
        )
    assert done.returncode == STARTUP_FAILED, done.stderr
    assert "cannot listen on 127.0.0.1" in done.stderr and "Traceback" not in done.stderr


def test_list_names_every_scenario_a_server_can_play(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault-server", "--list"]) == 0
    listed = [line.split("  ")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [s.name for s in catalog() if not s.no_listener]
    assert "openai-chat/connection-refused" not in listed  # nobody may listen there: a closed port is that
    assert main(["fault-server", "--default", "no/such-scenario"]) == 2
