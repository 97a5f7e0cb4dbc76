"""Run the Python SDK's own client-side compaction on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/anthropic`` (``requirements.txt``), from anywhere:
``.venv-conformance/anthropic/bin/python conformance/anthropic/generate.py``. Writes
``tests/golden/conformance/anthropic.json``.

No network: the runner (``BetaToolRunner``, the synchronous one) gets a fake client whose ``beta.messages``
answers ``parse`` (the agent's requests, loop cases) with the scripted responses and ``create`` (the summary
request) with a fixed summary; both record what they were sent. Everything else is the SDK's own code:
``_check_and_compact`` for ``check`` cases, ``__run__`` for ``loop`` cases.

What is recorded (``expected``), with messages named by their case ids, except ``summary:<role>`` for the
message holding the fake summary, ``prompt`` for the summary prompt, ``results:<tool_use ids>`` for a message of
tool results, and ``<id>[stripped:<block types kept>]`` for a message the SDK changed:

* ``check``: ``triggered``; when it compacted, ``summary_request`` (the messages sent, in order),
  ``prompt`` (``default`` or ``custom``: the summary prompt used) and ``messages_after`` (the runner's
  messages once compacted);
* ``loop``: ``requests`` (the messages of each agent request, in order), ``compacted_after`` (the response
  after which each compaction happened), ``summary_requests`` and ``tools_run`` (``name(input)``, in order).

``long``: each long conversation of ``conformance/long/`` through ``__run__`` (:func:`long_run`), threshold a quarter
of its size; every model call the runner made, with the usage reported, the request's messages and, where it
compacted, the summary request.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import anthropic
from anthropic import beta_tool
from anthropic.lib.tools._beta_compaction_control import DEFAULT_SUMMARY_PROMPT
from anthropic.lib.tools._beta_runner import BetaToolRunner
from anthropic.types.beta.parsed_beta_message import ParsedBetaMessage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "conformance" / "anthropic.json"
MODEL = "claude-sonnet-4-5"
FAKE_SUMMARY = "<summary>\nThe scripted summary of the fake client.\n</summary>"


def to_message(resp: dict[str, Any], rid: str | None = None) -> ParsedBetaMessage[None]:
    """A scripted response as the SDK's own message type."""
    return ParsedBetaMessage.model_validate(
        {
            "id": rid or resp["id"],
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": resp["content"],
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in resp["content"]) else "end_turn",
            "stop_sequence": None,
            "usage": resp["usage"],
        }
    )


class _Messages:
    def __init__(self, responses: list[dict[str, Any]]) -> None:
        self.responses = list(responses)
        self.parsed: list[tuple[str, ParsedBetaMessage[None], list[Any]]] = []  # (case id, message, sent)
        self.created: list[dict[str, Any]] = []

    def parse(self, **kw: Any) -> ParsedBetaMessage[None]:
        resp = self.responses.pop(0)
        msg = to_message(resp)
        self.parsed.append((resp["id"], msg, list(kw["messages"])))
        return msg

    def create(self, **kw: Any) -> ParsedBetaMessage[None]:
        self.created.append(kw)
        usage = {"input_tokens": 0, "output_tokens": 50}
        return to_message({"id": "summary", "content": [{"type": "text", "text": FAKE_SUMMARY}], "usage": usage})


class FakeClient:
    """What the runner touches of ``Anthropic``: ``client.beta.messages.parse`` and ``.create``."""

    def __init__(self, responses: list[dict[str, Any]]) -> None:
        self.beta = type("Beta", (), {})()
        self.beta.messages = _Messages(responses)


def strip_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": m["role"], "content": [dict(b) for b in m["content"]]} for m in messages]


def block_type(b: Any) -> str:
    return str(b["type"] if isinstance(b, dict) else b.type)


