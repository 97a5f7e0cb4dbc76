"""Scripted inputs for AutoGen's model contexts (``autogen_core.model_context``): plain data, no import of ``sim``
or ``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``), ``text``; an assistant message may carry
``calls`` (``[{"id", "name", "args"}]``: AutoGen's ``FunctionCall``s, the text its ``thought``), a tool message
``results`` (``[{"call_id", "name", "text"}]``: one ``FunctionExecutionResultMessage`` holding every result of a
batch). There is no system message: ``AssistantAgent`` keeps its system messages apart from the model context.

Each case: ``name``, ``kind`` (``buffered``, ``head_and_tail``, ``token_limited``), ``input`` (the messages, added
to the context in order) and ``settings`` (the context's parameters; ``window`` is the fake model client's token
limit, for ``token_limited`` without ``token_limit``). ``get_messages()`` is called once, as before a model call.
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

TASK = "Fix the failing test in tests/test_app.py; do not touch the public API."


def output(step: int, lines: int, width: int = 40) -> str:
    """A tool output of ``lines`` lines, each ``width`` characters, that names its step."""
    return "\n".join(f"step {step} line {i:03d} ".ljust(width, ".") for i in range(lines))


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or []}


def agent_run(
    steps: int,
    lines: int = 10,
    *,
    batch: int = 1,
    users_at: tuple[int, ...] = (),
    final: bool = True,
    sizes: dict[int, int] | None = None,
) -> list[Msg]:
    """The task, then ``steps`` rounds of one assistant message calling ``batch`` tools and one result message
    holding their results (``sizes`` overrides a step's output lines); a user message before each step in
    ``users_at``; a closing answer unless ``final`` is off."""
    msgs = [user(TASK, "u0")]
    for s in range(steps):
        if s in users_at:
            msgs.append(user(f"Also check step {s}'s output for warnings.", f"u{s}"))
        calls = [{"id": f"c{s}_{j}", "name": "grep", "args": f'{{"pattern": "needle {s}.{j}"}}'} for j in range(batch)]
        msgs.append(assistant(f"Step {s}: looking for more context.", f"a{s}", calls))
        n = (sizes or {}).get(s, lines)
        results = [{"call_id": c["id"], "name": "grep", "text": output(s, n + j)} for j, c in enumerate(calls)]
        msgs.append({"id": f"t{s}", "role": "tool", "results": results})
    if final:
        msgs.append(assistant("The test passes now: the fixture was stale.", "done"))
    return msgs


def chat(turns: int) -> list[Msg]:
    """``turns`` user questions each answered in text, no tools."""
    msgs: list[Msg] = []
    for k in range(turns):
        msgs.append(user(f"Question {k}: what does module {k} do?", f"u{k}"))
        msgs.append(assistant(f"Module {k} parses the configuration and " + "explains it. " * (k + 1), f"a{k}"))
    return msgs


def case(name: str, kind: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "input": msgs, "settings": settings}


def split(c: dict[str, Any]) -> dict[str, Any]:
    """``c`` with ``log: one-result-per-message``: AutoGen gets each batch's results as one message, as an agent
    stores them; the test's log holds one tool message per result (``t<s>.<j>``), as recordings and the scenarios
    do, and counts a run of them as AutoGen's one."""
    return {**c, "log": "one-result-per-message"}


# agent_run(6) holds 14 messages: u0, then a0 t0 ... a5 t5, then done.
CASES: list[dict[str, Any]] = [
    # -- BufferedChatCompletionContext -------------------------------------------------------------------------
    case("buf-fewer-than-buffer", "buffered", agent_run(1), buffer_size=5),
    case("buf-cut-on-assistant", "buffered", agent_run(6), buffer_size=5),
    case("buf-cut-on-result-drops-it", "buffered", agent_run(6), buffer_size=4),
    case("buf-exactly-full", "buffered", agent_run(6), buffer_size=14),
    case("buf-one-message", "buffered", agent_run(6), buffer_size=1),
    case("buf-one-result-message-leaves-nothing", "buffered", agent_run(6, final=False), buffer_size=1),
    case("buf-drops-the-last-user-message", "buffered", agent_run(6, users_at=(2,)), buffer_size=6),
    case("buf-batch-result-message", "buffered", agent_run(4, batch=3), buffer_size=4),
    case("buf-chat-without-tools", "buffered", chat(5), buffer_size=3),
    # -- HeadAndTailChatCompletionContext ----------------------------------------------------------------------
    case("ht-not-enough-messages", "head_and_tail", agent_run(6), head_size=4, tail_size=10),
    case("ht-one-more-than-head-and-tail", "head_and_tail", agent_run(6), head_size=3, tail_size=10),
    case("ht-head-1-tail-5", "head_and_tail", agent_run(6), head_size=1, tail_size=5),
    case("ht-head-ends-on-a-call-drops-it", "head_and_tail", agent_run(6), head_size=2, tail_size=5),
    case("ht-head-ends-on-a-result", "head_and_tail", agent_run(6), head_size=3, tail_size=5),
    case("ht-tail-starts-on-a-result-drops-it", "head_and_tail", agent_run(6), head_size=1, tail_size=4),
    case("ht-both-adjustments", "head_and_tail", agent_run(8), head_size=2, tail_size=4),
    case("ht-head-1-tail-1", "head_and_tail", agent_run(6), head_size=1, tail_size=1),
    case("ht-chat-without-tools", "head_and_tail", chat(6), head_size=2, tail_size=3),
    # -- TokenLimitedChatCompletionContext ---------------------------------------------------------------------
    case("tok-under-limit", "token_limited", agent_run(6), token_limit=5_000),
    case("tok-at-limit", "token_limited", agent_run(6), token_limit=-1),  # -1: the list's own count
    case("tok-one-below-count", "token_limited", agent_run(6), token_limit=-2),  # -2: its count less one
    case("tok-middle-out", "token_limited", agent_run(6), token_limit=600),
    case("tok-middle-out-more", "token_limited", agent_run(10), token_limit=500),
    case("tok-big-middle-message", "token_limited", agent_run(8, sizes={4: 60}), token_limit=1_000),
    case("tok-pops-down-to-nothing", "token_limited", agent_run(4), token_limit=20),
    case("tok-nothing-fits", "token_limited", agent_run(4), token_limit=5),
    case("tok-chat-without-tools", "token_limited", chat(8), token_limit=200),
    case("tok-window-of-the-client", "token_limited", agent_run(10, lines=20), window=1_500),
    case("tok-window-not-reached", "token_limited", agent_run(10), window=100_000),
    # -- a batch's results one AutoGen message, one tool message each in the log ------------------------------------
    split(case("buf-split-batch-keeps-the-task", "buffered", agent_run(2, batch=2, final=False), buffer_size=5)),
    split(case("buf-split-batches", "buffered", agent_run(5, batch=3), buffer_size=5)),
    split(case("ht-split-batches", "head_and_tail", agent_run(6, batch=2), head_size=1, tail_size=5)),
    split(case("ht-split-head-ends-on-results", "head_and_tail", agent_run(6, batch=3), head_size=3, tail_size=4)),
    split(case("tok-split-batches", "token_limited", agent_run(6, batch=3), token_limit=700)),
]
