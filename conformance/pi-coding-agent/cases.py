"""Scripted inputs for pi's compaction (npm ``@earendil-works/pi-coding-agent``): plain data, no import of ``sim`` or
``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``), ``text``; an assistant message carries
``calls`` (``[{"id", "name", "args"}]``, ``args`` a JSON string), may carry ``thinking``, and carries ``usage``
(``{"input", "output"}``: what the provider reported for the call it answers, which pi reads back); a tool message
``results`` (``[{"call_id", "name", "text"}]``, one pi ``toolResult`` message each). The system prompt is the case's
``system``.

Each case: ``name``, ``kind``, ``system``, ``input`` (the messages up to a model call), ``settings`` (pi's names:
``contextWindow``, ``reserveTokens``, ``keepRecentTokens``) and, where an earlier compaction happened, ``compaction``
(``{"summary", "first_kept", "after"}``: appended after message ``after``, keeping from ``first_kept``). ``kind``:

* ``auto``: pi's automatic check before the call (prompt or steering messages at the end are not in the session yet);
* ``manual``: ``/compact``, no threshold;
* ``overflow``: the provider rejected the call as too long; the failed attempt is persisted and omitted, then pi
  compacts and retries.
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

SYSTEM = "You are pi, a coding agent. Use the tools to read, search and edit files."
TASK = "Fix the failing test in tests/test_app.py; do not touch the public API."
WINDOW = 200_000
DEFAULTS = {"contextWindow": WINDOW, "reserveTokens": 16_384, "keepRecentTokens": 20_000}


def output(label: str, chars: int) -> str:
    """A tool output of ``chars`` characters that names its call."""
    line = f"{label} line ".ljust(39, ".") + "\n"
    return (line * (chars // len(line) + 1))[:chars]


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(
    text: str, id: str, calls: list[Msg] | None = None, usage: tuple[int, int] = (0, 0), thinking: str | None = None
) -> Msg:
    m: Msg = {"id": id, "role": "assistant", "text": text, "calls": calls or [], "usage": usage_of(*usage)}
    if thinking is not None:
        m["thinking"] = thinking
    return m


def usage_of(input: int, output: int) -> dict[str, int]:
    return {"input": input, "output": output}


def call(id: str, name: str = "read", args: str | None = None) -> Msg:
    return {"id": id, "name": name, "args": args or f'{{"path": "src/{id}.py"}}'}


def results(id: str, calls: list[Msg], chars: int) -> Msg:
    return {
        "id": id,
        "role": "tool",
        "results": [{"call_id": c["id"], "name": c["name"], "text": output(c["id"], chars)} for c in calls],
    }


def turns(
    n: int,
    steps: int = 2,
    chars: int = 1_200,
    *,
    batch: int = 1,
    final: bool = True,
    usage: int = 100_000,
    start: int = 0,
) -> list[Msg]:
    """``n`` turns: a user message, ``steps`` tool steps (an assistant calling ``batch`` tools, their results of
    ``chars`` characters each) and, unless ``final`` is off for the last turn, a closing answer. Each reply reports
    ``usage`` input tokens (plus its step, so they grow) and 50 output tokens."""
    msgs: list[Msg] = []
    u = usage
    for t in range(start, start + n):
        msgs.append(user(TASK if t == 0 else f"Now the next failure, number {t}.", f"u{t}"))
        for s in range(steps):
            calls = [call(f"c{t}_{s}_{j}") for j in range(batch)]
            msgs.append(assistant(f"Turn {t}, step {s}: reading.", f"a{t}_{s}", calls, (u, 50)))
            msgs.append(results(f"t{t}_{s}", calls, chars))
            u += 100
        if final or t < start + n - 1:
            msgs.append(assistant(f"Turn {t} done: the fixture was stale.", f"d{t}", usage=(u, 50)))
            u += 100
    return msgs


def case(name: str, msgs: list[Msg], kind: str = "auto", compaction: Msg | None = None, **settings: int) -> Msg:
    c: Msg = {"name": name, "kind": kind, "system": SYSTEM, "input": msgs, "settings": {**DEFAULTS, **settings}}
    if compaction is not None:
        c["compaction"] = compaction
    return c


def last_usage(msgs: list[Msg], input: int, output: int = 50) -> list[Msg]:
    """``msgs`` with the last assistant message's usage set."""
    out = [dict(m) for m in msgs]
    k = max(i for i, m in enumerate(out) if m["role"] == "assistant")
    out[k]["usage"] = usage_of(input, output)
    return out


