"""The state-diagram documentation in ``diagrams/``, generated from the ``transitions`` reference machines.

``transitions.extensions.GraphMachine`` draws each region from the same declaration the runtime uses: Mermaid
(no system binary needed) and Graphviz DOT source (the optional ``graphviz`` package, extra ``diagrams``). The
raw drawings are then tidied so they read well and render on a code host:

* the "active state" styling (``Class x s_active``, ``classDef``, red node colours) is dropped: a static
  document has no current state, and GitHub's Mermaid does not need it;
* an edge label that lists every failure trigger becomes ``any failure`` (a note lists them once; the
  classification table has the details);
* edges are sorted by declared state order and labels by declared trigger order.

Output is deterministic (no timestamps, no absolute paths, ``\\n`` line ends, a trailing newline), so a test
can regenerate it and compare bytes.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from transitions.extensions import GraphMachine

from .classify import Facts, diagnose
from .machine import (
    COMMITMENT_TRANSITIONS,
    FAILURE_TRIGGERS,
    INITIAL_STATE,
    NON_TERMINAL_ACTIVITIES,
    REACHABLE_STATES,
    Activity,
    Commitment,
    State,
    Trigger,
    activity_machine,
    commitment_machine,
)

ANY_FAILURE: Final = "any failure"
FILES: Final = (
    "README.md",
    "activity.dot",
    "activity.mmd",
    "classification.md",
    "commitment.dot",
    "commitment.mmd",
    "rooms.dot",
    "rooms.mmd",
)
_DOT_FILES: Final = ("activity.dot", "commitment.dot")
_GRAPHVIZ_MISSING: Final = "DOT output needs the graphviz Python package: pip install 'streamfsm[diagrams]'"

_FAILURES: Final = tuple(t for t in Trigger if t in FAILURE_TRIGGERS)
_TRIGGER_ORDER: Final = {t.value: i for i, t in enumerate(Trigger)}

ACTIVITY_MEANING: Final = {
    Activity.IDLE: "run created, nothing sent",
    Activity.CONNECTING: "request in flight, no response headers yet",
    Activity.STREAMING: "2xx headers in; metadata, pings or reasoning may have arrived; nothing visible yet",
    Activity.GENERATING: "visible output (text) has been delivered to the consumer",
    Activity.TOOL_INPUT_OPEN: "a tool call's arguments are streaming; that tool cannot have run",
    Activity.TOOL_CALL: "a tool call is complete (name and full arguments), none executing",
    Activity.TOOL_EXECUTING: "the agent reported that a tool started, and the stream has said nothing newer",
    Activity.FINISHED: "terminal: the provider's terminal event arrived",
    Activity.FAILED: "terminal: a failure edge fired",
}
COMMITMENT_MEANING: Final = {
    Commitment.NONE: "nothing escaped: a replay cannot be noticed",
    Commitment.VISIBLE: "visible output reached the consumer: a replay would show it again",
    Commitment.SIDE_EFFECT: "an effectful tool started: a replay could repeat its effect",
}


class DiagramError(RuntimeError):
    """A diagram cannot be produced here (for DOT: the ``graphviz`` package is missing)."""


def _graph_source(build: Callable[..., Any], title: str, engine: str) -> str:
    machine: GraphMachine = build(machine_class=GraphMachine, graph_engine=engine, title=title)
    graph: Any = machine.get_combined_graph(title=title)
    source: str = graph.source
    return source


def _order(states: type[enum.Enum]) -> dict[str, int]:
    return {s.value: i for i, s in enumerate(states)}


def _label(triggers: Sequence[str]) -> str:
    names = sorted(set(triggers), key=_TRIGGER_ORDER.__getitem__)
    if {t.value for t in _FAILURES} <= set(names):
        rest = [n for n in names if n not in {t.value for t in _FAILURES}]
        return " | ".join([*rest, ANY_FAILURE])
    return " | ".join(names)


def _failure_note_lines(width: int = 4) -> list[str]:
    names = [t.value for t in _FAILURES]
    return [", ".join(names[i : i + width]) for i in range(0, len(names), width)]


# Mermaid


_MERMAID_EDGE: Final = re.compile(r"^\s*(\w+) --> (\w+): (.+)$")
_MERMAID_STATE: Final = re.compile(r'^\s*state "([^"]*)" as (\w+)$')


def mermaid_source(name: str, states: type[enum.Enum], build: Callable[..., Any], initial: str) -> str:
    raw = _graph_source(build, name, "mermaid")
    order = _order(states)
    nodes: list[str] = []
    edges: dict[tuple[str, str], list[str]] = {}
    for line in raw.splitlines():
        if m := _MERMAID_STATE.match(line):
            nodes.append(m.group(2))
        elif m := _MERMAID_EDGE.match(line):
            edges.setdefault((m.group(1), m.group(2)), []).extend(m.group(3).split(" | "))
    if sorted(nodes, key=order.__getitem__) != [s.value for s in states]:
        raise DiagramError(f"{name}: transitions drew states {nodes}, expected every declared state")
    lines = ["---", f"title: {name}", "---", "stateDiagram-v2", "  direction LR"]
    lines += [f'  state "{node}" as {node}' for node in sorted(nodes, key=order.__getitem__)]
    lines.append(f"  [*] --> {initial}")
    for (src, dst), labels in sorted(edges.items(), key=lambda e: (order[e[0][0]], order[e[0][1]])):
        lines.append(f"  {src} --> {dst}: {_label(labels)}")
    if states is Activity:
        lines += [f"  {a.value} --> [*]" for a in Activity if a.is_terminal]
        lines += [f"  note right of {Activity.FAILED.value}", f"    {ANY_FAILURE}:"]
        lines += [f"    {chunk}" for chunk in _failure_note_lines()]
        lines.append("  end note")
    return "\n".join(lines) + "\n"


# Graphviz DOT


_DOT_NODE: Final = re.compile(r"^\t(\w+) \[(.*)\]$")
_DOT_EDGE: Final = re.compile(r'^\t(\w+) -> (\w+) \[label=("[^"]*"|[^\s\]]+)\]$')
_ACTIVE_STYLE: Final = re.compile(r" (?:color|fillcolor|peripheries)=[^\s\]]+")


def _require_graphviz() -> None:
    try:
        importlib.import_module("graphviz")
    except ImportError as exc:
        raise DiagramError(_GRAPHVIZ_MISSING) from exc


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_source(name: str, states: type[enum.Enum], build: Callable[..., Any], initial: str) -> str:
    _require_graphviz()
    raw = _graph_source(build, name, "graphviz")
    order = _order(states)
    header: list[str] = []
    nodes: dict[str, str] = {}
    edges: dict[tuple[str, str], list[str]] = {}
    for line in raw.splitlines():
        if m := _DOT_EDGE.match(line):
            edges.setdefault((m.group(1), m.group(2)), []).extend(m.group(3).strip('"').split(" | "))
        elif (m := _DOT_NODE.match(line)) and m.group(1) in order:
            # The initial state is drawn "active" (red); a static document has no current state.
            nodes[m.group(1)] = _ACTIVE_STYLE.sub("", f"\t{m.group(1)} [{m.group(2)}]")
        elif line.startswith("\t") and not line.startswith("\t\t"):
            header.append(line)
    if sorted(nodes, key=order.__getitem__) != [s.value for s in states]:
        raise DiagramError(f"{name}: transitions drew states {sorted(nodes)}, expected every declared state")
    lines = [f"digraph {name} {{", *header, '\t__start [label="" shape=point width=0.15]']
    lines += [nodes[s.value] for s in states]
    lines.append(f"\t__start -> {initial}")
    for (src, dst), labels in sorted(edges.items(), key=lambda e: (order[e[0][0]], order[e[0][1]])):
        lines.append(f"\t{src} -> {dst} [label={_quote(_label(labels))}]")
    if states is Activity:
        note = "\\l".join([f"{ANY_FAILURE}:", *_failure_note_lines()]) + "\\l"
        lines.append(f'\tfailures [label="{note}" shape=note]')
        lines.append(f"\tfailures -> {Activity.FAILED.value} [style=dashed arrowhead=none]")
    lines.append("}")
    return "\n".join(lines) + "\n"


# Markdown


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table_states() -> list[State]:
    activity, commitment = _order(Activity), _order(Commitment)
    states = [s for s in REACHABLE_STATES if not s.is_terminal]
    return sorted(states, key=lambda s: (activity[s.activity.value], commitment[s.commitment.value]))


def _classification() -> str:
    lines = [
        "# Classification table",
        "",
        "Generated by `streamfsm diagram` from `streamfsm.machine` and `streamfsm.classify`; do not edit.",
        "",
        "Every (reachable non-terminal state, failure edge) pair, as `diagnose(state, edge, Facts())`"
        " classifies it with no further facts. A state is `activity/commitment`. Real runs carry facts"
        " (transport kind, provider error kind, abort source, tool name) that refine the cause, the words and"
        " the verdict: a rejected request or a TLS failure is never retried, an identified rate limit is"
        " retried after the provider's delay.",
        "",
        "| state | edge | class | summary key | verdict | action | title |",
        "|---|---|---|---|---|---|---|",
    ]
    for state in _table_states():
        for edge in _FAILURES:
            d = diagnose(state, edge, Facts())
            cells = [
                f"`{state}`",
                f"`{edge.value}`",
                d.failure_class.value,
                f"`{d.summary_key}`",
                d.verdict.value,
                d.action.value,
                _cell(d.title),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _readme(activity_mmd: str, commitment_mmd: str) -> str:
    moves = sorted({t.value for t, _, _ in COMMITMENT_TRANSITIONS}, key=_TRIGGER_ORDER.__getitem__)
    lines = [
        "# streamfsm state diagrams",
        "",
        "Generated by `streamfsm diagram` from the declaration in `streamfsm/machine/_declaration.py`;",
        "do not edit by hand (a test fails when these files are stale). Sources: `activity.mmd`,",
        "`commitment.mmd` (Mermaid), `activity.dot`, `commitment.dot` (Graphviz DOT, e.g.",
        "`dot -Tsvg activity.dot -o activity.svg`), and `classification.md` (every state and failure edge",
        "with its class, verdict, action and title).",
        "",
        "A stream's state is a pair **(activity, commitment)**: two regions that move on the same triggers.",
        "The classifier's input is exactly that pair plus the failure edge that ended the run.",
        "",
        "## Activity: where the stream is",
        "",
        "```mermaid",
        activity_mmd.rstrip("\n"),
        "```",
        "",
        "| state | meaning |",
        "|---|---|",
        *(f"| `{a.value}` | {ACTIVITY_MEANING[a]} |" for a in Activity),
        "",
        f"`{ANY_FAILURE}` stands for each of the {len(_FAILURES)} failure edges, which lead from every"
        f" non-terminal state ({', '.join(f'`{a.value}`' for a in NON_TERMINAL_ACTIVITIES)}) to `failed`.",
        "A trigger a state does not list is illegal there: `StreamMachine.send` raises `IllegalTransition`.",
        "",
        "## Commitment: what already escaped",
        "",
        "Retry safety depends on what the world has already seen. Commitment only moves forward, and only"
        f" {' and '.join(f'`{m}`' for m in moves)} move it; every other trigger leaves it where it is.",
        "",
        "```mermaid",
        commitment_mmd.rstrip("\n"),
        "```",
        "",
        *commitment_and_trigger_tables(),
    ]
    return "\n".join(lines)


def commitment_and_trigger_tables() -> list[str]:
    """The commitment table, then the triggers' section: in diagrams/README.md and on the docs site."""
    return [
        "| commitment | meaning |",
        "|---|---|",
        *(f"| `{c.value}` | {COMMITMENT_MEANING[c]} |" for c in Commitment),
        "",
        "## Triggers",
        "",
        "| trigger | sent by | kind | resets the idle watchdog |",
        "|---|---|---|---|",
        *(_trigger_row(t) for t in Trigger),
        "",
    ]


