"""The SDK tests reuse the runtime tests' helpers (``runsupport``), also when ``tests/sdk`` runs alone (as in
the legacy-SDK environment, where ``tests/runtime`` is not collected)."""

from __future__ import annotations

import sys
from pathlib import Path

_RUNTIME_TESTS = str(Path(__file__).resolve().parents[1] / "runtime")
if _RUNTIME_TESTS not in sys.path:
    sys.path.insert(0, _RUNTIME_TESTS)
