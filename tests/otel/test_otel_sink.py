"""The OpenTelemetry sink against the real SDK and its in-memory exporters, fed by real runs.

Every run here goes through `streamfsm.open_stream` against the loopback fault server, and the sink is driven
by the runtime's own delivery (``StreamConfig(sinks=(sink,))``), so what is asserted is what a collector gets.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import streamfsm
from streamfsm import RunRecord, StreamConfig, StreamFailed
from streamfsm.otel import OtelLogSink, OtelSink
from streamfsm.runtime import SCHEMA
from streamfsm.testing import SSE_FORMATS, End, FaultServer, Fin, Headers, Send, Sleep, Step, text_stream
from streamfsm.testing._wire import Format
from tests.support.runs import BODIES

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_NAMES = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
}
SSE_HEADERS = (("content-type", "text/event-stream"), ("x-request-id", "req_otel_123"))


@dataclass
class Otel:
    sink: OtelSink
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider

    def only_span(self) -> ReadableSpan:
        (span,) = self.spans.get_finished_spans()
        return span

    def points(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        found = [
            metric
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
        ]
        assert len(found) == 1, f"{name}: {[m.name for m in found]}"
        return list(found[0].data.data_points)

    def unit(self, name: str) -> str:
        data = self.metrics.get_metrics_data()
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        return metric.unit or ""
        raise AssertionError(f"no metric {name}")


@pytest.fixture
def otel(caplog: pytest.LogCaptureFixture) -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    caplog.set_level(logging.WARNING, logger="streamfsm")
    yield Otel(OtelSink(tracer_provider, meter_provider), spans, reader, tracer_provider)
    # The sink and the deliverer report trouble on "streamfsm.sinks" (and count it): neither may fire.
    dropped = [
        r.getMessage() for r in caplog.records if "sink" in r.getMessage() and "failed" in r.getMessage()
    ]
    assert not dropped, dropped
    tracer_provider.shutdown()
    meter_provider.shutdown()


def through_first_text(frames: list[bytes], marker: bytes = b"Hello") -> list[bytes]:
    """The frames up to and including the first one that carries visible text."""
    index = next(i for i, frame in enumerate(frames) if marker in frame)
    return frames[: index + 1]


async def finished_run(fmt: Format, sink: OtelSink) -> RunRecord:
    frames = text_stream(fmt, ["Hello", " there"], reasoning=["think"])
    pause: tuple[Step, ...] = (Headers(headers=SSE_HEADERS), Send(frames[0]), Sleep(0.03))
    steps = (*pause, *(Send(f) for f in frames[1:]), End())
    async with FaultServer(steps) as server:
        config = StreamConfig(sinks=(sink,))
        async with streamfsm.open_stream(
            fmt, base_url=server.base_url, json=BODIES[fmt], config=config
        ) as run:
            async for _ in run:
                pass
    assert run.finished and run.record is not None
    return run.record


async def failed_run(fmt: Format, sink: OtelSink) -> StreamFailed:
    """Visible text, a pause, then the server closes mid-body: a mid-generation failure."""
    frames = through_first_text(text_stream(fmt, ["Hello", " world", " again"], reasoning=["think"]))
    steps: tuple[Step, ...] = (Headers(headers=SSE_HEADERS), *(Send(f) for f in frames), Sleep(0.05), Fin())
    async with FaultServer(steps) as server:
        config = StreamConfig(sinks=(sink,))
        with pytest.raises(StreamFailed) as info:
            async with streamfsm.open_stream(
                fmt, base_url=server.base_url, json=BODIES[fmt], config=config
            ) as run:
                async for _ in run:
                    pass
    return info.value


def assert_span_timing(span: ReadableSpan, record: RunRecord, before_ns: int, after_ns: int) -> None:
    assert span.start_time is not None and span.end_time is not None
    duration_s = (span.end_time - span.start_time) / 1e9
    assert duration_s == pytest.approx(record["timings"]["total_s"], abs=1e-6)
    # started_at keeps milliseconds: the span starts within a millisecond of the real start.
    assert before_ns - 1_000_000 <= span.start_time <= span.end_time <= after_ns + 1_000_000


def assert_events_match_timeline(span: ReadableSpan, record: RunRecord) -> None:
    entries = record["timeline"]["entries"]
    assert entries, "a real run has a timeline"
    assert [event.name for event in span.events] == [entry["event"] for entry in entries]
    assert span.start_time is not None
    for event, entry in zip(span.events, entries, strict=True):
        assert (event.timestamp - span.start_time) / 1e9 == pytest.approx(entry["t"], abs=1e-6)
        assert event.attributes is not None
        assert event.attributes["streamfsm.state"] == entry["state"]
        assert event.attributes["streamfsm.n"] == entry.get("n", 1)
        if "t_last" in entry:
            assert event.attributes["streamfsm.t_last_s"] == entry["t_last"]


def common_attributes(record: RunRecord, fmt: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAMES[fmt],
        "gen_ai.request.model": BODIES[fmt]["model"],
        "server.address": "127.0.0.1",
        "server.port": int(record["endpoint"].split(":")[2].split("/")[0]),
    }


@pytest.mark.anyio
async def test_an_ollama_run_is_a_span_of_its_provider_with_its_counts(otel: Otel) -> None:
    record = await finished_run("ollama", otel.sink)
    attrs = dict(otel.only_span().attributes or {})
    assert {k: attrs[k] for k in common_attributes(record, "ollama")} == common_attributes(record, "ollama")
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (25, 40)
    assert "gen_ai.response.id" not in attrs  # Ollama names no response; none is made up


# -- a failed run ------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_failed_run_is_an_error_span_with_our_classification(otel: Otel) -> None:
    before = time.time_ns()
    failure = await failed_run("anthropic", otel.sink)
    after = time.time_ns()
    record = failure.record
    outcome, retry, ids = record["outcome"], record["retry"], record["ids"]
    assert outcome["class"] == "mid_generation"  # the scenario is what we think it is

    span = otel.only_span()
    assert span.name == "chat claude-sonnet-4-5"
    assert span.kind is SpanKind.CLIENT
    assert_span_timing(span, record, before, after)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == failure.diagnosis.title == record["summary"]["title"]

    attrs = dict(span.attributes or {})
    common = common_attributes(record, "anthropic")
    assert {k: attrs[k] for k in common} == common
    assert attrs["gen_ai.request.stream"] is True
    assert attrs["gen_ai.response.id"] == ids["response_id"] == "msg_01XFDUDYJgAACzvnptvVoYEL"
    assert attrs["error.type"] == outcome["summary_key"] == "mid_generation.closed_mid_body"
    assert "gen_ai.response.finish_reasons" not in attrs  # the stream died before its finish reason
    assert attrs["gen_ai.usage.input_tokens"] == record["tokens"]["input"]
    assert attrs["gen_ai.response.time_to_first_chunk"] == record["timings"]["to_first_progress_s"]
    assert {
        "streamfsm.class": "mid_generation",
        "streamfsm.summary_key": "mid_generation.closed_mid_body",
        "streamfsm.verdict": "user_confirmed_retry",
        "streamfsm.action": "continue_with_partial",
        "streamfsm.phase": "mid_generation",
        "streamfsm.edge": "disconnected",
        "streamfsm.cause": "closed_mid_body",
        "streamfsm.confidence": outcome["confidence"],
        "streamfsm.state": outcome["state"],
        "streamfsm.from_state": outcome["from_state"],
        "streamfsm.run_id": ids["run_id"],
        "streamfsm.trace_id": ids["trace_id"],
        "streamfsm.attempt": 1,
        "streamfsm.provider_request_id": "req_otel_123",
        "streamfsm.transport.kind": "closed_mid_body",
        "streamfsm.http.status_code": 200,
    }.items() <= attrs.items()
    assert retry["verdict"] == "user_confirmed_retry"
    assert "streamfsm.watchdog.fired" not in attrs and "streamfsm.abort.source" not in attrs
    assert_events_match_timeline(span, record)
    assert span.events[-1].name == outcome["edge"]

    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert otel.unit("gen_ai.client.operation.duration") == "s"
    assert duration.count == 1
    assert duration.sum == pytest.approx(record["timings"]["total_s"])
    assert dict(duration.attributes) == {
        **common_attributes(record, "anthropic"),
        "error.type": "mid_generation.closed_mid_body",
    }
    (first_chunk,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert otel.unit("gen_ai.client.operation.time_to_first_chunk") == "s"
    assert first_chunk.count == 1
    assert first_chunk.sum == pytest.approx(record["timings"]["to_first_progress_s"])
    assert dict(first_chunk.attributes) == common_attributes(record, "anthropic")
    (runs,) = otel.points("streamfsm.runs")
    assert runs.value == 1
    assert dict(runs.attributes) == {
        "streamfsm.class": "mid_generation",
        "streamfsm.verdict": "user_confirmed_retry",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5",
    }


# -- a finished run ----------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", SSE_FORMATS)
async def test_a_finished_run_is_an_ok_span_with_usage(otel: Otel, fmt: Format) -> None:
    before = time.time_ns()
    record = await finished_run(fmt, otel.sink)
    after = time.time_ns()
    assert record["outcome"]["class"] == "completed"

    span = otel.only_span()
    assert span.name == f"chat {BODIES[fmt]['model']}"
    assert span.kind is SpanKind.CLIENT
    assert_span_timing(span, record, before, after)
    assert record["timings"]["total_s"] >= 0.03  # the scripted pause is inside the span
    assert span.status.status_code is StatusCode.UNSET

    attrs = dict(span.attributes or {})
    common = common_attributes(record, fmt)
    assert {k: attrs[k] for k in common} == common
    tokens = record["tokens"]
    expected: dict[str, Any] = {
        "gen_ai.request.stream": True,
        "gen_ai.response.id": record["ids"]["response_id"],
        "gen_ai.response.finish_reasons": (record["finish_reason"]["raw"],),
        "gen_ai.usage.input_tokens": tokens["input"],
        "gen_ai.usage.output_tokens": tokens["output"],
        "gen_ai.response.time_to_first_chunk": record["timings"]["to_first_progress_s"],
        "streamfsm.class": "completed",
        "streamfsm.verdict": record["retry"]["verdict"],
        "streamfsm.state": record["outcome"]["state"],
        "streamfsm.finish_reason": "stop",
        "streamfsm.provider": fmt,
        "streamfsm.provider_request_id": "req_otel_123",
        "streamfsm.http.status_code": 200,
    }
    for key, name in (
        ("cached", "gen_ai.usage.cache_read.input_tokens"),
        ("reasoning", "gen_ai.usage.reasoning.output_tokens"),
    ):
        if tokens[key] is not None:
            expected[name] = tokens[key]
    assert expected.items() <= attrs.items()
    assert all(value is not None for value in expected.values())
    assert "error.type" not in attrs
    assert_events_match_timeline(span, record)

    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 1
    assert duration.sum == pytest.approx(record["timings"]["total_s"])
    assert dict(duration.attributes) == common  # no error.type on success
    (first_chunk,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert first_chunk.count == 1
    assert first_chunk.sum == pytest.approx(record["timings"]["to_first_progress_s"])
    usage = {p.attributes["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")}
    assert otel.unit("gen_ai.client.token.usage") == "{token}"
    assert {k: (p.count, p.sum) for k, p in usage.items()} == {
        "input": (1, tokens["input"]),
        "output": (1, tokens["output"]),
    }
    (runs,) = otel.points("streamfsm.runs")
    assert runs.value == 1
    assert dict(runs.attributes) == {
        "streamfsm.class": "completed",
        "streamfsm.verdict": record["retry"]["verdict"],
        "gen_ai.provider.name": PROVIDER_NAMES[fmt],
        "gen_ai.request.model": BODIES[fmt]["model"],
    }


@pytest.mark.anyio
async def test_runs_are_counted_by_class_and_verdict(otel: Otel) -> None:
    await finished_run("openai-chat", otel.sink)
    await failed_run("openai-chat", otel.sink)
    await failed_run("openai-chat", otel.sink)
    await finished_run("openai-chat", otel.sink)
    await finished_run("openai-chat", otel.sink)
    runs = {
        (p.attributes["streamfsm.class"], p.attributes["streamfsm.verdict"]): p.value
        for p in otel.points("streamfsm.runs")
    }
    completed_verdict = next(
        s.attributes["streamfsm.verdict"]
        for s in otel.spans.get_finished_spans()
        if s.attributes and s.attributes["streamfsm.class"] == "completed"
    )
    assert runs == {("completed", completed_verdict): 3, ("mid_generation", "user_confirmed_retry"): 2}
    durations: dict[Any, int] = {}
    for point in otel.points("gen_ai.client.operation.duration"):  # one series per server port too
        key = point.attributes.get("error.type")
        durations[key] = durations.get(key, 0) + point.count
    assert durations == {None: 3, "mid_generation.closed_mid_body": 2}


@pytest.mark.anyio
async def test_the_span_is_a_child_of_the_callers_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent turn") as parent:
        await finished_run("gemini", otel.sink)
    ours, theirs = otel.spans.get_finished_spans()
    assert theirs.name == "agent turn"
    assert ours.parent is not None and ours.parent.span_id == parent.get_span_context().span_id
    assert ours.context is not None and ours.context.trace_id == parent.get_span_context().trace_id


# -- older and partial records ----------------------------------------------------------------------------


def test_a_bare_record_yields_a_span_and_never_raises(otel: Otel) -> None:
    otel.sink(RunRecord.from_dict({"schema": SCHEMA}))
    span = otel.only_span()
    assert span.name == "chat" and span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.ERROR  # no outcome is no success
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.stream": True,
        "error.type": "_OTHER",  # the conventions' fallback
    }
    (runs,) = otel.points("streamfsm.runs")
    assert dict(runs.attributes) == {"streamfsm.class": "unknown", "streamfsm.verdict": "unknown"}


def test_odd_field_types_are_left_out(otel: Otel) -> None:
    record = RunRecord.from_dict(
        {
            "schema": SCHEMA,
            "provider": "some-proxy",
            "model": 42,
            "started_at": "not a date",
            "endpoint": "http://[REDACTED]/v1/chat",  # a host masked by redaction
            "outcome": {"class": "completed", "state": ["x"]},
            "tokens": {"input": "12", "output": True},
            "timings": {"total_s": -1, "to_first_progress_s": "soon"},
            "timeline": {"entries": [{"event": "headers_received", "t": 0.1}, "junk", {"t": 1}]},
        }
    )
    otel.sink(record)
    span = otel.only_span()
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.provider.name"] == "some-proxy"  # an unmapped provider passes through
    assert not any(k.startswith(("gen_ai.usage.", "server.")) for k in attrs)
    assert "gen_ai.request.model" not in attrs and "streamfsm.state" not in attrs
    assert [e.name for e in span.events] == ["headers_received"]
    assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.client.token.usage" not in _metric_names(otel)


DURATION = "gen_ai.client.operation.duration"


def test_the_metrics_name_at_most_20_models_and_the_span_every_one(otel: Otel) -> None:
    """Per-model alerts need the model on the metrics, and clients name models at will: the first 20
    names keep theirs (sanitized), every later one is ``other``; the span keeps the record's model."""
    models = [f"model-{i}" for i in range(24)] + ["model-3", 'evil\nmodel{le="x"} ' + "y" * 100]
    for model in models:
        otel.sink(RunRecord.from_dict({"schema": SCHEMA, "model": model, "outcome": {"class": "completed"}}))
    runs = {p.attributes["gen_ai.request.model"]: p.value for p in otel.points("streamfsm.runs")}
    assert runs == {**{f"model-{i}": 1 for i in range(20) if i != 3}, "model-3": 2, "other": 5}
    durations = {p.attributes["gen_ai.request.model"] for p in otel.points(DURATION)}
    assert durations == set(runs)
    spans = [dict(s.attributes or {}).get("gen_ai.request.model") for s in otel.spans.get_finished_spans()]
    assert spans == models


