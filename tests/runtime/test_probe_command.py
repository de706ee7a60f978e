"""`streamfsm probe` against the fault server: one JSON record on stdout, exit codes as documented."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from runsupport import validate_record

import streamfsm
from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Fin, Headers, Send
from streamfsm.testing._server import FaultServerThread


def probe(base_url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "streamfsm",
        "probe",
        "--provider",
        "openai-chat",
        "--base-url",
        base_url,
    ]
    return subprocess.run(
        [*command, "--model", "gpt-4o-mini", *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_probe_json_prints_one_valid_record_and_exits_0() -> None:
    frames = text_stream("openai-chat", ["Hello", "!"])
    with FaultServerThread((Headers(), *(Send(f) for f in frames), End())) as server:
        done = probe(
            server.base_url, "--json", "--api-key-env", "PROBE_KEY", env={"PROBE_KEY": "sk-probe-SECRET1"}
        )
        sent = server.requests[0]
    assert done.returncode == 0, done.stderr
    record = validate_record(streamfsm.RunRecord.from_json(done.stdout))
    assert record["outcome"]["class"] == "completed"
    assert json.loads(done.stdout) == record  # exactly one JSON document
    assert sent.header("authorization") != "Bearer sk-probe-SECRET1"  # the server's log is redacted too
    assert "SECRET1" not in done.stdout + done.stderr


def test_probe_exits_1_on_a_diagnosed_failure_and_prints_plain_words() -> None:
    with FaultServerThread((Headers(), Fin())) as server:
        done = probe(server.base_url)
    assert done.returncode == 1
    assert "The stream broke before any output" in done.stdout
    assert "early_stream" in done.stdout


@pytest.mark.parametrize(
    "extra",
    [
        ("--api-key-env", "STREAMFSM_SURELY_UNSET_VAR"),
        ("--timeout-idle", "-1"),
        ("--tools", "/nonexistent/tools.json"),
    ],
)
def test_probe_bad_usage_exits_2(extra: tuple[str, ...]) -> None:
    done = probe("http://127.0.0.1:9/v1", *extra)
    assert done.returncode == 2, done.stdout + done.stderr


def test_probe_shows_an_absent_timing_as_a_dash_and_escapes_what_the_provider_sent() -> None:
    # Issue 16: a refused connection has no time to headers ("-", not "None s"); a finish reason carrying
    # a terminal escape sequence reaches neither the record nor the screen as one.
    hostile = text_stream("openai-chat", ["Hi"], finish="stop\x1b[2J\x1b]0;pwned\x07")
    with FaultServerThread((Headers(), *(Send(f) for f in hostile[:-1]), Fin())) as server:
        done = probe(server.base_url)
    assert done.returncode == 1
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "\\x1b[2J" in done.stdout  # shown, escaped
    refused = probe("http://127.0.0.1:9")
    assert refused.returncode == 1
    assert "None s" not in refused.stdout
    assert any(line.split()[:3] == ["to", "headers", "-"] for line in refused.stdout.splitlines())


def test_help_summary_is_plain_text() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0
    assert "``" not in done.stdout and ":class:" not in done.stdout
