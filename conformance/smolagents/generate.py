"""Run smolagents' own ``truncate_content`` on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/smolagents`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/smolagents/bin/python conformance/smolagents/generate.py

Each case's text (built from its recipe) goes through ``smolagents.utils.truncate_content`` (with the case's
``max_length``, if any), as ``CodeAgent`` passes the output of each code snippet before it becomes the step's
observation. No model and no
network are needed. Writes ``tests/golden/conformance/smolagents.json``: per case the result's length, its SHA-256
(UTF-8) and its first and last 120 characters (the texts themselves run to hundreds of kilobytes). Its ``long``
section: what a ``CodeAgent``'s memory sends before every model call of each long conversation of
``conformance/long/`` (:func:`long_run`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from smolagents import CodeAgent
from smolagents.memory import ActionStep, SystemPromptStep, TaskStep, ToolCall
from smolagents.models import ChatMessage, MessageRole, Model
from smolagents.monitoring import Timing
from smolagents.utils import MAX_LENGTH_TRUNCATE_CONTENT, truncate_content

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES, build  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "smolagents.json"


# -- long conversations (conformance/long/): what the agent's memory sends before every model call ---------------
class NoModel(Model):
    """The agent's model, never called: the memory is filled from the conversation."""

    def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
        raise AssertionError("the long runs make no model call")


#: What ``ActionStep.to_messages`` writes before a step's observations.
PREFIX = "Observation:\n"


def text_of(message: ChatMessage) -> str:
    return "".join(c["text"] for c in message.content if c.get("type") == "text")


def long_run(conv: dict[str, Any], run_name: str) -> dict[str, Any]:
    """The conversation in a ``CodeAgent``'s memory, step by step: a user message is a ``TaskStep``; each model call
    (an assistant message) an ``ActionStep`` with the model's text, its calls and, as its observation, each result
    of those calls through ``truncate_content`` (the bound ``CodeAgent`` puts on a snippet's output; a batch's
    outputs joined by newlines, as ``ToolCallingAgent`` joins its observations). Before every model call,
    ``write_memory_to_messages()`` (what the agent sends): the observation messages it holds, how many results were
    truncated, and a SHA-256 of the observations' text in order (each without its ``Observation:`` line).
    ``default``: the 20,000-character bound; ``scaled``: a bound a third of the conversation's longest result, so the
    longer results are cut."""
    msgs = conv["messages"]
    longest = max((len(r["text"]) for m in msgs for r in m.get("results", ())), default=0)
    max_length = MAX_LENGTH_TRUNCATE_CONTENT if run_name == "default" else max(longest // 3, 1)
    agent = CodeAgent(tools=[], model=NoModel(model_id="none"))
    agent.memory.system_prompt = SystemPromptStep(system_prompt=conv["system"])
    decisions = []
    truncated = 0
    pending: ActionStep | None = None
    for m in msgs:
        if m["role"] == "user":
            agent.memory.steps.append(TaskStep(task=m["text"]))
        elif m["role"] == "assistant":
            sent = agent.write_memory_to_messages()
            observations = [text_of(x).removeprefix(PREFIX) for x in sent if x.role == MessageRole.TOOL_RESPONSE]
            digest = hashlib.sha256("\x00".join(observations).encode("utf-8")).hexdigest()
            decisions.append(
                {"at": m["id"], "observations": len(observations), "truncated": truncated, "sha256": digest}
            )
            calls = [ToolCall(name=c["name"], arguments=json.loads(c["args"]), id=c["id"]) for c in m["calls"]]
            pending = ActionStep(
                step_number=len(decisions), timing=Timing(start_time=0.0), model_output=m["text"], tool_calls=calls
            )
            agent.memory.steps.append(pending)
        else:
            assert pending is not None
            outputs = [truncate_content(r["text"], max_length=max_length) for r in m["results"]]
            truncated += sum(1 for r, out in zip(m["results"], outputs, strict=True) if out != r["text"])
            # A batch's results may come in several tool messages: all are the step's observation.
            pending.observations = "\n".join([*([pending.observations] if pending.observations else []), *outputs])
    return {"conversation": conv["name"], "run": run_name, "max_length": max_length, "decisions": decisions}


def main() -> None:
    out = []
    for case in CASES:
        settings = {"max_length": MAX_LENGTH_TRUNCATE_CONTENT, **case["settings"]}
        source = build(case["input"])
        text = truncate_content(source, **case["settings"])
        expected = {
            "truncated": text != source,
            "length": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "head": text[:120],
            "tail": text[-120:],
        }
        out.append({**case, "settings": settings, "expected": expected})
    golden = {
        "package": "smolagents",
        "version": version("smolagents"),
        "cases": out,
        "long": [long_run(conv, name) for name in ("default", "scaled") for conv in load()],
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (smolagents {golden['version']})")


if __name__ == "__main__":
    main()
