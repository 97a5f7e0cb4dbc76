"""Hypothesis strategies for conversations that stress compaction.

``csim check`` uses these at run time (so they live in the package, not under ``tests/``), and the
property suite uses them to fuzz the bundled policies. A generated conversation is always a valid
script (:func:`sim.conversation.validate` finds nothing), and it is built to reach the corners where
real policies break: parallel tool batches, thinking tool loops (one atomic unit up to the next user
message), tool results whose sizes are heavy-tailed against a small window, changes and the reverts
that need them, pending approvals that pin a turn (and sometimes never get resolved), ``/compact``
commands, and facts needed again later.

How it is built, and why:

* Hypothesis draws a list of plain turn *specs* (sizes, flags, small integers), and
  :func:`build_conversation` turns the list into messages deterministically. Shrinking then works
  on the list: a failing example loses whole turns, calls and sizes until what is left reads as a
  handful of short messages. References (the change a revert undoes, the pending message a user
  answers, the message where a fact is needed) are stored as small integers resolved at build time,
  so deleting a turn never leaves a dangling reference, it only re-targets or drops one.
* Text is a drawn word repeated to a drawn length: cheap to make and to tokenize (a repeated
  word is one cached BPE piece), and sizes stay readable in a counterexample.
* Every atomic unit is kept below :data:`UNIT_SHARE` of the window (and every turn below
  :data:`TURN_SHARE`), measured in the seeds' chars/4 plus framing. A correct policy can then always
  make the prompt fit; a result bigger than the window would fail every policy and teach nothing.
  Sizes are clamped to the room left in their unit and turn, so a drawn "huge" result shrinks to
  fit rather than being rejected (rejection would starve Hypothesis of examples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

from sim.conversation import Conversation, Fact, Message, Part, Tool, validate
from sim.model import MESSAGE_OVERHEAD, PART_OVERHEAD, ModelConfig

WORDS = ("alpha", "river", "stone", "cloud", "maple", "ember", "orbit", "lemon", "pixel", "delta")
TOOL_NAMES = ("read", "bash", "grep", "edit")
FACT_KINDS = ("recall", "artifact", "decision", "constraint", "continuation")

# Shares of the window, in estimated tokens (chars/4 plus framing), that one atomic unit and one
# turn may take. Below half the input budget each, so that after any correct compaction the live
# turn and the newest unit still fit with room for the next reply.
UNIT_SHARE = 0.30
TURN_SHARE = 0.42


def small_model(window: int = 8_000) -> ModelConfig:
    """The small test model: ``window`` tokens with an eighth reserved for output, so a few dozen
    turns of generated text cross every policy's trigger."""
    return ModelConfig(context_window=window, output_reserve=max(window // 8, 64))


# -- specs: what Hypothesis draws --------------------------------------------------------------------
@dataclass(frozen=True)
class CallSpec:
    tool: int
    args_size: int
    result_size: int
    is_error: bool


@dataclass(frozen=True)
class StepSpec:
    """One assistant message of a tool loop with its calls (results follow right after)."""

    thinking: int  # 0: no thinking part, else its size
    text: int
    calls: tuple[CallSpec, ...]
    split_results: bool  # one tool message per result, or one message holding the whole batch
    change: bool
    revert: int | None  # which earlier change to revert (index modulo the changes so far)


@dataclass(frozen=True)
class TurnSpec:
    """A user turn (or a ``/compact`` command) and the agent's work on it."""

    compact: bool
    word: int
    user_text: int
    user_change: bool
    user_revert: int | None
    resolve: bool
    steps: tuple[StepSpec, ...]
    reply: int  # 0: no final text reply
    pending: bool  # the final reply asks for an approval
    fact: tuple[int, int, int] | None  # (kind, where: 0 user / 1 result / 2 reply, messages until needed)


def _sizes(window: int, scale: float) -> st.SearchStrategy[int]:
    """Heavy-tailed character counts: mostly short, sometimes a large share of the window.

    Four tiers drawn with equal weight (so a quarter of draws are "huge" before clamping); the
    first tier is the shrink target, so a counterexample's texts end up a few characters long.
    """
    top = max(int(window * 4 * UNIT_SHARE * scale), 64)
    return st.one_of(
        st.integers(1, 60),
        st.integers(60, min(600, top)),
        st.integers(min(600, top), max(min(600, top), top // 3)),
        st.integers(max(min(600, top), top // 3), top),
    )


def _calls(window: int) -> st.SearchStrategy[tuple[CallSpec, ...]]:
    call = st.builds(CallSpec, st.integers(0, len(TOOL_NAMES) - 1), st.integers(0, 40), _sizes(window, 1.0),
                     st.booleans())
    return st.lists(call, max_size=4).map(tuple)


def _steps(window: int) -> st.SearchStrategy[tuple[StepSpec, ...]]:
    step = st.builds(
        StepSpec,
        thinking=st.one_of(st.just(0), st.integers(1, 400)),
        text=st.integers(0, 200),
        calls=_calls(window).filter(bool),
        split_results=st.booleans(),
        change=st.booleans(),
        revert=st.one_of(st.none(), st.integers(0, 7)),
    )
    return st.lists(step, max_size=3).map(tuple)


def _turns(window: int) -> st.SearchStrategy[TurnSpec]:
    return st.builds(
        TurnSpec,
        compact=st.integers(0, 7).map(lambda x: x == 7),  # one turn in eight is a /compact
        word=st.integers(0, len(WORDS) - 1),
        user_text=_sizes(window, 0.3),
        user_change=st.integers(0, 5).map(lambda x: x == 5),
        user_revert=st.one_of(st.none(), st.none(), st.integers(0, 7)),
        resolve=st.booleans(),
        steps=_steps(window),
        reply=st.one_of(st.integers(1, 300), st.just(0)),
        pending=st.integers(0, 5).map(lambda x: x == 5),
        fact=st.one_of(st.none(), st.tuples(st.integers(0, len(FACT_KINDS) - 1), st.integers(0, 2),
                                            st.integers(1, 30))),
    )


@st.composite
def conversations(draw: st.DrawFn, window: int = 8_000, max_turns: int = 40) -> Conversation:
    """A valid conversation of 1..``max_turns`` turns stressing compaction under a ``window``-token model.

    Use with :func:`small_model` (the same ``window``), e.g. ``ModelConfig(context_window=8000,
    output_reserve=1000)``, so that compaction triggers within a few dozen turns.
    """
    system = draw(st.integers(1, 400))
    turns = draw(st.lists(_turns(window), min_size=1, max_size=max_turns))
    return build_conversation(system, turns, window)


# -- building: specs to messages, deterministically --------------------------------------------------
def _text(word: str, n: int) -> str:
    """``word`` repeated (space-separated) to exactly ``n`` characters (at least one character)."""
    n = max(n, 1)
    return ((word + " ") * (n // (len(word) + 1) + 1))[:n].rstrip() or word[:n]


def _part_cost(chars: int) -> int:
    return math.ceil(chars / 4) + PART_OVERHEAD + 2


class _Builder:
    """Accumulates messages and charges each part to its atomic unit and its turn.

    :meth:`begin` mirrors :class:`sim.state.Ledger`'s unit rule (a tool message joins its call's
    unit; with thinking, the whole tool loop is one unit), so sizes are clamped against the unit
    the part will really belong to.
    """

    def __init__(self, window: int) -> None:
        self.unit_cap = int(window * UNIT_SHARE)
        self.turn_cap = int(window * TURN_SHARE)
        self.messages: list[Message] = []
        self.fact_needs: list[tuple[Fact, int]] = []  # fact, messages after its source until needed
        self.changes: list[str] = []
        self.pending: list[str] = []
        self.unit = 0
        self.turn = 0
        self.loop_thinking = False
        self.calls = 0

    def begin(self, role: str, thinking: bool = False) -> str:
        """Open the next message; returns its id."""
        prev = self.messages[-1] if self.messages else None
        if role == "tool":
            new_unit = False
        elif role == "assistant":
            new_unit = not (prev is not None and prev.role == "tool" and self.loop_thinking)
            if new_unit:
                self.loop_thinking = thinking
        else:
            new_unit, self.loop_thinking = True, False
        if new_unit:
            self.unit = 0
        self.unit += MESSAGE_OVERHEAD
        self.turn += MESSAGE_OVERHEAD
        return f"m{len(self.messages)}"

    def take(self, wanted: int, extra: int = 0) -> int:
        """Characters a text part may have so its unit and turn stay under their caps (at least 1);
        ``extra`` characters that will be appended (a fact) are charged too."""
        left = min(self.unit_cap - self.unit, self.turn_cap - self.turn) - PART_OVERHEAD - 2
        n = max(1, min(wanted, left * 4 - extra))
        self.charge(n + extra)
        return n

    def charge(self, chars: int) -> None:
        cost = _part_cost(chars)
        self.unit += cost
        self.turn += cost

    def fixed(self, p: Part) -> Part:
        self.charge(p.chars)
        return p

    def change(self, word: str) -> Part:
        ref = f"ch{len(self.changes) + 1}"
        self.changes.append(ref)
        return self.fixed(Part("change", f"edit {word}.py", ref=ref))

    def revert(self, target: int) -> Part | None:
        if not self.changes:
            return None
        return self.fixed(Part("revert", "undo", ref=self.changes[target % len(self.changes)]))

    def fact(self, spec: tuple[int, int, int], source: str) -> str:
        kind, _, after = spec
        k = len(self.fact_needs) + 1
        f = Fact(f"f{k}", FACT_KINDS[kind], f"FACT{k}", source)  # type: ignore[arg-type]
        self.fact_needs.append((f, after))
        return f.text


def _with_fact(word: str, size: int, fact: str | None) -> str:
    return _text(word, size) + (f" {fact}" if fact else "")


def build_conversation(system_chars: int, turns: list[TurnSpec], window: int = 8_000,
                       conversation_id: str = "generated") -> Conversation:
    """The conversation a list of turn specs describes (see the module docstring)."""
    b = _Builder(window)
    msgs = b.messages
    b.begin("system")
    msgs.append(Message("m0", "system", (Part("text", _text("system", b.take(system_chars))),)))
    for t in turns:
        word = WORDS[t.word]
        b.turn = 0
        if t.compact:
            msgs.append(Message(b.begin("user"), "user", (b.fixed(Part("command", name="compact")),)))
            continue
        uid = b.begin("user")
        fact = b.fact(t.fact, uid) if t.fact is not None and t.fact[1] == 0 else None
        parts = [Part("text", _with_fact(word, b.take(t.user_text, len(fact or "") + 1), fact))]
        if t.user_change:
            parts.append(b.change(word))
        if t.user_revert is not None and (rv := b.revert(t.user_revert)) is not None:
            parts.append(rv)
        resolves = (b.pending.pop(0),) if t.resolve and b.pending else ()
        msgs.append(Message(uid, "user", tuple(parts), resolves=resolves))
        for k, step in enumerate(t.steps):
            aid = b.begin("assistant", thinking=bool(step.thinking))
            aparts: list[Part] = []
            if step.thinking:
                aparts.append(Part("thinking", _text("think", b.take(step.thinking))))
            if step.text:
                aparts.append(Part("text", _text(word, b.take(step.text))))
            if step.change:
                aparts.append(b.change(word))
            if step.revert is not None and (rv := b.revert(step.revert)) is not None:
                aparts.append(rv)
            ids = []
            for c in step.calls:
                b.calls += 1
                ids.append(f"c{b.calls}")
                aparts.append(b.fixed(Part("tool_call", call_id=ids[-1], name=TOOL_NAMES[c.tool],
                                           args='{"q": "' + _text(word, c.args_size) + '"}')))
            msgs.append(Message(aid, "assistant", tuple(aparts)))
            batch: list[Part] = []
            tid = ""
            for j, (c, cid) in enumerate(zip(step.calls, ids, strict=True)):
                if step.split_results or j == 0:
                    tid = b.begin("tool")
                fact = b.fact(t.fact, tid) if t.fact is not None and t.fact[1] == 1 and k == j == 0 else None
                body = _with_fact(word, b.take(c.result_size, len(fact or "") + 1), fact)
                batch.append(Part("tool_result", body, call_id=cid, name=TOOL_NAMES[c.tool], is_error=c.is_error))
                if step.split_results:
                    msgs.append(Message(tid, "tool", (batch.pop(),)))
            if batch:
                msgs.append(Message(tid, "tool", tuple(batch)))
        if t.reply or t.pending:
            rid = b.begin("assistant")
            fact = b.fact(t.fact, rid) if t.fact is not None and t.fact[1] == 2 else None
            body = _with_fact(word, b.take(t.reply or 20, len(fact or "") + 1), fact)
            msgs.append(Message(rid, "assistant", (Part("text", body),), pending=t.pending))
            if t.pending:
                b.pending.append(rid)
    ids = [m.id for m in msgs]
    pos = {m: i for i, m in enumerate(ids)}
    facts = []
    for f, after in b.fact_needs:
        need = pos[f.source] + after
        facts.append(Fact(f.id, f.kind, f.text, f.source, (ids[need],) if need < len(ids) else ()))
    used = sorted({p.name for m in msgs for p in m.calls if p.name})
    conv = Conversation(conversation_id, tuple(msgs), tuple(facts), tuple(Tool(n, f"{n} tool") for n in used))
    problems = validate(conv)  # Conversation() raises on any problem already; this states the contract
    assert not problems, problems
    return conv


# -- printing ---------------------------------------------------------------------------------------
def describe_part(p: Part) -> str:
    """A part in a few characters: kind, the ids it carries, and its size."""
    if p.kind == "tool_call":
        return f"call {p.call_id} {p.name}({len(p.args or '')})"
    if p.kind == "tool_result":
        return f"result {p.call_id} {len(p.text)}" + (" error" if p.is_error else "") + (
            f" bounded from {p.original_bytes}" if p.original_bytes else "")
    if p.kind in ("change", "revert"):
        return f"{p.kind} {p.ref}"
    if p.kind == "command":
        return f"/{p.name}" + (f" {len(p.text)}" if p.text else "")
    return f"{p.kind} {len(p.text)}"


def describe(conv: Conversation) -> str:
    """One line per message (index, id, role, parts with sizes), then one line per fact."""
    lines = []
    for i, m in enumerate(conv.messages):
        flags = (" pending" if m.pending else "") + (f" resolves {','.join(m.resolves)}" if m.resolves else "")
        lines.append(f"{i:>4} {m.id:<5} {m.role:<9} " + ", ".join(describe_part(p) for p in m.parts) + flags)
    for f in conv.facts:
        lines.append(f"     fact {f.id} {f.kind} {f.text!r} in {f.source}"
                     + (f", needed at {', '.join(f.needed_at)}" if f.needed_at else ""))
    return "\n".join(lines)


__all__ = ["TOOL_NAMES", "TURN_SHARE", "UNIT_SHARE", "WORDS", "build_conversation", "conversations", "describe",
           "small_model"]
