"""Scripted inputs for the Python SDK's client-side compaction (``compaction_control``); plain data, no import of
``sim`` or ``policies``.

Messages are in the Messages API's own form, each with an ``id`` for reference: ``{"id", "role": "user" |
"assistant", "content": [blocks]}`` with ``text``, ``thinking``, ``tool_use`` (``id``, ``name``, ``input``) and
``tool_result`` (``tool_use_id``, ``content``) blocks. A response is ``{"id", "content", "usage"}`` with the
usage fields the SDK reads (``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``,
``output_tokens``).

Two kinds of case (``kind``):

* ``check``: the runner's ``messages`` param is ``history`` and ``response`` is the message just received; the
  SDK's ``_check_and_compact()`` decides and, if it compacts, sends the summary request and replaces the
  messages. Ours: ``decide`` right after ``response`` (the engine's ``response`` point), the provider having
  reported the response's prompt tokens for the request.
* ``loop``: the runner's own loop (``__run__``) from ``messages`` over the scripted ``responses``, with tools
  that answer ``tool_results``: which requests it sends, after which response it compacts, which tool uses
  run. Ours: ``decide`` after each response of the same script, as far as the first compaction.

``settings`` is the ``compaction_control`` dict (without ``enabled``, always true); the same keys are our
policy's parameters.
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

TASK = "Find why test_parse fails in the parser package and fix it."


def text(t: str) -> Msg:
    return {"type": "text", "text": t}


def use(cid: str, name: str = "grep", **inp: str) -> Msg:
    return {"type": "tool_use", "id": cid, "name": name, "input": inp or {"pattern": cid}}


def result(cid: str, t: str) -> Msg:
    return {"type": "tool_result", "tool_use_id": cid, "content": t}


def thinking(t: str) -> Msg:
    return {"type": "thinking", "thinking": t, "signature": "sig-" + t[:8]}


def msg(mid: str, role: str, *blocks: Msg) -> Msg:
    return {"id": mid, "role": role, "content": list(blocks)}


def response(rid: str, *blocks: Msg, inp: int, out: int, cache_write: int = 0, cache_read: int = 0) -> Msg:
    usage = {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }
    return {"id": rid, "content": list(blocks), "usage": usage}


def listing(k: int, lines: int = 60) -> str:
    """A tool output of ``lines`` grep hits (about 45 characters each)."""
    return "\n".join(f"parser/mod{k}.py:{i}: tokens = split_{k}_{i}(source)" for i in range(lines))


def exchange(k: int) -> list[Msg]:
    """One tool step of the agent: an assistant message with a call, then the user message with its result."""
    return [
        msg(f"a{k}", "assistant", text(f"Step {k}: searching."), use(f"c{k}")),
        msg(f"t{k}", "user", result(f"c{k}", listing(k))),
    ]


HISTORY = [msg("u1", "user", text(TASK)), *exchange(1)]
LONG_HISTORY = [
    msg("u1", "user", text(TASK)),
    *exchange(1),
    msg(
        "a2",
        "assistant",
        thinking("The failure is in the tokenizer."),
        text("Reading the tokenizer."),
        use("c2", "read_file", path="parser/tok.py"),
    ),
    msg("t2", "user", result("c2", "def tokenize(s):\n    return s.split(' ')\n" + listing(2))),
    msg(
        "a3",
        "assistant",
        text("Two reads at once."),
        use("c3a", "read_file", path="a.py"),
        use("c3b", "bash", cmd="ls"),
    ),
    msg("t3", "user", result("c3a", "A = 1"), result("c3b", "a.py b.py")),
    msg("a4", "assistant", text("Found it: the split drops empty tokens.")),
    msg("u2", "user", text("Good. Now fix it and run the tests.")),
]
SUMMARY_TEXT = "<summary>\n1. Task Overview\nFix test_parse.\n2. Current State\nTokenizer read.\n</summary>"
AFTER_SUMMARY = [msg("s1", "user", text(SUMMARY_TEXT)), *exchange(5)]


def check(name: str, history: list[Msg], resp: Msg, **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": "check", "history": history, "response": resp, "settings": settings}


CASES: list[dict[str, Any]] = [
    check("below_default_threshold", HISTORY, response("r", text("Next."), use("c9"), inp=90_000, out=9_999)),
    check("at_default_threshold", HISTORY, response("r", text("Next."), use("c9"), inp=90_000, out=10_000)),
    check(
        "cache_tokens_count",
        HISTORY,
        response("r", use("c9"), inp=1_000, cache_write=15_000, cache_read=80_000, out=4_000),
    ),
    check("cache_tokens_one_short", HISTORY, response("r", use("c9"), inp=50, cache_read=99_000, out=949)),
    check(
        "cookbook_threshold_over",
        HISTORY,
        response("r", text("Next."), use("c9"), inp=4_000, out=1_200),
        context_token_threshold=5_000,
    ),
    check(
        "cookbook_threshold_under",
        HISTORY,
        response("r", text("Next."), use("c9"), inp=3_000, out=1_000),
        context_token_threshold=5_000,
    ),
    check(
        "output_alone_reaches",
        HISTORY,
        response("r", text("x"), inp=10, out=5_000),
        context_token_threshold=5_000,
    ),
    check(
        "parallel_tool_uses_in_response",
        HISTORY,
        response("r", text("Both."), use("c9a"), use("c9b", "bash", cmd="pytest"), inp=6_000, out=100),
        context_token_threshold=5_000,
    ),
    check(
        "final_answer_response",
        HISTORY,
        response("r", text("The bug is fixed."), inp=6_000, out=100),
        context_token_threshold=5_000,
    ),
    check(
        "thinking_response",
        HISTORY,
        response("r", thinking("Next the tests."), use("c9", "bash", cmd="pytest"), inp=6_000, out=300),
        context_token_threshold=5_000,
    ),
    check(
        "long_history",
        LONG_HISTORY,
        response("r", text("Fixing."), use("c9", "edit", path="parser/tok.py"), inp=7_000, out=200),
        context_token_threshold=5_000,
    ),
    check(
        "after_a_previous_summary",
        AFTER_SUMMARY,
        response("r", text("Continuing."), use("c9"), inp=5_500, out=100),
        context_token_threshold=5_000,
    ),
    check(
        "custom_summary_prompt",
        HISTORY,
        response("r", use("c9"), inp=6_000, out=10),
        context_token_threshold=5_000,
        summary_prompt="Summarise the work so far in three lines inside <summary></summary> tags.",
    ),
    check(
        "tiny_history",
        [msg("u1", "user", text("Hi."))],
        response("r", text("Hello."), inp=4_990, out=10),
        context_token_threshold=5_000,
    ),
    check(
        "caller_appended_response_with_text",
        [*HISTORY, msg("a9", "assistant", text("Appended by the caller."), use("c8"))],
        response("r", text("Appended by the caller."), use("c8"), inp=6_000, out=100),
        context_token_threshold=5_000,
    ),
    check(
        "caller_appended_response_only_tool_use",
        [*HISTORY, msg("a9", "assistant", use("c8"))],
        response("r", use("c8"), inp=6_000, out=100),
        context_token_threshold=5_000,
    ),
    {
        "name": "loop_compacts_after_the_second_response",
        "kind": "loop",
        "messages": [msg("u1", "user", text(TASK))],
        "responses": [
            response("r1", text("Searching."), use("c1"), inp=1_000, out=100),
            response("r2", text("Reading."), use("c2", "read_file", path="parser/tok.py"), inp=4_800, out=300),
            response("r3", text("Reading again."), use("c3", "read_file", path="parser/tok2.py"), inp=600, out=100),
            response("r4", text("Done: the split drops empty tokens."), inp=900, out=50),
        ],
        "tool_results": {"grep": listing(1), "read_file": "def tokenize(s): ...\n" + listing(2)},
        "settings": {"context_token_threshold": 5_000},
    },
    {
        "name": "loop_final_answer_over_the_threshold",
        "kind": "loop",
        "messages": [msg("u1", "user", text(TASK))],
        "responses": [
            response("r1", text("Searching."), use("c1"), inp=1_000, out=100),
            response("r2", text("The answer is long. " * 20), inp=4_900, out=400),
            response("r3", text("Short answer after the summary."), inp=500, out=40),
        ],
        "tool_results": {"grep": listing(1)},
        "settings": {"context_token_threshold": 5_000},
    },
]
