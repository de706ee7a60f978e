"""streamfsm: play fault scenarios, probe a provider, diagnose and report run records, draw the machine."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._common import EXIT_CODES, epilog

_SIGPIPE_EXIT = 141  # what a shell reports for a tool that SIGPIPE ended: 128 + 13


def _diagram(args: argparse.Namespace) -> int:
    from ..diagrams import DiagramError, stale_diagrams, write_diagrams

    out = Path(args.out)
    if args.check:
        stale = stale_diagrams(out)
        for name in stale:
            if "(cannot check" in name:
                print(f"not checked: {out / name}", file=sys.stderr)
            elif not (out / name).is_file():
                print(f"missing: {out / name}", file=sys.stderr)
            else:
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
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="streamfsm",
        description=__doc__,
        epilog=EXIT_CODES + "\n\n'streamfsm COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamfsm {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    diagram = commands.add_parser(
        "diagram",
        help="write the state diagrams and classification table",
        description="Write the machine's state diagrams (Mermaid, DOT) and its (state, edge) -> class,"
        " verdict, action table, generated from the declaration; --check compares instead of writing.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diagram.add_argument("--out", default="diagrams", help="folder to write (default: diagrams)")
    diagram.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming each missing or stale file"
    )
    diagram.set_defaults(run=_diagram)

    from . import _fault_server, _harness, _logs, _probe, _relay, _store

    _harness.add_commands(commands)
    _fault_server.add_commands(commands)
    _probe.add_commands(commands)
    _logs.add_commands(commands)
    _relay.add_commands(commands)
    _store.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # inside the try: a reader that left early fails this flush
    except BrokenPipeError:
        # The reader (head, less) has what it wanted: stop quietly, as Unix tools do. Point stdout at
        # devnull so that the interpreter's own flush at exit does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return _SIGPIPE_EXIT
    return code
