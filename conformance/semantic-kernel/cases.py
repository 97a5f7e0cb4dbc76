"""Scripted histories for Semantic Kernel's ``ChatHistoryTruncationReducer``: plain data, no import of ``sim`` or
``policies``.

A message is a dict: ``id``, ``role`` (``system``, ``user``, ``assistant``, ``tool``), ``text``; an assistant
message may carry ``calls`` (``[{"id", "name", "args"}]``: ``FunctionCallContent`` items after its text), a tool
message ``call_id`` and ``name`` (one ``FunctionResultContent``). The history starts with the system message, as
an SK ``ChatHistory`` holds it.

Each case: ``name``, ``kind`` (``truncation`` or ``summarization``), ``input`` (the messages) and ``settings``
(the reducer's parameters). ``reduce()`` is called once on the whole history.
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

SYSTEM = "You are a coding agent."
TASK = "Fix the failing test in tests/test_app.py; do not touch the public API."


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or []}


def tool_loop(first: int, steps: int, *, batch: int = 1) -> list[Msg]:
    """``steps`` rounds of an assistant message calling ``batch`` tools and one tool message per call."""
    msgs: list[Msg] = []
    for s in range(first, first + steps):
        calls = [{"id": f"c{s}_{j}", "name": "grep", "args": f'{{"pattern": "needle {s}.{j}"}}'} for j in range(batch)]
        msgs.append(assistant(f"Step {s}: looking.", f"a{s}", calls))
        for j, c in enumerate(calls):
            msgs.append({"id": f"t{s}_{j}", "role": "tool", "call_id": c["id"], "name": "grep", "text": f"match {s}"})
    return msgs


def session(turns: int, steps: int = 0, *, system: bool = True, batch: int = 1) -> list[Msg]:
    """The system message, then ``turns`` user turns, each a question, ``steps`` tool rounds and an answer."""
    msgs: list[Msg] = [{"id": "sys", "role": "system", "text": SYSTEM}] if system else []
    for k in range(turns):
        msgs.append(user(f"Question {k}: what does module {k} do?" if k else TASK, f"u{k}"))
        msgs += tool_loop(10 * k, steps, batch=batch)
        msgs.append(assistant(f"Answer {k}: module {k} " + "reads the settings and checks every key. " * 4, f"r{k}"))
    return msgs


def case(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": "truncation", "input": msgs, "settings": settings}


def summ(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": "summarization", "input": msgs, "settings": settings}


def with_summary(msgs: list[Msg]) -> list[Msg]:
    """The history after an earlier reduction: the system message, then the summary it left (marked)."""
    text = "Earlier: the user asked about modules 0-2."
    summary = {"id": "summary", "role": "assistant", "text": text, "summary": True}
    return [msgs[0], summary, *msgs[1:]]


CASES: list[dict[str, Any]] = [
    case("trunc-at-target", session(5), target_count=11),  # 11 messages: not over
    case("trunc-chat-one-over", session(5), target_count=10),
    case("trunc-chat-target-4", session(6), target_count=4),
    case("trunc-threshold-not-reached", session(6), target_count=8, threshold_count=5),
    case("trunc-threshold-prefers-a-user-message", session(6), target_count=6, threshold_count=2),
    case("trunc-threshold-window-without-user", session(6), target_count=5, threshold_count=0),
    case("trunc-tools-cut-on-a-result-moves-back", session(4, 2), target_count=6),
    case("trunc-tools-cut-on-a-call-moves-back", session(4, 2), target_count=7),
    case("trunc-tools-threshold", session(4, 2), target_count=6, threshold_count=3),
    case("trunc-parallel-batch", session(3, 2, batch=2), target_count=6),
    case("trunc-long-tool-loop-keeps-it-whole", session(1, 8), target_count=6),
    case("trunc-target-1-keeps-the-system-message-only", session(3, 1), target_count=1),
    case("trunc-no-system-message", session(5, system=False), target_count=4),
    case("trunc-no-system-tools", session(4, 2, system=False), target_count=5),
    # -- ChatHistorySummarizationReducer (an offline stand-in service writes the summary) ----------------------
    summ("sum-at-target", session(5), target_count=11),
    summ("sum-chat", session(6), target_count=4),
    summ("sum-threshold-prefers-a-user-message", session(6), target_count=6, threshold_count=2),
    summ("sum-threshold-not-reached", session(6), target_count=8, threshold_count=5),
    summ("sum-tools-left-out", session(4, 2), target_count=7),
    summ("sum-tools-included", session(4, 2), target_count=7, include_function_content_in_summary=True),
    summ("sum-previous-summary-folded-in", with_summary(session(6)), target_count=5),
    summ(
        "sum-previous-summary-single-false",
        with_summary(session(6)),
        target_count=5,
        use_single_summary=False,
    ),
]
