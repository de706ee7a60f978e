"""OpenTelemetry export (extra ``otel``): ``from streamfsm.otel import OtelLogSink, OtelSink``.

Kept out of ``streamfsm`` and ``streamfsm.runtime`` so that importing them never loads OpenTelemetry.
"""

from .runtime import OtelLogSink, OtelSink

__all__ = ["OtelLogSink", "OtelSink"]
