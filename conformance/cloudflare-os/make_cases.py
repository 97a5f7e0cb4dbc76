"""The inputs the cloudflare-os generator hands to Workshop's real TypeScript: built by the project (run with the
project's Python; ``generate.py`` does), printed as one JSON object on stdout.

* ``weights``: message shapes (each role, thinking, calls, results, escapes, astral characters), for
  ``projectionMessageWeight``; ``summary_texts`` for the summary message's weight;
* ``conversations`` and ``decisions``: generated conversations replayed under ``cloudflare-os`` (the port) in the
  windows of ``WINDOWS``; at every decision Workshop would make (the pre-turn check of each turn, again after each
  automatic compaction, and each ``/compact``) the state the port decided on: how many log messages, the view (where
  it starts, its summary), the last step's usage and whether the view changed since; and at each pre-turn check a
  probe (``probe``): the decision ``/compact`` would make on the same state. A decision the port answers
  with a rollback (``rollbackChatCompaction``, overseer.ts, not under test here) is left out.

Usage: ``python conformance/cloudflare-os/make_cases.py [--large]``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from policies.cloudflare_os import PI_API, TIMESTAMP, CloudflareOS
from policies.helpers import rollback_target
from sim.core.conversation import Conversation, Message, Part
from sim.core.model import DEFAULT_MODEL, ModelConfig
from sim.core.state import RunState
from sim.replay.engine import Engine, RunConfig
from sim.scenarios import generate
from tests.conformance.seed_cases import neutral

# (scenario, parameters, windows, seeds for the golden file): Workshop decides once per turn, so the scenarios with
# many turns give the decisions; coding-agent brings the tool loops, thinking, reverts, approvals and /compact.
SCENARIOS: list[tuple[str, dict[str, Any], tuple[int, ...], int]] = [
    ("coding-agent", {"turns": 40, "huge_tokens": 2000}, (9_000, 13_000, 17_000, 25_000), 2),
    ("support-chat", {"turns": 100}, (5_000, 7_000, 9_000, 13_000), 3),
]
RESERVE = 1_000
MODEL = {"api": PI_API["anthropic"], "provider": "anthropic", "id": DEFAULT_MODEL}


def snapshot(state: RunState, trigger: str, summaries: list[str]) -> dict[str, Any]:
    view = state.view
    summary: int | None = None
    if view.summary is not None:
        if view.summary.text not in summaries:
            summaries.append(view.summary.text)
        summary = summaries.index(view.summary.text)
    anchored = state.last_input_tokens is not None and not state.view_changed_since_request
    out: dict[str, Any] = {"n": len(state), "trigger": trigger, "start": view.start}
    if summary is not None:
        out["summary"] = summary
    if anchored:  # else no measured total: runAgent's whole-projection estimate
        out.update(
            last_input=state.last_input_tokens,
            last_output=state.last_output_tokens or 0,
            last_request_at=state.messages_at_last_request,
        )
    return out


def replay(conv: Conversation, window: int, summaries: list[str]) -> tuple[list[Message], list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    class Spy(CloudflareOS):
        def decide(self, state, trigger):  # type: ignore[no-untyped-def]
            asked = trigger == "manual" or (trigger == "auto" and self._starts_turn(state))
            if asked and rollback_target(state) is None:
                seen.append(snapshot(state, trigger, summaries))
                if trigger == "auto":  # a probe: what /compact would decide on this state (isCompactionTurn)
                    seen.append({**snapshot(state, "manual", summaries), "probe": True})
            return super().decide(state, trigger)

    eng = Engine(Spy(), conv, RunConfig(model=ModelConfig(context_window=window, output_reserve=RESERVE)))
    eng.run()
    return list(eng.ledger.messages), seen


def shapes() -> list[dict[str, Any]]:
    hard = 'quote " backslash \\ newline\n tab\t bell\x07 é 中文 😀 end'
    calls = (
        Part("tool_call", call_id="c1", name="readFile", args='{"workpiece": "app", "filename": "a.ts"}'),
        Part("tool_call", call_id="c2", name="executeCode", args='{"code": "x", "n": 1.0, "deep": {"k": [1e21]}}'),
    )
    msgs = [
        Message("u", "user", (Part("text", "Find where the config is loaded. " + hard),)),
        Message("a", "assistant", (Part("thinking", "plan " + hard), Part("text", "Reading two files."), *calls)),
        Message("t1", "tool", (Part("tool_result", hard, call_id="c1", name="readFile"),)),
        Message("t2", "tool", (Part("tool_result", "boom", call_id="c2", name="executeCode", is_error=True),)),
        Message("a2", "assistant", (Part("text", "Done."),)),
        Message("c", "user", (Part("command", "", name="compact"),)),
    ]
    return [{"name": "shapes", "messages": [neutral(m) for m in msgs]}]


def main() -> None:
    large = "--large" in sys.argv[1:]
    conversations: list[list[dict[str, Any]]] = []
    specs: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    summaries: list[str] = []
    for name, params, windows, count in SCENARIOS:
        for seed in range(30 if large else count):
            conv = generate(name, seed, **params)
            runs = [(window, *replay(conv, window, summaries)) for window in windows]
            longest = max((log for _, log, _ in runs), key=len)
            base = len(conversations)
            conversations.append([neutral(m) for m in longest])
            specs.append({"scenario": name, "seed": seed, "params": params})
            for window, log, seen in runs:
                at = base
                if log != longest[: len(log)]:
                    # A turn that overflowed failed and its messages were skipped (Workshop's overseer waits for
                    # the next user message): this window's log is not a prefix of the others, so it is its own.
                    at = len(conversations)
                    conversations.append([neutral(m) for m in log])
                    specs.append({"scenario": name, "seed": seed, "params": params, "window": window})
                decisions.extend({"conversation": at, "window": window, **d} for d in seen)
    json.dump(
        {
            "timestamp": TIMESTAMP,
            "reserve": RESERVE,
            "model": MODEL,
            "weights": shapes(),
            "summary_texts": summaries[:5],
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
