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

from sim.formats._common import (
    Issues,
    clip,
    decode_document,
    element_lines,
    mend_surrogates,
    read_bytes,
    read_jsonl,
)


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
