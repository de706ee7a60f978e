"""The generated pages of the documentation site (``mkdocs.yml``), and the mkdocs hook that adds them.

Every picture and table of the machine is made here at build time from the declaration, the classifier and
the scenario catalog, so the site cannot disagree with the code and nothing generated is committed. The
diagrams are SVG drawn by Graphviz ``dot`` from the same DOT source as ``diagrams/*.dot``: a picture that
needs no JavaScript and no network to render (Mermaid would need its script at view time).

Imports are absolute: mkdocs loads this file by path, as a hook module outside the package.
"""

from __future__ import annotations

import ast
import html
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from streamfsm import diagrams
from streamfsm.classify import (
    CANCELLED,
    CONCURRENCY_WORDS,
    EVIDENCE,
    FINISHED_SAYS,
    GENERIC_WORDS,
    LIMIT_WORDS,
    LONG_WINDOW,
    LONG_WINDOW_WORDS,
    LONGEST_AUTOMATIC_WAIT_S,
    MONEY_PHRASES,
    MONEY_WORDS,
    MUST_CHANGE_WORDS,
    RESOURCE_PHRASES,
    SHORT_WINDOW,
    SHORT_WINDOW_WORDS,
    TITLE_BY_CLASS,
    TRANSIENT_WORDS,
    Facts,
    FailureClass,
    FinishCause,
    WordRule,
    diagnose,
    what_happened,
)
from streamfsm.machine import (
    ACTIVITY_TRANSITIONS,
    FAILURE_TRIGGERS,
    INITIAL_STATE,
    REACHABLE_STATES,
    Activity,
    Commitment,
    Trigger,
    activity_machine,
    commitment_machine,
)
from streamfsm.testing import (
    End,
    Fin,
    Headers,
    Keepalive,
    NextCreate,
    Rst,
    Scenario,
    Send,
    SendRaw,
    Sleep,
    Stall,
    Status,
    Step,
    Upgrade,
    WsClose,
    catalog,
)
from streamfsm.wire import FORMATS, Decision, Format

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

ROOT: Final = Path(__file__).resolve().parents[1]
_FAILURES: Final = tuple(t for t in Trigger if t in FAILURE_TRIGGERS)
_DOT_MISSING: Final = (
    "the docs' diagrams need Graphviz's dot program, which is not on PATH: install Graphviz"
    " (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; others: graphviz.org/download)"
)

_WIDE: Final = ("---", "hide:", "  - toc", "---", "")
"""Front matter for a page whose pictures and tables need the width of the table of contents (Material)."""


CLASS_MEANING: Final = {
    FailureClass.COMPLETED: "The provider's terminal event arrived: the run did not fail.",
    FailureClass.BEFORE_CONNECTION: "No response started: the connection, the request or the provider's"
    " answer to it failed before any stream was open.",
    FailureClass.EARLY_STREAM: "The stream was open but nothing visible had reached the user.",
    FailureClass.MID_GENERATION: "Part of the answer had been shown when the stream broke.",
    FailureClass.TOOL_INPUT_INTERRUPTED: "The model was still writing a tool call's arguments: the tool"
    " cannot have run.",
    FailureClass.TOOL_CALL_INTERRUPTED: "A tool call was complete but no tool had started.",
    FailureClass.TOOL_SIDE_EFFECT: "A tool had started when the stream broke: it may have changed things.",
    FailureClass.LOCAL_ABORT: "This side stopped the run (the user, the app, cancellation): never a"
    " disconnect.",
    FailureClass.WATCHDOG: "One of streamfsm's own deadlines fired: a stall is a failure, never a success.",
    FailureClass.PROVIDER_ERROR: "The provider said it failed: an HTTP error status or an in-band error"
    " event.",
    FailureClass.PROTOCOL_ERROR: "The provider sent something that breaks its stream format.",
    FailureClass.CONSUMER_ERROR: "The code reading the stream raised: the stream itself was fine.",
}
"""One line per class for the taxonomy page (a missing class fails the build)."""

