"""Run LlamaIndex's own ``ChatSummaryMemoryBuffer.get()`` on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/llama-index-core`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/llama-index-core/bin/python conformance/llama-index-core/generate.py

Each case's messages fill the buffer's chat store (``from_defaults(chat_history=...)``) and ``get()`` is called once.
Offline: the summariser is LlamaIndex's own ``MockLLM`` (``max_tokens=8``: its reply is eight words "text"; its
metadata gives the 3,900-token default window), and the tokenizer is a function that counts what the policy counts,
a quarter of the characters rounded up (tiktoken's files are never downloaded). Writes
``tests/golden/conformance/llama-index-core.json``: per case the messages ``get()`` returned, in order (the store's
ids, ``SUMMARY`` for a new summary, ``summary`` for the earlier one kept as it was), whether the LLM was called, and
the limit used; and ``long``: every ``get()`` of one memory through each long conversation of ``conformance/long/``
(``long_run``).
"""

from __future__ import annotations

import json
import math
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatSummaryMemoryBuffer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES, SYSTEM  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "llama-index-core.json"


def tokenizer(text: str) -> list[int]:
    """One item per token at four characters a token, rounded up: the engine's chars4 count of a text."""
    return [0] * math.ceil(len(text) / 4)


class CountingMockLLM(MockLLM):
    """``MockLLM`` that counts its chat calls (the summariser calls)."""

    calls: int = 0

    def chat(self, messages: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super().chat(messages, **kwargs)


def to_llama(msgs: list[dict[str, Any]]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for m in msgs:
        tag = {"csim_id": m["id"]}
        if m["role"] == "tool":
            for r in m["results"]:
                out.append(
                    ChatMessage(role="tool", content=r["text"], additional_kwargs={**tag, "tool_call_id": r["call_id"]})
                )
        elif m["role"] == "assistant" and m["calls"]:
            calls = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                for c in m["calls"]
            ]
            out.append(
                ChatMessage(role="assistant", content=m["text"] or None, additional_kwargs={**tag, "tool_calls": calls})
            )
        else:
            out.append(ChatMessage(role=m["role"], content=m["text"], additional_kwargs=tag))
    return out


def run(case: dict[str, Any]) -> dict[str, Any]:
    settings = dict(case["settings"])
    llm = CountingMockLLM(max_tokens=8) if settings.get("llm", True) else None
    count_initial = settings.get("count_initial_tokens", False)
    memory = ChatSummaryMemoryBuffer.from_defaults(
        chat_history=to_llama(case["input"]),
        llm=llm,
        token_limit=settings.get("token_limit"),
        tokenizer_fn=tokenizer,
        count_initial_tokens=count_initial,
    )
    settings["default_limit"] = "token_limit" not in settings
    settings["token_limit"] = memory.token_limit
    seen = memory.get(initial_token_count=len(tokenizer(SYSTEM)) if count_initial else 0)
    view: list[str] = []
    for m in seen:
        name = m.additional_kwargs.get("csim_id", "SUMMARY")
        if not view or view[-1] != name:  # the results of one tool message are one entry
            view.append(name)
    return {"expected": {"view": view, "summarised": bool(llm and llm.calls)}, "settings": settings}


# -- long conversations (conformance/long/): every get(), decision by decision -------------------------------------
def long_run(conv: dict[str, Any], divisor: int) -> dict[str, Any]:
    """One memory through a long conversation: every message is put as it comes (a tool message's results one
    ``ChatMessage`` each), and ``get()`` is called where an agent calls it: after each user message (a run starts) and
    after each reply without tool calls (a run ends). ``get()`` rewrites the store (the summary and the messages it
    kept), and the next messages are put after them, so each call decides on the memory's own state. ``token_limit``
    is the whole conversation's count (the tokenizer's, over every stored message) over ``divisor``. Recorded per
    call: whether the LLM was called, and the first message kept verbatim (None: none, the summary alone)."""
    stored = to_llama(conv["messages"])
    limit = sum(len(tokenizer(str(m.content))) for m in stored) // divisor
    llm = CountingMockLLM(max_tokens=8)
    memory = ChatSummaryMemoryBuffer.from_defaults(llm=llm, token_limit=limit, tokenizer_fn=tokenizer)
    decisions = []
    for m in conv["messages"]:
        for message in to_llama([m]):
            memory.put(message)
        if m["role"] == "user":
            point = "user_turn"
        elif m["role"] == "assistant" and not m["calls"]:
            point = "response"
        else:
            continue
        calls = llm.calls
        kept = [x.additional_kwargs["csim_id"] for x in memory.get() if "csim_id" in x.additional_kwargs]
        decisions.append(
            {"at": m["id"], "point": point, "summarised": llm.calls > calls, "kept_from": kept[0] if kept else None}
        )
    return {"conversation": conv["name"], "token_limit": limit, "decisions": decisions}


def main() -> None:
    out = []
    for case in CASES:
        got = run(case)
        out.append({**case, "settings": got["settings"], "expected": got["expected"]})
    long = [long_run(conv, d) for d in (4, 3) for conv in load()]
    golden = {
        "package": "llama-index-core",
        "version": version("llama-index-core"),
        "system": SYSTEM,
        "cases": out,
        "long": long,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (llama-index-core {golden['version']})")


if __name__ == "__main__":
    main()
