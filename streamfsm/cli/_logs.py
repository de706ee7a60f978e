"""People-facing commands over run records: ``streamfsm diagnose`` and ``streamfsm report``.

Both read a single record, a JSON-lines log (with its rotated siblings ``FILE.N``, unless
``--no-rotated``), or a session export that embeds records; ``-`` reads standard input. Given a store
(``--store URL``, see ``streamfsm.store``) instead, they query it. Skipped parts of a
file (a torn last line, a corrupt line, a record of an unknown schema) are reported on standard error and
the rest is used. Exit codes: 0 done, 1 the input holds no readable record (or no record matches
``--run`` / ``--request-id``), 2 bad usage.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._common import epilog, fit_table, non_empty, table_width

if TYPE_CHECKING:
    from ..runtime import Group, LogProblem, RunRecord

__all__ = ["add_commands", "parse_since", "run_diagram_dot", "run_diagram_mermaid", "run_path"]

_DASH: Final = "-"  # an absent value, as in probe and harness
_SHOWN_PROBLEMS: Final = 3  # skipped lines printed one by one; the rest are counted
_KEPT_PROBLEMS: Final = 100  # skipped lines kept for --json; the rest are counted
_RELATIVE: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([smhdw])")
_GROUP_NOUNS: Final = {
    "signature": ("signature", "signatures"),
    "provider": ("provider", "providers"),
    "model": ("model", "models"),
    "class": ("class", "classes"),
    "route": ("route", "routes"),
    "account": ("account", "accounts"),
}
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.\-]")
_GROUPINGS: Final = {
    "signature": ("summary_key", "provider", "model", "transport_kind"),
    "provider": ("provider",),
    "model": ("model",),
    "class": ("class",),
    "route": ("route",),
    "account": ("account",),
}
_VISITED_STYLE: Final = "fill:#dbeafe,stroke:#1d4ed8,stroke-width:2px"
_FAILED_FROM_STYLE: Final = "fill:#fee2e2,stroke:#b91c1c,stroke-width:3px"


class _UsageError(Exception):
    """Bad usage found after parsing (exit 2)."""


# -- shared helpers ----------------------------------------------------------------------------------------


def _clean(value: object) -> str:
    # Record strings come from files anyone could write: never let one drive the terminal.
    text = str(value)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _show(value: object, unit: str = "") -> str:
    if value is None:
        return _DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}{unit}"
    return _clean(value) + (unit if isinstance(value, int) else "")


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


class _Records:
    """The records of one input, streamed (a log can hold far more than memory should). The first few
    problems are printed to standard error as they are met, the rest counted and summarised once the input
    is read (a binary file is one problem per line); the first hundred are kept for ``--json``."""

    def __init__(self, path: str, *, rotated: bool) -> None:
        self.path = path
        self.rotated = rotated
        self.problems: list[LogProblem] = []
        self.skipped = 0
        self.count = 0

    def _problem(self, problem: LogProblem) -> None:
        self.skipped += 1
        if len(self.problems) < _KEPT_PROBLEMS:
            self.problems.append(problem)
        if self.skipped <= _SHOWN_PROBLEMS:
            print(f"streamfsm: warning: {_clean(problem)}", file=sys.stderr)

    def _summarise(self) -> None:
        if self.skipped > _SHOWN_PROBLEMS:
            more = self.skipped - _SHOWN_PROBLEMS
            print(
                f"streamfsm: warning: skipped {self.skipped} unreadable parts of {_clean(self.path)} in all"
                f" ({more} more not shown; --json lists the first {_KEPT_PROBLEMS})",
                file=sys.stderr,
            )

    def __iter__(self) -> Iterator[RunRecord]:
        from ..runtime import read_records

        if self.path == "-":
            source = read_records(sys.stdin.buffer, on_problem=self._problem)
        else:
            source = read_records(self.path, rotated=self.rotated, on_problem=self._problem)
        for record in source:
            self.count += 1
            yield record
        self._summarise()


def _cannot_read(command: str, path: str, exc: OSError) -> int:
    reason = exc.strerror or type(exc).__name__
    print(f"streamfsm {command}: cannot read {_clean(path)}: {reason}", file=sys.stderr)
    return 1


def _problems_json(problems: Iterable[LogProblem]) -> list[dict[str, Any]]:
    return [
        {"source": p.source, "line": p.line, "kind": p.kind.value, "message": p.message} for p in problems
    ]


def _utc(when: datetime | None) -> str:
    return _DASH if when is None else when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """``2h``, ``30m``, ``7d``, ``90s``, ``1w`` (before now), or an ISO date/time (a time without a zone is
    local time). Raises ``ValueError``."""
    now = now or datetime.now(timezone.utc)
    text = text.strip()
    m = _RELATIVE.fullmatch(text)
    if m is not None:
        return now - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use e.g. 2h, 30m, 7d or 2025-01-31T12:00)") from None
    return when if when.tzinfo is not None else when.astimezone()


def _since_arg(text: str) -> datetime:
    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


# -- the run diagram ---------------------------------------------------------------------------------------


def _activity(state: object) -> str | None:
    from ..machine import Activity

    if not isinstance(state, str):
        return None
    name = state.split("/", 1)[0]
    return name if name in Activity._value2member_map_ else None


def run_path(record: Mapping[str, Any]) -> list[str]:
    """The activities a run passed through, in order, from its timeline (entries carry the state *after*
    each event, as ``activity/commitment``), starting at the initial state and ending at its final state.
    With ``timeline.omitted`` > 0 the middle of the run is not known, so the path may skip states."""
    from ..machine import INITIAL_STATE

    path = [INITIAL_STATE.activity.value]
    states = [
        entry.get("state")
        for entry in _get(record, "timeline", "entries") or ()
        if isinstance(entry, Mapping)
    ]
    states.append(_get(record, "outcome", "state"))
    for state in states:
        activity = _activity(state)
        if activity is not None and activity != path[-1]:
            path.append(activity)
    return path


def _failed_from(record: Mapping[str, Any]) -> str | None:
    if _get(record, "outcome", "class") == "completed":
        return None
    return _activity(_get(record, "outcome", "from_state"))


def _legal_steps(path: Sequence[str]) -> set[tuple[str, str]]:
    from ..machine import TABLE

    legal = {(src.activity.value, dst.activity.value) for (src, _), dst in TABLE.items()}
    return {step for step in itertools.pairwise(path) if step in legal}


def _token(value: object) -> str:
    # For names and labels inside Mermaid/DOT sources and file names: no quotes, colons or separators.
    return _UNSAFE.sub("_", str(value))


def _run_title(record: Mapping[str, Any]) -> str:
    run_id = _token(_get(record, "ids", "run_id") or "?")[:12]
    return f"run {run_id} {_token(_get(record, 'outcome', 'summary_key') or '')}".rstrip()


def run_diagram_mermaid(record: Mapping[str, Any]) -> str:
    """The activity machine as Mermaid (the same drawing as ``diagrams/activity.mmd``), with the states this
    run passed through highlighted and the state it failed from marked."""
    from ..diagrams import mermaid_source
    from ..machine import INITIAL_STATE, Activity, activity_machine

    base = mermaid_source("activity", Activity, activity_machine, INITIAL_STATE.activity.value)
    lines = [
        f"title: {_run_title(record)}" if line == "title: activity" else line for line in base.splitlines()
    ]
    path = run_path(record)
    failed_from = _failed_from(record)
    visited = [a.value for a in Activity if a.value in path and a.value != failed_from]
    lines.append(f"  %% path: {' --> '.join(path)}")
    if visited:
        lines.append(f"  classDef visited {_VISITED_STYLE}")
        lines.append(f"  class {','.join(visited)} visited")
    if failed_from is not None:
        edge = _token(_get(record, "outcome", "edge") or "failure")
        commitment = _token(str(_get(record, "outcome", "from_state") or "").partition("/")[2] or "?")
        lines.append(f"  classDef failedFrom {_FAILED_FROM_STYLE}")
        lines.append(f"  class {failed_from} failedFrom")
        lines += [
            f"  note left of {failed_from}",
            f"    failed here: {edge}",
            f"    commitment: {commitment}",
        ]
        lines.append("  end note")
    return "\n".join(lines) + "\n"


_DOT_NODE: Final = re.compile(r"^\t(\w+) \[(.*)\]$")
_DOT_EDGE: Final = re.compile(r"^\t(\w+) -> (\w+) \[(.*)\]$")


def run_diagram_dot(record: Mapping[str, Any]) -> str:
    """The same highlighted drawing as Graphviz DOT. Needs the ``graphviz`` package (DiagramError)."""
    from ..diagrams import dot_source
    from ..machine import INITIAL_STATE, Activity, activity_machine

    base = dot_source("activity", Activity, activity_machine, INITIAL_STATE.activity.value)
    path = run_path(record)
    steps = _legal_steps(path)
    failed_from = _failed_from(record)
    edge = _token(_get(record, "outcome", "edge") or "failure")
    out = []
    for line in base.splitlines():
        if (m := _DOT_EDGE.match(line)) and (m.group(1), m.group(2)) in steps:
            line = f'\t{m.group(1)} -> {m.group(2)} [{m.group(3)} color="#1d4ed8" penwidth=2]'
        elif (m := _DOT_NODE.match(line)) and m.group(1) == failed_from:
            extra = f'fillcolor="#fee2e2" color="#b91c1c" penwidth=3 xlabel="failed here: {edge}"'
            line = f"\t{m.group(1)} [{m.group(2)} {extra}]"
        elif (m := _DOT_NODE.match(line)) and m.group(1) in path:
            line = f'\t{m.group(1)} [{m.group(2)} fillcolor="#dbeafe" color="#1d4ed8" penwidth=2]'
        elif line.startswith("\tgraph [") and "label=activity" in line:
            line = line.replace("label=activity", f'label="{_run_title(record)}"')
        out.append(line)
    return "\n".join(out) + "\n"


def _svg(record: Mapping[str, Any]) -> tuple[bytes | None, str]:
    """(SVG, "") or (None, why not)."""
    from ..diagrams import DiagramError

    try:
        import graphviz
    except ImportError:
        return None, "SVG needs the graphviz Python package: pip install 'streamfsm[diagrams]'"
    if shutil.which("dot") is None:
        return None, "SVG needs Graphviz's `dot` program on PATH (https://graphviz.org/download/)"
    try:
        source = run_diagram_dot(record)
        svg = graphviz.Source(source).pipe(format="svg")
    except (DiagramError, graphviz.ExecutableNotFound, graphviz.CalledProcessError) as exc:
        return None, f"SVG not drawn: {type(exc).__name__}"
    return (svg if isinstance(svg, bytes) else str(svg).encode("utf-8")), ""


def _svg_path(args: argparse.Namespace, record: RunRecord, several: bool) -> Path:
    run12 = _token(record.run_id)[:12]
    if args.out is not None:
        out = Path(args.out)
        return out.with_name(f"{out.stem}.{run12}{out.suffix or '.svg'}") if several else out
    if args.file is None:  # from a store
        return Path.cwd() / f"store.{run12}.svg"
    folder = Path.cwd() if args.file == "-" else Path(args.file).parent
    stem = "stdin" if args.file == "-" else Path(args.file).name
    return folder / f"{stem}.{run12}.svg"


# -- diagnose ----------------------------------------------------------------------------------------------


def _timings(t: Mapping[str, Any]) -> str:
    parts = [
        ("headers", t.get("to_headers_s")),
        ("first progress", t.get("to_first_progress_s")),
        ("first visible", t.get("to_first_visible_s")),
        ("last progress age", t.get("last_progress_age_s")),
        ("total", t.get("total_s")),
    ]
    return ", ".join(f"{name} {_show(value, ' s')}" for name, value in parts if value is not None) or _DASH


def _tokens(t: Mapping[str, Any]) -> str:
    parts = [(name, t.get(name)) for name in ("input", "output", "reasoning", "cached")]
    shown = [f"{name} {value}" for name, value in parts if value is not None]
    return ", ".join(shown) or _DASH


def _transport(t: Mapping[str, Any]) -> str:
    parts = [_show(t.get("kind"))]
    if t.get("errno") is not None:
        parts.append(f"errno {t['errno']}")
    parts.append("headers received" if t.get("headers_received") else "no headers")
    parts.append(f"{t.get('bytes_received', 0)} bytes received")
    return ", ".join(parts)


def _abort(a: Any) -> str:
    if not isinstance(a, Mapping):
        return _DASH
    text = _show(a.get("source"))
    if a.get("reason"):
        text += f" ({_clean(a['reason'])})"
    if a.get("at_s") is not None:
        text += f" at {_show(a['at_s'], ' s')}"
    return text


def _finish(f: Mapping[str, Any]) -> str:
    unified, raw = f.get("unified"), f.get("raw")
    if unified is None and raw is None:
        return _DASH
    return _show(unified) + (f" (raw {_clean(raw)})" if raw is not None and raw != unified else "")


def _events(counts: Mapping[str, Any]) -> str:
    items = sorted(counts.items(), key=lambda kv: (-int(kv[1]), kv[0]))
    return ", ".join(f"{_clean(k)} {v}" for k, v in items) or _DASH


def _timeline(tl: Mapping[str, Any]) -> list[str]:
    entries = [e for e in tl.get("entries") or () if isinstance(e, Mapping)]
    omitted, omitted_events = tl.get("omitted", 0), tl.get("omitted_events", 0)
    head = f"timeline ({len(entries)} entries"
    head += f"; {omitted} more entries ({omitted_events} events) omitted in the middle)" if omitted else ")"
    rows = [("t (s)", "event", "state")]
    for e in entries:
        event = _clean(e.get("event", "?"))
        if e.get("n"):
            event += f" x{e['n']} (to {_show(e.get('t_last'))})"
        rows.append((_show(e.get("t")), event, _clean(e.get("state", ""))))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [head]
    lines += [f"  {r[0]:>{width[0]}}  {r[1]:<{width[1]}}  {r[2]}".rstrip() for r in rows]
    return lines


def _began(recovery: Any) -> str:
    """How an attempt began, from its record's ``recovery`` section."""
    if not isinstance(recovery, Mapping):
        return "a fresh request"
    if recovery.get("kind") == "resume":
        began = f"resuming the provider's stream after event {_show(recovery.get('starting_after'))}"
        refused = recovery.get("refused")
        return f"{began} (refused: {_clean(refused)})" if refused else began
    calls = recovery.get("tool_calls") or 0
    carried = f" and {calls} complete tool call{'s' if calls != 1 else ''}" if calls else ""
    style = f" by {_clean(recovery['style'])}" if recovery.get("style") else ""
    refused = f" (refused: {_clean(recovery['refused'])})" if recovery.get("refused") else ""
    return f"continuing after {_show(recovery.get('after_chars'))} characters{carried}{style}{refused}"


