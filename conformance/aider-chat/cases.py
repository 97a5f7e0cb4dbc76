"""Scripted histories for Aider's ``ChatSummary.summarize`` (``aider/history.py``), in plain data.

Each case is a ``done_messages`` list: every message has an id, a role and the token count the stand-in model
reports for it (Aider counts the tokens of each message's JSON with the model's tokenizer; the stand-in makes the
counts exact and known). ``settings``: ``max_tokens`` (``max_chat_history_tokens``), ``summary_tokens`` (what the
stand-in reports for a summary message), ``max_input_tokens`` (the model's ``info``; the head is clipped to it less
512 for the summariser).
"""

from __future__ import annotations

from typing import Any


def msgs(spec: str, sizes: list[int]) -> list[dict[str, Any]]:
    """``spec``: one letter a message, ``u`` user, ``a`` assistant; ids ``m0``, ``m1``..."""
    roles = {"u": "user", "a": "assistant"}
    return [{"id": f"m{i}", "role": roles[r], "tokens": t} for i, (r, t) in enumerate(zip(spec, sizes, strict=True))]


def case(name: str, spec: str, sizes: list[int], max_tokens: int, summary_tokens: int = 50, max_input: int = 100_000):
    return {
        "name": name,
        "input": msgs(spec, sizes),
        "settings": {"max_tokens": max_tokens, "summary_tokens": summary_tokens, "max_input_tokens": max_input},
    }


CASES: list[dict[str, Any]] = [
    case("under-budget", "uaua", [100, 100, 100, 100], 1024),
    case("at-budget", "uaua", [256, 256, 256, 256], 1024),
    case("four-messages-over", "uaua", [300, 300, 300, 300], 1024),
    case("tail-under-half", "uauauaua", [200, 200, 200, 200, 200, 200, 200, 200], 1024),
    case("tail-exactly-half-is-not-under", "uauauaua", [200, 200, 200, 200, 200, 200, 256, 256], 1024),
    case("split-moves-to-assistant", "uauauauu", [200, 200, 200, 200, 200, 150, 150, 150], 1024),
    case("split-left-of-five-summarises-all", "uauauaua", [50, 50, 50, 50, 900, 100, 100, 100], 1024),
    case("long-history", "ua" * 12, [120] * 24, 1024),
    case("big-newest-message", "uauauaua", [100, 100, 100, 100, 100, 100, 100, 700], 1024),
    case("summary-too-big-recurses", "ua" * 10, [100] * 20, 1024, summary_tokens=700),
    case("summary-huge-recurses-to-the-end", "ua" * 10, [100] * 20, 1024, summary_tokens=1500),
    case("default-8k-budget", "ua" * 20, [500] * 40, 8192, summary_tokens=300),
    case("head-clipped-for-the-summariser", "ua" * 8, [400] * 16, 2048, max_input=2000),
    case("ends-on-user", "uauauau", [200, 200, 200, 200, 200, 200, 200], 1024),
    case("all-user", "uuuuuu", [300] * 6, 1024),
]