INVARIANTS: Final = (
    (
        "Terminal states absorb; every run that is closed is in exactly one terminal state.",
        [
            ("tests/test_machine_properties.py", "test_terminal_absorption"),
            ("tests/test_machine_properties.py", "test_every_closed_run_is_in_exactly_one_terminal_state"),
        ],
    ),
    (
        "Classification is total: every (non-terminal state, failure edge) has one class and one verdict.",
        [
            ("tests/test_classify_properties.py", "test_classification_totality"),
            ("tests/test_classify_properties.py", "test_classification_totality_exhaustive"),
        ],
    ),
    (
        "Commitment is monotone: it never moves backwards.",
        [
            ("tests/test_machine_properties.py", "test_commitment_is_monotone"),
            ("tests/test_machine_properties.py", "test_commitment_is_monotone_over_the_whole_table"),
        ],
    ),
    (
        "Soundness: `safe_auto_retry` implies nothing visible was delivered and no effectful tool started.",
        [
            ("tests/test_classify_properties.py", "test_soundness_of_safe_auto_retry"),
            ("tests/test_classify_properties.py", "test_soundness_of_safe_auto_retry_exhaustive"),
        ],
    ),
    (
        "A failure in `tool_input_open` or `tool_call` is never a tool execution failure.",
        [
            ("tests/test_classify_properties.py", "test_tool_input_failure_is_never_tool_side_effect"),
        ],
    ),
    (
        "A watchdog timeout is always a failure, never a silent success.",
        [
            ("tests/test_machine_properties.py", "test_timeout_is_always_a_failure"),
            ("tests/test_classify_properties.py", "test_timeout_is_classified_watchdog"),
        ],
    ),
    (
        "The compiled table equals the `transitions` machine on every sequence.",
        [("tests/test_machine_properties.py", "test_differential_compiled_equals_transitions")],
    ),
    (
        "Counters equal the number of events of each kind; the timeline never exceeds its bound.",
        [
            (
                "tests/runtime/test_record_safety.py",
                "test_a_100k_delta_run_keeps_its_record_and_timeline_within_a_fixed_bound",
            ),
        ],
    ),
    (
        "No secret planted anywhere in the input ever appears in the export.",
        [
            (
                "tests/runtime/test_record_safety.py",
                "test_no_planted_secret_reaches_record_log_message_or_repr",
            )
        ],
    ),
)
"""DESIGN.md §4's invariants and the tests that check them (a test that is gone fails the build)."""


class DocsError(RuntimeError):
    """A generated page cannot be made (a missing program, a test the docs name that is gone)."""


# Pictures


def svg(dot_source: str) -> str:
    """Graphviz ``dot`` draws DOT source as SVG (no XML prologue: the file is served as an image)."""
    dot = shutil.which("dot")
    if dot is None:
        raise DocsError(_DOT_MISSING)
    done = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DocsError(f"dot failed: {done.stderr.strip()}")
    start = done.stdout.index("<svg")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + done.stdout[start:]


def _dot_sources() -> dict[str, str]:
    return {
        "activity": _for_the_page(
            diagrams.dot_source("activity", Activity, activity_machine, INITIAL_STATE.activity.value)
        ),
        "commitment": _for_the_page(
            diagrams.dot_source("commitment", Commitment, commitment_machine, INITIAL_STATE.commitment.value)
        ),
    }


_EDGE: Final = re.compile(r'^(\t(\w+) -> (\w+) \[)label="([^"]*)"\]\n', flags=re.M)
_NOTE: Final = re.compile(r"^\tfailures\b.*\n", flags=re.M)
_FONT: Final = 'fontname="Helvetica,Arial,sans-serif"'
_DOT_NEWLINE: Final = "\\n"  # a centred line break in a DOT label
_PAGE_STYLE: Final = (
    f"\tgraph [{_FONT} fontsize=13 nodesep=0.3 ranksep=0.4]\n\tnode [{_FONT} fontsize=13]\n"
    f'\tedge [{_FONT} fontsize=11 fontcolor="#334155" color="#475569"]\n'
)


