"""The records of a JSON-or-JSONL file: one object, a list of objects, or one object per line.

Request-body importers (Anthropic Messages, OpenAI Responses) accept the three shapes people save
request bodies in. This module finds the records and the line each starts on, so that every error
and every lenient skip can point at a line, the same way for both importers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.formats._common import Issues, clip, decode_document, parse_document, read_bytes, read_jsonl
from sim.formats._surrogates import mend_surrogates


@dataclass(frozen=True)
class Record:
    """One top-level value of the file.

    Attributes:
        value: the parsed JSON value.
        line: the line it starts on (1-based).
        label: how messages name it ("the document", "record 3", "line 7").
        key: a short stable suffix for conversation ids ("" for a single document).
    """

    value: Any
    line: int
    label: str
    key: str


def json_records(path: Path, issues: Issues, expected: str, *, split_lists: bool = True) -> list[Record]:
    """The file's records. A ``.jsonl`` file, or a JSON text followed by more values, is read line by line.

    A whole-file document that does not parse is fatal in both modes (nothing after the error can be
    trusted); a JSONL line that does not parse is one bad record. ``split_lists=False`` keeps a
    top-level list as one record (an item list that is itself one conversation).
    """
    data = read_bytes(path, expected)
    if path.suffix == ".jsonl":
        return _lines(path, issues, expected)
    try:
        doc = json.loads(data.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return _lines(path, issues, expected)
        raise issues.fatal(exc.lineno, f"invalid JSON: {exc.msg} at column {exc.colno}", expected) from exc
    except RecursionError as exc:
        raise issues.fatal(None, "JSON nested too deeply to read", expected) from exc
    except ValueError as exc:  # an integer past the interpreter's digit limit
        raise issues.fatal(None, f"invalid JSON: {clip(str(exc), 80)}", expected) from exc
    text = decode_document(data, issues)  # strict: invalid UTF-8 stops here, naming its line
    doc = mend_surrogates(doc, issues, None, text)
    if isinstance(doc, list) and split_lists:
        if not doc:
            raise issues.fatal(1, "the document is an empty list: nothing to import", expected)
        starts = element_lines(text)
        return [Record(v, starts[k] if k < len(starts) else 1, f"record {k}", str(k)) for k, v in enumerate(doc)]
    return [Record(doc, 1, "the document", "")]


def _lines(path: Path, issues: Issues, expected: str) -> list[Record]:
    return [Record(v, n, f"line {n}", str(n)) for n, v in read_jsonl(path, issues, expected)]


def compact_head(head: bytes) -> bytes:
    """The sniffed head without whitespace, so key tests do not depend on indentation."""
    return head.replace(b" ", b"").replace(b"\n", b"").replace(b"\r", b"").replace(b"\t", b"")


class _Lines:
    """Line numbers of positions in ``text``, counted incrementally: positions must not go backwards."""

    def __init__(self, text: str) -> None:
        self.text, self.line, self.counted = text, 1, 0

    def at(self, pos: int) -> int:
        self.line += self.text.count("\n", self.counted, pos)
        self.counted = pos
        return self.line


_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _list_lines(text: str, pos: int, lines: _Lines) -> tuple[list[int], int]:
    """Lines of the elements of the JSON list opening at ``pos``, and the position after it."""
    out: list[int] = []
    pos += 1
    while True:
        pos = _skip(text, pos, _SPACE + ",")
        if pos >= len(text) or text[pos] == "]":
            return out, pos + 1
        out.append(lines.at(pos))
        _, pos = _DECODER.raw_decode(text, pos)


def element_lines(text: str) -> list[int]:
    """Line on which each element of a top-level JSON list starts."""
    return _list_lines(text, text.index("["), _Lines(text))[0]


@dataclass(frozen=True)
class DocumentLines:
    """Where the parts of a JSON document start: each member of a top-level object, and each element of its
    list members (or of the document, when it is a list: key ``""``). Strict errors and lenient skips of the
    whole-document importers (SWE-agent, mini-swe-agent, OpenHands) name these lines."""

    members: dict[str, int]
    lists: dict[str, list[int]]

    def of(self, key: str, index: int | None = None) -> int | None:
        """The line of member ``key``, or of its element ``index``; None when the document has no such place."""
        if index is None:
            return self.members.get(key)
        items = self.lists.get(key, [])
        return items[index] if 0 <= index < len(items) else None


def document_lines(text: str) -> DocumentLines:
    """The :class:`DocumentLines` of a JSON text that parses (one pass of ``raw_decode`` over its members)."""
    lines = _Lines(text)
    pos = _skip(text, 0, _SPACE + "\ufeff")
    if pos < len(text) and text[pos] == "[":
        return DocumentLines({}, {"": _list_lines(text, pos, lines)[0]})
    members: dict[str, int] = {}
    lists: dict[str, list[int]] = {}
    if pos >= len(text) or text[pos] != "{":
        return DocumentLines(members, lists)
    pos += 1
    while True:
        pos = _skip(text, pos, _SPACE + ",")
        if pos >= len(text) or text[pos] != '"':
            return DocumentLines(members, lists)
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos, _SPACE) + 1, _SPACE)  # past the colon
        members[str(key)] = lines.at(pos)
        if pos < len(text) and text[pos] == "[":
            lists[str(key)], pos = _list_lines(text, pos, lines)
        else:
            _, pos = _DECODER.raw_decode(text, pos)


def read_json_with_lines(path: Path, issues: Issues, expected: str) -> tuple[Any, DocumentLines]:
    """The whole file as one JSON value and the lines its members and list elements start on.

    An empty, truncated or unparsable file stops the import in both modes (nothing in it can be trusted);
    invalid UTF-8 and lone surrogates are errors in strict mode and are replaced in lenient mode."""
    text = decode_document(read_bytes(path, expected), issues)
    doc = mend_surrogates(parse_document(text, issues, expected), issues, None, text)
    return doc, document_lines(text)


def read_object_with_list(path: Path, issues: Issues, key: str, expected: str) -> tuple[dict[str, Any], DocumentLines]:
    """The file as one JSON object holding a list under ``key`` (anything else stops the import), and its lines."""
    doc, lines = read_json_with_lines(path, issues, expected)
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        shape = type(doc).__name__ if not isinstance(doc, dict) else f"an object without a {key!r} list"
        raise issues.fatal(1, f"the document is {shape}", expected)
    return doc, lines
