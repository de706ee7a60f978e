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
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ..machine import ACTIVITY_TRANSITIONS, INITIAL_STATE, Activity
from ..runtime import SIGNATURE
from ._errors import BY, FILTERS, NONE, WINDOWS, PageQuery, group_filters

__all__ = [
    "Links",
    "errors_page",
    "machine_svg",
    "report_document",
    "run_page",
    "run_path",
    "runs_page",
    "trend_svg",
]

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
table#groups,table#runs{table-layout:fixed;font-size:13px;line-height:1.35}
#groups td,#groups th,#runs td,#runs th{padding:5px;overflow-wrap:anywhere}
#groups th,#runs th{font-size:11px;overflow-wrap:normal}
#groups .mono,#runs .mono{font-size:11.5px}
#groups a.sample{display:block;margin-bottom:3px}
a.sample .rid{display:block;font-size:11px;color:var(--muted)}
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
nav#views{margin:0 0 12px;font-size:14px}
form#filters,form#search{background:#fff;border:1px solid var(--line);padding:10px 12px;margin:0 0 10px;
font-size:13px}
form label{margin-right:8px;white-space:nowrap}
form input,form select,form button{font:inherit;padding:3px 6px}
.chips{margin-top:6px}
.chip{display:inline-block;background:#e0e7ff;border-radius:10px;padding:1px 8px;margin-right:6px}
svg.trend{display:block}
td.n{white-space:nowrap}
.trend-charts{display:flex;gap:8px;align-items:flex-end}
.trend-axis{display:flex;justify-content:space-between;color:var(--muted);font-size:11px}
.trend-text{font-size:12px;color:var(--ink)}
.trend-text span{display:block}
.sub{display:block;color:var(--muted);font-size:12px;font-weight:400}
.meaning{display:block;color:var(--muted);font-size:12px}
p.count{font-size:17px;font-weight:600;margin:10px 0}
nav#sort{margin:-6px 0 12px;font-size:14px}
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


def _id(value: object) -> str:
    """A name or id (a summary key, a route, a request id), escaped, that may break after its punctuation
    (``.``, ``/``, ``_``, ``:``, ``-``) rather than widen its column."""
    return _BREAK_AFTER.sub(r"\1<wbr>", _e(value)) if value is not None else _DASH


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


_NAME_LABELS: Final = {
    "summary_key": "summary key",
    "provider": "provider",
    "model": "model",
    "transport_kind": "transport",
    "class": "class",
    "route": "route",
    "account": "account",
    "close": "close kind",
}
_VIEW_NOUNS: Final = {
    "signature": ("signature", "signatures"),
    "class": ("class", "classes"),
    "route": ("route", "routes"),
    "account": ("account", "accounts"),
    "provider": ("provider", "providers"),
    "model": ("model", "models"),
}
_TREND_W: Final = 192  # 8 px a bar of 24
_RECENT_W: Final = 72  # 6 px a bar of the last hour's 12
_TREND_H: Final = 48
_SORT_LABELS: Final = {
    "count": "most failures",
    "rate": "highest failure rate",
    "change": "largest rise since the window before",
}
# The groups' columns at 1280 px (the page's width less its margins: 1224 px); "What happened" takes the rest.
_GROUP_COLUMNS: Final = (
    ("Failed", "5%"),
    ("Runs", "5%"),
    ("Failure rate", "5.5%"),
    ("Change", "7%"),
    ("Trend", f"{_TREND_W + _RECENT_W + 8 + 12}px"),
    ("What happened", None),
    ("", "13.5%"),  # the view's names
    ("Last seen (UTC)", "7.5%"),
    ("Sample runs (request id)", "13%"),
)
"""The groups' columns (at 1280 px the page is 1224 px wide within its margins); "What happened" the rest."""
_RUN_COLUMNS: Final = (
    ("Started (UTC)", "7.6%"),
    ("Run", "7.8%"),
    ("Request id", "12.8%"),
    ("What happened", None),
    ("Summary key", "10%"),
    ("Route", "9.5%"),
    ("Account", "10%"),
    ("Model", "9.5%"),
    ("Close kind", "11.6%"),
)
"""The runs' columns: at 1280 px each id (a UUID, ``acct_`` and 16 digits, ``upstream_premature_close``) in at
most two lines, "What happened" the rest (about 260 px)."""
_BREAK_AFTER: Final = re.compile(r"([./_:-])")
_WINDOW_TEXT: Final = re.compile(r"\d+[mhd]")


@dataclass(frozen=True, slots=True)
class Links:
    """Where the page's links go: a live relay's views (``query`` set), or anchors in one file (None)."""

    run: Link
    query: PageQuery | None = None
    errors: str = "/admin/errors"
    runs: str = "/admin/errors/runs"
    search: str = "/admin/errors/search"

    def view(self, **changes: Any) -> str:
        """This view's URL (``changes``: ``PageQuery`` fields replaced), escaped for an attribute."""
        if self.query is None:
            return html.escape(self.errors)
        return html.escape(self.query.url(self.errors, **changes))


def _rate(failures: int, runs: int) -> str:
    return f"{100 * failures / runs:.1f}%" if runs else _DASH


def trend_svg(
    failures: Sequence[int],
    runs: Sequence[int],
    start: str | None,
    bucket_s: float,
    *,
    width: int = _TREND_W,
    name: str = "failed and all runs over the window",
) -> str:
    """A group's trend as inline SVG: per time bucket, all runs (grey) and the failed ones (red) on one
    scale, so the red share of each bar is the failure rate; each bar's tooltip says its numbers (the page
    writes out the ones that matter beside it: ``_trend_cell``)."""
    step = width / max(len(failures), 1)
    top = max(max(runs, default=0), max(failures, default=0), 1)
    origin = _parse_iso(start)
    bars = []
    for i, (failed, total) in enumerate(zip(failures, runs, strict=False)):
        x = round(i * step, 2)
        when = ""
        if origin is not None:
            when = (origin + timedelta(seconds=i * bucket_s)).strftime("%m-%d %H:%M") + ": "
        grey = round(_TREND_H * total / top, 2)
        red = round(_TREND_H * failed / top, 2)
        bar_w = f"{max(step - 1, 1):.2f}"
        bars.append(
            f'<g><rect x="{x}" y="{_TREND_H - grey}" width="{bar_w}" height="{grey}" fill="#cbd5e1"/>'
            f'<rect class=failed x="{x}" y="{_TREND_H - red}" width="{bar_w}" height="{red}" fill="{_RED}"/>'
            f"<title>{when}{int(failed)} failed of {int(total)} runs</title></g>"
        )
    failed_data = ",".join(str(int(n)) for n in failures)
    runs_data = ",".join(str(int(n)) for n in runs)
    return (
        f'<svg class=trend xmlns="http://www.w3.org/2000/svg" width="{width}" height="{_TREND_H}"'
        f' viewBox="0 0 {width} {_TREND_H}" role=img aria-label="{html.escape(name)}"'
        f' data-failures="{failed_data}" data-runs="{runs_data}">'
        f'<line x1="0" y1="{_TREND_H - 0.5}" x2="{width}" y2="{_TREND_H - 0.5}" stroke="{_GREY}"/>'
        + "".join(bars)
        + "</svg>"
    )


def _clock(origin: datetime | None, seconds: float, span_s: float) -> str:
    if origin is None:
        return ""
    when = origin + timedelta(seconds=seconds)
    return when.strftime("%H:%M" if span_s < 86400 else "%m-%d %H:%M")


def _trend_cell(group: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    """The group's trend over the window, its last hour apart (in a window longer than that), the window's
    ends under them, and in words the busiest bucket and the last hour."""
    trend = report.get("trend") or {}
    recent = report.get("recent") or None
    shape = group.get("trend") or {}
    failures, runs = list(shape.get("failures") or []), list(shape.get("runs") or [])
    bucket_s = float(trend.get("bucket_s") or 0)
    origin = _parse_iso(trend.get("start"))
    span_s = bucket_s * len(failures)
    charts = [
        "<div class=trend-window>"
        + trend_svg(failures, runs, trend.get("start"), bucket_s)
        + f"<div class=trend-axis><span>{_clock(origin, 0, span_s)}</span>"
        f"<span>{'now' if report.get('window') else _clock(origin, span_s, span_s)}</span></div></div>"
    ]
    words = []
    if failures and max(failures) > 0:
        peak = max(range(len(failures)), key=lambda i: (failures[i], i))
        words.append(
            f"<span class=trend-peak>peak {_clock(origin, peak * bucket_s, span_s)}: {failures[peak]} of"
            f" {runs[peak] if peak < len(runs) else 0} runs failed</span>"
        )
    last = group.get("recent") or None
    if recent is not None and last is not None:
        charts.append(
            "<div class=trend-recent>"
            + trend_svg(
                last.get("failures") or [],
                last.get("runs") or [],
                recent.get("start"),
                float(recent.get("bucket_s") or 0),
                width=_RECENT_W,
                name="failed and all runs in the last hour, 5 minutes a bar",
            )
            + "<div class=trend-axis><span>last hour</span></div></div>"
        )
        failed, total = sum(last.get("failures") or []), sum(last.get("runs") or [])
        said = f"{failed} of {total} runs failed ({_rate(failed, total)})" if total else "no runs"
        words.append(f"<span class=trend-last>last hour: {said}</span>")
    return f"<div class=trend-charts>{''.join(charts)}</div>" + (
        f"<div class=trend-text>{''.join(words)}</div>" if words else ""
    )


def _parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _key_cell(names: Sequence[str], key: Mapping[str, Any], links: Links) -> str:
    """The group's values; on a live page each one a link to the view filtered by it."""
    parts = []
    for name in names:
        value = key.get(name)
        text = f"<span class=mono>{_id(value)}</span>"
        if links.query is not None and name in FILTERS:
            target = links.query.with_filters(**{name: NONE if value is None else str(value)})
            text = f'<a class=filter-by href="{html.escape(target.url(links.errors))}">{text}</a>'
        parts.append(text)
    return "<br>".join(parts)


def _colgroup(widths: Iterable[str | None]) -> str:
    return (
        "<colgroup>" + "".join(f'<col style="width:{w}">' if w else "<col>" for w in widths) + "</colgroup>"
    )


def _change_cell(group: Mapping[str, Any]) -> str:
    earlier = group.get("earlier") or {}
    change, rate = earlier.get("change"), earlier.get("failure_rate")
    if change is None or rate is None:
        return f"<td class=change>{_DASH}<span class=sub>no runs before</span></td>"
    points = 100 * float(change)
    return (
        f"<td class=change><b>{points:+.1f} pts</b><span class=sub>from {100 * float(rate):.1f}%</span></td>"
    )


def _groups_table(report: Mapping[str, Any], links: Links) -> str:
    groups = report.get("groups") or []
    if not groups:
        return "<p class=empty id=no-failures>No failed runs in this window.</p>"
    by = str(report.get("by") or "signature")
    names = BY.get(by, SIGNATURE)
    heading = "Signature" if by == "signature" else _NAME_LABELS.get(names[0], names[0]).capitalize()
    changes = report.get("earlier") is not None
    columns = [(name or heading, w) for name, w in _GROUP_COLUMNS]
    if not changes:  # no window before to compare with: the store's hourly counts do not count this view
        columns = [c for c in columns if c[0] != "Change"]
    rows = [
        "<table id=groups>"
        + _colgroup(w for _, w in columns)
        + "<thead><tr>"
        + "".join(f"<th>{html.escape(name)}</th>" for name, _ in columns)
        + "</tr></thead><tbody>"
    ]
    for group in groups:
        key = group["key"]
        failures, runs = int(group["count"]), int(group.get("runs") or 0)
        samples = []
        for run_id, request_id in zip(
            group["sample_run_ids"], group.get("sample_request_ids") or [""] * 3, strict=False
        ):
            text = f"{_e(run_id[:12])}" + (
                f"<span class=rid>({_id(request_id)})</span>" if request_id else ""
            )
            samples.append(f'<a class="mono sample" href="{html.escape(links.run(run_id))}">{text}</a>')
        if links.query is not None:
            selected = links.query.with_filters(**group_filters(names, key))
            target = html.escape(selected.url(links.runs))
            samples.append(f'<a class=group-runs href="{target}">all its runs →</a>')
        meaning = group.get("meaning")
        if meaning:  # a class as a whole: what its runs share, not its latest run's cause
            what = (
                f"<b class=class-title>{_e(meaning.get('title'))}</b>"
                f"<span class=meaning>{_e(meaning.get('description'))}</span>"
            )
        else:
            what = _e(group["title"])
        rows.append(
            f'<tr class=group data-summary-key="{_e(key.get("summary_key"))}" data-failures="{failures}"'
            f' data-runs="{runs}">'
            f"<td class='n failed'>{failures}</td><td class='n runs'>{runs}</td>"
            f"<td class='n rate'>{_rate(failures, runs)}</td>"
            + (_change_cell(group) if changes else "")
            + f"<td class=trend-cell>{_trend_cell(group, report)}</td><td class=what>{what}</td>"
            f"<td class=key>{_key_cell(names, key, links)}</td>"
            f"<td>{_stamp(group['last_seen'])}</td><td>{''.join(samples)}</td></tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _stamp(iso: str | None) -> str:
    """A time as date and time of day, each on a line of its own."""
    return _e(_utc(iso)).replace(" ", "<br>", 1)


def _utc(iso: str | None) -> str | None:
    if iso is None:
        return None
    return iso.replace("T", " ").split(".")[0] + "Z"


def _summary_line(report: Mapping[str, Any]) -> str:
    groups = len(report.get("groups") or [])
    failures, runs = int(report.get("failures", 0)), int(report.get("runs", 0))
    noun = _VIEW_NOUNS.get(str(report.get("by") or "signature"), ("group", "groups"))[groups != 1]
    window = report.get("window")
    if window and _WINDOW_TEXT.fullmatch(str(window)):
        where = f"in the last {_e(window)}"
    elif report.get("since") and report.get("until"):
        where = f"from {_e(_utc(report.get('since')))} to {_e(_utc(report.get('until')))}"
    elif report.get("since"):
        where = f"since {_e(_utc(report.get('since')))}"
    else:
        where = f"in {_e(report.get('source'))}"
    total = int(report.get("groups_total") or groups)
    if report.get("limited"):
        shown = f"the first {groups} of {total} " + _VIEW_NOUNS.get(str(report.get("by")), ("", "groups"))[1]
    else:
        shown = f"{groups} {noun}"
    return f"{failures} failed of {runs} runs ({_rate(failures, runs)}) {where}: {shown}"


def _views(links: Links, by: str) -> str:
    items = []
    for name in BY:
        label = f"by {_VIEW_NOUNS[name][0]}"
        if name == by:
            items.append(f"<b aria-current=page>{label}</b>")
        else:
            items.append(f'<a href="{links.view(by=name, before=None, q="")}">{label}</a>')
    return "<nav id=views>" + " · ".join(items) + "</nav>"


def _sorts(links: Links, sort: str) -> str:
    items = []
    for name, label in _SORT_LABELS.items():
        if name == sort:
            items.append(f"<b aria-current=true>{label}</b>")
        else:
            items.append(
                f'<a data-sort="{name}" href="{links.view(sort=name, before=None, q="")}">{label}</a>'
            )
    return "<nav id=sort>order: " + " · ".join(items) + "</nav>"


def _filter_form(links: Links) -> str:
    query = links.query
    assert query is not None
    windows = list(WINDOWS) + ([query.since] if query.since not in WINDOWS else [])
    options = "".join(
        f"<option{' selected' if w == query.since else ''}>{html.escape(w)}</option>" for w in windows
    )
    inputs = "".join(
        f'<label>{html.escape(_NAME_LABELS[name])} <input name="{name}"'
        f' value="{html.escape(query.filter(name))}" size=14 autocomplete=off></label> '
        for name in ("route", "account", "model", "provider", "class")
    )
    hidden = f'<input type=hidden name=by value="{html.escape(query.by)}">' if query.by != "signature" else ""
    if query.sort != "count":
        hidden += f'<input type=hidden name=sort value="{html.escape(query.sort)}">'
    if query.until:
        hidden += f'<input type=hidden name=until value="{html.escape(query.until)}">'
    chips = []  # filters a group's link set: kept, shown, each removable
    for name in ("summary_key", "transport_kind", "close"):
        value = query.filter(name)
        if value:
            hidden += f'<input type=hidden name="{name}" value="{html.escape(value)}">'
            drop = html.escape(query.with_filters(**{name: None}).url(links.errors))
            chips.append(
                f"<span class=chip>{_NAME_LABELS[name]}: <span class=mono>{_e(value)}</span>"
                f' <a href="{drop}" title="remove">&times;</a></span>'
            )
    return (
        f'<form id=filters method=get action="{links.errors}">{hidden}'
        f"<label>window <select name=since>{options}</select></label> {inputs}"
        f'<button type=submit>Apply</button> <a id=clear href="{links.errors}">clear</a>'
        + (f"<div class=chips>{''.join(chips)}</div>" if chips else "")
        + f'</form><form id=search method=get action="{links.search}"><label>Find a stream '
        '<input name=q size=40 placeholder="request id or run id" autocomplete=off></label>'
        " <button type=submit>Find</button></form>"
    )


def errors_page(report: Mapping[str, Any], links: Links) -> str:
    """The errors page: failed runs grouped by the view's names, with failure rates and trends over the
    window, the view's filters and search (``links.query``), and a link from each group to its runs."""
    by = str(report.get("by") or "signature")
    sort = str(report.get("sort") or "count")
    note = ""
    if report.get("earlier") is None and report.get("groups"):
        note = (
            "<p class=detail id=no-change>No change since the window before: the store's hourly counts do not"
            " count this view's names and filters together (a route or an account with another name), and"
            " the page does not scan the runs for it."
            + (" Sorted by failures instead." if sort == "change" else "")
            + "</p>"
        )
    body = (
        _views(links, by)
        + _sorts(links, sort)
        + _filter_form(links)
        + f"<h2 id=summary>{_summary_line(report)}</h2>"
        + note
        + _interrupted(report)
        + routes_section(report)
        + _groups_table(report, links)
    )
    subtitle = f"failed streams by {_VIEW_NOUNS[by][0]}, from {_e(report.get('source'))}"
    return _document("streamfsm relay: errors", subtitle, body)


def runs_page(data: Mapping[str, Any], links: Links, what: str = "failed runs") -> str:
    """A list of runs (a group's, or a search's), the latest first, with the next page's link; its heading
    says how many of how many (``data["total"]``) it shows, and, for one class, what the class means."""
    query = links.query
    runs = data.get("runs") or []
    chips = ", ".join(
        f"{html.escape(_NAME_LABELS.get(n, n))} <span class=mono>{_e(v)}</span>"
        for n, v in (data.get("filters") or {}).items()
    )
    total = data.get("total")
    count = f"{len(runs)} {html.escape(what)}"
    if data.get("older") and total is not None:
        count = f"{len(runs)} older of {total} {html.escape(what)}"
    elif total is not None and total != len(runs):
        count = f"showing {len(runs)} of {total} {html.escape(what)}"
    count += f" where {chips}" if chips else ""
    meaning = data.get("meaning")
    if meaning:  # the class as a whole heads the list, above its runs' own titles
        head = (
            f"<h2 id=meaning>{_e(meaning.get('title'))}</h2>"
            f"<p class=detail>{_e(meaning.get('description'))}</p><p id=summary class=count>{count}</p>"
        )
    else:
        head = f"<h2 id=summary>{count}</h2>"
    body = f'<p><a id=back href="{links.view(before=None)}">← the errors</a></p>' + head
    if not runs:
        return _document("streamfsm relay: runs", html.escape(what), body + "<p class=empty>No runs.</p>")
    rows = [
        "<table id=runs>"
        + _colgroup(w for _, w in _RUN_COLUMNS)
        + "<thead><tr>"
        + "".join(f"<th>{name}</th>" for name, _ in _RUN_COLUMNS)
        + "</tr></thead><tbody>"
    ]
    for run in runs:
        link = html.escape(links.run(run["run_id"]))
        rows.append(
            f'<tr class=run data-run-id="{_e(run["run_id"])}"><td>{_stamp(run.get("started_at"))}</td>'
            f'<td><a class=mono href="{link}">{_e(run["run_id"][:12])}</a></td>'
            f"<td class=mono>{_id(run.get('request_id'))}</td><td>{_e(run.get('title'))}</td>"
            f"<td class=mono>{_id(run.get('summary_key'))}</td><td class=mono>{_id(run.get('route'))}</td>"
            f"<td class=mono>{_id(run.get('account'))}</td><td class=mono>{_id(run.get('model'))}</td>"
            f"<td class=mono>{_id(run.get('close'))}</td></tr>"
        )
    rows.append("</tbody></table>")
    if query is not None and data.get("next_before") is not None:
        older = html.escape(query.url(links.runs, before=int(data["next_before"])))
        rows.append(f'<p><a id=older href="{older}">older runs →</a></p>')
    return _document("streamfsm relay: runs", html.escape(what), body + "".join(rows))


def routes_section(report: Mapping[str, Any]) -> str:
    """The route table's routes (``report["routes"]``, live from the relay): each route's upstream, the
    models it serves, its circuit breaker and the fallbacks away from it since the relay started."""
    routes = report.get("routes") or []
    if not routes:
        return ""
    opened = [r for r in routes if r.get("breaker") != "closed"]
    moved = sum(sum((r.get("fallbacks") or {}).values()) for r in routes)
    head = (
        f"<h2 id=routes>Routes: {len(opened)} circuit breaker{'s' if len(opened) != 1 else ''} not closed,"
        f" {moved} fallback{'s' if moved != 1 else ''}</h2>"
    )
    rows = "".join(
        f'<tr class="route breaker-{_e(r.get("breaker"))}" data-route="{_e(r.get("name"))}">'
        f"<td class=mono>{_e(r.get('name'))}</td><td class=mono>{_e(r.get('upstream'))}</td>"
        f"<td class=mono>{_e(', '.join(r.get('models') or []))}</td>"
        f"<td class=breaker>{_e(_BREAKER_WORDS.get(str(r.get('breaker')), r.get('breaker')))}</td>"
        f"<td>{_e(r.get('failures'))}</td><td>{_e(r.get('opened'))}</td>"
        f"<td class=fallbacks>{_e(', '.join(f'{n} to {to}' for to, n in (r.get('fallbacks') or {}).items()))}"
        "</td></tr>"
        for r in routes
    )
    return (
        head + "<table id=route-table><tr><th>route</th><th>upstream</th><th>models</th>"
        "<th>circuit breaker</th><th>failures in a row</th><th>times opened</th><th>fell back</th></tr>"
        + rows
        + "</table>"
    )


_BREAKER_WORDS: Final = {
    "closed": "closed",
    "open": "OPEN: not asked until its cool-down ends",
    "half_open": "half open: one probe",
}


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
        ("error event sent", relay.get("error_sent")),
        ("response ended cleanly", relay.get("end_sent")),
        ("limit", relay.get("limit")),
        ("reasoning seen", relay.get("reasoning_seen") if relay else None),
        ("request id", context.get("request_id")),
        ("route", context.get("route")),
        ("upstream route", _upstream_route(record.get("route"))),
        ("routes tried before", ", ".join(map(str, _get(record, "route", "tried") or ())) or None),
        ("earlier attempts", _attempts(record.get("attempts"))),
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


def _upstream_route(route: object) -> str | None:
    """The route table's route the attempt went to, and the state of its breaker that let it in."""
    if not isinstance(route, Mapping) or not route.get("name"):
        return None
    return f"{route['name']} (breaker {route.get('breaker')})"


def _attempts(attempts: object) -> str | None:
    """The chain's earlier attempts, each as: its number, its route, how it ended, what came of it."""
    if not isinstance(attempts, Sequence) or isinstance(attempts, str):
        return None
    parts = [
        f"{a.get('attempt')}: {a.get('route') or '-'}, {a.get('summary_key')}, {a.get('decision')}"
        for a in attempts
        if isinstance(a, Mapping)
    ]
    return "; ".join(parts) or None


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
    """The errors page (with rates and trends when the report has them) and every sample run's page, as one
    self-contained file (links are anchors)."""
    sections = "".join(
        f'<section class=run id="run-{html.escape(str(_get(r, "ids", "run_id")))}">{_run_body(r)}</section>'
        for r in records
    )
    body = (
        f"<h2 id=summary>{_summary_line(report)}</h2>"
        + _interrupted(report)
        + _groups_table(report, Links(_anchor))
        + sections
    )
    return _document("streamfsm report: errors", "failed streams, grouped by signature", body)


def _anchor(run_id: str) -> str:
    return f"#run-{run_id}"


def sample_ids(report: Mapping[str, Any]) -> Iterable[str]:
    for group in report.get("groups") or ():
        yield from group["sample_run_ids"]