def _for_the_page(source: str) -> str:
    """The DOT of ``diagrams/`` laid out for a page's width: top to bottom (left to right, the activity
    region is some 3,000 px wide and unreadable shrunk), one trigger a line, a sans-serif font; no self-loops
    (each state's page lists what keeps it there), and the edges every state has to ``failed`` dashed and
    unlabelled (the machine page lists the failure edges)."""

    def edge(match: re.Match[str]) -> str:
        start, source_state, target, label = match.groups()
        if source_state == target:
            return ""
        if label == diagrams.ANY_FAILURE and target == Activity.FAILED.value:
            return f'{start}style=dashed color="#b91c1c" arrowsize=0.6]\n'
        return f'{start}label="{label.replace(" | ", _DOT_NEWLINE)}"]\n'

    source = _NOTE.sub("", _EDGE.sub(edge, source.replace("rankdir=LR", "rankdir=TB")))
    head, _, body = source.partition("\n\tedge [")  # after the drawing's own defaults, which these override
    defaults, _, rest = body.partition("\n")
    return f"{head}\n\tedge [{defaults}\n{_PAGE_STYLE}{rest}"


# Pages


def _state_link(activity: Activity, up: str = "") -> str:
    return f"[`{activity.value}`]({up}{activity.value}.md)"


def _trigger_list(triggers: Iterable[Trigger]) -> str:
    names = sorted({t.value for t in triggers}, key=[t.value for t in Trigger].index)
    return ", ".join(f"`{n}`" for n in names)


def _machine_index() -> str:
    lines = [
        *_WIDE,
        "# The machine",
        "",
        "Every stream runs through one state machine, declared as data in"
        " `streamfsm/machine/_declaration.py`. A stream's state is a pair **(activity, commitment)**: two"
        " regions that move on the same triggers. The classifier's input is exactly that pair plus the"
        " failure edge that ended the run. Both pictures and every table on these pages are generated from"
        " the declaration when the site is built.",
        "",
        "## Activity: where the stream is",
        "",
        "[![The activity region: states and the triggers between them](activity.svg){ .diagram }]"
        '(activity.svg "Open the picture at full size")',
        "",
        "[The picture at full size](activity.svg) (zoom it in the browser).",
        "",
        "| state | meaning |",
        "|---|---|",
        *(f"| {_state_link(a)} | {diagrams.ACTIVITY_MEANING[a]} |" for a in Activity),
        "",
        f"A dashed red arrow stands for each of the {len(_FAILURES)} failure edges"
        f" ({_trigger_list(_FAILURES)}), which lead from every non-terminal state to `failed`. Triggers that"
        " keep a state where it is are not drawn: each state's page lists them. A trigger a state does not"
        " list is illegal there: `StreamMachine.send` raises `IllegalTransition`.",
        "",
        "## Commitment: what already escaped",
        "",
        "![The commitment region: none, visible, side_effect](commitment.svg){ .diagram }",
        "",
        *diagrams.commitment_and_trigger_tables(),
        "See also [the invariants](invariants.md) and [the failure taxonomy](../taxonomy.md).",
        "",
    ]
    return "\n".join(lines)


