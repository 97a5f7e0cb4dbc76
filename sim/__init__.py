"""compaction-sim: replay agent conversations through context-compaction policies, deterministically."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("compaction-sim")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+src"

__all__ = ["__version__"]