_NEXT: Final = {
    "retry": "retried with a fresh request",
    "replay": "replayed from the start (confirmed)",
    "resume": "resumed after event {resume_from}",
    "continue": "continued after {continue_after_chars} characters",
}


def _chain(r: RunRecord) -> list[str]:
    """The attempts before this run, how each ended and how the next began (a retried stream's last record
    lists the whole chain)."""
    links = r.get("attempts") or ()
    recovery = r.get("recovery")
    if not links and recovery is None:
        return []
    lines = ["", f"attempts (this run is attempt {_show(r['ids'].get('attempt'))})"]
    for link in links:
        how = _NEXT.get(str(link.get("next")), "retried ({decision})")
        try:
            then = how.format(**{k: _show(v) for k, v in link.items()})
        except (KeyError, IndexError):
            then = _show(link.get("decision"))
        if link.get("decision") == "confirmed_retry" and "confirmed" not in then:
            then += " (confirmed)"
        refused = "".join(
            f"; {what} refused: {_clean(link[key])}"
            for key, what in (("resume_refused", "resume"), ("continue_refused", "continuation"))
            if link.get(key)
        )
        ended = f"{_clean(link.get('summary_key'))}, {_clean(link.get('verdict'))}{refused}"
        lines.append(f"  {_show(link.get('attempt')):>3}  {ended}; then {then}")
    this = f"began by {_began(recovery)}; {_clean(r['outcome'].get('summary_key'))}"
    lines.append(f"  {_show(r['ids'].get('attempt')):>3}  {this}")
    return lines


