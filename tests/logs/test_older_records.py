"""Records written before a later section existed stay readable: by the reader, the schema and diagnose."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from streamfsm.runtime import RunRecord, read_records
from tests.support.logs import assert_valid, mid_generation_disconnect

# Sections added to streamfsm.run/1 after its first records were written; all optional by design.
LATER_SECTIONS = ("relay", "attempts", "recovery")


def first_release_record() -> dict[str, object]:
    data = mid_generation_disconnect().to_dict()
    for section in LATER_SECTIONS:
        data.pop(section, None)
    return data


def test_a_record_without_later_sections_validates_and_loads() -> None:
    data = first_release_record()
    assert_valid(data)
    assert RunRecord.from_dict(data).summary_key == "mid_generation.closed_mid_body"


def test_diagnose_reads_an_older_record(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(first_release_record()) + "\n")
    assert [r.summary_key for r in read_records(path)] == ["mid_generation.closed_mid_body"]
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm", "diagnose", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "The stream broke partway through the answer" in done.stdout


def test_a_future_major_schema_is_refused_with_a_clear_error() -> None:
    data = {**first_release_record(), "schema": "streamfsm.run/2"}
    with pytest.raises(ValueError, match=r"streamfsm\.run/2"):
        RunRecord.from_dict(data)


def test_a_record_is_read_only_and_never_shares_its_data() -> None:
    record = mid_generation_disconnect()  # sealed by the recorder, which hands over its data uncopied
    with pytest.raises(TypeError):
        record["outcome"]["class"] = "completed"  # type: ignore[index]
    assert isinstance(record["outcome"]["evidence"], tuple)
    exported = record.to_dict()
    exported["outcome"]["class"] = "completed"
    exported["outcome"]["evidence"].append("planted")
    for outcome in (record["outcome"], record.to_dict()["outcome"], json.loads(record.to_json())["outcome"]):
        assert outcome["class"] == "mid_generation"
        assert "planted" not in outcome["evidence"]
    loaded = RunRecord.from_dict(exported)  # the caller's data is copied in, not kept
    exported["outcome"]["class"] = "watchdog"
    assert loaded["outcome"]["class"] == "completed"
    assert RunRecord.from_json(record.to_json()).to_dict() == record.to_dict()


def test_a_field_read_as_an_attribute_says_to_read_it_by_its_key() -> None:
    record = mid_generation_disconnect()
    assert "model" in record
    with pytest.raises(AttributeError, match=r"record\['model'\], not record\.model"):
        record.model  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'no_such_field'"):
        record.no_such_field  # type: ignore[attr-defined]  # noqa: B018
    copied = copy.deepcopy(record)  # copying looks up dunder attributes: they stay plain misses
    assert copied.to_dict() == record.to_dict()
    assert "model" not in repr(record)  # the repr stays ids and the summary key
