"""Run records built without the network: drive a ``StreamMachine`` and a ``Recorder`` the way the runtime
does, then classify with ``diagnose`` / ``diagnose_finished``. Every record can be checked against the JSON
Schema shipped in ``streamfsm/schemas/run-1.json``."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

import streamfsm
from streamfsm.classify import (
    AbortSource,
    Facts,
    ProviderError,
    ProviderErrorKind,
    TransportFacts,
    TransportKind,
    diagnose,
    diagnose_finished,
)
from streamfsm.machine import StreamMachine, Trigger
from streamfsm.runtime import Ids, RunRecord, StreamConfig
from streamfsm.runtime.records._record import Recorder

SCHEMA_PATH = Path(streamfsm.__file__).parent / "schemas" / "run-1.json"
VALIDATOR = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
SECRET = "sk-proj-SECRETSECRET0123456789abcdef"

T = Trigger


def schema_errors(record: Mapping[str, Any]) -> list[str]:
    data = record.to_dict() if isinstance(record, RunRecord) else dict(record)
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(data))


def assert_valid(record: Mapping[str, Any]) -> None:
    errors = schema_errors(record)
    assert not errors, errors


def build(
    progress: Sequence[Trigger],
    edge: Trigger | None = None,
    facts: Facts | None = None,
    *,
    provider: str = "openai-chat",
    model: str | None = "gpt-4o",
    status: int = 200,
    run_id: str | None = None,
    started_at: datetime | None = None,
    abort: tuple[str, str | None] | None = None,
    watchdog: str | None = None,
    usage: tuple[int, int] | None = None,
    finish: tuple[str, str] | None = None,
) -> RunRecord:
    """One run: ``request_sent``, then ``progress``, then the failure ``edge`` (or none: it must finish)."""
    machine = StreamMachine()
    rec = Recorder(
        provider=provider,
        model=model,
        body={"model": model, "messages": [{"role": "user", "content": SECRET}], "temperature": 0.2},
        url=f"https://api.example.com/v1/chat/completions?key={SECRET}",
        ids=Ids(session_id="session-1", context={"route": "/v1/chat"}),
        config=StreamConfig(),
        run_id=run_id or uuid.uuid4().hex,
        trace_id=uuid.uuid4().hex,
    )
    rec.request_sent = True
    rec.lifecycle(T.REQUEST_SENT.value, machine.send(T.REQUEST_SENT))
    headers = {"x-request-id": "req_" + rec.run_id[:8], "content-type": "text/event-stream"}
    if status != 200 or T.HEADERS_RECEIVED in progress:
        rec.response_headers(status, headers)
    for trigger in progress:
        now = time.monotonic()
        rec.event(trigger.value, now, machine.send(trigger))
        if trigger.is_provider_progress:
            rec.progress(trigger, now)
        if trigger is T.USAGE and usage is not None:
            rec.usage(usage[0], usage[1], None, None)
    if finish is not None:
        rec.finish_raw, rec.finish_unified = finish
    if abort is not None:
        rec.set_abort(*abort)
    if watchdog is not None:
        rec.watchdog_fired = watchdog
    facts = facts or Facts(request_sent=True)
    if facts.transport is not None:
        rec.transport = facts.transport
    state = machine.state
    if edge is None:
        record = rec.finish(diagnose_finished(state), state)
    else:
        final = machine.send(edge)
        rec.lifecycle(edge.value, final)
        record = rec.finish(diagnose(state, edge, facts), final)
    if started_at is not None:
        data = record.to_dict()
        data["started_at"] = started_at.isoformat(timespec="milliseconds")
        record = RunRecord(data)
    return record


HEADERS_TEXT = (T.HEADERS_RECEIVED, T.TEXT_DELTA, T.TEXT_DELTA, T.TEXT_DELTA)
CLOSED_MID_BODY = TransportFacts(
    TransportKind.CLOSED_MID_BODY,
    chain=("httpx.RemoteProtocolError", "httpcore.RemoteProtocolError"),
    markers=("incomplete_chunked_read",),
)


def completed(**kw: Any) -> RunRecord:
    return build((*HEADERS_TEXT, T.USAGE, T.FINISH), usage=(12, 34), finish=("stop", "stop"), **kw)


def mid_generation_disconnect(**kw: Any) -> RunRecord:
    facts = Facts(request_sent=True, transport=CLOSED_MID_BODY)
    return build(HEADERS_TEXT, T.DISCONNECTED, facts, **kw)


def user_abort(**kw: Any) -> RunRecord:
    facts = Facts(request_sent=True, abort_source=AbortSource.USER)
    return build(HEADERS_TEXT, T.LOCAL_ABORT, facts, abort=("user", "stop button"), **kw)


def rate_limited(**kw: Any) -> RunRecord:
    error = ProviderError(
        ProviderErrorKind.RATE_LIMIT, status=429, type="rate_limit_error", retry_after_s=2.0
    )
    return build((), T.HTTP_ERROR, Facts(request_sent=True, provider=error), status=429, **kw)


def tool_input_cut(**kw: Any) -> RunRecord:
    progress = (T.HEADERS_RECEIVED, T.TOOL_INPUT_START, T.TOOL_INPUT_DELTA, T.TOOL_INPUT_DELTA)
    return build(progress, T.EOF_WITHOUT_TERMINAL, Facts(request_sent=True, tool_name="write_file"), **kw)


def idle_timeout(**kw: Any) -> RunRecord:
    progress = (T.HEADERS_RECEIVED, T.REASONING_DELTA, T.KEEPALIVE, T.KEEPALIVE)
    return build(progress, T.IDLE_TIMEOUT, watchdog="idle_timeout", **kw)


SCENARIOS = (completed, mid_generation_disconnect, user_abort, rate_limited, tool_input_cut, idle_timeout)


def with_ids(record: RunRecord, run_id: str) -> RunRecord:
    data = record.to_dict()
    data["ids"]["run_id"] = run_id
    return RunRecord(data)


def append_worker(
    path: str, worker: int, count: int, max_bytes: int | None, backups: int, start: Any
) -> None:
    """A child process: wait for the start gate, then append ``count`` records with run ids
    ``w<worker>-<i>`` as fast as it can (spawned, so it must live in an importable module)."""
    from streamfsm.runtime import JsonlSink

    sink = JsonlSink(path, max_bytes=max_bytes, backups=backups)
    templates = [scenario() for scenario in SCENARIOS]
    if not start.wait(30):
        raise TimeoutError("start gate never opened")
    for i in range(count):
        sink(with_ids(templates[i % len(templates)], f"w{worker}-{i:04d}"))
