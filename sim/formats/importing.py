"""Importing recordings in bulk: read many files (any registered format), report what was read, save as native JSONL.

``csim import`` is how a user turns a folder of recordings into the project's own format once, and
sees at a glance what the recordings hold: conversations, messages, tool calls, whether the
provider's usage was recorded, and every record that was skipped and why. The library function
:func:`import_paths` does the reading and counting; :func:`write_native` writes one native file per
input file (all of its conversations, in order), named after the input so reruns give the same files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.core.conversation import Conversation
from sim.core.errors import FormatError
from sim.formats import Skipped, detect, read
from sim.formats.native import write

#: Suffixes of the files taken from a directory; a file named on the command line is always read.
RECORDING_SUFFIXES = frozenset({".json", ".jsonl", ".yaml", ".yml", ".traj"})


@dataclass
class FileReport:
    """What one input file gave.

    Attributes:
        path: the file as given or found.
        format: the format it was read as ("" when detection failed).
        conversations: what was read.
        skipped: records passed over or repaired, with reasons.
        error: why the whole file could not be read (lenient mode only; strict mode raises).
    """

    path: Path
    format: str
    conversations: list[Conversation] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    error: str | None = None

    @property
    def messages(self) -> int:
        return sum(len(c.messages) for c in self.conversations)

    @property
    def tool_calls(self) -> int:
        return sum(len(m.calls) for c in self.conversations for m in c.messages)

    @property
    def with_usage(self) -> int:
        """Messages that carry the provider's recorded usage."""
        return sum(1 for c in self.conversations for m in c.messages if m.usage is not None)


@dataclass
class ImportReport:
    """Every file's report, in the order read, and the totals."""

    files: list[FileReport] = field(default_factory=list)

    @property
    def conversations(self) -> list[Conversation]:
        return [c for f in self.files for c in f.conversations]

    def total(self, attr: str) -> int:
        return sum(getattr(f, attr) for f in self.files)

    @property
    def skipped(self) -> list[Skipped]:
        return [s for f in self.files for s in f.skipped]


def collect_paths(paths: list[str | Path]) -> list[Path]:
    """The files to read: each file as given; a directory's recording files, walked in sorted order."""
    return [p for p, refused in _walk_paths(paths) if refused is None]


def _walk_paths(paths: list[str | Path]) -> list[tuple[Path, str | None]]:
    """Each file to read, with None; or a symbolic link a directory walk does not follow, with the reason.

    A file named on the command line is read wherever it points. Inside a directory, a link is followed
    only to a file in that directory: a folder of downloaded recordings must not pull in files from
    elsewhere on the machine, and a linked directory is never walked (its files are walked where they are).
    """
    found: list[tuple[Path, str | None]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(_walk_dir(p))
        elif p.exists():
            found.append((p, None))
        else:
            raise FormatError(str(p), None, "no such file or directory")
    return found


def _walk_dir(root: Path) -> list[tuple[Path, str | None]]:
    real_root = root.resolve()
    out: list[tuple[Path, str | None]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in [*dirs, *files]:
            f = base / name
            is_link_dir = name in dirs and f.is_symlink()
            if name in dirs and not is_link_dir:
                continue
            if name.startswith(".") or (not is_link_dir and Path(name).suffix.lower() not in RECORDING_SUFFIXES):
                continue
            if f.is_symlink():
                target = f.resolve()
                if not target.is_relative_to(real_root):
                    out.append((f, f"a symbolic link to {target}, outside {root}: not followed (name it to read it)"))
                    continue
                if is_link_dir or not target.is_file():
                    continue
            elif not f.is_file():
                continue
            out.append((f, None))
    return sorted(out, key=lambda item: item[0])


def import_paths(paths: list[str | Path], fmt: str = "auto", lenient: bool = False) -> ImportReport:
    """Read every file of ``paths`` with ``fmt`` (``auto``: each file's detected format).

    Strict mode raises the first :class:`~sim.core.errors.FormatError`; lenient mode records a file that
    cannot be read at all in its report and goes on with the next.
    """
    report = ImportReport()
    for path, refused in _walk_paths(paths):
        if refused is not None:
            report.files.append(FileReport(path, "", error=refused))
            continue
        name = fmt
        try:
            if fmt == "auto":
                name = detect(path)
            result = read(path, name, lenient=lenient)
        except FormatError as exc:
            if not lenient:
                raise
            report.files.append(FileReport(path, "" if name == "auto" else name, error=str(exc)))
            continue
        report.files.append(FileReport(path, name, list(result.conversations), list(result.skipped)))
    return report


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def output_names(files: list[FileReport]) -> list[str]:
    """A native file name per input: its stem made filesystem-safe, numbered when two inputs collide."""
    names: list[str] = []
    used: set[str] = set()  # case-folded: on macOS and Windows "A.jsonl" and "a.jsonl" are one file
    for f in files:
        base = _UNSAFE.sub("_", f.path.stem).strip("_") or "conversation"
        name, n = f"{base}.jsonl", 2
        while name.casefold() in used:
            name, n = f"{base}-{n}.jsonl", n + 1
        used.add(name.casefold())
        names.append(name)
    return names


def write_native(report: ImportReport, out: str | Path) -> list[Path]:
    """Write each input file's conversations into ``out`` as one native JSONL file; returns the paths."""
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for stale in target.glob(".*.jsonl.tmp-*"):  # a file a killed import did not finish writing
        stale.unlink(missing_ok=True)
    for f, name in zip(report.files, output_names(report.files), strict=True):
        if f.conversations:
            written.append(write(f.conversations, target / name))
    return written


def describe(f: FileReport) -> list[str]:
    """The lines ``csim import`` prints for one file: its summary, then each skip."""
    if f.error is not None:
        lines = [f"{f.path}: not read: {f.error}"]
    else:
        usage = f"usage on {f.with_usage} of {f.messages} messages" if f.with_usage else "no recorded usage"
        lines = [
            f"{f.path}: {f.format}, {plural(len(f.conversations), 'conversation')}, {plural(f.messages, 'message')}, "
            f"{plural(f.tool_calls, 'tool call')}, {usage}"
        ]
    lines.extend(f"  {s}" for s in f.skipped)
    return lines


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
