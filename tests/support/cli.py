"""The ``streamfsm`` command run in this process, as a user types it."""

from __future__ import annotations

import argparse

import pytest

from streamfsm.cli import _harness as cli_harness
from streamfsm.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``streamfsm ARGV``: the exit code, then what it printed to stdout and to stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def harness(*argv: str) -> int:
    """``streamfsm harness ARGV`` through the command's own parser; its exit code."""
    parser = argparse.ArgumentParser(prog="streamfsm")
    cli_harness.add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["harness", *argv])
    code: int = args.run(args)
    return code
