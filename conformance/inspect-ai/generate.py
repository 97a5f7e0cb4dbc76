"""Run inspect_ai's own compaction on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/inspect-ai`` (``requirements.txt``), from anywhere:
``.venv-conformance/inspect-ai/bin/python conformance/inspect-ai/generate.py``. Writes
``tests/golden/conformance/inspect-ai.json``.

The model is inspect's ``mockllm/model``, offline: its summaries are scripted (``SUMMARY-1``, ...), and
its token counter is replaced by ceil(characters / 4) of the text inspect counts, the estimator of the
simulator's ``chars4`` tokenizer (inspect's default, tiktoken's o200k_base, would need a download).

What is recorded (``expected``), in one shape for both sides (the test builds ours the same way):

* ``view``: the messages sent, in order. A message is ``{"id", "role"}`` plus, where it had them, ``text``,
  ``thinking`` (``kept`` or ``dropped``), ``calls`` (``[{"id", "args"}]``) and for a tool message ``call``
  and ``result``; a value that is unchanged reads ``"="``, a changed one is given in full. A summary reads
  ``{"summary": true, "role", "text"}`` with the summariser's text replaced by ``<body>``.
* ``summarised``: the ids the summariser saw besides the system prompt, the input and its prompt
  (``summary`` for a previous summary message).
* handler cases: ``requests``, one per assistant message of the script: ``compacted`` (whether the
  handler compacted before it), ``view``, ``tokens`` (inspect's count of the view sent) and, when it
  compacted, ``summarised``; or ``error`` where inspect raised (and the script stops).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import inspect_ai
from cases import CASES, expand, handler
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentReasoning,
    ContentText,
    ModelInfo,
    ModelOutput,
    ModelUsage,
    get_model,
    set_model_info,
)
from inspect_ai.model._compaction import (
    CompactionAuto,
    CompactionEdit,
    CompactionStrategy,
    CompactionSummary,
    CompactionTrim,
    compaction,
)
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.tool import ToolCall

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "conformance" / "long"))
from conversations import load  # noqa: E402

OUT = ROOT / "tests" / "golden" / "conformance" / "inspect-ai.json"
STRATEGIES = {"edit": CompactionEdit, "trim": CompactionTrim, "summary": CompactionSummary, "auto": CompactionAuto}
WRAPPER_OPEN = "<summary>\n"
#: Added to each call's reported input tokens: 0 for the cases; the long runs' request framing (:func:`engine_count`).
REPORTED_EXTRA = 0
WRAPPER_CLOSE = "\n</summary>"


async def _chars4(self: MockLLM, text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


MockLLM.count_text_tokens = _chars4  # type: ignore[method-assign]


def to_inspect(m: dict[str, Any]) -> ChatMessage:
    """A case message as inspect's ``ChatMessage`` (its id in ``metadata["cid"]`` too: edits give new ids)."""
    meta = {"cid": m["id"]}
    text = expand(m.get("text", ""))
    if m["role"] == "system":
        return ChatMessageSystem(id=m["id"], content=text, metadata=meta)
    if m["role"] == "user":
        return ChatMessageUser(id=m["id"], content=text, metadata=meta)
    if m["role"] == "tool":
        return ChatMessageTool(id=m["id"], content=text, tool_call_id=m["call_id"], function=m["name"], metadata=meta)
    content: list[Any] = []
    if "thinking" in m:
        content.append(ContentReasoning(reasoning=m["thinking"]))
    if text:
        content.append(ContentText(text=text))
    calls = [ToolCall(id=c["id"], function=c["name"], arguments=c["args"]) for c in m.get("calls", [])]
    return ChatMessageAssistant(id=m["id"], content=content, tool_calls=calls or None, metadata=meta)


def _text(msg: ChatMessage) -> str:
    if isinstance(msg.content, str):
        return msg.content
    return "".join(c.text for c in msg.content if isinstance(c, ContentText))


