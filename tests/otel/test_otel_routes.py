"""Routes in OpenTelemetry, against the real SDK and its in-memory exporter and reader, fed by a real
``retrying()`` chain over two fault servers: the span names the route that answered, the breaker state that
let it in and the routes tried; the meter reads the breakers' states and moves, and counts the fallbacks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import streamfsm
from streamfsm import Ids, RetryPolicy, Route, RunRecord, StreamConfig
from streamfsm.otel import OtelSink
from streamfsm.runtime import SCHEMA, Breakers
from streamfsm.testing import End, FaultServer, Headers, Send, Status, text_stream

pytestmark = pytest.mark.anyio

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
BUSY = Status(503, (("content-type", "application/json"),), b'{"error": {"type": "server_error"}}')
OK = (Headers(), *(Send(f) for f in text_stream("openai-chat", ["Hello"])), End())
COOL_DOWN_S = 60.0  # never over in real time: the test moves the chains' clock past it


@dataclass
class Otel:
    sink: OtelSink
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    breakers: Breakers

    def points(self, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
        """The metric's points by their attributes (none: no such metric)."""
        data = self.reader.get_metrics_data()
        if data is None:  # nothing measured yet
            return {}
        return {
            tuple(sorted(point.attributes.items())): point.value
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        }

    def states(self, route: str) -> dict[str, int]:
        points = self.points("streamfsm.breaker.status")
        return {
            dict(key)["streamfsm.breaker.state"]: value
            for key, value in points.items()
            if dict(key)["streamfsm.route"] == route
        }


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    breakers = Breakers(threshold=1, cool_down_s=COOL_DOWN_S, min_spacing_s=0.0)
    yield Otel(OtelSink(tracer_provider, meter_provider, breakers=breakers), spans, reader, breakers)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def opener(base_url: str, sink: OtelSink) -> Any:
    config = StreamConfig(sinks=(sink,))

    def open_attempt(ids: Ids) -> streamfsm.Run:
        return streamfsm.open_stream("openai-chat", base_url=base_url, json=BODY, ids=ids, config=config)

    return open_attempt


def later() -> float:
    """A clock past the breakers' cool-down."""
    return time.monotonic() + COOL_DOWN_S + 1


async def chain(otel: Otel, primary: str, fallback: str, clock: Callable[[], float] = time.monotonic) -> str:
    routes = [
        Route("primary", opener(primary, otel.sink), tries=1),
        Route("fallback", opener(fallback, otel.sink)),
    ]
    policy = RetryPolicy(4, 10, initial_delay_s=0.001, max_delay_s=0.01)
    async with streamfsm.retrying(policy, routes, breakers=otel.breakers, clock=clock) as run:
        text = "".join([e.text async for e in run if isinstance(e, streamfsm.TextDelta)])
    assert text == "Hello"
    assert run.record is not None
    return str(run.record["route"]["name"])


async def test_the_span_names_the_route_that_answered_and_the_routes_tried(otel: Otel) -> None:
    async with FaultServer((BUSY,)) as down, FaultServer(OK) as up:
        assert await chain(otel, down.base_url, up.base_url) == "fallback"
    failed, answered = sorted(otel.spans.get_finished_spans(), key=lambda s: s.start_time or 0)
    attrs = dict(answered.attributes or {})
    assert attrs["streamfsm.route"] == "fallback"
    assert attrs["streamfsm.breaker.state"] == "closed"
    assert attrs["streamfsm.routes_tried"] == ("primary",)
    first = dict(failed.attributes or {})
    assert (first["streamfsm.route"], first["streamfsm.breaker.state"]) == ("primary", "closed")
    assert "streamfsm.routes_tried" not in first  # the first attempt: no route before it
    assert otel.points("streamfsm.route.fallbacks") == {
        (("streamfsm.from_route", "primary"), ("streamfsm.route", "fallback")): 1
    }


async def test_the_breakers_states_and_moves_are_metrics(otel: Otel) -> None:
    """One failure opens the primary's breaker (threshold 1); after the cool-down (whoever asks first moves
    it) it is half open; its probe answers and closes it. Each collection reads the breakers as they stand."""
    answers = iter([(BUSY,), OK])
    async with FaultServer(lambda request: next(answers)) as flaky, FaultServer(OK) as up:
        assert await chain(otel, flaky.base_url, up.base_url) == "fallback"
        assert otel.states("primary") == {"closed": 0, "open": 1, "half_open": 0}
        assert otel.states("fallback") == {"closed": 1, "open": 0, "half_open": 0}
        otel.breakers.state("primary", later())  # the cool-down is over
        assert otel.states("primary") == {"closed": 0, "open": 0, "half_open": 1}
        answered = await chain(otel, flaky.base_url, up.base_url, clock=later)
        assert answered == "primary"  # the probe answered
    assert otel.states("primary") == {"closed": 1, "open": 0, "half_open": 0}
    moves = {
        (dict(key)["streamfsm.breaker.from_state"], dict(key)["streamfsm.breaker.state"]): value
        for key, value in otel.points("streamfsm.breaker.transitions").items()
        if dict(key)["streamfsm.route"] == "primary"
    }
    assert moves == {("closed", "open"): 1, ("open", "half_open"): 1, ("half_open", "closed"): 1}
    assert otel.points("streamfsm.route.fallbacks") == {
        (("streamfsm.from_route", "primary"), ("streamfsm.route", "fallback")): 1
    }


def test_a_record_read_back_with_odd_routes_is_bounded(otel: Otel) -> None:
    tried = [f"r{i}" for i in range(40)] + ["x" * 65, 7]
    record = {"schema": SCHEMA, "route": {"name": "y" * 65, "breaker": "open", "tried": tried}}
    otel.sink(RunRecord.from_dict(record))
    (span,) = otel.spans.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert "streamfsm.route" not in attrs and attrs["streamfsm.breaker.state"] == "open"
    assert attrs["streamfsm.routes_tried"] == tuple(f"r{i}" for i in range(32))
    assert otel.points("streamfsm.route.fallbacks") == {}


def test_no_breaker_yet_is_no_breaker_point(otel: Otel) -> None:
    assert otel.points("streamfsm.breaker.status") == {}
    otel.breakers.admit("only", time.monotonic(), retry=False)
    assert otel.states("only") == {"closed": 1, "open": 0, "half_open": 0}
    assert otel.points("streamfsm.breaker.transitions") == {}


def test_a_route_named_like_a_key_is_redacted_in_the_metrics_as_in_records(otel: Otel) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    otel.breakers.admit(f"acct {secret}", time.monotonic(), retry=False)
    otel.breakers.failed(f"acct {secret}", time.monotonic(), transient=True)  # threshold 1: it opens
    names = {
        dict(key)["streamfsm.route"]
        for metric in ("streamfsm.breaker.status", "streamfsm.breaker.transitions")
        for key in otel.points(metric)
    }
    assert len(names) == 1 and secret not in names.pop()
