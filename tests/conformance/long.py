"""The long conversations of ``conformance/long/`` as the tests replay them: each generator ran its package on them
model call by model call, and the golden file's ``long`` section holds what the package decided at each call; the
tests replay our policy over the same calls and compare decision by decision (:func:`agreement`).

The conversations come from ``conformance/long/conversations.json`` through the generators' own loader
(``conformance/long/conversations.py``, loaded here by path: it is plain Python, not a package of the project).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from sim.core.conversation import Conversation, Part
from tests.builders import Draft, asst, call, conv, sys, user

LONG = Path(__file__).parents[2] / "conformance" / "long"


@cache
def loader() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_long_conversations", LONG / "conversations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def conversations(claude_ids: bool = False) -> list[dict[str, Any]]:
    """Every long conversation (neutral form); with ``claude_ids``, the 30-character-id variants too, after each."""
    out = []
    for c in loader().load():
        out.append(c)
        if claude_ids:
            out.append(loader().claude_ids(c))
    return out


def by_name(name: str) -> dict[str, Any]:
    return next(c for c in conversations(claude_ids=True) if c["name"] == name)


def to_conversation(c: dict[str, Any], *, system: bool = True, one_result_per_message: bool = False) -> Conversation:
    """A long conversation (or a hand-made case's messages in the same form, a reply's ``thinking`` included) as the
    log replays it: the system prompt first (unless ``system`` is False, as for
    frameworks that keep it apart), then every message; ``one_result_per_message`` splits a tool message holding
    several results into one per result, ids ``<id>.<j>`` (as the generators flatten them)."""
    drafts: list[Draft] = [sys(c["system"], id="system")] if system else []
    for m in c["messages"]:
        if m["role"] == "user":
            drafts.append(user(m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            calls = [call(x["id"], x["name"], x["args"]) for x in m["calls"]]
            drafts.append(asst(m["text"], calls, thinking=m.get("thinking"), id=m["id"]))
        else:
            results = m["results"]
            if one_result_per_message and len(results) > 1:
                for j, r in enumerate(results):
                    drafts.append(Draft("tool", (part(r),), f"{m['id']}.{j}"))
            else:
                drafts.append(Draft("tool", tuple(part(r) for r in results), m["id"]))
    return conv(*drafts)


def part(r: dict[str, Any]) -> Part:
    return Part("tool_result", r["text"], call_id=r["call_id"], name=r["name"])


def prefixes(c: Conversation) -> Iterator[tuple[int, Conversation]]:
    """``(i, the conversation before message i)`` for every assistant message ``i`` (one model call each)."""
    for i, m in enumerate(c.messages):
        if m.role == "assistant":
            yield i, Conversation(c.id, c.messages[:i])


def agreement(
    ours: Sequence[Any], theirs: Sequence[Any], same: Callable[[Any, Any], bool] = lambda a, b: a == b
) -> float:
    """The share of decisions (aligned by model call) on which ``ours`` and ``theirs`` agree."""
    assert len(ours) == len(theirs), f"{len(ours)} decisions against {len(theirs)}"
    return sum(1 for a, b in zip(ours, theirs, strict=True) if same(a, b)) / len(theirs)
