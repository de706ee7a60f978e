"""Plant one bug at a time in the machine or the classifier and show that a named property catches it.

    .venv/bin/python scripts/planted_bug.py            # every planted bug, plus a clean control run
    .venv/bin/python scripts/planted_bug.py NAME ...   # only these

It needs an interpreter with streamfsm and its test extra (pytest, hypothesis): the project's venv.

Each bug runs in its own pytest subprocess (this script re-invoked with ``--inside NAME``), which patches
the live objects in memory, then runs the two property files. Nothing on disk changes. Exit status 0 only
when the control run is clean and every bug makes its expected property fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROPERTY_FILES = ("tests/test_machine_properties.py", "tests/test_classify_properties.py")
RESULT_MARK = "PLANTED-RESULT "


@dataclass(frozen=True)
class Bug:
    what: str
    expect: str  # the property that must fail
    plant: Callable[[], None]


def _edge(activity: str, commitment: str, trigger: str, to: tuple[str, str]) -> None:
    from streamfsm.machine import Activity, Commitment, State, Trigger

    source = State.of(Activity(activity), Commitment(commitment))
    source._next[Trigger(trigger)] = State.of(Activity(to[0]), Commitment(to[1]))


def _streaming_to_tool_executing() -> None:
    for commitment in ("none", "visible", "side_effect"):
        _edge("streaming", commitment, "tool_execution_start_effectful", ("tool_executing", "side_effect"))


def _read_only_tool_is_a_side_effect() -> None:
    _edge("tool_call", "none", "tool_execution_start_read_only", ("tool_executing", "side_effect"))


def _commitment_backwards() -> None:
    _edge("generating", "visible", "text_delta", ("generating", "none"))


def _failed_not_absorbing() -> None:
    _edge("failed", "none", "request_sent", ("connecting", "none"))


def _timeout_finishes() -> None:
    _edge("generating", "visible", "idle_timeout", ("finished", "visible"))


def _safe_retry_after_output() -> None:
    from streamfsm.classify import Action, Verdict, _diagnose
    from streamfsm.machine import Commitment, State, Trigger

    original = _diagnose._verdict

    def flipped(state: State, edge: Trigger, facts: Any) -> tuple[Verdict, Action, str]:
        if state.commitment is Commitment.VISIBLE and edge is Trigger.DISCONNECTED:
            return Verdict.SAFE_AUTO_RETRY, Action.RETRY, "planted"
        return original(state, edge, facts)

    _diagnose._verdict = flipped


def _tool_input_as_side_effect() -> None:
    from streamfsm.classify import FailureClass, _diagnose
    from streamfsm.machine import Activity

    _diagnose._CLASS_BY_ACTIVITY[Activity.TOOL_INPUT_OPEN] = FailureClass.TOOL_SIDE_EFFECT


def _classification_gap() -> None:
    from streamfsm.classify import _diagnose
    from streamfsm.machine import Activity

    del _diagnose._CLASS_BY_ACTIVITY[Activity.TOOL_CALL]


def _raw_string_leak() -> None:
    from streamfsm.classify import _diagnose

    original = _diagnose.summarize

    def leaky(*args: Any, **kwargs: Any) -> tuple[str, str]:
        title, detail = original(*args, **kwargs)
        return title, detail + " (terminated)" if args[1] == "closed_mid_body" else detail

    _diagnose.summarize = leaky


def _history_unbounded() -> None:
    from streamfsm.machine import StreamMachine

    original = StreamMachine.__init__

    def init(self: StreamMachine, **kwargs: Any) -> None:
        original(self, **kwargs)
        self.history = deque()

    StreamMachine.__init__ = init  # type: ignore[method-assign]


BUGS: dict[str, Bug] = {
    "streaming_to_tool_executing": Bug(
        "table: streaming --tool_execution_start_effectful--> tool_executing/side_effect",
        "test_differential_compiled_equals_transitions",
        _streaming_to_tool_executing,
    ),
    "read_only_tool_is_a_side_effect": Bug(
        "table: tool_call/none --tool_execution_start_read_only--> tool_executing/side_effect",
        "test_differential_compiled_equals_transitions",
        _read_only_tool_is_a_side_effect,
    ),
    "commitment_backwards": Bug(
        "table: generating/visible --text_delta--> generating/none",
        "test_commitment_is_monotone",
        _commitment_backwards,
    ),
    "failed_not_absorbing": Bug(
        "table: failed/none --request_sent--> connecting/none",
        "test_terminal_absorption",
        _failed_not_absorbing,
    ),
    "timeout_finishes": Bug(
        "table: generating/visible --idle_timeout--> finished/visible",
        "test_timeout_is_always_a_failure",
        _timeout_finishes,
    ),
    "safe_retry_after_output": Bug(
        "verdict: disconnected after visible output -> safe_auto_retry",
        "test_soundness_of_safe_auto_retry",
        _safe_retry_after_output,
    ),
    "tool_input_as_side_effect": Bug(
        "class: tool_input_open -> tool_side_effect",
        "test_tool_input_failure_is_never_tool_side_effect",
        _tool_input_as_side_effect,
    ),
    "classification_gap": Bug(
        "class: no entry for tool_call",
        "test_classification_totality_exhaustive",
        _classification_gap,
    ),
    "raw_string_leak": Bug(
        "summary: detail of closed_mid_body ends with '(terminated)'",
        "test_summaries_never_show_raw_transport_strings",
        _raw_string_leak,
    ),
    "history_unbounded": Bug(
        "machine: history deque without maxlen",
        "test_history_is_bounded_by_its_maxlen",
        _history_unbounded,
    ),
}
CONTROL = "none"


def _inside(name: str) -> int:
    """Runs in the subprocess: plant, then run pytest in this same interpreter."""
    sys.path.insert(0, str(ROOT))
    import pytest
    from hypothesis import settings

    # No example database (a fresh search per bug, no failing examples left behind); derandomised so the
    # demonstration gives the same answer every time.
    settings.register_profile("planted", max_examples=100, deadline=None, database=None, derandomize=True)
    os.environ["HYPOTHESIS_PROFILE"] = "planted"
    if name != CONTROL:
        BUGS[name].plant()

    failed: list[str] = []

    class Recorder:
        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.failed:
                failed.append(report.nodeid.split("::")[-1])

    code = pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", *PROPERTY_FILES], plugins=[Recorder()])
    print(RESULT_MARK + json.dumps({"exit": int(code), "failed": sorted(set(failed))}))
    return 0


def _run(name: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--inside", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result: dict[str, Any] = json.loads(line[len(RESULT_MARK) :])
            return result
    return {"exit": proc.returncode, "failed": [], "error": (proc.stdout + proc.stderr)[-2000:]}


def _missing() -> list[str]:
    import importlib.util

    return [m for m in ("streamfsm", "pytest", "hypothesis") if importlib.util.find_spec(m) is None]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--inside"]:
        return _inside(argv[1])
    missing = _missing()
    if missing:  # otherwise every run fails to import, and the control run reads as a planted bug's
        print(
            f"planted_bug.py: {sys.executable} lacks {', '.join(missing)}; run it with the project's venv:"
            " .venv/bin/python scripts/planted_bug.py",
            file=sys.stderr,
        )
        return 2
    unknown = [n for n in argv if n not in BUGS]
    if unknown:
        print(f"unknown bug(s): {', '.join(unknown)}; known: {', '.join(BUGS)}", file=sys.stderr)
        return 2
    names = [CONTROL, *(argv or BUGS)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = dict(zip(names, pool.map(_run, names), strict=True))

    ok = True
    control = results.pop(CONTROL)
    clean = control["exit"] == 0 and not control["failed"]
    ok &= clean
    print(f"control (no bug planted): {'clean' if clean else 'FAILED ' + ', '.join(control['failed'])}")
    if "error" in control:
        print(control["error"])
    for name, result in results.items():
        bug = BUGS[name]
        caught = bug.expect in result["failed"]
        ok &= caught
        print(f"\n{name}: {bug.what}")
        print(f"  expected to fail: {bug.expect} -> {'CAUGHT' if caught else 'MISSED'}")
        print(f"  failed properties: {', '.join(result['failed']) or '(none)'}")
        if "error" in result:
            print(result["error"])
    print(f"\n{'every planted bug was caught' if ok else 'NOT every planted bug was caught'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