def _state_page(activity: Activity) -> str:
    into = [(t, src) for t, src, dst in ACTIVITY_TRANSITIONS if dst is activity and src is not activity]
    out = [(t, dst) for t, src, dst in ACTIVITY_TRANSITIONS if src is activity and dst is not activity]
    stay = [t for t, src, dst in ACTIVITY_TRANSITIONS if src is activity and dst is activity]
    lines = [
        *_WIDE,
        f"# `{activity.value}`",
        "",
        f"{diagrams.ACTIVITY_MEANING[activity].capitalize()}.",
        "",
    ]
    if activity is INITIAL_STATE.activity:
        lines += ["Every run starts here.", ""]
    lines += ["## Events that lead in", ""]
    lines += _edges_by_state(into, "from") or ["None: a run is created in this state."]
    lines += ["", "## Events that lead out", ""]
    progress_out = [(t, dst) for t, dst in out if t not in FAILURE_TRIGGERS]
    lines += _edges_by_state(progress_out, "to") or ["None: this state is terminal; it absorbs every run."]
    if any(t in FAILURE_TRIGGERS for t, _ in out):
        lines.append(f"- to {_state_link(Activity.FAILED)}: every failure edge ({_trigger_list(_FAILURES)})")
    if stay:
        lines += ["", f"Staying in `{activity.value}`: {_trigger_list(stay)}."]
    states = sorted(
        (s for s in REACHABLE_STATES if s.activity is activity),
        key=lambda s: list(Commitment).index(s.commitment),
    )
    lines += ["", "## Commitment here", ""]
    lines += [f"- `{s.commitment.value}`: {diagrams.COMMITMENT_MEANING[s.commitment]}" for s in states]
    lines += ["", "## How a failure here is classified", ""]
    if activity.is_terminal:
        lines.append("A terminal state: no edge leaves it, so nothing fails in it.")
        return "\n".join(lines) + "\n"
    phase = diagnose(states[0], _FAILURES[0], Facts()).phase.value
    lines += [
        "As `diagnose(state, edge, Facts())` classifies each failure edge with no further facts. Real runs"
        " carry facts (transport kind, provider error kind, abort source, tool name) that refine the cause,"
        f" the words and the verdict. The phase is `{phase}` throughout; a summary key is"
        " `<class>.<detail>` and links to its entry in [the taxonomy](../taxonomy.md).",
    ]
    for state in states:
        lines += [
            "",
            f"### With commitment `{state.commitment.value}`",
            "",
            "| edge | summary key | verdict | action | title |",
            "|---|---|---|---|---|",
        ]
        for edge in _FAILURES:
            d = diagnose(state, edge, Facts())
            anchor = d.summary_key.replace(".", "-")
            lines.append(
                f"| `{edge.value}` | [`{d.summary_key}`](../taxonomy.md#{anchor}) | {d.verdict.value}"
                f" | {d.action.value} | {diagrams._cell(d.title)} |"
            )
    return "\n".join(lines) + "\n"


def _edges_by_state(edges: list[tuple[Trigger, Activity]], word: str) -> list[str]:
    by_state: dict[Activity, list[Trigger]] = {}
    for trigger, other in edges:
        by_state.setdefault(other, []).append(trigger)
    return [
        f"- {word} {_state_link(other)}: {_trigger_list(by_state[other])}"
        for other in Activity
        if other in by_state
    ]


def _test_function(path: str, name: str) -> tuple[str, bool]:
    """(source, is a Hypothesis property) of a test function, read from its file."""
    file = ROOT / path
    if not file.is_file():
        raise DocsError(f"the invariants page names {path}, which is not there")
    source = file.read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            text = "\n".join(source.splitlines()[start - 1 : node.end_lineno])
            given = any("given" in ast.unparse(d) for d in node.decorator_list)
            return text, given
    raise DocsError(f"the invariants page names {path}::{name}, which is not there")


def _invariants() -> str:
    lines = [
        "# Invariants",
        "",
        "What holds for every run, whatever the provider sends. Each invariant is checked by the tests named"
        " under it, most of them Hypothesis properties over random event sequences (legal and illegal);"
        " their source is shown as it is in the repository when this site was built.",
        "",
    ]
    for number, (text, tests) in enumerate(INVARIANTS, 1):
        lines += [f"## {number}. {text}", ""]
        for path, name in tests:
            source, given = _test_function(path, name)
            kind = "Hypothesis property" if given else "test"
            lines += [f'??? note "{kind}: `{path}::{name}`"', ""]
            lines += ["    ```python", *(f"    {line}" if line else "" for line in source.splitlines())]
            lines += ["    ```", ""]
    return "\n".join(lines)


# Taxonomy


