"""Every name of the package that the README and the documentation site use
(``streamfsm.tap.async_transport``, ``streamfsm.Verdict.NO_RETRY``, ``streamfsm.store.StoreUnavailable``)
resolves after a bare ``import streamfsm``, in a fresh interpreter: a reader who copies one line needs no
other import. An import statement imports what it names itself, and is not counted; a record's schema id
(``streamfsm.run/1``) is no name; the names that are no Python attribute (a logger, an OpenTelemetry
attribute) are listed below with what they are."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# A dotted name, not part of a longer word, path or schema id ("streamfsm.run/1").
NAME = re.compile(r"(?<![\w./-])streamfsm(?:\.[A-Za-z_]\w*)+(?![\w/])")
IMPORT_LINE = re.compile(r"^\s*(?:from\s+[\w.]+\s+import\s|import\s)")
NOT_ATTRIBUTES = {
    "streamfsm.sinks": "the logger slow and failing sinks are reported on",
    "streamfsm.class": "an OpenTelemetry attribute",
    "streamfsm.verdict": "an OpenTelemetry attribute",
    "streamfsm.run_id": "an OpenTelemetry attribute",
    "streamfsm.context.request_id": "an OpenTelemetry attribute",
    "streamfsm.route": "an OpenTelemetry attribute",
    "streamfsm.from_route": "an OpenTelemetry attribute",
    "streamfsm.routes_tried": "an OpenTelemetry attribute",
    "streamfsm.breaker.state": "an OpenTelemetry attribute",
    "streamfsm.breaker.from_state": "an OpenTelemetry attribute",
    "streamfsm.runs": "an OpenTelemetry metric",
    "streamfsm.route.fallbacks": "an OpenTelemetry metric",
    "streamfsm.breaker.status": "an OpenTelemetry metric",
    "streamfsm.breaker.transitions": "an OpenTelemetry metric",
}
# One fresh interpreter for all: before each name, the rooms loaded since the bare import are taken off the
# package again (they stay loaded), so that no name resolves only because another one loaded its room.
CHECK = """
import functools, streamfsm, sys
bare = set(vars(streamfsm))
missing = []
for name in sys.argv[1:]:
    for loaded in set(vars(streamfsm)) - bare:
        delattr(streamfsm, loaded)
    try:
        functools.reduce(getattr, name.split(".")[1:], streamfsm)
    except (AttributeError, ImportError) as exc:
        missing.append(f"{name}: {exc}")
print("\\n".join(missing))
"""


def documented_names() -> dict[str, str]:
    """Each dotted name of the package on the pages, with the first page that uses it."""
    found: dict[str, str] = {}
    for page in PAGES:
        for line in page.read_text().splitlines():
            if IMPORT_LINE.match(line):
                continue
            for name in NAME.findall(line):
                found.setdefault(name, str(page.relative_to(ROOT)))
    return found


def test_every_documented_name_resolves_after_a_bare_import() -> None:
    names = documented_names()
    assert {"streamfsm.tap.async_transport", "streamfsm.tap.Rule", "streamfsm.wire.FORMATS"} <= set(names)
    unused = set(NOT_ATTRIBUTES) - set(names)
    assert not unused, f"listed as no attribute, but on no page any more: {sorted(unused)}"
    check = subprocess.run(
        [sys.executable, "-c", CHECK, *sorted(set(names) - set(NOT_ATTRIBUTES))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stderr[-2000:]
    missing = [f"{line} (used in {names[line.split(':')[0]]})" for line in check.stdout.splitlines() if line]
    assert not missing, "\n".join(missing)


def test_the_walk_finds_a_name_and_skips_imports_and_schema_ids() -> None:
    line = "`streamfsm.tap.transport(inner)`, then `streamfsm.store.`; schema `streamfsm.run/1`"
    assert NAME.findall(line) == ["streamfsm.tap.transport", "streamfsm.store"]
    assert IMPORT_LINE.match("from streamfsm.otel import OtelSink")
    assert not IMPORT_LINE.match("client = streamfsm.tap.async_transport()")
