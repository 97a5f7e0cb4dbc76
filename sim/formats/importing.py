"""Importing recordings in bulk: read many files (any registered format), report what was read, save as native JSONL.

``csim import`` is how a user turns a folder of recordings into the project's own format once, and
sees at a glance what the recordings hold: conversations, messages, tool calls, whether the
provider's usage was recorded, and every record that was skipped and why. The library function
:func:`import_paths` does the reading and counting; :func:`write_native` writes one native file per
input file (all of its conversations, in order), named after the input so reruns give the same files.

:func:`import_paths` is also how ``csim calibrate``, ``csim fidelity`` and ``csim run --conversation DIR``
read a folder, so all of them treat its other files alike. A file named on the command line is always read
with the format asked for. A folder is walked for recordings, and what it holds besides them (a README, a
results summary, predictions, logs) is passed over and listed with the reason, never the failure of the
whole folder: a file whose name is not a recording's (:data:`RECORDING_SUFFIXES`), and a file that is not
a recording of the format asked for, by the same sniffers ``--format auto`` uses (with ``auto``: no format
recognises it; with ``--format NAME``: that format's sniffer does not). A file that is a recording of the
format and is broken is still an error in strict mode.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.core.conversation import Conversation
from sim.core.errors import FormatError, InvalidConfig
from sim.formats import SNIFFERS, Skipped, detect, read, recognised_by
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
        passed_over: why a file found in a folder was not read: it is not a recording (of the format asked for).
    """

    path: Path
    format: str
    conversations: list[Conversation] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    error: str | None = None
    passed_over: str | None = None

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

    @property
    def read_files(self) -> list[FileReport]:
        """The files taken as recordings (read, or failed in lenient mode); not those passed over."""
        return [f for f in self.files if f.passed_over is None]

    @property
    def passed_over(self) -> list[FileReport]:
        """A folder's other files, each with why it was not read."""
        return [f for f in self.files if f.passed_over is not None]

    def notes(self) -> list[str]:
        """One line per file passed over or not read and per record skipped, in file order: what the commands
        that read recordings for another purpose (calibrate, fidelity, run) print to stderr."""
        lines: list[str] = []
        for f in self.files:
            if f.passed_over is not None:
                lines.append(f"{f.path}: skipped: {f.passed_over}")
            elif f.error is not None:
                lines.append(f"{f.path}: not read: {f.error}")
            lines.extend(str(s) for s in f.skipped)
        return lines


@dataclass(frozen=True)
class _Found:
    """A file to read, as named or found in a folder; or one a folder walk does not read, with why."""

    path: Path
    in_folder: bool
    refused: str | None = None  # a link out of the folder: not read
    other: str | None = None  # not a recording by its name: passed over


def collect_paths(paths: list[str | Path]) -> list[Path]:
    """The files to read: each file as given; a directory's recording files, walked in sorted order."""
    return [f.path for f in _walk_paths(paths) if f.refused is None and f.other is None]


def _walk_paths(paths: list[str | Path]) -> list[_Found]:
    """Each file named, and each file of each directory named (walked in sorted order).

    A file named on the command line is read wherever it points. Inside a directory, a link is followed
    only to a file in that directory: a folder of downloaded recordings must not pull in files from
    elsewhere on the machine, and a linked directory is never walked (its files are walked where they are).
    Hidden files and folders are not walked.
    """
    found: list[_Found] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(_walk_dir(p))
        elif p.exists():
            found.append(_Found(p, False))
        else:
            raise FormatError(str(p), None, "no such file or directory")
    return found


_SUFFIXES_TEXT = ", ".join(sorted(RECORDING_SUFFIXES))