class Namer:
    """Names the messages the runner sends by the ids of the case."""

    def __init__(self, history: list[dict[str, Any]], prompts: tuple[str, ...]) -> None:
        self.history = history
        self.prompts = prompts
        self.responses: dict[int, str] = {}  # id() of a response's content list -> its case id

    def name(self, m: Any) -> str:
        content = m["content"]
        if id(content) in self.responses:
            return self.responses[id(content)]
        if isinstance(content, str):
            return "prompt" if content in self.prompts else "?" + content[:30]
        blocks = [b if isinstance(b, dict) else b.model_dump() for b in content]
        if blocks and all(b["type"] == "text" and b["text"] == FAKE_SUMMARY for b in blocks):
            return f"summary:{m['role']}"
        if blocks and all(b["type"] == "tool_result" for b in blocks):
            return "results:" + ",".join(b["tool_use_id"] for b in blocks)
        for h in self.history:
            if h["role"] == m["role"] and h["content"] == blocks:
                return str(h["id"])
        for h in self.history:  # a message the SDK changed: the history message it came from
            if h["role"] == m["role"] and all(b in h["content"] for b in blocks):
                return f"{h['id']}[stripped:{','.join(block_type(b) for b in blocks)}]"
        return "?"


def run_check(case: dict[str, Any]) -> dict[str, Any]:
    settings = case["settings"]
    client = FakeClient([])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        runner = BetaToolRunner(
            params={"model": MODEL, "max_tokens": 4096, "messages": strip_ids(case["history"])},
            options={},
            tools=[],
            client=client,  # type: ignore[arg-type]
            compaction_control={"enabled": True, **settings},
        )
    runner._last_message = to_message(case["response"])
    triggered = runner._check_and_compact()
    namer = Namer(case["history"], (DEFAULT_SUMMARY_PROMPT, settings.get("summary_prompt", DEFAULT_SUMMARY_PROMPT)))
    out: dict[str, Any] = {"triggered": triggered}
    if triggered:
        (req,) = client.beta.messages.created
        out["summary_request"] = [namer.name(m) for m in req["messages"]]
        last = req["messages"][-1]
        out["prompt"] = "default" if last["content"] == DEFAULT_SUMMARY_PROMPT else "custom"
        out["prompt_role"] = last["role"]
        out["summary_model_is_the_runners"] = req["model"] == MODEL and req["max_tokens"] == 4096
    out["messages_after"] = [namer.name(m) for m in runner._params["messages"]]
    return out


def run_loop(case: dict[str, Any]) -> dict[str, Any]:
    tools_run: list[str] = []
    answers = case["tool_results"]

    def make(name: str, arg: str) -> Any:
        def fn(**kw: str) -> str:
            tools_run.append(f"{name}({kw[arg]})")
            return str(answers[name])

        fn.__name__ = name
        schema = {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}
        return beta_tool(fn, name=name, description=f"{name} tool", input_schema=schema)

    args = {"grep": "pattern", "read_file": "path", "bash": "cmd", "edit": "path"}
    tools = [make(name, args[name]) for name in answers]
    client = FakeClient(case["responses"])
    calls = client.beta.messages
    namer = Namer(case["messages"], (DEFAULT_SUMMARY_PROMPT,))
    requests: list[list[str]] = []
    compacted_after: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        runner = BetaToolRunner(
            params={"model": MODEL, "max_tokens": 4096, "messages": strip_ids(case["messages"])},
            options={},
            tools=tools,
            client=client,  # type: ignore[arg-type]
            compaction_control={"enabled": True, **case["settings"]},
        )
        summaries = 0
        for _ in runner:
            if len(calls.created) > summaries:  # the previous response's check compacted
                compacted_after.append(calls.parsed[-2][0])
                summaries = len(calls.created)
            rid, msg, sent = calls.parsed[-1]
            requests.append([namer.name(m) for m in sent])
            namer.responses[id(msg.content)] = rid
        if len(calls.created) > summaries:
            compacted_after.append(calls.parsed[-1][0])
    return {
        "requests": requests,
        "compacted_after": compacted_after,
        "summary_requests": [[namer.name(m) for m in kw["messages"]] for kw in calls.created],
        "tools_run": tools_run,
    }


