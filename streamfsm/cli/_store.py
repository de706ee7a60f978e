"""``streamfsm store``: keep the run store (``streamfsm.store``) beside the logs.

``rebuild`` empties the store and indexes the logs again (the logs are the source of truth: after a crash,
a dropped record or a change of retention, this makes the index whole); ``add`` indexes logs into it as
they are; ``prune`` applies a retention. Exit codes: 0 done, 1 a log or the store cannot be read, 2 bad
usage.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone

from ._common import epilog

_RAW = argparse.RawDescriptionHelpFormatter


def _older_than(text: str) -> datetime:
    from ._logs import parse_since

    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _index(args: argparse.Namespace) -> int:
    from ..runtime import LogProblem
    from ..store import Store, StoreUnavailable, safe_label

    label = safe_label(args.store)
    skipped = 0

    def problem(found: LogProblem) -> None:
        nonlocal skipped
        skipped += 1

    try:
        with Store.open(args.store) as store:
            if args.command_name == "rebuild":
                read = store.rebuild(
                    args.logs, rotated=args.rotated, since=args.retention, on_problem=problem
                )
            else:
                read = store.add_logs(
                    args.logs, rotated=args.rotated, since=args.retention, on_problem=problem
                )
            count = store.count()
    except StoreUnavailable as exc:  # it names the store and why
        print(f"streamfsm store: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"streamfsm store: cannot read: {exc.strerror or type(exc).__name__}", file=sys.stderr)
        return 1
    except Exception as exc:  # the database refused (psycopg's and sqlite3's errors)
        print(f"streamfsm store: cannot write {label}: {type(exc).__name__}", file=sys.stderr)
        return 1
    unread = f"; {skipped} unreadable parts skipped" if skipped else ""
    print(f"streamfsm store: read {read} records; {count} runs in {label}{unread}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    from ..store import Store, StoreUnavailable, safe_label

    try:
        with Store.open(args.store) as store:
            gone = store.prune(args.older_than)
            count = store.count()
    except StoreUnavailable as exc:
        print(f"streamfsm store: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the database refused (psycopg's and sqlite3's errors)
        print(
            f"streamfsm store: cannot prune {safe_label(args.store)}: {type(exc).__name__}", file=sys.stderr
        )
        return 1
    when = args.older_than.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    print(f"streamfsm store: forgot {gone} runs started before {when}; {count} runs kept")
    return 0


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``store`` (``rebuild``, ``add``, ``prune``) to the ``streamfsm`` command line."""
    store = commands.add_parser(
        "store",
        help="index run logs in a store (SQLite or PostgreSQL) for report, diagnose and the errors page",
        description=__doc__.split("\n\n")[0].replace("``", "'") if __doc__ else None,
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = store.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, what in (
        ("rebuild", "empty the store, then index the logs (audit and error logs: each run once)"),
        ("add", "index the logs into the store as it is (a run already there takes the later record)"),
    ):
        action = actions.add_parser(name, help=what, description=what, epilog=epilog(), formatter_class=_RAW)
        action.add_argument(
            "--from", dest="logs", nargs="+", required=True, metavar="LOG", help="JSON-lines logs"
        )
        action.add_argument(
            "--store", required=True, metavar="URL", help="sqlite:///PATH or postgresql://..."
        )
        action.add_argument(
            "--retention",
            type=_older_than,
            metavar="T",
            help="skip runs started before T: 30d, 12h, or an ISO time",
        )
        action.add_argument(
            "--no-rotated", dest="rotated", action="store_false", help="ignore LOG.1, LOG.2, …"
        )
        action.set_defaults(run=_index, command_name=name)
    prune = actions.add_parser(
        "prune",
        help="retention: forget runs started before a time (to the hour)",
        epilog=epilog(),
        formatter_class=_RAW,
    )
    prune.add_argument("--store", required=True, metavar="URL", help="sqlite:///PATH or postgresql://...")
    prune.add_argument(
        "--older-than", required=True, type=_older_than, metavar="T", help="30d, 12h, or an ISO time"
    )
    prune.set_defaults(run=_prune)
