"""The relay's Prometheus metrics at ``/admin/metrics`` (the ``metrics`` extra: ``prometheus_client``).

Fed per run, never per event: ``RelayMetrics.record`` is the last of the relay's sinks (one record per
stream, after the logs took it), and ``in_flight`` brackets each relayed exchange. Served behind the admin
pages' rule (``_admin``). The metrics::

    streamfsm_relay_streams_total{close_kind, summary_key, model}   relayed streams, by how they closed
    streamfsm_relay_time_to_first_token_seconds{model}              until the first token of any kind
    streamfsm_relay_stream_duration_seconds{model}                  a stream's whole time
    streamfsm_relay_in_flight                                   exchanges being relayed now
    streamfsm_run_records_total                                 run records handed to the sinks
    streamfsm_run_records_dropped_total{sink}                   records a sink failed to take
                                                                (``streamfsm.sink_failures()``)

Several worker processes (``streamfsm relay --workers N``): each process counts its own. The command then
runs prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, a fresh folder unless the
operator set one), so that a scrape of any worker answers the sum over all of them; the in-flight gauge
sums the live processes. Without it, a scrape would see one worker at random.

``model`` is bounded (``runtime.records._labels``: the first 20 names each process sees, then ``other``;
``none``
without one). The labels every run-fed metric carries are ``RUN_LABELS``, set in ``run_labels``: one place.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from ..runtime import BoundedLabel, sink_failures

__all__ = ["CONTENT_TYPE", "RelayMetrics", "relay_metrics"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
# A stream's seconds, first token to a long answer (the OTel sink's GenAI buckets, 0.01 s to 82 s).
_SECONDS_BUCKETS: Final = (*(0.01 * 2**i for i in range(14)), float("inf"))
_MULTIPROCESS_ENV: Final = ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")
# The labels of every metric fed by a run's record, beyond its own (``RelayMetrics.run_labels``).
RUN_LABELS: Final = ("model",)


def multiprocess() -> bool:
    """Whether prometheus_client runs in multiprocess mode (it decides from the environment at import)."""
    return any(os.environ.get(name) for name in _MULTIPROCESS_ENV)


def relay_metrics() -> RelayMetrics | None:
    """The metrics of one relay, or None without the ``metrics`` extra."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return None
    return RelayMetrics()


class RelayMetrics:
    """One relay's metrics, in a registry of its own (several relays may share a process)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.streams = Counter(
            "streamfsm_relay_streams",
            "Relayed streams, by close kind and summary key.",
            ["close_kind", "summary_key", *RUN_LABELS],
            registry=reg,
        )
        self.first_token = Histogram(
            "streamfsm_relay_time_to_first_token_seconds",
            "Seconds from the request to the first token of any kind (text, reasoning or tool input).",
            RUN_LABELS,
            buckets=_SECONDS_BUCKETS,
            registry=reg,
        )
        self.duration = Histogram(
            "streamfsm_relay_stream_duration_seconds",
            "Seconds from the request to the stream's end, however it ended.",
            RUN_LABELS,
            buckets=_SECONDS_BUCKETS,
            registry=reg,
        )
        self.in_flight_gauge = Gauge(
            "streamfsm_relay_in_flight",
            "Exchanges being relayed now.",
            registry=reg,
            multiprocess_mode="livesum",
        )
        self.records = Counter(
            "streamfsm_run_records", "Run records handed to the relay's sinks.", registry=reg
        )
        self.dropped = Counter(
            "streamfsm_run_records_dropped",
            "Run records a sink failed to take (streamfsm.sink_failures()), by sink.",
            ["sink"],
            registry=reg,
        )
        self._models = BoundedLabel()
        self._lock = threading.Lock()
        self._failures_seen = sink_failures()  # what failed before this relay is not its to count
        self._routes: Any = None  # a route table's book (``_fallback``) and its metrics

    def watch_routes(self, book: Any) -> None:
        """Count a route table's breakers and fallbacks too (``_route_metrics``)."""
        from ._route_metrics import RouteMetrics

        metrics = RouteMetrics(self.registry)
        self._routes = (book, metrics)
        book.watchers.append(metrics.sync)
        metrics.sync(book)

    def record(self, record: Mapping[str, Any]) -> None:
        """The sink: count one finished run (a few increments; nothing per event)."""
        relay = record.get("relay") or {}
        outcome = record.get("outcome") or {}
        timings = record.get("timings") or {}
        close = relay.get("close") or "none"
        labels = self.run_labels(record)
        self.streams.labels(
            close_kind=close, summary_key=outcome.get("summary_key") or "none", **labels
        ).inc()
        first = timings.get("to_first_progress_s")
        if isinstance(first, (int, float)):
            self.first_token.labels(**labels).observe(first)
        total = timings.get("total_s")
        if isinstance(total, (int, float)):
            self.duration.labels(**labels).observe(total)
        self.records.inc()
        self.sync_dropped()

    def run_labels(self, record: Mapping[str, Any]) -> dict[str, str]:
        """The ``RUN_LABELS`` of one run's record, each bounded."""
        return {"model": self._models(record.get("model")) or "none"}

    @contextmanager
    def in_flight(self) -> Iterator[None]:
        self.in_flight_gauge.inc()
        try:
            yield
        finally:
            self.in_flight_gauge.dec()

    def sync_dropped(self) -> None:
        """Bring the dropped counter up to ``sink_failures()`` (process-wide counts since start)."""
        now = sink_failures()
        with self._lock:
            for sink, count in now.items():
                seen = self._failures_seen.get(sink, 0)
                if count > seen:
                    self.dropped.labels(sink=sink).inc(count - seen)
                    self._failures_seen[sink] = count

    def exposition(self) -> bytes:
        """The text format a Prometheus server scrapes: this relay's, or in multiprocess mode all workers'."""
        from prometheus_client import CollectorRegistry, generate_latest

        self.sync_dropped()
        if self._routes is not None:
            book, metrics = self._routes
            metrics.sync(book)
        if not multiprocess():
            return generate_latest(self.registry)
        from prometheus_client.multiprocess import MultiProcessCollector

        merged = CollectorRegistry()
        MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
