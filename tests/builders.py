"""Terse builders for test conversations, and small seams for looking inside a run.

Build messages with :func:`sys`, :func:`user`, :func:`asst`, :func:`tool` and :func:`compact_cmd`, then
turn them into a :class:`~sim.core.conversation.Conversation` with :func:`conv`, which gives every message
an id (``m0``, ``m1``, ... unless one was set with ``id=``)::

    c = conv(
        sys("You are a coding agent."),
        user("Fix the failing test", change("ch1", "edit a.py")),
        asst("Looking.", calls=["c1"]),
        tool("c1", "FAILED test_x"),
        asst("Done."),
    )

``calls`` takes call ids (the tool is then called ``grep``) or parts made by :func:`call`.
:func:`change` and :func:`revert` make the change / revert parts a user or assistant message carries.

:func:`state_of` builds the :class:`~sim.core.state.RunState` a policy would see after the whole script was
appended, with the context estimate set exactly, so a policy's ``decide`` can be driven at a boundary.
:func:`run_capture` runs the engine and also returns every request body it rendered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.base import Plan, Policy
from sim.core.conversation import Conversation, Fact, Message, Part, Tool
from sim.core.log import CompactionCreated, MessageAppended
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Injected, Messages, Summary, View, layout
from sim.replay.engine import Engine, RunConfig, RunResult

__all__ = [
    "Captured",
    "Draft",
    "asst",
    "call",
    "change",
    "command",
    "compact_cmd",
    "compaction_records",
    "conv",
    "envelope",
    "fact",
    "log_messages",
    "revert",
    "run_capture",
    "state_of",
    "sys",
    "system",
    "text_of",
    "tool",
    "tool_contents",
    "tools",
    "user",
]


@dataclass(frozen=True)
class Draft:
    """A message before :func:`conv` gives it an id."""

    role: str
    parts: tuple[Part, ...]
    id: str | None = None
    pending: bool = False
    resolves: tuple[str, ...] = ()


def _extra(parts: Iterable[Part | str]) -> tuple[Part, ...]:
    return tuple(Part("text", p) if isinstance(p, str) else p for p in parts)


def sys(text: str, *, id: str | None = None) -> Draft:
    """The system prompt."""
    return Draft("system", (Part("text", text),), id)


system = sys


def user(
    text: str, *extra: Part | str, id: str | None = None, pending: bool = False, resolves: Sequence[str] = ()
) -> Draft:
    """A user message; ``extra`` parts (a :func:`change`, a :func:`revert`) follow the text."""
    parts = ((Part("text", text),) if text else ()) + _extra(extra)
    return Draft("user", parts, id, pending, tuple(resolves))


def call(call_id: str, name: str = "grep", args: str = "{}") -> Part:
    """One tool call part."""
    return Part("tool_call", call_id=call_id, name=name, args=args)


def asst(
    text: str = "",
    calls: Sequence[str | Part] = (),
    *,
    thinking: str | None = None,
    parts: Sequence[Part] = (),
    id: str | None = None,
    pending: bool = False,
    resolves: Sequence[str] = (),
) -> Draft:
    """An assistant reply: optional thinking, text, extra parts, then its tool calls."""
    out: list[Part] = []
    if thinking is not None:
        out.append(Part("thinking", thinking))
    if text:
        out.append(Part("text", text))
    out.extend(parts)
    out.extend(call(c) if isinstance(c, str) else c for c in calls)
    return Draft("assistant", tuple(out), id, pending, tuple(resolves))


def tool(call_id: str, text: str, *, name: str = "grep", is_error: bool = False, id: str | None = None) -> Draft:
    """A tool message holding one result."""
    return Draft("tool", (Part("tool_result", text, call_id=call_id, name=name, is_error=is_error),), id)


def tools(results: dict[str, str], *, name: str = "grep", id: str | None = None) -> Draft:
    """One tool message holding the results of a parallel batch, ``{call_id: text}``."""
    return Draft("tool", tuple(Part("tool_result", t, call_id=c, name=name) for c, t in results.items()), id)


def change(ref: str, text: str = "") -> Part:
    """A change part (proposed edit ``ref``)."""
    return Part("change", text, ref=ref)


def revert(ref: str, text: str = "") -> Part:
    """A revert part undoing change ``ref``."""
    return Part("revert", text, ref=ref)


def command(name: str, text: str = "", *, id: str | None = None) -> Draft:
    """A user message carrying slash command ``/name``."""
    return Draft("user", (Part("command", text, name=name),), id)


def compact_cmd(*, id: str | None = None) -> Draft:
    """The ``/compact`` command."""
    return command("compact", id=id)


def tool_steps(n: int, *, first: int = 1, size: int = 200, thinking: bool = False) -> list[Draft]:
    """``n`` tool steps: an assistant message with one call (``c<k>``), then its result of about ``size``
    characters (ids ``a<k>``, ``t<k>``), ``k`` from ``first``."""
    out: list[Draft] = []
    for k in range(first, first + n):
        out.append(asst(f"step {k}", [call(f"c{k}")], thinking=f"think {k}" if thinking else None, id=f"a{k}"))
        out.append(tool(f"c{k}", f"out {k} " + "r" * size, id=f"t{k}"))
    return out


def user_turns(n: int, *, steps: int = 10, size: int = 300) -> list[Draft]:
    """``n`` user turns ("Next part k.", ids ``u<k>``), each followed by ``steps`` :func:`tool_steps`."""
    return [
        d
        for k in range(n)
        for d in (user(f"Next part {k}.", id=f"u{k}"), *tool_steps(steps, first=steps * k, size=size))
    ]


def case_conversation(msgs: Sequence[dict[str, Any]], system: str | None = None) -> Conversation:
    """A conformance case's messages as a conversation (the JSON the generators under ``conformance/`` write):
    ``{"role", "id", "text"}``, an assistant's ``calls`` (``id``, ``name``, ``args``), a tool message's
    ``results`` (``call_id``, ``name``, ``text``); ``system``: a system prompt first, with id ``system``."""
    drafts: list[Draft] = [] if system is None else [sys(system, id="system")]
    for m in msgs:
        if m["role"] == "system":
            drafts.append(sys(m["text"], id=m["id"]))
        elif m["role"] == "user":
            drafts.append(user(m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            drafts.append(asst(m["text"], [call(c["id"], c["name"], c["args"]) for c in m["calls"]], id=m["id"]))
        else:
            parts = tuple(Part("tool_result", r["text"], call_id=r["call_id"], name=r["name"]) for r in m["results"])
            drafts.append(Draft("tool", parts, m["id"]))
    return conv(*drafts)


def request_turn(k: int, size: int = 400) -> list[Draft]:
    """One user request ``u<k>``, a step with one call ``a<k>``, its result ``t<k>`` of ``size`` characters, and
    the reply ``d<k>``."""
    return [
        user(f"request {k}", id=f"u{k}"),
        asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"),
        tool(f"c{k}", "r" * size, id=f"t{k}"),
        asst(f"done {k}", id=f"d{k}"),
    ]


def shown_ids(c: Conversation, view: View) -> list[str]:
    """What ``view`` sends, in order: message ids, ``<summary>`` for the summary, an injected message's text."""
    out: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Summary):
            out.append("<summary>")
        elif isinstance(item, Injected):
            out.append(item.text)
        elif isinstance(item, Messages):
            out += [c.messages[i].id for i in range(item.a, item.b)]
    return out


