"""The relay tests reuse the runtime tests' helpers (``runsupport``) and the relay's (``relaysupport``)."""

from __future__ import annotations

import sys
from pathlib import Path

for folder in (Path(__file__).resolve().parent, Path(__file__).resolve().parents[1] / "runtime"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
