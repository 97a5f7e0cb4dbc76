"""Scripted event lists for the OpenHands SDK's ``LLMSummarizingCondenser`` (plain data, no project imports).

Each case is a list of messages in a neutral form and the condenser's settings; the real function is called
once, after the last message, as the agent calls it before its next LLM call (``condense(view, agent_llm)``).

Messages: ``{"id", "role": "system" | "user" | "assistant" | "tool", ...}``; a user or system message has
``text``; an assistant message ``text``, optional ``thinking`` and ``calls`` (``[{"id", "name", "args"}]``, one
OpenHands action event each, one LLM response); a tool message ``results`` (``[{"id", "name", "text"}]``, one
observation event each). Event ids: the message id for a one-event message, ``<id>.<k>`` for the k-th action or
observation of a message with several.

Settings: the condenser's fields (``max_size``, ``keep_first``, ``max_tokens``, ``minimum_progress``),
``request`` (an unhandled ``CondensationRequest`` is in the history), and ``prior`` (an earlier condensation:
the ids of the messages it forgot and where its summary went, ``{"forgot": [...], "offset": k}``).
"""

from __future__ import annotations

from typing import Any

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]


def text(n_words: int, seed: int) -> str:
    """Deterministic filler text of ``n_words`` words (varied, so a tokenizer cannot merge it into a few tokens)."""
    return " ".join(f"{WORDS[(seed * 7 + i * 3) % len(WORDS)]}{(seed + i) % 97}" for i in range(n_words))


def system() -> dict[str, Any]:
    return {"id": "m0", "role": "system", "text": "You are a coding agent."}


def user(i: int, words: int = 4) -> dict[str, Any]:
    return {"id": f"m{i}", "role": "user", "text": text(words, i)}


def say(i: int, words: int = 6) -> dict[str, Any]:
    return {"id": f"m{i}", "role": "assistant", "text": text(words, i), "calls": []}


def act(i: int, calls: list[str], thinking: str | None = None, name: str = "terminal") -> dict[str, Any]:
    return {
        "id": f"m{i}",
        "role": "assistant",
        "text": text(3, i),
        "thinking": thinking,
        "calls": [{"id": c, "name": name, "args": '{"command": "ls"}'} for c in calls],
    }


def obs(i: int, calls: list[str], words: int = 8, name: str = "terminal") -> dict[str, Any]:
    return {"id": f"m{i}", "role": "tool", "results": [{"id": c, "name": name, "text": text(words, i)} for c in calls]}


def pairs(start: int, count: int, words: int = 8, thinking_first: bool = False) -> list[dict[str, Any]]:
    """``count`` single calls with their results, messages ``m<start>`` on (two events each)."""
    out: list[dict[str, Any]] = []
    for k in range(count):
        i = start + 2 * k
        call = f"c{i}"
        out.append(act(i, [call], thinking="plan the loop" if thinking_first and k == 0 else None))
        out.append(obs(i + 1, [call], words))
    return out


def settings(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "max_size": 240,
        "keep_first": 2,
        "max_tokens": None,
        "minimum_progress": 0.1,
        "request": False,
        "prior": None,
    }
    base.update(kw)
    return base


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def add(name: str, messages: list[dict[str, Any]], **kw: Any) -> None:
        cases.append({"name": name, "input": messages, "settings": settings(**kw)})

    # Event-count trigger (soft).
    add("events-at-max-size", [system(), user(1), *pairs(2, 4)], max_size=10)
    add("events-one-over-max-size", [system(), user(1), *pairs(2, 4), say(10)], max_size=10)
    add("events-over-max-size", [system(), user(1), *pairs(2, 5)], max_size=10)
    add("events-default-agent-80-4", [system(), user(1), *pairs(2, 40)], max_size=80, keep_first=4)
    add("events-keep-first-0-keeps-system", [system(), user(1), *pairs(2, 6)], max_size=10, keep_first=0)
    add(
        "events-tail-end-inside-batch",
        [system(), user(1), *pairs(2, 3), act(8, ["b1", "b2", "b3"]), obs(9, ["b1", "b2", "b3"]), *pairs(10, 1)],
        max_size=10,
    )
    add(
        "events-head-inside-batch",
        [system(), user(1), act(2, ["h1", "h2"]), obs(3, ["h1", "h2"]), *pairs(4, 5)],
        max_size=12,
        keep_first=3,
    )
    add(
        "events-tail-end-inside-thinking-loop",
        [system(), user(1), *pairs(2, 2), *pairs(6, 3, thinking_first=True), user(12), *pairs(13, 1)],
        max_size=14,
    )
    add(
        "events-open-thinking-loop-at-the-end",
        [system(), user(1), *pairs(2, 1), *pairs(4, 5, thinking_first=True)],
        max_size=10,
    )
    add(
        "events-long-live-turn-loses-last-user-message",
        [system(), user(1), user(2), *pairs(3, 6)],
        max_size=10,
    )
    add(
        "events-minimum-progress-refused-soft",
        [system(), user(1), *pairs(2, 5)],
        max_size=10,
        minimum_progress=0.9,
    )
    # Condensation requests (hard).
    add("request-keeps-half", [system(), user(1), *pairs(2, 10)], request=True)
    add("request-with-events", [system(), user(1), *pairs(2, 10)], max_size=20, request=True)
    add(
        "request-minimum-progress-hard-reset",
        [system(), user(1), *pairs(2, 5)],
        max_size=10,
        minimum_progress=0.9,
        request=True,
    )
    add("request-too-short-hard-reset", [system(), user(1), *pairs(2, 3)], max_size=80, keep_first=4, request=True)
    add("request-short-view", [system(), user(1), *pairs(2, 2)], request=True)
    # A view that already holds a summary: the next condensation forgets it with its span (merge).
    add(
        "prior-summary-forgotten-and-merged",
        [system(), user(1), *pairs(2, 10)],
        max_size=10,
        prior={"forgot": [f"m{i}" for i in range(2, 10)], "offset": 2},
    )
    add(
        "prior-summary-under-max-size",
        [system(), user(1), *pairs(2, 6)],
        max_size=10,
        prior={"forgot": [f"m{i}" for i in range(2, 8)], "offset": 2},
    )
    # Token trigger (hard): the view's tokens over max_tokens, condensed to half of it.
    add("tokens-over-limit", [system(), user(1), *pairs(2, 10, words=300)], max_tokens=6000)
    add("tokens-under-limit", [system(), user(1), *pairs(2, 10, words=300)], max_tokens=60000)
    add("tokens-and-events", [system(), user(1), *pairs(2, 12, words=150)], max_size=20, max_tokens=5000)
    return cases


CASES = _cases()
