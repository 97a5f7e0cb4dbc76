"""The inputs the effect-agent generator hands to the real TypeScript: built by the project (run with the project's
Python; ``generate.py`` does), printed as one JSON object on stdout.

* ``messages``: message shapes the tests build, for ``estimateMessageTokens`` (the JSON text Effect writes of each);
* ``bounds``: tool results, strings and JSON values, each with a byte bound, for ``applyToolResultBounds``;
* ``render``: covered spans with a previous summary, for ``renderForSummary`` (some over its 80,000 characters);
* ``conversations`` and ``decisions``: generated conversations replayed under ``effect-agent`` (the port) with the
  settings of ``configs``; at every decision the port makes (before each model call, and after each provider
  overflow) the state it decided on: how many log messages, the view (the summarised watermark, the clearing bound,
  the summary), the last call's usage and whether the view changed since. The real functions decide on the same
  state (``decide.mjs``), so each decision is compared on its own, whatever the port decided before it.

Usage: ``python conformance/effect-agent/make_cases.py [--large]``; ``--large`` replays many more conversations, for
measuring agreement (``tests/conformance/test_conformance_effect_agent.py``'s ``agreement``), not for the golden
file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

from policies.effect_agent import SUMMARY_WRAPPER, EffectAgent, EffectAgentConfig
from sim.core.conversation import Conversation, Message, Part
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay.engine import Engine, RunConfig
from sim.scenarios import generate
from tests.conformance.seed_cases import neutral, neutral_part

PREFIX = SUMMARY_WRAPPER.replace("{summary}", "")

# (scenario, parameters): small conversations, so that a few thousand decisions fit a golden file.
SCENARIOS: list[tuple[str, dict[str, Any]]] = [
    ("coding-agent", {"turns": 14, "huge_tokens": 3000}),
    ("research-agent", {"turns": 14, "result_tokens_median": 500, "huge_tokens": 3000}),
    ("support-chat", {"turns": 60}),
]
# (mode, context_token_limit, keep_recent_tokens, window): each mode, once with room and once with a window the
# limit does not fit (so the provider rejects requests: overflow decisions).
CONFIGS: list[tuple[str, int, int, int]] = [
    ("prune-then-summarize", 4_000, 1_500, 24_000),
    ("prune", 3_000, 1_000, 24_000),
    ("summarize", 5_000, 2_000, 24_000),
    ("prune-then-summarize", 9_000, 2_500, 6_000),
    ("prune", 7_000, 800, 6_000),
]


def snapshot(state: RunState, trigger: str, summaries: list[str]) -> dict[str, Any]:
    """The state of one decision; its summary text (unwrapped) is an index into ``summaries``."""
    view = state.view
    summary: int | None = None
    if view.summary is not None:
        text = view.summary.text
        text = text[len(PREFIX) :] if text.startswith(PREFIX) else text
        if text not in summaries:
            summaries.append(text)
        summary = summaries.index(text)
    anchored = state.last_input_tokens is not None and not state.view_changed_since_request
    out: dict[str, Any] = {
        "n": len(state),
        "trigger": trigger,
        "start": view.start,
        "pinned": [list(s) for s in view.spans],
        "cleared_through": view.cleared_through,
    }
    if summary is not None:
        out["summary"] = summary
    if anchored:  # else lastViewLength = -1: the whole view's estimate
        out.update(
            last_input=state.last_input_tokens,
            last_output=state.last_output_tokens or 0,
            last_request_at=state.messages_at_last_request,
        )
    return out


def replay(
    conv: Conversation, config: tuple[str, int, int, int], summaries: list[str]
) -> tuple[list[Message], list[dict[str, Any]]]:
    """The log of one run of the port and the state of each decision it made."""
    mode, limit, keep, window = config
    seen: list[dict[str, Any]] = []

    class Spy(EffectAgent):
        def decide(self, state, trigger):  # type: ignore[no-untyped-def]
            if trigger != "manual":
                seen.append(snapshot(state, trigger, summaries))
            return super().decide(state, trigger)

    policy = Spy(EffectAgentConfig(context_token_limit=limit, keep_recent_tokens=keep, mode=mode))  # type: ignore[arg-type]
    eng = Engine(policy, conv, RunConfig(model=ModelConfig(context_window=window, output_reserve=1_000)))
    eng.run()
    return list(eng.ledger.messages), seen


def shapes() -> list[dict[str, Any]]:
    """Messages of the shapes the tests build: each role, thinking, calls with numbers and nested arguments, string,
    error and JSON-valued results, envelopes, a parallel batch (two tool messages, one Prompt message), and text
    that JSON escapes (quotes, newlines, control characters, non-ASCII, astral characters)."""
    hard = 'quote " backslash \\ newline\n tab\t bell\x07 é 中文 😀 end'
    calls = (
        Part("tool_call", call_id="c1", name="read", args='{"path": "src/a.py", "lines": [1, 20]}'),
        Part("tool_call", call_id="c2", name="grep", args='{"pattern": "def \\\\w+", "max": 1.0, "deep": {"x": 1e21}}'),
    )
    env = '{"truncatedToolResult":true,"originalBytes":61234,"head":"\\"abc","tail":"xyz\\""}'
    msgs = [
        Message("s", "system", (Part("text", "You are a coding agent. " + hard),)),
        Message("u", "user", (Part("text", "Find where the config is loaded."),)),
        Message("u2", "user", (Part("text", hard),)),
        Message("a", "assistant", (Part("text", "I will look."),)),
        Message("a2", "assistant", (Part("thinking", "plan: " + hard), Part("text", "Reading two files."), *calls)),
        Message("a3", "assistant", calls[:1]),
        Message("t", "tool", (Part("tool_result", "abc", call_id="c1", name="read"),)),
        Message("t2", "tool", (Part("tool_result", hard, call_id="c2", name="grep", is_error=True),)),
        Message(
            "t3",
            "tool",
            (Part("tool_result", '{"b": 1, "10": [1.0, 2.5e-7], "a": null}', call_id="c1", name="read", is_json=True),),
        ),
        Message(
            "t4", "tool", (Part("tool_result", env, call_id="c1", name="read", original_bytes=61234, is_json=True),)
        ),
        Message("t5", "tool", (Part("tool_result", "[1, 2, 3]", call_id="c1", name="read", is_json=True),)),
    ]
    out = [{"name": m.id, "messages": [neutral(m)]} for m in msgs]
    batch = [msgs[6], replace(msgs[7], id="t2b")]
    out.append({"name": "batch", "messages": [neutral(m) for m in batch]})
    return out


def bounds() -> list[dict[str, Any]]:
    """Tool results around their bounds: strings (plain, escapes, multi-byte, astral) and JSON values (objects,
    arrays, numbers, nested), each at bounds below, at and above its encoding."""
    values: list[tuple[str, str, bool]] = [
        ("plain", "x" * 600, False),
        ("quotes", '"' * 200, False),
        ("multibyte", "é中😀" * 120, False),
        ("mixed", ('line "q" \\ é\n' * 80), False),
        ("object", json.dumps({"files": [f"src/m{i}.py" for i in range(60)], "count": 60, "ok": True}), True),
        ("array", json.dumps([{"n": i, "v": i / 3} for i in range(40)]), True),
        ("number", "12345678901234567890", True),
        ("keys", json.dumps({"b": "x" * 300, "2": "y" * 300, "1": ["z" * 50, 1.0, 1e21]}), True),
        ("nested", json.dumps({"a": {"b": {"c": ["é" * 100, {"d": "\u0001\u001f"}]}}, "e": "😀" * 80}), True),
    ]
    out = []
    for name, text, is_json in values:
        for max_bytes in (256, 300, 512, 1_024, 4_096):
            part = Part("tool_result", text, call_id="c", name="t", is_json=is_json)
            out.append({"name": f"{name}-{max_bytes}", "part": neutral_part(part), "max_bytes": max_bytes})
    return out


def renders() -> list[dict[str, Any]]:
    """Covered spans for ``renderForSummary``: short ones with each part kind, one with a previous summary, and long
    ones that go over its 80,000 characters (both ends kept, the middle elided)."""
    hard = 'quote " backslash \\ newline\n é 😀 ' + "w" * 2_100
    env = '{"truncatedToolResult":true,"originalBytes":61234,"head":"\\"abc","tail":"xyz\\""}'
    two = (
        Part("tool_call", call_id="c1", name="read", args='{"path": "src/a.py", "lines": [1, 20]}'),
        Part("tool_call", call_id="c2", name="grep", args=json.dumps({"pattern": "x" * 600, "max": 1.0})),
    )
    small = [
        neutral(m)
        for m in (
            Message("u", "user", (Part("text", "Find where the config is loaded."),)),
            Message("a", "assistant", (Part("thinking", "plan"), Part("text", "Reading two files."), *two)),
            Message("t1", "tool", (Part("tool_result", hard, call_id="c1", name="read"),)),
            Message("t2", "tool", (Part("tool_result", "no match", call_id="c2", name="grep", is_error=True),)),
            Message("u2", "user", (Part("text", hard),)),
            Message("a2", "assistant", (Part("tool_call", call_id="c3", name="ls", args="{}"),)),
            Message(
                "t3", "tool", (Part("tool_result", '{"b": 1, "10": [1.0]}', call_id="c3", name="ls", is_json=True),)
            ),
            Message("a3", "assistant", (Part("tool_call", call_id="c4", name="cat", args='{"f": "big"}'),)),
            Message(
                "t4", "tool", (Part("tool_result", env, call_id="c4", name="cat", original_bytes=61234, is_json=True),)
            ),
            Message("a4", "assistant", (Part("text", "Done."),)),
        )
    ]
    long_text = "r" * 2_100
    many: list[dict[str, Any]] = []
    for i in range(45):
        many.append(
            neutral(
                Message(
                    f"a{i}",
                    "assistant",
                    (
                        Part("text", f"step {i}"),
                        Part(
                            "tool_call",
                            call_id=f"c{i}",
                            name="read",
                            args=json.dumps({"path": f"f{i}.py", "pad": "p" * 550}),
                        ),
                    ),
                )
            )
        )
        many.append(
            neutral(
                Message(f"t{i}", "tool", (Part("tool_result", f"hit {i} " + long_text, call_id=f"c{i}", name="read"),))
            )
        )
    return [
        {"name": "small", "covered": small, "previous": None},
        {"name": "small-previous", "covered": small, "previous": "Goal: find the loader.\nProgress: read a.py."},
        {"name": "long", "covered": many, "previous": None},
        {"name": "long-previous", "covered": "long", "previous": "P" * 5_000},
        {
            "name": "empty-texts",
            "covered": [neutral(Message("x", "assistant", (Part("thinking", "only"),)))],
            "previous": None,
        },
    ]


def main() -> None:
    large = "--large" in sys.argv[1:]
    seeds = range(40) if large else range(3)
    conversations: list[list[dict[str, Any]]] = []
    specs: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    summaries: list[str] = []
    for name, params in SCENARIOS:
        for seed in seeds:
            conv = generate(name, seed, **params)
            logs = []
            for k, config in enumerate(CONFIGS):
                log, seen = replay(conv, config, summaries)
                logs.append(log)
                decisions.extend({"conversation": len(conversations), "config": k, **d} for d in seen)
            # A scripted run's log is the script with results bounded, cut short where the run ended: every run's
            # log is a prefix of the longest.
            longest = max(logs, key=len)
            assert all(log == longest[: len(log)] for log in logs), f"{name} seed {seed}: the runs' logs disagree"
            conversations.append([neutral(m) for m in longest])
            specs.append({"scenario": name, "seed": seed, "params": params})
    configs = [{"mode": m, "limit": lim, "keep": keep, "window": w} for m, lim, keep, w in CONFIGS]
    json.dump(
        {
            "messages": shapes(),
            "bounds": bounds(),
            "render": renders(),
            "configs": configs,
            "specs": specs,
            "conversations": conversations,
            "summaries": summaries,
            "decisions": decisions,
        },
        sys.stdout,
        ensure_ascii=False,
        separators=(",", ":"),
    )


if __name__ == "__main__":
    main()
