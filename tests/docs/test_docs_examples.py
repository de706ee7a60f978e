"""Every code example of the documentation site runs: ```python blocks are complete programs, run as written;
```py blocks are fragments of a larger program, which must parse (the framework snippets among them run in
tests/frameworks/test_readme_snippets.py, the start page's example in tests/test_readme.py too)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

PAGES = sorted(DOCS.rglob("*.md"))
RUNNABLE = [
    pytest.param(code, id=f"{page.relative_to(DOCS)}#{n}")
    for page in PAGES
    for n, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))
]


def test_the_site_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 1


@pytest.mark.parametrize("code", RUNNABLE)
def test_every_runnable_example_runs(code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr


def test_every_fragment_parses() -> None:
    for page in PAGES:
        for code in re.findall(r"```py\n(.*?)```", page.read_text(), flags=re.S):
            ast.parse(code, filename=str(page))
