"""Run LangMem's own ``summarize_messages`` on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/langmem`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/langmem/bin/python conformance/langmem/generate.py

Offline: the summariser is ``langchain_core``'s ``FakeListChatModel`` (it answers "summary of the new messages"),
and the token counter is a function that counts what the policy counts: per message, a quarter of its characters
(its content, plus each tool call's name and ``json.dumps`` of its arguments) rounded up, and 3 more, as
``count_tokens_approximately`` does without the role names and the calls' framing. Writes
``tests/golden/conformance/langmem.json``: per case the messages returned for the LLM, in order (the ids; ``SUMMARY``
for a new summary message, ``summary`` for the running one passed in) and whether the model was called; and ``long``:
every model call of each long conversation of ``conformance/long/`` (``long_run``).
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
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

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
            for j, r in enumerate(m["results"]):  # one ToolMessage per result, ids <id>.<j> for a batch's
                rid = m["id"] if len(m["results"]) == 1 else f"{m['id']}.{j}"
                out.append(ToolMessage(content=r["text"], tool_call_id=r["call_id"], name=r["name"], id=rid))
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


# -- long conversations (conformance/long/): every model call, decision by decision -------------------------------
def long_run(conv: dict[str, Any], divisor: int, before_divisor: int | None = None) -> dict[str, Any]:
    """``summarize_messages`` before each model call of a long conversation, as ``SummarizationNode`` calls it: on the
    graph's messages (the system prompt first, then every message so far, one ToolMessage per result) and the
    ``RunningSummary`` the previous calls left, carried as the node carries it in ``context``. ``max_tokens`` is the
    whole conversation's count over ``divisor``, ``max_tokens_before_summary`` its count over ``before_divisor`` (None:
    LangMem's default, ``max_tokens``); the counter is this file's ``count``. Recorded per call: whether the model was
    called, and the first message after the ones summarised so far (None: not summarised at this call)."""
    msgs = [SystemMessage(content=conv["system"], id="system"), *to_langchain(conv["messages"])]
    whole = count(msgs)
    settings = {
        "max_tokens": whole // divisor,
        "max_tokens_before_summary": whole // before_divisor if before_divisor else None,
    }
    running = None
    decisions = []
    for i in [k for k, m in enumerate(msgs) if isinstance(m, AIMessage)]:
        model = CountingFake(responses=["summary of the new messages"])
        result = summarize_messages(msgs[:i], running_summary=running, model=model, token_counter=count, **settings)
        kept = None
        if model.calls:
            running = result.running_summary
            assert running is not None
            after = [m.id for m in msgs[:i]].index(running.last_summarized_message_id) + 1
            kept = msgs[after].id if after < i else None
        decisions.append({"at": msgs[i].id, "summarised": model.calls > 0, "kept_from": kept})
    return {"conversation": conv["name"], "settings": settings, "decisions": decisions}


def long_section() -> list[dict[str, Any]]:
    """Every long conversation twice, ``max_tokens`` a quarter and a third of its count, the threshold LangMem's
    default (``max_tokens``). (A threshold of a quarter under ``max_tokens`` a third decides as the first: the walk
    reaches the threshold only at the newest messages, so the rest always fits.)"""
    return [long_run(conv, d, None) for d in (4, 3) for conv in load()]


def main() -> None:
    out = [{**case, "expected": run(case)} for case in CASES]
    golden = {"package": "langmem", "version": version("langmem"), "cases": out, "long": long_section()}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (langmem {golden['version']})")


if __name__ == "__main__":
    main()
