"""The transparent-mode guide's program per framework (docs/guides/transparent-mode.md) runs as pasted: each
```py block is a complete program against the local fault provider, run here in the frameworks' venv. Each
answers a transient error (the framework's retry or the program's loop retries it), a cut after "Hello"
(user_confirmed_retry: the program asks, then runs the turn again) and the whole answer; a program the tap
did not see, or whose verdict handling is wrong, fails or prints otherwise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "guides" / "transparent-mode.md").read_text()
PROGRAMS = {block.splitlines()[0]: block for block in re.findall(r"```py\n(.*?)```", GUIDE, flags=re.S)}
RUN_S = 180  # a whole program, LiteLLM's import included, on a loaded machine
ASKED = "[The stream broke partway through the answer. Run it again? yes]"
EXPECTED = {
    "OpenAI Agents SDK": ["Hello", ASKED, "Hello there."],
    "pydantic-ai": ["Hello", ASKED, "Hello there."],
    "LangChain ChatOpenAI": ["Hello", ASKED, "Hello there."],
    "LangChain ChatAnthropic": ["Hello", ASKED, "Hello there."],
    "LiteLLM": ["Hello", ASKED, "Hello there.", "Hello from Claude."],
    "google-genai": ["Hello", ASKED, "Hello there."],
}


def program(title: str) -> str:
    (found,) = [code for first, code in PROGRAMS.items() if first.startswith(f"# {title}")]
    return found


def test_every_framework_program_is_run_here() -> None:
    assert len(PROGRAMS) == len(EXPECTED)
    for first in PROGRAMS:
        assert any(first.startswith(f"# {title}") for title in EXPECTED), first


@pytest.mark.parametrize("title", sorted(EXPECTED))
def test_a_framework_program_runs_as_pasted(title: str, tmp_path: Path) -> None:
    code = program(title)
    assert "streamfsm.async_http_client()" in code or "streamfsm.tap.async_transport(" in code
    assert "streamfsm.Verdict.USER_CONFIRMED_RETRY" in code and "not confirm(" in code
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=RUN_S, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines == EXPECTED[title], done.stdout