def describe(msg: ChatMessage, originals: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One sent message in the shared shape (see the module docstring)."""
    meta = msg.metadata or {}
    if "summary" in meta:
        text = _text(msg)
        a, b = text.index(WRAPPER_OPEN) + len(WRAPPER_OPEN), text.rindex(WRAPPER_CLOSE)
        return {"summary": True, "role": msg.role, "text": text[:a] + "<body>" + text[b:]}
    orig = originals[meta["cid"]]
    out: dict[str, Any] = {"id": orig["id"], "role": msg.role}
    text = _text(msg)
    if msg.role == "tool":
        out["call"] = orig["call_id"]
        out["result"] = "=" if text == expand(orig["text"]) else text
        return out
    if text or orig.get("text"):
        out["text"] = "=" if text == expand(orig.get("text", "")) else text
    if msg.role == "assistant":
        if "thinking" in orig:
            kept = isinstance(msg.content, list) and any(isinstance(c, ContentReasoning) for c in msg.content)
            out["thinking"] = "kept" if kept else "dropped"
        calls = {c["id"]: c for c in orig.get("calls", [])}
        if calls or msg.tool_calls:
            out["calls"] = [
                {"id": tc.id, "args": "=" if tc.arguments == calls.get(tc.id, {}).get("args") else tc.arguments}
                for tc in msg.tool_calls or []
            ]
    return out


def summarised(messages: list[ChatMessage], n_prefix: int) -> list[str]:
    """The ids a summariser saw past the system prompt and input (the last message is its prompt)."""
    out = []
    for m in messages[n_prefix:-1]:
        meta = m.metadata or {}
        out.append("summary" if "summary" in meta else meta["cid"])
    return out


class Summariser:
    """mockllm's scripted outputs: ``SUMMARY-k``; keeps what each call was given."""

    def __init__(self) -> None:
        self.inputs: list[list[ChatMessage]] = []

    def __call__(self, input: list[ChatMessage], *_: Any) -> ModelOutput:
        self.inputs.append(list(input))
        return ModelOutput.from_content("mockllm/model", f"SUMMARY-{len(self.inputs)}")


def strategy_for(settings: dict[str, Any]) -> CompactionStrategy:
    return STRATEGIES[settings["strategy"]](**settings["inspect_params"])  # type: ignore[no-any-return]


def prefix_len(msgs: list[dict[str, Any]]) -> int:
    """System + input: up to and including the first user message (``partition_messages``)."""
    first = next((i for i, m in enumerate(msgs) if m["role"] == "user"), len(msgs) - 1)
    return first + 1


async def run_compact(case: dict[str, Any]) -> dict[str, Any]:
    msgs = case["input"]["messages"]
    originals = {m["id"]: m for m in msgs}
    summariser = Summariser()
    model = get_model("mockllm/model", custom_outputs=summariser)
    out, _ = await strategy_for(case["settings"]).compact(model, [to_inspect(m) for m in msgs], [])
    expected: dict[str, Any] = {"compacted": True, "view": [describe(m, originals) for m in out]}
    if summariser.inputs:
        expected["summarised"] = summarised(summariser.inputs[-1], prefix_len(msgs))
    return expected


async def run_handler(case: dict[str, Any]) -> dict[str, Any]:
    """React's use of the handler: compact before each model call, record the call's usage after it."""
    s = case["settings"]
    msgs = case["input"]["messages"]
    originals = {m["id"]: m for m in msgs}
    summariser = Summariser()
    set_model_info("mockllm/model", ModelInfo(context_length=s["window"]))
    model = get_model("mockllm/model", custom_outputs=summariser)
    strategy = strategy_for(s)
    passes: list[int] = []
    inner = strategy.compact

    async def spy(model: Any, messages: list[ChatMessage], tools: Any) -> Any:
        passes.append(1)
        return await inner(model, messages, tools)

    strategy.compact = spy  # type: ignore[method-assign]
    prefix = [to_inspect(m) for m in msgs[: prefix_len(msgs)]]
    handler = compaction(strategy, prefix=prefix, tools=[], model=model)
    history: list[ChatMessage] = []
    requests: list[dict[str, Any]] = []
    for m in msgs:
        if m["role"] != "assistant":
            history.append(to_inspect(m))
            continue
        before, seen = len(passes), len(summariser.inputs)
        try:
            sent, extra = await handler.compact_input(history)
        except RuntimeError as exc:
            requests.append({"before": m["id"], "error": str(exc).split(":")[0]})
            break
        if extra is not None:
            history.append(extra)
        req: dict[str, Any] = {
            "before": m["id"],
            "compacted": len(passes) > before,
            "view": [describe(x, originals) for x in sent],
        }
        if len(summariser.inputs) > seen:
            req["summarised"] = summarised(summariser.inputs[-1], prefix_len(msgs))
        used = await model.count_tokens(sent) + REPORTED_EXTRA
        req["tokens"] = used
        requests.append(req)
        await handler.record_output(
            sent,
            ModelOutput.from_content("mockllm/model", "ok").model_copy(
                update={"usage": ModelUsage(input_tokens=used, output_tokens=1, total_tokens=used + 1)}
            ),
        )
        history.append(to_inspect(m))
    return {"requests": requests}


# -- long conversations (conformance/long/): the handler before every model call ---------------------------------
def long_messages(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """A long conversation in the cases' form: the system prompt, one tool message per result."""
    out: list[dict[str, Any]] = [{"id": "m0", "role": "system", "text": conv["system"]}]
    for m in conv["messages"]:
        if m["role"] == "tool":
            for j, r in enumerate(m["results"]):
                rid = m["id"] if len(m["results"]) == 1 else f"{m['id']}.{j}"
                out.append({"id": rid, "role": "tool", "call_id": r["call_id"], "name": r["name"], "text": r["text"]})
        elif m["role"] == "assistant":
            calls = [{"id": c["id"], "name": c["name"], "args": json.loads(c["args"])} for c in m["calls"]]
            out.append({"id": m["id"], "role": "assistant", "text": m["text"], **({"calls": calls} if calls else {})})
        else:
            out.append({"id": m["id"], "role": "user", "text": m["text"]})
    return out


def digest(request: dict[str, Any]) -> dict[str, Any]:
    """A request of a long run, small: whether it compacted (or the error), how many messages and cleared results it
    sent, and a hash of the whole view (both sides describe views alike, so equal views hash alike)."""
    if "error" in request:
        return {"before": request["before"], "error": request["error"]}
    view = request["view"]
    cleared = sum(1 for v in view if v.get("role") == "tool" and v.get("result") != "=")
    text = json.dumps(view, sort_keys=True)
    return {
        "before": request["before"],
        "compacted": request["compacted"],
        "messages": len(view),
        "cleared": cleared,
        "view": hashlib.sha256(text.encode()).hexdigest()[:16],
    }


def q(text: str) -> int:
    return math.ceil(len(text) / 4)


async def engine_count(self: MockLLM, input: Any, config: Any = None) -> int:
    """The count the simulator's engine reports for a request with its ``chars4`` tokenizer: 3 for the request, per
    message 4 plus a quarter of each text (rounded up), per call or result 3 more plus its name's and arguments'
    quarters. The long runs count with it, so they compare inspect's strategies on the counts our engine reports
    (as ``conformance/autogen-core`` does), not two tokenizers' margins at each threshold crossing. The request's 3
    are counted where inspect counts what is not a message: ``count_tool_tokens`` (the tools' JSON embedded in one
    user message, empty here as none are offered) counts them, and each call's reported usage adds them
    (:data:`REPORTED_EXTRA`), as the provider's count of a request holds them."""
    if all(isinstance(m, ChatMessageUser) and not _text(m) for m in input):
        return 3
    total = 0
    for m in input:
        total += 4 + q(_text(m))
        if isinstance(m, ChatMessageTool):
            total += 3 + q(m.function or "")
        if isinstance(m, ChatMessageAssistant):
            total += sum(3 + q(tc.function) + q(json.dumps(tc.arguments)) for tc in m.tool_calls or [])
    return total


async def long_section() -> list[dict[str, Any]]:
    global REPORTED_EXTRA
    out = []
    MockLLM.count_tokens = engine_count  # type: ignore[method-assign,assignment]
    REPORTED_EXTRA = 3
    for conv in load():
        msgs = long_messages(conv)
        whole = sum(len(expand(m.get("text", ""))) for m in msgs) // 4
        for strategy in ("edit", "trim"):
            threshold = {"threshold": whole // 3}
            case = handler(f"long_{strategy}_{conv['name']}", strategy, threshold, threshold, msgs, window=1_000_000)
            requests = (await run_handler(case))["requests"]
            out.append(
                {
                    "conversation": conv["name"],
                    "strategy": strategy,
                    "settings": case["settings"],
                    "requests": [digest(r) for r in requests],
                }
            )
    return out


async def main() -> None:
    out = []
    for case in CASES:
        run = run_handler if case["settings"]["mode"] == "handler" else run_compact
        out.append({**case, "expected": await run(case)})
    doc = {"package": "inspect-ai", "version": inspect_ai.__version__, "cases": out, "long": await long_section()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(out)} cases, inspect-ai {inspect_ai.__version__}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
