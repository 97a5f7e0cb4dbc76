"""Run Semantic Kernel's own ``ChatHistoryTruncationReducer.reduce()`` on every case of ``cases.py`` and write the
golden file.

Runs in ``.venv-conformance/semantic-kernel`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/semantic-kernel/bin/python conformance/semantic-kernel/generate.py

The truncation reducer needs no service and no network. Writes ``tests/golden/conformance/semantic-kernel.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from semantic_kernel.contents import (
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)
from semantic_kernel.contents.history_reducer.chat_history_truncation_reducer import ChatHistoryTruncationReducer
from semantic_kernel.contents.utils.author_role import AuthorRole

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "semantic-kernel.json"
ROLES = {"system": AuthorRole.SYSTEM, "user": AuthorRole.USER, "assistant": AuthorRole.ASSISTANT}


def to_sk(m: dict[str, Any]) -> ChatMessageContent:
    if m["role"] == "tool":
        result = FunctionResultContent(id=m["call_id"], name=m["name"], result=m["text"])
        return ChatMessageContent(role=AuthorRole.TOOL, items=[result])
    items: list[Any] = [TextContent(text=m["text"])]
    items += [FunctionCallContent(id=c["id"], name=c["name"], arguments=c["args"]) for c in m.get("calls", [])]
    return ChatMessageContent(role=ROLES[m["role"]], items=items)


async def run(case: dict[str, Any]) -> dict[str, Any]:
    messages = [to_sk(m) for m in case["input"]]
    ids = {id(sk): m["id"] for sk, m in zip(messages, case["input"], strict=True)}
    reducer = ChatHistoryTruncationReducer(**case["settings"])
    reducer.messages = list(messages)
    reduced = await reducer.reduce()
    return {"reduced": reduced is not None, "kept": [ids[id(m)] for m in reducer.messages]}


def main() -> None:
    out = [{**case, "expected": asyncio.run(run(case))} for case in CASES]
    golden = {"package": "semantic-kernel", "version": version("semantic-kernel"), "cases": out}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (semantic-kernel {golden['version']})")


if __name__ == "__main__":
    main()
