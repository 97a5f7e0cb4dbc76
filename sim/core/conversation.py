"""The script a run replays: messages made of parts, the facts they establish, and the tools offered.

A :class:`Conversation` is immutable. Synthetic scenarios build one from a seed; importers build one
from a recording. The engine replays it request by request: every ``assistant`` message is the
scripted reply to a model request whose prompt is the view just before it.

Roles follow the providers' common ground. ``tool`` messages hold only ``tool_result`` parts and
answer the ``tool_call`` parts of the assistant message before them (a parallel batch is one
assistant message with several calls, then their results). ``change`` and ``revert`` parts carry the
change ids that a revert must be able to resolve; a ``command`` part in a user message is a slash
command such as ``/compact``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from sim.core.errors import InvalidConfig

Role = Literal["system", "user", "assistant", "tool"]
PartKind = Literal["text", "thinking", "tool_call", "tool_result", "change", "revert", "command"]
FactKind = Literal["recall", "artifact", "decision", "constraint", "continuation"]
FACT_KINDS: tuple[str, ...] = get_args(FactKind)
ROLES: tuple[str, ...] = get_args(Role)
PART_KINDS: tuple[str, ...] = get_args(PartKind)

_ALLOWED_PARTS: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "user": frozenset({"text", "command", "change", "revert"}),
    "assistant": frozenset({"text", "thinking", "tool_call", "change", "revert"}),
    "tool": frozenset({"tool_result"}),
}


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a message.

    Attributes:
        kind: what the part is.
        text: the content: prose, thinking, a tool's output, a change's description, a command's argument.
        call_id: pairs a ``tool_call`` with its ``tool_result``.
        name: the tool's name (calls and results) or the command's name (``compact``).
        args: a tool call's arguments as a JSON string.
        is_error: a tool result that reports a failure.
        ref: a ``change`` part's change id, or the change id a ``revert`` part reverts.
        original_bytes: set when a tool result was bounded on entry: its size before bounding.
        is_json: a tool result whose ``text`` is the JSON text of a value (an object, an array, a number, a
            boolean, null) rather than a string. A client that keeps results as JSON values (effect-agent) encodes
            such a result as the value, not as a quoted string; nothing else reads it. A view's edit that replaces
            the text (a placeholder, a truncation) makes it a string again.
    """

    kind: PartKind
    text: str = ""
    call_id: str | None = None
    name: str | None = None
    args: str | None = None
    is_error: bool = False
    ref: str | None = None
    original_bytes: int | None = None
    is_json: bool = False

    def __post_init__(self) -> None:
        if self.kind not in PART_KINDS:
            raise InvalidConfig(f"part kind {self.kind!r} is not one of {', '.join(PART_KINDS)}")
        if self.kind in ("tool_call", "tool_result") and not self.call_id:
            raise InvalidConfig(f"a {self.kind} part needs a call_id")
        if self.kind in ("change", "revert") and not self.ref:
            raise InvalidConfig(f"a {self.kind} part needs ref (the change id)")
        if self.kind == "command" and not self.name:
            raise InvalidConfig("a command part needs name, e.g. 'compact'")
        if self.is_json and self.kind != "tool_result":
            raise InvalidConfig(f"is_json is for tool results only, not a {self.kind} part")

    @property
    def chars(self) -> int:
        """Characters this part contributes to a serialized prompt (text plus args plus name)."""
        return len(self.text) + len(self.args or "") + len(self.name or "")


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported usage recorded with a reply: ground truth from a recording."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Everything the provider counted as prompt, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the script.

    Attributes:
        id: stable id, unique in its conversation.
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        parts: the content, in order.
        pending: the message raises something still awaiting an answer (an approval, a connection
            request); from the start of its turn on, nothing may be compacted until it is resolved.
        resolves: ids of pending messages this one answers.
        usage: the provider's usage recorded for this reply, when the source had it.
        meta: source details kept for reports (never compared, never sent to the model).
    """

    id: str
    role: Role
    parts: tuple[Part, ...]
    pending: bool = False
    resolves: tuple[str, ...] = ()
    usage: Usage | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidConfig(f"message {self.id!r}: role {self.role!r} is not one of {', '.join(ROLES)}")
        allowed = _ALLOWED_PARTS[self.role]
        for part in self.parts:
            if part.kind not in allowed:
                raise InvalidConfig(
                    f"message {self.id!r}: a {self.role} message cannot hold a {part.kind} part "
                    f"(allowed: {', '.join(sorted(allowed))})"
                )
        if not self.parts:
            raise InvalidConfig(f"message {self.id!r} has no parts")

    @property
    def calls(self) -> tuple[Part, ...]:
        """The tool calls of an assistant message."""
        return tuple(p for p in self.parts if p.kind == "tool_call")

    @property
    def results(self) -> tuple[Part, ...]:
        """The tool results of a tool message."""
        return tuple(p for p in self.parts if p.kind == "tool_result")

    @property
    def command(self) -> str | None:
        """The slash command this user message carries, if any (``compact`` for ``/compact``)."""
        for p in self.parts:
            if p.kind == "command":
                return p.name
        return None

    @property
    def chars(self) -> int:
        """Serialized size in characters, the seeds' basis for chars/4 estimates."""
        return sum(p.chars for p in self.parts)

    @property
    def text(self) -> str:
        """All visible text of the message joined by newlines (thinking excluded)."""
        return "\n".join(p.text for p in self.parts if p.kind != "thinking" and p.text)