def _trigger_row(trigger: Trigger) -> str:
    resets = "yes" if trigger.is_provider_progress else "no"
    return f"| `{trigger.value}` | {trigger.source.value} | {_trigger_kind(trigger)} | {resets} |"


def _trigger_kind(trigger: Trigger) -> str:
    if trigger.is_timeout:
        return "failure (watchdog)"
    return "failure" if trigger.is_failure else "progress"


# The rooms: the package's folders and the imports between them, read from the code

ROOMS: Final = {
    "machine": "the state machine: two regions, triggers, states",
    "classify": "a failure becomes facts, a diagnosis and words",
    "wire": "bytes become events: framings, adapters, the format registry",
    "runtime": "a run: its core, the drivers, retry, records",
    "tap": "runs inside an SDK's own HTTP client",
    "store": "the run index: SQLite or PostgreSQL",
    "relay": "the pass-through proxy",
    "frameworks": "agent frameworks' hooks",
    "testing": "the fault provider, scripts and the catalog",
    "cli": "the streamfsm command",
}
"""The rooms in the order imports flow; the package root (``streamfsm``: its face, ``otel``, these diagrams)
imports from them all and is left out of the picture."""


def _room_imports(package: Path) -> dict[str, set[str]]:
    """Each room and the rooms its modules import, inside functions and under TYPE_CHECKING too."""
    import ast

    edges: dict[str, set[str]] = {room: set() for room in ROOMS}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        room = parts[0]
        if room not in edges:
            continue
        here = ["streamfsm", *parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                names = [".".join([*base, *([node.module] if node.module else [])])]
                names += [f"{names[0]}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                first = name.split(".")[1] if name.startswith("streamfsm.") else None
                if first in ROOMS and first != room:
                    edges[room].add(first)
    return edges


def _reduced(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(imported, importer) for each import that no path through other rooms already implies."""

    def reaches(start: str, goal: str, skip: tuple[str, str]) -> bool:
        seen, todo = set(), [start]
        while todo:
            room = todo.pop()
            for nxt in edges[room]:
                if (room, nxt) == skip or nxt in seen:
                    continue
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return False

    return sorted(
        (imported, room)
        for room, targets in edges.items()
        for imported in targets
        if not reaches(room, imported, (room, imported))
    )


def _runtime_folders(package: Path) -> list[str]:
    runtime = package / "runtime"
    return sorted(p.parent.name for p in runtime.glob("*/__init__.py"))


def rooms_dot(package: Path = Path(__file__).parent) -> str:
    """The rooms as Graphviz DOT: an arrow from a room to each room that imports it directly, where no path
    through other rooms already says so; the runtime's folders inside it."""
    lines = [
        "digraph rooms {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=11];',
        '  edge [color="#555555"];',
    ]
    folders = _runtime_folders(package)
    for room, role in ROOMS.items():
        label = f"{room}\\n{role}"
        if room == "runtime" and folders:
            lines += [
                "  subgraph cluster_runtime {",
                '    label="runtime/"; fontname="Helvetica"; fontsize=11; style="rounded,dashed";',
                f'    runtime [label="{label}"];',
                *(f'    "runtime/{f}" [label="{f}/", shape=folder];' for f in folders),
                "  }",
            ]
        else:
            lines.append(f'  "{room}" [label="{label}"];')
    lines += [f'  "{a}" -> "{b}";' for a, b in _reduced(_room_imports(package))]
    lines.append("}")
    return "\n".join(lines) + "\n"


def rooms_mermaid(package: Path = Path(__file__).parent) -> str:
    """The same picture in Mermaid, which a code host draws."""
    lines = ["---", "title: rooms", "---", "flowchart TB"]
    folders = _runtime_folders(package)
    for room, role in ROOMS.items():
        node = f'  {room}["{room}<br/><small>{role}</small>"]'
        if room == "runtime" and folders:
            lines += [
                '  subgraph runtime_folder["runtime/"]',
                "  " + node,
                *(f"    runtime_{f}[/{f}/]" for f in folders),
                "  end",
            ]
        else:
            lines.append(node)
    lines += [f"  {a} --> {b}" for a, b in _reduced(_room_imports(package))]
    return "\n".join(lines) + "\n"


# Public


def _render(*, dot: bool) -> dict[str, str]:
    activity_initial, commitment_initial = INITIAL_STATE.activity.value, INITIAL_STATE.commitment.value
    files = {
        "activity.mmd": mermaid_source("activity", Activity, activity_machine, activity_initial),
        "commitment.mmd": mermaid_source("commitment", Commitment, commitment_machine, commitment_initial),
        "classification.md": _classification(),
        "rooms.dot": rooms_dot(),
        "rooms.mmd": rooms_mermaid(),
    }
    files["README.md"] = _readme(files["activity.mmd"], files["commitment.mmd"])
    if dot:
        files["activity.dot"] = dot_source("activity", Activity, activity_machine, activity_initial)
        files["commitment.dot"] = dot_source("commitment", Commitment, commitment_machine, commitment_initial)
    return dict(sorted(files.items()))


def render_diagrams() -> dict[str, str]:
    """Every file of ``diagrams/`` by name. Raises DiagramError when DOT cannot be produced."""
    _require_graphviz()
    return _render(dot=True)


def write_diagrams(out: Path) -> list[Path]:
    """Write every diagram file into ``out`` (created if needed) and return their paths."""
    files = render_diagrams()  # before writing anything, so a missing graphviz leaves no half-written folder
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        path = out / name
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    return paths


def stale_diagrams(out: Path) -> list[str]:
    """Names of files in ``out`` that are missing or differ from a fresh generation (with the reason, when
    a file cannot be checked here)."""
    try:
        _require_graphviz()
        files, unchecked = _render(dot=True), []
    except DiagramError as exc:
        files, unchecked = _render(dot=False), [f"{name} (cannot check: {exc})" for name in _DOT_FILES]
    stale = [
        name
        for name, text in files.items()
        if not (out / name).is_file() or (out / name).read_bytes() != text.encode("utf-8")
    ]
    return sorted(stale + unchecked)
