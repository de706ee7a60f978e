"""``python -m tests.fresh [-v] [--trio] [--litellm]``: score issue 33's fresh set on this checkout (or,
with ``--litellm``, LiteLLM on the same set: run it with the LiteLLM venv's interpreter)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fresh_score import main

sys.exit(main(sys.argv[1:]))
