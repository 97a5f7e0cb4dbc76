"""Run Deep Agents' own ``SummarizationMiddleware.wrap_model_call`` on every case of ``cases.py`` and write the
golden file.

Runs in ``.venv-conformance/deepagents`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/deepagents/bin/python conformance/deepagents/generate.py

Offline: the model is ``langchain_core``'s ``FakeListChatModel`` (it answers "the summary"), given the case's
``max_input_tokens`` as its profile; the middleware takes ``compute_summarization_defaults`` for it, Deep Agents'
default counter (``count_tokens_approximately``) and a ``FilesystemBackend`` in a temporary folder for the offloaded
history; the handler records the request the model would get. Writes ``tests/golden/conformance/deepagents.json``:
per case the messages the model got, in order (ids; ``SUMMARY`` for the summary message; an id with ``*`` for an
assistant message whose tool arguments were truncated), whether it summarised, and the history file's folder; and
``long``: every model call of each long conversation of ``conformance/long/`` (``long_run``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import SummarizationMiddleware, compute_summarization_defaults
from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES, SYSTEM  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "deepagents.json"


def to_langchain(msgs: list[dict[str, Any]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in msgs:
        if m["role"] == "user":
            out.append(HumanMessage(content=m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            calls = [{"id": c["id"], "name": c["name"], "args": json.loads(c["args"])} for c in m["calls"]]
            out.append(AIMessage(content=m["text"], tool_calls=calls, id=m["id"]))
        else:
            for j, r in enumerate(m["results"]):  # one ToolMessage per result, ids <id>.<j> for a batch's
                rid = m["id"] if len(m["results"]) == 1 else f"{m['id']}.{j}"
                out.append(ToolMessage(content=r["text"], tool_call_id=r["call_id"], name=r["name"], id=rid))
    return out


def run(case: dict[str, Any], root: str) -> dict[str, Any]:
    limit = case["settings"]["max_input_tokens"]
    model = FakeListChatModel(responses=["the summary"], profile={"max_input_tokens": limit} if limit else None)
    defaults = compute_summarization_defaults(model)
    middleware = SummarizationMiddleware(model, backend=FilesystemBackend(root_dir=root, virtual_mode=True), **defaults)
    messages = to_langchain(case["input"])
    originals = {m.id: m for m in messages}
    seen: list[list[BaseMessage]] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage("ok")])

    request = ModelRequest(
        model=model, messages=messages, system_message=SystemMessage(SYSTEM), state={"messages": messages}
    )
    middleware.wrap_model_call(request, handler)
    view: list[str] = []
    summary_path = None
    for m in seen[-1]:
        if m.id is None:
            view.append("SUMMARY")
            text = str(m.content)
            summary_path = text.split("saved to ", 1)[1].split(" ", 1)[0] if "saved to " in text else None
        elif isinstance(m, AIMessage) and m.tool_calls != originals[m.id].tool_calls:  # type: ignore[attr-defined]
            view.append(m.id + "*")
        else:
            view.append(m.id)
    folder = summary_path.rsplit("/", 1)[0] if summary_path else None
    return {"view": view, "summarised": "SUMMARY" in view, "history_folder": folder, "defaults": repr(defaults)}


# -- long conversations (conformance/long/): every model call, decision by decision -------------------------------
def long_run(conv: dict[str, Any], root: str) -> dict[str, Any]:
    """``wrap_model_call`` before each model call of a long conversation, on the agent's state: every message so far
    (one ToolMessage per result) and the ``_summarization_event`` the previous calls left, carried as the agent carries
    it. The model's profile gives ``max_input_tokens`` a third of the whole conversation's count (system prompt
    included), so ``compute_summarization_defaults`` puts the trigger at 0.85 of that and keeps 0.1 of it. The
    session id is fixed (the policy's: ``session_`` and the system prompt's sha256), so the summary text is
    reproducible. Recorded per call: the count the middleware took, whether it summarised, the first message it
    kept after the summary and the summary (the fake model's, or LangChain's "Previous conversation was too long to
    summarize." when the newest 4,000 tokens it would summarise hold no human message), the assistant messages whose
    arguments were truncated, and the messages ``_clip_overflow_tail`` replaced."""
    msgs = to_langchain(conv["messages"])
    system = SystemMessage(conv["system"])
    limit = count_tokens_approximately([system, *msgs]) // 3
    model = FakeListChatModel(responses=["the summary"], profile={"max_input_tokens": limit})
    defaults = compute_summarization_defaults(model)
    middleware = SummarizationMiddleware(model, backend=FilesystemBackend(root_dir=root, virtual_mode=True), **defaults)
    session = "session_" + hashlib.sha256(conv["system"].encode()).hexdigest()[:32]
    index = {m.id: k for k, m in enumerate(msgs)}
    event: Any = None
    decisions = []
    seen: list[list[BaseMessage]] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage("ok")])

    for i in [k for k, m in enumerate(msgs) if isinstance(m, AIMessage)]:
        state = {"messages": msgs[:i], "_summarization_event": event, "_summarization_session_id": session}
        request = ModelRequest(model=model, messages=msgs[:i], system_message=system, state=state)
        effective = middleware._get_effective_messages(request)
        tokens = middleware._count_tokens(effective, system, None)
        result = middleware.wrap_model_call(request, handler)
        kept, summarised, summary = None, False, None
        replaced: list[str] = []
        if isinstance(result, ExtendedModelResponse):
            update = result.command.update  # type: ignore[union-attr]
            if "_summarization_event" in update:
                event, summarised = update["_summarization_event"], True
                kept = msgs[event["cutoff_index"]].id if event["cutoff_index"] < i else None
                summary = str(event["summary_message"].content).split("<summary>\n", 1)[1].rsplit("\n</summary>", 1)[0]
            for m in update.get("messages", []):  # offloaded tail results: the state's message replaced by id
                msgs[index[m.id]] = m
                replaced.append(m.id)
        originals = {m.id: m for m in msgs}
        truncated = [
            m.id
            for m in seen[-1]
            if isinstance(m, AIMessage) and m.id in originals and m.tool_calls != originals[m.id].tool_calls  # type: ignore[attr-defined]
        ]
        decisions.append(
            {
                "at": msgs[i].id,
                "tokens": tokens,
                "summarised": summarised,
                "kept_from": kept,
                "summary": summary,
                "truncated": truncated,
                "replaced": replaced,
            }
        )
    return {"conversation": conv["name"], "max_input_tokens": limit, "decisions": decisions}


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        out = [{**case, "expected": run(case, root)} for case in CASES]
    with tempfile.TemporaryDirectory() as root:
        long = [long_run(conv, root) for conv in load()]
    golden = {"package": "deepagents", "version": version("deepagents"), "system": SYSTEM, "cases": out, "long": long}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (deepagents {golden['version']})")


if __name__ == "__main__":
    main()
