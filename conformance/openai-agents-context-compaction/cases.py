"""Scripted session histories for ``LocalCompactionSession`` (``openai-agents-context-compaction``): plain data, no
import of ``sim`` or ``policies``.

A message is a dict in the conformance cases' neutral form: ``id``, ``role`` (``user``, ``assistant``, ``tool``),
``text``; an assistant message may carry ``calls`` (``[{"id", "name", "args"}]``), a tool message ``results``
(``[{"call_id", "name", "text"}]``). Each case: ``name``, ``input`` (the session's history before a new user
message) and ``settings`` (``window_size``, ``token_budget``).
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]


def turns(n: int, *, size: int = 200, batch: int = 1, text: bool = True) -> list[Msg]:
    """``n`` turns: a question, an assistant message calling ``batch`` tools (with a sentence unless ``text`` is off),
    one tool message per result of ``size`` characters, and an answer."""
    out: list[Msg] = []
    for k in range(n):
        out.append({"id": f"u{k}", "role": "user", "text": f"Question {k}: what is in file {k}?"})
        calls = [{"id": f"c{k}_{j}", "name": "read", "args": f'{{"path": "f{k}_{j}.py"}}'} for j in range(batch)]
        out.append({"id": f"a{k}", "role": "assistant", "text": "Reading." if text else "", "calls": calls})
        for j, c in enumerate(calls):
            body = (f"f{k}_{j} " + "x" * size)[:size]
            out.append(
                {"id": f"t{k}_{j}", "role": "tool", "results": [{"call_id": c["id"], "name": "read", "text": body}]}
            )
        out.append({"id": f"d{k}", "role": "assistant", "text": f"File {k} holds a parser.", "calls": []})
    return out


def case(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "input": msgs, "settings": {"window_size": None, "token_budget": None, **settings}}


CASES: list[dict[str, Any]] = [
    case("window-fits", turns(2), window_size=50),
    case("window-50-of-60", turns(12), window_size=50),
    case("window-odd-slot-skips-a-pair", turns(4), window_size=6),
    case("window-parallel-batch", turns(6, batch=3), window_size=20),
    case("window-calls-without-text", turns(8, text=False), window_size=15),
    case("window-1-soft-limit", turns(3), window_size=1),
    case("budget-only", turns(10, size=800), token_budget=1_000),
    case("budget-soft-limit-big-pair", turns(2, size=40_000), token_budget=100),
    case("window-and-budget", turns(10, size=400), window_size=30, token_budget=800),
]
