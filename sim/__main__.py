"""``python -m sim`` is ``csim``."""

import sys

from sim.cli import main

sys.exit(main())
