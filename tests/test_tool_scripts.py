"""The benchmark command and the planted-bug script: run with an interpreter that lacks what they need,
they say which one they need (instead of a traceback, or a misleading verdict); long sections show
progress."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [("scripts/planted_bug.py",), ("-m", "benchmarks", "--quick", "--only", "2")],
    ids=["planted_bug", "benchmarks"],
)
def test_a_bare_interpreter_is_told_to_use_the_venv(command: tuple[str, ...]) -> None:
    # -S: no site-packages, as a bare `python` outside the venv has none of the dependencies
    result = subprocess.run(
        [sys.executable, "-S", *command], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "run it with the project's venv: .venv/bin/python" in result.stderr
    assert "control (no bug planted)" not in result.stdout


def test_long_sections_show_progress(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import __main__ as bench

    monkeypatch.setattr(bench, "_HEARTBEAT_S", 0.05)
    heartbeat = bench._Heartbeat()
    try:
        heartbeat.section("section 9: a long one")
        deadline = time.monotonic() + 5
        while "still running" not in capsys.readouterr().err and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        heartbeat.stop()
    assert time.monotonic() < deadline
