"""Run Semantic Kernel's own ``ChatHistoryTruncationReducer.reduce()`` on every case of ``cases.py`` and write the
golden file.

Runs in ``.venv-conformance/semantic-kernel`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/semantic-kernel/bin/python conformance/semantic-kernel/generate.py

The truncation reducer needs no service. The summarization reducer needs a chat completion service: SK ships no
fake one, so a minimal offline stand-in (``StandInService``, a ``ChatCompletionClientBase``) answers every request
with the same summary and records what it was shown. No network.

Writes ``tests/golden/conformance/semantic-kernel.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.contents import (
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)
from semantic_kernel.contents.history_reducer.chat_history_summarization_reducer import (
    ChatHistorySummarizationReducer,
)
from semantic_kernel.contents.history_reducer.chat_history_truncation_reducer import ChatHistoryTruncationReducer
from semantic_kernel.contents.utils.author_role import AuthorRole

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "semantic-kernel.json"
FAKE_SUMMARY = "FAKE SUMMARY"
ROLES = {"system": AuthorRole.SYSTEM, "user": AuthorRole.USER, "assistant": AuthorRole.ASSISTANT}


class StandInService(ChatCompletionClientBase):
    """Answers with ``FAKE_SUMMARY`` and keeps the histories it was asked about."""

    seen: list[Any] = []

    async def _inner_get_chat_message_contents(self, chat_history: Any, settings: Any) -> list[ChatMessageContent]:
        self.seen.append(list(chat_history.messages))
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, content=FAKE_SUMMARY)]


def to_sk(m: dict[str, Any]) -> ChatMessageContent:
    if m.get("summary"):
        return ChatMessageContent(role=ROLES[m["role"]], content=m["text"], metadata={"__summary__": True})
    if m["role"] == "tool":
        result = FunctionResultContent(id=m["call_id"], name=m["name"], result=m["text"])
        return ChatMessageContent(role=AuthorRole.TOOL, items=[result])
    items: list[Any] = [TextContent(text=m["text"])]
    items += [FunctionCallContent(id=c["id"], name=c["name"], arguments=c["args"]) for c in m.get("calls", [])]
    return ChatMessageContent(role=ROLES[m["role"]], items=items)


async def run(case: dict[str, Any]) -> dict[str, Any]:
    messages = [to_sk(m) for m in case["input"]]
    ids = {id(sk): m["id"] for sk, m in zip(messages, case["input"], strict=True)}
    if case["kind"] == "truncation":
        reducer: Any = ChatHistoryTruncationReducer(**case["settings"])
    else:
        service = StandInService(ai_model_id="stand-in")
        reducer = ChatHistorySummarizationReducer(service=service, **case["settings"])
    reducer.messages = list(messages)
    reduced = await reducer.reduce()
    kept = [ids.get(id(m), f"SUMMARY {m.role.value}: {m.content}") for m in reducer.messages]
    out: dict[str, Any] = {"reduced": reduced is not None, "kept": kept}
    if case["kind"] == "summarization":
        shown = service.seen[0][:-1] if service.seen else []  # the last is the instructions
        out["summariser_input"] = [ids[id(m)] for m in shown]
    return out


# -- long conversations (conformance/long/): reduce() before every model call, decision by decision ---------------
def flat(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A long conversation's messages with one tool message per result, as SK's kernel adds each function result
    (``kernel.py``: ``chat_history.add_message(frc.to_chat_message_content())``); ids ``<id>.<j>`` for a batch's."""
    out: list[dict[str, Any]] = []
    for m in msgs:
        if m["role"] == "tool":
            results = m["results"]
            out += [
                {"id": m["id"] if len(results) == 1 else f"{m['id']}.{j}", "role": "tool", **r}
                for j, r in enumerate(results)
            ]
        else:
            out.append(m)
    return out


#: The long runs: (name, reducer kind, settings as shares of the conversation's message count): the target a quarter
#: of it; with a threshold of a twelfth, the trigger (target + threshold) at a third.
LONG_RUNS: tuple[tuple[str, str, int, int], ...] = (
    ("truncation", "truncation", 4, 0),
    ("truncation-threshold", "truncation", 4, 12),
    ("summarization", "summarization", 4, 0),
)


async def long_run(
    conv: dict[str, Any], name: str, kind: str, target_share: int, threshold_share: int
) -> dict[str, Any]:
    """The conversation through one reducer holding the system message and the history: ``reduce()`` before every
    model call (the chat completion agent reduces its history before it invokes the model), then the call's reply and
    results appended, so every later decision is made on what the reducer left. Recorded per call: whether
    ``reduce()`` returned the reducer (it does when the safe index falls on the history's first message after the
    system message too, leaving it as it was), the first message it kept after the system message and the summary,
    and for the summarization reducer whether it asked the service for a new summary."""
    msgs = flat(conv["messages"])
    settings = {"target_count": len(msgs) // target_share}
    if threshold_share:
        settings["threshold_count"] = len(msgs) // threshold_share
    service = StandInService(ai_model_id="stand-in")
    if kind == "truncation":
        reducer: Any = ChatHistoryTruncationReducer(**settings)
    else:
        reducer = ChatHistorySummarizationReducer(service=service, **settings)
    system = {"id": "system", "role": "system", "text": conv["system"]}
    every = [to_sk(system)]  # every message made, kept alive so that no id() is reused
    reducer.messages = list(every)
    ids: dict[int, str] = {id(every[0]): "system"}
    decisions = []
    for m in msgs:
        if m["role"] == "assistant":
            asked = len(service.seen)
            reduced = await reducer.reduce()
            kept = [ids[id(x)] for x in reducer.messages if id(x) in ids and ids[id(x)] != "system"]
            decision = {"at": m["id"], "reduced": reduced is not None, "kept_from": kept[0] if kept else None}
            if kind == "summarization":
                decision["summarized"] = len(service.seen) > asked
            decisions.append(decision)
        sk = to_sk(m)
        every.append(sk)
        ids[id(sk)] = m["id"]
        reducer.messages.append(sk)
    return {"conversation": conv["name"], "run": name, "settings": settings, "decisions": decisions}


def long_section() -> list[dict[str, Any]]:
    return [
        asyncio.run(long_run(conv, name, kind, target, threshold))
        for name, kind, target, threshold in LONG_RUNS
        for conv in load()
    ]


def main() -> None:
    out = [{**case, "expected": asyncio.run(run(case))} for case in CASES]
    golden = {"package": "semantic-kernel", "version": version("semantic-kernel"), "cases": out, "long": long_section()}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (semantic-kernel {golden['version']})")


if __name__ == "__main__":
    main()
