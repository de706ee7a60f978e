"""``streamfsm harness``, through a parser built here (the main CLI wires the same ``add_commands``)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

import streamfsm.testing
from streamfsm import FailureClass
from streamfsm.cli import _harness as _cli_harness
from streamfsm.testing import find
from tests.support.cli import harness


def test_prints_a_table_and_a_summary_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert harness("--format", "gemini", "--scenario", "*/http-*", "--scenario", "*/text-then-fin") == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["format", "scenario", "state", "edge", "class", "verdict", "action", "title"]
    assert any(line.split()[:2] == ["gemini", "text-then-fin"] and "mid_generation" in line for line in lines)
    assert "The provider is rate limiting requests" in out
    assert lines[-1].startswith("14 scenario runs in ") and lines[-1].endswith(", all matched")
    assert err == ""  # no progress indicator when stderr is not a terminal


def test_json_dash_writes_records_to_stdout_and_the_table_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        harness(
            "--scenario", "anthropic/tool-args-cut", "--scenario", "openai-chat/user-abort", "--json", "-"
        )
        == 0
    )
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["ids"]["context"]["scenario"] for r in records) == [
        "anthropic/tool-args-cut",
        "openai-chat/user-abort",
    ]
    assert all(r["schema"] == "streamfsm.run/1" for r in records)
    assert "tool_input_interrupted" in err and "all matched" in err


def test_json_path_writes_one_record_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.jsonl"
    assert (
        harness(
            "--format",
            "openai-responses",
            "--scenario",
            "*/error-*",
            "--scenario",
            "*/response-failed-*",
            "--json",
            str(path),
        )
        == 0
    )
    lines = path.read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(line)["outcome"]["class"] == "provider_error" for line in lines)
    assert "6 scenario runs" in capsys.readouterr().out


def test_a_mismatch_is_listed_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = dataclasses.replace(find("openai-chat/text-then-fin"), expected_class=FailureClass.EARLY_STREAM)
    monkeypatch.setattr(streamfsm.testing, "catalog", lambda formats=None: [wrong, find("gemini/http-500")])
    assert harness() == 1
    out = capsys.readouterr().out
    assert "✗ text-then-fin" in out
    assert "1 did not match:" in out
    assert "openai-chat/text-then-fin (runtime): class: expected early_stream, got mid_generation" in out


def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert harness("--scenario", "openai-chat/no-such-fault") == 2
    assert "no scenario matches 'openai-chat/no-such-fault'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        harness("--format", "cohere")


def test_sdk_paths_run_through_wrap_or_are_skipped_with_a_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = streamfsm.testing.sdk_available

    def no_anthropic(sdk: str) -> str | None:
        return (
            "the anthropic SDK is not installed (pip install anthropic)" if sdk == "anthropic" else real(sdk)
        )

    monkeypatch.setattr(streamfsm.testing, "sdk_available", no_anthropic)
    missing = real("openai")
    assert missing is None, f"the dev extra installs the SDKs: {missing}"
    assert harness("--sdk", "--format", "openai-chat", "--scenario", "*/text-then-*") == 0
    out, err = capsys.readouterr()
    assert "skipping the anthropic SDK path: the anthropic SDK is not installed" in err
    assert out.splitlines()[0].split()[:3] == ["format", "scenario", "via"]
    assert any(line.split()[2] == "openai" for line in out.splitlines()[2:-1])


def test_the_progress_indicator_draws_only_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    outcome = dataclasses.replace(
        _fake_outcome(), name="openai-chat/text-then-fin", via="runtime", matched=False, mismatch="x"
    )
    screen, pipe = Terminal(), io.StringIO()
    for stream in (screen, pipe):
        progress = _cli_harness._Progress(stream)
        progress(1, 3, outcome)
        progress.clear()
    assert "[1/3, 1 mismatched] openai-chat/text-then-fin (runtime)" in screen.getvalue()
    assert pipe.getvalue() == ""


def test_titles_are_cut_to_the_width_and_kept_whole_in_a_pipe() -> None:
    outcome = dataclasses.replace(_fake_outcome(), title="A title much longer than the room left for it")
    narrow = _cli_harness.table([outcome], 70).splitlines()[-1]
    assert narrow.endswith("…") and len(narrow) <= 70
    assert _cli_harness.table([outcome], None).splitlines()[-1].endswith("room left for it")


def _fake_outcome() -> streamfsm.testing.Outcome:
    return streamfsm.testing.Outcome(
        name="gemini/x",
        format="gemini",
        via="runtime",
        state="failed/none",
        edge=None,
        failure_class=None,
        verdict=None,
        action=None,
        phase=None,
        cause=None,
        title="t",
        matched=True,
        mismatch=None,
        record=None,
        seconds=0.0,
    )


def test_without_the_bedrock_extra_its_scenarios_are_skipped_with_the_extra_named() -> None:
    # The README's first command on an install without botocore: the rest still plays, and says what is
    # missing, instead of failing every Bedrock run.
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['botocore'] = None; from streamfsm.cli import main;"
        " sys.exit(main(['harness', '--scenario', '*/clean-end', '--scenario', 'openai-chat/text-then-fin']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "skipping the" in done.stderr and "anthropic-bedrock scenarios" in done.stderr
    assert "pip install 'streamfsm[bedrock]'" in done.stderr
    assert done.stdout.splitlines()[-1].endswith(", all matched")
    assert "text-then-fin" in done.stdout and "anthropic-bedrock" not in done.stdout