def fact(id: str, kind: str, text: str, source: str, needed_at: Sequence[str] = ()) -> Fact:
    return Fact(id, kind, text, source, tuple(needed_at))  # type: ignore[arg-type]


def conv(
    *drafts: Draft | Message, id: str = "t", facts: Sequence[Fact] = (), tools: Sequence[Tool] = ()
) -> Conversation:
    """A conversation from drafts; drafts without an id get ``m<position>``."""
    msgs = []
    for i, d in enumerate(drafts):
        if isinstance(d, Message):
            msgs.append(d)
        else:
            role: Any = d.role
            msgs.append(Message(d.id or f"m{i}", role, d.parts, d.pending, d.resolves))
    return Conversation(id, tuple(msgs), tuple(facts), tuple(tools))


# -- looking inside a run ---------------------------------------------------------------------------
def thinking_loop(n: int, *, first: int = 1, size: int = 200, interleaved: bool = False) -> list[Draft]:
    """A tool loop of ``n`` steps (ids ``a<k>``/``t<k>``) whose first reply opens with thinking; with
    ``interleaved`` every reply does (Claude 4's interleaved thinking), else only the first (Claude 3.7's)."""
    out: list[Draft] = []
    for k in range(first, first + n):
        thinking = f"think {k}" if interleaved or k == first else None
        out.append(asst(f"step {k}", [call(f"c{k}")], thinking=thinking, id=f"a{k}"))
        out.append(tool(f"c{k}", f"out {k} " + "r" * size, id=f"t{k}"))
    return out


def thinking_rejection(
    policy: Policy, conversation: Conversation, plan: Plan, model: ModelConfig | None = None
) -> str | None:
    """Why Anthropic would reject the next request after ``plan`` (from ``policy`` over the whole
    ``conversation``) for its thinking, as the mock provider judges it (``RequestBuilder.thinking_problem``), or
    None. A summarising plan's summary is stood in for by one of its role."""
    eng = Engine(policy, conversation, RunConfig(model=model or ModelConfig(), tokenizer="chars4"))
    for m in conversation.messages:
        eng.append(m)
    view = plan.view_from(eng.state.view)
    if plan.summarize:
        view = view.with_(summary=Summary("summary", role=plan.summary_request.role))
    return eng.requests.thinking_problem(view)


