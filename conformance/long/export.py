"""Write the long conversations every conformance generator replays (``conversations.json`` beside this file).

Runs in the project's environment (it imports ``sim``): ``python conformance/long/export.py``. The generators, which
run in the real packages' environments and cannot import ``sim``, read the file through :mod:`conversations` (plain
Python). ``tests/conformance/test_long_conversations.py`` checks that the file is what the scenarios generate now, so
it never goes stale.

Each conversation is a bundled scenario at a length past the triggers the generators set (their settings scale with
each conversation's size), in the neutral form of the conformance cases: ``{"id", "role", "text"}``, an assistant's
``calls`` (``id``, ``name``, ``args``), a tool message's ``results`` (``call_id``, ``name``, ``text``); the system
prompt apart. What the neutral form has no place for is left out, the same for both sides: thinking, change and revert
markers, slash commands (their user messages are dropped) and pending approvals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation
from sim.scenarios import generate

OUT = Path(__file__).resolve().parent / "conversations.json"
#: (name, scenario, seed, parameters): long enough to pass every generator's triggers, small enough to commit.
SCENARIOS: tuple[tuple[str, str, int, dict[str, Any]], ...] = (
    ("coding-0", "coding-agent", 0, {}),
    ("coding-1-parallel", "coding-agent", 1, {"parallel_prob": 0.6, "huge_prob": 0.0}),
    ("research-0", "research-agent", 0, {"turns": 40, "result_tokens_median": 500, "huge_prob": 0.0}),
    ("support-0", "support-chat", 0, {"turns": 200}),
)


def neutral(c: Conversation) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the messages in the conformance cases' form."""
    system = ""
    out: list[dict[str, Any]] = []
    for m in c.messages:
        if m.role == "system":
            system = m.text
            continue
        if m.role == "user":
            if m.command is not None:
                continue
            out.append({"id": m.id, "role": "user", "text": "\n".join(p.text for p in m.parts if p.kind == "text")})
        elif m.role == "assistant":
            text = "\n".join(p.text for p in m.parts if p.kind == "text")
            calls = [{"id": p.call_id, "name": p.name, "args": p.args or "{}"} for p in m.calls]
            if not text and not calls:
                continue
            out.append({"id": m.id, "role": "assistant", "text": text, "calls": calls})
        else:
            results = [{"call_id": p.call_id, "name": p.name, "text": p.text} for p in m.results]
            out.append({"id": m.id, "role": "tool", "results": results})
    return system, out


def build() -> dict[str, Any]:
    convs = []
    for name, scenario, seed, params in SCENARIOS:
        system, msgs = neutral(generate(scenario, seed, **params))
        entry = {"name": name, "scenario": scenario, "seed": seed, "params": params}
        convs.append({**entry, "system": system, "messages": msgs})
    return {"conversations": convs}


def text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=0, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    OUT.write_text(text(build()))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
