"""Building a conversation: its parts, the tools it offers, and the builder that numbers messages and
records facts.

This is what a generator writes with; the text it writes comes from :mod:`sim.scenarios._filler` and the
choices from :mod:`sim.scenarios._rng`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.core.conversation import Conversation, Fact, FactKind, Message, Part, Role, Tool
from sim.scenarios._rng import Rng


def text(s: str) -> Part:
    return Part("text", s)


def thinking(s: str) -> Part:
    return Part("thinking", s)


def call(call_id: str, name: str, args: Mapping[str, Any]) -> Part:
    """A tool call; arguments as canonical JSON so that equal calls serialise to equal bytes."""
    return Part("tool_call", call_id=call_id, name=name, args=json.dumps(dict(args), sort_keys=True))


def result(call_id: str, name: str, body: str, is_error: bool = False) -> Part:
    return Part("tool_result", body, call_id=call_id, name=name, is_error=is_error)


def tool(name: str, description: str, properties: Mapping[str, Any], required: Sequence[str]) -> Tool:
    """A tool offered to the model, its JSON schema as canonical text (its size counts in every prompt)."""
    schema = {"type": "object", "properties": dict(properties), "required": list(required)}
    return Tool(name, description, json.dumps(schema, sort_keys=True))


@dataclass
class _DraftFact:
    kind: FactKind
    text: str
    source: str
    needed_at: list[str] = field(default_factory=list)


class ScenarioBuilder:
    """Appends messages with ids ``m0001``, ``m0002``..., hands out call and change ids, and records facts.

    Facts are drafts until :meth:`build`: a generator learns where a fact is needed only as it writes
    the later messages, so :meth:`need` adds those places as it goes, and :meth:`build` checks what the
    engine relies on (the text is verbatim in a text or tool result of the source; every need comes after
    the source and is a user or tool message, where a new model request starts).
    """

    def __init__(self, rng: Rng) -> None:
        self.rng = rng
        self.messages: list[Message] = []
        self._index: dict[str, int] = {}
        self._facts: list[_DraftFact] = []
        self._calls = 0
        self._changes = 0
        self._tags: set[str] = set()

    # ids
    @property
    def last_id(self) -> str:
        return self.messages[-1].id

    @property
    def last_role(self) -> str:
        return self.messages[-1].role if self.messages else ""

    def call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls:04d}"

    def change_id(self) -> str:
        self._changes += 1
        return f"chg-{self._changes}"

    def tag(self, digits: int = 4) -> str:
        """A hex tag not handed out before in this conversation: makes paths, errors and ids unique, so a
        fact's text points at one place."""
        while True:
            t = f"{self.rng.randint(16**digits):0{digits}x}"
            if t not in self._tags:
                self._tags.add(t)
                return t

    def number(self, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi)`` whose decimal text is unique in this conversation."""
        while True:
            n = self.rng.randint(lo, hi)
            if str(n) not in self._tags:
                self._tags.add(str(n))
                return n

    # messages
    def add(self, role: Role, *parts: Part, pending: bool = False, resolves: tuple[str, ...] = ()) -> str:
        mid = f"m{len(self.messages) + 1:04d}"
        self._index[mid] = len(self.messages)
        self.messages.append(Message(mid, role, tuple(parts), pending=pending, resolves=resolves))
        return mid

    def add_results(self, calls: Sequence[Part], bodies: Sequence[str | tuple[str, bool]]) -> list[str]:
        """One tool message per call, in order, right after the calls (the pairing providers require)."""
        ids = []
        for c, b in zip(calls, bodies, strict=True):
            body, err = (b, False) if isinstance(b, str) else b
            ids.append(self.add("tool", result(c.call_id or "", c.name or "", body, err)))
        return ids

    # facts
    def fact(self, kind: FactKind, fact_text: str, source: str) -> int:
        """Record a fact established by message ``source``; returns a handle for :meth:`need`."""
        self._facts.append(_DraftFact(kind, fact_text, source))
        return len(self._facts) - 1

    def need(self, handle: int | None, at: str | None = None) -> None:
        """The fact matters again at message ``at`` (by default the newest message, the input to the next
        model request). Ignored when ``handle`` is None (a fact this run never established), when ``at``
        is not after the source, or when it is already listed."""
        if handle is None:
            return
        f = self._facts[handle]
        at = at or self.last_id
        if self._index[at] <= self._index[f.source] or at in f.needed_at:
            return
        if self.messages[self._index[at]].role not in ("user", "tool"):
            raise RuntimeError(f"fact {f.text!r} needed at {at}, which is not a user or tool message")
        f.needed_at.append(at)

    def facts_of(self, kind: FactKind) -> list[int]:
        return [i for i, f in enumerate(self._facts) if f.kind == kind]

    def facts_from(self, source: str) -> list[int]:
        """Handles of the facts message ``source`` establishes."""
        return [i for i, f in enumerate(self._facts) if f.source == source]

    def fact_text(self, handle: int) -> str:
        return self._facts[handle].text

    def build(self, conv_id: str, tools: Sequence[Tool], meta: Mapping[str, Any]) -> Conversation:
        """The conversation. Facts nothing ever needed are left out: a fact is a probe of retention, and
        one without a place where it is needed probes nothing (a short run can end before its use)."""
        facts = []
        kept = [f for f in self._facts if f.needed_at]
        for n, f in enumerate(kept, 1):
            src = self.messages[self._index[f.source]]
            if not any(f.text in p.text for p in src.parts if p.kind in ("text", "tool_result")):
                raise RuntimeError(f"fact {f.text!r} is not in the text of its source {f.source}")
            facts.append(Fact(f"f{n:03d}", f.kind, f.text, f.source, tuple(f.needed_at)))
        return Conversation(conv_id, tuple(self.messages), tuple(facts), tuple(tools), dict(meta))