def _wire(steps: Iterable[Step], limit: int = 12) -> str:
    """What the wire looked like, one step a line (long bodies cut)."""

    def cut(data: bytes, size: int = 300) -> str:
        text = data.decode("utf-8", "replace")
        return text if len(text) <= size else text[:size] + " …"

    lines: list[str] = []
    for step in steps:
        if isinstance(step, Status):
            lines.append(f"HTTP {step.code}" + "".join(f"\n{k}: {v}" for k, v in step.headers))
            lines.append("\n" + cut(step.body))
        elif isinstance(step, Headers):
            lines.append(f"HTTP {step.code}" + "".join(f"\n{k}: {v}" for k, v in step.headers) + "\n")
        elif isinstance(step, Send) and not _is_text(step.data):
            lines.append(f"[{len(step.data)} bytes of binary framing]")  # AWS event-stream messages
        elif isinstance(step, Send):
            lines.append(cut(step.data).rstrip("\r\n"))
        elif isinstance(step, SendRaw):
            lines.append(f"[raw bytes] {cut(step.data)!r}")
        elif isinstance(step, Keepalive):
            lines.append(f"[{step.count} keepalives, every {step.every} s] {cut(step.frame).strip()}")
        elif isinstance(step, Sleep):
            lines.append(f"[silent for {step.seconds} s]")
        elif isinstance(step, Upgrade):
            lines.append("[WebSocket upgrade: 101, then the client's response.create]")
        elif isinstance(step, NextCreate):
            lines.append("[the client's next response.create]")
        elif isinstance(step, WsClose):
            lines.append(
                f"[close frame {step.code}]" if step.code is not None else "[close frame without a code]"
            )
        else:
            said = {Fin: "connection closed (FIN)", Rst: "connection reset (RST)", End: "body ends cleanly"}
            lines.append(
                f"[{said.get(type(step), 'the server goes silent' if isinstance(step, Stall) else '?')}]"
            )
    if len(lines) > limit:
        lines = [*lines[: limit - 2], f"[… {len(lines) - limit + 1} more steps]", lines[-1]]
    return "\n".join(lines)


def _is_text(data: bytes) -> bool:
    return b"\x00" not in data


def _readable(scenario: Scenario) -> bool:
    """Whether every body step of ``scenario`` reads as text (an SSE or JSON wire, not a binary one)."""
    return all(_is_text(step.data) for step in scenario.script if isinstance(step, Send))


def _scenario_key(scenario: Scenario) -> str | None:
    if scenario.expected_class is None or scenario.expected_cause is None:
        return None
    return f"{scenario.expected_class.value}.{scenario.expected_cause}"


def _words(klass: FailureClass, cause: str) -> tuple[str, str]:
    """(title, plain words) of a summary key, as the classifier's summaries say them."""
    if klass is FailureClass.COMPLETED:
        return FINISHED_SAYS.get(cause, FINISHED_SAYS["finished"])
    what = what_happened(klass, cause)
    return TITLE_BY_CLASS.get(klass, what), what


def _taxonomy() -> str:
    keys: dict[FailureClass, set[str]] = {k: set() for k in FailureClass}
    for state in REACHABLE_STATES:
        if not state.is_terminal:
            for edge in _FAILURES:
                d = diagnose(state, edge, Facts())
                keys[d.failure_class].add(d.cause)
    keys[FailureClass.COMPLETED] |= {c.value for c in FinishCause}
    examples: dict[str, list[Scenario]] = {}
    for scenario in catalog():
        if not scenario.streaming:
            continue  # a non-streaming call: its class has a streaming example of its own
        key = _scenario_key(scenario)
        if key is not None and scenario.expected_class is not None and scenario.expected_cause is not None:
            keys[scenario.expected_class].add(scenario.expected_cause)
            examples.setdefault(key, []).append(scenario)
    lines = [
        "# Failure taxonomy",
        "",
        "Every class and summary key (`<class>.<detail>`) the classifier gives, with its plain-language"
        " words, generated from `streamfsm.classify`; and for each, where the catalog has one, a real-world"
        " example from `streamfsm.testing.catalog()`: what the wire looked like, and what the run was"
        " classified as. Which state and edge lead to which class is on each"
        " [state's page](machine/index.md).",
        "",
        "| class | meaning |",
        "|---|---|",
        *(f"| [{k.value}](#{k.value}) | {CLASS_MEANING[k]} |" for k in FailureClass),
        "",
    ]
    for klass in FailureClass:
        lines += [f"## {klass.value} {{ #{klass.value} }}", "", CLASS_MEANING[klass], ""]
        for cause in sorted(keys[klass]):
            key = f"{klass.value}.{cause}"
            title, words = _words(klass, cause)
            heading = f"### `{key}` {{ #{key.replace('.', '-')} }}"
            lines += [heading, "", f"**{title}.** {words.rstrip('.')}.", ""]
            found = sorted(examples.get(key, []), key=lambda s: (not _readable(s), s.name))  # text first
            if not found:
                lines += ["No catalog scenario shows this one yet.", ""]
                continue
            first = found[0]
            verdict = first.expected_verdict.value if first.expected_verdict else "-"
            action = first.expected_action.value if first.expected_action else "-"
            fired = first.expected_edge.value if first.expected_edge else "-"
            lines += [
                f"Example: `{first.name}`: {html.escape(first.description)} (edge `{fired}`, verdict"
                f" {verdict}, action {action}).",
                "",
                # wrapped, not scrolled sideways (docs/style.css: pre.wire)
                f'<pre class="wire"><code>{html.escape(_wire(first.script))}</code></pre>',
                "",
            ]
            if len(found) > 1:
                lines += ["Also in the catalog: " + ", ".join(f"`{s.name}`" for s in found[1:]) + ".", ""]
    return "\n".join([*lines, *_provider_words()])


