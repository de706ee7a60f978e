"""``python -m tests.heldout [-v]``: score the held-out set of issue 29 on this checkout."""

import sys

from tests.heldout.heldout_shapes import SHAPES
from tests.support.scorer import main

sys.exit(main(sys.argv[1:], SHAPES))
