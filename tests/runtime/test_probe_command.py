"""`streamfsm probe` against the fault server: one JSON record on stdout, exit codes as documented, every
registered format streaming and not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import streamfsm
import streamfsm.wire
from streamfsm.cli import main as cli_main
from streamfsm.testing import (
    End,
    FaultServerThread,
    Fin,
    Headers,
    Scenario,
    ScenarioRouter,
    Send,
    catalog,
    scenario_url,
    text_stream,
    whole_answer,
)
from tests.support.runs import validate_record


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


# -- every registered format, streaming and not ------------------------------------------------------------

_STREAMS = {fmt: f"{fmt}/text-with-usage-and-reasoning" for fmt in ("openai-chat", "openai-responses")}
_STREAMS |= {fmt: f"{fmt}/text-with-usage-and-reasoning" for fmt in ("anthropic", "gemini", "ollama")}
_STREAMS |= {fmt: f"{fmt}/clean-end" for fmt in ("anthropic-bedrock", "bedrock-converse")}
_GEMINI_WHOLE = Scenario(
    "gemini/probe-whole-answer",
    (Headers(headers=(("content-type", "application/json"),)), Send(whole_answer("gemini", "Hello")), End()),
    format="gemini",
)


@pytest.fixture(scope="module")
def catalog_server() -> Iterator[str]:
    scenarios = {s.name: s for s in catalog()}
    wanted = [*_STREAMS.values(), *(f"{fmt}/whole/clean-end" for fmt in streamfsm.wire.FORMATS)]
    router = ScenarioRouter([scenarios[name] for name in wanted if name in scenarios] + [_GEMINI_WHOLE])
    with FaultServerThread(router) as server:
        yield server.base_url


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("fmt", list(streamfsm.wire.FORMATS))
def test_probe_plays_every_registered_format_streaming_and_not(
    fmt: str, stream: bool, catalog_server: str, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")  # Bedrock requests are signed (SigV4)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-EXAMPLE-SECRET")
    name = (
        _STREAMS[fmt]
        if stream
        else "gemini/probe-whole-answer"
        if fmt == "gemini"
        else f"{fmt}/whole/clean-end"
    )
    argv = ["probe", "--provider", fmt, "--base-url", scenario_url(catalog_server, name), "--model", "m1"]
    code = cli_main([*argv, "--json"] + ([] if stream else ["--no-stream"]))
    out = capsys.readouterr()
    assert code == 0, out.err
    record = validate_record(streamfsm.RunRecord.from_json(out.out))
    assert record["provider"] == fmt
    assert record["outcome"]["summary_key"] == "completed.finished"
    assert record["request"]["streaming"] is stream
    assert "EXAMPLE-SECRET" not in out.out + out.err
