"""Run Deep Agents' own ``SummarizationMiddleware.wrap_model_call`` on every case of ``cases.py`` and write the
golden file.

Runs in ``.venv-conformance/deepagents`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/deepagents/bin/python conformance/deepagents/generate.py

Offline: the model is ``langchain_core``'s ``FakeListChatModel`` (it answers "the summary"), given the case's
``max_input_tokens`` as its profile; the middleware takes ``compute_summarization_defaults`` for it, Deep Agents'
default counter (``count_tokens_approximately``) and a ``FilesystemBackend`` in a temporary folder for the offloaded
history; the handler records the request the model would get. Writes ``tests/golden/conformance/deepagents.json``:
per case the messages the model got, in order (ids; ``SUMMARY`` for the summary message; an id with ``*`` for an
assistant message whose tool arguments were truncated), whether it summarised, and the history file's folder.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import SummarizationMiddleware, compute_summarization_defaults
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES, SYSTEM  # noqa: E402

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
            (r,) = m["results"]
            out.append(ToolMessage(content=r["text"], tool_call_id=r["call_id"], name=r["name"], id=m["id"]))
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


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        out = [{**case, "expected": run(case, root)} for case in CASES]
    golden = {"package": "deepagents", "version": version("deepagents"), "system": SYSTEM, "cases": out}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (deepagents {golden['version']})")


if __name__ == "__main__":
    main()
