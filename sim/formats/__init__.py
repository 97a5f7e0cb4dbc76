"""Importers of recorded conversations, one module per format, registered by name.

Every importer is a function ``read(path, *, lenient=False) -> ImportResult``. Strict mode raises
:class:`~sim.core.errors.FormatError` naming the file, the line (or record) and what was expected; lenient
mode skips the bad record, keeps everything read so far, and lists each skip in
``ImportResult.skipped``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sim.core.conversation import Conversation
from sim.core.errors import FormatError
from sim.core.registry import Registry
from sim.formats._surrogates import SURROGATE_HINT, SURROGATE_PROBLEM, has_surrogate, surrogate_at


@dataclass(frozen=True)
class Skipped:
    """One record a lenient import passed over, and why; or (``count`` > 1) how many more were like it."""

    path: str
    line: int | None
    reason: str
    count: int = 1

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        if self.count > 1:
            return f"{where}: {self.count:,} more skipped, not listed, like: {self.reason}"
        return f"{where}: skipped: {self.reason}"


@dataclass
class ImportResult:
    """What an importer read: the conversations, and every record it skipped (lenient mode)."""

    conversations: list[Conversation] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


Reader = Callable[..., ImportResult]
FORMATS: Registry[Reader] = Registry("format")

#: How many bytes of a file ``--format auto`` shows each sniffer.
SNIFF_BYTES = 64 * 1024

#: A sniffer answers, from a file's name and first bytes, whether it looks like its format. The head
#: may end mid-record; a sniffer must be cheap and never raise.
Sniffer = Callable[[Path, bytes], bool]
SNIFFERS: dict[str, Sniffer] = {}

#: Importer modules; importing one registers its format (and its sniffer). One line per module.
FORMAT_MODULES: tuple[str, ...] = (
    "sim.formats.native",
    "sim.formats.claude_code",
    "sim.formats.openai_chat",
    "sim.formats.anthropic_messages",
    "sim.formats.openai_responses",
    "sim.formats.codex_rollout",
    "sim.formats.vcr_cassette",
    "sim.formats.swe_agent",
    "sim.formats.mini_swe_agent",
    "sim.formats.openhands_events",
    "sim.formats.openhands_eval",
    "sim.formats.openhands_llm",
    "sim.formats.tau_bench",
    "sim.formats.kv_trace",
)


def sniffer(name: str) -> Callable[[Sniffer], Sniffer]:
    """Register the ``--format auto`` test of the format registered as ``name``."""

    def deco(fn: Sniffer) -> Sniffer:
        SNIFFERS[name] = fn
        return fn

    return deco


def recognised_by(path: str | Path) -> list[str]:
    """The formats whose sniffers accept ``path``, sorted; a FormatError when the file cannot be read."""
    _load()
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise FormatError(
            str(p), None, f"cannot be read: {exc.strerror or exc}", "check the path and its permissions"
        ) from None
    return [name for name, fn in sorted(SNIFFERS.items()) if _safe_sniff(fn, p, head)]


def detect(path: str | Path) -> str:
    """The one format whose sniffer accepts ``path``; a clear error when none or several do."""
    p = Path(path)
    hits = recognised_by(p)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise FormatError(
            str(p),
            None,
            "--format auto recognised no format",
            f"pass --format NAME, one of: {', '.join(FORMATS.names())}",
        )
    raise FormatError(
        str(p), None, f"--format auto matched several formats ({', '.join(hits)})", "pass --format NAME to choose one"
    )


def _safe_sniff(fn: Sniffer, path: Path, head: bytes) -> bool:
    try:
        return bool(fn(path, head))
    except Exception:  # a sniffer that trips over odd bytes has simply not recognised the file
        return False


def read(path: str | Path, fmt: str, *, lenient: bool = False) -> ImportResult:
    """Read ``path`` with the importer registered as ``fmt`` (``"auto"``: the one :func:`detect` finds)."""
    _load()
    if fmt == "auto":
        fmt = detect(path)
    result = FORMATS.get(fmt)(Path(path), lenient=lenient)
    _no_lone_surrogates(result, str(path))
    summary = getattr(result.skipped, "summary", None)
    if summary is not None:  # the skips past the first hundred, counted by kind of reason
        result.skipped = [*result.skipped, *summary()]
    return result


def _no_lone_surrogates(result: ImportResult, path: str) -> None:
    """Every reader mends or refuses lone surrogates where it parses JSON (naming the line); a string that
    still holds one would fail later, when it is hashed or written as UTF-8, so it stops the import here."""
    for conv in result.conversations:
        where = surrogate_at(conv)
        if where is not None and has_surrogate(path):  # undecodable bytes of the name, which ids are made from
            raise FormatError(
                path, None, "the file name is not valid UTF-8, and conversation ids come from it", "rename the file"
            )
        if where is not None:
            raise FormatError(path, None, f"conversation {conv.id!r}, {where}: {SURROGATE_PROBLEM}", SURROGATE_HINT)


def _load() -> None:
    # Importing the modules registers them; kept lazy so `import sim` stays light.
    for module in FORMAT_MODULES:
        importlib.import_module(module)


__all__ = ["FORMATS", "SNIFFERS", "ImportResult", "Skipped", "detect", "read", "recognised_by", "sniffer"]
