"""pyproject's classifiers name exactly the Pythons the test command runs the suite on."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def classified() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib: this runs on 3.10 too
    return set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text))


def test_the_classifiers_list_each_python_the_test_command_runs() -> None:
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    legs = set(re.findall(r"find_python (3\.\d+) PYTHON", script))
    assert legs == {"3.10", "3.13"}, legs  # the older-SDK venv and the newest leg
    # The main venv is python3, 3.11 here (the script needs 3.11+); each leg runs this test on itself.
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert classified() == legs | {"3.11"}
    assert running in classified()


def test_requires_python_is_the_oldest_classified() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'requires-python = ">=3.10"' in text
    assert min(classified(), key=lambda v: tuple(map(int, v.split(".")))) == "3.10"
