"""Reading records back: single records, JSON-lines logs, session exports; damage is reported, never fatal."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path
from typing import Any

import pytest

import streamfsm
import streamfsm.runtime.records._logs as logs
import streamfsm.runtime.records._record as record_module
from streamfsm.runtime import AuditLog, LogProblem, RunRecord, log_files, read_records
from streamfsm.runtime.records._logs import LogReadWarning, ProblemKind
from tests.support.logs import (
    SCENARIOS,
    assert_valid,
    completed,
    idle_timeout,
    mid_generation_disconnect,
    rate_limited,
    tool_input_cut,
    user_abort,
)


def _read(source: Any, **kw: Any) -> tuple[list[RunRecord], list[LogProblem]]:
    problems: list[LogProblem] = []
    records = list(read_records(source, on_problem=problems.append, **kw))
    for record in records:
        assert_valid(record)
    return records, problems


def _jsonl(records: list[RunRecord]) -> bytes:
    return b"".join((r.to_json() + "\n").encode("utf-8") for r in records)


@pytest.fixture
def records() -> list[RunRecord]:
    return [scenario() for scenario in SCENARIOS]


def test_every_recorded_scenario_matches_the_schema(records: list[RunRecord]) -> None:
    for record in records:
        assert_valid(record)


# -- formats -----------------------------------------------------------------------------------------------


def test_a_json_lines_log(tmp_path: Path, records: list[RunRecord]) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(_jsonl(records))
    got, problems = _read(path)
    assert got == records
    assert problems == []


def test_a_record_read_from_a_log_is_adopted_not_copied_and_stays_read_only(
    tmp_path: Path, records: list[RunRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(_jsonl(records))
    copies = 0
    real_plain = record_module._plain

    def counted(value: Any) -> Any:
        nonlocal copies
        copies += 1
        return real_plain(value)

    monkeypatch.setattr(record_module, "_plain", counted)
    first = list(read_records(path))
    second = list(read_records(path))
    single = RunRecord.from_json(records[1].to_json())
    assert copies == 0
    # Adopted data is the reader's own: two reads share nothing, and no reader can change a record.
    assert first == second == records
    with pytest.raises(TypeError):
        first[1]["outcome"]["class"] = "completed"  # type: ignore[index]
    exported = first[1].to_dict()
    exported["outcome"]["class"] = "completed"
    assert first[1]["outcome"]["class"] == second[1]["outcome"]["class"] == "mid_generation"
    assert single["outcome"]["class"] == "mid_generation"


@pytest.mark.parametrize("indent", [None, 2])
def test_a_single_record_file(tmp_path: Path, indent: int | None) -> None:
    record = mid_generation_disconnect()
    path = tmp_path / "run.json"
    path.write_text(record.to_json(indent=indent), encoding="utf-8")  # no trailing newline
    assert _read(path) == ([record], [])


def test_a_session_export_embedding_records_anywhere(tmp_path: Path) -> None:
    first, second, third = completed(), tool_input_cut(), rate_limited()
    newer = first.to_dict() | {"schema": "streamfsm.run/2"}
    export = {
        "schema": "acme.session/3",  # someone else's schema: searched, not taken for a record
        "session": {"id": "s1", "title": "refactor"},
        "messages": [
            {"role": "user", "parts": [{"type": "text", "text": "hello"}]},
            {"role": "assistant", "streamfsm": {"run": first.to_dict(), "later": [newer]}},
            {"role": "assistant", "runs": [[second.to_dict()]]},
        ],
        "trace": {"run": third.to_dict()},
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, indent=2), encoding="utf-8")
    got, problems = _read(path)
    assert [r.run_id for r in got] == [first.run_id, second.run_id, third.run_id]
    assert [(p.kind, p.line) for p in problems] == [(ProblemKind.UNKNOWN_SCHEMA, None)]
    assert "streamfsm.run/2" in problems[0].message


def test_a_json_lines_session_export(tmp_path: Path) -> None:
    record = user_abort()
    lines = [{"type": "message", "text": "hi"}, {"type": "run", "record": record.to_dict()}, [1, 2, 3]]
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert _read(path) == ([record], [])


def test_a_deeply_nested_export_does_not_hit_the_recursion_limit(tmp_path: Path) -> None:
    record = idle_timeout()
    depth = 420  # 840 nested containers: json can parse it; a recursive walk from a test would not
    path = tmp_path / "deep.json"
    path.write_text('{"child": [' * depth + record.to_json() + "]}" * depth, encoding="utf-8")
    assert _read(path) == ([record], [])


def test_nesting_too_deep_for_json_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "deeper.json"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    got, problems = _read(path)
    assert got == []
    assert [p.kind for p in problems] == [ProblemKind.CORRUPT_LINE]


def test_open_files_bytes_and_text(records: list[RunRecord]) -> None:
    assert _read(io.BytesIO(_jsonl(records))) == (records, [])
    assert _read(io.StringIO(_jsonl(records).decode("utf-8"))) == (records, [])
    wrapped = io.TextIOWrapper(io.BufferedReader(io.BytesIO(_jsonl(records))), encoding="utf-8")
    assert _read(wrapped) == (records, [])


def test_blank_lines_and_crlf_are_tolerated(tmp_path: Path, records: list[RunRecord]) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n\n" + _jsonl(records).replace(b"\n", b"\r\n\n"))
    assert _read(path) == (records, [])


def test_an_empty_file_has_no_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert _read(path) == ([], [])
    path.write_bytes(b"\n \n")
    assert _read(path) == ([], [])


def test_a_missing_file_raises() -> None:
    with pytest.raises(FileNotFoundError):
        list(read_records("/nonexistent/streamfsm/log.jsonl"))


# -- damage ------------------------------------------------------------------------------------------------


def test_a_torn_last_line_is_warned_about_once_and_nothing_else_is_lost(
    tmp_path: Path, records: list[RunRecord]
) -> None:
    path = tmp_path / "audit.jsonl"
    torn = mid_generation_disconnect().to_json().encode("utf-8")[:321]
    path.write_bytes(_jsonl(records) + torn)
    with pytest.warns(LogReadWarning) as caught:
        got = list(read_records(path))
    assert got == records
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"audit.jsonl:{len(records) + 1}:" in message
    assert "incomplete (321 bytes" in message


def test_a_corrupt_middle_line_is_reported_and_skipped(tmp_path: Path, records: list[RunRecord]) -> None:
    lines = _jsonl(records).split(b"\n")
    lines.insert(3, b'{"schema": "streamfsm.run/1", "ids": {"run_id": "x"')  # torn, then appended after
    lines.insert(5, b"\xff\xfe not utf-8 \x00")
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b"\n".join(lines))
    got, problems = _read(path)
    assert got == records
    assert [(p.kind, p.line) for p in problems] == [
        (ProblemKind.CORRUPT_LINE, 4),
        (ProblemKind.CORRUPT_LINE, 6),
    ]
    with pytest.warns(LogReadWarning) as caught:
        assert list(read_records(path)) == records
    assert [str(w.message).rsplit("/", 1)[-1] for w in caught] == [
        "audit.jsonl:4: line is not valid JSON, skipped",
        "audit.jsonl:6: line is not valid JSON, skipped",
    ]


def test_a_corrupt_first_line_does_not_hide_the_rest(tmp_path: Path, records: list[RunRecord]) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"schema": "streamfsm.run/1", "ids"\n' + _jsonl(records))
    got, problems = _read(path)
    assert got == records
    assert [(p.kind, p.line) for p in problems] == [(ProblemKind.CORRUPT_LINE, 1)]


def test_only_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(completed().to_json().encode("utf-8")[:50])
    got, problems = _read(path)
    assert got == []
    assert [(p.kind, p.line) for p in problems] == [(ProblemKind.TORN_LAST_LINE, 1)]


def test_records_of_an_unknown_schema_are_skipped_with_a_report(tmp_path: Path) -> None:
    known = completed()
    future = known.to_dict() | {"schema": "streamfsm.run/9"}
    path = tmp_path / "audit.jsonl"
    path.write_text(json.dumps(future) + "\n" + known.to_json() + "\n", encoding="utf-8")
    got, problems = _read(path)
    assert got == [known]
    assert [(p.kind, p.line) for p in problems] == [(ProblemKind.UNKNOWN_SCHEMA, 1)]
    assert str(problems[0]).startswith(f"{path}:1: record of schema 'streamfsm.run/9' skipped")


def test_a_record_missing_required_fields_is_skipped_with_a_report(tmp_path: Path) -> None:
    broken = completed().to_dict()
    del broken["outcome"]
    good = rate_limited()
    path = tmp_path / "audit.jsonl"
    path.write_text(json.dumps(broken) + "\n" + good.to_json() + "\n", encoding="utf-8")
    got, problems = _read(path)
    assert got == [good]
    assert [(p.kind, p.line, p.message) for p in problems] == [
        (ProblemKind.INVALID_RECORD, 1, "record without outcome.class skipped")
    ]


def test_an_over_long_line_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, big = completed(), mid_generation_disconnect()
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", len(small.to_json()) + 10)
    path = tmp_path / "audit.jsonl"
    path.write_bytes(_jsonl([small, big, small]))
    got, problems = _read(path)
    assert got == [small, small]
    assert [(p.kind, p.line) for p in problems] == [(ProblemKind.LINE_TOO_LONG, 2)]


# -- rotated siblings --------------------------------------------------------------------------------------


def test_rotated_siblings_are_read_oldest_first_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    batches = [[completed(), user_abort()], [rate_limited()], [idle_timeout(), completed()]]
    path.with_name("audit.jsonl.2").write_bytes(_jsonl(batches[0]))
    path.with_name("audit.jsonl.1").write_bytes(_jsonl(batches[1]))
    path.write_bytes(_jsonl(batches[2]))
    for decoy in ("audit.jsonl.lock", "audit.jsonl.bak", "audit.jsonl.01", "other.jsonl.3"):
        (tmp_path / decoy).write_text("not a log\n", encoding="utf-8")
    assert [p.name for p in log_files(path)] == ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]
    assert _read(path, rotated=True) == ([r for batch in batches for r in batch], [])
    assert _read(path) == (batches[2], [])


def test_what_the_audit_log_writes_the_reader_reads(tmp_path: Path, records: list[RunRecord]) -> None:
    sink = AuditLog(tmp_path / "audit.jsonl", max_bytes=3000, backups=50)
    for record in records:
        sink(record)
    assert len(log_files(sink.path)) > 1
    assert _read(sink.path, rotated=True) == (records, [])


# -- import hygiene ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["runtime/records/_logs.py", "runtime/records/_sinks.py", "cli/_logs.py"])
def test_log_modules_do_not_import_the_http_stack(module: str) -> None:
    # diagnose/report read files; they must not need httpx or anyio of their own
    tree = ast.parse((Path(streamfsm.__file__).parent / module).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & {"httpx", "httpcore", "anyio", "trio"}
