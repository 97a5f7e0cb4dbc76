"""Scripted histories for LlamaIndex's ``ChatSummaryMemoryBuffer`` (``llama_index.core.memory``): plain data, no import
of ``sim`` or ``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``, ``system``), ``text``; an assistant message
may carry ``calls`` (``[{"id", "name", "args"}]``, its ``tool_calls``; without text its content is None), a tool
message ``results`` (``[{"call_id", "name", "text"}]``: one ``ChatMessage(role="tool")`` per result, as
``FunctionAgent`` puts them). A ``system`` message first is the summary an earlier ``get()`` left in the store. The
agent's own system prompt is not in the memory: it is ``SYSTEM`` below, counted only with ``count_initial_tokens``.

Each case: ``name``, ``input`` (the stored messages, oldest first) and ``settings``: ``token_limit`` (absent: the
``from_defaults`` default, 0.75 of the mock LLM's 3,900-token window), ``count_initial_tokens``, ``llm`` (False: no
LLM, what does not fit is dropped). ``get()`` is called once, as an agent calls it at the start of a run (the last
message is the user's) or at its end (the last message is the final reply).
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

SYSTEM = "You are a coding agent. Answer briefly and run the tests before you say you are done."
TASK = "Fix the failing test in tests/test_app.py; do not touch the public API."
SUMMARY = "The user asked to fix tests/test_app.py without touching the public API; the fixture was found stale."


def output(step: int, lines: int, width: int = 40) -> str:
    """A tool output of ``lines`` lines, each ``width`` characters, that names its step."""
    return "\n".join(f"step {step} line {i:03d} ".ljust(width, ".") for i in range(lines))


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or []}


def summary(text: str = SUMMARY) -> Msg:
    return {"id": "summary", "role": "system", "text": text}


def run(tag: str, steps: int, lines: int = 10, *, batch: int = 1, text: bool = False, final: bool = True) -> list[Msg]:
    """One agent run: the user's message, ``steps`` rounds of an assistant message calling ``batch`` tools (with a
    line of text when ``text``, else content None) and their results, then the final reply unless ``final`` is off."""
    msgs = [user(f"{TASK} ({tag})", f"u{tag}")]
    for s in range(steps):
        calls = [
            {"id": f"c{tag}{s}_{j}", "name": "grep", "args": f'{{"pattern": "needle {s}.{j}"}}'} for j in range(batch)
        ]
        msgs.append(assistant(f"Step {s}: looking further." if text else "", f"a{tag}{s}", calls))
        results = [{"call_id": c["id"], "name": "grep", "text": output(s, lines + j)} for j, c in enumerate(calls)]
        msgs.append({"id": f"t{tag}{s}", "role": "tool", "results": results})
    if final:
        msgs.append(assistant(f"Done with {tag}: the fixture was stale.", f"f{tag}"))
    return msgs


def chat(turns: int, first: int = 0) -> list[Msg]:
    """``turns`` user questions each answered in text, no tools."""
    msgs: list[Msg] = []
    for k in range(first, first + turns):
        msgs.append(user(f"Question {k}: what does module {k} do?", f"u{k}"))
        answer = (
            f"Module {k} parses the configuration: "
            + "it reads the file, checks each key, reports what is missing. " * 6
        )
        msgs.append(assistant(answer, f"a{k}"))
    return msgs


def case(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "input": msgs, "settings": settings}


def tokens(msgs: list[Msg]) -> int:
    """The history's count as the generator's tokenizer makes it (a quarter of each content, rounded up)."""
    total = 0
    for m in msgs:
        texts = [r["text"] for r in m["results"]] if m["role"] == "tool" else [m["text"] or "None"]
        total += sum(-(-len(t) // 4) for t in texts)
    return total


NEXT = [user("Now also check tests/test_cli.py.", "next")]
THREE_RUNS = run("A", 3) + run("B", 3) + run("C", 3)
CHAT = chat(8)

CASES: list[dict[str, Any]] = [
    # -- nothing to do -----------------------------------------------------------------------------------------
    case("fits", CHAT + NEXT, token_limit=5_000),
    case("at-the-limit", CHAT + NEXT, token_limit=tokens(CHAT + NEXT)),
    case("one-over-the-limit", CHAT + NEXT, token_limit=tokens(CHAT + NEXT) - 1),
    # -- chats -------------------------------------------------------------------------------------------------
    case("chat-cut-on-a-user-message", CHAT + NEXT, token_limit=tokens(CHAT[-4:] + NEXT) + 20),
    case("chat-kept-part-starts-with-an-answer", CHAT + NEXT, token_limit=tokens(CHAT[-1:] + NEXT) + 5),
    case("chat-small-limit", CHAT + NEXT, token_limit=30),
    case("chat-without-llm-drops", CHAT + NEXT, token_limit=tokens(CHAT[-4:] + NEXT) + 20, llm=False),
    # -- agent runs --------------------------------------------------------------------------------------------
    case("runs-walk-stops-inside-a-loop", THREE_RUNS + NEXT, token_limit=400),
    case("runs-keeps-whole-runs", THREE_RUNS + NEXT, token_limit=700),
    case("runs-end-of-run", THREE_RUNS, token_limit=700),
    case("runs-end-of-run-turn-over-limit", THREE_RUNS, token_limit=150),
    case("runs-with-text", run("A", 4, text=True) + run("B", 4, text=True) + NEXT, token_limit=500),
    case("runs-parallel-batches", run("A", 3, batch=3) + run("B", 2, batch=3) + NEXT, token_limit=1_200),
    case("runs-without-llm", THREE_RUNS + NEXT, token_limit=700, llm=False),
    case("runs-big-results", run("A", 2, lines=80) + run("B", 2, lines=80) + NEXT, token_limit=2_000),
    # -- the default limit: 0.75 of the mock LLM's window ------------------------------------------------------
    case("default-limit-fits", run("A", 6, lines=30) + NEXT),
    case("default-limit-over", run("A", 6, lines=30) + run("B", 6, lines=30) + NEXT),
    # -- the initial tokens (the agent's system prompt) ---------------------------------------------------------
    case("initial-tokens-not-counted", CHAT + NEXT, token_limit=tokens(CHAT[2:] + NEXT)),
    case("initial-tokens-counted", CHAT + NEXT, token_limit=tokens(CHAT[2:] + NEXT), count_initial_tokens=True),
    # -- an earlier summary in the store -----------------------------------------------------------------------
    case("summary-and-all-fit", [summary(), *chat(3, 5), *NEXT], token_limit=1_000),
    case("summary-alone-does-not-fit", [summary(), *chat(3, 5), *NEXT], token_limit=tokens([*chat(3, 5), *NEXT])),
    case("summary-and-overflow", [summary(), *chat(4, 5), *NEXT], token_limit=tokens([*chat(2, 7), *NEXT])),
    case("summary-and-overflow-runs", [summary(), *run("B", 3), *run("C", 3), *NEXT], token_limit=500),
    # -- the user's message alone over the limit ---------------------------------------------------------------
    case(
        "user-message-over-the-limit",
        [*chat(2), user("Please read this log: " + output(0, 40), "big")],
        token_limit=300,
    ),
]
