"""``python -m tests.heldout [-v]``: score the held-out set of issue 29 on this checkout."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from heldout_score import main

sys.exit(main(sys.argv[1:]))
