"""``streamfsm diagnose`` and ``streamfsm report``: what people read, and the JSON machines read."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import graphviz
import pytest

from streamfsm.cli import main
from streamfsm.cli._logs import parse_since, run_diagram_dot, run_diagram_mermaid, run_path
from streamfsm.runtime import AuditLog, RunRecord
from tests.support.cli import run_cli
from tests.support.logs import (
    assert_valid,
    completed,
    mid_generation_disconnect,
    rate_limited,
    tool_input_cut,
    user_abort,
)

NOW = datetime.now(timezone.utc)
ROOT = Path(__file__).resolve().parents[2]


def _ago(**kw: float) -> datetime:
    return NOW - timedelta(**kw)


@pytest.fixture
def runs() -> dict[str, RunRecord]:
    """Nine runs of one afternoon, oldest first, keyed by a short name."""
    return {
        "limit1": rate_limited(provider="anthropic", model="claude-x", started_at=_ago(hours=5)),
        "cut1": mid_generation_disconnect(started_at=_ago(hours=3)),
        "cut2": mid_generation_disconnect(started_at=_ago(hours=2)),
        "limit2": rate_limited(provider="anthropic", model="claude-x", started_at=_ago(hours=1)),
        "ok1": completed(started_at=_ago(minutes=30)),
        "abort": user_abort(started_at=_ago(minutes=20)),
        "mini": mid_generation_disconnect(model="gpt-4o-mini", started_at=_ago(minutes=15)),
        "cut3": mid_generation_disconnect(started_at=_ago(minutes=10)),
        "ok2": completed(started_at=_ago(minutes=5)),
    }


@pytest.fixture
def log(tmp_path: Path, runs: dict[str, RunRecord]) -> Path:
    sink = AuditLog(tmp_path / "audit.jsonl")
    for record in runs.values():
        sink(record)
    return sink.path


# -- diagnose ----------------------------------------------------------------------------------------------


def test_diagnose_explains_one_run(
    capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]
) -> None:
    record = runs["cut3"]
    code, out, err = run_cli(capsys, "diagnose", str(log), "--run", record.run_id)
    assert code == 0
    assert err == ""
    for expected in (
        f"run {record.run_id}",
        "The stream broke partway through the answer",
        "The connection closed before the response was complete after part of the answer was shown.",
        "class                mid_generation (mid_generation.closed_mid_body)",
        "verdict              user_confirmed_retry, action continue_with_partial",
        "reason               part of the answer was already shown; a retry would show it again",
        "retry after          -",
        "provider             openai-chat",
        "model                gpt-4o",
        "phase                mid_generation",
        "edge                 disconnected (generating/visible -> failed/visible)",
        "transport            closed_mid_body, headers received, 0 bytes received",
        "exception chain      httpx.RemoteProtocolError <- httpcore.RemoteProtocolError",
        "http status          200",
        "request id           -",  # the relay's id of the client's request: none, no relay
        f"provider request id  req_{record.run_id[:8]}",
        "events               text_delta 3, headers_received 1",
        "evidence",
        "timeline (4 entries)",
    ):
        assert expected in out, expected
    timeline = out.split("timeline (4 entries)\n", 1)[1].splitlines()
    assert [row.split()[1:] for row in timeline[1:]] == [
        ["request_sent", "connecting/none"],
        ["headers_received", "streaming/none"],
        ["text_delta", "x3", "(to", timeline[3].split()[4], "generating/visible"],
        ["disconnected", "failed/visible"],
    ]


def test_diagnose_shows_the_last_run_by_default_and_says_so(
    capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]
) -> None:
    code, out, err = run_cli(capsys, "diagnose", str(log))
    assert code == 0
    assert out.startswith(f"run {runs['ok2'].run_id}")
    assert "The response finished" in out
    assert "finish reason        stop" in out
    assert "tokens               input 12, output 34" in out
    assert "showing the last 1 of 9 records" in err

    code, out, _ = run_cli(capsys, "diagnose", str(log), "--last", "3")
    assert code == 0
    assert [line.split()[1] for line in out.splitlines() if line.startswith("run ")] == [
        runs[name].run_id for name in ("mini", "cut3", "ok2")
    ]


def test_diagnose_accepts_a_unique_run_id_prefix(
    capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]
) -> None:
    record = runs["abort"]
    prefixes = {r.run_id[:10] for name, r in runs.items() if name != "abort"}
    assert record.run_id[:10] not in prefixes
    code, out, _ = run_cli(capsys, "diagnose", str(log), "--run", record.run_id[:10])
    assert code == 0
    assert "You stopped the response" in out
    assert "abort                user (stop button) at " in out


def test_diagnose_an_ambiguous_prefix_is_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.jsonl"
    sink = AuditLog(path)
    sink(completed(run_id="abc1" + "0" * 28))
    sink(completed(run_id="abc2" + "0" * 28))
    code, _, err = run_cli(capsys, "diagnose", str(path), "--run", "abc")
    assert code == 2
    assert "ambiguous" in err
    code, _, err = run_cli(capsys, "diagnose", str(path), "--run", "zzz")
    assert code == 1
    assert "no record with run id 'zzz'" in err


def test_diagnose_json_is_the_records(
    capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]
) -> None:
    record = runs["limit2"]
    code, out, _ = run_cli(capsys, "diagnose", str(log), "--run", record.run_id, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["total"] == 9
    assert data["problems"] == []
    [got] = data["records"]
    assert_valid(got)
    assert RunRecord.from_dict(got) == record
    assert "diagrams" not in data


def test_diagnose_reads_a_session_export_and_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    record = tool_input_cut()
    export = {"session": "s1", "messages": [{"role": "assistant", "run": record.to_dict()}]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, indent=2), encoding="utf-8")
    code, out, _ = run_cli(capsys, "diagnose", str(path))
    assert code == 0
    assert "The stream broke while the model was writing the call to `write_file`" in out

    stdin = io.TextIOWrapper(io.BytesIO(path.read_bytes()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run_cli(capsys, "diagnose", "-")
    assert code == 0
    assert f"run {record.run_id}" in out


def test_diagnose_warns_about_a_torn_line_and_goes_on(
    capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]
) -> None:
    with open(log, "ab") as f:
        f.write(completed().to_json().encode("utf-8")[:99])
    code, out, err = run_cli(capsys, "diagnose", str(log))
    assert code == 0
    assert out.startswith(f"run {runs['ok2'].run_id}")
    assert f"streamfsm: warning: {log}:10: last line is incomplete (99 bytes" in err

    code, out, _ = run_cli(capsys, "diagnose", str(log), "--json")
    assert json.loads(out)["problems"] == [
        {
            "source": str(log),
            "line": 10,
            "kind": "torn_last_line",
            "message": "last line is incomplete (99 bytes, no newline: a write was cut short), skipped",
        }
    ]


def test_diagnose_without_a_readable_record_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nothing.jsonl"
    path.write_text('{"hello": "world"}\nnot json\n', encoding="utf-8")
    code, out, err = run_cli(capsys, "diagnose", str(path))
    assert (code, out) == (1, "")
    assert "no readable run record" in err
    code, _, err = run_cli(capsys, "diagnose", str(tmp_path / "missing.jsonl"))
    assert code == 1
    assert "cannot read" in err


def test_diagnose_strips_terminal_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = completed().to_dict()
    data["model"] = "gpt\x1b[31m-evil\x07"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run_cli(capsys, "diagnose", str(path))
    assert code == 0
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "gpt\\x1b[31m-evil\\x07" in out


# -- the diagram -------------------------------------------------------------------------------------------


def test_run_path_follows_the_timeline(runs: dict[str, RunRecord]) -> None:
    assert run_path(runs["cut1"]) == ["idle", "connecting", "streaming", "generating", "failed"]
    assert run_path(runs["limit1"]) == ["idle", "connecting", "failed"]
    assert run_path(runs["ok1"]) == ["idle", "connecting", "streaming", "generating", "finished"]
    assert run_path(tool_input_cut()) == ["idle", "connecting", "streaming", "tool_input_open", "failed"]


def test_the_mermaid_diagram_highlights_the_path_and_the_failed_state(runs: dict[str, RunRecord]) -> None:
    record = runs["cut1"]
    mermaid = run_diagram_mermaid(record)
    assert "stateDiagram-v2" in mermaid
    assert f"title: run {record.run_id[:12]} mid_generation.closed_mid_body" in mermaid
    assert "  tool_input_open --> tool_call: tool_input_end | tool_call" in mermaid  # the whole machine
    assert "  class idle,connecting,streaming,failed visited" in mermaid
    assert "  class generating failedFrom" in mermaid
    assert (
        "  note left of generating\n    failed here: disconnected\n    commitment: visible\n  end note"
        in mermaid
    )
    assert "%% path: idle --> connecting --> streaming --> generating --> failed" in mermaid


def test_a_finished_run_has_no_failed_state(runs: dict[str, RunRecord]) -> None:
    mermaid = run_diagram_mermaid(runs["ok1"])
    assert "  class idle,connecting,streaming,generating,finished visited" in mermaid
    assert "failedFrom" not in mermaid


def test_the_dot_diagram_highlights_the_same(runs: dict[str, RunRecord]) -> None:
    dot = run_diagram_dot(runs["cut1"])
    assert 'generating [label="generating\\l" fillcolor="#fee2e2"' in dot
    assert 'xlabel="failed here: disconnected"' in dot
    assert 'streaming [label="streaming\\l" fillcolor="#dbeafe"' in dot
    assert 'connecting -> streaming [label="headers_received" color="#1d4ed8" penwidth=2]' in dot
    assert 'generating -> failed [label="any failure" color="#1d4ed8" penwidth=2]' in dot
    assert 'streaming -> finished [label="finish"]' in dot  # not taken, not highlighted
    assert 'tool_call [label="tool_call\\l"]' in dot


def test_diagnose_diagram_without_graphviz_dot_prints_mermaid_and_says_so(
    capsys: pytest.CaptureFixture[str],
    log: Path,
    runs: dict[str, RunRecord],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    record = runs["cut2"]
    code, out, err = run_cli(capsys, "diagnose", str(log), "--run", record.run_id, "--diagram")
    assert code == 0
    assert "The stream broke partway through the answer" in out
    assert "stateDiagram-v2" in out
    assert "class generating failedFrom" in out
    assert "SVG needs Graphviz's `dot` program on PATH" in err
    assert list(log.parent.glob("*.svg")) == []

    monkeypatch.setitem(sys.modules, "graphviz", None)  # the Python package missing
    code, out, err = run_cli(capsys, "diagnose", str(log), "--run", record.run_id, "--diagram", "--json")
    assert code == 0
    assert "SVG needs the graphviz Python package" in err
    [diagram] = json.loads(out)["diagrams"]
    assert diagram == {"run_id": record.run_id, "mermaid": run_diagram_mermaid(record), "svg": None}


def test_diagnose_diagram_writes_svg_when_graphviz_can(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    log: Path,
    runs: dict[str, RunRecord],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sources: list[str] = []

    def fake_pipe(self: graphviz.Source, format: str | None = None, **kw: Any) -> bytes:
        assert format == "svg"
        sources.append(self.source)
        return b"<svg>run</svg>"

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/dot")
    monkeypatch.setattr(graphviz.Source, "pipe", fake_pipe)
    record = runs["cut2"]
    out_path = tmp_path / "out" / "run.svg"
    out_path.parent.mkdir()
    code, _, err = run_cli(
        capsys, "diagnose", str(log), "--run", record.run_id, "--diagram", "--out", str(out_path)
    )
    assert code == 0
    assert out_path.read_bytes() == b"<svg>run</svg>"
    assert f"wrote {out_path}" in err
    assert sources == [run_diagram_dot(record)]

    code, _, err = run_cli(capsys, "diagnose", str(log), "--last", "2", "--diagram")
    assert code == 0
    written = sorted(p.name for p in log.parent.glob("*.svg"))
    assert written == sorted(f"audit.jsonl.{runs[n].run_id[:12]}.svg" for n in ("cut3", "ok2"))


# -- report ------------------------------------------------------------------------------------------------


def _table(out: str) -> list[list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("COUNT"))
    return [line.split("  ") for line in lines[start + 1 :] if line.strip()]


def test_report_groups_failures_by_signature(
    capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]
) -> None:
    code, out, err = run_cli(capsys, "report", str(log))
    assert code == 0
    assert err == ""
    assert out.startswith(f"7 failed of 9 runs in {log}: 4 signatures")
    header = next(line for line in out.splitlines() if line.lstrip().startswith("COUNT"))
    for column in (
        "FIRST SEEN (UTC)",
        "LAST SEEN (UTC)",
        "SUMMARY KEY",
        "PROVIDER",
        "MODEL",
        "TRANSPORT KIND",
    ):
        assert column in header
    rows = [[cell.strip() for cell in row if cell.strip()] for row in _table(out)]
    assert [(row[0], row[3], row[4], row[5]) for row in rows] == [
        ("3", "mid_generation.closed_mid_body", "openai-chat", "gpt-4o"),
        ("2", "provider_error.rate_limit", "anthropic", "claude-x"),
        ("1", "mid_generation.closed_mid_body", "openai-chat", "gpt-4o-mini"),
        ("1", "local_abort.user", "openai-chat", "gpt-4o"),
    ]
    first = rows[0]
    assert first[1] == runs["cut1"]["started_at"][:19].replace("T", " ") + "Z"
    assert first[2] == runs["cut3"]["started_at"][:19].replace("T", " ") + "Z"
    assert first[6] == "closed_mid_body"
    assert first[7] == ", ".join(runs[n].run_id[:12] for n in ("cut3", "cut2", "cut1"))
    assert first[8] == "The stream broke partway through the answer"
    assert rows[1][6] == "-"


def test_report_json(capsys: pytest.CaptureFixture[str], log: Path, runs: dict[str, RunRecord]) -> None:
    code, out, _ = run_cli(capsys, "report", str(log), "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["records"], data["runs"], data["failures"], data["by"], data["since"]) == (
        9,
        9,
        7,
        "signature",
        None,
    )
    top = data["groups"][0]
    assert top == {
        "key": {
            "summary_key": "mid_generation.closed_mid_body",
            "provider": "openai-chat",
            "model": "gpt-4o",
            "transport_kind": "closed_mid_body",
        },
        "count": 3,
        "first_seen": runs["cut1"]["started_at"],
        "last_seen": runs["cut3"]["started_at"],
        "sample_run_ids": [runs[n].run_id for n in ("cut3", "cut2", "cut1")],
        "title": "The stream broke partway through the answer",
    }
    assert [g["count"] for g in data["groups"]] == [3, 2, 1, 1]
    assert data["problems"] == []


def test_report_keeps_only_three_samples_the_most_recent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sink = AuditLog(tmp_path / "log.jsonl")
    made = [mid_generation_disconnect(started_at=_ago(minutes=60 - i)) for i in range(5)]
    for record in made:
        sink(record)
    code, out, _ = run_cli(capsys, "report", str(sink.path), "--json")
    assert code == 0
    [group] = json.loads(out)["groups"]
    assert group["count"] == 5
    assert group["sample_run_ids"] == [r.run_id for r in reversed(made[2:])]


@pytest.mark.parametrize(
    ("by", "expected"),
    [
        ("provider", [({"provider": "openai-chat"}, 5), ({"provider": "anthropic"}, 2)]),
        ("model", [({"model": "gpt-4o"}, 4), ({"model": "claude-x"}, 2), ({"model": "gpt-4o-mini"}, 1)]),
        (
            "class",
            [
                ({"class": "mid_generation"}, 4),
                ({"class": "provider_error"}, 2),
                ({"class": "local_abort"}, 1),
            ],
        ),
    ],
)
def test_report_by_other_keys(
    capsys: pytest.CaptureFixture[str], log: Path, by: str, expected: list[tuple[dict[str, str], int]]
) -> None:
    code, out, _ = run_cli(capsys, "report", str(log), "--by", by, "--json")
    assert code == 0
    assert [(g["key"], g["count"]) for g in json.loads(out)["groups"]] == expected
    code, out, _ = run_cli(capsys, "report", str(log), "--by", by)
    assert code == 0
    assert by.upper() in out.splitlines()[2]


@pytest.mark.parametrize(
    ("since", "failures", "groups"),
    [("90m", 4, [1, 1, 1, 1]), ("4h", 6, [3, 1, 1, 1]), ("1w", 7, [3, 2, 1, 1]), ("1s", 0, [])],
)
def test_report_since_a_relative_time(
    capsys: pytest.CaptureFixture[str], log: Path, since: str, failures: int, groups: list[int]
) -> None:
    code, out, _ = run_cli(capsys, "report", str(log), "--since", since, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["failures"] == failures
    assert [g["count"] for g in data["groups"]] == groups


def test_report_since_an_iso_time(capsys: pytest.CaptureFixture[str], log: Path) -> None:
    since = _ago(minutes=25).isoformat().replace("+00:00", "Z")
    code, out, _ = run_cli(capsys, "report", str(log), "--since", since)
    assert code == 0
    assert out.startswith(f"3 failed of 4 runs since {_ago(minutes=25).strftime('%Y-%m-%d %H:%M:%S')}Z")


def test_report_with_no_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sink = AuditLog(tmp_path / "log.jsonl")
    sink(completed())
    code, out, _ = run_cli(capsys, "report", str(sink.path))
    assert code == 0
    assert out == f"0 failed of 1 runs in {sink.path}: 0 signatures\n"


def test_report_reads_rotated_siblings_unless_told_not_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sink = AuditLog(tmp_path / "log.jsonl", max_bytes=5000, backups=10)
    for _ in range(6):
        sink(rate_limited())
    assert (tmp_path / "log.jsonl.1").exists()
    code, out, _ = run_cli(capsys, "report", str(sink.path), "--json")
    assert (code, json.loads(out)["failures"]) == (0, 6)
    code, out, _ = run_cli(capsys, "report", str(sink.path), "--json", "--no-rotated")
    assert code == 0
    assert 0 < json.loads(out)["failures"] < 6


def test_report_without_a_readable_record_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_bytes(completed().to_json().encode("utf-8")[:80])
    code, out, err = run_cli(capsys, "report", str(path))
    assert (code, out) == (1, "")
    assert "last line is incomplete" in err
    assert "no readable run record" in err


# -- usage -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["diagnose"],
        ["report"],
        ["report", "log.jsonl", "--by", "colour"],
        ["report", "log.jsonl", "--since", "yesterday"],
        ["report", "log.jsonl", "--since", "-2h"],
        ["diagnose", "log.jsonl", "--last", "0"],
        ["diagnose", "log.jsonl", "--last", "many"],
        ["diagnose", "log.jsonl", "--bogus"],
    ],
)
def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("30s", timedelta(seconds=30)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("1.5h", timedelta(minutes=90)),
        ("7d", timedelta(days=7)),
        ("1w", timedelta(weeks=1)),
    ],
)
def test_parse_since_relative(text: str, delta: timedelta) -> None:
    assert parse_since(text, now=NOW) == NOW - delta


def test_parse_since_absolute() -> None:
    assert parse_since("2025-01-31T12:00:00Z") == datetime(2025, 1, 31, 12, tzinfo=timezone.utc)
    assert parse_since("2025-01-31T12:00:00+02:00") == datetime(2025, 1, 31, 10, tzinfo=timezone.utc)
    local = parse_since("2025-01-31T12:00")
    assert local.tzinfo is not None
    assert local == datetime(2025, 1, 31, 12).astimezone()
    with pytest.raises(ValueError, match="not a time"):
        parse_since("last tuesday")


def test_the_commands_run_as_a_program(log: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "streamfsm", "report", str(log), "--by", "class"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "7 failed of 9 runs" in proc.stdout
