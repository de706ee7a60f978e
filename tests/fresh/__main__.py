"""``python -m tests.fresh [-v] [--trio] [--litellm]``: score issue 33's fresh set on this checkout (or,
with ``--litellm``, LiteLLM on the same set: run it with the LiteLLM venv's interpreter)."""

import sys

from tests.fresh.fresh_score import main

sys.exit(main(sys.argv[1:]))
