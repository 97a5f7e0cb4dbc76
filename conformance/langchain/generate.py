"""Run LangChain's own middlewares on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/langchain`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/langchain/bin/python conformance/langchain/generate.py

``ContextEditingMiddleware.wrap_model_call`` runs with a handler that records the request it passes on (the
edited messages); ``SummarizationMiddleware.before_model`` runs with LangChain's ``FakeListChatModel`` writing
the summary. Writes ``tests/golden/conformance/langchain.json``.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain.agents.middleware.context_editing import ClearToolUsesEdit, ContextEditingMiddleware
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import claude_ids, load, model_calls  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "langchain.json"
FAKE_SUMMARY = "FAKE SUMMARY"
TOO_LONG = "Previous conversation was too long to summarize."


def to_langchain(msgs: list[dict[str, Any]]) -> list[AnyMessage]:
    out: list[AnyMessage] = []
    for m in msgs:
        if m["role"] == "user":
            out.append(HumanMessage(m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            calls = [{"name": c["name"], "args": c["args"], "id": c["id"], "type": "tool_call"} for c in m["calls"]]
            out.append(AIMessage(m["text"], id=m["id"], tool_calls=calls))
        else:
            out.append(ToolMessage(m["text"], id=m["id"], tool_call_id=m["call_id"], name=m["name"]))
    return out


def run_clear(case: dict[str, Any]) -> dict[str, Any]:
    settings = dict(case["settings"])
    edit = ClearToolUsesEdit(**settings)
    middleware = ContextEditingMiddleware(edits=[edit])
    messages = to_langchain(case["input"])
    seen: list[list[AnyMessage]] = []

    def handler(request: ModelRequest) -> str:
        seen.append(list(request.messages))
        return "ok"

    middleware.wrap_model_call(ModelRequest(model=FakeListChatModel(responses=["ok"]), messages=messages), handler)
    edited = seen[0]
    tokens = count_tokens_approximately(messages)
    cleared = [m.id for m in edited if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing")]
    inputs = [
        c["id"]
        for m in edited
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["id"] in m.response_metadata.get("context_editing", {}).get("cleared_tool_inputs", [])
    ]
    return {
        "triggered": tokens > edit.trigger,
        "tokens": tokens,
        "cleared": cleared,
        "cleared_text": edit.placeholder,
        "cleared_inputs": inputs,
        "kept": [m.id for m in edited if isinstance(m, ToolMessage) and m.id not in cleared],
    }


def run_summarize(case: dict[str, Any]) -> dict[str, Any]:
    settings = dict(case["settings"])
    profile = {"max_input_tokens": settings.pop("max_input_tokens")} if "max_input_tokens" in settings else None
    model = FakeListChatModel(responses=[FAKE_SUMMARY], profile=profile)
    trigger = settings.pop("trigger")
    if isinstance(trigger, list) and trigger and isinstance(trigger[0], str):
        trigger = tuple(trigger)
    elif isinstance(trigger, list):
        trigger = [dict(t) for t in trigger]
    if "keep" in settings:
        settings["keep"] = tuple(settings["keep"])
    middleware = SummarizationMiddleware(model, trigger=trigger, **settings)
    messages = to_langchain(case["input"])
    triggered = middleware._should_summarize(messages, middleware.token_counter(messages))
    update = middleware.before_model({"messages": messages}, None)  # type: ignore[arg-type]
    if update is None:
        return {"triggered": triggered, "tokens": middleware.token_counter(messages), "summarized": None}
    new = update["messages"][1:]  # after RemoveMessage(REMOVE_ALL_MESSAGES)
    summary, kept = new[0], new[1:]
    kept_ids = [m.id for m in kept]
    cutoff = len(messages) - len(kept)
    trimmed = middleware._trim_messages_for_summary(messages[:cutoff])
    return {
        "triggered": triggered,
        "tokens": middleware.token_counter(messages),
        "summarized": [m.id for m in messages[:cutoff]],
        "kept": kept_ids,
        "summary": {"role": summary.type, "text": summary.content, "fake_summary": FAKE_SUMMARY},
        "summariser_input": [m.id for m in trimmed],
        "summary_too_long_fallback": summary.content.endswith(TOO_LONG),
    }


# -- long conversations (conformance/long/): every model call, decision by decision -------------------------------
def flat(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A long conversation's messages with one tool message per result, as LangChain's ToolMessages are."""
    out: list[dict[str, Any]] = []
    for m in msgs:
        if m["role"] == "tool":
            out += [
                {"id": m["id"] if len(m["results"]) == 1 else f"{m['id']}.{j}", "role": "tool", **r}
                for j, r in enumerate(m["results"])
            ]
        elif m["role"] == "assistant":
            out.append({**m, "calls": [{**c, "args": json.loads(c["args"])} for c in m["calls"]]})
        else:
            out.append(m)
    return out


