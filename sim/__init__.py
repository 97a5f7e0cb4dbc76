"""compaction-sim: replay agent conversations through context-compaction policies, deterministically.

The Python API for notebooks and scripts is :mod:`sim.api`; the command line is ``csim``.

Each module stands on the lowest floor whose words it needs, and imports only from its floor or below (an import
inside a function counts; only the edge, ``sim.api`` and ``sim.cli``, imports lazily, and only downward):

| floor | package | holds |
|---|---|---|
| 1 | `sim/core/` | values and pure functions: conversation, log, view, run state, config, limits, counting |
| 2 | `policies/`, `sim/formats/`, `sim/scenarios/` | policies, importers of recordings, synthetic scenarios |
| 3 | `sim/replay/` | the engine and its siblings, the mock provider and summariser, the checker |
| 4 | `sim/calibration/` | fitting, fidelity |
| 5 | `sim/sweep/` | specs, grids, executors, the results store, comparison |
| 6 | `sim/api.py` | the Python API |
| 7 | `sim/report/` | reports and the demo |
| 8 | `sim/cli/` | the command line |

``tests/test_layout.py`` holds the code to this table.
"""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # Looked up on first use, not at import: reading package metadata costs more than the rest of `csim --help`.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("compaction-sim")
        except PackageNotFoundError:  # running from a source tree without an install
            return "0.0.0+src"
    raise AttributeError(f"module 'sim' has no attribute {name!r}")
