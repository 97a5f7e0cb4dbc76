"""Scripted histories for Strands Agents' conversation managers (``strands.agent.conversation_manager``): plain data,
no import of ``sim`` or ``policies``.

A message is a dict in the conformance cases' neutral form: ``id``, ``role`` (``user``, ``assistant``, ``tool``),
``text``; an assistant message may carry ``calls`` (``[{"id", "name", "args"}]``), a tool message ``results``
(``[{"call_id", "name", "text"}]``: one Strands user message of ``toolResult`` blocks). Each case: ``name``,
``manager`` (``sliding`` or ``summarizing``), ``point`` (``after-invocation``: ``apply_management`` once the invocation
ended; ``overflow``: ``reduce_context`` with a ``ContextWindowOverflowException``), ``input`` and ``settings`` (the
manager's constructor arguments).
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]


def turns(n: int, *, size: int = 100, batch: int = 1) -> list[Msg]:
    """``n`` turns: a question, a call of ``batch`` tools, their results (one tool message), an answer."""
    out: list[Msg] = []
    for k in range(n):
        out.append({"id": f"u{k}", "role": "user", "text": f"Question {k}?"})
        calls = [{"id": f"c{k}_{j}", "name": "read", "args": f'{{"path": "f{k}_{j}"}}'} for j in range(batch)]
        out.append({"id": f"a{k}", "role": "assistant", "text": "Reading.", "calls": calls})
        results = [
            {"call_id": c["id"], "name": "read", "text": (f"r{k}.{j} " + "x" * size)[:size]}
            for j, c in enumerate(calls)
        ]
        out.append({"id": f"t{k}", "role": "tool", "results": results})
        out.append({"id": f"d{k}", "role": "assistant", "text": f"Answer {k}.", "calls": []})
    return out


def loop(steps: int, size: int = 100) -> list[Msg]:
    """One question and ``steps`` calls with their results, no answer yet (a live tool loop)."""
    out: list[Msg] = [{"id": "u0", "role": "user", "text": "Read them all."}]
    for s in range(steps):
        out.append(
            {"id": f"a{s}", "role": "assistant", "text": "", "calls": [{"id": f"c{s}", "name": "read", "args": "{}"}]}
        )
        out.append(
            {"id": f"t{s}", "role": "tool", "results": [{"call_id": f"c{s}", "name": "read", "text": "y" * size}]}
        )
    return out


def case(name: str, manager: str, point: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "manager": manager, "point": point, "input": msgs, "settings": settings}


CASES: list[dict[str, Any]] = [
    case("sliding-under-window", "sliding", "after-invocation", turns(9)),
    case("sliding-over-window", "sliding", "after-invocation", turns(11)),
    case("sliding-window-10", "sliding", "after-invocation", turns(6), window_size=10),
    case("sliding-batches-one-message", "sliding", "after-invocation", turns(11, batch=3)),
    case("sliding-overflow-truncates-first", "sliding", "overflow", turns(4, size=2_000)),
    case("sliding-overflow-short-results-trim", "sliding", "overflow", turns(12, size=100), window_size=40),
    case("sliding-overflow-no-truncation", "sliding", "overflow", turns(12, size=2_000), should_truncate_results=False),
    case("summarizing-overflow", "summarizing", "overflow", turns(8)),
    case("summarizing-ratio-0.5", "summarizing", "overflow", turns(8), summary_ratio=0.5),
    case("summarizing-preserve-all", "summarizing", "overflow", turns(2), preserve_recent_messages=10),
    case("summarizing-split-moves-past-results", "summarizing", "overflow", turns(5), summary_ratio=0.25),
]