def test_a_model_label_is_sanitized() -> None:
    from streamfsm.runtime import BoundedLabel

    label = BoundedLabel(limit=2)
    assert label("anthropic.claude-3-5-sonnet-20241022-v2:0") == "anthropic.claude-3-5-sonnet-20241022-v2:0"
    assert label('a"b c\n{}' + "z" * 100) == "a_b_c___" + "z" * 56
    assert label("third") == "other"
    assert label(None) is None and label("") is None and label(42) is None


def _metric_names(otel: Otel) -> set[str]:
    data = otel.metrics.get_metrics_data()
    assert data is not None
    return {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}


def test_defaults_to_the_global_providers() -> None:
    sink = OtelSink()
    sink(RunRecord.from_dict({"schema": SCHEMA}))  # the no-op global providers: nothing to see, no error
    assert isinstance(trace.get_tracer_provider(), trace.TracerProvider)


# -- imports -----------------------------------------------------------------------------------------------

CHECK = "import sys; assert not [m for m in sys.modules if m.split('.')[0] == 'opentelemetry'], 'otel loaded'"


@pytest.mark.parametrize(
    ("statement", "loads"),
    [
        ("import streamfsm, streamfsm.runtime", False),
        ("import streamfsm; streamfsm.open_stream; streamfsm.RunRecord", False),
        ("from streamfsm.otel import OtelLogSink, OtelSink", True),  # the check itself can fail
    ],
)
def test_only_streamfsm_otel_imports_opentelemetry(statement: str, loads: bool) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"{statement}; {CHECK}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if loads:
        assert proc.returncode != 0 and "otel loaded" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.anyio
