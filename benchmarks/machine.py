"""Per-event cost of the compiled table vs a ``transitions`` trigger, and the cost to build one machine.

    python -m benchmarks.machine [--repeat N]

Both sides run the same realistic stream (request, headers, 50 reasoning deltas, 2000 text deltas, one tool
call of 100 argument deltas, usage, finish). Medians over repeats; garbage collection off while timing
(``timeit``'s default). The numbers are for this machine only; compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import timeit
from collections.abc import Callable

import transitions

from streamfsm.machine import IllegalTransition, StreamMachine, Trigger, activity_machine, commitment_machine

T = Trigger
SEQUENCE: tuple[Trigger, ...] = (
    T.REQUEST_SENT,
    T.HEADERS_RECEIVED,
    *[T.REASONING_DELTA] * 50,
    *[T.TEXT_DELTA] * 2000,
    T.TOOL_INPUT_START,
    *[T.TOOL_INPUT_DELTA] * 100,
    T.TOOL_INPUT_END,
    T.TOOL_CALL,
    T.USAGE,
    T.FINISH,
)
NAMES = tuple(t.value for t in SEQUENCE)


def _median_ns(make: Callable[[], Callable[[], object]], repeat: int, number: int = 1) -> float:
    """Median wall time of one call of ``make()``'s result, each repeat on fresh state."""
    samples = []
    for _ in range(repeat):
        timer = timeit.Timer(make())
        samples.append(timer.timeit(number) / number * 1e9)
    return statistics.median(samples)


def _compiled() -> Callable[[], object]:
    send = StreamMachine().send

    def run() -> None:
        for trigger in SEQUENCE:
            send(trigger)

    return run


def _transitions_activity() -> Callable[[], object]:
    trigger = activity_machine().trigger

    def run() -> None:
        for name in NAMES:
            trigger(name)

    return run


def _transitions_both() -> Callable[[], object]:
    # What the compiled table does in one lookup: the activity region, then the commitment region.
    activity, commitment = activity_machine().trigger, commitment_machine().trigger

    def run() -> None:
        for name in NAMES:
            activity(name)
            commitment(name)

    return run


def _check() -> None:
    machine = StreamMachine(history_size=len(SEQUENCE))
    try:
        for trigger in SEQUENCE:
            machine.send(trigger)
    except IllegalTransition as exc:  # the benchmark must measure a legal run
        raise SystemExit(f"benchmark sequence is not legal: {exc}") from None
    reference = activity_machine()
    for name in NAMES:
        reference.trigger(name)
    assert machine.state.activity.value == reference.state == "finished"


def measure(repeat: int = 15) -> dict[str, float]:
    """Median ns per event (compiled, transitions activity region, both regions) and per machine built."""
    _check()
    events = len(SEQUENCE)
    builds = 200
    return {
        "events": events,
        "compiled_ns": _median_ns(_compiled, repeat * 4) / events,
        "transitions_activity_ns": _median_ns(_transitions_activity, repeat) / events,
        "transitions_both_ns": _median_ns(_transitions_both, repeat) / events,
        "build_compiled_ns": _median_ns(lambda: StreamMachine, repeat, number=builds * 10),
        "build_activity_ns": _median_ns(lambda: activity_machine, repeat, number=builds),
        "build_both_ns": _median_ns(
            lambda: lambda: (activity_machine(), commitment_machine()), repeat, number=builds
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.machine", description=__doc__)
    parser.add_argument("--repeat", type=int, default=15, help="repeats of each measurement (default: 15)")
    args = parser.parse_args(argv)
    repeat: int = args.repeat
    m = measure(repeat)

    print(
        f"python {platform.python_version()}, transitions {transitions.__version__}, {platform.machine()}; "
        f"{m['events']:.0f} events per run, median of {repeat} repeats"
    )
    rows = [
        ("per event", m["compiled_ns"], m["transitions_activity_ns"], m["transitions_both_ns"]),
        ("build one machine", m["build_compiled_ns"], m["build_activity_ns"], m["build_both_ns"]),
    ]
    header = ("", "compiled", "transitions (activity)", "ratio", "transitions (both regions)", "ratio")
    print(f"{header[0]:<18} {header[1]:>12} {header[2]:>24} {header[3]:>8} {header[4]:>28} {header[5]:>8}")
    for label, ours, theirs, theirs_both in rows:
        print(
            f"{label:<18} {_fmt(ours):>12} {_fmt(theirs):>24} {theirs / ours:>7.0f}x"
            f" {_fmt(theirs_both):>28} {theirs_both / ours:>7.0f}x"
        )
    return 0


def _fmt(ns: float) -> str:
    return f"{ns / 1000:.3f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