def _provider_words() -> list[str]:
    """The evidence table that reads a provider's error as a kind, in order, and the words each row reads,
    with their sources, from ``classify._provider``."""

    def said(source: str) -> str:
        return html.escape(source, quote=False).replace("*", "\\*").replace("|", "\\|")

    def unless(rule: WordRule) -> str:
        return f" (not with {', '.join(f'`{w}`' for w in rule.unless)})" if rule.unless else ""

    def words(title: str, rules: tuple[WordRule, ...]) -> list[str]:
        return [
            f"**{title}**",
            "",
            "| words in a code, type or status | kind | sent by |",
            "|---|---|---|",
            *(f"| `{' '.join(r.words)}`{unless(r)} | {r.kind.value} | {said(r.source)} |" for r in rules),
            "",
        ]

    def phrase(name: str, pattern: str, source: str) -> str:
        return f"- `{name}`: `{said(pattern)}` ({said(source)})"

    return [
        "## How a provider error's kind is read { #provider-error-words }",
        "",
        "An error is read as evidence, weighed in one ordered table: the first row that reads something"
        " decides, its markers (the run's `evidence`) say which evidence it was, and `row=<name>` names the"
        " row. What the body says beats the status; a time window decides between transient and not; words"
        " that say the model cannot be served are never transient. Then a rate limit the request alone"
        ' exceeds is `request_too_large` (a 413, or "Limit N, Requested M" with M > N), and an invalid'
        " request that speaks of the context window is `context_overflow`.",
        "",
        "| # | row | reads | decides | why it outranks the rows below |",
        "|---|---|---|---|---|",
        *(
            f"| {i} | `{row.name}` | {said(row.reads)} | {said(row.decides)} | {said(row.why)} |"
            for i, row in enumerate(EVIDENCE, 1)
        ),
        "",
        "Codes, types and statuses in the error body are read as words (split on `_`, `-`, `.`, spaces and"
        " camel case, case-folded), so `too_many_requests`, `TooManyRequests` and `Too Many Requests` are one"
        " code. Each group below is read by its row; within a group the first rule that matches wins.",
        "",
        *words("Concurrency (`concurrency_code`)", CONCURRENCY_WORDS),
        *words("Money (`money_code`)", MONEY_WORDS),
        *words("What must change (`must_change_code`)", MUST_CHANGE_WORDS),
        *words("Limits on use, decided by their window (`limit_code`)", LIMIT_WORDS),
        *words("What a wait cures, and kinds a status only confirms (`transient_code`)", TRANSIENT_WORDS),
        *words("Broad categories (`generic_code`)", GENERIC_WORDS),
        "**Words in the message.** Only the phrase's name reaches the evidence (`message=money:<name>`,"
        " `message=resource:<name>`, ...), never the message.",
        "",
        *(phrase(m.name, m.pattern.pattern, m.source) for m in MONEY_PHRASES),
        *(phrase(r.name, r.pattern.pattern, r.source) + f": {r.kind.value}" for r in RESOURCE_PHRASES),
        phrase(SHORT_WINDOW.name, SHORT_WINDOW.pattern.pattern, SHORT_WINDOW.source)
        + ": per second or minute",
        phrase(LONG_WINDOW.name, LONG_WINDOW.pattern.pattern, LONG_WINDOW.source)
        + ": per hour, day, week or month",
        phrase(CANCELLED.name, CANCELLED.pattern.pattern, CANCELLED.source),
        "",
        f"A code's words count a window too (per second or minute: {', '.join(sorted(SHORT_WINDOW_WORDS))};"
        f" longer: {', '.join(sorted(LONG_WINDOW_WORDS))}). A quota, usage or plan phrase"
        f" ({', '.join(f'`{m.name}`' for m in MONEY_PHRASES if m.limit)}) with a short window, or with a wait"
        f" the provider states of at most {LONGEST_AUTOMATIC_WAIT_S:g} s, is a rate limit.",
        "",
        "A wait the provider states (`retry-after`, Gemini's `RetryInfo`, the reset of a rate limit whose"
        ' remaining count is 0, or words such as "try again in 9m38s") longer than'
        f" {LONGEST_AUTOMATIC_WAIT_S:g} s is never an automatic retry: the verdict asks first.",
        "",
    ]


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _module_says(thing: object) -> str:
    return _first_line(sys.modules[getattr(thing, "__module__", "")].__doc__)


