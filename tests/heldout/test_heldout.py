"""The held-out set of issue 29, one test per shape (``heldout_shapes.py``, sources in ``SOURCES.md``).

The set scored 21/54 before the fixes of issue 29 and 53/54 after (``SOURCES.md``). A shape that still misses
is listed in ``KNOWN_MISSES`` with the reason it is left so; it must keep missing (strict), so a change that
fixes it says so. ``python -m tests.heldout`` prints the same check as a table with a score.
"""

from __future__ import annotations

import pytest

from tests.heldout.heldout_shapes import SHAPES, Shape
from tests.support.scorer import check, param

KNOWN_MISSES = {
    "chat-chunk-message-instead-of-delta": (
        "a stream chunk carrying a whole 'message' where a 'delta' is due is documented by no provider: its "
        "content is counted as unread (completed.unread_content, low confidence), never guessed into text"
    ),
}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("shape", [param(s, KNOWN_MISSES) for s in SHAPES])
def test_shape(shape: Shape, backend: str) -> None:
    # Each shape on a fault server of its own over loopback; every run is bounded (scorer.RUN_BOUND_S).
    misses = check(shape, backend)
    assert not misses, f"{shape.id} ({shape.root}): {shape.why}; misses: {misses}"
