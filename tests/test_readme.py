"""The README and the docs' guides tell the truth: their runnable examples run and print what they show, the
set-up commands are the ones CI runs. (tests/docs/test_docs_examples.py runs every example of the docs.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
GUIDES = ROOT / "docs" / "guides"
# ```python blocks are complete programs; ```py blocks are fragments of a larger program.
RUNNABLE = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_runnable_example_runs() -> None:
    assert len(RUNNABLE) >= 1
    for code in RUNNABLE:
        run(code)


def test_the_first_example_prints_what_the_readme_shows() -> None:
    shown = re.search(r"prints\n\n```text\n(.*?)```", README, flags=re.S)
    assert shown is not None
    expected = shown.group(1).splitlines()
    printed = run(RUNNABLE[0]).splitlines()
    assert printed[:3] == expected[:3]
    assert printed[3].startswith('{"schema": "streamfsm.run/1"')


def test_ci_runs_exactly_the_readme_test_command() -> None:
    setup = re.search(r"## Set-up: two commands.*?```sh\n(.*?)```", README, flags=re.S)
    assert setup is not None
    commands = [line for line in setup.group(1).splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("streamfsm harness")
    assert commands[1] == "bash scripts/test"
    assert "exec bash scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_the_transparent_mode_example_prints_what_the_guide_says() -> None:
    guide = (GUIDES / "transparent-mode.md").read_text()
    (code,) = [
        b for b in re.findall(r"```python\n(.*?)```", guide, flags=re.S) if "streamfsm.async_http_client" in b
    ]
    said = re.search(r"prints `(.*?)`, then `(.*?)` and `(.*?)`\.", guide, flags=re.S)
    assert said is not None
    expected = [" ".join(part.split()) for part in said.groups()]
    assert run(code).splitlines() == expected


def test_the_recovery_example_prints_what_the_guide_says() -> None:
    guide = (GUIDES / "recovery.md").read_text()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", guide, flags=re.S) if "BackgroundResponses" in b]
    said = re.search(r"prints `(The quick[^`]*)`, then `([^`]*)` and\s+`([^`]*)`", guide)
    assert said is not None
    assert run(code).splitlines() == list(said.groups())
