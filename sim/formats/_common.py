"""Plumbing shared by the importers: decoding lines, strict/lenient problem handling, call pairing.

Every importer has the same two modes. Strict mode stops at the first malformed record with a
:class:`~sim.core.errors.FormatError` that names the file and line; lenient mode passes over the record,
lists it as a :class:`~sim.formats.Skipped`, and keeps everything read before and after it. Keeping
that policy in one place (:class:`Issues`) is what makes the importers agree on it.

Recordings also break the pairing rule of :func:`sim.core.conversation.validate` (a call interrupted
before its result was written, a result whose call was lost). :func:`pair_calls` finds those in a
list of :class:`Draft` messages and either reports them or repairs them with an aborted result.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sim.core.conversation import Message, Part, Usage
from sim.core.errors import FormatError
from sim.formats import Skipped
from sim.formats._surrogates import mend_surrogates

#: The text of the tool result synthesised for a call whose result was never recorded.
ABORTED_TEXT = "aborted: no result recorded"
#: What a media block becomes in every importer: the provider counts images, documents, files and audio by rules
#: of its own, never as the text of their encoding, so a placeholder stands in their place.
MEDIA_PLACEHOLDERS = {"image": "[image]", "document": "[document]", "file": "[file]", "audio": "[audio]"}

_MISSING: Any = object()


class BadRecord(ValueError):
    """A record has the wrong shape; the message says which field and what was expected."""


class Fatal(FormatError):
    """A problem that stops the import in lenient mode too: nothing after it could be read."""


#: Skips of one file listed one by one; past this many they are counted by kind of reason, so a file of a
#: million bad records reports a few lines and holds a few counters, not a million skips.
LISTED_SKIPS = 100
_NUMBER = re.compile(r"\d+")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


class SkipList(list[Skipped]):
    """The skips of one file: the first :data:`LISTED_SKIPS` kept, the others counted by kind of reason (its
    text with numbers and quoted values blanked); :meth:`summary` gives one line per kind."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.more: dict[str, int] = {}

    def append(self, skip: Skipped) -> None:
        if len(self) < LISTED_SKIPS:
            super().append(skip)
            return
        kind = _QUOTED.sub("'…'", _NUMBER.sub("N", skip.reason))
        self.more[kind] = self.more.get(kind, 0) + skip.count

    def summary(self) -> list[Skipped]:
        """One :class:`Skipped` per kind of reason past the first hundred, the most frequent first."""
        kinds = sorted(self.more.items(), key=lambda kv: (-kv[1], kv[0]))
        return [Skipped(self.path, None, kind, count) for kind, count in kinds]


