"""Run ``LocalCompactionSession``'s own compaction on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/openai-agents-context-compaction`` (``requirements.txt``), as ``make conformance`` runs
it: that environment's ``bin/python`` with this file.

Each case's history becomes Responses API items as the Agents SDK stores them (a user message; an assistant message
item for an assistant's text; a ``function_call`` per call; a ``function_call_output`` per result), each item tagged
with the message it came from, and ``get_items()`` runs on a session holding them (``window_size``, ``token_budget``,
the default ``DefaultTokenCounter``). Recorded: which items came back (by index) and which messages (any of their
items). Writes ``tests/golden/conformance/openai-agents-context-compaction.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from openai_agents_context_compaction import LocalCompactionSession

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "openai-agents-context-compaction.json"


def to_items(msgs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    items: list[dict[str, Any]] = []
    owner: list[str] = []
    for m in msgs:
        if m["role"] == "user":
            items.append({"role": "user", "content": m["text"]})
            owner.append(m["id"])
        elif m["role"] == "assistant":
            if m["text"] or not m["calls"]:
                items.append(
                    {"role": "assistant", "type": "message", "content": [{"type": "output_text", "text": m["text"]}]}
                )
                owner.append(m["id"])
            for c in m["calls"]:
                items.append({"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["args"]})
                owner.append(m["id"])
        else:
            for r in m["results"]:
                items.append({"type": "function_call_output", "call_id": r["call_id"], "output": r["text"]})
                owner.append(m["id"])
    return items, owner


class Memory:
    """The smallest underlying session: the items, in order."""

    session_id = "conformance"

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        return list(self.items)


async def run(case: dict[str, Any]) -> dict[str, Any]:
    items, owner = to_items(case["input"])
    session = LocalCompactionSession(Memory(items), **case["settings"])  # type: ignore[arg-type]
    kept = await session.get_items()
    ids = {id(x): k for k, x in enumerate(items)}
    indices = [ids[id(x)] for x in kept]
    return {"items": indices, "messages": list(dict.fromkeys(owner[k] for k in indices))}


def long_runs() -> list[dict[str, Any]]:
    """Each long conversation: at every user message after the first (a new run), ``get_items`` on the session so far,
    50 items, as the Runner calls it; the messages it returned."""
    out = []
    for conv in load():
        msgs = conv["messages"]
        decisions = []
        for k, m in enumerate(msgs):
            if m["role"] == "user" and k > 0:
                got = asyncio.run(run({"input": msgs[:k], "settings": {"window_size": 50, "token_budget": None}}))
                decisions.append({"at": m["id"], "messages": " ".join(got["messages"])})
        out.append({"conversation": conv["name"], "decisions": decisions})
    return out


def main() -> None:
    out = [{**case, "expected": asyncio.run(run(case))} for case in CASES]
    golden = {
        "package": "openai-agents-context-compaction",
        "version": version("openai-agents-context-compaction"),
        "cases": out,
        "long": long_runs(),
    }
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN}")


if __name__ == "__main__":
    main()
