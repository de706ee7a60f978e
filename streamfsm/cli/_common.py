"""What every command shares: exit codes, argument types, fitting a table to the terminal."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from typing import Final

EXIT_CODES: Final = """exit status:
  0  done (harness: every outcome matched; probe: the stream finished; diagram --check: fresh)
  1  the answer is no: no readable record, no record with that run id, a mismatched scenario,
     a failed stream, stale or missing diagrams
  2  usage: a bad option or value, an ambiguous run id prefix, an unusable URL, a missing extra
  3  relay, fault-server: the server could not start (the port is in use, the address is not this host's)
  141 standard output was closed early (e.g. piped into head)"""
"""The same kind of mistake gets the same code in every command."""

STARTUP_FAILED: Final = 3  # uvicorn's own exit status when its server cannot start; the relay keeps it

DEFAULT_WIDTH: Final = 100


def epilog(extra: str = "") -> str:
    return (extra + "\n\n" if extra else "") + EXIT_CODES


def positive_seconds(text: str) -> float:
    """A positive, finite number of seconds (a zero or negative bound would end every run at once)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text!r}")
    return value


def non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def table_width(wide: bool) -> int | None:
    """The width to fit a table's last column to: the terminal's (or $COLUMNS), None with ``--wide`` or
    into a pipe or a file (print it whole there)."""
    if wide:
        return None
    return shutil.get_terminal_size((0, 0)).columns or None


def fit(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…"


def fit_table(
    rows: list[tuple[str, ...]], width: int | None, drops: Sequence[str], min_last: int = 20
) -> list[str]:
    """``rows`` (the first is the header) as aligned lines; with ``width``, the columns named in ``drops``
    are given up in that order until the others leave ``min_last`` for the last column, which is then cut
    to fit. The first column is right-aligned (a count)."""
    keep = list(range(len(rows[0])))

    def widths() -> dict[int, int]:
        return {i: max(len(r[i]) for r in rows) for i in keep}

    w = widths()
    if width:
        for name in drops:
            if sum(w[i] for i in keep[:-1]) + 2 * (len(keep) - 1) + min_last <= width:
                break
            if name in rows[0]:
                keep.remove(rows[0].index(name))
                w = widths()
        w[keep[-1]] = max(min_last, width - sum(w[i] for i in keep[:-1]) - 2 * (len(keep) - 1))
    lines = []
    for r in rows:
        cells = [f"{r[keep[0]]:>{w[keep[0]]}}"]
        cells += [fit(r[i], w[i]).ljust(w[i]) for i in keep[1:]]
        lines.append("  ".join(cells).rstrip())
    return lines
