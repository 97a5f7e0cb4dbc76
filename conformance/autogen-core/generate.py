"""Run AutoGen's own model contexts on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/autogen-core`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/autogen-core/bin/python conformance/autogen-core/generate.py

Each case's messages are added to a ``BufferedChatCompletionContext``, ``HeadAndTailChatCompletionContext`` or
``TokenLimitedChatCompletionContext`` and ``get_messages()`` is called once. No network: the token-limited context
needs a model client only for ``count_tokens`` and ``remaining_tokens``, so a small offline client stands in for
one. It counts what the harness's engine counts with its ``chars4`` tokenizer (4 tokens a message; a quarter of
the characters of each text, rounded up; per call or result 3 more plus its name's and arguments' quarters), so
the comparison tests AutoGen's loop, not a tokenizer. Writes ``tests/golden/conformance/autogen-core.json``.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from autogen_core import FunctionCall
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "autogen-core.json"


def q(text: str) -> int:
    return math.ceil(len(text) / 4)


def message_tokens(m: LLMMessage) -> int:
    """The engine's chars4 count of one message, framing included."""
    n = 4
    if isinstance(m, UserMessage):
        n += q(str(m.content))
    elif isinstance(m, AssistantMessage):
        if isinstance(m.content, str):
            n += q(m.content)
        else:
            n += q(m.thought or "") + sum(3 + q(c.name) + q(c.arguments) for c in m.content)
    elif isinstance(m, FunctionExecutionResultMessage):
        n += sum(3 + q(r.content) + q(r.name) for r in m.content)
    return n


class CountingClient:
    """Just enough of a ``ChatCompletionClient`` for ``TokenLimitedChatCompletionContext``: offline counts."""

    def __init__(self, window: int) -> None:
        self.window = window

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        return sum(message_tokens(m) for m in messages)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        return self.window - self.count_tokens(messages)


def to_autogen(msgs: list[dict[str, Any]]) -> list[LLMMessage]:
    out: list[LLMMessage] = []
    for m in msgs:
        if m["role"] == "user":
            out.append(UserMessage(content=m["text"], source="user"))
        elif m["role"] == "assistant" and m["calls"]:
            calls = [FunctionCall(id=c["id"], name=c["name"], arguments=c["args"]) for c in m["calls"]]
            out.append(AssistantMessage(content=calls, thought=m["text"] or None, source="agent"))
        elif m["role"] == "assistant":
            out.append(AssistantMessage(content=m["text"], source="agent"))
        else:
            results = [
                FunctionExecutionResult(content=r["text"], name=r["name"], call_id=r["call_id"], is_error=False)
                for r in m["results"]
            ]
            out.append(FunctionExecutionResultMessage(content=results))
    return out


async def run(case: dict[str, Any]) -> dict[str, Any]:
    settings = dict(case["settings"])
    messages = to_autogen(case["input"])
    ids = {id(m): c["id"] for m, c in zip(messages, case["input"], strict=True)}
    tokens = sum(message_tokens(m) for m in messages)
    if case["kind"] == "buffered":
        ctx: Any = BufferedChatCompletionContext(**settings)
    elif case["kind"] == "head_and_tail":
        ctx = HeadAndTailChatCompletionContext(**settings)
    else:
        client = CountingClient(settings.get("window", 0))
        limit = settings.get("token_limit")
        if limit is not None and limit < 0:  # relative to the list's own count: at it, or one below
            settings["token_limit"] = limit = tokens + limit + 1
        ctx = TokenLimitedChatCompletionContext(client, token_limit=limit)  # type: ignore[arg-type]
    for m in messages:
        await ctx.add_message(m)
    seen = await ctx.get_messages()
    view = [ids.get(id(m), f"INJECTED {m.type}: {m.content}") for m in seen]
    return {"view": view, "tokens": tokens, "settings": settings}


# -- long conversations (conformance/long/): before every model call, what get_messages() returns ------------------
def grouped(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run of tool messages as the one ``FunctionExecutionResultMessage`` an agent stores, with the run's first id."""
    out: list[dict[str, Any]] = []
    for m in msgs:
        if m["role"] == "tool" and out and out[-1]["role"] == "tool":
            out[-1] = {**out[-1], "results": out[-1]["results"] + m["results"]}
        else:
            out.append(m)
    return out


async def long_run(conv: dict[str, Any], kind: str, settings: dict[str, Any]) -> dict[str, Any]:
    msgs = grouped(conv["messages"])
    messages = to_autogen(msgs)
    pos = {id(m): k for k, m in enumerate(messages)}
    if kind == "buffered":
        ctx: Any = BufferedChatCompletionContext(**settings)
    elif kind == "head_and_tail":
        ctx = HeadAndTailChatCompletionContext(**settings)
    else:
        ctx = TokenLimitedChatCompletionContext(CountingClient(0), **settings)  # type: ignore[arg-type]
    decisions = []
    for m, raw in zip(messages, msgs, strict=True):
        if raw["role"] == "assistant":
            seen = await ctx.get_messages()
            decisions.append({"at": raw["id"], "view": compact([pos.get(id(x), str(x.content)) for x in seen])})
        await ctx.add_message(m)
    return {"conversation": conv["name"], "kind": kind, "settings": settings, "decisions": decisions}


def compact(view: list[int | str]) -> str:
    """A view as runs of positions in the stored messages (``0-4,9-12``), an injected message's text in its place."""
    runs: list[str] = []
    start = prev = None
    for x in [*view, None]:
        if isinstance(x, int) and prev is not None and x == prev + 1:
            prev = x
            continue
        if start is not None:
            runs.append(f"{start}-{prev}")
        start = prev = x if isinstance(x, int) else None
        if isinstance(x, str):
            runs.append(x)
    return ",".join(runs)


def long_section() -> list[dict[str, Any]]:
    out = []
    for conv in load():
        whole = sum(message_tokens(m) for m in to_autogen(grouped(conv["messages"])))
        for kind, settings in (
            ("buffered", {"buffer_size": 5}),
            ("head_and_tail", {"head_size": 1, "tail_size": 5}),
            ("token_limited", {"token_limit": whole // 3}),
        ):
            out.append(asyncio.run(long_run(conv, kind, settings)))
    return out


def main() -> None:
    out = []
    for case in CASES:
        expected = asyncio.run(run(case))
        out.append({**case, "settings": expected.pop("settings"), "expected": expected})
    golden = {"package": "autogen-core", "version": version("autogen-core"), "cases": out, "long": long_section()}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (autogen-core {golden['version']})")


if __name__ == "__main__":
    main()
