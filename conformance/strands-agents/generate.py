"""Run Strands Agents' own conversation managers on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/strands-agents`` (``requirements.txt``), never in the project's environment. Each case's
history becomes Strands messages (a tool message's results one user message of ``toolResult`` blocks), held by a
stand-in agent that has only ``messages``; then ``apply_management(agent)`` (the end of an invocation) or
``reduce_context(agent, e=ContextWindowOverflowException())`` runs. No model: the summarising manager's
``_generate_summary`` is replaced by a stand-in that writes ``SUMMARY`` (the manager's own code still picks the
messages and places the summary). Recorded: the messages left (their ids; ``summary`` for the summary) and which had
tool results truncated. Writes ``tests/golden/conformance/strands-agents.json``.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager
from strands.types.exceptions import ContextWindowOverflowException

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "strands-agents.json"


class Agent:
    """The part of an agent the managers touch."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages


def to_strands(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in msgs:
        if m["role"] == "user":
            out.append({"cid": m["id"], "role": "user", "content": [{"text": m["text"]}]})
        elif m["role"] == "assistant":
            content: list[dict[str, Any]] = [{"text": m["text"]}] if m["text"] else []
            content += [
                {"toolUse": {"toolUseId": c["id"], "name": c["name"], "input": json.loads(c["args"])}}
                for c in m["calls"]
            ]
            out.append({"cid": m["id"], "role": "assistant", "content": content})
        else:
            blocks = [
                {"toolResult": {"toolUseId": r["call_id"], "status": "success", "content": [{"text": r["text"]}]}}
                for r in m["results"]
            ]
            out.append({"cid": m["id"], "role": "user", "content": blocks})
    return out


def run(case: dict[str, Any]) -> dict[str, Any]:
    agent = Agent(to_strands(case["input"]))
    if case["manager"] == "sliding":
        manager: Any = SlidingWindowConversationManager(**case["settings"])
    else:
        manager = SummarizingConversationManager(**case["settings"])
        manager._generate_summary = lambda messages, agent: {
            "cid": "summary",
            "role": "user",
            "content": [{"text": "SUMMARY"}],
        }
    error = None
    try:
        if case["point"] == "after-invocation":
            manager.apply_management(agent)
        else:
            manager.reduce_context(agent, e=ContextWindowOverflowException("too long"))
    except ContextWindowOverflowException as exc:
        error = str(exc)
    truncated = [
        m["cid"]
        for m in agent.messages
        if any(
            "toolResult" in b and "... [truncated:" in b["toolResult"]["content"][0].get("text", "")
            for b in m["content"]
        )
    ]
    return {"messages": [m["cid"] for m in agent.messages], "truncated": truncated, "error": error}


def long_runs() -> list[dict[str, Any]]:
    """Each long conversation through an agent's history with the default sliding window: after every invocation
    (before each user message after the first) ``apply_management``; the first message it left, each time."""
    out = []
    for conv in load():
        manager = SlidingWindowConversationManager()
        agent = Agent([])
        decisions = []
        msgs: list[dict[str, Any]] = []  # a batch's results one message, as the agent stores them
        for m in conv["messages"]:
            if m["role"] == "tool" and msgs and msgs[-1]["role"] == "tool":
                msgs[-1] = {**msgs[-1], "results": msgs[-1]["results"] + m["results"]}
            else:
                msgs.append(m)
        for k, m in enumerate(msgs):
            if m["role"] == "user" and k > 0:
                manager.apply_management(agent)
                decisions.append({"at": m["id"], "first": agent.messages[0]["cid"] if agent.messages else None})
            agent.messages.extend(to_strands([m]))
        out.append({"conversation": conv["name"], "decisions": decisions})
    return out


def main() -> None:
    out = [{**case, "expected": run(case)} for case in CASES]
    golden = {"package": "strands-agents", "version": version("strands-agents"), "cases": out, "long": long_runs()}
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN}")


if __name__ == "__main__":
    main()
