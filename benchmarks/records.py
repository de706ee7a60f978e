"""Reading run records back: CPU per record for the log reader and the commands built on it.

    python -m benchmarks.records [--quick] [--records 20000] [--rounds 3]

Setup: a JSON-lines log of ``--records`` records (the log tests' six scenarios in turn, each with its own run
id) in a temporary folder. Each round measures, by CPU time of this process: the floor (``json.loads`` per
line, the least any reader does), ``read_records`` over the whole file, and the ``report`` and ``diagnose``
commands over it (output discarded). Rows give the median of the rounds, per record, with min and max.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ._report import Row, print_table

SECTION = "records: reading run records back from a log"


def _write_log(path: Path, count: int) -> None:
    from tests.support.logs import SCENARIOS, with_ids

    templates = [scenario() for scenario in SCENARIOS]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            f.write(with_ids(templates[i % len(templates)], f"bench-{i:07d}").to_json() + "\n")


def _cpu_us(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return (time.process_time() - start) * 1e6


def measure(count: int, rounds: int = 3) -> list[Row]:
    from streamfsm.cli import main as cli
    from streamfsm.runtime import read_records

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "audit.jsonl"
        _write_log(path, count)

        def floor() -> None:
            with open(path, "rb") as f:
                for line in f:
                    json.loads(line)

        def read() -> None:
            for _ in read_records(path):
                pass

        def command(*argv: str) -> Callable[[], None]:
            def run() -> None:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    cli([*argv, str(path)])

            return run

        contenders = {
            "json.loads per line (floor)": floor,
            "read_records": read,
            "streamfsm report": command("report"),
            "streamfsm diagnose (the last record)": command("diagnose"),
        }
        for work in contenders.values():  # warm: imports, caches
            work()
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(rounds):  # interleaved: every contender sees the same window of the machine
            for name, work in contenders.items():
                samples[name].append(_cpu_us(work) / count)
    floor_name = "json.loads per line (floor)"
    base = statistics.median(samples[floor_name])
    rows = []
    for name, values in samples.items():
        median = statistics.median(values)
        rows.append(
            Row(
                SECTION,
                f"{name}, CPU per record",
                median,
                "µs",
                baseline=None if name == floor_name else base,
                baseline_name="" if name == floor_name else floor_name,
                note=f"min {min(values):.1f} / max {max(values):.1f} µs over {rounds} rounds of {count}",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.records", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 records")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rows = measure(2_000 if args.quick else args.records, args.rounds)
    print_table(SECTION, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
