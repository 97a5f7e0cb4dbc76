"""Scripted inputs for LangChain's ``ContextEditingMiddleware`` (``ClearToolUsesEdit``) and
``SummarizationMiddleware``: plain data, no import of ``sim`` or ``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``), ``text``; an assistant message may
carry ``calls`` (``[{"id", "name", "args"}]``), a tool message ``call_id`` and ``name``. A message with
``"summary": True`` is the HumanMessage an earlier summary left at the front of the state. There is no system
message: ``create_agent`` keeps the system prompt apart from the state's messages, which is what both
middlewares see.

Each case: ``name``, ``kind`` (``clear`` or ``summarize``), ``input`` (the messages) and ``settings`` (the
middleware's parameters; ``max_input_tokens`` is the model profile's, for ``fraction`` sizes). The real function
is called once, on the whole list, as before a model call.
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

TASK = "Fix the failing test in tests/test_app.py; do not touch the public API."
SUMMARY_TEXT = "Here is a summary of the conversation to date:\n\nThe user asked to fix tests/test_app.py."


def output(step: int, lines: int, width: int = 40) -> str:
    """A tool output of ``lines`` lines, each ``width`` characters, that names its step."""
    return "\n".join(f"step {step} line {i:03d} ".ljust(width, ".") for i in range(lines))


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or []}


def call(id: str, name: str, args: dict[str, Any]) -> Msg:
    return {"id": id, "name": name, "args": args}


def tool(call_id: str, name: str, text: str, id: str) -> Msg:
    return {"id": id, "role": "tool", "call_id": call_id, "name": name, "text": text}


def agent_run(
    steps: int,
    lines: int = 30,
    *,
    names: tuple[str, ...] = ("grep",),
    batch: int = 1,
    users_at: tuple[int, ...] = (),
    final: bool = True,
) -> list[Msg]:
    """The task, then ``steps`` rounds of one assistant message calling ``batch`` tools (names in turn) and one
    ToolMessage per call; a user message before each step in ``users_at``; a closing answer."""
    msgs = [user(TASK, "u0")]
    k = 0
    for s in range(steps):
        if s in users_at:
            msgs.append(user(f"Also check step {s}'s output for warnings.", f"u{s}"))
        calls = []
        for j in range(batch):
            name = names[k % len(names)]
            k += 1
            calls.append(call(f"c{s}_{j}", name, {"pattern": f"needle {s}.{j}", "path": "src/"}))
        msgs.append(assistant(f"Step {s}: looking for more context.", f"a{s}", calls))
        for j, c in enumerate(calls):
            msgs.append(tool(c["id"], c["name"], output(s, lines + 3 * j), f"t{s}_{j}"))
    if final:
        msgs.append(assistant("The test passes now: the fixture was stale.", "done"))
    return msgs


def clear(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": "clear", "input": msgs, "settings": settings}


def summarize(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": "summarize", "input": msgs, "settings": settings}


def _with_summary(msgs: list[Msg]) -> list[Msg]:
    return [{"id": "summary", "role": "user", "text": SUMMARY_TEXT, "summary": True}, *msgs]


# count_tokens_approximately of agent_run(8) is 2,870 and of agent_run(12) 4,288: the triggers below sit on
# either side of those counts (trigger-at-count: "tokens <= trigger" does nothing).
CASES: list[dict[str, Any]] = [
    # -- ClearToolUsesEdit ---------------------------------------------------------------------------------------
    clear("clear-under-trigger", agent_run(8), trigger=10_000),
    clear("clear-defaults-keep-3", agent_run(8), trigger=2_000),
    clear("clear-trigger-at-count", agent_run(8), trigger=2_870),
    clear("clear-trigger-one-below-count", agent_run(8), trigger=2_869),
    clear("clear-keep-0", agent_run(8), trigger=2_000, keep=0),
    clear("clear-keep-1", agent_run(8), trigger=2_000, keep=1),
    clear("clear-keep-more-than-results", agent_run(4), trigger=500, keep=5),
    clear("clear-exclude-tools", agent_run(8, names=("grep", "read_file")), trigger=2_000, exclude_tools=["read_file"]),
    clear(
        "clear-excluded-count-towards-keep",
        agent_run(8, names=("grep", "grep", "grep", "grep", "grep", "memory", "memory", "memory")),
        trigger=2_000,
        exclude_tools=["memory"],
    ),
    clear("clear-tool-inputs", agent_run(8), trigger=2_000, clear_tool_inputs=True),
    clear("clear-at-least-stops-early", agent_run(8), trigger=2_000, clear_at_least=500),
    clear("clear-at-least-more-than-there-is", agent_run(8), trigger=2_000, clear_at_least=50_000),
    clear("clear-custom-placeholder", agent_run(8), trigger=2_000, placeholder="[output removed]"),
    clear("clear-parallel-batch-split-by-keep", agent_run(4, batch=3), trigger=1_000, keep=4),
    clear("clear-parallel-batch-inputs", agent_run(4, batch=2), trigger=1_000, keep=3, clear_tool_inputs=True),
    clear("clear-user-turns-between", agent_run(10, users_at=(3, 7)), trigger=2_000),
    # -- SummarizationMiddleware ---------------------------------------------------------------------------------
    summarize("sum-no-trigger", agent_run(12), trigger=None),
    summarize("sum-under-token-trigger", agent_run(12), trigger=["tokens", 10_000]),
    summarize("sum-tokens-keep-20", agent_run(12), trigger=["tokens", 4_000]),
    summarize("sum-token-trigger-at-count", agent_run(12), trigger=["tokens", 4_288]),
    summarize("sum-token-trigger-one-above-count", agent_run(12), trigger=["tokens", 4_289]),
    summarize("sum-cutoff-on-tool-moves-back", agent_run(12), trigger=["tokens", 4_000], keep=["messages", 6]),
    summarize(
        "sum-cutoff-inside-parallel-batch", agent_run(6, batch=3), trigger=["tokens", 1_000], keep=["messages", 7]
    ),
    summarize("sum-messages-trigger", agent_run(12), trigger=["messages", 25], keep=["messages", 10]),
    summarize("sum-messages-trigger-not-reached", agent_run(12), trigger=["messages", 27], keep=["messages", 10]),
    summarize(
        "sum-and-clause-one-fails", agent_run(12), trigger={"tokens": 4_000, "messages": 40}, keep=["messages", 10]
    ),
    summarize(
        "sum-or-list-one-holds",
        agent_run(12),
        trigger=[{"tokens": 90_000}, {"messages": 20}],
        keep=["messages", 10],
    ),
    summarize("sum-fewer-messages-than-keep", agent_run(8), trigger=["tokens", 1_000], keep=["messages", 30]),
    summarize("sum-keep-tokens", agent_run(12), trigger=["tokens", 4_000], keep=["tokens", 1_500]),
    summarize(
        "sum-fraction-trigger-and-keep",
        agent_run(12),
        trigger=["fraction", 0.5],
        keep=["fraction", 0.2],
        max_input_tokens=8_000,
    ),
    summarize(
        "sum-fraction-under-trigger",
        agent_run(12),
        trigger=["fraction", 0.8],
        keep=["messages", 20],
        max_input_tokens=8_000,
    ),
    summarize("sum-previous-summary-counts", _with_summary(agent_run(12)), trigger=["tokens", 4_000]),
    summarize("sum-keeps-last-user-in-window", agent_run(14, users_at=(10,)), trigger=["tokens", 4_000]),
    summarize("sum-long-live-turn", agent_run(14, users_at=(2,)), trigger=["tokens", 4_000], keep=["messages", 8]),
    summarize(
        "sum-trim-reaches-a-human-message",
        agent_run(14, lines=60, users_at=(8,)),
        trigger=["tokens", 4_000],
        keep=["messages", 6],
    ),
    summarize(
        "sum-trim-finds-no-human-message", agent_run(14, lines=30), trigger=["tokens", 4_000], keep=["messages", 4]
    ),
]
