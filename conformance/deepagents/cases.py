"""Scripted message lists for Deep Agents' ``SummarizationMiddleware`` (``deepagents.middleware.summarization``): plain
data, no import of ``sim`` or ``policies``.

A message is a dict: ``id``, ``role`` (``user``, ``assistant``, ``tool``), ``text``; an assistant message may carry
``calls`` (``[{"id", "name", "args"}]``, ``args`` a JSON object as ``json.dumps`` writes it), a tool message
``results`` (``[{"call_id", "name", "text"}]``, one ``ToolMessage`` each). The agent's system prompt is ``SYSTEM``.

Each case: ``name``, ``input`` (the state's messages) and ``settings``: ``max_input_tokens`` (the chat model's profile;
None: a model without one, so ``compute_summarization_defaults`` falls back to fixed counts). The middleware is built
with those defaults and ``wrap_model_call`` is called once, as before a model call.
"""

from __future__ import annotations

import json
from typing import Any

Msg = dict[str, Any]

SYSTEM = "You are a deep agent. Plan, then use the file tools."


def user(text: str, id: str) -> Msg:
    return {"id": id, "role": "user", "text": text}


def step(
    k: int, name: str = "read_file", args: dict[str, Any] | None = None, out: int = 300, tag: str = ""
) -> list[Msg]:
    """One call of ``name`` with ``args`` and its result of ``out`` characters."""
    cid = f"c{tag}{k}"
    call = {"id": cid, "name": name, "args": json.dumps(args if args is not None else {"path": f"src/m{k}.py"})}
    result = {"call_id": cid, "name": name, "text": f"result {k} " + "r" * out}
    return [
        {"id": f"a{tag}{k}", "role": "assistant", "text": f"Step {k}.", "calls": [call]},
        {"id": f"t{tag}{k}", "role": "tool", "results": [result]},
    ]


def write(k: int, size: int, tag: str = "") -> list[Msg]:
    return step(k, "write_file", {"file_path": f"src/m{k}.py", "content": "x" * size}, out=40, tag=tag)


def edit(k: int, size: int, tag: str = "") -> list[Msg]:
    args = {"file_path": f"src/m{k}.py", "old_string": "o" * size, "new_string": "n" * size}
    return step(k, "edit_file", args, out=40, tag=tag)


def run(*steps: list[Msg], task: str = "Refactor the parser and keep the API.") -> list[Msg]:
    return [user(task, "task"), *(m for s in steps for m in s)]


def case(name: str, msgs: list[Msg], max_input_tokens: int | None = 4_000) -> dict[str, Any]:
    return {"name": name, "input": msgs, "settings": {"max_input_tokens": max_input_tokens}}


CASES: list[dict[str, Any]] = [
    case("below-the-trigger", run(*(step(k) for k in range(20)))),
    case("over-the-trigger-keeps-a-tenth", run(*(step(k) for k in range(45)))),
    case("far-over-the-trigger", run(*(step(k) for k in range(80)))),
    case(
        "truncation-alone-is-enough", run(*(write(k, 3_000) for k in range(5)), *(step(k, tag="r") for k in range(25)))
    ),
    case("truncation-then-summary", run(*(write(k, 3_000) for k in range(5)), *(step(k, tag="r") for k in range(45)))),
    case("edit-file-arguments", run(*(edit(k, 2_500) for k in range(3)), *(step(k, tag="r") for k in range(30)))),
    case("short-write-file-arguments", run(*(write(k, 100) for k in range(80)))),
    case(
        "mixed-write-file-arguments",
        run(*(write(k, 3_000 if k % 2 else 100) for k in range(6)), *(step(k, tag="r") for k in range(25))),
    ),
    case(
        "long-arguments-in-the-keep-window",
        run(*(step(k) for k in range(44)), *(write(k, 3_000, "w") for k in range(2))),
    ),
    case(
        "new-user-message-in-the-tail",
        [*run(*(step(k) for k in range(44))), user("Also update the docs.", "next"), *step(0, tag="n")],
    ),
    case("no-profile-below-170000", run(*(step(k) for k in range(45))), max_input_tokens=None),
    case("bigger-window", run(*(step(k, out=900) for k in range(80))), max_input_tokens=20_000),
]
