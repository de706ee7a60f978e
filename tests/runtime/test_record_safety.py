"""Nothing secret leaves a run, and a run's record stays the same size however long the stream.

Secrets are planted in request headers, the URL (userinfo and ``?key=``), the prompt, the model's output,
HTTP and in-band error messages, response headers, the abort reason and caller context; none may appear in
the record, a log line, the exception message, or any repr.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.runtime import TextDelta
from streamfsm.runtime.records._record import _redacted_model
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Headers,
    Request,
    Send,
    Status,
    build,
    frame,
)
from tests.support.runs import BODIES, validate_record

# Secrets in the formats the redactor knows, each with a random tail so a hit cannot be a coincidence.
_tail = st.text(alphabet="abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=24, max_size=32)
secrets = st.one_of(
    _tail.map(lambda t: f"sk-proj-9{t}"),
    _tail.map(lambda t: f"sk-ant-api03-7{t}"),
    _tail.map(lambda t: f"AIzaSy{t}"),
    _tail.map(lambda t: f"ghp_{t}"),
    _tail.map(lambda t: "AKIA" + t.upper()[:16].ljust(16, "Q")),
)
markers = _tail.map(lambda t: f"PLANTED{t}")  # plain text: the prompt, the output, error wording

WHERE = ("http_error", "in_band_error", "stream", "abort")


def _script(where: str, secret: str, marker: str) -> tuple[Any, ...]:
    headers = (("content-type", "application/json"), ("x-request-id", f"req_{secret}"))
    if where == "http_error":
        body = json.dumps(
            {"error": {"message": f"Incorrect API key provided: {secret} {marker}", "code": None}}
        )
        return (Status(401, headers, body.encode()),)
    frames = build("openai-chat", [("text", f"{marker} {secret}"), ("text", "more")])
    sse = (("content-type", "text/event-stream"), ("x-request-id", f"req_{secret}"))
    if where == "in_band_error":
        error = frame({"error": {"message": f"key {secret} leaked {marker}", "type": "server_error"}})
        return (Headers(200, sse), Send(frames[0]), Send(frames[1]), Send(error), End())
    return (Headers(200, sse), *(Send(f) for f in frames), End())


@pytest.fixture(scope="module")
def echo_server() -> Any:
    """One server for every example: the script rides in on request headers."""

    def router(request: Request) -> tuple[Any, ...]:
        return _script(
            request.header("x-test-where") or "stream", *json.loads(request.header("x-test-plant") or "[]")
        )

    with FaultServerThread(router) as server:
        yield server


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    where=st.sampled_from(WHERE), secret=secrets, marker=markers, backend=st.sampled_from(["asyncio", "trio"])
)
def test_no_planted_secret_reaches_record_log_message_or_repr(
    echo_server: Any, caplog: pytest.LogCaptureFixture, where: str, secret: str, marker: str, backend: str
) -> None:
    caplog.clear()

    # The plant reaches the server in test-only request headers: they are secrets the record must not keep.
    test_headers = {"x-test-where": where, "x-test-plant": json.dumps([secret, marker])}
    with caplog.at_level(logging.DEBUG, logger="streamfsm"):
        run, message = anyio.run(
            _planted, echo_server.base_url, where, secret, marker, test_headers, backend=backend
        )
    record = run.record
    assert record is not None
    validate_record(record)
    outputs = {
        "record": record.to_json(),
        "message": message,
        "repr(run)": repr(run),
        "repr(record)": repr(record),
        "log": "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records),
    }
    for where_found, text in outputs.items():
        assert secret not in text, f"secret leaked into {where_found}"
        assert marker not in text, f"prompt/output/error text leaked into {where_found}"
    expected_class = {
        "http_error": "provider_error",
        "in_band_error": "provider_error",
        "stream": "completed",
        "abort": "local_abort",
    }[where]
    assert record.failure_class == expected_class


async def _planted(
    base: str, where: str, secret: str, marker: str, test_headers: dict[str, str]
) -> tuple[streamfsm.Run, str]:
    body = {**BODIES["openai-chat"], "messages": [{"role": "user", "content": f"{marker} {secret}"}]}
    run = streamfsm.open_stream(
        "openai-chat",
        base_url=base.replace("http://", f"http://user:{secret}@") + f"/v1?key={secret}&x={marker}",
        json=body,
        headers={
            "authorization": f"Bearer {secret}",
            "x-api-key": secret,
            "cookie": f"session={secret}",
            **test_headers,
        },
        ids={"session_id": f"ses_{secret}", "context": {"tenant": f"acme {secret}", "route": "r1"}},
        config=StreamConfig(idle_timeout=5, connect_timeout=5),
    )
    message = ""
    try:
        async with run:
            async for event in run:
                if where == "abort" and isinstance(event, TextDelta):
                    run.abort(f"user typed {secret} and stopped", source="user")
    except StreamFailed as failure:
        message = f"{failure}\n{failure!r}\n{failure.diagnosis!r}\n{failure.record!r}"
    return run, message


# -- bounded memory ---------------------------------------------------------------------------------------


def _alternating(deltas: int) -> list[bytes]:
    """``deltas`` chat chunks alternating reasoning and text, so nothing coalesces, batched 500 per send."""
    parts = [("reasoning" if i % 2 else "text", "x") for i in range(deltas)]
    frames = build("openai-chat", parts)
    return [b"".join(frames[i : i + 500]) for i in range(0, len(frames), 500)]


async def _record_for(deltas: int) -> dict[str, Any]:
    async with FaultServer((Headers(), *(Send(c) for c in _alternating(deltas)), End())) as server:
        async with streamfsm.open_stream(
            "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"]
        ) as run:
            count = 0
            async for _ in run:
                count += 1
    assert run.finished
    return validate_record(run.record)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_100k_delta_run_keeps_its_record_and_timeline_within_a_fixed_bound() -> None:
    small = await _record_for(1_000)
    large = await _record_for(100_000)
    config = StreamConfig()
    bound = config.timeline_head + config.timeline_tail
    assert large["stream_events"]["text_delta"] == 50_000
    assert large["stream_events"]["reasoning_delta"] == 50_000
    assert len(large["timeline"]["entries"]) <= bound
    assert large["timeline"]["omitted"] > 99_000  # the middle is counted, not kept
    # The record does not grow with the stream: only the counters' digits differ.
    assert len(json.dumps(large)) - len(json.dumps(small)) < 600


def test_a_long_model_is_redacted_and_not_kept_by_the_redaction_cache() -> None:
    # The record's model comes from the request body, parsed up to 1 MiB: the per-route cache would keep 256
    # of them (a relay's clients choose them). A long one is redacted and bounded, and not kept.
    model = "PLANTED-model-" + "x" * (1 << 20)
    references = sys.getrefcount(model)
    redacted = _redacted_model(model)
    assert len(redacted) <= 128
    assert sys.getrefcount(model) == references
    assert _redacted_model("gpt-4o") == "gpt-4o"
