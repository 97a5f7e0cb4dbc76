"""Scripted runs for Mastra's ``ObservationalMemory`` (npm ``@mastra/memory``): plain data, no import of ``sim`` or
``policies``.

A run is a conversation in the conformance cases' neutral form (``conformance/ai/cases.py``: ``user`` and ``assistant``
messages, an assistant's ``calls``, a ``tool`` message's ``results``) replayed model call by model call: before each
assistant message, Mastra is asked on the messages before it. ``settings``: ``messageTokens`` (the Observer's
threshold), ``observationTokens`` (the Reflector's) and ``observation_words`` (the length of each canned observation the
stub model returns, so the observations grow towards the Reflector's threshold).
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]

TASK = "The nightly export job drops rows for tenants with a trailing space in their name. Find out why and fix it."


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def assistant(text: str, id: str, calls: list[Msg] | None = None) -> Msg:
    return {"id": id, "role": "assistant", "text": text, "calls": calls or []}


def call(id: str, name: str = "read") -> Msg:
    return {"id": id, "name": name, "args": f'{{"path": "src/export/{id}.py"}}'}


def results(id: str, *calls: Msg, size: int = 400) -> Msg:
    line = "def export_rows(tenant, rows):  # strips names before the join\n"
    return {
        "id": id,
        "role": "tool",
        "results": [
            {"call_id": c["id"], "name": c["name"], "text": (line * (size // len(line) + 1))[:size]} for c in calls
        ],
    }


def chat(turns: int, *, words: int = 60) -> list[Msg]:
    """``turns`` exchanges without tools: a user message of ``words`` words and a reply of as many."""
    out: list[Msg] = []
    for t in range(turns):
        out.append(user(f"turn {t}: " + "please check the tenant names again " * (words // 6), f"u{t}"))
        out.append(assistant(f"reply {t}: " + "the names are trimmed in the loader " * (words // 6), f"a{t}"))
    return out


def tool_turns(turns: int, steps: int, *, size: int = 400, batch: int = 1) -> list[Msg]:
    """``turns`` user turns of ``steps`` tool steps each (``batch`` calls a step, results of ``size`` characters), each
    closed by an answer."""
    out: list[Msg] = []
    for t in range(turns):
        out.append(user(TASK if t == 0 else f"Now look at part {t} of the job.", f"u{t}"))
        for s in range(steps):
            calls = [call(f"c{t}_{s}_{b}") for b in range(batch)]
            out.append(assistant(f"Reading part {t}.{s}.", f"a{t}_{s}", calls))
            out.append(results(f"r{t}_{s}", *calls, size=size))
        out.append(assistant(f"Part {t} is done.", f"a{t}_end"))
    return out


def run(name: str, messages: list[Msg], message_tokens: int, observation_tokens: int = 100_000, words: int = 30) -> Msg:
    settings = {"messageTokens": message_tokens, "observationTokens": observation_tokens, "observation_words": words}
    return {"name": name, "messages": messages, "settings": settings}


CASES: list[Msg] = [
    run("chat-under-threshold", chat(6), 100_000),
    run("chat-observes-before-live-turn", chat(12), 300),
    run("chat-small-threshold", chat(20, words=30), 120),
    run("chat-reflects", chat(30), 250, observation_tokens=120, words=40),
    run("tool-loop-one-turn", tool_turns(1, 12), 500),
    run("tool-turns", tool_turns(5, 3), 700),
    run("tool-turns-parallel", tool_turns(4, 3, batch=3, size=200), 700),
    run("large-result", tool_turns(3, 2, size=6_000), 1_000),
    run("large-result-live-turn", tool_turns(2, 4, size=3_000), 1_200),
    run("tool-turns-reflect", tool_turns(8, 2), 600, observation_tokens=150, words=50),
]
