"""Hypothesis profiles: ``dev`` locally, ``ci`` when ``CI=true`` (no deadline: shared runners stall)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_default = "ci" if os.environ.get("CI") == "true" else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or _default)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every ``@pytest.mark.anyio`` test runs on both backends."""
    backend: str = request.param
    return backend
