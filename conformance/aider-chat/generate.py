"""Run Aider's own ``ChatSummary.summarize`` (``aider/history.py``) on every case of ``cases.py`` and write the golden
file.

Runs in ``.venv-conformance/aider-chat`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/aider-chat/bin/python conformance/aider-chat/generate.py

``ChatSummary`` needs a model: Aider ships no fake one, so ``StandInModel`` is a minimal offline stand-in with the
four things ``ChatSummary`` uses (``token_count``, ``info``, ``simple_send_with_retries``, ``name``): it reports each
message's scripted token count (a summary message: the case's ``summary_tokens``), answers every summary request
with a fixed text and records which messages it was shown. No network, no tokenizer.

Writes ``tests/golden/conformance/aider-chat.json``.
"""

from __future__ import annotations

import json
import math
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from aider import prompts
from aider.history import ChatSummary

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "aider-chat.json"
FAKE_SUMMARY = "I asked you about FAKE SUMMARY."


class StandInModel:
    name = "stand-in"

    def __init__(self, sizes: dict[str, int], summary_tokens: int, max_input_tokens: int) -> None:
        self.sizes = sizes
        self.summary_tokens = summary_tokens
        self.info = {"max_input_tokens": max_input_tokens}
        self.calls: list[list[str]] = []

    def token_count(self, messages: Any) -> int:
        if isinstance(messages, list):
            return sum(self.token_count(m) for m in messages)
        content = messages["content"]
        if content.startswith(prompts.summary_prefix):
            return self.summary_tokens
        return self.sizes[content]

    def simple_send_with_retries(self, messages: list[dict[str, str]]) -> str:
        shown = messages[1]["content"]  # "# USER\n<content>\n# ASSISTANT\n..." of the head
        self.calls.append([line for line in shown.splitlines() if not line.startswith("# ")])
        return FAKE_SUMMARY


def run(case: dict[str, Any]) -> dict[str, Any]:
    settings = case["settings"]
    done = [{"role": m["role"], "content": m["id"]} for m in case["input"]]
    sizes = {m["id"]: m["tokens"] for m in case["input"]}
    model = StandInModel(sizes, settings["summary_tokens"], settings["max_input_tokens"])
    summarizer = ChatSummary([model], settings["max_tokens"])
    triggered = summarizer.too_big(done)
    result = summarizer.summarize(done) if triggered else done
    kept: list[str] = []
    for m in result:
        if m["content"].startswith(prompts.summary_prefix):
            kept.append("SUMMARY " + m["role"])
        elif m["content"] == "Ok." and m["role"] == "assistant":
            kept.append("OK")
        else:
            kept.append(m["content"])
    return {"triggered": triggered, "kept": kept, "summariser_calls": model.calls}


# -- long conversations (conformance/long/): summarize at every user turn, on Aider's own done_messages -----------
MESSAGE_OVERHEAD, PART_OVERHEAD = 4, 3  # the engine's framing (sim.core.model)
OK = "Ok."


def q(text: str) -> int:
    """The engine's ``chars4`` count of a text."""
    return math.ceil(len(text) / 4)


def engine_tokens(m: dict[str, Any]) -> int:
    """The engine's count of a neutral message, framing included (the stand-in reports it as the message's size)."""
    if m["role"] == "user":
        parts = q(m["text"])
    elif m["role"] == "assistant":
        parts = q(m["text"]) + sum(PART_OVERHEAD + q(c["name"]) + q(c["args"]) for c in m["calls"])
    else:
        parts = sum(PART_OVERHEAD + q(r["text"]) + q(r["name"]) for r in m["results"])
    return MESSAGE_OVERHEAD + parts


def long_run(conv: dict[str, Any]) -> dict[str, Any]:
    """The conversation's messages through Aider's ``done_messages``, one message each (a tool message keeps its role:
    ``summarize_real`` looks only at roles and sizes, ``summarize_all`` skips what is neither user nor assistant).
    Before each user message but the first (the exchange before it done, ``summarize_end`` applying what
    ``summarize_start`` made of it), ``too_big`` and then ``summarize``; the result replaces ``done_messages``. The
    stand-in reports each message's size as the engine counts it, a summary message's as the engine counts the
    summary the fake writes, and "Ok." as one more message; ``max_chat_history_tokens`` is a quarter of the whole
    conversation's count."""
    msgs = conv["messages"]
    sizes = {m["id"]: engine_tokens(m) for m in msgs}
    sizes[OK] = MESSAGE_OVERHEAD + q(OK)
    summary_tokens = MESSAGE_OVERHEAD + q(prompts.summary_prefix + FAKE_SUMMARY)
    max_tokens = sum(sizes[m["id"]] for m in msgs) // 4
    model = StandInModel(sizes, summary_tokens, 200_000)
    summarizer = ChatSummary([model], max_tokens)
    done: list[dict[str, str]] = []
    decisions = []
    for k, m in enumerate(msgs):
        if m["role"] == "user" and k > 0:
            triggered = summarizer.too_big(done)
            kept = None
            if triggered:
                done = summarizer.summarize(done)
                assert done[0]["content"].startswith(prompts.summary_prefix)
                kept = " ".join("OK" if x["content"] == OK else x["content"] for x in done[1:])
            decisions.append({"at": m["id"], "triggered": triggered, "kept": kept})
        done.append({"role": m["role"], "content": m["id"]})
    return {
        "conversation": conv["name"],
        "max_tokens": max_tokens,
        "summary_tokens": summary_tokens,
        "fake_summary": FAKE_SUMMARY,
        "decisions": decisions,
    }


def main() -> None:
    out = [{**case, "expected": run(case)} for case in CASES]
    long = [long_run(conv) for conv in load()]
    golden = {"package": "aider-chat", "version": version("aider-chat"), "cases": out, "long": long}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (aider-chat {golden['version']})")


if __name__ == "__main__":
    main()