def state_of(
    policy: Policy,
    conversation: Conversation,
    model: ModelConfig | None = None,
    *,
    context: int | None = None,
    view: View | None = None,
    tokenizer: str = "chars4",
) -> RunState:
    """The state a policy sees once every message of ``conversation`` is in the log.

    With ``context`` the estimate is exactly that number: the last provider report is ``context`` and
    nothing was appended since. Without it no request was made yet, so the estimate is chars/4 of the view.
    Messages are appended through the engine, so tool results are bounded as in a run.
    """
    eng = Engine(policy, conversation, RunConfig(model=model or ModelConfig(), tokenizer=tokenizer))
    for m in conversation.messages:
        eng.append(m)
    st = eng.state
    if view is not None:
        st.view = view
    if context is not None:
        st.last_input_tokens = context
        st.last_output_tokens = 0
        st.messages_at_last_request = len(eng.ledger.messages)
        st.chars_at_last_request = eng.ledger.chars_prefix[-1]
        assert st.estimated_context_tokens() == context
    return st


def reported(state: RunState, reply: int, prompt: int, output: int) -> RunState:
    """``state`` once the request that message ``reply`` answers reported ``prompt`` tokens and the reply ``output``
    (the view unchanged since): what a client that reads the provider's usage back knows mid-run."""
    state.last_input_tokens, state.last_output_tokens = prompt, output
    state.messages_at_last_request = reply
    state.view_at_last_request = state.view
    state.chars_at_last_request = state.chars(0, reply)
    return state


@dataclass
class Captured:
    """One agent (or grace) request as the engine rendered it."""

    view: View
    status: str | None
    rendered: list[dict[str, Any]] = field(default_factory=list)


class _CapturingEngine(Engine):
    """Records each request at the provider-validation seam: every agent and grace request (each attempt,
    rejected ones included) is validated exactly once, just before it is sent."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.captured: list[Captured] = []
        builder = self.requests
        inner = builder.validate

        def validate(view: View, status: str | None) -> None:
            self.captured.append(Captured(view, status, builder.render(view, status)))
            inner(view, status)

        builder.validate = validate  # type: ignore[method-assign]


def run_capture(
    policy: Policy, conversation: Conversation, config: RunConfig
) -> tuple[RunResult, list[Captured], Engine]:
    """Run the engine; also return every rendered request (in order, rejected ones included) and the
    engine."""
    eng = _CapturingEngine(policy, conversation, config)
    res = eng.run()
    return res, eng.captured, eng


def text_of(content: Any) -> str:
    """The text of a rendered message's content, in either wire format."""
    if isinstance(content, str):
        return content
    out = []
    for b in content:
        if b.get("type") == "text":
            out.append(b["text"])
        elif b.get("type") == "tool_result":
            out.append(b["content"])
    return "\n".join(out)


def tool_contents(rendered: list[dict[str, Any]]) -> dict[str, str]:
    """``{call_id: content}`` of every tool result in a rendered request, in either wire format."""
    out: dict[str, str] = {}
    for msg in rendered:
        if msg["role"] == "tool":
            out[msg["tool_call_id"]] = msg["content"]
        elif isinstance(msg.get("content"), list):
            for b in msg["content"]:
                if b.get("type") == "tool_result":
                    out[b["tool_use_id"]] = b["content"]
    return out


def log_messages(result: RunResult) -> list[Message]:
    """The messages of a run's log, in append order."""
    return [e.message for e in result.log if isinstance(e, MessageAppended)]


def compaction_records(result: RunResult) -> list[CompactionCreated]:
    return [e for e in result.log if isinstance(e, CompactionCreated)]


def envelope(text: str) -> dict[str, Any] | None:
    """The tool-result envelope ``text`` holds, or None when it is not one."""
    try:
        v = json.loads(text)
    except ValueError:
        return None
    return v if isinstance(v, dict) and v.get("truncatedToolResult") is True else None


# -- cassettes -----------------------------------------------------------------------------------------------------
#: Anthropic request messages of an agent run: the task, a tool call, its result, and an image the user adds.
ANTHROPIC_RUN: tuple[dict[str, Any], ...] = (
    {"role": "user", "content": "Add 2 and 3."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 2}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "5"}]},
    {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]},
)


def cassette(folder: Path, bodies: list[dict[str, object]]) -> Path:
    """``folder/agent_run.yaml``: a cassette of Anthropic calls with these request bodies, each answered with a
    short reply."""
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    interactions = [
        {
            "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": json.dumps(b)},
            "response": {"status": {"code": 200}, "body": {"string": json.dumps(reply)}},
        }
        for b in bodies
    ]
    p = folder / "agent_run.yaml"
    p.write_text(json.dumps({"interactions": interactions}), encoding="utf-8")
    return p
