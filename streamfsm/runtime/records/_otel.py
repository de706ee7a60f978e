"""OpenTelemetry export of finished runs: one GenAI client span, the timeline as span events, and metrics;
and, for a fleet's failures, one log record per failed run (``OtelLogSink``).

``OtelSink`` is a run-record sink (``StreamConfig(sinks=(OtelSink(),))``). Everything it emits is read from
the record alone, which is already redacted: no prompt, output, key or header value reaches a collector that
the JSON record would not carry. It never raises into the runtime, and it reads older or partial records
without complaint (a missing field is a missing attribute). What it cannot emit is counted in
``streamfsm.sink_failures()`` under ``OtelSink`` and reported on ``streamfsm.sinks``: a record it dropped
(the OpenTelemetry SDK raised), and a record with integers outside +-(2**53 - 1), which are left out (the
rest is emitted); such numbers never come from capture, which rejects them, only from records read back.

Conventions: OpenTelemetry GenAI semantic conventions (status Development) as published at
https://opentelemetry.io/docs/specs/semconv/gen-ai/ (``gen-ai-spans``, ``gen-ai-metrics``) and maintained in
github.com/open-telemetry/semantic-conventions-genai (``docs/gen-ai/gen-ai-spans.md``, ``gen-ai-metrics.md``,
``client-inference.md``); names checked against opentelemetry-semantic-conventions 0.66b2. Used from them:

* span: name ``{gen_ai.operation.name} {gen_ai.request.model}`` (the operation alone when the model is
  unknown), kind ``CLIENT``, status ``ERROR`` with a description when the operation ended in an error;
* span attributes: ``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name`` (well-known values
  ``openai``, ``anthropic``, ``gcp.gemini``), ``gen_ai.request.model``, ``gen_ai.request.stream``,
  ``gen_ai.response.id``, ``gen_ai.response.finish_reasons``, ``gen_ai.response.time_to_first_chunk``,
  ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
  ``gen_ai.usage.reasoning.output_tokens``, ``gen_ai.conversation.id``, ``server.address``, ``server.port``,
  ``error.type`` (conditionally required: only when the run failed);
* metrics: ``gen_ai.client.operation.duration`` (histogram, ``s``, with ``error.type`` on failure),
  ``gen_ai.client.operation.time_to_first_chunk`` (histogram, ``s``, streaming calls only),
  ``gen_ai.client.token.usage`` (histogram, ``{token}``, ``gen_ai.token.type`` = ``input`` / ``output``),
  each with the conventions' advisory bucket boundaries.

* log record (``OtelLogSink``, failed runs only): the event ``gen_ai.client.inference.operation.details``
  (``gen-ai-events.md``), with the span's attributes (``error.type`` always set) and none of its opt-in
  content attributes (``gen_ai.input.messages``, ``gen_ai.output.messages``, ...), which a record never holds.

The conventions repository's development draft (``client-inference.md``) renames the metrics to
``gen_ai.client.inference.*``; we follow the published names until that lands in a release.

Ours, under ``streamfsm.*``: the classification (class, summary key, verdict, action, phase, edge, cause,
confidence, states), correlation ids, transport facts, and the counter ``streamfsm.runs`` (every run, by
``streamfsm.class``, ``streamfsm.verdict``, the provider and the model; a finished run counts as class
``completed``).

On the metrics (never the span or the log record), ``gen_ai.request.model`` is bounded (``_labels``: the
first 20 names this sink sees, then ``other``, each at most 64 characters of a safe set), so that clients
naming models at will cannot grow the series without end; ``_metric_attributes`` makes every metric's
attributes, in one place.

Routes (a chain over `Route`, the relay's route table): the span carries ``streamfsm.route`` (where the
attempt went), ``streamfsm.breaker.state`` (the state of its circuit breaker that let it in; ``half_open``:
the probe) and ``streamfsm.routes_tried`` (the routes of the earlier attempts, first tried first, at most 32).
Metrics: ``streamfsm.route.fallbacks`` (counter, from the records: an attempt on another route than the one
before it, by ``streamfsm.from_route`` and ``streamfsm.route``); and, read from the process's circuit breakers
(``Breakers``) whenever the reader collects, ``streamfsm.breaker.status`` (observable gauge: for each route
and each state, 1 for the state its breaker is in and 0 for the others, by ``streamfsm.route`` and
``streamfsm.breaker.state``, as the hardware conventions' ``hw.status`` reports a state) and
``streamfsm.breaker.transitions`` (observable counter: every move since the process started, by
``streamfsm.route``, ``streamfsm.breaker.from_state`` and ``streamfsm.breaker.state``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit

try:
    from opentelemetry import _logs, metrics, trace
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.util.types import AttributeValue
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "streamfsm's OpenTelemetry sink needs the 'otel' extra: pip install 'streamfsm[otel]'"
    ) from exc

from ... import __version__
from ...classify import MASK, redact_text
from ...wire import FORMATS
from ..retry._breaker import BREAKERS, Breakers, BreakerState
from ._labels import BoundedLabel
from ._sinks import count_sink_failure

__all__ = ["OtelLogSink", "OtelSink"]

OPERATION: Final = "chat"
PROVIDER_NAMES: Final[Mapping[str, str]] = {fmt.name: fmt.otel_name for fmt in FORMATS.values()}

# Metric names, units and advisory buckets from gen-ai-metrics.md.
DURATION: Final = "gen_ai.client.operation.duration"
TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
TOKEN_USAGE: Final = "gen_ai.client.token.usage"
RUNS: Final = "streamfsm.runs"
FALLBACKS: Final = "streamfsm.route.fallbacks"
BREAKER_STATUS: Final = "streamfsm.breaker.status"
BREAKER_TRANSITIONS: Final = "streamfsm.breaker.transitions"
# The GenAI event for one inference operation (gen-ai-events.md); its content attributes are opt-in.
OPERATION_DETAILS: Final = "gen_ai.client.inference.operation.details"
_SECONDS_BUCKETS: Final = tuple(0.01 * 2**i for i in range(14))  # 0.01, 0.02, 0.04, ... 81.92
_TOKEN_BUCKETS: Final = tuple(float(4**i) for i in range(14))  # 1, 4, 16, ... 67108864

_NS: Final = 1_000_000_000
# The largest integer a JSON reader, a double and every exporter take exactly (capture's bound too).
_MAX_INT: Final = 2**53 - 1
_RUN_ID_RE: Final = re.compile(r"[0-9A-Za-z_\-]{1,64}")
_MAX_ROUTE_CHARS: Final = 64  # the record's bounds on a route's name and on the routes tried
_MAX_ROUTES_TRIED: Final = 32
_Attrs = dict[str, AttributeValue]


def _section(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = record.get(key)
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and -_MAX_INT <= value <= _MAX_INT:
        return value
    return None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or (isinstance(value, int) and value > _MAX_INT):
        return None  # float() of a 400-digit int raises
    if isinstance(value, (int, float)) and 0 <= value < math.inf:
        return float(value)
    return None


def _out_of_range(value: Any, depth: int = 0) -> int:
    """How many integers in ``value`` (a record, as JSON) lie outside +-_MAX_INT."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int(not -_MAX_INT <= value <= _MAX_INT)
    if depth > 8:  # records nest 4 deep; deeper is no field we read
        return 0
    if isinstance(value, Mapping):
        return sum(_out_of_range(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_out_of_range(v, depth + 1) for v in value)
    return 0


def _run_id(record: Mapping[str, Any]) -> str:
    run_id = _section(record, "ids").get("run_id")
    return run_id if isinstance(run_id, str) and _RUN_ID_RE.fullmatch(run_id) else "?"


def _put(attrs: _Attrs, key: str, value: Any) -> None:
    """Set ``key`` when ``value`` is a plain, present attribute value; anything else is left out."""
    if isinstance(value, (str, bool, int, float)) and value != "":
        attrs[key] = value


def _route_name(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= _MAX_ROUTE_CHARS else None


def _routes_tried(route: Mapping[str, Any]) -> tuple[str, ...]:
    tried = route.get("tried")
    if not isinstance(tried, Sequence) or isinstance(tried, str):
        return ()
    return tuple(name for name in tried[:_MAX_ROUTES_TRIED] if _route_name(name) is not None)


def _start_ns(record: Mapping[str, Any], total_s: float, now_ns: int) -> int:
    started = record.get("started_at")
    if isinstance(started, str):
        try:
            parsed = datetime.fromisoformat(started)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return round(parsed.timestamp() * 1000) * 1_000_000  # the record keeps milliseconds
    return now_ns - round(total_s * _NS)


def _server(endpoint: Any) -> tuple[str | None, int | None]:
    if not isinstance(endpoint, str):
        return None, None
    try:
        parts = urlsplit(endpoint)
        host, port = parts.hostname, parts.port
    except ValueError:  # a bad port, or (since 3.10.16 and 3.11.4) a bracketed host that is no IP address
        return None, None
    if not host or parts.netloc.rpartition("@")[2].startswith(MASK):  # older Pythons: host "redacted"
        return None, None
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    return host, port


class OtelSink:
    """A run-record sink that emits one OpenTelemetry GenAI client span and metrics per run.

    ``tracer_provider`` and ``meter_provider`` default to the global providers. The span is created when the
    record arrives, as a child of the then-current context (the caller's span, when there is one), with the
    run's real start and end times. ``breakers`` (default: the process's, ``BREAKERS``) are the circuit
    breakers whose states and transitions the meter reads at each collection, on ``time.monotonic``, the
    clock ``retrying()`` gives them by default; a meter provider keeps the first sink's breakers.
    """

    __slots__ = (
        "_breakers",
        "_duration",
        "_fallbacks",
        "_models",
        "_runs",
        "_time_to_first_chunk",
        "_token_usage",
        "_tracer",
    )

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        breakers: Breakers | None = None,
    ) -> None:
        self._tracer = trace.get_tracer("streamfsm", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("streamfsm", __version__, meter_provider=meter_provider)
        self._duration = meter.create_histogram(
            DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self._time_to_first_chunk = meter.create_histogram(
            TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streaming response.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self._token_usage = meter.create_histogram(
            TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self._runs = meter.create_counter(
            RUNS,
            unit="{run}",
            description="Finished and failed runs, by failure class, retry verdict, provider and model.",
        )
        self._models = BoundedLabel()
        self._fallbacks = meter.create_counter(
            FALLBACKS, unit="{attempt}", description="Attempts sent to another route than the attempt before."
        )
        self._breakers = BREAKERS if breakers is None else breakers
        meter.create_observable_gauge(
            BREAKER_STATUS,
            callbacks=[self._breaker_status],
            unit="1",
            description="Each route's circuit breaker: 1 for the state it is in, 0 for the others.",
        )
        meter.create_observable_counter(
            BREAKER_TRANSITIONS,
            callbacks=[self._breaker_transitions],
            unit="{transition}",
            description="Moves of each route's circuit breaker from one state to another.",
        )

    def __repr__(self) -> str:
        return "OtelSink()"

    def __call__(self, record: Mapping[str, Any]) -> None:
        try:
            self._emit(record)
        except Exception as exc:
            # Like the sink deliverer: the class only, never the text, which may quote data.
            what = f"raised {type(exc).__name__}; the record did not reach it"
            count_sink_failure("OtelSink", _run_id(record), what)
            return
        huge = _out_of_range(record)
        if huge:
            what = f"{huge} integer(s) beyond 2**53 - 1 were left out of the span and metrics"
            count_sink_failure("OtelSink", _run_id(record), what)

    # -- emitting -------------------------------------------------------------------------------------------

    def _emit(self, record: Mapping[str, Any]) -> None:
        outcome = _section(record, "outcome")
        retry = _section(record, "retry")
        timings = _section(record, "timings")
        klass = _str(outcome.get("class")) or "unknown"
        # A local abort (the user pressed stop, the app cancelled) is a choice, not an error: it is counted
        # by class below but leaves the span status unset and carries no error.type.
        error_type = _error_type(record)

        common = self._common(record)
        total_s = _seconds(timings.get("total_s")) or 0.0
        first_chunk_s = _seconds(timings.get("to_first_progress_s"))

        self._span(record, common, error_type, total_s, first_chunk_s)

        metric_attrs = self._metric_attributes(common)
        duration_attrs = dict(metric_attrs)
        _put(duration_attrs, "error.type", error_type)
        self._duration.record(total_s, duration_attrs)
        if first_chunk_s is not None:
            self._time_to_first_chunk.record(first_chunk_s, metric_attrs)
        tokens = _section(record, "tokens")
        for token_type in ("input", "output"):
            count = _int(tokens.get(token_type))
            if count is not None and count >= 0:
                self._token_usage.record(count, {**metric_attrs, "gen_ai.token.type": token_type})
        run_attrs: _Attrs = {
            "streamfsm.class": klass,
            "streamfsm.verdict": _str(retry.get("verdict")) or "unknown",
        }
        for key in ("gen_ai.provider.name", "gen_ai.request.model"):
            _put(run_attrs, key, metric_attrs.get(key))
        self._runs.add(1, run_attrs)
        self._count_fallback(record)

    def _count_fallback(self, record: Mapping[str, Any]) -> None:
        """An attempt on another route than the attempt before it (the last of the record's links)."""
        to = _route_name(_section(record, "route").get("name"))
        attempts = record.get("attempts")
        if to is None or not isinstance(attempts, Sequence) or not attempts:
            return
        before = attempts[-1]
        came_from = _route_name(before.get("route")) if isinstance(before, Mapping) else None
        if came_from is not None and came_from != to:
            self._fallbacks.add(1, {"streamfsm.from_route": came_from, "streamfsm.route": to})

    # -- the circuit breakers, read at each collection ----------------------------------------------------

    # A breaker's route is named as the records name it (redacted), so that spans and metrics agree.

    def _breaker_status(self, options: CallbackOptions) -> Iterator[Observation]:
        for breaker in self._breakers.snapshot(time.monotonic()):
            route = redact_text(breaker.route, limit=_MAX_ROUTE_CHARS)
            for state in BreakerState:
                attrs = {"streamfsm.route": route, "streamfsm.breaker.state": state.value}
                yield Observation(int(breaker.state is state), attrs)

    def _breaker_transitions(self, options: CallbackOptions) -> Iterator[Observation]:
        for breaker in self._breakers.snapshot(time.monotonic()):
            for (before, after), count in breaker.moves.items():
                attrs = {
                    "streamfsm.route": redact_text(breaker.route, limit=_MAX_ROUTE_CHARS),
                    "streamfsm.breaker.from_state": before.value,
                    "streamfsm.breaker.state": after.value,
                }
                yield Observation(count, attrs)

    def _metric_attributes(self, common: _Attrs) -> _Attrs:
        """The attributes every metric shares: the span's common ones, the model bounded."""
        attrs = dict(common)
        model = self._models(attrs.pop("gen_ai.request.model", None))
        _put(attrs, "gen_ai.request.model", model)
        return attrs

    @staticmethod
    def _common(record: Mapping[str, Any]) -> _Attrs:
        """The attributes spans and metrics share: operation, provider, model, server."""
        attrs: _Attrs = {"gen_ai.operation.name": OPERATION}
        provider = _str(record.get("provider"))
        _put(attrs, "gen_ai.provider.name", PROVIDER_NAMES.get(provider, provider) if provider else None)
        _put(attrs, "gen_ai.request.model", _str(record.get("model")))
        host, port = _server(record.get("endpoint"))
        if host is not None:
            attrs["server.address"] = host
            _put(attrs, "server.port", port)
        return attrs

    def _span(
        self,
        record: Mapping[str, Any],
        common: _Attrs,
        error_type: str | None,
        total_s: float,
        first_chunk_s: float | None,
    ) -> None:
        now_ns = time.time_ns()
        start_ns = _start_ns(record, total_s, now_ns)
        end_ns = start_ns + round(total_s * _NS)
        model = common.get("gen_ai.request.model")
        name = f"{OPERATION} {model}" if model else OPERATION
        attrs = {**common, **self._span_attributes(record)}
        _put(attrs, "gen_ai.response.time_to_first_chunk", first_chunk_s)
        _put(attrs, "error.type", error_type)

        span = self._tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attrs, start_time=start_ns)
        try:
            for event_name, event_attrs, offset_s in _events(record):
                span.add_event(event_name, event_attrs, timestamp=start_ns + round(offset_s * _NS))
            if error_type is not None:
                title = _str(_section(record, "summary").get("title"))
                span.set_status(Status(StatusCode.ERROR, title or error_type))
        finally:
            span.end(end_time=end_ns)

    @staticmethod
    def _span_attributes(record: Mapping[str, Any]) -> _Attrs:
        ids = _section(record, "ids")
        outcome = _section(record, "outcome")
        retry = _section(record, "retry")
        tokens = _section(record, "tokens")
        finish = _section(record, "finish_reason")
        transport = _section(record, "transport")
        abort = _section(record, "abort")
        attrs: _Attrs = {"gen_ai.request.stream": True}
        _put(attrs, "gen_ai.response.id", _str(ids.get("response_id")))
        raw_finish = _str(finish.get("raw"))
        if raw_finish is not None:
            attrs["gen_ai.response.finish_reasons"] = (raw_finish,)
        _put(attrs, "gen_ai.conversation.id", _str(ids.get("session_id")))
        for key, name in (
            ("input", "gen_ai.usage.input_tokens"),
            ("output", "gen_ai.usage.output_tokens"),
            ("cached", "gen_ai.usage.cache_read.input_tokens"),
            ("reasoning", "gen_ai.usage.reasoning.output_tokens"),
        ):
            _put(attrs, name, _int(tokens.get(key)))

        for key in ("class", "summary_key", "phase", "edge", "cause", "confidence", "state", "from_state"):
            _put(attrs, f"streamfsm.{key}", _str(outcome.get(key)))
        for key in ("verdict", "action"):
            _put(attrs, f"streamfsm.{key}", _str(retry.get(key)))
        _put(attrs, "streamfsm.retry_after_s", _seconds(retry.get("retry_after_s")))
        for key in ("run_id", "trace_id", "message_id", "previous_run_id", "provider_request_id"):
            _put(attrs, f"streamfsm.{key}", _str(ids.get(key)))
        _put(attrs, "streamfsm.attempt", _int(ids.get("attempt")))
        _put(attrs, "streamfsm.provider", _str(record.get("provider")))
        _put(attrs, "streamfsm.finish_reason", _str(finish.get("unified")))
        _put(attrs, "streamfsm.transport.kind", _str(transport.get("kind")))
        _put(attrs, "streamfsm.http.status_code", _int(transport.get("status")))
        _put(attrs, "streamfsm.watchdog.fired", _str(_section(record, "watchdog").get("fired")))
        _put(attrs, "streamfsm.abort.source", _str(abort.get("source")))
        _put(attrs, "streamfsm.timeline.omitted", _int(_section(record, "timeline").get("omitted")))
        route = _section(record, "route")
        _put(attrs, "streamfsm.route", _route_name(route.get("name")))
        _put(attrs, "streamfsm.breaker.state", _str(route.get("breaker")))
        tried = _routes_tried(route)
        if tried:
            attrs["streamfsm.routes_tried"] = tried
        return attrs


def _error_type(record: Mapping[str, Any]) -> str | None:
    """``error.type`` of a run that failed (our summary key, else the class, else ``_OTHER``); None for a
    finished run or a local abort (someone chose to stop: not an error)."""
    outcome = _section(record, "outcome")
    known_class = _str(outcome.get("class"))
    if (known_class or "unknown") in ("completed", "local_abort"):
        return None
    return _str(outcome.get("summary_key")) or known_class or "_OTHER"


class OtelLogSink:
    """A run-record sink that emits one OpenTelemetry log record per **failed** run, the GenAI event
    ``gen_ai.client.inference.operation.details``, so that a fleet's failures reach an OpenTelemetry
    Collector (and from it any backend) beside or without the spans.

    The record: severity ``WARN``, body the run's plain summary, timestamp the run's end, the attributes
    of the run's span (``OtelSink``: GenAI conventions and ``streamfsm.*``) plus the correlation context
    (``streamfsm.context.request_id``, ``.route``, ``.account``, ...). Finished runs and local aborts emit
    nothing. ``logger_provider`` defaults to the global one; give it a ``BatchLogRecordProcessor`` so
    that exporting happens off the thread that ends the run. Per run, never per event; never raises.
    """

    __slots__ = ("_logger",)

    def __init__(self, logger_provider: _logs.LoggerProvider | None = None) -> None:
        self._logger = _logs.get_logger("streamfsm", __version__, logger_provider=logger_provider)

    def __repr__(self) -> str:
        return "OtelLogSink()"

    def __call__(self, record: Mapping[str, Any]) -> None:
        try:
            self._emit(record)
        except Exception as exc:
            what = f"raised {type(exc).__name__}; the record did not reach it"
            count_sink_failure("OtelLogSink", _run_id(record), what)

    def _emit(self, record: Mapping[str, Any]) -> None:
        error_type = _error_type(record)
        if error_type is None:
            return
        attrs: _Attrs = {**OtelSink._common(record), **OtelSink._span_attributes(record)}
        attrs["error.type"] = error_type
        timings = _section(record, "timings")
        _put(attrs, "gen_ai.response.time_to_first_chunk", _seconds(timings.get("to_first_progress_s")))
        context = _section(_section(record, "ids"), "context")
        for key, value in list(context.items())[:16]:  # capture keeps it small already
            if isinstance(key, str):
                _put(attrs, f"streamfsm.context.{key}", _str(value))
        total_s = _seconds(timings.get("total_s")) or 0.0
        now_ns = time.time_ns()
        end_ns = _start_ns(record, total_s, now_ns) + round(total_s * _NS)
        title = _str(_section(record, "summary").get("title"))
        self._logger.emit(
            timestamp=end_ns,
            observed_timestamp=now_ns,
            severity_number=SeverityNumber.WARN,
            severity_text="WARN",
            body=title or error_type,
            attributes=attrs,
            event_name=OPERATION_DETAILS,
        )


def _events(record: Mapping[str, Any]) -> list[tuple[str, _Attrs, float]]:
    """The timeline's entries as (name, attributes, offset in seconds), in order (bounded, as it is)."""
    entries = _section(record, "timeline").get("entries")
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return []
    out: list[tuple[str, _Attrs, float]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = _str(entry.get("event"))
        offset = _seconds(entry.get("t"))
        if name is None or offset is None:
            continue
        attrs: _Attrs = {"streamfsm.n": _int(entry.get("n")) or 1}
        _put(attrs, "streamfsm.state", _str(entry.get("state")))
        _put(attrs, "streamfsm.t_last_s", _seconds(entry.get("t_last")))
        out.append((name, attrs, offset))
    return out
