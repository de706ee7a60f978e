"""Hypothesis strategies shared by the property suites. They live in the package (the test kit users get,
``streamfsm.testing.strategies``); this module keeps the suites' imports short."""

from __future__ import annotations

from streamfsm.testing.strategies import (
    ALL_TRIGGERS,
    FAILURES,
    DriveStep,
    accepted,
    drive,
    facts,
    provider_errors,
    tool_names,
    transport_facts,
    trigger_sequences,
)

Step = DriveStep

__all__ = [
    "ALL_TRIGGERS",
    "FAILURES",
    "Step",
    "accepted",
    "drive",
    "facts",
    "provider_errors",
    "tool_names",
    "transport_facts",
    "trigger_sequences",
]
