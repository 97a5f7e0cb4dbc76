"""OpenAI Agents SDK ``LocalCompactionSession`` (PyPI ``openai-agents-context-compaction``): a sliding window over
the session's items, by count and by tokens, that never splits a call from its output.

Read: the ``openai-agents-context-compaction`` package 0.3.0, ``openai_agents_context_compaction/session.py``
(``LocalCompactionSession.get_items``, ``_boundary_aware_compact_with_indices``: the backward walk with an item
budget and a token budget, a call and its output kept or left together as a pair, the soft limit that keeps the
newest item or pair whatever its size; ``drop_orphaned_tool_outputs``; ``DefaultTokenCounter``: ``max(1, len // 4)``
plus 4 an item). The SDK's Runner reads the session once per run (``get_items`` before the new input is appended), so
the window applies at each user turn and the run's own items accumulate on top. Defaults: the class has none
(``window_size=None``, ``token_budget=None``: nothing dropped); 50 items is its docstring's example.
``conformance/openai-agents-context-compaction/`` runs the package's own ``get_items`` on scripted histories and
``tests/conformance/test_conformance_openai_agents_context_compaction.py`` compares this policy with what it kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies.autogen import context_base, kept_plan
from policies.base import Plan, Policy, Trigger, register
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

WINDOW_SIZE = 50  # the class docstring's example, LocalCompactionSession(underlying, window_size=50)
ITEM_OVERHEAD = 4  # each item's cost is token_counter(text) + 4


#: One Responses item: ``(kind, call id, tokens)``.
Item = tuple[str, str | None, int]


def items_of(m: Message) -> list[Item]:
    """The Responses items a message becomes, oldest first, each ``(kind, call id, tokens)``: a user or assistant
    message item for its text, a ``function_call`` per call, a ``function_call_output`` per result; tokens by
    ``DefaultTokenCounter`` (``max(1, characters // 4)``) plus 4."""
    out: list[Item] = []
    text = "\n".join(p.text for p in m.parts if p.kind == "text")
    if m.role in ("user", "assistant") and (text or not m.calls):
        out.append(("message", None, max(1, len(text) // 4) + ITEM_OVERHEAD))
    for p in m.parts:
        if p.kind == "tool_call":
            out.append(("call", p.call_id, max(1, len(f"{p.name} {p.args or ''}") // 4) + ITEM_OVERHEAD))
        elif p.kind == "tool_result":
            out.append(("output", p.call_id, max(1, len(p.text) // 4) + ITEM_OVERHEAD))
    return out


def _items_step(before: tuple[int, list[Item]], m: Message) -> tuple[int, list[Item]]:
    """The items of the log through ``m``, counted, and ``m``'s own, from the same of the log before it (folded over
    the log by ``RunState.running``, so each message's items are made once)."""
    items = items_of(m)
    return before[0] + len(items), items


def newest_items(state: RunState, base: int, end: int, window: int | None, budget: int | None) -> set[int] | None:
    """``_boundary_aware_compact_with_indices`` over the items of messages ``[base, end)``: the messages whose items
    it keeps, walking back from the newest (an output whose call is in the session takes two slots and their tokens,
    a message one; an item or pair that does not fit is skipped; the newest is kept whatever it costs), or None when
    the items fit the window already. An output's call is the session's last call of that id, as the package's map
    of call ids holds it.

    The walk stops once a budget is spent, so it reads the newest items only: each message's items and the count of
    all of them come from one running fold over the log, and a call is looked for where the walk has not been only
    when the walk meets its output (the call just before it, as a rule). The package reads the whole session each
    turn; a walk over all of it made every user turn cost the conversation (``benchmarks/results/per-turn-cost.md``)."""
    no_items: list[Item] = []
    per_message = state.running(_items_step, (0, no_items))  # [k + 1]: through message k, and message k's items
    if budget is None and window is not None and per_message[end][0] - per_message[base][0] <= window:
        return None
    last_call: dict[str, tuple[int, int]] = {}  # call id -> (message, tokens), the newest of that id
    missing: set[str] = set()  # ids of outputs whose call is not in the session
    slots, tokens = window, budget
    kept: set[int] = set()

    def call_of(cid: str, i: int) -> tuple[int, int] | None:
        """The newest call ``cid`` of the session: one the walk passed, or the nearest before message ``i``."""
        if cid in last_call or cid in missing:
            return last_call.get(cid)
        for j in range(i, base - 1, -1):
            hit = next((c for kind, c_id, c in reversed(per_message[j + 1][1]) if kind == "call" and c_id == cid), None)
            if hit is not None:
                last_call[cid] = (j, hit)
                return last_call[cid]
        missing.add(cid)
        return None

    for i in range(end - 1, base - 1, -1):
        for kind, cid, cost in reversed(per_message[i + 1][1]):
            if slots == 0 or tokens == 0:
                return kept
            if kind == "call":
                if cid is not None:
                    last_call.setdefault(cid, (i, cost))
                continue  # budgeted with its output
            if kind == "output":
                call = call_of(cid, i) if cid is not None else None
                if call is None:
                    continue
                need, cost = 2, cost + call[1]
                members: tuple[int, ...] = (i, call[0])
            else:
                need, members = 1, (i,)
            slots, tokens = take(kept, members, need, cost, slots, tokens)
    return kept


def take(
    kept: set[int], members: tuple[int, ...], need: int, cost: int, slots: int | None, tokens: int | None
) -> tuple[int | None, int | None]:
    """One step of the walk: an item (or a call with its output) of ``need`` slots and ``cost`` tokens is kept when
    it fits what is left, or when nothing is kept yet (the soft limit: then the budgets are spent); the slots and
    tokens left after it (None: no such limit)."""
    fits = (slots is None or slots >= need) and (tokens is None or tokens >= cost)
    if not fits and kept:
        return slots, tokens
    kept.update(members)
    if not fits:
        return (0 if slots is not None else None), (0 if tokens is not None else None)
    return (None if slots is None else slots - need), (None if tokens is None else tokens - cost)


@dataclass(frozen=True)
class OpenAIAgentsLocalConfig:
    """``LocalCompactionSession``'s parameters, its names.

    Attributes:
        window_size: the most items kept (50, the docstring's example); unset: no count limit.
        token_budget: the most tokens kept, by the default counter; unset (the default): no token limit.
    """

    window_size: int | None = WINDOW_SIZE
    token_budget: int | None = field(default=None, metadata={"tokens": True})

    def __post_init__(self) -> None:
        if self.window_size is not None and self.window_size < 1:
            raise InvalidConfig(f"window_size={self.window_size!r} must be >= 1, or unset")
        if self.token_budget is not None and self.token_budget <= 0:
            raise InvalidConfig(f"token_budget={self.token_budget!r} must be a positive integer (the package raises)")
        if self.window_size is None and self.token_budget is None:
            raise InvalidConfig("set window_size or token_budget: with neither, the session keeps everything")


@register("openai-agents-local-compaction")
class OpenAIAgentsLocal(Policy[OpenAIAgentsLocalConfig]):
    """OpenAI Agents SDK LocalCompactionSession: at each user turn, the newest 50 session items, calls with outputs.

    * **When**: ``get_items`` at the start of each run (each user turn), before the new user message joins; the run's
      own items are sent as they come.
    * **Kept** (``_boundary_aware_compact_with_indices``): walking back from the newest item, an output whose call is
      in the session takes two slots and its pair's tokens, a regular message one; an item or pair that does not fit
      is skipped (older, smaller ones may still fit) until a budget is exhausted; the newest is kept whatever it
      costs (the soft limit). Items keep their order; calls and outputs left without their pair are dropped.

    Differences: a log message is kept when any of its items is, with its whole unit (an assistant message whose
    text is kept and whose calls are not is sent whole, calls with their results); the walk reads the session, not
    the view, each turn, as the package does, but what an earlier turn dropped stays dropped (a pair skipped for its
    size that the package sends again once newer items leave); nothing of an unresolved pending turn leaves the view.
    The walk does not read the view: the view holds the whole units, items the walk skipped among them, and a walk
    over them keeps less than the one that made it, so each user turn dropped again what the last one had kept (a
    ``compaction-loop`` that the package, whose ``get_items`` returns its own result unchanged, does not have).

    Known deviation: ``revert-resolution`` (the session knows nothing of reverts): a change compacted away is
    not brought back for a revert that comes later.
    """

    TUNABLE = {
        "window_size": "10:200:10",
    }
    TUNABLE_NATIVE = {
        "window_size": "LocalCompactionSession(window_size={value})",
    }

    Config = OpenAIAgentsLocalConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "the session knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }
    when = frozenset({"user_turn"})

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) < 2:
            return None
        cfg = self.config
        end = len(state) - 1  # the new user message is appended after get_items
        # The walk reads the session, as get_items does each run, not the view: the view keeps whole units
        # (items the walk skipped ride along), so a walk over it would keep less than the one that made it, and
        # the next decision would drop again what this one kept (issue 32: compaction-loop after 6,476 examples).
        kept = newest_items(state, context_base(state), end, cfg.window_size, cfg.token_budget)
        if kept is None:
            return None
        # A kept message takes its whole atomic unit along (a call with every result of its batch), so the view never
        # sends a call without its results.
        whole: set[int] = set()
        for i in kept:
            a = state.unit_start(i)
            b = a + 1
            while b < end and state.unit_start(b) == a:
                b += 1
            whole.update(range(a, b))
        ranges = [(i, i + 1) for i in sorted(whole)] + [(end, len(state))]
        return kept_plan(state, ranges)