def _walk_dir(root: Path) -> list[_Found]:
    real_root = root.resolve()
    out: list[_Found] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in [*dirs, *files]:
            f = base / name
            is_link_dir = name in dirs and f.is_symlink()
            if (name in dirs and not is_link_dir) or name.startswith("."):
                continue
            if not is_link_dir and Path(name).suffix.lower() not in RECORDING_SUFFIXES:
                if f.is_file() or f.is_symlink():
                    out.append(_Found(f, True, other=f"not a recording (a folder's {_SUFFIXES_TEXT} files are read)"))
                continue
            if f.is_symlink():
                target = f.resolve()
                if not target.is_relative_to(real_root):
                    why = f"a symbolic link to {target}, outside {root}: not followed (name it to read it)"
                    out.append(_Found(f, True, refused=why))
                    continue
                if is_link_dir or not target.is_file():
                    continue
            elif not f.is_file():
                continue
            out.append(_Found(f, True))
    return sorted(out, key=lambda item: item.path)


def _format_in_folder(path: Path, fmt: str) -> tuple[str, str | None]:
    """The format to read a folder's file with, or ``("", why)`` when it is not a recording of ``fmt``.

    ``auto``: the one format whose sniffer accepts it (several is an error, as for a named file);
    ``NAME``: that format, when its sniffer accepts the file (a format without a sniffer reads every file).
    """
    hits = recognised_by(path)
    if fmt == "auto":
        if not hits:
            return "", "not a recording: no format recognises it (name the file with --format NAME to read it)"
        if len(hits) > 1:
            raise FormatError(
                str(path), None, f"--format auto matched several formats ({', '.join(hits)})", "pass --format NAME"
            )
        return hits[0], None
    if fmt not in SNIFFERS or fmt in hits:
        return fmt, None
    looks = f"it looks like {' or '.join(hits)}" if hits else "no format recognises it"
    return "", f"not read as {fmt}: {looks} (name the file to read it as {fmt} anyway)"


def import_paths(paths: list[str | Path], fmt: str = "auto", lenient: bool = False) -> ImportReport:
    """Read every file of ``paths`` with ``fmt`` (``auto``: each file's detected format).

    A folder's files that are not recordings (of ``fmt``) are passed over and listed, in both modes (see the
    module docstring). Strict mode raises the first :class:`~sim.core.errors.FormatError` of a recording;
    lenient mode records a file that cannot be read at all in its report and goes on with the next.
    """
    report = ImportReport()
    for found in _walk_paths(paths):
        path = found.path
        if found.refused is not None or found.other is not None:
            report.files.append(FileReport(path, "", error=found.refused, passed_over=found.other))
            continue
        name = fmt
        try:
            if found.in_folder:
                name, why = _format_in_folder(path, fmt)
                if why is not None:
                    report.files.append(FileReport(path, "", passed_over=why))
                    continue
            elif fmt == "auto":
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


def recorded_conversations(path: str | Path, fmt: str, lenient: bool = False) -> tuple[list[Conversation], list[str]]:
    """Conversations read from a recording (a file, or a folder read as ``csim import`` reads one), and the
    report of what was skipped (one line each: records, and a folder's files that are not recordings)."""
    p = Path(path)
    if not p.exists():
        raise InvalidConfig(f"conversation file {str(p)!r} does not exist")
    if p.is_dir():
        report = import_paths([p], fmt, lenient)
        convs, notes = report.conversations, report.notes()
    else:
        result = read(p, fmt, lenient=lenient)
        convs, notes = result.conversations, [str(s) for s in result.skipped]
    if not convs:
        detail = "".join(f"\n  {line}" for line in notes[:20])
        raise InvalidConfig(f"{p}: no conversation could be read (format {fmt!r}){detail}")
    return convs, notes


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
    files = report.read_files
    for f, name in zip(files, output_names(files), strict=True):
        if f.conversations:
            written.append(write(f.conversations, target / name))
    return written


def describe(f: FileReport) -> list[str]:
    """The lines ``csim import`` prints for one file: its summary, then each skip."""
    if f.passed_over is not None:
        lines = [f"{f.path}: skipped: {f.passed_over}"]
    elif f.error is not None:
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
