"""The errors page as HTML: groups of failed runs, and a page per run with its plain summary, verdict, facts,
timeline and a drawing of the machine with the run's path and failing state highlighted.

Everything is one self-contained document: inline CSS, the drawing as inline SVG laid out here (no script,
no font, no image, nothing fetched), so it renders the same offline, in a browser or from a saved file.
Every string from a record is escaped: a record is data anyone who can reach the upstream can shape.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..machine import ACTIVITY_TRANSITIONS, INITIAL_STATE, Activity

__all__ = ["errors_page", "machine_svg", "report_document", "run_page", "run_path"]

Link = Callable[[str], str]

_DASH: Final = "—"
_CSS: Final = """
:root{color-scheme:light;--ink:#0f172a;--muted:#475569;--line:#cbd5e1;--blue:#1d4ed8;--red:#b91c1c}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
background:#f8fafc}
header{background:#0f172a;color:#f8fafc;padding:14px 28px}
header h1{margin:0;font-size:18px;font-weight:600}
header p{margin:2px 0 0;color:#cbd5e1;font-size:13px}
main{padding:20px 28px;max-width:1280px}
h2{font-size:22px;margin:4px 0 6px}
h3{font-size:15px;margin:22px 0 8px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}
th,td{padding:7px 10px;border-bottom:1px solid #e2e8f0;text-align:left;vertical-align:top}
th{background:#f1f5f9;font-size:12px;text-transform:uppercase;letter-spacing:.03em;color:var(--muted)}
td.n{text-align:right;font-variant-numeric:tabular-nums;font-weight:600}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
a{color:var(--blue)}
.detail{color:var(--muted);max-width:80ch}
.verdict{display:inline-block;padding:6px 12px;border-radius:6px;font-weight:600;margin:8px 0}
.verdict.safe_auto_retry{background:#dcfce7;color:#166534}
.verdict.user_confirmed_retry{background:#fef9c3;color:#854d0e}
.verdict.no_retry{background:#fee2e2;color:#991b1b}
.facts th{width:220px;text-transform:none;letter-spacing:0;font-size:13px}
.empty{padding:24px;background:#fff;border:1px dashed var(--line);color:var(--muted)}
figure{margin:0;background:#fff;border:1px solid var(--line);padding:8px;overflow-x:auto}
figcaption{color:var(--muted);font-size:13px;padding:4px 6px}
section.run{margin-top:36px;border-top:3px solid var(--line);padding-top:12px}
"""

# -- the drawing ------------------------------------------------------------------------------------------

# Column and row of each activity (left to right, as diagrams/activity.mmd reads).
_GRID: Final = {
    Activity.IDLE: (0, 1),
    Activity.CONNECTING: (1, 1),
    Activity.STREAMING: (2, 1),
    Activity.GENERATING: (3, 0),
    Activity.TOOL_INPUT_OPEN: (3, 2),
    Activity.TOOL_CALL: (4, 1),
    Activity.TOOL_EXECUTING: (5, 2),
    Activity.FINISHED: (6, 0),
    Activity.FAILED: (6, 2),
}
_COL: Final = 162
_ROW: Final = 118
_BOX_W: Final = 128
_BOX_H: Final = 42
_PAD: Final = 24
_GREY: Final = "#94a3b8"
_BLUE: Final = "#1d4ed8"
_RED: Final = "#b91c1c"


def _centre(activity: Activity) -> tuple[float, float]:
    col, row = _GRID[activity]
    return _PAD + col * _COL + _BOX_W / 2, _PAD + 18 + row * _ROW + _BOX_H / 2


def _border(x: float, y: float, tx: float, ty: float) -> tuple[float, float]:
    """Where the line from the centre (x, y) towards (tx, ty) leaves the box."""
    dx, dy = tx - x, ty - y
    if dx == 0 and dy == 0:
        return x, y
    scale = min(
        (_BOX_W / 2) / abs(dx) if dx else math.inf,
        (_BOX_H / 2) / abs(dy) if dy else math.inf,
    )
    return x + dx * scale, y + dy * scale


def _edges() -> tuple[list[tuple[Activity, Activity]], list[Activity]]:
    """(progress edges between distinct activities, the activities with failure edges)."""
    progress: list[tuple[Activity, Activity]] = []
    failing: list[Activity] = []
    for trigger, src, dst in ACTIVITY_TRANSITIONS:
        if src is dst:
            continue
        if trigger.is_failure:
            if src not in failing:
                failing.append(src)
        elif (src, dst) not in progress:
            progress.append((src, dst))
    return progress, failing


def _activity(state: object) -> Activity | None:
    if not isinstance(state, str):
        return None
    try:
        return Activity(state.split("/", 1)[0])
    except ValueError:
        return None


def run_path(record: Mapping[str, Any]) -> list[Activity]:
    """The activities a run passed through, in order (from its timeline, whose entries carry the state
    after each event, and its final state), as ``streamfsm diagnose --diagram`` draws it."""
    path = [INITIAL_STATE.activity]
    timeline = _get(record, "timeline", "entries") or ()
    states = [entry.get("state") for entry in timeline if isinstance(entry, Mapping)]
    states.append(_get(record, "outcome", "state"))
    for state in states:
        activity = _activity(state)
        if activity is not None and activity is not path[-1]:
            path.append(activity)
    return path


def machine_svg(record: Mapping[str, Any] | None = None) -> str:
    """The activity machine as inline SVG; with ``record``, its path in blue (steps numbered) and the state
    it failed from in red, with the failing edge."""
    path = run_path(record) if record is not None else []
    failed = record is not None and _get(record, "outcome", "class") != "completed"
    failed_from = _activity(_get(record, "outcome", "from_state")) if failed and record else None
    edge = str(_get(record, "outcome", "edge") or "failure") if record is not None else ""
    steps = {(a, b): i + 1 for i, (a, b) in enumerate(itertools.pairwise(path))}
    progress, failing = _edges()
    width = _PAD * 2 + 6 * _COL + _BOX_W
    height = _PAD * 2 + 18 + 2 * _ROW + _BOX_H + 26
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}"'
        f' height="{height}" role="img" aria-label="state machine">',
        "<defs>",
        *(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7"'
            f' markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{color}"/>'
            "</marker>"
            for name, color in (("grey", _GREY), ("blue", _BLUE), ("red", _RED))
        ),
        "</defs>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    # failure edges: faint, except the one this run took
    for src in failing:
        took = failed_from is src
        if took:
            continue
        out.append(_line(src, Activity.FAILED, _GREY, 1, "grey", dash="3 4", opacity=0.55))
    for src, dst in progress:
        step = steps.get((src, dst))
        if step is None:
            out.append(_line(src, dst, _GREY, 1.3, "grey"))
    for (src, dst), step in steps.items():
        if dst is Activity.FAILED and src is failed_from:
            out.append(_line(src, dst, _RED, 3, "red", label=f"{step}. {edge}"))
        else:
            out.append(_line(src, dst, _BLUE, 3, "blue", label=str(step)))
    if failed_from is not None and (failed_from, Activity.FAILED) not in steps:
        out.append(_line(failed_from, Activity.FAILED, _RED, 3, "red", label=edge))
    visited = set(path)
    for activity in Activity:
        x, y = _centre(activity)
        fill, stroke, weight = "#f8fafc", "#64748b", 1.2
        if activity in visited:
            fill, stroke, weight = "#dbeafe", _BLUE, 2.2
        if activity is failed_from:
            fill, stroke, weight = "#fee2e2", _RED, 3.2
        out.append(
            f'<rect x="{x - _BOX_W / 2:.1f}" y="{y - _BOX_H / 2:.1f}" width="{_BOX_W}" height="{_BOX_H}"'
            f' rx="10" fill="{fill}" stroke="{stroke}" stroke-width="{weight}"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{y + 5:.1f}" text-anchor="middle" font-family="system-ui,sans-serif"'
            f' font-size="14" fill="#0f172a">{activity.value}</text>'
        )
        if activity is failed_from:
            out.append(
                f'<text x="{x:.1f}" y="{y - _BOX_H / 2 - 7:.1f}" text-anchor="middle"'
                f' font-family="system-ui,sans-serif" font-size="12" font-weight="700" fill="{_RED}">'
                "failed here</text>"
            )
    legend_y = height - 10
    out.append(
        f'<text x="{_PAD}" y="{legend_y}" font-family="system-ui,sans-serif" font-size="12" fill="#475569">'
        "blue: this run's path (steps numbered); red: the state it failed from and its failure edge;"
        " dashed: every other state's failure edges; self-loops not drawn</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def _line(
    src: Activity,
    dst: Activity,
    color: str,
    width: float,
    marker: str,
    *,
    label: str | None = None,
    dash: str | None = None,
    opacity: float = 1.0,
) -> str:
    x1, y1 = _centre(src)
    x2, y2 = _centre(dst)
    # a gentle bend, so that an edge and its reverse do not overlap
    mx, my = (x1 + x2) / 2, (y1 + y2) / 2
    dx, dy = x2 - x1, y2 - y1
    length = math.hypot(dx, dy) or 1.0
    bend = 18.0
    cx, cy = mx - dy / length * bend, my + dx / length * bend
    sx, sy = _border(x1, y1, cx, cy)
    ex, ey = _border(x2, y2, cx, cy)
    style = f' stroke-dasharray="{dash}"' if dash else ""
    parts = [
        f'<path d="M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {ex:.1f},{ey:.1f}" fill="none" stroke="{color}"'
        f' stroke-width="{width}"{style} opacity="{opacity}" marker-end="url(#arrow-{marker})"/>'
    ]
    if label:
        tx, ty = _label_at((sx, sy), (cx, cy), (ex, ey), label)
        parts.append(
            f'<text x="{tx:.1f}" y="{ty - 5:.1f}" text-anchor="middle" font-family="system-ui,sans-serif"'
            f' font-size="12" font-weight="700" fill="{color}" stroke="#ffffff" stroke-width="3"'
            f' paint-order="stroke">{html.escape(label)}</text>'
        )
    return "\n".join(parts)


_LABEL_CHAR_W: Final = 7.4  # a 12 px bold system-ui character, generously
_LABEL_AT: Final = (0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78, 0.15, 0.85)  # along the curve, middle first


def _label_at(
    start: tuple[float, float], control: tuple[float, float], end: tuple[float, float], label: str
) -> tuple[float, float]:
    """Where on the curve an edge's label (drawn 5 px above the point) covers no state's box and no
    "failed here": the point nearest the middle that is clear, else the middle."""
    half_w = _LABEL_CHAR_W * len(label) / 2 + 3
    boxes = []
    for activity in Activity:
        x, y = _centre(activity)
        # the box, widened by a margin, and the "failed here" line above it
        boxes.append((x - _BOX_W / 2 - 4, y - _BOX_H / 2 - 22, x + _BOX_W / 2 + 4, y + _BOX_H / 2 + 4))
    points = []
    for t in _LABEL_AT:
        u = 1 - t
        x = u * u * start[0] + 2 * u * t * control[0] + t * t * end[0]
        y = u * u * start[1] + 2 * u * t * control[1] + t * t * end[1]
        points.append((x, y))
        left, top, right, bottom = x - half_w, y - 5 - 13, x + half_w, y - 5 + 4
        if not any(left < x2 and x1 < right and top < y2 and y1 < bottom for x1, y1, x2, y2 in boxes):
            return x, y
    return points[0]


# -- pages --------------------------------------------------------------------------------------------------


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _e(value: object) -> str:
    if value is None:
        return _DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    return html.escape(str(value))


def _document(title: str, subtitle: str, body: str) -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        # Nothing may be fetched: not even a favicon (the page must render offline, and leak nothing).
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline';"
        ' img-src data:">'
        '<link rel=icon href="data:,">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1><p>{subtitle}</p></header><main>{body}</main></body></html>\n"
    )


def _groups_table(report: Mapping[str, Any], link: Link) -> str:
    groups = report.get("groups") or []
    if not groups:
        return "<p class=empty id=no-failures>No failed runs recorded.</p>"
    rows = [
        "<table id=groups><thead><tr><th>Count</th><th>What happened</th><th>Signature</th>"
        "<th>First seen (UTC)</th><th>Last seen (UTC)</th><th>Sample runs (request id)</th></tr>"
        "</thead><tbody>"
    ]
    for group in groups:
        key = group["key"]
        signature = "<br>".join(
            f"<span class=mono>{_e(key.get(name))}</span>"
            for name in ("summary_key", "provider", "model", "transport_kind")
        )
        samples = []
        for run_id, request_id in zip(
            group["sample_run_ids"], group.get("sample_request_ids") or [""] * 3, strict=False
        ):
            text = f"{_e(run_id[:12])}" + (f" ({_e(request_id)})" if request_id else "")
            samples.append(f'<a class="mono sample" href="{html.escape(link(run_id))}">{text}</a>')
        rows.append(
            f'<tr class=group data-summary-key="{_e(key.get("summary_key"))}">'
            f"<td class=n>{int(group['count'])}</td><td>{_e(group['title'])}</td><td>{signature}</td>"
            f"<td>{_e(_utc(group['first_seen']))}</td><td>{_e(_utc(group['last_seen']))}</td>"
            f"<td>{'<br>'.join(samples)}</td></tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _utc(iso: str | None) -> str | None:
    if iso is None:
        return None
    return iso.replace("T", " ").split(".")[0] + "Z"


def _summary_line(report: Mapping[str, Any]) -> str:
    groups = len(report.get("groups") or [])
    return (
        f"{int(report.get('failures', 0))} failed of {int(report.get('runs', 0))} runs in"
        f" {_e(report.get('source'))}: {groups} signature{'s' if groups != 1 else ''}"
    )


def errors_page(report: Mapping[str, Any], link: Link) -> str:
    """The errors page: failed runs grouped by signature; ``link(run_id)`` is each sample run's URL."""
    body = f"<h2 id=summary>{_summary_line(report)}</h2>" + _interrupted(report) + _groups_table(report, link)
    return _document("streamfsm relay: errors", "failed streams, grouped by signature", body)


def _interrupted(report: Mapping[str, Any]) -> str:
    """The streams a relay's death cut (``_journal``): not runs, listed apart with their request ids."""
    cut = report.get("interrupted") or []
    if not cut:
        return ""
    rows = "".join(
        f"<tr><td class=mono>{_e(item.get('request_id'))}</td><td class=mono>{_e(item.get('route'))}</td>"
        f"<td class=mono>{_e(item.get('account'))}</td><td>{_e(item.get('started_at'))}</td>"
        f"<td class=mono>{_e(_get(item, 'relay', 'id'))}</td></tr>"
        for item in cut
    )
    return (
        f"<h2 id=interrupted>{len(cut)} stream{'s' if len(cut) != 1 else ''} cut by the relay's death</h2>"
        f"<p class=detail>{_e(cut[0].get('what_happened'))}</p>"
        "<table><tr><th>request id</th><th>route</th><th>account</th><th>started at</th><th>relay</th></tr>"
        f"{rows}</table>"
    )


def _run_body(record: Mapping[str, Any]) -> str:
    outcome, retry, ids = record["outcome"], record["retry"], record["ids"]
    transport = record.get("transport") or {}
    relay = record.get("relay") or {}
    context = ids.get("context") or {}
    verdict = str(retry.get("verdict"))
    facts: list[tuple[str, object]] = [
        ("class", f"{outcome.get('class')} ({outcome.get('summary_key')})"),
        ("phase", outcome.get("phase")),
        ("edge", f"{outcome.get('edge')} (from {outcome.get('from_state')} to {outcome.get('state')})"),
        ("cause", outcome.get("cause")),
        ("confidence", outcome.get("confidence")),
        ("relay close", relay.get("close")),
        ("events relayed", relay.get("events_sent")),
        ("upstream events", relay.get("upstream_events")),
        (
            "chunks / bytes written",
            f"{relay.get('chunks_written')} / {relay.get('bytes_written')}" if relay else None,
        ),
        ("last event sent", relay.get("last_event_sent")),
        ("terminal event sent", relay.get("terminal_sent") if relay else None),
        ("reasoning seen", relay.get("reasoning_seen") if relay else None),
        ("request id", context.get("request_id")),
        ("route", context.get("route")),
        ("account", context.get("account")),
        ("provider", record.get("provider")),
        ("model", record.get("model")),
        ("http status", transport.get("status")),
        ("transport", transport.get("kind")),
        ("exception chain", " ← ".join(str(c) for c in transport.get("chain") or ()) or None),
        ("bytes received", transport.get("bytes_received")),
        ("provider request id", ids.get("provider_request_id")),
        ("response id", ids.get("response_id")),
        ("run id", ids.get("run_id")),
        ("trace id", ids.get("trace_id")),
        ("started at", record.get("started_at")),
        ("total time (s)", _get(record, "timings", "total_s")),
        ("watchdog fired", _get(record, "watchdog", "fired")),
        ("abort", _abort(record.get("abort"))),
    ]
    rows = "".join(f"<tr><th>{html.escape(name)}</th><td>{_e(value)}</td></tr>" for name, value in facts)
    evidence = "".join(f"<li class=mono>{_e(item)}</li>" for item in outcome.get("evidence") or ())
    retry_line = f"{_e(retry.get('reason'))}; action: <b>{_e(retry.get('action'))}</b>"
    if retry.get("retry_after_s") is not None:
        retry_line += f"; retry after {_e(retry['retry_after_s'])} s"
    return (
        f"<h2 class=title>{_e(record['summary']['title'])}</h2>"
        f"<p class=detail>{_e(record['summary'].get('detail'))}</p>"
        f'<div class="verdict {html.escape(verdict)}">verdict: {_e(verdict)}</div>'
        f"<p>{retry_line}</p>"
        "<h3>The machine</h3>"
        f"<figure class=diagram>{machine_svg(record)}"
        f"<figcaption>path: {' → '.join(a.value for a in run_path(record))}</figcaption></figure>"
        f"<h3>Facts</h3><table class=facts>{rows}</table>"
        + (f"<h3>Evidence</h3><ul>{evidence}</ul>" if evidence else "")
        + "<h3>Timeline</h3>"
        + _timeline(record.get("timeline") or {})
    )


def _abort(abort: object) -> str | None:
    if not isinstance(abort, Mapping):
        return None
    text = str(abort.get("source"))
    if abort.get("reason"):
        text += f" ({abort['reason']})"
    return text


def _timeline(timeline: Mapping[str, Any]) -> str:
    entries = [e for e in timeline.get("entries") or () if isinstance(e, Mapping)]
    rows = ["<table class=timeline><thead><tr><th>t (s)</th><th>event</th><th>state after</th></tr></thead>"]
    for entry in entries:
        event = _e(entry.get("event"))
        if entry.get("n"):
            event += f" x{_e(entry['n'])} (to {_e(entry.get('t_last'))} s)"
        rows.append(
            f"<tr><td class=n>{_e(entry.get('t'))}</td><td>{event}</td><td>{_e(entry.get('state'))}</td></tr>"
        )
    rows.append("</table>")
    omitted = timeline.get("omitted")
    if omitted:
        rows.append(
            f"<p class=detail>{_e(omitted)} entries ({_e(timeline.get('omitted_events'))} events)"
            " omitted in the middle.</p>"
        )
    return "".join(rows)


def run_page(record: Mapping[str, Any], back: str) -> str:
    """One run's page: plain summary, verdict, the machine with its path, facts and timeline."""
    body = f'<p><a href="{html.escape(back)}">← all errors</a></p>' + _run_body(record)
    subtitle = f"run <span class=mono>{_e(_get(record, 'ids', 'run_id'))}</span>"
    return _document("streamfsm relay: run", subtitle, body)


def report_document(report: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """The errors page and every sample run's page, as one self-contained file (links are anchors)."""
    sections = "".join(
        f'<section class=run id="run-{html.escape(str(_get(r, "ids", "run_id")))}">{_run_body(r)}</section>'
        for r in records
    )
    body = (
        f"<h2 id=summary>{_summary_line(report)}</h2>" + _interrupted(report) + _groups_table(report, _anchor)
    )
    body += sections
    return _document("streamfsm report: errors", "failed streams, grouped by signature", body)


def _anchor(run_id: str) -> str:
    return f"#run-{run_id}"


def sample_ids(report: Mapping[str, Any]) -> Iterable[str]:
    for group in report.get("groups") or ():
        yield from group["sample_run_ids"]