def long_counts(conv: dict[str, Any]) -> dict[str, Any]:
    """``count_tokens_approximately`` of the history before each model call."""
    msgs = to_langchain(flat(conv["messages"]))
    return {
        "conversation": conv["name"],
        "counts": [count_tokens_approximately(msgs[:i]) for i in model_calls(flat(conv["messages"]))],
    }


def long_summarization(conv: dict[str, Any]) -> dict[str, Any]:
    """``SummarizationMiddleware.before_model`` before each model call on the agent's state (which it rewrites when it
    summarises), triggered at a quarter of the whole conversation's count, keeping the default 20 messages."""
    flat_msgs = flat(conv["messages"])
    whole = to_langchain(flat_msgs)
    trigger = count_tokens_approximately(whole) // 4
    middleware = SummarizationMiddleware(FakeListChatModel(responses=[FAKE_SUMMARY]), trigger=("tokens", trigger))
    state: list[AnyMessage] = []
    decisions = []
    for m, lc in zip(flat_msgs, whole, strict=True):
        if m["role"] == "assistant":
            update = middleware.before_model({"messages": state}, None)  # type: ignore[arg-type]
            kept = None
            if update is not None:
                state = list(update["messages"][1:])
                kept = state[1].id if len(state) > 1 else None
            decisions.append({"at": m["id"], "kept_from": kept})
        state.append(lc)
    return {"conversation": conv["name"], "trigger": trigger, "decisions": decisions}


def long_clear(conv: dict[str, Any]) -> dict[str, Any]:
    """``ClearToolUsesEdit`` (through ``ContextEditingMiddleware.wrap_model_call``) before each model call on the whole
    history, triggered at a third of the whole conversation's count: how many results it cleared."""
    flat_msgs = flat(conv["messages"])
    whole = to_langchain(flat_msgs)
    trigger = count_tokens_approximately(whole) // 3
    middleware = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=trigger)])
    decisions = []
    seen: list[list[AnyMessage]] = []

    def handler(request: ModelRequest) -> str:
        seen.append(list(request.messages))
        return "ok"

    for i in model_calls(flat_msgs):
        request = ModelRequest(model=FakeListChatModel(responses=["ok"]), messages=whole[:i])
        middleware.wrap_model_call(request, handler)
        cleared = [m.id for m in seen[-1] if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing")]
        decisions.append({"at": flat_msgs[i]["id"], "cleared": len(cleared)})
    return {"conversation": conv["name"], "trigger": trigger, "decisions": decisions}


def long_section() -> dict[str, Any]:
    convs = load()
    return {
        "counts": [long_counts(c) for conv in convs for c in (conv, claude_ids(conv))],
        "summarization": [long_summarization(c) for c in convs],
        "clear_tool_uses": [long_clear(c) for c in convs],
    }


def main() -> None:
    out = []
    for case in CASES:
        run = run_clear if case["kind"] == "clear" else run_summarize
        out.append({**case, "expected": run(case)})
    golden = {
        "package": "langchain",
        "version": version("langchain"),
        "langchain_core": version("langchain-core"),
        "cases": out,
        "long": long_section(),
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (langchain {golden['version']})")


if __name__ == "__main__":
    main()
