"""The project's own conversation format: JSONL, one header line per conversation, then its records.

Other importers translate a recording once; saving the result in this format makes it cheap to load
again, easy to diff, and a fixed point for golden tests. The writer is deterministic (sorted keys,
compact separators, UTF-8 kept as is, one record per line), so equal conversations give equal bytes,
and ``read(write(x)) == x``. ``datasets/FORMAT-native.md`` documents the format for people.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.conversation import FACT_KINDS, PART_KINDS, ROLES, Conversation, Fact, Part, Tool, Usage
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, Skipped, sniffer
from sim.formats._common import BadRecord, Draft, Issues, check, get, pair_calls, read_jsonl

FORMAT_NAME = "csim-conversation"
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
VERSION = 1

_EXPECTED = 'a csim-conversation JSONL file (first line {"format": "csim-conversation", "version": 1, ...})'
_HEADER_KEYS = frozenset({"format", "version", "id", "tools", "meta"})
_MESSAGE_KEYS = frozenset({"type", "id", "role", "parts", "pending", "resolves", "usage", "meta"})
_FACT_KEYS = frozenset({"type", "id", "kind", "text", "source", "needed_at", "mined", "carriers"})
_PART_KEYS = frozenset({"kind", "text", "call_id", "name", "args", "is_error", "ref", "original_bytes", "is_json"})
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_TOOL_KEYS = frozenset({"name", "description", "parameters"})


# --- writing ---------------------------------------------------------------------------------


def _line(obj: Mapping[str, Any]) -> str:
    """One record as a canonical JSON line: the same object always gives the same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain) + "\n"


