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
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from aider import prompts
from aider.history import ChatSummary

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES  # noqa: E402

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


def main() -> None:
    out = [{**case, "expected": run(case)} for case in CASES]
    golden = {"package": "aider-chat", "version": version("aider-chat"), "cases": out}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (aider-chat {golden['version']})")


if __name__ == "__main__":
    main()
