"""The real agent frameworks through the tap: runs only where they are installed (``.venv-frameworks``, built
by ``scripts/test``); elsewhere every module of this folder is skipped unimported, with the reason."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

# No network but loopback: LiteLLM fetches its model cost map from GitHub at import unless told not to, and
# the Agents SDK exports traces to OpenAI unless tracing is off (each adapter turns it off too).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

FRAMEWORK_MODULES = (
    "agents",
    "pydantic_ai",
    "langchain_openai",
    "langchain_anthropic",
    "litellm",
    "google.genai",
)


def _missing() -> list[str]:
    missing = []
    for name in FRAMEWORK_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # "google.genai" without "google"
            found = False
        if not found:
            missing.append(name)
    return missing


MISSING = _missing()
REASON = (
    f"agent frameworks not installed ({', '.join(MISSING)}): they run in .venv-frameworks (see scripts/test)"
)


class _NotInstalled(pytest.Module):
    """A test module of this folder, skipped whole without being imported (it imports the frameworks)."""

    def collect(self) -> list[pytest.Item]:
        pytest.skip(REASON)


if MISSING:
    # A hook rather than a module-level skip: a conftest that raises Skipped breaks a run given this folder
    # by path (pytest tests/frameworks), where the conftest is loaded before collection starts.
    def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
        return _NotInstalled.from_parent(parent, path=module_path)


@pytest.fixture
def anyio_backend() -> str:
    """The frameworks run on asyncio only (the Agents SDK, LiteLLM and LangChain use asyncio directly)."""
    return "asyncio"