def _formats_index() -> str:
    lines = [
        "# Wire formats",
        "",
        "Each format streamfsm reads is one object in one registry (`streamfsm.wire.FORMATS`): its framing,",
        "its adapter, how a request asks for a stream, its whole-answer finish reasons, its OpenTelemetry",
        "name and the paths the tap knows it by. These pages are generated from that registry and from the",
        "fault provider's catalog.",
        "",
        "| format | streamed as | the tap knows it by | scenarios |",
        "|---|---|---|---|",
    ]
    scenarios = catalog()
    for fmt in FORMATS.values():
        count = sum(1 for s in scenarios if s.format == fmt.name)
        paths = ", ".join(f"`{path}`" for path in fmt.paths)
        types = ", ".join(f"`{t}`" for t in fmt.stream_types)
        lines.append(f"| [`{fmt.name}`]({fmt.name}.md) | {types} | {paths} | {count} |")
    return "\n".join([*lines, ""])


def _format_page(fmt: Format) -> str:
    whole = ", ".join(f"`{reason}`" for reason in sorted(fmt.whole_answers))
    lines = [
        f"# `{fmt.name}`",
        "",
        "| | |",
        "|---|---|",
        f"| Streamed as | {', '.join(f'`{t}`' for t in fmt.stream_types)} |",
        f"| Framing | {_module_says(fmt.framing)} |",
        f"| Adapter | `{fmt.adapter.__name__}`: {_module_says(fmt.adapter)} |",
        f"| The tap knows it by the path | {', '.join(f'`{path}`' for path in fmt.paths)} |",
        f"| A request asks for a stream | {_first_line(fmt.asks_to_stream.__doc__)} |",
        f"| A whole answer | {_first_line(fmt.answer_frames.__doc__)} |",
        f"| Whole-answer finish reasons | {whole}; any other reason is never a whole answer |",
        f"| OpenTelemetry `gen_ai.provider.name` | `{fmt.otel_name}` |",
        f"| Continuation after a cut | {'rewritten' if fmt.continuation else 'not supported'} |",
        "",
        *_definitions(fmt),
        "## Scenarios in the catalog",
        "",
        "What the fault provider plays in this format (`streamfsm harness`), and what streamfsm says.",
        "",
        "| scenario | summary key | verdict |",
        "|---|---|---|",
    ]
    for scenario in catalog():
        if scenario.format == fmt.name:
            key = _scenario_key(scenario) or "-"
            verdict = scenario.expected_verdict.value if scenario.expected_verdict is not None else "-"
            lines.append(f"| `{scenario.name.partition('/')[2]}` | `{key}` | {verdict} |")
    return "\n".join([*lines, ""])


