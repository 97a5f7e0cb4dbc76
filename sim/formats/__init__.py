"""Importers of recorded conversations, one module per format, registered by name.

Every importer is a function ``read(path, *, lenient=False) -> ImportResult``. Strict mode raises
:class:`~sim.errors.FormatError` naming the file, the line (or record) and what was expected; lenient
mode skips the bad record, keeps everything read so far, and lists each skip in
``ImportResult.skipped``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sim.conversation import Conversation
from sim.registry import Registry


@dataclass(frozen=True)
class Skipped:
    """One record a lenient import passed over, and why."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: skipped: {self.reason}"


@dataclass
class ImportResult:
    """What an importer read: the conversations, and every record it skipped (lenient mode)."""

    conversations: list[Conversation] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


Reader = Callable[..., ImportResult]
FORMATS: Registry[Reader] = Registry("format")


def read(path: str | Path, fmt: str, *, lenient: bool = False) -> ImportResult:
    """Read ``path`` with the importer registered as ``fmt``."""
    _load()
    return FORMATS.get(fmt)(Path(path), lenient=lenient)


def _load() -> None:
    # Importing the modules registers them; kept lazy so `import sim` stays light.
    from sim.formats import claude_code, native, openai_chat  # noqa: F401


__all__ = ["FORMATS", "ImportResult", "Skipped", "read"]
