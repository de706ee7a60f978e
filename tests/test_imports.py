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


# Each room imports only the rooms before it: machine → classify → wire → runtime → tap → store → relay,
# frameworks → testing → cli. Imports inside functions and under TYPE_CHECKING count too.
ROOMS = ("machine", "classify", "wire", "runtime", "tap", "store", "relay", "frameworks", "testing", "cli")
# The rooms that use a run read the wire and the runtime through what those rooms export, never their insides.
USERS_OF_A_RUN = ("tap", "store", "relay", "frameworks", "testing", "cli")
SEALED = ("wire", "runtime")
# The rooms without I/O import no I/O library.
PURE = ("machine", "classify", "wire")
IO_LIBRARIES = frozenset({"httpx", "httpx2", "anyio", "trio", "asyncio", "socket", "ssl", "httpcore", "h11"})


def _imports(path: Path, package: Path = ROOT / "streamfsm") -> list[tuple[str, int]]:
    """Each module ``path`` imports and its line: ours dotted without ``streamfsm.`` (relative imports
    resolved), others after a ``!``."""
    import ast

    parts = path.relative_to(package.parent).with_suffix("").parts
    here = parts[:-1]  # the package ``path`` is in (an __init__'s own package too)
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            found.append((name, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
    return [
        (name.removeprefix("streamfsm.") if name.startswith("streamfsm.") else "!" + name, line)
        for name, line in found
        if name != "streamfsm"
    ]


def _rooms_imported(path: Path, package: Path = ROOT / "streamfsm") -> set[str]:
    return {name.split(".")[0] for name, _ in _imports(path, package)} & set(ROOMS)


@pytest.mark.parametrize("room", ROOMS)
def test_imports_flow_one_way(room: str) -> None:
    folder = ROOT / "streamfsm" / room
    later = set(ROOMS[ROOMS.index(room) + 1 :]) | ({"relay"} if room == "frameworks" else set())
    for path in folder.rglob("*.py"):
        wrong = _rooms_imported(path) & later
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}, which come after {room}"


def _private_reaches(path: Path, package: Path = ROOT / "streamfsm") -> list[str]:
    room = path.relative_to(package).parts[0]
    return [
        f"{path.relative_to(package.parent)}:{line} imports streamfsm.{name}"
        for name, line in _imports(path, package)
        if (parts := name.split("."))[0] in SEALED and parts[0] != room and len(parts) > 1
    ]


@pytest.mark.parametrize("room", USERS_OF_A_RUN)
def test_users_of_a_run_import_only_what_the_wire_and_the_runtime_export(room: str) -> None:
    reaches = [
        reach for path in (ROOT / "streamfsm" / room).rglob("*.py") for reach in _private_reaches(path)
    ]
    assert not reaches, "\n".join(reaches)


@pytest.mark.parametrize("room", PURE)
def test_the_rooms_without_io_import_no_io_library(room: str) -> None:
    for path in (ROOT / "streamfsm" / room).rglob("*.py"):
        loaded = {name[1:].split(".")[0] for name, _ in _imports(path) if name.startswith("!")} & IO_LIBRARIES
        assert not loaded, f"{path.relative_to(ROOT)} imports {sorted(loaded)}"


def test_the_room_checks_see_an_import(tmp_path: Path) -> None:
    assert _rooms_imported(ROOT / "streamfsm" / "tap" / "_run.py") >= {"runtime", "machine", "wire"}
    # A private reach, a later room and an I/O library are seen, inside a function too.
    package = tmp_path / "streamfsm"
    (package / "tap").mkdir(parents=True)
    probe = package / "tap" / "_probe.py"
    probe.write_text(
        "def f():\n    from ..runtime._stream import Run\n    from ..wire import Adapter\n    import httpx\n"
    )
    assert _private_reaches(probe, package) == ["streamfsm/tap/_probe.py:2 imports streamfsm.runtime._stream"]
    assert _rooms_imported(probe, package) == {"runtime", "wire"}
    assert ("!httpx", 4) in _imports(probe, package)
