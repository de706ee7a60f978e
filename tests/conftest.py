"""Hypothesis profiles: ``dev`` locally, ``ci`` when ``CI=true``. Neither has a deadline: a deadline is a
wall-clock assertion, and a loaded machine stalls any example now and then (one that replays in 20 ms took
284 ms and failed test_soundness_of_safe_auto_retry as "Unreliable test timings")."""

from __future__ import annotations

import importlib.metadata
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_default = "ci" if os.environ.get("CI") == "true" else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or _default)

# The project's own tests use its pytest plugin (the ``fault_provider`` fixture). Installed, pytest loads it
# through the ``pytest11`` entry point; from a plain checkout, load it here (never twice).
_PLUGIN = "streamfsm.testing.pytest_plugin"
if not any(ep.value == _PLUGIN for ep in importlib.metadata.entry_points(group="pytest11")):
    pytest_plugins = [_PLUGIN]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every ``@pytest.mark.anyio`` test runs on both backends."""
    backend: str = request.param
    return backend
