"""Scripted inputs for the Vercel AI SDK's ``pruneMessages`` (npm ``ai``): plain data, no import of ``sim`` or
``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``), ``text``; an assistant message may carry
``thinking`` (a reasoning part, before its text) and ``calls`` (``[{"id", "name", "args"}]``: tool-call parts, after
its text); a tool message ``results`` (``[{"call_id", "name", "text"}]``). Consecutive tool messages become one AI SDK
``tool`` message (the SDK puts every result of a step in one), so a case may split a batch's results the way an
OpenAI-format log does. There is no system message: the AI SDK takes the system prompt as its ``system`` option.

Each case: ``name``, ``input`` (the messages) and ``settings`` (``pruneMessages``'s options as the SDK spells them:
``reasoning``, ``toolCalls``, ``emptyMessages``; an option left out takes the function's default).
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

TASK = "Fix the failing test in tests/test_app.py; do not touch the public API."


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None, thinking: str | None = None) -> Msg:
    m: Msg = {"id": id, "role": "assistant", "text": text, "calls": calls or []}
    if thinking is not None:
        m["thinking"] = thinking
    return m


def call(id: str, name: str = "grep") -> Msg:
    return {"id": id, "name": name, "args": f'{{"pattern": "needle {id}"}}'}


def results(id: str, *calls: Msg) -> Msg:
    return {
        "id": id,
        "role": "tool",
        "results": [{"call_id": c["id"], "name": c["name"], "text": f"output of {c['id']}"} for c in calls],
    }


def agent_run(
    steps: int,
    *,
    thinking: bool = True,
    batch: int = 1,
    split: bool = False,
    names: tuple[str, ...] = ("grep",),
    users_at: tuple[int, ...] = (),
    final: bool = True,
) -> list[Msg]:
    """The task, then ``steps`` tool steps: an assistant message (reasoning when ``thinking``, text, ``batch`` calls
    named in turn from ``names``) and its results (one tool message, or one per result when ``split``); a user
    message before each step in ``users_at``; a closing answer (with reasoning) unless ``final`` is off."""
    msgs = [user(TASK, "u0")]
    for s in range(steps):
        if s in users_at:
            msgs.append(user(f"Also check step {s}'s output for warnings.", f"u{s}"))
        calls = [call(f"c{s}_{j}", names[(s + j) % len(names)]) for j in range(batch)]
        msgs.append(assistant(f"Step {s}.", f"a{s}", calls, f"thinking {s}" if thinking else None))
        if split:
            msgs += [results(f"t{s}_{j}", c) for j, c in enumerate(calls)]
        else:
            msgs.append(results(f"t{s}", *calls))
    if final:
        msgs.append(assistant("The test passes now: the fixture was stale.", "done", thinking="all done"))
    return msgs


def case(name: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "input": msgs, "settings": settings}


DOCS = {"reasoning": "before-last-message", "toolCalls": "before-last-2-messages", "emptyMessages": "remove"}

CASES: list[dict[str, Any]] = [
    # -- the function's defaults and the reference page's example -------------------------------------------------
    case("defaults-prune-nothing", agent_run(3)),
    case("docs-example-mid-loop", agent_run(4, final=False), **DOCS),
    case("docs-example-after-answer", agent_run(4), **DOCS),
    case("docs-example-new-user-turn", [*agent_run(3), user("Now run the linter.", "u9")], **DOCS),
    case("docs-example-short", agent_run(1, final=False), **DOCS),
    # -- reasoning ----------------------------------------------------------------------------------------------------
    case("reasoning-all", agent_run(3), reasoning="all"),
    case("reasoning-before-last-keeps-last-assistant", agent_run(3), reasoning="before-last-message"),
    case("reasoning-before-last-mid-loop", agent_run(3, final=False), reasoning="before-last-message"),
    case("reasoning-none", agent_run(3), reasoning="none", toolCalls="before-last-message"),
    case(
        "reasoning-only-message-removed",
        [user(TASK, "u0"), assistant("", "a0", thinking="only thinking"), user("Go on.", "u1")],
        reasoning="all",
    ),
    # -- toolCalls strings --------------------------------------------------------------------------------------------
    case("tools-all-mid-loop", agent_run(3, final=False), toolCalls="all"),
    case("tools-all-after-answer", agent_run(3), toolCalls="all"),
    case("tools-none", agent_run(3), toolCalls="none"),
    case("tools-before-last-message-mid-loop", agent_run(4, final=False), toolCalls="before-last-message"),
    case("tools-before-last-message-after-answer", agent_run(4), toolCalls="before-last-message"),
    case("tools-before-last-0-keeps-all", agent_run(3), toolCalls="before-last-0-messages"),
    case("tools-before-last-3-starts-on-call", agent_run(4), toolCalls="before-last-3-messages"),
    case("tools-before-last-4-starts-on-result", agent_run(4), toolCalls="before-last-4-messages"),
    case("tools-before-last-5-mid-loop", agent_run(5, final=False), toolCalls="before-last-5-messages"),
    case("tools-before-last-n-past-the-start", agent_run(2), toolCalls="before-last-40-messages"),
    case("tools-text-only-chat", [user("Hi", "u0"), assistant("Hello.", "a0"), user("Bye", "u1")], toolCalls="all"),
    # -- batches and split results ------------------------------------------------------------------------------------
    case("batch-of-three", agent_run(3, batch=3), toolCalls="before-last-2-messages"),
    case("split-results-count-as-one", agent_run(4, batch=3, split=True, final=False), **DOCS),
    case("split-results-window-starts-on-them", agent_run(4, batch=2, split=True), toolCalls="before-last-3-messages"),
    case("split-results-all", agent_run(2, batch=2, split=True), toolCalls="all"),
    # -- user turns between steps ------------------------------------------------------------------------------------
    case("user-turns-between", agent_run(5, users_at=(2, 4)), **DOCS),
    case("user-turns-window-of-three", agent_run(5, users_at=(3,), final=False), toolCalls="before-last-3-messages"),
    # -- the array form: only some tools --------------------------------------------------------------------------
    case(
        "only-listed-tools",
        agent_run(4, names=("grep", "read")),
        toolCalls=[{"type": "before-last-2-messages", "tools": ["read"]}],
    ),
    case(
        "only-listed-tools-all",
        agent_run(4, batch=2, names=("grep", "read", "bash")),
        toolCalls=[{"type": "all", "tools": ["grep", "bash"]}],
    ),
    case(
        "listed-tools-empty-list",
        agent_run(3, names=("grep", "read")),
        toolCalls=[{"type": "all", "tools": []}],
    ),
    case(
        "listed-tools-batch-mixed",
        agent_run(3, batch=2, names=("grep", "read"), split=True),
        reasoning="all",
        toolCalls=[{"type": "before-last-message", "tools": ["grep"]}],
    ),
    # -- emptyMessages: 'keep' (not modelled: the view never sends a message without parts) --------------------------
    case("empty-messages-kept", agent_run(3), reasoning="all", toolCalls="before-last-message", emptyMessages="keep"),
    case("empty-messages-kept-nothing-empties", agent_run(3), reasoning="none", toolCalls="none", emptyMessages="keep"),
    case(
        "array-without-tools",
        agent_run(3),
        toolCalls=[{"type": "before-last-2-messages"}],
    ),
]
