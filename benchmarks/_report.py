"""Results: rows of (measurement, value, baseline, ratio, target), printed as tables and written as JSON."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

PACKAGES = (
    "streamfsm",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "trio",
    "transitions",
    "openai",
    "anthropic",
    "httpx2",
)


@dataclass
class Row:
    """One measurement, as a ratio to the baseline measured in the same run.

    ``target`` is the ratio the issue asks for, with ``better`` saying which side passes ("lower": ratio at
    most the target; "higher": at least). ``met`` is None when there is no target.
    """

    section: str
    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    target: float | None = None
    better: str = "lower"
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        ratio = self.ratio if self.baseline is not None else self.value
        if self.target is None or ratio is None:
            return None
        return ratio <= self.target if self.better == "lower" else ratio >= self.target

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["ratio"] = None if self.ratio is None else round(self.ratio, 4)
        out["met"] = self.met
        return out


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if unit in ("", "x"):
        text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    elif abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".strip()


def print_table(title: str, rows: Iterable[Row], out: Any = None) -> None:
    out = out or sys.stdout
    rows = list(rows)
    if not rows:
        return
    cells = []
    for r in rows:
        target = ""
        if r.target is not None:
            sign = "<=" if r.better == "lower" else ">="
            target = f"{sign} {r.target:g}" + ("" if r.baseline is not None else f" {r.unit}")
        met = {True: "yes", False: "NO", None: ""}[r.met]
        ratio = r.ratio
        cells.append(
            (
                r.name,
                _fmt(r.value, r.unit),
                f"{_fmt(r.baseline, r.unit)} ({r.baseline_name})" if r.baseline is not None else "",
                f"{ratio:.2f}x" if ratio is not None else "",
                target,
                met,
                r.note,
            )
        )
    header = ("measurement", "value", "baseline", "ratio", "target", "met", "note")
    widths = [max(len(header[i]), *(len(c[i]) for c in cells)) for i in range(len(header))]
    print(f"\n{title}", file=out)
    line = "  ".join(
        h.ljust(w) if i != 1 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))
    )
    print(line.rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for c in cells:
        parts = [
            c[0].ljust(widths[0]),
            c[1].rjust(widths[1]),
            c[2].ljust(widths[2]),
            c[3].rjust(widths[3]),
            c[4].ljust(widths[4]),
            c[5].ljust(widths[5]),
            c[6],
        ]
        print("  ".join(parts).rstrip(), file=out)
    out.flush()


def median_cpu(fns: dict[str, Callable[[], Any]], repeat: int, warmup: int = 1) -> dict[str, float]:
    """Median CPU seconds (``time.process_time``) of each function, run round-robin so that a change of load
    on the machine hits every contender alike."""
    import gc

    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def machine_info() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load,
        "memory_total_gb": _memory_gb(),
        "packages": versions,
    }


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        return None
    return None


def write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=str)
        f.write("\n")
