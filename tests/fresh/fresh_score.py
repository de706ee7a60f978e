"""Score issue 33's fresh set (``shapes.py``) with the issue-29 scorer's machinery (``tests/heldout``): the
same fault server, runs, observations and predicates, given this set."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

_HELDOUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "heldout")
if _HELDOUT not in sys.path:
    sys.path.insert(0, _HELDOUT)

import anyio  # noqa: E402
from heldout_score import judge, observe_all, report  # noqa: E402
from shapes import SHAPES, Shape  # noqa: E402

__all__ = ["check", "main"]


def check(shape: Shape, backend: str = "asyncio") -> list[str]:
    """Play one shape on a fault server of its own, on ``backend``; the misses in words."""
    ((_, seen),) = anyio.run(observe_all, [shape], backend=backend)
    return judge(shape, seen)


def main(argv: Sequence[str] = ()) -> int:
    """``-v``: every row's observation; ``--trio``: play on trio; ``--litellm``: play through LiteLLM instead
    (run with the interpreter of the venv LiteLLM is installed in)."""
    if "--litellm" in argv:
        from litellm_score import observe_all_litellm

        results = anyio.run(observe_all_litellm, SHAPES)
    else:
        results = anyio.run(observe_all, SHAPES, backend="trio" if "--trio" in argv else "asyncio")
    clean = sum(s.expect.clean for s in SHAPES)
    print(f"{len(SHAPES)} shapes, {clean} clean successes")
    report(results, judge, "-v" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
