"""No module of the package imports itself back through others: no import cycle inside a room, whether the
imports are at the top of a module, inside a function (the usual way to dodge one at import time) or under
``TYPE_CHECKING``. The few cycles left are listed with why; one that goes must leave the list too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "streamfsm"

KNOWN: dict[frozenset[str], str] = {
    # StreamConfig names the record type its sinks take; the record is built from the config. Annotation
    # only (``TYPE_CHECKING``): nothing imports in a circle when the package loads.
    frozenset({"runtime.core._config", "runtime.records._record"}): "type only",
    # open_stream hands a ws:// base URL to the WebSocket source, itself a Run: imported when called (and for
    # the annotation), so nothing imports in a circle when the package loads. It goes when the drivers have a
    # source interface of their own (issue 36) and open_stream picks a source from the registry.
    frozenset({"runtime.drivers._stream", "runtime.drivers.websocket"}): "at call time",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every module of the package that ``module`` imports, anywhere in its text."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("streamfsm."):
                source = node.module.removeprefix("streamfsm.")
            else:
                continue
            names = [f"{source}.{a.name}".strip(".") for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("streamfsm.") for a in node.names if a.name.startswith("streamfsm.")]
        else:
            continue
        for name in names:
            while name and name not in modules:  # a name imported from a module: that module
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(frozenset(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _package_cycles(extra: dict[str, set[str]] | None = None) -> set[frozenset[str]]:
    modules = _modules()
    edges = {m: set(_imported(m, p, modules)) for m, p in modules.items()}
    for module, targets in (extra or {}).items():
        edges[module] |= targets
    return set(_cycles(edges))


def test_no_import_cycles_but_the_known_ones() -> None:
    assert _package_cycles() == set(KNOWN)


def test_the_check_sees_a_type_only_cycle() -> None:
    # The one this check was written against: _errors naming the retry executor's Partial under TYPE_CHECKING.
    found = _package_cycles({"runtime.core._errors": {"runtime.retry._retry"}})
    assert any({"runtime.core._errors", "runtime.retry._retry"} <= group for group in found)


def test_the_import_scan_sees_function_and_type_checking_imports(tmp_path: Path) -> None:
    path = tmp_path / "_a.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ._b import B\n"
        "def f():\n    from ._c import C\n"
        "from streamfsm.room._d import D\n"
    )
    modules = dict.fromkeys(("room._a", "room._b", "room._c", "room._d"), tmp_path / "x.py")
    assert set(_imported("room._a", path, modules)) == {"room._b", "room._c", "room._d"}