# -- long conversations (conformance/long/): the runner's own loop, model call by model call -----------------------
REQUEST_OVERHEAD, MESSAGE_OVERHEAD, PART_OVERHEAD = 3, 4, 3  # the engine's framing (sim.core.model)


def q(text: str) -> int:
    """The engine's ``chars4`` count of a text."""
    return math.ceil(len(text) / 4)


def parts_tokens(m: dict[str, Any]) -> int:
    """The engine's count of a neutral message's parts (its framing apart)."""
    if m["role"] == "user":
        return q(m["text"])
    if m["role"] == "assistant":
        return q(m["text"]) + sum(PART_OVERHEAD + q(c["name"]) + q(c["args"]) for c in m["calls"])
    return sum(PART_OVERHEAD + q(r["text"]) + q(r["name"]) for r in m["results"])


class Interrupt(Exception):
    """The script's next message is the user's: the runner's loop stops before its next request."""


class ScriptedMessages:
    """``client.beta.messages`` for a long conversation: ``parse`` answers each request with the conversation's next
    assistant message (after a compaction, with the same message again: the stand-in for the model's answer to the
    summary, as the replay keeps it), its usage what the simulator's engine counts with ``chars4`` (the request:
    3, the system prompt and each message as the log holds it, 4 plus its parts; the output: the reply's parts),
    and raises :class:`Interrupt` when the user speaks next. ``create`` (the summary request) answers the fake
    summary. Each model call is recorded."""

    def __init__(self, conv: dict[str, Any]) -> None:
        self.msgs = conv["messages"]
        self.by_id = {m["id"]: m for m in self.msgs}
        self.owner = {r["call_id"]: m["id"] for m in self.msgs if m["role"] == "tool" for r in m["results"]}
        self.system = MESSAGE_OVERHEAD + q(conv["system"])
        self.pos = 0  # the next message of the script
        self.last: dict[str, Any] | None = None
        self.pending_summary = False
        self.calls: list[dict[str, Any]] = []
        self.results: list[str] = []  # the texts the current reply's tool uses get, in order
        self.replies: dict[int, str] = {}  # id() of a returned message's content (the runner appends it) -> its id

    def names(self, sent: list[Any]) -> list[str]:
        """The request's messages by the conversation's ids (``summary`` for the summary, ``prompt`` for the summary
        prompt; a message of tool results by the ids of the tool messages that hold them, joined by ``+``)."""
        out = []
        for m in sent:
            content = m["content"]
            if isinstance(content, str):
                out.append("prompt")
                continue
            blocks = [b if isinstance(b, dict) else b.model_dump() for b in content]
            if blocks[0]["type"] == "tool_result":
                out.append("+".join(dict.fromkeys(self.owner[b["tool_use_id"]] for b in blocks)))
            elif blocks[0]["type"] == "text" and blocks[0]["text"] == FAKE_SUMMARY:
                out.append("summary")
            else:
                out.append(m["cid"] if "cid" in m else self.replies[id(content)])
        return out

    def tokens(self, names: list[str]) -> int:
        total = REQUEST_OVERHEAD + self.system
        for name in names:
            if name == "summary":
                total += MESSAGE_OVERHEAD + q(FAKE_SUMMARY)
            else:
                total += sum(MESSAGE_OVERHEAD + parts_tokens(self.by_id[i]) for i in name.split("+"))
        return total

    def parse(self, **kw: Any) -> ParsedBetaMessage[None]:
        reask = self.pending_summary
        if not reask:
            while self.pos < len(self.msgs) and self.msgs[self.pos]["role"] == "tool":
                self.pos += 1  # results: the runner's tools wrote them
            if self.pos == len(self.msgs) or self.msgs[self.pos]["role"] != "assistant":
                raise Interrupt
            self.last = self.msgs[self.pos]
            self.pos += 1
        self.pending_summary = False
        reply = self.last
        assert reply is not None
        names = self.names(kw["messages"])
        usage = {"input_tokens": self.tokens(names), "output_tokens": parts_tokens(reply)}
        texts = {r["call_id"]: r["text"] for m in self.msgs if m["role"] == "tool" for r in m["results"]}
        self.results = [texts[c["id"]] for c in reply["calls"]]
        self.calls.append({"at": reply["id"], "reask": reask, "request": " ".join(names), **usage})
        content: list[dict[str, Any]] = [{"type": "text", "text": reply["text"]}] if reply["text"] else []
        content += [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.loads(c["args"])}
            for c in reply["calls"]
        ]
        msg = to_message({"id": reply["id"], "content": content, "usage": usage})
        self.replies[id(msg.content)] = reply["id"]
        return msg

    def create(self, **kw: Any) -> ParsedBetaMessage[None]:
        self.pending_summary = True
        self.calls[-1]["summary_request"] = " ".join(self.names(kw["messages"]))
        usage = {"input_tokens": 0, "output_tokens": 50}
        return to_message({"id": "summary", "content": [{"type": "text", "text": FAKE_SUMMARY}], "usage": usage})


