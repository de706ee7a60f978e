"""The test suite is a package: what tests share lives in ``tests/support`` and is imported by its package
name. No file under ``tests/`` edits ``sys.path`` (or adds a site dir) to reach a helper, and no test module
imports another test module."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def path_edits(source: str) -> list[int]:
    """The lines of ``source`` that reach ``sys.path`` or ``site.addsitedir``, however ``sys`` is imported."""
    lines = []
    names = ("path", "addsitedir")
    for node in ast.walk(ast.parse(source)):
        reached = (
            isinstance(node, ast.Attribute)
            and node.attr in names
            and isinstance(node.value, ast.Name)
            and node.value.id in ("sys", "site")
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module in ("sys", "site")
            and any(alias.name in names for alias in node.names)
        )
        if reached:
            lines.append(node.lineno)
    return sorted(lines)


def imported_test_modules(source: str) -> list[str]:
    """The test modules (``test_*``) that ``source`` imports."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [name for name in names if name.rsplit(".", 1)[-1].startswith("test_")]


def sources() -> dict[str, str]:
    return {str(path.relative_to(TESTS)): path.read_text(encoding="utf-8") for path in TESTS.rglob("*.py")}


def test_no_file_under_tests_edits_sys_path() -> None:
    found = {name: lines for name, source in sources().items() if (lines := path_edits(source))}
    assert not found, f"import from tests.support instead of editing sys.path: {found}"


def test_no_test_module_imports_another() -> None:
    found = {name: mods for name, source in sources().items() if (mods := imported_test_modules(source))}
    assert not found, f"move what is shared to tests/support: {found}"


def test_every_folder_of_tests_is_a_package() -> None:
    # Without its __init__.py a folder's modules are imported by their bare names again (pytest's
    # rootdir-less prepend), and two folders' files of one name collide.
    folders = {path.parent for path in TESTS.rglob("*.py")}
    assert not sorted(str(f) for f in folders if not (f / "__init__.py").exists())


def test_the_checks_find_what_they_forbid() -> None:
    # Guards against checks that could never fail.
    planted = [
        "import sys\nsys.path.insert(0, 'x')",
        "import sys\n\nif 'x' not in sys.path:\n    sys.path.append('x')",
        "from sys import path\npath.append('x')",
        "import site\nsite.addsitedir('x')",
    ]
    assert all(path_edits(source) for source in planted)
    assert path_edits("import os\nos.path.join('a', 'b')\nprint('sys.path')") == []
    assert imported_test_modules("from test_sdk_wrap import create") == ["test_sdk_wrap"]
    assert imported_test_modules("from tests.tap.test_tap import create") == ["tests.tap.test_tap"]
    assert imported_test_modules("from tests.support.sdk import create\nimport pytest") == []
