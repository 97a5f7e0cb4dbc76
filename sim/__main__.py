"""``python -m sim`` is ``csim``."""

from sim.cli.main import entry

entry()
