"""Every run leaves its record, sinks or none: the process's last 100 in ``streamfsm.recent_records()``."""

from __future__ import annotations

import pytest

import streamfsm
from streamfsm.runtime import RunRecord, deliver
from streamfsm.runtime.records._sinks import RECENT_RECORDS
from streamfsm.testing import End, FaultServerThread, Headers, Send, text_stream
from tests.support.logs import completed

openai = pytest.importorskip("openai")


def test_a_call_through_a_tapped_client_without_sinks_leaves_its_record() -> None:
    """Transparent mode as the guide shows it, less the sink: the SDK's call is a run all the same, and its
    record is there to read once the call is over."""
    steps = (Headers(), *(Send(frame) for frame in text_stream("openai-chat", ["Hello"])), End())
    with FaultServerThread(steps) as server, streamfsm.http_client() as http:
        client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="sk-test", http_client=http)
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for _ in stream:
            pass
    record = streamfsm.recent_records()[-1]
    assert (record.summary_key, record["model"], record["request"]["streaming"]) == (
        "completed.finished",
        "gpt-4o-mini",
        True,
    )


def test_the_process_keeps_its_last_100_records_oldest_first() -> None:
    records = [RunRecord.from_dict({**completed().to_dict(), "ids": {"run_id": f"r{i}"}}) for i in range(130)]
    for record in records:
        deliver((), record)
    kept = streamfsm.recent_records()
    assert RECENT_RECORDS == 100
    assert [r["ids"]["run_id"] for r in kept] == [f"r{i}" for i in range(30, 130)]
    kept.clear()  # a copy: the caller's to change
    assert len(streamfsm.recent_records()) == 100
