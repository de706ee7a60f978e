"""Score issue 33's fresh set (``shapes.py``) with the held-out sets' scorer (``tests/support/scorer.py``):
the same fault server, runs, observations and predicates, given this set."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import anyio

from tests.fresh.shapes import SHAPES
from tests.support.scorer import judge, observe_all, report

__all__ = ["main"]


def main(argv: Sequence[str] = ()) -> int:
    """``-v``: every row's observation; ``--trio``: play on trio; ``--litellm``: play through LiteLLM instead
    (run with the interpreter of the venv LiteLLM is installed in)."""
    if "--litellm" in argv:
        from tests.fresh.litellm_score import observe_all_litellm

        results = anyio.run(observe_all_litellm, SHAPES)
    else:
        results = anyio.run(observe_all, SHAPES, backend="trio" if "--trio" in argv else "asyncio")
    clean = sum(s.expect.clean for s in SHAPES)
    print(f"{len(SHAPES)} shapes, {clean} clean successes")
    report(results, judge, "-v" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