def format_record(record: RunRecord) -> str:
    """The plain-language diagnosis of one run, for people."""
    r = record
    ids, outcome, retry = r["ids"], r["outcome"], r["retry"]
    transport = r.get("transport") or {}
    final = outcome.get("state")
    lines = [
        f"run {_clean(r.run_id)}  started {_show(r.get('started_at'))}  attempt {_show(ids.get('attempt'))}",
        "",
        _clean(r["summary"]["title"]),
        f"  {_clean(r['summary'].get('detail', ''))}",
        "",
    ]
    facts = [
        ("class", f"{_clean(outcome['class'])} ({_clean(outcome['summary_key'])})"),
        ("verdict", f"{_clean(retry['verdict'])}, action {_show(retry.get('action'))}"),
        ("reason", _show(retry.get("reason"))),
        ("retry after", _show(retry.get("retry_after_s"), " s")),
        ("confidence", _show(outcome.get("confidence"))),
        ("", ""),
        ("provider", _show(r.get("provider"))),
        ("model", _show(r.get("model"))),
        ("phase", _show(outcome.get("phase"))),
        ("edge", f"{_show(outcome.get('edge'))} ({_show(outcome.get('from_state'))} -> {_show(final)})"),
        ("transport", _transport(transport)),
        ("exception chain", " <- ".join(_clean(c) for c in transport.get("chain") or ()) or _DASH),
        ("http status", _show(transport.get("status"))),
        ("request id", _show(_get(ids, "context", "request_id"))),
        ("provider request id", _show(ids.get("provider_request_id"))),
        ("response id", _show(ids.get("response_id"))),
        ("trace id", _show(ids.get("trace_id"))),
        ("session id", _show(ids.get("session_id"))),
        ("tokens", _tokens(r.get("tokens") or {})),
        ("finish reason", _finish(r.get("finish_reason") or {})),
        ("timings", _timings(r.get("timings") or {})),
        ("watchdog fired", _show(_get(r, "watchdog", "fired"))),
        ("abort", _abort(r.get("abort"))),
        ("events", _events(r.get("stream_events") or {})),
    ]
    width = max(len(name) for name, _ in facts)
    lines += [f"{name:<{width}}  {value}".rstrip() for name, value in facts]
    lines += _chain(r)
    evidence = outcome.get("evidence") or ()
    if evidence:
        lines += ["", "evidence", *(f"  {_clean(item)}" for item in evidence)]
    lines += ["", *_timeline(r.get("timeline") or {})]
    return "\n".join(lines) + "\n"


