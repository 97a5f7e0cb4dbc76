"""compaction-sim: replay agent conversations through context-compaction policies, deterministically.

The Python API for notebooks and scripts is :mod:`sim.api`; the command line is ``csim``.
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
