"""Run LangMem's own ``summarize_messages`` on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/langmem`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/langmem/bin/python conformance/langmem/generate.py

Offline: the summariser is ``langchain_core``'s ``FakeListChatModel`` (it answers "summary of the new messages"),
and the token counter is a function that counts what the policy counts: per message, a quarter of its characters
(its content, plus each tool call's name and ``json.dumps`` of its arguments) rounded up, and 3 more, as
``count_tokens_approximately`` does without the role names and the calls' framing. Writes
``tests/golden/conformance/langmem.json``: per case the messages returned for the LLM, in order (the ids; ``SUMMARY``
for a new summary message, ``summary`` for the running one passed in) and whether the model was called.
"""

from __future__ import annotations

import json
import math
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langmem.short_term import RunningSummary, summarize_messages

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "langmem.json"


def count(messages: Any) -> int:
    total = 0
    for m in messages:
        chars = len(m.content) if isinstance(m.content, str) else 0
        if isinstance(m, AIMessage):
            chars += sum(len(tc["name"]) + len(json.dumps(tc["args"])) for tc in m.tool_calls)
        total += math.ceil(chars / 4) + 3
    return total


def to_langchain(msgs: list[dict[str, Any]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in msgs:
        if m["role"] == "system":
            out.append(SystemMessage(content=m["text"], id=m["id"]))
        elif m["role"] == "user":
            out.append(HumanMessage(content=m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            calls = [{"id": c["id"], "name": c["name"], "args": json.loads(c["args"])} for c in m["calls"]]
            out.append(AIMessage(content=m["text"], tool_calls=calls, id=m["id"]))
        else:
            (r,) = m["results"]
            out.append(ToolMessage(content=r["text"], tool_call_id=r["call_id"], name=r["name"], id=m["id"]))
    return out


class CountingFake(FakeListChatModel):
    calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        return super()._call(*args, **kwargs)


def run(case: dict[str, Any]) -> dict[str, Any]:
    messages = to_langchain(case["input"])
    running = None
    if case["summarised_through"]:
        ids = [m.id for m in messages if not isinstance(m, SystemMessage)]
        done = ids[: ids.index(case["summarised_through"]) + 1]
        running = RunningSummary(case["summary"], set(done), case["summarised_through"])
    model = CountingFake(responses=["summary of the new messages"])
    result = summarize_messages(messages, running_summary=running, model=model, token_counter=count, **case["settings"])
    view = []
    for m in result.messages:
        if m.id is not None:
            view.append(m.id)
        else:
            view.append("SUMMARY" if model.calls else "summary")
    return {"view": view, "summarised": model.calls > 0}


def main() -> None:
    out = [{**case, "expected": run(case)} for case in CASES]
    golden = {"package": "langmem", "version": version("langmem"), "cases": out}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (langmem {golden['version']})")


if __name__ == "__main__":
    main()