def _which(args: argparse.Namespace) -> tuple[str, str] | None:
    """(id name, value) of the run id or request id asked for, or None."""
    for dest, name in (("request_id", "request id"), ("provider_request_id", "provider request id")):
        value = getattr(args, dest)
        if value is not None:
            return name, value
    return None


def _select(records: Iterable[RunRecord], args: argparse.Namespace) -> list[RunRecord]:
    """The last ``--last`` records, the one whose run id is ``--run`` (or starts with it, if unique), or
    those with the ``--request-id`` (``--provider-request-id``) asked for."""
    run, last, which = args.run_id, args.last, _which(args)
    if which is not None:
        field = "request_id" if which[0] == "request id" else "provider_request_id"
        return [r for r in records if _request_ids(r)[field] == which[1]]
    if run is None:
        return list(deque(records, maxlen=last))
    exact: RunRecord | None = None
    prefixed: dict[str, RunRecord] = {}
    for record in records:
        if record.run_id == run:
            exact = record
        elif record.run_id.startswith(run) and (record.run_id in prefixed or len(prefixed) < 5):
            prefixed[record.run_id] = record
    if exact is not None:
        return [exact]
    if len(prefixed) > 1:
        raise _UsageError(f"run id prefix {run!r} is ambiguous: {', '.join(sorted(prefixed))}, ...")
    return list(prefixed.values())


