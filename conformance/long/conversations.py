"""The long conversations every conformance generator replays, read from ``conversations.json`` (plain Python: the
generators run in the real packages' environments, without ``sim``).

``load()`` gives each conversation as ``{"name", "scenario", "seed", "params", "system", "messages"}``, the messages in
the conformance cases' neutral form (see ``export.py``, which writes the file from the bundled scenarios).
``claude_ids(conv)`` is the same conversation with every call id rewritten as Claude Code writes them (``toolu_01``
and 22 more characters: 30), so a count that depends on id lengths is compared at the length real sessions have.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def load() -> list[dict[str, Any]]:
    return json.loads((HERE / "conversations.json").read_text())["conversations"]  # type: ignore[no-any-return]


def claude_id(call_id: str) -> str:
    """A 30-character ``toolu_01…`` id, a stable function of ``call_id``."""
    digest = hashlib.sha256(call_id.encode()).digest()
    return "toolu_01" + "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:22])


def claude_ids(conv: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(conv)
    out["name"] = conv["name"] + "-claude-ids"
    for m in out["messages"]:
        for c in m.get("calls", ()):
            c["id"] = claude_id(c["id"])
        for r in m.get("results", ()):
            r["call_id"] = claude_id(r["call_id"])
    return out


def model_calls(msgs: list[dict[str, Any]]) -> list[int]:
    """The indices of the assistant messages: each is the reply to one model call, made on the messages before it."""
    return [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