class Issues:
    """Where an importer sends problems: raised in strict mode, listed as skips in lenient mode.

    Attributes:
        path: the file being read, as it appears in messages.
        lenient: skip bad records instead of stopping.
        skipped: what was skipped or repaired, in file order.
    """

    def __init__(self, path: Path, lenient: bool) -> None:
        self.path = str(path)
        self.lenient = lenient
        self.skipped: list[Skipped] = SkipList(self.path)

    def problem(self, line: int | None, problem: str, hint: str = "") -> None:
        """Raise a FormatError (strict) or record the skip and return (lenient)."""
        problem = clip(problem)
        if not self.lenient:
            raise FormatError(self.path, line, problem, hint)
        self.skipped.append(Skipped(self.path, line, problem))

    def fatal(self, line: int | None, problem: str, hint: str = "") -> Fatal:
        """A problem that stops the import in both modes (an unknown format, an unparsable document)."""
        return Fatal(self.path, line, problem, hint)

    def repaired(self, line: int | None, what: str) -> None:
        """Record a repair the importer made; repairs are listed in both modes."""
        self.skipped.append(Skipped(self.path, line, f"repaired: {what}"))

    @contextmanager
    def record(self, line: int | None, what: str, hint: str = "") -> Iterator[None]:
        """Guard the reading of one record: any shape error becomes a FormatError or a skip.

        In lenient mode the exception is swallowed, so the body's remaining statements (typically
        appending the parsed record) do not run: the record is skipped and nothing else is lost.
        """
        try:
            yield
        except FormatError as exc:
            if not self.lenient or isinstance(exc, Fatal):
                raise
            self.skipped.append(Skipped(self.path, exc.line if exc.line is not None else line, clip(exc.problem)))
        except (BadRecord, KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            reason = clip(describe(exc))
            if reason.startswith(what):  # the reason names the record already: say it once
                reason = reason[len(what) :].lstrip(" :")
            problem = f"{what}: {reason}"
            if not self.lenient:
                raise FormatError(self.path, line, problem, hint) from exc
            self.skipped.append(Skipped(self.path, line, problem))


#: The longest problem text an error or a skip line carries; longer ones are cut (a record can be huge).
MAX_PROBLEM_CHARS = 300

_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlong = 3, 60, 60, 40
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = _SHOWN.maxfrozenset = 5


def shown(value: Any, width: int = 60) -> str:
    """``value`` as a short repr for a message: at most ``width`` characters, and costing no more than
    that whatever the value holds (``repr`` of a value built from nested YAML aliases would not end)."""
    try:
        text = _SHOWN.repr(value)
    except (ValueError, RecursionError):  # an int too long to print, a structure too deep
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def clip(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    return text if len(text) <= limit else text[: limit - 14] + "... (cut here)"


def describe(exc: BaseException) -> str:
    """A one-line reason for a shape error, phrased for a person reading a data file."""
    if isinstance(exc, KeyError):
        return f"missing key {shown(exc.args[0])}" if exc.args else "missing key"
    if isinstance(exc, BadRecord):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


# --- reading ---------------------------------------------------------------------------------


def read_bytes(path: Path, expected: str) -> bytes:
    """The file's bytes; a missing file or an empty one is a FormatError in both modes."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(str(path), None, f"cannot read file: {exc.strerror or exc}") from exc
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise FormatError(str(path), None, f"empty file, expected {expected}")
    return data


def decode_document(data: bytes, issues: Issues) -> str:
    """A whole-file document as text. Invalid UTF-8 names its line; lenient mode replaces the bad bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        if not issues.lenient:
            problem = f"invalid UTF-8 at byte {exc.start} of the file"
            raise issues.fatal(line, problem, "the file must be UTF-8") from exc
        issues.repaired(line, "invalid UTF-8 bytes replaced by U+FFFD")
        return data.decode("utf-8", errors="replace")


def read_lines(path: Path, issues: Issues, expected: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines decoded one by one, numbered from 1; a line with invalid UTF-8 is a bad record."""
    data = read_bytes(path, expected)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            issues.problem(number, f"invalid UTF-8 at byte {exc.start} of the line", "the file must be UTF-8")


def read_jsonl(path: Path, issues: Issues, expected: str) -> Iterator[tuple[int, Any]]:
    """One parsed JSON value per non-blank line; a line that does not parse is a bad record."""
    for number, text in read_lines(path, issues, expected):
        try:
            value = json.loads(text)
        except RecursionError:
            issues.problem(number, "JSON nested too deeply to read", "one JSON object per line")
            continue
        except json.JSONDecodeError as exc:
            issues.problem(number, f"invalid JSON: {exc.msg} at column {exc.colno}", "one JSON object per line")
            continue
        except ValueError as exc:  # an integer past the interpreter's digit limit
            issues.problem(number, f"invalid JSON: {clip(str(exc), 80)}", "one JSON object per line")
            continue
        yield number, mend_surrogates(value, issues, number, text)


# --- shape checks ----------------------------------------------------------------------------

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
    type(None): "null",
    float: "a number",
}


def _type_name(kinds: type | tuple[type, ...]) -> str:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)


def check(value: Any, kinds: type | tuple[type, ...], what: str) -> Any:
    """``value`` if it has one of ``kinds`` (a bool is not accepted as an integer), else BadRecord."""
    kinds_t = kinds if isinstance(kinds, tuple) else (kinds,)
    ok = isinstance(value, kinds_t) and not (isinstance(value, bool) and bool not in kinds_t)
    if not ok:
        raise BadRecord(f"{what} should be {_type_name(kinds)}, got {type(value).__name__} {shown(value)}")
    return value


def get(obj: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], what: str, default: Any = _MISSING) -> Any:
    """``obj[key]`` checked against ``kinds``; absent or null gives ``default`` when one is given."""
    value = obj.get(key)
    if value is None:
        if default is _MISSING:
            raise BadRecord(f"{what} has no {key!r}")
        return default
    return check(value, kinds, f"{what} {key!r}")


def dumps_args(value: Any) -> str:
    """Tool arguments or a schema as JSON text: sorted keys so equal inputs give equal strings."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# --- drafts and call pairing -----------------------------------------------------------------


@dataclass
class Draft:
    """A message being assembled, with where it came from so later checks can point at it."""

    id: str
    role: str
    parts: list[Part]
    line: int | None = None
    label: str = ""
    usage: Usage | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    pending: bool = False
    resolves: tuple[str, ...] = ()

    def build(self) -> Message:
        """The immutable message; an empty draft gets one empty text part (a message needs a part)."""
        parts = tuple(self.parts) or (Part("text", ""),)
        return Message(self.id, self.role, parts, self.pending, self.resolves, self.usage, self.meta)  # type: ignore[arg-type]

    @property
    def where(self) -> str:
        return self.label or f"message {self.id!r}"


Unanswered = Literal["report", "repair"]


def pair_calls(drafts: list[Draft], issues: Issues, unanswered: Unanswered) -> list[Draft]:
    """Make every tool result answer a call of the assistant message just before it.

    A result that answers no open call is a problem (strict: error; lenient: the result is
    dropped). A call still open when the next non-tool message arrives is, with
    ``unanswered="report"``, a problem whose lenient repair is an aborted result; with
    ``unanswered="repair"`` it is always repaired, and the repair is always listed. Calls open at
    the very end are left alone: the script may stop mid-turn.
    """
    out: list[Draft] = []
    open_calls: dict[str, Part] = {}
    owner: Draft | None = None
    for d in drafts:
        if d.role == "tool":
            kept = _answered(d, open_calls, issues)
            if kept:
                d.parts = kept
                out.append(d)
            continue
        if open_calls and owner is not None:
            out.append(_abort(owner, open_calls, d, issues, unanswered))
        open_calls = {p.call_id or "": p for p in d.parts if p.kind == "tool_call"}
        owner = d
        out.append(d)
    return out


def _answered(d: Draft, open_calls: dict[str, Part], issues: Issues) -> list[Part]:
    """The results of tool message ``d`` that answer an open call; the others are reported."""
    kept: list[Part] = []
    for p in d.parts:
        if p.call_id in open_calls:
            del open_calls[p.call_id or ""]
            kept.append(p)
        else:
            issues.problem(
                d.line,
                f"{d.where}: tool result {p.call_id!r} answers no call of the assistant message before it",
                "results must follow the assistant message that made the call",
            )
    return kept


def _abort(owner: Draft, open_calls: dict[str, Part], nxt: Draft, issues: Issues, unanswered: Unanswered) -> Draft:
    """A tool message closing ``owner``'s open calls with aborted results (after reporting them)."""
    ids = sorted(open_calls)
    what = f"calls {ids} of {owner.where} have no result before {nxt.where}"
    if unanswered == "report" and not issues.lenient:
        issues.problem(owner.line, what, "lenient mode adds an aborted result for each")
    issues.repaired(owner.line, f"{what}; added an aborted result for each")
    parts = [Part("tool_result", ABORTED_TEXT, call_id=cid, name=open_calls[cid].name, is_error=True) for cid in ids]
    open_calls.clear()
    return Draft(
        f"{owner.id}~aborted",
        "tool",
        parts,
        owner.line,
        f"aborted results of {owner.where}",
        meta={"synthetic": "aborted"},
    )


def content_parts(content: Any, what: str) -> list[Part]:
    """Content as text parts: a string, or one part per block (images become a placeholder)."""
    if content is None or isinstance(content, str):
        return [Part("text", content or "")]
    blocks = check(content, list, f"{what} content")
    parts: list[Part] = []
    for k, block in enumerate(blocks):
        bwhat = f"{what} content[{k}]"
        check(block, dict, bwhat)
        kind = block.get("type")
        if kind == "text":
            parts.append(Part("text", get(block, "text", str, bwhat, "")))
        elif kind in ("image_url", "image"):
            parts.append(Part("text", MEDIA_PLACEHOLDERS["image"]))
        else:
            parts.append(Part("text", dumps_args(block)))
    return parts or [Part("text", "")]


def parse_document(text: str, issues: Issues, expected: str) -> Any:
    """``text`` parsed as one JSON value; every way that fails stops the import, naming the line it can."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise issues.fatal(exc.lineno, f"invalid JSON: {exc.msg} at column {exc.colno}", expected) from exc
    except RecursionError as exc:
        raise issues.fatal(None, "JSON nested too deeply to read", expected) from exc
    except ValueError as exc:  # an integer past the interpreter's digit limit
        raise issues.fatal(None, f"invalid JSON: {clip(str(exc), 80)}", expected) from exc