async def test_a_user_abort_is_counted_but_is_not_an_error(otel: Otel) -> None:
    frames = through_first_text(text_stream("openai-chat", ["Hello", " world"]))
    steps: tuple[Step, ...] = (Headers(headers=SSE_HEADERS), *(Send(f) for f in frames), Sleep(5), End())
    async with FaultServer(steps) as server:
        config = StreamConfig(sinks=(otel.sink,))
        with pytest.raises(StreamFailed):
            async with streamfsm.open_stream(
                "openai-chat", base_url=server.base_url, json=BODIES["openai-chat"], config=config
            ) as run:
                async for _ in run:
                    run.abort("user pressed stop")
    span = otel.only_span()
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes is not None
    assert "error.type" not in span.attributes
    assert span.attributes["streamfsm.class"] == "local_abort"
    runs = {p.attributes["streamfsm.class"]: p.value for p in otel.points("streamfsm.runs")}
    assert runs == {"local_abort": 1}


# -- the sink's own failures are counted where sink_failures() shows them ---------------------------------

HUGE = 10**400


@pytest.mark.anyio
async def test_integers_beyond_2_53_are_left_out_and_counted(
    otel: Otel, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[RunRecord] = []
    await finished_run("openai-chat", seen.append)  # type: ignore[arg-type]
    data = seen[0].to_dict()
    # A record read back from a log someone else wrote: capture rejects such counts, a file may not.
    data["tokens"] = {**data["tokens"], "input": HUGE, "output": -HUGE, "cached": 2**53}
    data["timings"] = {**data["timings"], "total_s": HUGE}
    before = streamfsm.sink_failures().get("OtelSink", 0)
    otel.sink(RunRecord.from_dict(data))
    # Before: the histogram raised OverflowError, the record was dropped after its span, and nothing
    # counted it; the span carried the 400-digit numbers, which an OTLP exporter cannot encode.
    assert streamfsm.sink_failures()["OtelSink"] == before + 1
    [message] = [r.getMessage() for r in caplog.records if "OtelSink failed" in r.getMessage()]
    assert message == (
        "run record sink OtelSink failed: 4 integer(s) beyond 2**53 - 1 were left out of the span and "
        f"metrics [run_id={seen[0].run_id}]"
    )
    attrs = dict(otel.only_span().attributes or {})
    for left_out in ("input_tokens", "output_tokens", "cache_read.input_tokens"):
        assert f"gen_ai.usage.{left_out}" not in attrs
    assert attrs["streamfsm.class"] == "completed"  # the rest went out
    assert {p.attributes["streamfsm.class"]: p.value for p in otel.points("streamfsm.runs")} == {
        "completed": 1
    }
    assert "gen_ai.client.token.usage" not in _metric_names(otel)
    caplog.clear()  # seen: the fixture's check is for unexpected reports


class RefusingProcessor(SpanProcessor):
    """A span processor of the application's that fails: the SDK lets its exception through."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("exporter misconfigured with api_key=sk-proj-SECRETSECRET0123456789")


@pytest.mark.anyio
async def test_a_record_the_sdk_refuses_is_counted_not_raised(
    otel: Otel, caplog: pytest.LogCaptureFixture
) -> None:
    otel.tracer_provider.add_span_processor(RefusingProcessor())
    before = streamfsm.sink_failures().get("OtelSink", 0)
    record = await finished_run("anthropic", otel.sink)  # the run itself is unaffected
    assert streamfsm.sink_failures()["OtelSink"] == before + 1
    [message] = [r.getMessage() for r in caplog.records if "OtelSink failed" in r.getMessage()]
    assert message == (
        "run record sink OtelSink failed: raised RuntimeError; the record did not reach it "
        f"[run_id={record.run_id}]"
    )
    assert "SECRET" not in caplog.text
    caplog.clear()


# -- log records for failed runs (OtelLogSink) -------------------------------------------------------------


@dataclass
class Logs:
    sink: OtelLogSink
    exported: InMemoryLogRecordExporter

    def records(self) -> list[Any]:
        return [item.log_record for item in self.exported.get_finished_logs()]


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Logs]:
    exported = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exported))
    caplog.set_level(logging.WARNING, logger="streamfsm")
    yield Logs(OtelLogSink(provider), exported)
    dropped = [r.getMessage() for r in caplog.records if "OtelLogSink" in r.getMessage()]
    assert not dropped, dropped
    provider.shutdown()


@pytest.mark.anyio
async def test_a_failed_run_is_one_genai_event_log_record(logs: Logs, otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    before = time.time_ns()
    with tracer.start_as_current_span("agent step") as parent:
        failure = await failed_run("anthropic", logs.sink)
    after = time.time_ns()
    record = failure.record
    (log,) = logs.records()
    assert log.event_name == "gen_ai.client.inference.operation.details"
    assert (log.severity_number, log.severity_text) == (SeverityNumber.WARN, "WARN")
    assert log.body == record["summary"]["title"]
    assert before <= log.timestamp <= after + 1_000_000  # the run's end (its start keeps milliseconds)
    # the caller's trace: a collector can join the record to the spans
    assert log.trace_id == parent.get_span_context().trace_id
    attrs = dict(log.attributes or {})
    common = common_attributes(record, "anthropic")
    assert {k: attrs[k] for k in common} == common
    assert {
        "error.type": "mid_generation.closed_mid_body",
        "gen_ai.request.stream": True,
        "gen_ai.response.id": record["ids"]["response_id"],
        "gen_ai.response.time_to_first_chunk": record["timings"]["to_first_progress_s"],
        "streamfsm.class": "mid_generation",
        "streamfsm.summary_key": "mid_generation.closed_mid_body",
        "streamfsm.verdict": record["retry"]["verdict"],
        "streamfsm.run_id": record.run_id,
        "streamfsm.provider_request_id": "req_otel_123",
    }.items() <= attrs.items()
    # no content: the conventions' opt-in content attributes are never set, and no value is the prompt
    assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} & set(attrs)
    assert all(v != "hi" for v in attrs.values())


@pytest.mark.anyio
async def test_finished_runs_and_user_aborts_emit_no_log_record(logs: Logs) -> None:
    await finished_run("openai-chat", logs.sink)
    assert logs.records() == []
    aborted = {"outcome": {"class": "local_abort", "summary_key": "local_abort.user"}, "ids": {"run_id": "r"}}
    logs.sink(aborted)
    assert logs.records() == []


def test_the_relays_correlation_ids_are_attributes(logs: Logs) -> None:
    record = {
        "provider": "openai-chat",
        "model": "gpt-4o-mini",
        "outcome": {"class": "provider_error", "summary_key": "provider_error.rate_limited"},
        "summary": {"title": "The provider is rate limiting"},
        "ids": {
            "run_id": "run_1",
            "context": {"request_id": "rid-7", "route": "/v1/chat/completions", "account": "acct_0f"},
        },
    }
    logs.sink(record)
    (log,) = logs.records()
    attrs = dict(log.attributes or {})
    assert attrs["streamfsm.context.request_id"] == "rid-7"
    assert attrs["streamfsm.context.route"] == "/v1/chat/completions"
    assert attrs["streamfsm.context.account"] == "acct_0f"
    assert attrs["error.type"] == "provider_error.rate_limited"
    assert log.body == "The provider is rate limiting"


def test_a_log_record_the_sdk_refuses_is_counted_not_raised(logs: Logs) -> None:
    class Refusing:
        def emit(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("exporter down")

    before = streamfsm.sink_failures().get("OtelLogSink", 0)
    logs.sink._logger = Refusing()  # type: ignore[assignment]
    logs.sink({"outcome": {"class": "mid_generation"}, "ids": {"run_id": "run_2"}})
    assert streamfsm.sink_failures()["OtelLogSink"] == before + 1


def test_the_collector_example_is_a_consistent_configuration() -> None:
    """The docs' collector configuration, as far as it can be checked without a collector: it parses, every
    pipeline names components that are defined (what ``otelcol validate`` checks first), the logs pipeline
    takes OTLP, the memory limiter comes first, and the guide's exporter sends to its OTLP/HTTP port."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "docs" / "examples" / "otel-collector.yaml").read_text())
    pipelines = config["service"]["pipelines"]
    assert {"logs", "traces", "metrics"} <= set(pipelines)
    for name, pipeline in pipelines.items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], f"{name}: {kind} {component} is not defined"
        assert pipeline["processors"][0] == "memory_limiter", name
    assert "otlp" in pipelines["logs"]["receivers"]
    http_port = config["receivers"]["otlp"]["protocols"]["http"]["endpoint"].rpartition(":")[2]
    guide = (ROOT / "docs" / "guides" / "records.md").read_text()
    assert "examples/otel-collector.yaml" in guide
    assert f":{http_port}/v1/logs" in guide
