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
    ["import streamfsm.machine, streamfsm.classify", "import streamfsm", "import streamfsm.diagrams"],
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
# Every room is sealed: another room (the package root's own modules count as one, "") imports it only through
# its face, the room's package and its public modules (``streamfsm.testing.strategies``), never a module whose
# name starts with ``_``. The wire and the runtime show only their package: every room above them drives a
# run through ``streamfsm.wire`` and ``streamfsm.runtime``, whatever folders the runtime keeps inside.
SEALED = ("wire", "runtime")
# The rooms without I/O import no I/O library.
PURE = ("machine", "classify", "wire")
IO_LIBRARIES = frozenset({"httpx", "httpx2", "anyio", "trio", "asyncio", "socket", "ssl", "httpcore", "h11"})


def _imports(path: Path, package: Path = ROOT / "streamfsm") -> list[tuple[str, int]]:
    """Each module ``path`` imports and its line: ours dotted without ``streamfsm.`` (relative imports
    resolved; a private name imported from a package counts as its module), others after a ``!``."""
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
            # ``from .. import _diagrams``: a private module imported by name
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            found += [(f"{name}.{alias}", node.lineno) for alias in private]
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


def _room_of(path: Path, package: Path = ROOT / "streamfsm") -> str:
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else ""


def _private_reaches(path: Path, package: Path = ROOT / "streamfsm") -> list[str]:
    """Each import in ``path`` of another room's insides (``runtime._x`` from the tap)."""
    room = _room_of(path, package)
    reaches = []
    for name, line in _imports(path, package):
        if name.startswith("!"):
            continue
        parts = name.split(".")
        target = "" if parts[0].startswith("_") else parts[0]
        if target == room:
            continue
        inside = parts[1:] if target else parts
        private = any(part.startswith("_") and not part.startswith("__") for part in inside)
        if private or (target in SEALED and len(parts) > 1):
            reaches.append(f"{path.relative_to(package.parent)}:{line} imports streamfsm.{name}")
    return reaches


@pytest.mark.parametrize("room", ["", *ROOMS])
def test_every_room_imports_another_only_through_its_face(room: str) -> None:
    package = ROOT / "streamfsm"
    paths = package.glob("*.py") if not room else (package / room).rglob("*.py")
    reaches = [reach for path in paths for reach in _private_reaches(path)]
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
        "def f():\n    from ..runtime._inside import Run\n    from ..wire import Adapter\n    import httpx\n"
    )
    assert _private_reaches(probe, package) == ["streamfsm/tap/_probe.py:2 imports streamfsm.runtime._inside"]
    assert _rooms_imported(probe, package) == {"runtime", "wire"}
    assert ("!httpx", 4) in _imports(probe, package)


def test_the_seal_sees_each_kind_of_reach(tmp_path: Path) -> None:
    package = tmp_path / "streamfsm"
    (package / "relay").mkdir(parents=True)
    (package / "runtime" / "folder").mkdir(parents=True)
    relay = package / "relay" / "_app.py"
    relay.write_text(
        "from ..tap._inside import TapRun\n"  # another room's private module
        "from .. import _diagrams\n"  # the root's private module, imported by name
        "from ..runtime.folder import http\n"  # inside a sealed room, though public by name
        "from ..testing.strategies import formats\n"  # a public module: allowed
        "from ._keys import key_file\n"  # its own room: allowed
        "from ..tap import TapRun\n"  # a room's face: allowed
    )
    assert _private_reaches(relay, package) == [
        "streamfsm/relay/_app.py:1 imports streamfsm.tap._inside",
        "streamfsm/relay/_app.py:2 imports streamfsm._diagrams",
        "streamfsm/relay/_app.py:3 imports streamfsm.runtime.folder",
    ]
    # Inside a room its folders reach each other freely; the root's modules are a room of their own.
    driver = package / "runtime" / "folder" / "_http.py"
    driver.write_text("from .._inside import RunCore\nfrom ...classify._inside import Facts\n")
    assert _private_reaches(driver, package) == [
        "streamfsm/runtime/folder/_http.py:2 imports streamfsm.classify._inside"
    ]
    root = package / "otel.py"
    root.write_text("from .runtime._inside import OtelSink\nfrom ._docsite import svg\n")
    assert _private_reaches(root, package) == ["streamfsm/otel.py:1 imports streamfsm.runtime._inside"]
