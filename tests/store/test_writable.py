"""No value keeps a run from being recorded: whatever string a client or a provider sends (a lone surrogate,
valid JSON that UTF-8 cannot encode; NUL, which PostgreSQL refuses in text), in any field, the run reaches
every sink (the audit log, the error log, SQLite, PostgreSQL), reads back, and counts what was replaced; and a
row a database still refuses never takes the rows of its batch with it."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamfsm.classify import Facts, diagnose, diagnose_finished
from streamfsm.machine import StreamMachine, Trigger
from streamfsm.runtime import AuditLog, ErrorLog, Ids, RunRecord, StreamConfig, read_records, sink_failures
from streamfsm.runtime.records._record import Recorder
from streamfsm.store import Store, StoreSink
from tests.support.logs import CLOSED_MID_BODY, assert_valid, completed, with_ids

T = Trigger
REPLACEMENT = "\ufffd"
BAD = ("\ud800", "\udfff", "\x00", "\udc80\ud83d")
# Every kind of character, surrogates and controls included, and the refused ones often.
hostile = st.one_of(
    st.text(st.characters(categories=["Cs", "Cc", "L", "N", "P", "Zs", "So"]), max_size=24),
    st.lists(st.sampled_from([*BAD, "a", "é", "😀"]), min_size=1, max_size=6).map("".join),
)
_runs = itertools.count()


def _unwritable(text: str) -> int:
    return sum(1 for c in text if c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF)


def hostile_run(values: dict[str, str], *, failed: bool) -> RunRecord:
    """A run through the ``Recorder`` whose client and provider sent ``values`` wherever a record keeps
    what they send: model, endpoint, ids and context, response headers and ids, finish reason, abort."""
    machine = StreamMachine()
    run_id = f"run-{next(_runs):06d}-{values['run']}"
    rec = Recorder(
        provider="openai-chat",
        model=values["model"],
        body={"model": values["model"], "tool_choice": values["choice"]},
        url="https://api.example.com/v1/chat/" + values["route"],
        ids=Ids(
            session_id=values["session"],
            message_id=values["message"],
            context={"route": values["route"], "request_id": values["request"], values["key"]: "v"},
        ),
        config=StreamConfig(),
        run_id=run_id,
        trace_id=values["trace"],
    )
    rec.request_sent = True
    rec.lifecycle(T.REQUEST_SENT.value, machine.send(T.REQUEST_SENT))
    rec.response_headers(200, {"x-request-id": values["provider_request"], values["key"]: values["header"]})
    rec.response_id(values["response"])
    for trigger in (T.HEADERS_RECEIVED, T.TEXT_DELTA):
        now = time.monotonic()
        rec.event(trigger.value, now, machine.send(trigger))
        if trigger.is_provider_progress:
            rec.progress(trigger, now)
    rec.delta_keys = {values["key"]: 1}
    rec.finish_raw = values["finish"]
    state = machine.state
    if not failed:
        machine.send(T.FINISH)
        return rec.finish(diagnose_finished(machine.state), machine.state)
    rec.set_abort("user", values["reason"])
    final = machine.send(T.DISCONNECTED)
    return rec.finish(
        diagnose(state, T.DISCONNECTED, Facts(request_sent=True, transport=CLOSED_MID_BODY)), final
    )


FIELDS = (
    "run",
    "model",
    "choice",
    "route",
    "session",
    "message",
    "request",
    "key",
    "trace",
    "provider_request",
    "header",
    "response",
    "finish",
    "reason",
)
runs_of = st.lists(
    st.tuples(st.fixed_dictionaries(dict.fromkeys(FIELDS, hostile)), st.booleans()),
    min_size=1,
    max_size=4,
)


def _written(record: RunRecord) -> None:
    """What every sink needs of a record: UTF-8 JSON without NUL, and its strings the same."""
    text = record.to_json()
    text.encode("utf-8")
    assert "\\u0000" not in text
    assert_valid(record)


@pytest.fixture
def one_store(store_url: str) -> Any:
    """One store per test (the property's examples share it: their run ids differ)."""
    with Store.open(store_url) as store:
        yield store


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=runs_of)
def test_any_string_in_any_field_reaches_every_sink(
    batch: list[tuple[dict[str, str], bool]], one_store: Store, tmp_path: Path
) -> None:
    """Arbitrary strings (surrogates, NUL, controls) in every field a client or a provider fills: each run
    is written to the audit log, failed ones to the error log, all to the store in one batch with a clean
    neighbour, read back from each, and the record counts the characters it replaced."""
    records = [hostile_run(values, failed=failed) for values, failed in batch]
    neighbour = with_ids(completed(), f"neighbour-{next(_runs):06d}")
    records.append(neighbour)
    tag = next(_runs)
    audit, errors = AuditLog(tmp_path / f"audit-{tag}.jsonl"), ErrorLog(tmp_path / f"errors-{tag}.jsonl")
    for record in records:
        _written(record)
        audit(record)
        errors(record)
    assert one_store.add(records) == len(records)
    for record in records:
        stored = one_store.record(record.run_id)
        assert stored is not None and stored.to_dict() == record.to_dict()
        [found] = one_store.find_runs(record.run_id)
        assert found.run_id == record.run_id
    read = [r.run_id for r in read_records(audit.path, on_problem=pytest.fail)]
    assert read == [r.run_id for r in records]
    failed = [r.run_id for r in records if r.failure_class != "completed"]
    if failed:
        assert [r.run_id for r in read_records(errors.path, on_problem=pytest.fail)] == failed
    else:
        assert not errors.path.exists()
    for (values, _), record in zip(batch, records, strict=False):
        # the run id and the trace id are kept as given: their refused characters are counted exactly
        assert record["ids"]["trace_id"] == _fixed(values["trace"])
        assert record.run_id.endswith(_fixed(values["run"]))
        assert record.get("replaced_characters", 0) >= _unwritable(values["trace"] + values["run"])
    assert "replaced_characters" not in neighbour