_DECIDED: Final = {
    Decision.READ: "read",
    Decision.INFORMATIONAL: "informational",
    Decision.NOT_UNDERSTOOD: "**not understood**",
}
_MEMBER_KINDS: Final = {
    "events": "Stream events",
    "content": "Content kinds",
    "tools": "Tool kinds",
    "finishes": "Finish reasons",
}


def _definitions(fmt: Format) -> list[str]:
    """What the format decides about every member its provider defines (``Format.definitions``)."""
    tables = {kind: table for kind, table in fmt.definitions.tables().items() if table}
    if not tables:
        return []
    lines = [
        "## What the provider defines, and what streamfsm does with it",
        "",
        "Every member of the provider's own typed definitions (its SDK's models, its API reference), decided:"
        " *read* (it drives the machine), *informational* (counted, harmless) or *not understood* (counted as"
        " unread content: never silently a whole answer). A test walks the installed SDKs' definitions and"
        " fails, naming the member, when one has no decision here.",
        "",
    ]
    for kind, table in tables.items():
        lines += [f"### {_MEMBER_KINDS[kind]}", "", "| member | decision | what it means | defined in |"]
        lines.append("|---|---|---|---|")
        for member, decided in table.items():
            means, source = (text.replace("|", "\\|") or "-" for text in (decided.means, decided.source))
            lines.append(f"| `{member}` | {_DECIDED[decided.decision]} | {means} | {source} |")
        lines.append("")
    return lines


def _reference(module: str, intro: str) -> str:
    return f"# `{module}`\n\n{intro}\n\n::: {module}\n"


def pages() -> dict[str, str]:
    """Every generated file of the site, by its path under ``docs/``."""
    files = {f"machine/{name}.svg": svg(source) for name, source in _dot_sources().items()}
    files["guides/rooms.svg"] = svg(diagrams.rooms_dot())  # the layout guide's picture
    files["machine/index.md"] = _machine_index()
    files.update({f"machine/{a.value}.md": _state_page(a) for a in Activity})
    files["machine/invariants.md"] = _invariants()
    files["taxonomy.md"] = _taxonomy()
    files["formats/index.md"] = _formats_index()
    files.update({f"formats/{fmt.name}.md": _format_page(fmt) for fmt in FORMATS.values()})
    files["reference/index.md"] = _reference(
        "streamfsm", "The public API: everything in `streamfsm.__all__`, from the docstrings."
    )
    files["reference/testing.md"] = _reference(
        "streamfsm.testing", "The test kit for your own suite: the fault provider, scripts and the catalog."
    )
    return files


# The mkdocs hook (mkdocs.yml: hooks)

_FORMATS_INDEX: Final = "formats/index.md"


def format_nav(nav: list[object]) -> list[object]:
    """``nav`` with its ``formats/index.md`` entry made a section of the index and a page per registered
    format (the registry decides the pages, so the nav cannot miss one)."""
    pages = [_FORMATS_INDEX, *(f"formats/{fmt.name}.md" for fmt in FORMATS.values())]
    out: list[object] = []
    for item in nav:
        if isinstance(item, dict) and len(item) == 1:
            ((title, value),) = item.items()
            if value == _FORMATS_INDEX:
                item = {title: pages}
            elif isinstance(value, list):
                item = {title: format_nav(value)}
        out.append(item)
    return out


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    if config.nav is not None:
        config.nav = format_nav(config.nav)
    return config


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    try:
        generated = pages()
    except (DocsError, diagrams.DiagramError) as exc:
        # mkdocs prints a PluginError as one line (what to do); any other exception as a traceback
        raise PluginError(str(exc)) from None
    for path, content in generated.items():
        if files.get_file_from_path(path) is not None:
            raise PluginError(f"docs/{path} is generated at build time: delete the hand-made copy")
        files.append(File.generated(config, path, content=content))
    return files
