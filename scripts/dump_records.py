"""Dump the run records of the whole built-in catalog as canonical JSON, to compare two trees.

    PYTHONPATH=. python scripts/dump_records.py /tmp/records_before.json
    ... change the code ...
    PYTHONPATH=. python scripts/dump_records.py /tmp/records_after.json
    diff /tmp/records_before.json /tmp/records_after.json

Plays what ``streamfsm harness --via runtime --via wrap --via tap`` plays (the catalog through open_stream,
the SDKs through wrap() and through the tap, the recovery chains and the route scenarios' legs), with the
harness's own command, and writes every record it made, sorted by scenario, path and attempt, with what
differs from one run to the next normalised: wall-clock times and durations (a number becomes whether it was
there), random ids (numbered by first appearance, so that a link from one record to another still shows),
and the fault server's port. What is left is what the code decided: states, edges, counts, facts.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from streamfsm.cli import main

_PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")
_HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
_TEMP = re.compile(re.escape(tempfile.gettempdir()) + r"/[^\s\"']+")
# Fields whose number is a clock reading or a duration: only whether one was there is kept.
_TIMES = frozenset(
    {
        "t",
        "started_at",
        "ended_at",
        "at",
        "to_headers_s",
        "to_first_progress_s",
        "to_first_visible_s",
        "last_progress_age_s",
        "total_s",
        "idle_paused_s",
        "elapsed_s",
        "waited_s",
        "seconds",
        "t_last",
        "at_s",
        "delay_s",  # a retry's backoff, jittered
    }
)


def _normal(value: Any, ids: dict[str, str], key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v, ids, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_normal(item, ids) for item in value]
    if key in _TIMES and value is not None:
        return "<time>"
    if isinstance(value, str):
        value = _PORT.sub(r"\1:<port>", value)
        value = _TEMP.sub("<tmp>", value)
        return _HEX_ID.sub(lambda found: ids.setdefault(found[0], f"<id{len(ids)}>"), value)
    return value


def _timing_bound(record: dict[str, Any]) -> dict[str, Any]:
    """What a scenario whose counts depend on the clock still says the same each time. A stall: how many
    keepalives or comments (their bytes, their timeline steps) arrived before the watchdog fired. An outage
    that recovers: how many attempts fell inside the outage; only that the chain ended is kept."""
    scenario = str(((record.get("ids") or {}).get("context") or {}).get("scenario", ""))
    if scenario in _ATTEMPTS_BY_CLOCK:
        return {"ids": {"context": record["ids"]["context"]}, "attempts_depend_on_the_clock": True}
    if not scenario:  # a route leg's record (tap, relay): which attempt of an outage it was is the clock's
        record = json.loads(json.dumps(record))
        record["ids"]["attempt"] = "<n>"
        record["attempts"] = "<earlier attempts>" if record.get("attempts") else []
    if "stall" in scenario:  # keepalives or comments before a stall
        record = json.loads(json.dumps(record))
        record.get("stream_events", {}).pop("keepalive", None)
        (record.get("transport") or {}).pop("bytes_received", None)
        timeline = record.get("timeline") or {}
        timeline["entries"] = [e for e in timeline.get("entries", []) if e.get("event") != "keepalive"]
    return record


_ATTEMPTS_BY_CLOCK = frozenset({"routes/outage-then-recovery"})


def _order(record: dict[str, Any]) -> tuple[str, str, str, str]:
    context = (record.get("ids") or {}).get("context") or {}
    return (
        str(context.get("scenario", "")),
        str(context.get("harness_path", "")),
        str((record.get("ids") or {}).get("attempt") or 0),
        json.dumps(record.get("route"), sort_keys=True),
    )


def dump(out: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        lines = Path(tmp, "records.jsonl")
        code = main(
            [
                *("harness", "--via", "runtime", "--via", "wrap", "--via", "tap", "--concurrency", "8"),
                *("--json", str(lines)),
            ]
        )
        records = [
            _timing_bound(json.loads(line)) for line in lines.read_text(encoding="utf-8").splitlines() if line
        ]
    # Sorted twice: by what names a record, then (for records a name shares) by what they say, ids aside.
    records.sort(key=lambda record: (_order(record), json.dumps(_normal(record, {}), sort_keys=True)))
    # Ids numbered within each scenario's records: a record more or fewer elsewhere renumbers nothing here.
    normal, ids, scenario = [], {}, None
    for record in records:
        # The route scenarios' tap and relay legs name no scenario: each such record is numbered alone, and
        # those that say the same are kept once (how many attempts an outage takes is the clock's).
        if _order(record)[0] != scenario or not scenario:
            ids, scenario = {}, _order(record)[0]
        normal.append(_normal(record, ids))
    normal = [json.loads(text) for text in dict.fromkeys(json.dumps(n, sort_keys=True) for n in normal)]
    out.write_text(json.dumps(normal, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(normal)} records written to {out} (harness exit {code})", file=sys.stderr)
    return code


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: dump_records.py OUT.json")
    sys.exit(dump(Path(sys.argv[1])))