def _request_ids(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "request_id": _get(record, "ids", "context", "request_id"),
        "provider_request_id": _get(record, "ids", "provider_request_id"),
    }


def _source(args: argparse.Namespace, command: str) -> str:
    """What the command reads (a store's URL without its password), or bad usage when neither is given."""
    if args.store is not None:
        if args.file is not None:
            args.parser.error(f"give {'FILE' if command == 'diagnose' else 'LOG'} or --store, not both")
        from ..store import safe_label

        return safe_label(args.store)
    if args.file is None:
        args.parser.error(f"{'FILE' if command == 'diagnose' else 'LOG'} or --store URL is required")
    return str(args.file)


def _from_store(args: argparse.Namespace) -> tuple[list[RunRecord], int]:
    """(the records asked for, runs in the store)."""
    from ..store import Store

    with Store.open(args.store) as store:
        which = _which(args)
        if which is not None and which[0] == "request id":
            chosen = store.by_request_id(which[1])
        elif which is not None:
            chosen = store.by_provider_request_id(which[1])
        elif args.run_id is not None:
            exact = store.record(args.run_id)
            chosen = [exact] if exact is not None else store.find_runs(args.run_id, limit=6)
            if len(chosen) > 1:
                ids = ", ".join(r.run_id for r in chosen[:5])
                raise _UsageError(f"run id prefix {args.run_id!r} is ambiguous: {ids}, ...")
        else:
            latest = store.runs(limit=args.last).runs
            chosen = [r for row in reversed(latest) if (r := store.record(row.run_id)) is not None]
        return chosen, store.count()


