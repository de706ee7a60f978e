"""Every code example of the README and the documentation site runs as pasted: ```python blocks are complete
programs (imports included, against the local fault provider), run as written; one that defines ``test_``
functions is a test file, run by pytest; one followed by "prints" and a ```text block that elides nothing
(no "…") prints exactly that. The only ```py blocks are the per-framework programs of the
transparent-mode guide, complete as well, which run in the frameworks' own venv
(tests/frameworks/test_readme_snippets.py); here they must parse."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
FRAGMENTS_RUN_ELSEWHERE = {DOCS / "guides" / "transparent-mode.md"}
# A block, and what the page says it prints when it says so right after it.
BLOCK = re.compile(r"```python\n(.*?)```(?:\n\nprints\n\n```text\n(.*?)```)?", flags=re.S)
RUNNABLE = [
    pytest.param(
        code, printed if printed and "…" not in printed else None, id=f"{page.relative_to(ROOT)}#{n}"
    )
    for page in PAGES
    for n, (code, printed) in enumerate(BLOCK.findall(page.read_text()))
]
AGENT_LOOP_BEFORE = 24  # the openai agent loop of the trial (issue 21), in lines


def test_the_site_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 8


@pytest.mark.parametrize(("code", "printed"), RUNNABLE)
def test_every_runnable_example_runs(code: str, printed: str | None, tmp_path: Path) -> None:
    if re.search(r"^(async )?def test_", code, flags=re.M):  # a test file: run it as its reader would
        (tmp_path / "test_example.py").write_text(code)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"]
        cwd = tmp_path
    else:
        command, cwd = [sys.executable, "-c", code], ROOT
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=cwd, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    if printed is not None:
        assert done.stdout == printed


def test_fragments_are_only_the_framework_snippets_and_parse() -> None:
    for page in PAGES:
        fragments = re.findall(r"```py\n(.*?)```", page.read_text(), flags=re.S)
        if page not in FRAGMENTS_RUN_ELSEWHERE:
            assert not fragments, (
                f"{page.relative_to(ROOT)}: make its ```py fragments complete ```python programs"
            )
        for code in fragments:
            ast.parse(code, filename=str(page))


def test_the_converted_agent_loop_is_shown_and_short() -> None:
    page = (DOCS / "guides" / "sdk.md").read_text()
    program = next(
        code for code in re.findall(r"```python\n(.*?)```", page, flags=re.S) if "def agent(" in code
    )
    loop = re.search(r"^def agent\(.*?(?=^\S)", program, flags=re.S | re.M)
    assert loop is not None
    lines = [line for line in loop.group(0).splitlines() if line.strip()]
    assert len(lines) < AGENT_LOOP_BEFORE + 10, len(lines)
    assert "run.result()" in loop.group(0) and "streamfsm.retrying(" in loop.group(0)
    assert "streamfsm.wrap(lambda:" in loop.group(0)  # the sync forms
    assert "sdk.md#an-agent-loop-sync" in (ROOT / "README.md").read_text()
