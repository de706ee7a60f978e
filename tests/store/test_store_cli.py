"""The commands over a store: ``report --store`` says what ``report LOG`` says about the same records,
``diagnose --request-id`` finds a run by the id the client saw (from a log or a store), and ``streamfsm
store`` rebuilds and prunes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from streamfsm.cli import main
from streamfsm.runtime import AuditLog, ErrorLog
from tests.support.cli import run_cli
from tests.support.store import T0, varied


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path, list[Any]]:
    records = varied(200, seed=11)
    audit, errors = AuditLog(tmp_path / "audit.jsonl"), ErrorLog(tmp_path / "errors.jsonl")
    for record in records:
        audit(record)
        errors(record)
    return tmp_path / "audit.jsonl", tmp_path / "errors.jsonl", records


@pytest.fixture
def indexed(store_url: str, logs: tuple[Path, Path, list[Any]], capsys: pytest.CaptureFixture[str]) -> str:
    audit, errors, records = logs
    code, out, _ = run_cli(
        capsys, "store", "rebuild", "--from", str(audit), str(errors), "--store", store_url
    )
    assert code == 0
    assert f"read {len(records) + sum(r.failure_class != 'completed' for r in records)} records" in out
    assert f"{len(records)} runs in" in out
    return store_url


@pytest.mark.parametrize("by", ["signature", "class", "route", "account"])
@pytest.mark.parametrize("since", [None, (T0 + timedelta(hours=2)).isoformat()])
def test_report_from_the_store_matches_report_from_the_log(
    capsys: pytest.CaptureFixture[str],
    indexed: str,
    logs: tuple[Path, Path, list[Any]],
    by: str,
    since: str | None,
) -> None:
    window = ["--since", since] if since else []
    code, out, _ = run_cli(capsys, "report", str(logs[0]), "--json", "--by", by, *window)
    assert code == 0
    from_log = json.loads(out)
    code, out, _ = run_cli(capsys, "report", "--store", indexed, "--json", "--by", by, *window)
    assert code == 0
    from_store = json.loads(out)
    for group in from_store["groups"]:
        assert group.pop("runs") >= group["count"]
        assert 0 < group.pop("failure_rate") <= 1
    for name in ("by", "since", "runs", "failures", "groups"):
        assert from_store[name] == from_log[name], name
    assert from_store["groups"]
    # the table too
    code, table, _ = run_cli(capsys, "report", "--store", indexed, "--by", by, "--wide", *window)
    code, logged, _ = run_cli(capsys, "report", str(logs[0]), "--by", by, "--wide", *window)
    assert table.splitlines()[1:] == logged.splitlines()[1:]


def test_diagnose_by_request_id_from_a_log_and_from_the_store(
    capsys: pytest.CaptureFixture[str], indexed: str, logs: tuple[Path, Path, list[Any]]
) -> None:
    record = logs[2][42]
    code, from_log, _ = run_cli(capsys, "diagnose", str(logs[0]), "--request-id", "req-00042")
    assert code == 0
    assert from_log.startswith(f"run {record.run_id}")
    assert "request id           req-00042" in from_log
    assert f"provider request id  {record['ids']['provider_request_id']}" in from_log
    code, from_store, _ = run_cli(capsys, "diagnose", "--store", indexed, "--request-id", "req-00042")
    assert (code, from_store) == (0, from_log)
    provider_id = record["ids"]["provider_request_id"]
    argv = ("diagnose", "--store", indexed, "--provider-request-id", provider_id, "--json")
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    assert record.run_id in {r["ids"]["run_id"] for r in json.loads(out)["records"]}
    code, _, err = run_cli(capsys, "diagnose", "--store", indexed, "--request-id", "req-nobody")
    assert code == 1
    assert "no record with request id 'req-nobody'" in err


def test_diagnose_from_the_store_by_run_id_prefix_and_the_last_runs(
    capsys: pytest.CaptureFixture[str], indexed: str, logs: tuple[Path, Path, list[Any]]
) -> None:
    records = logs[2]
    code, out, _ = run_cli(capsys, "diagnose", "--store", indexed, "--run", "run-00077")
    assert code == 0
    assert out.startswith("run run-00077")
    code, _, err = run_cli(capsys, "diagnose", "--store", indexed, "--run", "run-0007")
    assert code == 2
    assert "ambiguous" in err
    code, out, err = run_cli(capsys, "diagnose", "--store", indexed, "--last", "2", "--json")
    assert code == 0
    assert [r["ids"]["run_id"] for r in json.loads(out)["records"]] == [r.run_id for r in records[-2:]]
    assert "showing the last 2 of 200 records" in err


def test_report_html_from_the_store(capsys: pytest.CaptureFixture[str], indexed: str, tmp_path: Path) -> None:
    out = tmp_path / "errors.html"
    code, _, _ = run_cli(capsys, "report", "--store", indexed, "--html", str(out))
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert "run-00" in page
    assert "req-00" in page


def test_prune_applies_a_retention(capsys: pytest.CaptureFixture[str], indexed: str) -> None:
    cut = (T0 + timedelta(hours=3)).isoformat()
    code, out, _ = run_cli(capsys, "store", "prune", "--store", indexed, "--older-than", cut)
    assert code == 0
    code, report, _ = run_cli(capsys, "report", "--store", indexed, "--json")
    kept = json.loads(report)["runs"]
    assert f"{kept} runs kept" in out
    assert 0 < kept < 200


@pytest.mark.parametrize(
    "argv",
    [
        ["report"],
        ["diagnose"],
        ["report", "log.jsonl", "--store", "sqlite:///x.db"],
        ["diagnose", "log.jsonl", "--run", "a", "--request-id", "b"],
        ["store", "rebuild", "--store", "sqlite:///x.db"],
        ["store", "prune", "--store", "sqlite:///x.db", "--older-than", "soon"],
    ],
)
def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_an_unreachable_store_is_exit_1_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://relay:hunter2@127.0.0.1:1/runs?connect_timeout=2"
    code, _, err = run_cli(capsys, "report", "--store", url)
    assert code == 1
    assert "cannot query postgresql://relay@127.0.0.1:1/runs" in err
    assert "hunter2" not in err
