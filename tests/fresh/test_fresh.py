"""The fresh held-out set of 2026-12, one test per shape and backend (``shapes.py``; sources and scores in
``SOURCES.md``).

``KNOWN_MISSES`` holds the shapes main still reads otherwise than the set (each explained in SOURCES.md):
strict xfails, so a change that fixes one fails here until its line is removed. ``python -m tests.fresh``
prints the same check as a table with a score; ``--litellm`` scores LiteLLM on the same set.
"""

from __future__ import annotations

import pytest

from tests.fresh.shapes import SHAPES, Shape
from tests.support.scorer import check, param

KNOWN_MISSES: dict[str, str] = {
    # Where our reading and the set's differ, each explained in SOURCES.md ("After").
    "responses-mcp-approval-request": "the approval request is handed out as a call named by its item kind",
    "deepseek-content-exists-risk-400": "'Content Exists Risk' is read by its type: invalid_request",
}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("shape", [param(s, KNOWN_MISSES) for s in SHAPES])
def test_shape(shape: Shape, backend: str) -> None:
    # Each shape on a fault server of its own over loopback; every run is bounded (scorer.RUN_BOUND_S).
    misses = check(shape, backend)
    assert not misses, f"{shape.id} ({shape.root}): {shape.why}; misses: {misses}"


def test_every_known_miss_is_a_shape() -> None:
    assert set(KNOWN_MISSES) <= {s.id for s in SHAPES}