def _plain(value: Any) -> Any:
    """Make meta values JSON-native (read-only mappings, sets); anything else is a caller's bug."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"meta value {value!r} of type {type(value).__name__} cannot be written as JSON")


def _part_record(p: Part) -> dict[str, Any]:
    """A part with its default fields left out, so files stay small and readable."""
    rec: dict[str, Any] = {"kind": p.kind}
    if p.text:
        rec["text"] = p.text
    for key in ("call_id", "name", "args", "ref", "original_bytes"):
        value = getattr(p, key)
        if value is not None:
            rec[key] = value
    if p.is_error:
        rec["is_error"] = True
    if p.is_json:
        rec["is_json"] = True
    return rec


def _usage_record(u: Usage) -> dict[str, int]:
    return {key: getattr(u, key) for key in _USAGE_KEYS}


def dumps(conversation: Conversation) -> str:
    """One conversation in the native format: its header line, its messages, then its facts."""
    c = conversation
    header = {
        "format": FORMAT_NAME,
        "version": VERSION,
        "id": c.id,
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in c.tools],
        "meta": dict(c.meta),
    }
    lines = [_line(header)]
    for m in c.messages:
        rec: dict[str, Any] = {
            "type": "message",
            "id": m.id,
            "role": m.role,
            "parts": [_part_record(p) for p in m.parts],
            "pending": m.pending,
            "resolves": list(m.resolves),
            "meta": dict(m.meta),
        }
        if m.usage is not None:
            rec["usage"] = _usage_record(m.usage)
        lines.append(_line(rec))
    for f in c.facts:
        rec = {"type": "fact", "id": f.id, "kind": f.kind, "text": f.text, "source": f.source}
        rec["needed_at"] = list(f.needed_at)
        if f.mined:  # written only when set, so files written before these keys stay the same
            rec["mined"] = True
        if f.carriers:
            rec["carriers"] = list(f.carriers)
        lines.append(_line(rec))
    return "".join(lines)


def write(conversations: Conversation | Iterable[Conversation], path: str | Path) -> Path:
    """Write one or more conversations to ``path`` (UTF-8, ``\\n`` line ends); returns the path."""
    if isinstance(conversations, Conversation):
        conversations = [conversations]
    target = Path(path)
    chunks = []
    for c in conversations:
        try:
            chunks.append(dumps(c).encode("utf-8"))
        except UnicodeEncodeError as exc:  # a lone surrogate: importers refuse or mend them, callers may not
            raise InvalidConfig(
                f"conversation {c.id!r} cannot be written to {target} as UTF-8: {exc.reason} "
                f"({exc.object[exc.start : exc.end]!a}); replace it with U+FFFD first"
            ) from None
    # Written beside the target and renamed: an interrupted or failed write never leaves a partial file.
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(b"".join(chunks))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


# --- reading ---------------------------------------------------------------------------------


def _no_extra(obj: Mapping[str, Any], allowed: frozenset[str], what: str) -> None:
    """Unknown keys are refused: in our own format they are typos or a newer version."""
    extra = sorted(set(obj) - allowed)
    if extra:
        raise BadRecord(f"{what} has unknown keys {extra} (allowed: {', '.join(sorted(allowed))})")


def _part(obj: Any, what: str) -> Part:
    check(obj, dict, what)
    _no_extra(obj, _PART_KEYS, what)
    kind = get(obj, "kind", str, what)
    if kind not in PART_KINDS:
        raise BadRecord(f"{what} kind {kind!r} is not one of {', '.join(PART_KINDS)}")
    return Part(
        kind=kind,
        text=get(obj, "text", str, what, ""),
        call_id=get(obj, "call_id", str, what, None),
        name=get(obj, "name", str, what, None),
        args=get(obj, "args", str, what, None),
        is_error=get(obj, "is_error", bool, what, False),
        ref=get(obj, "ref", str, what, None),
        original_bytes=get(obj, "original_bytes", int, what, None),
        is_json=get(obj, "is_json", bool, what, False),
    )


def _usage(obj: Any) -> Usage:
    check(obj, dict, "usage")
    _no_extra(obj, frozenset(_USAGE_KEYS), "usage")
    return Usage(**{key: get(obj, key, int, "usage", 0) for key in _USAGE_KEYS})


def _message(obj: Mapping[str, Any], line: int) -> Draft:
    _no_extra(obj, _MESSAGE_KEYS, "message record")
    mid = get(obj, "id", str, "message record")
    what = f"message {mid!r}"
    role = get(obj, "role", str, what)
    if role not in ROLES:
        raise BadRecord(f"{what} role {role!r} is not one of {', '.join(ROLES)}")
    parts = [_part(p, f"{what} part {i}") for i, p in enumerate(get(obj, "parts", list, what))]
    if not parts:
        raise BadRecord(f"{what} has no parts (a message needs at least one)")
    resolves = tuple(check(r, str, f"{what} resolves entry") for r in get(obj, "resolves", list, what, []))
    usage = _usage(obj["usage"]) if obj.get("usage") is not None else None
    meta = dict(get(obj, "meta", dict, what, {}))
    draft = Draft(
        mid,
        role,
        parts,
        line,
        f"{what} (line {line})",
        usage,
        meta,
        pending=get(obj, "pending", bool, what, False),
        resolves=resolves,
    )
    draft.build()  # checks the role/part rules now, so the error points at this line
    return draft


def _fact(obj: Mapping[str, Any]) -> Fact:
    _no_extra(obj, _FACT_KEYS, "fact record")
    fid = get(obj, "id", str, "fact record")
    what = f"fact {fid!r}"
    kind = get(obj, "kind", str, what)
    if kind not in FACT_KINDS:
        raise BadRecord(f"{what} kind {kind!r} is not one of {', '.join(FACT_KINDS)}")
    needed = tuple(check(n, str, f"{what} needed_at entry") for n in get(obj, "needed_at", list, what, []))
    mined = get(obj, "mined", bool, what, False)
    carriers = tuple(check(n, str, f"{what} carriers entry") for n in get(obj, "carriers", list, what, []))
    text, source = get(obj, "text", str, what), get(obj, "source", str, what)
    return Fact(fid, kind, text, source, needed, mined, carriers)


def _tool(obj: Any, what: str) -> Tool:
    check(obj, dict, what)
    _no_extra(obj, _TOOL_KEYS, what)
    return Tool(
        get(obj, "name", str, what),
        get(obj, "description", str, what, ""),
        get(obj, "parameters", str, what, "{}"),
    )


@dataclass
class _Open:
    """The conversation being read: its header and the records that followed it so far."""

    id: str
    line: int
    tools: tuple[Tool, ...]
    meta: dict[str, Any]
    drafts: list[Draft] = field(default_factory=list)
    facts: list[tuple[int, Fact]] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)


def _header(obj: Mapping[str, Any], line: int) -> _Open:
    fmt = obj.get("format")
    if fmt != FORMAT_NAME:
        raise BadRecord(f"header format is {fmt!r}, expected {FORMAT_NAME!r}")
    version = obj.get("version")
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise BadRecord(f"unsupported {FORMAT_NAME} version {version!r}; this csim reads version {supported}")
    _no_extra(obj, _HEADER_KEYS, "header")
    cid = get(obj, "id", str, "header")
    tools = tuple(_tool(t, f"tool {i}") for i, t in enumerate(get(obj, "tools", list, "header", [])))
    return _Open(cid, line, tools, dict(get(obj, "meta", dict, "header", {})))


def _finish(conv: _Open, issues: Issues) -> Conversation | None:
    """Check pairing and facts of a conversation read in full, then build it (None when dropped)."""
    drafts = pair_calls(conv.drafts, issues, "report")
    ids = {d.id for d in drafts}
    facts: list[Fact] = []
    for line, f in conv.facts:
        missing = [r for r in (f.source, *f.needed_at) if r not in ids]
        if missing:
            issues.problem(line, f"fact {f.id!r} refers to messages {missing} that this conversation lacks")
            continue
        facts.append(f)
    try:
        return Conversation(conv.id, tuple(d.build() for d in drafts), tuple(facts), conv.tools, conv.meta)
    except InvalidConfig as exc:
        issues.problem(conv.line, str(exc))
        return None


@FORMATS.register("native", "csim's own conversation JSONL (header line, then message and fact records)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every conversation in a native JSONL file (several may follow one another)."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    current: _Open | None = None
    first = True
    for line, obj in read_jsonl(path, issues, _EXPECTED):
        if first and not (isinstance(obj, dict) and "format" in obj):
            raise issues.fatal(line, "the first record is not a csim-conversation header", f"expected {_EXPECTED}")
        first = False
        if isinstance(obj, dict) and "format" in obj:
            if current is not None:
                _append(result, _finish(current, issues))
            current = None
            with issues.record(line, "header"):
                current = _header(obj, line)
            continue
        if current is None:
            issues.skipped.append(Skipped(issues.path, line, "record of a conversation whose header was skipped"))
            continue
        with issues.record(line, "record"):
            _add(current, obj, line)
    if current is not None:
        _append(result, _finish(current, issues))
    return result


def _append(result: ImportResult, conv: Conversation | None) -> None:
    if conv is not None:
        result.conversations.append(conv)


def _add(conv: _Open, obj: Any, line: int) -> None:
    """Add one message or fact record to the conversation being read."""
    check(obj, dict, "record")
    kind = get(obj, "type", str, "record")
    if kind == "message":
        draft = _message(obj, line)
        if draft.id in conv.ids:
            raise BadRecord(f"message id {draft.id!r} appears twice in conversation {conv.id!r}")
        conv.ids.add(draft.id)
        conv.drafts.append(draft)
    elif kind == "fact":
        conv.facts.append((line, _fact(obj)))
    else:
        raise BadRecord(f"record type {kind!r} is neither 'message' nor 'fact'")


@sniffer("native")
def sniff(path: Path, head: bytes) -> bool:
    """The first line is a csim-conversation header."""
    first_line = head.lstrip().split(b"\n", 1)[0].replace(b" ", b"")
    return first_line.startswith(b"{") and b'"format":"csim-conversation"' in first_line
