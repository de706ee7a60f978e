"""streamfsm: play fault scenarios, probe a provider, diagnose and report run records, draw the machine."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _diagram(args: argparse.Namespace) -> int:
    from .._diagrams import DiagramError, stale_diagrams, write_diagrams

    out = Path(args.out)
    if args.check:
        stale = stale_diagrams(out)
        for name in stale:
            print(f"stale: {out / name}", file=sys.stderr)
        return 1 if stale else 0
    try:
        paths = write_diagrams(out)
    except DiagramError as exc:
        print(f"streamfsm diagram: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamfsm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    diagram = commands.add_parser("diagram", help="write the state diagrams and classification table")
    diagram.add_argument("--out", default="diagrams", help="folder to write (default: diagrams)")
    diagram.add_argument("--check", action="store_true", help="exit 1 if the folder is not fresh")
    diagram.set_defaults(run=_diagram)

    from . import _harness, _logs, _probe, _relay

    _harness.add_commands(commands)
    _probe.add_commands(commands)
    _logs.add_commands(commands)
    _relay.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code