def _diagnose(args: argparse.Namespace) -> int:
    source = _source(args, "diagnose")
    data = _Records(source, rotated=args.rotated)
    try:
        if args.store is not None:
            chosen, total = _from_store(args)
        else:
            chosen = _select(data, args)
            total = data.count
    except OSError as exc:
        return _cannot_read("diagnose", source, exc)
    except _UsageError as exc:
        print(f"streamfsm diagnose: {_clean(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store's database refused (psycopg's and sqlite3's errors)
        if args.store is None:
            raise
        print(f"streamfsm diagnose: cannot query {_clean(source)}: {type(exc).__name__}", file=sys.stderr)
        return 1
    wanted = args.request_id or args.run_id
    if wanted is not None and not chosen:  # a request id of a stream the relay's death cut?
        cut = [i for i in _interrupted(args) if wanted in (i.request_id, i.begin_id)]
        if cut:
            if args.json:
                print(json.dumps({"records": [], "interrupted": [i.to_json() for i in cut]}, indent=2))
            else:
                _print_interrupted(cut)
                print(f"\n{cut[0].to_json()['what_happened']}")
            return 0
    if total == 0:
        print(f"streamfsm diagnose: no readable run record in {_clean(source)}", file=sys.stderr)
        return 1
    if not chosen:
        which = _which(args) or ("run id", args.run_id)
        print(
            f"streamfsm diagnose: no record with {which[0]} {_clean(which[1])!r} in {_clean(source)}",
            file=sys.stderr,
        )
        return 1
    if args.run_id is None and _which(args) is None and total > len(chosen):
        print(
            f"streamfsm diagnose: showing the last {len(chosen)} of {total} records"
            " (pick one with --run ID, or more with --last N)",
            file=sys.stderr,
        )
    several = len(chosen) > 1
    diagrams: list[dict[str, Any]] = []
    texts: list[str] = []
    for record in chosen:
        text = format_record(record)
        if args.diagram:
            mermaid = run_diagram_mermaid(record)
            svg, why = _svg(record)
            svg_path: Path | None = None
            if svg is not None:
                svg_path = _svg_path(args, record, several)
                svg_path.write_bytes(svg)
                print(f"streamfsm diagnose: wrote {svg_path}", file=sys.stderr)
            else:
                print(f"streamfsm diagnose: {why}; printing Mermaid only", file=sys.stderr)
            diagrams.append(
                {
                    "run_id": record.run_id,
                    "mermaid": mermaid,
                    "svg": None if svg_path is None else str(svg_path),
                }
            )
            text += "\n" + mermaid
        texts.append(text)
    if args.json:
        out: dict[str, Any] = {
            "records": [r.to_dict() for r in chosen],
            "total": total,
            "problems": _problems_json(data.problems),
            "problems_total": data.skipped,
        }
        if args.diagram:
            out["diagrams"] = diagrams
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(("\n" + "=" * 78 + "\n\n").join(texts), end="")
    return 0


# -- report ------------------------------------------------------------------------------------------------


def _report_store(args: argparse.Namespace, source: str) -> int:
    """``report --store``: the same output from the store's groups (with each group's runs and failure
    rate in ``--json``)."""
    from ..store import Filters, Store

    names = _GROUPINGS[args.by]
    filters = Filters(since=args.since)
    try:
        with Store.open(args.store) as store:
            if args.html is not None:
                from ._relay import report_html_from_store

                return report_html_from_store(store, filters, source, args.html)
            stored = store.groups(filters, names)
            totals = store.totals(filters)
            count = store.count()
    except Exception as exc:  # the database refused (psycopg's and sqlite3's errors)
        print(f"streamfsm report: cannot query {_clean(source)}: {type(exc).__name__}", file=sys.stderr)
        return 1
    if count == 0:
        print(f"streamfsm report: no run record in {_clean(source)}", file=sys.stderr)
        return 1
    groups = [g.as_group() for g in stored]
    listed = [g.to_json() for g in stored]
    return _print_report(args, source, groups, listed, (count, totals.runs, totals.failures), None)


def _report(args: argparse.Namespace) -> int:
    from ..runtime import group_failures, started

    source = _source(args, "report")
    if args.store is not None:
        return _report_store(args, source)
    data = _Records(args.file, rotated=args.rotated)
    since: datetime | None = args.since
    chosen = (r for r in data if since is None or ((when := started(r)) is not None and when >= since))
    if args.html is not None:  # the relay's errors page, as one file
        from ._relay import report_html

        try:
            return report_html(chosen, args.file, args.html, _interrupted(args, since))
        except OSError as exc:
            return _cannot_read("report", args.file, exc)
    names = _GROUPINGS[args.by]
    try:
        groups, runs, failures = group_failures(chosen, names)  # one pass, holding only the groups
    except OSError as exc:
        return _cannot_read("report", args.file, exc)
    cut = _interrupted(args, since)
    if data.count == 0 and not cut:
        print(f"streamfsm report: no readable run record in {_clean(args.file)}", file=sys.stderr)
        return 1
    listed = [g.to_json(names) for g in groups]
    return _print_report(args, source, groups, listed, (data.count, runs, failures), data, cut)


def _print_report(
    args: argparse.Namespace,
    source: str,
    groups: Sequence[Group],
    listed: list[dict[str, Any]],
    counts: tuple[int, int, int],
    data: _Records | None,
    cut: Sequence[Any] = (),
) -> int:
    from ..runtime import iso

    names = _GROUPINGS[args.by]
    since: datetime | None = args.since
    records, runs, failures = counts
    if args.json:
        out = {
            "source": source,
            "by": args.by,
            "since": iso(since),
            "records": records,
            "runs": runs,
            "failures": failures,
            "groups": listed,
            "interrupted": [i.to_json() for i in cut],
            "problems": _problems_json(data.problems if data is not None else ()),
            "problems_total": data.skipped if data is not None else 0,
        }
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    window = f" since {_utc(since)}" if since is not None else ""
    print(
        f"{failures} failed of {runs} runs{window} in {_clean(source)}:"
        f" {len(groups)} {_GROUP_NOUNS[args.by][len(groups) != 1]}"
    )
    _print_interrupted(cut)
    if not groups:
        return 0
    header = ("COUNT", "FIRST SEEN (UTC)", "LAST SEEN (UTC)", *(n.upper().replace("_", " ") for n in names))
    header += ("SAMPLE RUNS",) + (("WHAT HAPPENED",) if args.by in ("signature", "class") else ())
    rows = [header]
    for g in groups:
        row = (str(g.count), _utc(g.first), _utc(g.last), *(_show(k) for k in g.key))
        row += (", ".join(_clean(s)[:12] for s in reversed(g.samples)),)
        row += (_clean(g.title),) if args.by in ("signature", "class") else ()
        rows.append(row)
    print()
    drops = ("FIRST SEEN (UTC)", "SAMPLE RUNS", "TRANSPORT KIND", "MODEL", "PROVIDER", "LAST SEEN (UTC)")
    for line in fit_table(rows, table_width(args.wide), drops):
        print(line)
    return 0


def _interrupted(args: argparse.Namespace, since: datetime | None = None) -> list[Any]:
    """The streams a relay's death cut, from the begin lines of a relay's log (none from standard input)."""
    from ..relay import interrupted

    if args.file is None or args.file == "-":  # a store, or standard input
        return []
    cut = interrupted(args.file, rotated=args.rotated)
    if since is not None:
        cut = [i for i in cut if i.started_at is None or _parsed(i.started_at) >= since]
    return cut


def _parsed(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.max.replace(tzinfo=timezone.utc)


def _print_interrupted(cut: Sequence[Any]) -> None:
    if not cut:
        return
    print(
        f"\n{len(cut)} stream{'s' if len(cut) != 1 else ''} cut by the relay's death (it was killed or"
        " crashed while they were in flight; how far each got is not known):"
    )
    for item in cut:
        print(
            f"  request id {_clean(item.request_id)}  started {_show(item.started_at)}"
            f"  route {_show(item.route)}  relay {_clean(item.instance.id)}"
        )


_READING: Final = """reading: a record, a JSON-lines log (with FILE.1, FILE.2, ... unless --no-rotated), or a
session export; '-' reads standard input. Unreadable lines are skipped: the first 3 are named on standard
error, the rest counted."""


# -- wiring ------------------------------------------------------------------------------------------------


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``diagnose`` and ``report`` to the ``streamfsm`` command line."""
    diagnose = commands.add_parser(
        "diagnose",
        help="explain a run from its record: what happened, may it be retried, the facts and the timeline",
        description="Explain runs from a record, a JSON-lines log or a session export: what happened, in"
        " plain words, whether a retry is safe, the facts behind it, the attempt chain and the timeline.",
        epilog=epilog(_READING),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diagnose.add_argument(
        "file", metavar="FILE", nargs="?", help="record, JSON-lines log or session export ('-': stdin)"
    )
    _store_argument(diagnose)
    which = diagnose.add_mutually_exclusive_group()
    # dest run_id: "run" is the handler the main parser calls
    which.add_argument(
        "--run",
        dest="run_id",
        type=non_empty,
        metavar="ID",
        help="the run to show (a run id or a unique prefix)",
    )
    which.add_argument(
        "--request-id",
        type=non_empty,
        metavar="ID",
        help="the runs of this request id (the relay's id of the client's request: x-streamfsm-request-id)",
    )
    which.add_argument(
        "--provider-request-id",
        type=non_empty,
        metavar="ID",
        help="the runs of this provider request id (the provider's own x-request-id / request-id)",
    )
    diagnose.add_argument(
        "--last", metavar="N", type=_positive, default=1, help="without an id: show the last N records (1)"
    )
    diagnose.add_argument(
        "--diagram",
        action="store_true",
        help="also draw the machine with this run's path (Mermaid; SVG too when Graphviz is installed)",
    )
    diagnose.add_argument("--out", metavar="PATH", help="where to write the SVG (default: beside FILE)")
    diagnose.add_argument("--json", action="store_true", help="print the records as JSON, for machines")
    diagnose.add_argument(
        "--no-rotated", dest="rotated", action="store_false", help="ignore FILE.1, FILE.2, …"
    )
    diagnose.set_defaults(run=_diagnose, parser=diagnose)

    report = commands.add_parser(
        "report",
        help="group failed runs in a log by signature, provider, model or class, like an errors tab",
        description="Group the failed runs of a log: count, first and last seen, sample run ids. On a"
        " terminal, columns are given up and the last one cut to fit its width (--wide: all, whole).",
        epilog=epilog(_READING),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument(
        "file", metavar="LOG", nargs="?", help="JSON-lines log, record or session export ('-': stdin)"
    )
    _store_argument(report)
    report.add_argument(
        "--since",
        metavar="T",
        type=_since_arg,
        help="only runs started at or after T: 30m, 2h, 7d, or an ISO time (no zone: local time)",
    )
    report.add_argument(
        "--by",
        choices=tuple(_GROUPINGS),
        default="signature",
        help="signature = summary key + provider + model + transport kind (default); route and account"
        " are the relay's",
    )
    report.add_argument("--json", action="store_true", help="print JSON, for machines")
    report.add_argument(
        "--html", metavar="OUT", help="write the errors page (and each sample run's page) to OUT, one file"
    )
    report.add_argument("--no-rotated", dest="rotated", action="store_false", help="ignore LOG.1, LOG.2, …")
    report.add_argument(
        "--wide", action="store_true", help="every column, whole, however wide the terminal (as into a pipe)"
    )
    report.set_defaults(run=_report, parser=report)


def _store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="URL",
        help="query this store instead of a file: sqlite:///PATH or postgresql://... (see streamfsm store)",
    )
