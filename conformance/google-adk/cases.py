"""Scripted inputs for Google ADK's event compaction (``google.adk.apps.compaction``): plain data, no import of
``sim`` or ``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``), ``text``; an assistant message may carry
``calls`` (``[{"id", "name", "args"}]``, ``args`` a JSON object's text) and ``usage`` (the prompt token count its
model call reported, ``usage_metadata.prompt_token_count``), a tool message ``results`` (``[{"call_id", "name",
"text"}]``: one event of function responses). Each user message starts a new invocation. There is no system
message: the agent's instruction is not a session event.

Each case: ``name``, ``kind`` (``sliding``, ``token``, ``both``: which pairs of ``EventsCompactionConfig`` are set),
``input`` (the events, appended in order) and ``settings`` (the config's fields, and ``summary_chars``: the length of
the stand-in summaries, 2 by default). The session is replayed: before each user message after the first, the
Runner's post-invocation compaction runs; before each assistant message (a model call), the request processor's
token check runs when the token pair is set.
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

TASK = "Plan a three-day trip to Kyoto for two people in April; keep the budget under 2,000 euros."


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None, usage: int | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or [], "usage": usage}


def tool(id: str, results: list[Msg]) -> Msg:
    return {"id": id, "role": "tool", "results": results}


def lines(step: str, n: int, width: int = 40, quoted: bool = False) -> str:
    """A tool output of ``n`` lines of ``width`` characters that names its step; ``quoted``: JSON-like lines with
    quotes (a listing of records), whose every quote and newline ``json.dumps`` escapes."""
    if quoted:
        return "\n".join(f'{{"hotel": "{step}-{i:03d}", "note": "a \\"quiet\\" room"}}' for i in range(n))
    return "\n".join(f"{step} line {i:03d} ".ljust(width, ".") for i in range(n))


def chat(turns: int, *, size: int = 3, usage: list[int] | None = None) -> list[Msg]:
    """``turns`` invocations of a question answered in text (answers of ``size`` sentences)."""
    msgs: list[Msg] = []
    for k in range(turns):
        msgs.append(user(TASK if k == 0 else f"Question {k}: what about day {k}?", f"u{k}"))
        u = usage[k] if usage else None
        msgs.append(assistant(f"Answer {k}: " + "Visit the temples early in the morning. " * size, f"a{k}", usage=u))
    return msgs


def agent(
    turns: int,
    steps: int = 1,
    *,
    out: int = 10,
    batch: int = 1,
    usage: list[int] | None = None,
    split: bool = False,
    quoted: bool = False,
) -> list[Msg]:
    """``turns`` invocations, each a user message, ``steps`` rounds of an assistant message calling ``batch`` tools
    and one tool event with their responses (``out`` lines each; one event per response with ``split``), then an
    answer. ``usage`` gives the prompt token count of each model call in order (none when unset)."""
    msgs: list[Msg] = []
    calls_made = 0
    for k in range(turns):
        msgs.append(user(TASK if k == 0 else f"Now look at option {k}.", f"u{k}"))
        for s in range(steps):
            calls = [
                {"id": f"c{k}_{s}_{j}", "name": "search", "args": f'{{"query": "kyoto {k} {s} {j}"}}'}
                for j in range(batch)
            ]
            u = usage[calls_made] if usage and calls_made < len(usage) else None
            calls_made += 1
            msgs.append(assistant(f"Searching ({k}.{s}).", f"a{k}_{s}", calls, usage=u))
            results = [
                {"call_id": c["id"], "name": "search", "text": lines(f"r{k}.{s}.{j}", out, quoted=quoted)}
                for j, c in enumerate(calls)
            ]
            if split:
                msgs.extend(tool(f"t{k}_{s}_{j}", [r]) for j, r in enumerate(results))
            else:
                msgs.append(tool(f"t{k}_{s}", results))
        u = usage[calls_made] if usage and calls_made < len(usage) else None
        calls_made += 1
        msgs.append(assistant(f"Option {k} fits the budget.", f"d{k}", usage=u))
    return msgs


def case(name: str, kind: str, msgs: list[Msg], **settings: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "input": msgs, "settings": settings}


def closing(msgs: list[Msg], k: int = 99) -> list[Msg]:
    """``msgs`` and one more user message with its answer: the post-invocation compaction of the last invocation
    runs before it, and its model call shows the result."""
    return [*msgs, user(f"Thanks, one last thing ({k}).", f"u{k}"), assistant("You are welcome.", f"a{k}")]


HIGH = 50_000  # a reported prompt well over the token cases' thresholds
LOW = 10  # well under

CASES: list[dict[str, Any]] = [
    # -- sliding window ---------------------------------------------------------------------------------------
    case("sliding-below-interval", "sliding", closing(chat(2), 9), compaction_interval=3, overlap_size=1),
    case("sliding-at-interval", "sliding", closing(chat(3), 9), compaction_interval=3, overlap_size=1),
    case("sliding-docs-example-2-1", "sliding", closing(chat(4), 9), compaction_interval=2, overlap_size=1),
    case("sliding-overlap-chain", "sliding", closing(chat(9), 19), compaction_interval=3, overlap_size=1),
    case("sliding-no-overlap", "sliding", closing(chat(7), 19), compaction_interval=2, overlap_size=0),
    case("sliding-overlap-2", "sliding", closing(chat(8), 19), compaction_interval=2, overlap_size=2),
    case("sliding-interval-1-overlap-1", "sliding", closing(chat(5), 19), compaction_interval=1, overlap_size=1),
    case("sliding-interval-1-overlap-0", "sliding", closing(chat(4), 19), compaction_interval=1, overlap_size=0),
    case("sliding-overlap-past-interval", "sliding", closing(chat(7), 19), compaction_interval=2, overlap_size=3),
    case("sliding-tool-invocations", "sliding", closing(agent(4, 2)), compaction_interval=2, overlap_size=1),
    case("sliding-parallel-calls", "sliding", closing(agent(3, 1, batch=3)), compaction_interval=3, overlap_size=1),
    case(
        "sliding-not-worth-it",
        "sliding",
        closing(chat(6, size=1), 19),
        compaction_interval=2,
        overlap_size=1,
        summary_chars=1_000,
    ),
    case(
        "sliding-worth-it-long-summary",
        "sliding",
        closing(chat(6, size=40), 19),
        compaction_interval=2,
        overlap_size=1,
        summary_chars=1_000,
    ),
    # -- token threshold --------------------------------------------------------------------------------------
    case(
        "token-below-threshold",
        "token",
        closing(agent(3, 2, usage=[LOW] * 20)),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    case(
        "token-over-at-first-call",
        "token",
        closing(agent(2, 2, usage=[LOW, HIGH, LOW, LOW, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    case(
        "token-at-threshold",
        "token",
        closing(agent(2, 2, usage=[LOW, 1_000, LOW, LOW, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    case(
        "token-just-below-threshold",
        "token",
        closing(agent(2, 2, usage=[LOW, 999, LOW, LOW, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    case(
        "token-retention-zero",
        "token",
        closing(agent(2, 2, usage=[LOW, LOW, HIGH, LOW, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=0,
    ),
    case(
        "token-retention-moves-split",
        "token",
        closing(agent(2, 3, usage=[LOW, LOW, LOW, HIGH, LOW, LOW, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    case(
        "token-retention-covers-all",
        "token",
        closing(agent(1, 2, usage=[HIGH, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=10,
    ),
    case(
        "token-rolling-seed",
        "token",
        closing(agent(3, 2, usage=[LOW, HIGH, LOW, LOW, HIGH, LOW, LOW, HIGH, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    case(
        "token-post-invocation",
        "token",
        closing(agent(2, 1, usage=[LOW, HIGH, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=1,
    ),
    case(
        "token-parallel-batch",
        "token",
        closing(agent(2, 2, batch=3, usage=[LOW, LOW, HIGH, LOW, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=4,
    ),
    case(
        "token-estimate-without-usage",
        "token",
        closing(agent(2, 2, out=40)),
        token_threshold=600,
        event_retention_size=3,
    ),
    case(
        "token-batch-split-over-events",
        "token",
        closing(agent(2, 1, batch=3, split=True, usage=[LOW, HIGH, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
    ),
    # The estimate counts ``json.dumps`` of each response: quoted, many-line outputs count over their raw characters
    # (before the closing turn raw chars/4 would be 715, under the threshold; ADK's estimate is 884).
    case(
        "token-estimate-counts-json",
        "token",
        closing(agent(2, 2, out=12, quoted=True)),
        token_threshold=800,
        event_retention_size=3,
    ),
    # The post-invocation check runs before the next user message is appended: its estimate leaves that long message
    # out and stays under the threshold; the request processor, with it, compacts before the model call.
    case(
        "token-post-invocation-estimate-without-the-new-message",
        "token",
        [
            *chat(3),
            user("Compare the two ryokan we liked, with prices and the walk to the station. " * 6, "u9"),
            assistant("Here is the comparison.", "a9"),
        ],
        token_threshold=200,
        event_retention_size=1,
    ),
    # -- both pairs: the token trigger first, then the sliding window -----------------------------------------
    # After the post-invocation sliding compaction no count is reported yet, so the request processor estimates
    # before the next model call, still over the threshold with the new long message, and compacts a second time.
    case(
        "both-second-compaction-before-the-same-call",
        "both",
        [*chat(2), user("Compare the two ryokan we liked, with prices. " * 9, "u9"), assistant("Compared.", "a9")],
        token_threshold=100,
        event_retention_size=0,
        compaction_interval=2,
        overlap_size=0,
    ),
    case(
        "both-token-wins",
        "both",
        closing(agent(3, 1, usage=[LOW, LOW, LOW, HIGH, LOW, LOW])),
        token_threshold=1_000,
        event_retention_size=2,
        compaction_interval=3,
        overlap_size=1,
    ),
    case(
        "both-sliding-then-token",
        "both",
        closing(agent(5, 1, usage=[LOW] * 8 + [HIGH] + [LOW] * 6)),
        token_threshold=1_000,
        event_retention_size=2,
        compaction_interval=2,
        overlap_size=1,
    ),
    case(
        "both-sliding-when-under",
        "both",
        closing(agent(4, 1, usage=[LOW] * 12)),
        token_threshold=1_000,
        event_retention_size=2,
        compaction_interval=2,
        overlap_size=1,
    ),
]
