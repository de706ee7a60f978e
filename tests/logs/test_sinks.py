"""Sinks: the JSON-lines error and audit logs, delivery that never raises, one log line per run."""

from __future__ import annotations

import fcntl
import gc
import json
import logging
import multiprocessing
import os
import stat
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamfsm.runtime import (
    AuditLog,
    ErrorLog,
    JsonlSink,
    LogProblem,
    RunRecord,
    deliver,
    log_files,
    read_records,
    sink_failures,
)
from streamfsm.runtime.records._logs import ProblemKind
from streamfsm.runtime.records._sinks import log_run, run_log_level
from tests.support.logs import (
    SCENARIOS,
    SECRET,
    append_worker,
    assert_valid,
    completed,
    idle_timeout,
    mid_generation_disconnect,
    rate_limited,
    tool_input_cut,
    user_abort,
    with_ids,
)


def _lines(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    # Concurrent writers may leave a blank line (see _sinks' docstring); every reader skips it.
    return [json.loads(line) for line in raw.split(b"\n")[:-1] if line]


def _read_all(path: Path, *, rotated: bool = False) -> tuple[list[RunRecord], list[LogProblem]]:
    problems: list[LogProblem] = []
    records = list(read_records(path, rotated=rotated, on_problem=problems.append))
    return records, problems


# -- the logs ----------------------------------------------------------------------------------------------


def test_audit_log_keeps_every_run_and_error_log_only_failures(tmp_path: Path) -> None:
    audit, errors = AuditLog(tmp_path / "audit.jsonl"), ErrorLog(tmp_path / "errors.jsonl")
    records = [scenario() for scenario in SCENARIOS]
    for record in records:
        assert deliver([audit, errors], record) == 0
    audit_lines, error_lines = _lines(audit.path), _lines(errors.path)
    assert [line["ids"]["run_id"] for line in audit_lines] == [r.run_id for r in records]
    assert [line["ids"]["run_id"] for line in error_lines] == [
        r.run_id for r in records if r.failure_class != "completed"
    ]
    assert "completed" not in {line["outcome"]["class"] for line in error_lines}
    for line in audit_lines:
        assert_valid(line)
    assert stat.S_IMODE(audit.path.stat().st_mode) == 0o600


def test_nothing_sensitive_reaches_the_log_file(tmp_path: Path) -> None:
    # tests.support.logs plants SECRET in the prompt and in the endpoint's query string
    audit = AuditLog(tmp_path / "audit.jsonl")
    for scenario in SCENARIOS:
        audit(scenario())
    text = audit.path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert {line["endpoint"] for line in _lines(audit.path)} == {
        "https://api.example.com/v1/chat/completions"
    }


def test_a_line_is_exactly_the_records_json(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "log.jsonl")
    record = mid_generation_disconnect()
    sink(record)
    assert sink.path.read_bytes() == (record.to_json() + "\n").encode("utf-8")
    assert RunRecord.from_json(sink.path.read_bytes()) == record


def test_missing_parent_folders_are_created(tmp_path: Path) -> None:
    sink = AuditLog(tmp_path / "a" / "b" / "audit.jsonl")
    sink(completed())
    assert len(_lines(sink.path)) == 1


@pytest.mark.parametrize(
    "kwargs",
    [{"max_bytes": 0}, {"max_bytes": -1}, {"backups": -1}],
)
def test_bad_settings_are_refused(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        JsonlSink(tmp_path / "log.jsonl", **kwargs)


@pytest.mark.parametrize("line", [b"no newline", b"two\nlines\n", b"\n\n"])
def test_append_line_takes_exactly_one_line(tmp_path: Path, line: bytes) -> None:
    with pytest.raises(ValueError, match="one line"):
        JsonlSink(tmp_path / "log.jsonl").append_line(line)


def test_fsync_flushes_every_line_and_every_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        calls.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    record = mid_generation_disconnect()
    size = len(record.to_json()) + 1
    sink = ErrorLog(tmp_path / "errors.jsonl", fsync=True, max_bytes=size * 2, backups=3)
    for i in range(5):
        sink(with_ids(record, f"run-{i}"))
    # 5 lines, each flushed; files hold 2 lines, so lines 3 and 5 rotated first (folder flushed each time)
    assert calls.count(False) == 5
    assert calls.count(True) == 2
    records, problems = _read_all(sink.path, rotated=True)
    assert [r.run_id for r in records] == [f"run-{i}" for i in range(5)]
    assert problems == []
    unsynced = JsonlSink(tmp_path / "plain.jsonl")
    unsynced(record)
    assert len(calls) == 7


def test_rotation_keeps_the_newest_backups(tmp_path: Path) -> None:
    record = rate_limited()
    size = len(record.to_json()) + 1
    sink = JsonlSink(tmp_path / "log.jsonl", max_bytes=size * 3, backups=2)
    for i in range(20):
        sink(with_ids(record, f"run-{i:02d}"))
    files = log_files(sink.path)
    assert [p.name for p in files] == ["log.jsonl.2", "log.jsonl.1", "log.jsonl"]
    assert all(p.stat().st_size <= size * 3 for p in files)
    records, problems = _read_all(sink.path, rotated=True)
    assert problems == []
    # 20 lines, 3 per file: the current file holds 2, each backup 3; older ones were dropped
    assert [r.run_id for r in records] == [f"run-{i:02d}" for i in range(12, 20)]
    assert [r.run_id for r in _read_all(sink.path)[0]] == ["run-18", "run-19"]


def test_no_backups_starts_the_file_afresh(tmp_path: Path) -> None:
    record = user_abort()
    size = len(record.to_json()) + 1
    sink = JsonlSink(tmp_path / "log.jsonl", max_bytes=size * 2, backups=0)
    for i in range(5):
        sink(with_ids(record, f"run-{i}"))
    assert log_files(sink.path) == [sink.path]
    assert [line["ids"]["run_id"] for line in _lines(sink.path)] == ["run-4"]


def test_a_line_larger_than_max_bytes_still_gets_written_whole(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "log.jsonl", max_bytes=100, backups=5)
    for i in range(3):
        sink(with_ids(completed(), f"run-{i}"))
    assert [p.name for p in log_files(sink.path)] == ["log.jsonl.2", "log.jsonl.1", "log.jsonl"]
    assert all(len(_lines(p)) == 1 for p in log_files(sink.path))


def test_a_torn_tail_from_a_crash_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    sink = AuditLog(tmp_path / "audit.jsonl")
    first, second = completed(), idle_timeout()
    sink(first)
    half = second.to_json().encode("utf-8")[:200]
    with open(sink.path, "ab") as f:
        f.write(half)  # a writer died mid-line
    third = tool_input_cut()
    sink(third)
    records, problems = _read_all(sink.path)
    assert [r.run_id for r in records] == [first.run_id, third.run_id]
    assert [(p.kind, p.line) for p in problems] == [(ProblemKind.CORRUPT_LINE, 2)]


# -- several processes, one file ---------------------------------------------------------------------------

# As many writers as an operator's busy host runs, each as fast as it can.
WORKERS, PER_WORKER = 6, 2000


@pytest.mark.parametrize("max_bytes", [None, 64 << 10], ids=["one-file", "rotating"])
def test_concurrent_appends_from_processes_lose_tear_and_double_nothing(
    tmp_path: Path, max_bytes: int | None
) -> None:
    path = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [
        ctx.Process(target=append_worker, args=(str(path), w, PER_WORKER, max_bytes, 1000, start))
        for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    try:
        start.set()
        for proc in procs:
            proc.join(120)
        assert [proc.exitcode for proc in procs] == [0] * WORKERS
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(10)

    files = log_files(path)
    if max_bytes is None:
        assert files == [path]
    else:
        assert len(files) > 2  # it did rotate, several times, under contention
        # A file passes max_bytes only by lines that met it full while it rotated (see _sinks' docstring).
        sizes = [p.stat().st_size for p in files]
        assert sum(sizes) <= 2 * max_bytes * len(files), sizes
    run_ids: list[str] = []
    for file in files:
        for line in _lines(file):  # every line parses: none torn, none interleaved
            assert_valid(line)
            run_ids.append(line["ids"]["run_id"])
    expected = {f"w{w}-{i:04d}" for w in range(WORKERS) for i in range(PER_WORKER)}
    assert len(run_ids) == WORKERS * PER_WORKER  # none lost
    assert set(run_ids) == expected
    assert max(Counter(run_ids).values()) == 1  # none doubled
    # each worker's records stay in its own order
    for w in range(WORKERS):
        mine = [r for r in run_ids if r.startswith(f"w{w}-")]
        assert mine == sorted(mine)
    records, problems = _read_all(path, rotated=True)
    assert problems == []
    assert [r.run_id for r in records] == run_ids


def test_a_rotation_lock_held_elsewhere_never_holds_a_line_back(tmp_path: Path) -> None:
    record = rate_limited()
    sink = ErrorLog(tmp_path / "errors.jsonl", max_bytes=len(record.to_json()) + 1, backups=3)
    fd = os.open(tmp_path / "errors.jsonl.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process rotating, or stuck while it does
        for i in range(3):
            assert deliver([sink], with_ids(record, f"run-{i}")) == 0
        # written at once, to the current file: rotation waits for the lock, the lines do not
        assert [line["ids"]["run_id"] for line in _lines(sink.path)] == ["run-0", "run-1", "run-2"]
    finally:
        os.close(fd)
    sink(with_ids(record, "run-3"))  # the lock is free again: the full file rotates first
    assert [line["ids"]["run_id"] for line in _lines(sink.path)] == ["run-3"]
    assert len(_lines(sink.rotated_paths()[0])) == 3


def test_a_line_whose_file_was_rotated_away_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = AuditLog(tmp_path / "audit.jsonl", max_bytes=None, backups=0)
    sink(with_ids(completed(), "before"))
    real_write = os.write
    unlinked: list[bool] = []

    def write_then_rotate_elsewhere(fd: int, data: bytes) -> int:
        n = real_write(fd, data)
        if not unlinked:  # another process rotated the file away right after this write
            unlinked.append(True)
            os.unlink(sink.path)
        return n

    monkeypatch.setattr(os, "write", write_then_rotate_elsewhere)
    sink(with_ids(completed(), "after"))
    monkeypatch.undo()
    assert unlinked
    assert [line["ids"]["run_id"] for line in _lines(sink.path)] == ["after"]


# -- delivery ----------------------------------------------------------------------------------------------


def test_a_sink_that_raises_does_not_stop_the_others_and_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def broken_sink(record: RunRecord) -> None:
        raise RuntimeError(f"cannot reach collector with api_key={SECRET}")

    def good_sink(record: RunRecord) -> None:
        seen.append(record.run_id)

    record = mid_generation_disconnect()
    before = sink_failures()
    with caplog.at_level(logging.WARNING, logger="streamfsm.sinks"):
        failed = deliver([broken_sink, good_sink, broken_sink], record)
    assert failed == 2
    assert seen == [record.run_id]
    name = broken_sink.__qualname__
    assert sink_failures()[name] == before.get(name, 0) + 2
    reports = [r for r in caplog.records if r.name == "streamfsm.sinks"]
    assert len(reports) == 2
    for report in reports:
        assert report.levelno == logging.WARNING
        assert report.exc_info is None
        assert name in report.getMessage()
        assert "RuntimeError" in report.getMessage()
        assert record.run_id in report.getMessage()
    assert SECRET not in caplog.text
    assert "collector" not in caplog.text


def test_a_failing_log_file_is_reported_without_its_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "secret-customer-name"
    target.mkdir()  # a folder where the log file should be: open() fails with EISDIR
    sink = AuditLog(target)
    with caplog.at_level(logging.WARNING, logger="streamfsm.sinks"):
        assert deliver([sink], completed()) == 1
    message = caplog.records[-1].getMessage()
    assert "AuditLog failed: raised IsADirectoryError (EISDIR)" in message
    assert "secret-customer-name" not in caplog.text


def test_an_async_sink_is_refused_without_an_unawaited_coroutine(caplog: pytest.LogCaptureFixture) -> None:
    async def async_sink(record: RunRecord) -> None:
        raise AssertionError("never runs")

    before = sink_failures().get(async_sink.__qualname__, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would turn into an error
        with caplog.at_level(logging.WARNING, logger="streamfsm.sinks"):
            assert deliver([async_sink], completed()) == 1  # type: ignore[list-item]
        gc.collect()
    assert sink_failures()[async_sink.__qualname__] == before + 1
    assert "sinks are synchronous" in caplog.text


def test_a_logging_failure_is_counted_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Exploding(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            raise RuntimeError("filter bug")

    logger = logging.getLogger("streamfsm")
    bomb = Exploding()
    logger.addFilter(bomb)
    before = sink_failures().get("logging", 0)
    try:
        with caplog.at_level(logging.DEBUG, logger="streamfsm"):
            assert deliver([], rate_limited()) == 1
    finally:
        logger.removeFilter(bomb)
    assert sink_failures()["logging"] == before + 1


def test_sink_failures_is_a_snapshot() -> None:
    snapshot = sink_failures()
    snapshot["made-up"] = 99
    assert "made-up" not in sink_failures()


# -- the per-run log line ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "level"),
    [
        (completed, logging.DEBUG),
        (user_abort, logging.INFO),
        (mid_generation_disconnect, logging.WARNING),
        (rate_limited, logging.WARNING),
        (tool_input_cut, logging.WARNING),
        (idle_timeout, logging.WARNING),
    ],
)
def test_one_log_record_per_run_with_a_level_by_outcome(
    caplog: pytest.LogCaptureFixture, scenario: Any, level: int
) -> None:
    record = scenario()
    assert run_log_level(record) == level
    with caplog.at_level(logging.DEBUG, logger="streamfsm"):
        deliver([], record)
    [entry] = [r for r in caplog.records if r.name == "streamfsm"]
    assert entry.levelno == level
    assert entry.getMessage() == (
        f"{record.summary_key}: {record['summary']['title']} [run_id={record.run_id}]"
    )
    fields = entry.streamfsm  # type: ignore[attr-defined]
    assert fields["run_id"] == record.run_id
    assert fields["trace_id"] == record["ids"]["trace_id"]
    assert fields["summary_key"] == record.summary_key
    assert fields["verdict"] == record.verdict
    assert fields["provider"] == "openai-chat"
    assert fields["model"] == "gpt-4o"
    assert all(v is None or isinstance(v, (str, int, float)) for v in fields.values())
    json.dumps(fields)  # a JSON formatter can take it as is
    assert SECRET not in caplog.text
    assert SECRET not in json.dumps(fields)


def test_a_disabled_logger_costs_one_check(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamfsm.runtime.records._sinks as sinks

    def no_fields(record: RunRecord) -> dict[str, Any]:
        raise AssertionError("fields built for a disabled logger")

    monkeypatch.setattr(sinks, "_log_fields", no_fields)
    with caplog.at_level(logging.ERROR, logger="streamfsm"):
        log_run(mid_generation_disconnect())
    assert caplog.records == []


def test_a_rotation_that_died_mid_way_is_finished_by_the_next_and_read_meanwhile(tmp_path: Path) -> None:
    record = rate_limited()
    sink = JsonlSink(tmp_path / "log.jsonl", max_bytes=len(record.to_json()) + 1, backups=3)
    sink(with_ids(record, "run-0"))
    sink.path.rename(sink.path.with_name("log.jsonl.rotating"))  # a rotator died right after moving it aside
    sink(with_ids(record, "run-1"))
    assert [r.run_id for r in _read_all(sink.path, rotated=True)[0]] == ["run-0", "run-1"]
    sink(with_ids(record, "run-2"))  # run-1's file is full: this rotation finishes the dead one first
    sink(with_ids(record, "run-3"))
    names = [p.name for p in log_files(sink.path)]
    assert names == ["log.jsonl.3", "log.jsonl.2", "log.jsonl.1", "log.jsonl"]
    assert [r.run_id for r in _read_all(sink.path, rotated=True)[0]] == ["run-0", "run-1", "run-2", "run-3"]
