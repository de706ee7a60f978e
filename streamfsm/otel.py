"""OpenTelemetry export (extra ``otel``): ``from streamfsm.otel import OtelSink``.

Kept out of ``streamfsm`` and ``streamfsm.runtime`` so that importing them never loads OpenTelemetry.
"""

from .runtime._otel import OtelSink

__all__ = ["OtelSink"]
