"""Metric label values from records, bounded: the relay's Prometheus metrics and the OpenTelemetry sink's.

A model name is whatever a client put in its request body, so a label of it could grow one series per
request. ``BoundedLabel`` keeps the first ``MAX_MODELS`` distinct values it sees (per process, per metrics
object: a series once exported stays, so the first come keep their names) and names every later one
``other``. Each value is sanitized first: at most 64 characters of ``A-Z a-z 0-9 . _ - : / @ +`` (model
names as providers spell them: ``gpt-4o-mini``, ``models/gemini-2.0-flash``,
``anthropic.claude-3-5-sonnet-20241022-v2:0``), any other character as ``_``.
"""

from __future__ import annotations

import re
import threading
from typing import Final

__all__ = ["MAX_MODELS", "OTHER", "BoundedLabel", "sanitized"]

MAX_MODELS: Final = 20
"""The most model names a metric labels by name; the rest are ``other``."""
OTHER: Final = "other"
MAX_LABEL_CHARS: Final = 64
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._\-:/@+]")


def sanitized(value: str) -> str:
    """``value`` as a label value: cut to ``MAX_LABEL_CHARS``, characters outside the set as ``_``."""
    return _UNSAFE.sub("_", value[:MAX_LABEL_CHARS])


class BoundedLabel:
    """A label of at most ``limit`` distinct values (then ``other``), from values sanitized; thread-safe."""

    __slots__ = ("_lock", "_seen", "limit")

    def __init__(self, limit: int = MAX_MODELS) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: object) -> str | None:
        """The label value of ``value`` (None for no value: a record without a model)."""
        if not isinstance(value, str) or not value:
            return None
        label = sanitized(value)
        if label in self._seen:  # a set's membership test needs no lock
            return label
        with self._lock:
            if label in self._seen or len(self._seen) < self.limit:
                self._seen.add(label)
                return label
        return OTHER
