"""Messages of the seeds' conformance goldens (``conformance/<seed>/make_cases.py`` writes them), read back as ours."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from sim.core.conversation import Message, Part


@functools.cache
def load(path: Path) -> dict[str, Any]:
    """A golden file, read once."""
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def part(d: dict[str, Any]) -> Part:
    return Part(
        d["kind"],  # type: ignore[arg-type]
        d.get("text", ""),
        call_id=d.get("call_id"),
        name=d.get("name"),
        args=d.get("args"),
        is_error=d.get("is_error", False),
        ref=d.get("ref"),
        original_bytes=d.get("original_bytes"),
        is_json=d.get("is_json", False),
    )


def message(d: dict[str, Any]) -> Message:
    parts = tuple(part(p) for p in d["parts"])
    return Message(d["id"], d["role"], parts, pending=d.get("pending", False), resolves=tuple(d.get("resolves", ())))


def neutral_part(p: Part) -> dict[str, Any]:
    """A part as the goldens hold it (what :func:`part` reads back): its defaults left out but the text."""
    out: dict[str, Any] = {"kind": p.kind, "text": p.text}
    for key in ("call_id", "name", "args", "ref", "original_bytes"):
        if getattr(p, key) is not None:
            out[key] = getattr(p, key)
    if p.is_error:
        out["is_error"] = True
    if p.is_json:
        out["is_json"] = True
    return out


def neutral(m: Message) -> dict[str, Any]:
    """A message as the goldens hold it (what :func:`message` reads back)."""
    out: dict[str, Any] = {"id": m.id, "role": m.role, "parts": [neutral_part(p) for p in m.parts]}
    if m.pending:
        out["pending"] = True
    if m.resolves:
        out["resolves"] = list(m.resolves)
    return out
