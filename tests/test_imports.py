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


# Each room imports only the rooms before it: machine → classify → runtime → tap → store → relay, frameworks.
ROOMS = ("machine", "classify", "runtime", "tap", "store", "relay", "frameworks")


def _rooms_imported(path: Path) -> set[str]:
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level == 0 and node.module.startswith("streamfsm."):
                found.add(node.module.split(".")[1])
            elif node.level == 2:  # from ..room import x, inside a room
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("streamfsm."))
    return found & set(ROOMS)


@pytest.mark.parametrize("room", ROOMS)
def test_imports_flow_one_way(room: str) -> None:
    folder = ROOT / "streamfsm" / room
    if not folder.is_dir():
        pytest.skip(f"no streamfsm/{room} yet")
    later = set(ROOMS[ROOMS.index(room) + 1 :]) | ({"relay"} if room == "frameworks" else set())
    for path in folder.rglob("*.py"):
        wrong = _rooms_imported(path) & later
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}, which come after {room}"


def test_the_room_check_sees_an_import() -> None:
    assert _rooms_imported(ROOT / "streamfsm" / "tap" / "_run.py") >= {"runtime", "machine"}
