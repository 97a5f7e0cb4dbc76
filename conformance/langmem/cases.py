"""Scripted histories for LangMem's ``summarize_messages`` (``langmem.short_term``): plain data, no import of ``sim``
or ``policies``.

A message is a dict: ``id``, ``role`` (``system``, ``user``, ``assistant``, ``tool``), ``text``; an assistant message
may carry ``calls`` (``[{"id", "name", "args"}]``, ``args`` a JSON object as ``json.dumps`` writes it), a tool message
``results`` (``[{"call_id", "name", "text"}]``: one ``ToolMessage`` per result). A ``system`` message comes first when
the case has one (LangMem leaves it out of what it summarises).

Each case: ``name``, ``input`` (the graph's messages), ``settings`` (``max_tokens``, and ``max_tokens_before_summary``
and ``max_summary_tokens`` when given) and ``summarised_through`` (the id of the last message an earlier call
summarised, with ``summary`` its text: the ``RunningSummary`` passed in), or None. ``summarize_messages`` is called
once, as ``SummarizationNode`` calls it before a model call.
"""

from __future__ import annotations

import json
from typing import Any

Msg = dict[str, Any]

SYSTEM = {"id": "system", "role": "system", "text": "You are a coding agent. Keep answers short."}
SUMMARY = "The user is fixing tests/test_app.py; the fixture was stale and has been rewritten."


def output(step: int, lines: int, width: int = 40) -> str:
    return "\n".join(f"step {step} line {i:03d} ".ljust(width, ".") for i in range(lines))


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or []}


def call(cid: str, pattern: str) -> Msg:
    return {"id": cid, "name": "grep", "args": json.dumps({"pattern": pattern})}


def chat(turns: int, first: int = 0) -> list[Msg]:
    """``turns`` questions each answered in text (about 30 and 60 tokens)."""
    msgs: list[Msg] = []
    for k in range(first, first + turns):
        msgs.append(user(f"Question {k}: what does module {k} do, and where is it used?", f"u{k}"))
        answer = f"Module {k} parses the configuration: " + "it reads the file, checks each key, reports gaps. " * 4
        msgs.append(assistant(answer, f"a{k}"))
    return msgs


def run(tag: str, steps: int, lines: int = 6, batch: int = 1) -> list[Msg]:
    """The user's request, ``steps`` rounds of calls (``batch`` at a time, no text) and results, a final reply."""
    msgs = [user(f"Fix the failing test ({tag}).", f"u{tag}")]
    for s in range(steps):
        calls = [call(f"c{tag}{s}_{j}", f"needle {s}.{j}") for j in range(batch)]
        msgs.append(assistant("", f"a{tag}{s}", calls))
        for j, c in enumerate(calls):  # one tool message per result, as LangChain holds them
            results = [{"call_id": c["id"], "name": "grep", "text": output(s, lines + j)}]
            msgs.append({"id": f"t{tag}{s}_{j}", "role": "tool", "results": results})
    msgs.append(assistant(f"Done with {tag}.", f"f{tag}"))
    return msgs


def tokens(msgs: list[Msg]) -> int:
    """The generator's count of ``msgs`` (a quarter of each message's characters, rounded up, plus 3)."""
    total = 0
    for m in msgs:
        if m["role"] == "tool":
            texts = [r["text"] for r in m["results"]]
        else:
            texts = [m["text"] + "".join(c["name"] + c["args"] for c in m.get("calls", []))]
        total += sum(-(-len(t) // 4) + 3 for t in texts)
    return total


def case(name: str, msgs: list[Msg], through: str | None = None, **settings: Any) -> dict[str, Any]:
    return {
        "name": name,
        "input": msgs,
        "settings": settings,
        "summarised_through": through,
        "summary": SUMMARY if through else None,
    }


CHAT = [SYSTEM, *chat(6), user("And module 9?", "next")]
RUNS = [SYSTEM, *run("A", 3), *run("B", 3), user("Now the CLI.", "next")]

CASES: list[dict[str, Any]] = [
    # -- when: the unsummarised tokens reach the threshold and the rest fits -----------------------------------
    case("below-the-threshold", CHAT, max_tokens=2_000),
    case("threshold-reached-rest-fits", CHAT, max_tokens=2_000, max_tokens_before_summary=200),
    case("below-the-default-threshold", CHAT, max_tokens=560, max_summary_tokens=100),
    case("rest-fits-only-later", CHAT, max_tokens=500, max_tokens_before_summary=100, max_summary_tokens=100),
    case(
        "last-message-over-the-budget",
        [SYSTEM, *chat(3), user("x " * 800, "big")],
        max_tokens=400,
        max_tokens_before_summary=50,
    ),
    case("default-threshold-is-max-tokens", CHAT, max_tokens=450, max_summary_tokens=50),
    case("without-a-system-message", CHAT[1:], max_tokens=600, max_tokens_before_summary=150, max_summary_tokens=100),
    case("system-message-counts-against-the-rest", CHAT, max_tokens=380, max_tokens_before_summary=150),
    # -- tool calls ---------------------------------------------------------------------------------------------
    case("runs-cut-after-a-result", RUNS, max_tokens=1_000, max_tokens_before_summary=120, max_summary_tokens=100),
    case("runs-cut-on-a-call-takes-its-result", RUNS, max_tokens=1_000, max_tokens_before_summary=tokens(RUNS[1:7])),
    case("runs-bigger-threshold", RUNS, max_tokens=1_000, max_tokens_before_summary=300, max_summary_tokens=100),
    case("runs-small-budget", RUNS, max_tokens=400, max_tokens_before_summary=300, max_summary_tokens=50),
    case(
        "batch-cut-inside",
        [SYSTEM, *run("A", 2, batch=3), user("Now the CLI.", "next")],
        max_tokens=1_000,
        max_tokens_before_summary=95,
        max_summary_tokens=100,
    ),
    # -- a running summary ------------------------------------------------------------------------------------
    case("summary-nothing-new", CHAT, "a1", max_tokens=2_000),
    case("summary-extended", CHAT, "a1", max_tokens=2_000, max_tokens_before_summary=150),
    case("summary-extended-runs", RUNS, "fA", max_tokens=1_000, max_tokens_before_summary=100, max_summary_tokens=100),
]
