"""The transparent-mode guide's program per framework (docs/guides/transparent-mode.md) runs as pasted: each
```py block is a complete program against the local fault provider, run here in the frameworks' venv. Each
answers a transient error (the framework's retry or the program's loop retries it), a cut after "Hello"
(user_confirmed_retry: the program asks, then runs the turn again) and the whole answer; a program the tap
did not see, or whose verdict handling is wrong, fails or prints otherwise. The two agent frameworks' programs
also meet a tool call cut mid-arguments (safe_auto_retry, after the stream's first events: the frameworks
leave it to the loop), then the call whole: the loop retries it, the tool runs once, and every request after
it carries the tool's result (the loop goes on from what the turn did, not from the user's message)."""

from __future__ import annotations

import json
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
RAN = "[get_weather('Paris') ran]"
EXPECTED = {
    "OpenAI Agents SDK": [RAN, "Hello", ASKED, "Hello there."],
    "pydantic-ai": [RAN, "Hello", ASKED, "Hello there."],
    "LangChain ChatOpenAI": ["Hello", ASKED, "Hello there."],
    "LangChain ChatAnthropic": ["Hello", ASKED, "Hello there."],
    "LiteLLM": ["Hello", ASKED, "Hello there.", "Hello from Claude."],
    "google-genai": ["Hello", ASKED, "Hello there."],
}
# The agents' requests, by the roles of their messages: the transient error, the cut tool call, its retry
# (the call whole), then the cut answer and its retry, both with the tool's result (not the turn anew).
TOOL_TURN = ["user", "assistant", "tool"]
REQUESTS = {
    "OpenAI Agents SDK": [["user"]] * 3 + [TOOL_TURN] * 2,
    "pydantic-ai": [["user"]] * 3 + [TOOL_TURN] * 2,
}
# Run before the program, unseen by it: the fault server it imports logs each request's message roles.
LOG_REQUESTS = """
import json, sys
import streamfsm.testing

class _Logged(streamfsm.testing.FaultServer):
    def __init__(self, router, **options):
        def logged(request):
            roles = [message.get("role") for message in json.loads(request.body or b"{}").get("messages", [])]
            print("request roles:", json.dumps(roles), file=sys.stderr)
            return router(request) if callable(router) else router
        super().__init__(logged, **options)

streamfsm.testing.FaultServer = _Logged
"""
ROLES = "request roles: "


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
        [sys.executable, "-c", LOG_REQUESTS + code],
        capture_output=True,
        text=True,
        timeout=RUN_S,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines == EXPECTED[title], done.stdout
    if title in REQUESTS:
        logged = done.stderr.splitlines()
        requests = [json.loads(line[len(ROLES) :]) for line in logged if line.startswith(ROLES)]
        assert requests == REQUESTS[title], done.stderr[-3000:]
