"""streamfsm harness: every catalog scenario against the local fault provider, as a table.

    streamfsm harness                                  # every scenario, through our own client
    streamfsm harness --sdk                            # and through the openai / anthropic SDKs + wrap()
    streamfsm harness --via tap                        # the SDKs' own iteration over a tap client
    streamfsm harness --format anthropic --scenario '*/tool-*'
    streamfsm harness --json records.jsonl             # every run record, one JSON object per line
    streamfsm harness --scenario 'routes/*'            # the route scenarios alone

The route scenarios (routes/...) put misbehaving providers behind ordered routes, each a fault server of its
own, and play each through retrying() over the routes (which must rescue or rightly stop every one, well
conducted), the openai SDK over a tap on the first route, and the relay with a route table; a table of what
each leg got follows the catalog's, with each leg's rescues and every conduct violation.

--via tap plays each scenario of a format the SDKs speak through the real SDK, as an agent that knows
nothing of streamfsm would, and reads the tap's record with the documented differences (where the
transparent view rightly differs from open_stream's), which it lists after the table with their reasons.
On a terminal the title column is cut to its width (--wide: whole); into a pipe or a file it is whole.
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any, TextIO

from ._common import epilog, fit, positive_int, positive_seconds, table_width

COLUMNS = ("format", "scenario", "state", "edge", "class", "verdict", "action", "title")
SDKS = ("openai", "anthropic")
VIAS = ("runtime", "wrap", "tap")
DIFFERENT = "≠ "  # marks a row read with a documented difference


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


def select(names: Sequence[str] | None, formats: Sequence[str] | None) -> list[Any]:
    """The catalog scenarios matching any of ``names`` (exact names or shell patterns) and ``formats``."""
    from ..testing import catalog, recovery_catalog

    scenarios = catalog(formats or None)
    if not names:
        return scenarios
    chosen = [s for s in scenarios if any(fnmatch.fnmatchcase(s.name, pattern) for pattern in names)]
    from ..testing import route_catalog

    known = [s.name for s in scenarios] + [s.name for s in recovery_catalog(formats=formats)]
    known += [s.name for s in route_catalog()]
    unmatched = [p for p in names if not any(fnmatch.fnmatchcase(name, p) for name in known)]
    if unmatched:
        raise UsageError(
            f"no scenario matches {', '.join(map(repr, unmatched))}"
            + (f" in format(s) {', '.join(formats)}" if formats else "")
            + " (streamfsm harness --list shows them all)"
        )
    return chosen


def _slug(name: str, fmt: str | None) -> str:
    # The format has its own column: show "text-then-fin" for "openai-chat/text-then-fin".
    return name[len(fmt) + 1 :] if fmt and name.startswith(fmt + "/") else name


# given up, in this order, to fit a terminal
_NARROW_DROPS = ("state", "edge", "action", "format", "class", "verdict")
_MIN_TITLE = 20


def table(outcomes: Sequence[Any], width: int | None = None, *, with_via: bool = False) -> str:
    """The outcomes as an aligned table; with ``width``, columns are given up (state, edge, action, the
    format, which the scenario's name then carries, the class, the verdict) and the title cut to fit
    it. A scenario's name is never cut: it is what ``--scenario`` takes."""
    columns = list(COLUMNS)
    if with_via:
        columns.insert(2, "via")
    rows = [{**outcome.row(), "scenario": _mark(outcome) + outcome.name} for outcome in outcomes]

    def measure(cols: Sequence[str]) -> dict[str, int]:
        return {c: max([len(c), *(len(row[c]) for row in rows)]) for c in cols[:-1]}

    if "format" in columns:
        for row in rows:
            row["scenario"] = _mark_of(row["scenario"]) + _slug(_name_of(row["scenario"]), row["format"])
    widths = measure(columns)
    if width:
        for drop in _NARROW_DROPS:
            if sum(widths.values()) + 2 * (len(columns) - 1) + _MIN_TITLE + 20 <= width:
                break  # leaves room for a title, and to give 20 to a long scenario name
            columns.remove(drop)
            if drop == "format":
                rows = [{**o.row(), "scenario": _mark(o) + o.name} for o in outcomes]
            widths = measure(columns)
    used = sum(widths.values()) + 2 * (len(columns) - 1)
    title_width = max(_MIN_TITLE, width - used) if width else max([5, *(len(row["title"]) for row in rows)])
    lines = ["  ".join(c.ljust(widths[c]) for c in columns[:-1]) + "  title"]
    lines.append("  ".join("-" * widths[c] for c in columns[:-1]) + "  " + "-" * min(title_width, 40))
    for row in rows:
        cells = [fit(row[c], widths[c]).ljust(widths[c]) for c in columns[:-1]]
        lines.append("  ".join(cells) + "  " + fit(row["title"], title_width))
    return "\n".join(line.rstrip() for line in lines)


def _mark_of(scenario: str) -> str:
    return scenario[:2] if scenario[:2] in ("✗ ", DIFFERENT) else ""


def _name_of(scenario: str) -> str:
    return scenario[len(_mark_of(scenario)) :]


def _mark(outcome: Any) -> str:
    if not outcome.matched:
        return "✗ "
    return DIFFERENT if getattr(outcome, "differences", ()) else ""


def differences(outcomes: Sequence[Any], width: int | None = None) -> str:
    """The documented differences the outcomes were read with: what each changes and why ("" if none)."""
    used: dict[Any, list[Any]] = {}
    for outcome in outcomes:
        for difference in getattr(outcome, "differences", ()):
            used.setdefault(difference, []).append(outcome)
    if not used:
        return ""
    from ..testing import find

    runs = sum(1 for o in outcomes if getattr(o, "differences", ()))
    lines = [
        f"documented differences of the transparent view ({DIFFERENT.strip()}): {len(used)},"
        f" in {runs} run{'s' if runs != 1 else ''}"
    ]
    wrap = max(40, (width or 110) - 6)
    for difference, read in used.items():
        vias = ", ".join(dict.fromkeys(o.via for o in read))
        lines.append(f"  {difference.scenarios}  ({len(read)} run{'s' if len(read) != 1 else ''}: {vias})")
        try:
            changes = difference.changes(find(read[0].name))
        except KeyError:  # a scenario of the caller's own, not in the catalog
            changes = [f"{name}: {value}" for name, value in difference.expect.items()]
        lines += [f"      {change}" for change in changes]
        lines += textwrap.wrap(difference.reason, wrap, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)


def select_routes(
    names: Sequence[str] | None, formats: Sequence[str] | None, vias: Sequence[str]
) -> list[Any]:
    """The route scenarios to play: with the runtime path (the default), in their format, by name."""
    from ..testing import ROUTE_FORMAT, route_catalog

    if "runtime" not in vias or (formats and ROUTE_FORMAT not in formats):
        return []
    return route_catalog(names)


def _cell(outcome: Any) -> str:
    if outcome.expects_answer:
        cell = "rescued" if outcome.right else "lost"
    else:
        cell = "stopped" if outcome.right else "not stopped"
    if outcome.violations:
        cell += f", {len(outcome.violations)} conduct"
    return ("✗ " if outcome.gated and not outcome.matched else "") + cell


def _wrapped(line: str, width: int | None) -> list[str]:
    """``line`` as it is, or wrapped to ``width`` (its follow-on lines indented) when it is wider."""
    if width is None or len(line) <= width:
        return [line]
    return textwrap.wrap(line, max(40, width), subsequent_indent="    ")


def route_section(
    outcomes: Sequence[Any], legs: Sequence[Any], unplayed: dict[str, str], width: int | None = None
) -> str:
    """The route scenarios as a table (a column per leg), then each leg's rescues, right stops and conduct
    violations, the legs that could not play and why, and every conduct violation; fitted to ``width``
    (a table wider than it becomes a line per scenario)."""
    from ..testing import tally

    names = list(dict.fromkeys(o.name for o in outcomes))
    cells = {(o.name, o.via): _cell(o) for o in outcomes}
    columns = [leg.name for leg in legs]
    widths = [max([len("route scenario"), *map(len, names)])]
    widths += [max([len(c), *(len(cells[n, c]) for n in names)]) for c in columns]
    rows = [
        "  ".join(h.ljust(w) for h, w in zip(["route scenario", *columns], widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    for name in names:
        row = [name, *(cells[name, c] for c in columns)]
        rows.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    if width is not None and sum(widths) + 2 * len(columns) > width:
        rows = [f"{name}: " + "; ".join(f"{c} {cells[name, c]}" for c in columns) for name in names]
    prose = [
        f"route scenarios: {len(names)}, a fault server per route; what the caller got, and how each provider"
        " was treated (its own request log)"
    ]
    for leg in legs:
        t = tally(o for o in outcomes if o.via == leg.name)
        spread = f" (in {t['violating']} scenarios)" if t["violations"] else ""
        prose.append(
            f"{leg.label}: rescued {t['rescued']} of {t['answers']}, stopped right {t['stopped_right']} of"
            f" {t['stops']}, conduct violations {t['violations']}{spread}"
        )
    prose += [f"not played: {name}: {why}" for name, why in unplayed.items()]
    violating = [o for o in outcomes if o.violations]
    if violating:
        prose.append("conduct violations:")
        prose += [f"  {o.via} {o.name}: {'; '.join(o.violations)}" for o in violating]
    lines = [prose[0], *rows, *prose[1:]]
    return "\n".join(line for text in lines for line in _wrapped(text, width))


def summary(outcomes: Sequence[Any], seconds: float) -> str:
    mismatched = [o for o in outcomes if not o.matched]
    runs = len(outcomes)
    head = f"{runs} scenario run{'s' if runs != 1 else ''} in {seconds:.1f} s"
    different = sum(1 for o in outcomes if o.matched and getattr(o, "differences", ()))
    if not mismatched:
        return f"{head}, all matched" + (f" ({different} as documented differences)" if different else "")
    lines = [f"{head}, {len(mismatched)} did not match:"]
    lines += [f"  {o.name} ({o.via}): {o.mismatch}" for o in mismatched]
    return "\n".join(lines)


class _Progress:
    """A one-line progress indicator on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._live = stream.isatty()
        self._failed = 0

    def __call__(self, done: int, total: int, outcome: Any) -> None:
        if not outcome.matched:
            self._failed += 1
        if not self._live:
            return
        width = shutil.get_terminal_size((100, 24)).columns
        bad = f", {self._failed} mismatched" if self._failed else ""
        line = f"[{done}/{total}{bad}] {outcome.name} ({outcome.via})"
        self._stream.write("\r" + fit(line, width - 1).ljust(width - 1))
        self._stream.flush()

    def clear(self) -> None:
        if self._live:
            width = shutil.get_terminal_size((100, 24)).columns
            self._stream.write("\r" + " " * (width - 1) + "\r")
            self._stream.flush()


def _playable(scenarios: list[Any]) -> list[Any]:
    """The scenarios whose format this install can read: a format whose extra is missing (Bedrock's needs
    botocore) is skipped, and said so with the extra to install, rather than failing every run of it."""
    from ..wire import adapter_for

    missing: dict[str, str] = {}
    for fmt in dict.fromkeys(s.format for s in scenarios if s.format is not None):
        try:
            adapter_for(fmt)
        except ImportError as exc:
            missing[fmt] = str(exc)
    for fmt, why in missing.items():
        count = sum(1 for s in scenarios if s.format == fmt)
        print(f"streamfsm harness: skipping the {count} {fmt} scenarios: {why}", file=sys.stderr)
    playable = [s for s in scenarios if s.format not in missing]
    over_websocket = [s for s in playable if s.meta.get("transport") == "websocket"]
    if over_websocket:
        try:
            import websockets  # noqa: F401  # the websocket extra
        except ImportError:
            print(
                f"streamfsm harness: skipping the {len(over_websocket)} WebSocket scenarios: they need the"
                " websocket extra (pip install 'streamfsm[websocket]')",
                file=sys.stderr,
            )
            playable = [s for s in playable if s.meta.get("transport") != "websocket"]
    return playable


async def _harness(args: argparse.Namespace) -> int:
    from ..testing import (
        RELAY,
        RETRYING,
        SDK_FORMATS,
        TAP,
        TAP_PREFIX,
        plan,
        playable,
        recovery_catalog,
        run_catalog,
        run_recovery,
        run_routes,
        sdk_available,
    )

    scenarios = _playable(select(args.scenario, args.format))
    # Recovery chains (resume, continue) and route scenarios run with the runtime path, after the catalog.
    chains = recovery_catalog(args.scenario, args.format) if "runtime" in (args.via or ["runtime"]) else []
    routes = select_routes(args.scenario, args.format, args.via or ["runtime"])
    if args.list:
        for scenario in [*scenarios, *chains, *routes]:
            print(f"{scenario.name}  {scenario.description}")
        return 0
    vias = list(dict.fromkeys(args.via or ["runtime"]))
    if args.sdk and "wrap" not in vias:
        vias.append("wrap")
    paths: list[str | None] = [None] if "runtime" in vias else []
    for via in ("wrap", "tap"):
        if via not in vias:
            continue
        for sdk in SDKS if via == "wrap" else SDK_FORMATS:
            path = sdk if via == "wrap" else f"{TAP_PREFIX}{sdk}"
            why = sdk_available(path)
            if why is None:
                paths.append(path)
            else:
                print(f"streamfsm harness: skipping the {path} SDK path: {why}", file=sys.stderr)
    if not paths:
        raise UsageError("no path left to play the scenarios through")
    if not plan(scenarios, paths) and not chains and not routes:
        raise UsageError(
            "no selected scenario speaks a format of the SDKs"
            f" ({', '.join(dict.fromkeys(f for formats in SDK_FORMATS.values() for f in formats))})"
        )
    records_out: TextIO | None = None
    table_out: TextIO = sys.stdout
    if args.json == "-":
        records_out, table_out = sys.stdout, sys.stderr
    elif args.json:
        try:
            records_out = open(args.json, "w", encoding="utf-8")  # noqa: SIM115  # closed below
        except OSError as exc:
            raise UsageError(f"--json {args.json}: {exc.strerror or exc}") from None
    progress = _Progress(sys.stderr)
    started = time.monotonic()
    try:
        outcomes = (
            await run_catalog(
                scenarios, sdk=paths, concurrency=args.concurrency, progress=progress, timeout=args.timeout
            )
            if scenarios
            else []
        )
        records = [o.record for o in outcomes if o.record is not None]
        for chain in chains:
            outcome, attempts = await run_recovery(chain, timeout=args.timeout)
            outcomes.append(outcome)
            records += attempts  # every attempt's record: diagnose finds each by its run id
        legs, unplayed = playable((RETRYING, TAP, RELAY))
        played = await run_routes(routes, legs) if routes else []
        records += [record for outcome in played for record in outcome.records]
    finally:
        progress.clear()
    seconds = time.monotonic() - started
    try:
        if records_out is not None:
            for record in records:
                records_out.write(record.to_json() + "\n")
            records_out.flush()
    finally:
        if records_out is not None and records_out is not sys.stdout:
            records_out.close()
    width = table_width(args.wide)
    if outcomes:
        print(table(outcomes, width, with_via=paths != [None]), file=table_out)
    if played:
        print(route_section(played, legs, unplayed, width), file=table_out)
    documented = differences(outcomes, width)
    if documented:
        print(documented, file=table_out)
    gated: list[Any] = [
        *outcomes,
        *(o for o in played if o.gated),
    ]  # a baseline leg's losses are counted, not failed
    print(summary(gated, seconds), file=table_out)
    return 0 if all(o.matched for o in gated) else 1


def run_harness(args: argparse.Namespace) -> int:
    import anyio

    try:
        code: int = anyio.run(_harness, args)
    except UsageError as exc:
        print(f"streamfsm harness: {exc}", file=sys.stderr)
        return 2
    return code


def add_commands(commands: Any) -> None:
    from ..wire import FORMAT_NAMES  # every format of the registry has catalog scenarios

    harness = commands.add_parser(
        "harness",
        help="play every fault scenario against a local fault provider and check each outcome",
        description=__doc__,  # plain text, no markup: the module's docstring is the command's --help
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    harness.add_argument(
        "--sdk", action="store_true", help="also run the openai and anthropic SDK paths through wrap()"
    )
    harness.add_argument(
        "--via",
        action="append",
        choices=VIAS,
        help="the path to play through: runtime (our own client; the default), wrap (the SDKs through"
        " wrap(), as --sdk), tap (the SDKs' own iteration over a tap client); repeatable",
    )
    harness.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help="only this scenario (a name or a shell pattern such as 'anthropic/*'); repeatable",
    )
    harness.add_argument(
        "--format", action="append", choices=FORMAT_NAMES, help="only this wire format; repeatable"
    )
    harness.add_argument(
        "--json", metavar="PATH", help="write every run record as JSON lines to PATH ('-': stdout)"
    )
    harness.add_argument(
        "--concurrency", type=positive_int, default=32, metavar="N", help="runs in flight (default 32)"
    )
    harness.add_argument(
        "--timeout", type=positive_seconds, default=10.0, metavar="S", help="bound on each run (default 10 s)"
    )
    harness.add_argument("--list", action="store_true", help="list the selected scenarios and exit")
    harness.add_argument("--wide", action="store_true", help="print titles whole, however wide the terminal")
    harness.set_defaults(run=run_harness)
