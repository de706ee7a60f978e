"""The machine and the classifier stay importable without the runtime's IO libraries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = "import sys; assert 'httpx' not in sys.modules and 'anyio' not in sys.modules, sorted(sys.modules)"


@pytest.mark.parametrize(
    "statement",
    ["import streamfsm.machine, streamfsm.classify", "import streamfsm", "import streamfsm._diagrams"],
)
def test_import_does_not_load_httpx_or_anyio(statement: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"{statement}; {CHECK}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_check_itself_detects_a_loaded_module() -> None:
    # Guards against a check that could never fail (e.g. a typo in the module names).
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.modules['anyio'] = sys; {CHECK}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "AssertionError" in proc.stderr
