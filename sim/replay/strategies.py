"""Hypothesis strategies for conversations that stress compaction.

``csim check`` uses these at run time (so they live in the package, not under ``tests/``), and the
property suite uses them to fuzz the bundled policies. A generated conversation is always a valid
script (:func:`sim.core.conversation.validate` finds nothing), and it is built to reach the corners where
real policies break: parallel tool batches, thinking tool loops (one atomic unit up to the next user
message), tool results whose sizes are heavy-tailed against a small window, changes and the reverts
that need them, pending approvals that pin a turn (and sometimes never get resolved), ``/compact``
commands, and facts needed again later.

How it is built, and why:

* Hypothesis draws lists of turn *specs*, each call, step and turn packed into one or two bounded
  integers, and :func:`build_conversation` turns them into messages deterministically. Shrinking
  then works on the lists and the integers: a failing example loses whole turns, calls and sizes
  until what is left reads as a handful of short messages. References (the change a revert
  undoes, the pending message a user answers, the message where a fact is needed) are stored as
  small integers resolved at build time, so deleting a turn never leaves a dangling reference, it
  only re-targets or drops one.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers as _providers
from hypothesis.internal.constants_ast import Constants

from sim.core.conversation import Conversation, Fact, Message, Part, Tool, validate
from sim.core.model import MESSAGE_OVERHEAD, PART_OVERHEAD, ModelConfig
from sim.core.view import Edit, Rule, Summary, View

WORDS = ("alpha", "river", "stone", "cloud", "maple", "ember", "orbit", "lemon", "pixel", "delta")
TOOL_NAMES = ("read", "bash", "grep", "edit")
FACT_KINDS = ("recall", "artifact", "decision", "constraint", "continuation")

# Shares of the window, in estimated tokens (chars/4 plus framing), that one atomic unit and one
# turn may take. Below half the input budget each, so that after any correct compaction the live
# turn and the newest unit still fit with room for the next reply.
UNIT_SHARE = 0.30
TURN_SHARE = 0.42


@contextmanager
def fixed_constants() -> Iterator[None]:
    """Draw as if no module of one's own were loaded: the same examples whatever the process imported before.

    Hypothesis (6.131 on) draws about one primitive value in twenty from the constants written in the source of
    the *local* modules loaded so far (``sys.modules`` outside the standard library and site-packages). Those
    differ with what a process imported before a check: fifty policies' modules, a user's own, a test module.
    So a derandomised ``csim check`` of one policy drew other conversations after the property suite's other
    checks had loaded their policies (a broken policy's check found its bug alone and missed it in the full
    suite), and a notebook that imports more would see another report than ``csim check``. Inside this context
    the pool of local constants is empty (Hypothesis's global pool of edge cases stays). Hypothesis has no
    setting for this; the hook is its provider module's ``_get_local_constants``, and without it (another
    Hypothesis) nothing is changed."""
    get = getattr(_providers, "_get_local_constants", None)
    cache = getattr(_providers, "CONSTANTS_CACHE", None)
    if get is None or cache is None or not hasattr(cache, "cache"):
        yield
        return
    empty = Constants()
    cache.cache.clear()  # the permitted constants it holds were drawn from the pool being replaced
    _providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        _providers._get_local_constants = get
        cache.cache.clear()


def small_model(window: int = 8_000) -> ModelConfig:
    """The small test model: ``window`` tokens with an eighth reserved for output, so a few dozen
    turns of generated text cross every policy's trigger."""
    return ModelConfig(context_window=window, output_reserve=max(window // 8, 64))


# -- specs: what Hypothesis draws --------------------------------------------------------------------
# A draw costs far more than building text, so each call, step and turn is packed into one or two
# bounded integers (each below 2**24, where Hypothesis draws uniformly) and decoded here. Every
# field decodes so that 0 means "less": no thinking, no edit, no fact, the shortest text. Shrinking
# an integer towards 0 therefore simplifies the message it describes, and deleting list elements
# removes whole turns, steps and calls.


@dataclass(frozen=True)
class CallSpec:
    """One tool call and its result."""

    tool: int
    result_size: int
    is_error: bool


@dataclass(frozen=True)
class StepSpec:
    """One assistant message of a tool loop with its calls (their results follow right after)."""

    thinking: int  # 0: no thinking part, else its size
    calls: tuple[CallSpec, ...]
    split_results: bool  # one tool message per result, or one message holding the whole batch
    edit: int  # 0: none, 1: a change part, 2 and up: a revert of the (edit - 1)-th newest change


@dataclass(frozen=True)
class TurnSpec:
    """A user turn (or a ``/compact`` command) and the agent's work on it."""

    compact: bool
    user_text: int
    edit: int  # as StepSpec.edit, on the user message
    resolve: bool  # the user message answers the oldest pending approval, if any
    steps: tuple[StepSpec, ...]
    reply: int  # size of the final text reply; 0: the turn ends on tool results
    pending: bool  # the final reply asks for an approval
    # (kind, where: 0 user text / 1 first result / 2 reply, messages from the source until it is needed)
    fact: tuple[int, int, int] | None


def _log_size(top: int, x: int) -> int:
    """Map 0..1000 to 1..top, heavy-tailed: log-uniform warped upwards (median about top**0.78),
    so most texts are short, many are hundreds of characters, and some take most of a unit."""
    return max(1, round(float(max(top, 2) ** ((x / 1000) ** 0.35))))


def _edit(x: int) -> int:
    """0..11 to an edit code: mostly nothing; sometimes a change; sometimes a revert."""
    return 0 if x < 7 else x - 6


def _decode_call(x: int, top: int) -> CallSpec:
    return CallSpec(tool=x % 4, is_error=bool((x // 4) % 2), result_size=_log_size(top, x // 8))


def _decode_step(raw: tuple[int, list[int]], top: int) -> StepSpec:
    x, calls = raw
    think = x // 24  # 0..600: a third of steps think
    return StepSpec(
        thinking=0 if think < 400 else think - 399,
        split_results=bool((x // 12) % 2),
        edit=_edit(x % 12),
        calls=tuple(_decode_call(c, top) for c in calls),
    )


def _decode_turn(raw: tuple[int, list[tuple[int, list[int]]], int], window: int) -> TurnSpec:
    a, steps, b = raw
    unit_chars = int(window * 4 * UNIT_SHARE)  # before clamping to the room left in the unit and turn
    f = b % 900  # below 450: no fact
    fact = None if f < 450 else ((f - 450) % 5, ((f - 450) // 5) % 3, (f - 450) // 15 + 1)
    return TurnSpec(
        compact=a % 8 == 7,  # one turn in eight is a /compact
        resolve=bool((a // 8) % 2),
        edit=_edit((a // 16) % 12),
        user_text=_log_size(int(unit_chars * 0.3), a // 192),
        steps=tuple(_decode_step(s, unit_chars) for s in steps),
        reply=(b // 900) % 301,
        pending=b // (301 * 900) == 5,  # the most significant field: shrinking drops it first
        fact=fact,
    )


_CALL = st.integers(0, 8 * 1001 - 1)  # tool (2 bits), error (1 bit), result size (0..1000)
_STEP = st.tuples(st.integers(0, 601 * 24 - 1), st.lists(_CALL, min_size=1, max_size=4))
_TURN = st.tuples(st.integers(0, 1001 * 192 - 1), st.lists(_STEP, max_size=4), st.integers(0, 301 * 5400 - 1))


@st.composite
def conversations(draw: st.DrawFn, window: int = 8_000, max_turns: int = 40) -> Conversation:
    """A valid conversation of 1..``max_turns`` turns stressing compaction under a ``window``-token model.

    Use with :func:`small_model` (the same ``window``), e.g. ``ModelConfig(context_window=8000,
    output_reserve=1000)``, so that compaction triggers within a few dozen turns.
    """
    system = draw(st.integers(1, 400))
    # Turns come in runs of 1..5: a flat list would average 6 turns (Hypothesis' default length),
    # too few to cross a trigger; runs of runs average about 13 and still shrink by deleting whole
    # runs or single turns.
    runs = draw(st.lists(st.lists(_TURN, min_size=1, max_size=5), min_size=1, max_size=max(1, -(-max_turns // 3))))
    turns = [_decode_turn(t, window) for run in runs for t in run][:max_turns]
    return build_conversation(system, turns, window)


@st.composite
def views(draw: st.DrawFn, n: int, rules: tuple[Rule, ...], summaries: int = 1) -> View:
    """A view of an ``n``-message log (``n >= 1``): an open tail, sometimes one kept span before it, sometimes a
    summary (one of ``summaries`` texts), and edits with up to three of ``rules`` at bounds anywhere in the log.
    Not necessarily a view a policy would make: for checking what renders, counts and caches views."""
    start = draw(st.integers(1, n))
    spans: tuple[tuple[int, int], ...] = ()
    if start > 2 and draw(st.booleans()):
        a = draw(st.integers(1, start - 1))
        spans = ((a, draw(st.integers(a + 1, start))),)
    chosen = draw(st.lists(st.sampled_from(rules), max_size=3, unique=True)) if rules else []
    edits = tuple(Edit(rule, draw(st.integers(1, n))) for rule in chosen)
    summary = None
    if draw(st.booleans()):
        summary = Summary(f"SUMMARY {draw(st.integers(0, max(0, summaries - 1)))}", through=start)
    return View(start=start, spans=spans, edits=edits, summary=summary)


# -- building: specs to messages, deterministically --------------------------------------------------
def _text(word: str, n: int) -> str:
    """``word`` repeated (space-separated) to exactly ``n`` characters (at least one character)."""
    n = max(n, 1)
    return ((word + " ") * (n // (len(word) + 1) + 1))[:n].rstrip() or word[:n]


def _part_cost(chars: int) -> int:
    return math.ceil(chars / 4) + PART_OVERHEAD + 2


class _Builder:
    """Accumulates messages and charges each part to its atomic unit and its turn.

    :meth:`begin` mirrors :class:`sim.core.state.Ledger`'s unit rule (a tool message joins its call's
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

    def edit(self, code: int, word: str) -> Part | None:
        """The part a spec's ``edit`` code asks for: a new change (1), a revert of the
        ``code - 1``-th newest change (2 and up; the oldest when there are fewer), or nothing."""
        if code == 1:
            return self.change(word)
        if code >= 2 and self.changes:
            ref = self.changes[-min(code - 1, len(self.changes))]
            return self.fixed(Part("revert", "undo", ref=ref))
        return None

    def fact(self, spec: tuple[int, int, int], source: str) -> str:
        kind, _, after = spec
        k = len(self.fact_needs) + 1
        f = Fact(f"f{k}", FACT_KINDS[kind], f"FACT{k}", source)  # type: ignore[arg-type]
        self.fact_needs.append((f, after))
        return f.text


def _with_fact(word: str, size: int, fact: str | None) -> str:
    return _text(word, size) + (f" {fact}" if fact else "")


def build_conversation(
    system_chars: int, turns: list[TurnSpec], window: int = 8_000, conversation_id: str = "generated"
) -> Conversation:
    """The conversation a list of turn specs describes (see the module docstring)."""
    b = _Builder(window)
    msgs = b.messages
    b.begin("system")
    msgs.append(Message("m0", "system", (Part("text", _text("system", b.take(system_chars))),)))
    for n, t in enumerate(turns):
        word = WORDS[n % len(WORDS)]
        b.turn = 0
        if t.compact:
            msgs.append(Message(b.begin("user"), "user", (b.fixed(Part("command", name="compact")),)))
            continue
        uid = b.begin("user")
        fact = b.fact(t.fact, uid) if t.fact is not None and t.fact[1] == 0 else None
        parts = [Part("text", _with_fact(word, b.take(t.user_text, len(fact or "") + 1), fact))]
        if (ed := b.edit(t.edit, word)) is not None:
            parts.append(ed)
        resolves = (b.pending.pop(0),) if t.resolve and b.pending else ()
        msgs.append(Message(uid, "user", tuple(parts), resolves=resolves))
        for k, step in enumerate(t.steps):
            aid = b.begin("assistant", thinking=bool(step.thinking))
            aparts: list[Part] = []
            if step.thinking:
                aparts.append(Part("thinking", _text("think", b.take(step.thinking))))
            if (ed := b.edit(step.edit, word)) is not None:
                aparts.append(ed)
            ids = []
            for c in step.calls:
                b.calls += 1
                ids.append(f"c{b.calls}")
                aparts.append(
                    b.fixed(Part("tool_call", call_id=ids[-1], name=TOOL_NAMES[c.tool], args=f'{{"q": "{word}"}}'))
                )
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
        return (
            f"result {p.call_id} {len(p.text)}"
            + (" error" if p.is_error else "")
            + (f" bounded from {p.original_bytes}" if p.original_bytes else "")
        )
    if p.kind in ("change", "revert"):
        return f"{p.kind} {p.ref}"
    if p.kind == "command":
        return f"/{p.name}" + (f" {len(p.text)}" if p.text else "")
    return f"{p.kind} {len(p.text)}"


def describe(conv: Conversation) -> str:
    """One line per message (index, id, role, parts with sizes), then one line per fact."""
    lines = []
    for i, m in enumerate(conv.messages):
        flags = " pending" if m.pending else ""
        flags += f" resolves {','.join(m.resolves)}" if m.resolves else ""
        lines.append(f"{i:>4} {m.id:<5} {m.role:<9} " + ", ".join(describe_part(p) for p in m.parts) + flags)
    for f in conv.facts:
        lines.append(
            f"     fact {f.id} {f.kind} {f.text!r} in {f.source}"
            + (f", needed at {', '.join(f.needed_at)}" if f.needed_at else "")
        )
    return "\n".join(lines)


__all__ = [
    "TOOL_NAMES",
    "TURN_SHARE",
    "UNIT_SHARE",
    "WORDS",
    "CallSpec",
    "StepSpec",
    "TurnSpec",
    "build_conversation",
    "conversations",
    "describe",
    "small_model",
    "views",
]