THRESHOLD = WINDOW - 16_384  # 183,616
KEEP = 1_500  # keepRecentTokens where a case does not test the default: small histories, cuts inside them
# pi's estimates here: a result of 1,200 characters is 300 tokens (chars/4, rounded up per message), a step's
# assistant message 13, a prompt 8, a closing answer 9; a two-step turn 643.
CASES: list[Msg] = [
    # -- when: after a run's last reply, its usage (input + output) against window - reserveTokens -------------------
    case("after-run-under", [*last_usage(turns(6), THRESHOLD - 50 - 1), user("Next.", "u9")], keepRecentTokens=KEEP),
    case("after-run-at-threshold", [*last_usage(turns(6), THRESHOLD - 50), user("Next.", "u9")], keepRecentTokens=KEEP),
    case("after-run-one-over", [*last_usage(turns(6), THRESHOLD - 49), user("Next.", "u9")], keepRecentTokens=KEEP),
    case(
        "after-run-prompt-not-counted",
        [*last_usage(turns(6), THRESHOLD - 60), user("x" * 4_000, "u9")],
        keepRecentTokens=KEEP,
    ),
    case("after-run-no-prompt-yet", last_usage(turns(6), THRESHOLD), keepRecentTokens=KEEP),
    # -- when: before a further call of the run, the last usage plus the estimate of what came after it --------------
    case("before-call-under", last_usage(turns(6, final=False), THRESHOLD - 50 - 300), keepRecentTokens=KEEP),
    case("before-call-over", last_usage(turns(6, final=False), THRESHOLD - 50 - 300 + 1), keepRecentTokens=KEEP),
    case(
        "before-call-reply-not-counted-twice",
        last_usage(turns(6, final=False), THRESHOLD - 50 - 300 - 1),
        keepRecentTokens=KEEP,
    ),
    case(
        "before-call-batch-rounded-per-result",
        last_usage(turns(6, batch=3, chars=1_201, final=False), THRESHOLD - 50 - 3 * 301 + 1),
        keepRecentTokens=KEEP,
    ),
    case(
        "before-call-steering-not-counted",
        [*last_usage(turns(6, final=False), THRESHOLD - 50 - 300), user("y" * 400, "s9")],
        keepRecentTokens=KEEP,
    ),
    case("first-call-no-check", [user(TASK, "u0")], contextWindow=1_000, reserveTokens=900),
    # -- where: the newest keepRecentTokens kept, the cut at a user or assistant message --------------------------
    case("cut-default-keep", last_usage(turns(8, chars=8_000), THRESHOLD + 1)),
    case(
        "cut-at-user-message",  # d7 9 + t7 1,000 + a7 13 = 1,022; with u7 1,030
        last_usage(turns(8, steps=1, chars=4_000), THRESHOLD + 1),
        keepRecentTokens=1_025,
    ),
    case(  # ... + the previous turn's d 9 = 652, its last result 952: the cut moves forward to that d
        "cut-moves-forward-from-a-result", last_usage(turns(8), THRESHOLD + 1), keepRecentTokens=900
    ),
    case(
        "cut-inside-a-finished-turn",
        [*last_usage(turns(4, steps=6), THRESHOLD + 1), user("Next.", "u9")],
        keepRecentTokens=KEEP,
    ),
    case(
        "cut-after-a-large-last-result",
        [*last_usage(turns(4, final=False), THRESHOLD + 1)[:-1], results("big", [call("c3_1_0")], 20_000)],
        keepRecentTokens=KEEP,
    ),
    case("cut-inside-the-live-turn", last_usage(turns(2, steps=12, final=False), THRESHOLD + 1), keepRecentTokens=KEEP),
    case("keep-covers-everything", last_usage(turns(3), THRESHOLD + 1), keepRecentTokens=500_000),
    case("keep-zero", last_usage(turns(5), THRESHOLD + 1), keepRecentTokens=0),
    case(
        "small-window",
        last_usage(turns(8), 9_000),
        contextWindow=12_000,
        reserveTokens=3_000,
        keepRecentTokens=2_000,
    ),
    # -- estimates: text, thinking, tool name and compact JSON arguments, each result apart -----------------------
    case(
        "estimates-thinking-and-arguments",
        [
            user(TASK, "u0"),
            assistant(
                "Looking.",
                "a0",
                [call("c0", "grep", '{"pattern": "def  test_app",  "path": "tests/", "n": [1, 2, 3]}')],
                (THRESHOLD, 50),
                thinking="The test fails on the fixture; grep for it first. " * 40,
            ),
            results("t0", [call("c0", "grep")], 9_999),
        ],
    ),
    # -- an earlier compaction: the walk starts after it, the previous summary is updated --------------------------
    case(
        "after-compaction",
        last_usage(turns(8), THRESHOLD + 1),
        compaction={"summary": "Earlier: the user asked to fix tests/test_app.py.", "first_kept": "u3", "after": "d4"},
        keepRecentTokens=KEEP,
    ),
    case(  # the three turns kept last time and since hold 1,929 tokens: nothing more to summarise
        "after-compaction-little-new",
        last_usage(turns(5), THRESHOLD + 1),
        compaction={"summary": "Earlier: the user asked to fix tests/test_app.py.", "first_kept": "u2", "after": "d3"},
        keepRecentTokens=9_000,
    ),
    # -- manual and overflow: no threshold -------------------------------------------------------------------------
    case("manual-under-threshold", last_usage(turns(6), 50_000), kind="manual", keepRecentTokens=KEEP),
    case("manual-keep-covers-everything", last_usage(turns(2), 50_000), kind="manual", keepRecentTokens=500_000),
    case(
        "overflow-retry", [*last_usage(turns(8), 150_000), user("Next.", "u9")], kind="overflow", keepRecentTokens=KEEP
    ),
    case(  # the prompt alone holds 2,000 tokens: the cut lands on it and moves past it
        "overflow-large-prompt",
        [*last_usage(turns(4), 150_000), user("z" * 8_000, "u9")],
        kind="overflow",
        keepRecentTokens=KEEP,
    ),
    # -- a summary that would not shrink the view --------------------------------------------------------------
    case(
        "small-history",
        [
            user("Hi", "u0"),
            assistant("Hello.", "d0", usage=(30, 5)),
            user("Fix it.", "u1"),
            assistant("Done.", "d1", usage=(40, 5)),
        ],
        contextWindow=1_000,
        reserveTokens=960,
        keepRecentTokens=2,
    ),
]