@dataclass(frozen=True, slots=True)
class Fact:
    """Something the conversation establishes and needs again later.

    Attributes:
        id: stable id.
        kind: ``recall`` (a detail looked up), ``artifact`` (a path, id, name, command or number the agent
            uses again), ``decision`` (what was decided: a commit's subject, a plan), ``constraint`` (a rule
            of the user's, the system prompt's or a memory file's), ``continuation`` (what to do next: a todo
            item). Synthetic scenarios script all five; :mod:`sim.formats.probes` mines the last four from
            recordings.
        text: the fact's words; they appear verbatim in the source message.
        source: id of the message that establishes it.
        needed_at: ids of later messages; the fact must be visible at the first model request at or
            after each of them.
        mined: found in a recording by :func:`sim.formats.probes.mine_probes` rather than scripted by a
            scenario, so reports can tell the two apart (a boolean, left out of checksums when false, so
            scripted conversations keep theirs).
        carriers: ids of other messages that hold the same text verbatim (a re-read, a restating summary);
            the fact is visible when any of them is, as when its source is.
    """

    id: str
    kind: FactKind
    text: str
    source: str
    needed_at: tuple[str, ...] = ()
    mined: bool = False
    carriers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in FACT_KINDS:
            raise InvalidConfig(f"fact {self.id!r}: kind {self.kind!r} is not one of {', '.join(FACT_KINDS)}")


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool schema offered to the model; it is part of every agent prompt and is counted."""

    name: str
    description: str = ""
    parameters: str = "{}"  # JSON schema as a string, kept verbatim


@dataclass(frozen=True, slots=True)
class Conversation:
    """An immutable script: messages, the facts annotated on them, the tools offered, and provenance."""

    id: str
    messages: tuple[Message, ...]
    facts: tuple[Fact, ...] = ()
    tools: tuple[Tool, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise InvalidConfig(f"conversation {self.id!r} is not a valid script: " + "; ".join(problems[:5]))

    def index(self) -> dict[str, int]:
        """Message id to position."""
        return {m.id: i for i, m in enumerate(self.messages)}


def validate(conv: Conversation) -> list[str]:
    """Structural problems of a script, empty when it is valid.

    Checks ids are unique, a system message comes only first, every tool result answers a call of
    the assistant message that precedes its tool messages, and facts point at real messages. A call
    may stay unanswered only at the very end (the script stops mid-turn). A message awaiting an
    approval is marked ``pending`` instead; the message that answers it lists it in ``resolves``.
    """
    problems: list[str] = []
    seen: set[str] = set()
    open_calls: dict[str, str] = {}
    for i, m in enumerate(conv.messages):
        if m.id in seen:
            problems.append(f"message id {m.id!r} appears twice (second at position {i})")
        seen.add(m.id)
        if m.role == "system" and i != 0:
            problems.append(f"system message {m.id!r} at position {i}; only the first message may be system")
        if m.role == "tool":
            for p in m.results:
                if p.call_id not in open_calls:
                    problems.append(f"message {m.id!r}: tool result {p.call_id!r} answers no open call")
                else:
                    del open_calls[p.call_id]
        else:
            if open_calls:
                owners = sorted(set(open_calls.values()))
                problems.append(f"message {m.id!r}: calls {sorted(open_calls)} of {owners} have no result before it")
                open_calls.clear()
            for p in m.calls:
                open_calls[p.call_id or ""] = m.id
    ids = seen
    for f in conv.facts:
        if f.source not in ids:
            problems.append(f"fact {f.id!r}: source {f.source!r} is not a message id")
        for n in f.needed_at:
            if n not in ids:
                problems.append(f"fact {f.id!r}: needed_at {n!r} is not a message id")
        for c in f.carriers:
            if c not in ids:
                problems.append(f"fact {f.id!r}: carrier {c!r} is not a message id")
    return problems