nested = st.recursive(
    hostile,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile, inner, max_size=3),
    max_leaves=12,
)


@given(data=nested)
@settings(max_examples=200, deadline=None)
def test_the_count_is_every_character_replaced(data: Any) -> None:
    """A record holding ``data`` anywhere (keys too) replaces each of its unwritable characters and counts
    them all; the same record read back from a log line (JSON escapes) says the same."""
    base = completed().to_dict()
    base["extra"] = data
    record = RunRecord(base)
    _written(record)
    assert record.get("replaced_characters", 0) == _count(data)
    # Read back from a log line, as \\u escapes or as raw bytes (json.loads decodes bytes with
    # surrogatepass), the record is the one made from the parsed value: the reader's shortcut misses nothing.
    for text in (json.dumps(base), json.dumps(base, ensure_ascii=False).encode("utf-8", "surrogatepass")):
        again = RunRecord.from_json(text)
        _written(again)
        assert again.to_dict() == RunRecord(json.loads(text)).to_dict()


def _fixed(text: str) -> str:
    return "".join(REPLACEMENT if _unwritable(c) else c for c in text)


def _count(value: Any) -> int:
    if isinstance(value, str):
        return _unwritable(value)
    if isinstance(value, list):
        return sum(_count(v) for v in value)
    if isinstance(value, dict):
        return sum(_unwritable(k) + _count(v) for k, v in value.items())
    return 0


def _refused_by_the_database(run_id: str, model: str) -> RunRecord:
    """A record whose store row a database refuses (a value past the edge, as a record built some other way
    could hold): its JSON is writable, its model column is not."""
    record = with_ids(completed(), run_id)
    record.to_json()
    record._data["model"] = model  # the row reads the model from here; the whole record is the JSON above
    return record


def test_a_row_the_database_refuses_never_takes_its_batch(store_url: str) -> None:
    """One row of a batch refused (a surrogate on SQLite; NUL on PostgreSQL): the batch is written again row
    by row, its neighbours are indexed, and the one refused is counted under StoreSink."""
    bad = "\x00" if store_url.startswith("postgresql") else "\ud800"
    records = [with_ids(completed(), f"ok-{i}") for i in range(5)]
    records.insert(2, _refused_by_the_database("bad-0", f"gpt{bad}"))
    before = sink_failures().get("StoreSink", 0)
    sink = StoreSink(store_url)
    for record in records:
        sink(record)
    assert sink.flush(20)
    sink.close()
    assert sink_failures().get("StoreSink", 0) == before + 1
    with Store.open(store_url) as store:
        assert store.count() == 5
        assert {r.run_id for r in store.find_runs("ok-")} == {f"ok-{i}" for i in range(5)}
        assert store.record("bad-0") is None
        try:  # without on_error, the database's own error (whichever it is) is raised
            store.add([_refused_by_the_database("bad-1", f"x{bad}")])
        except Exception:
            pass
        else:
            pytest.fail("a refused row was not reported")
        assert store.add([with_ids(completed(), "ok-9")]) == 1


def test_store_rebuild_reads_past_a_line_with_a_lone_surrogate(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log line carrying ``"\\ud800"`` (a JSON escape) and a damaged line between good ones: ``store
    rebuild`` indexes every readable record, the surrogate's replaced and counted, and says what it skipped;
    the errors page over that log answers."""
    from streamfsm.cli import main
    from streamfsm.relay import ErrorsData, PageQuery

    log = tmp_path / "audit.jsonl"
    good = [with_ids(completed(), f"good-{i}").to_json() for i in range(3)]
    hostile = json.loads(good[0])
    hostile["ids"]["run_id"] = "hostile"
    hostile["model"] = "gpt-\ud800"
    hostile["ids"]["context"]["route"] = "/v1/\x00chat"
    lines = [good[0], json.dumps(hostile), '{"schema": "streamfsm.run/1", "ids": ', good[1], good[2]]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["store", "rebuild", "--from", str(log), "--store", store_url]) == 0
    out = capsys.readouterr().out
    assert "read 4 records; 4 runs in" in out and "1 unreadable parts skipped" in out, out
    with Store.open(store_url) as store:
        found = store.record("hostile")
        assert found is not None
        assert found["model"] == "gpt-\ufffd" and found["replaced_characters"] == 2
        assert found["ids"]["context"]["route"] == "/v1/\ufffdchat"
    data = ErrorsData(None, [str(log)], audit=str(log))
    try:
        report = data.report(PageQuery(since="3650d"))
        assert report["runs"] == 4  # answered (no 500), and the damaged line counted
        assert report["unreadable_lines"] == 1
        assert data.find("hostile") is not None
    finally:
        data.close()