def long_run(conv: dict[str, Any], threshold: int) -> dict[str, Any]:
    """The conversation through ``BetaToolRunner``'s own loop (``__run__``, ``_check_and_compact`` after every
    response), one runner per stretch of the user's: the caller starts it on the runner's messages so far, the
    final answer of the previous stretch and the user's new message appended (as a chat application does)."""
    client = FakeClient([])
    scripted = ScriptedMessages(conv)
    client.beta.messages = scripted  # type: ignore[assignment]

    def fn(**_: Any) -> str:
        return scripted.results.pop(0)

    names = sorted({c["name"] for m in conv["messages"] for c in m.get("calls", ())})
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    tools = [beta_tool(fn, name=n, description=f"{n} tool", input_schema=schema) for n in names]
    messages: list[dict[str, Any]] = []
    msgs = conv["messages"]
    while scripted.pos < len(msgs):
        while scripted.pos < len(msgs) and msgs[scripted.pos]["role"] == "user":
            m = msgs[scripted.pos]
            messages.append({"role": "user", "content": [{"type": "text", "text": m["text"]}], "cid": m["id"]})
            scripted.pos += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            runner = BetaToolRunner(
                params={"model": MODEL, "max_tokens": 4096, "system": conv["system"], "messages": messages},
                options={},
                tools=tools,
                client=client,  # type: ignore[arg-type]
                compaction_control={"enabled": True, "context_token_threshold": threshold},
            )
            try:
                for _ in runner:
                    pass
            except Interrupt:
                pass
        messages = list(runner._params["messages"])
        last = runner._get_last_message()
        if last is not None and not any(b.type == "tool_use" for b in last.content):  # the final answer
            cid = scripted.replies[id(last.content)]
            messages.append({"role": "assistant", "content": [b.model_dump() for b in last.content], "cid": cid})
    return {"conversation": conv["name"], "threshold": threshold, "fake_summary": FAKE_SUMMARY, "calls": scripted.calls}


def long_section() -> list[dict[str, Any]]:
    """Each long conversation with the threshold at a quarter of its whole size (the engine's count of a request
    holding all of it)."""
    out = []
    for conv in load():
        whole = ScriptedMessages(conv).tokens([m["id"] for m in conv["messages"]])
        out.append(long_run(conv, whole // 4))
    return out


def main() -> None:
    cases = []
    for case in CASES:
        expected = run_check(case) if case["kind"] == "check" else run_loop(case)
        cases.append({"name": case["name"], "input": case, "settings": case["settings"], "expected": expected})
    doc = {"package": "anthropic", "version": anthropic.__version__, "cases": cases, "long": long_section()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases, anthropic {anthropic.__version__})")


if __name__ == "__main__":
    main()
