"""What every policy needs, as pure functions of the run state: cut points that respect atomic units,
the live turn, pending (protected) turns and reverts; rollback targets; the newest tool uses to keep;
whether a plan shrinks the view. Public: a policy of your own should use these rather than re-derive
the rules (the README's examples do)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.core.state import RunState
from sim.core.view import Rule, View

if TYPE_CHECKING:
    from policies.base import Plan


def floor_index(state: RunState) -> int:
    """The lowest index a cut may name: past the system prompt, and past what is already compacted."""
    base = 1 if len(state) and state.messages[0].role == "system" else 0
    return max(state.view.start, base)


def unit_floor(state: RunState, i: int) -> int:
    """Move ``i`` down (older) to the start of its atomic unit."""
    if i >= len(state):
        return i
    return state.unit_start(i)


def keep_reverts(state: RunState, cut: int) -> int:
    """Lower ``cut`` so every revert at or after it keeps the change it reverts (newest first, one pass:
    a lowered cut can only retain older reverts, which the walk reaches later)."""
    for r, c in reversed(state.reverts):
        if r >= cut > c:
            cut = unit_floor(state, c)
    return cut


def live_changes(state: RunState, cut: int) -> list[str]:
    """Change ids recorded before ``cut`` that no revert has undone: what a checkpoint must carry.

    O(changes + reverts), not O(messages): a compaction must not cost more as the log grows."""
    reverted = {c for _, c in state.reverts}
    return [ref for ref, i in state.changes.items() if i < cut and i not in reverted]


def rollback_target(state: RunState) -> View | None:
    """The checkpoint to roll back to when a revert in the view reverts a change already compacted
    away, or None when every revert in the view resolves.

    Cloudflare OS ``rollbackChatCompaction`` (overseer): "reverting across a boundary needs the one
    before it", and it "guarantees every revert in a tail has ``revertFrom >= compactedTo``"
    (``agent-compaction.ts``, the comment of ``protectRetainedReverts``). So the target is the newest
    checkpoint in which every revert it shows resolves: the missing change among them, and every
    other revert in its tail too (one that is itself unresolved there would only move the problem),
    and it still shows every revert the current view shows. The initial view shows everything, so a
    target always exists when one is needed.
    """
    view = state.view
    shown = state.shown_reverts(view)  # asked on every request: not a walk over every revert of the log
    if all(view.shows(c) for _, c in shown):
        return None
    for cp in reversed(state.checkpoints):
        if cp is view or cp.start > view.start:  # a rollback only moves the view back
            continue
        if all(cp.shows(c) for _, c in state.shown_reverts(cp)) and all(cp.shows(r) for r, _ in shown):
            return cp
    return None


def first_user_index(state: RunState) -> int | None:
    """Index of the first real user message (the task, usually), None if there is none yet."""
    return next((i for i, m in enumerate(state.messages) if m.role == "user" and m.command is None), None)


def cut_ceiling(state: RunState) -> int:
    """The highest index a cut may name: the last user message (so the live turn stays whole) and the start
    of any unresolved pending turn (nothing of it may be compacted)."""
    lu = state.last_user_index
    ceiling = lu if lu >= 0 else len(state)
    pf = state.protected_from
    return ceiling if pf is None else min(ceiling, pf)


def end_cut(state: RunState) -> int:
    """The highest cut, for a policy that compacts everything (the live turn included): the log's end. Mid tool
    loop that leaves the loop's calls and results to the summary, and the next reply opens a turn afresh after it
    (with thinking on, the model thinks again: the mock provider accepts such a reply as the turn's opening)."""
    return len(state)


def safe_cut(state: RunState, cut: int) -> int | None:
    """``cut`` made valid: not above :func:`cut_ceiling`, moved down to the start of its atomic unit, and
    lower still where a kept revert needs the change it reverts. None when nothing above the floor
    (:func:`floor_index`) would be cut."""
    cut = keep_reverts(state, unit_floor(state, min(cut, cut_ceiling(state))))
    return cut if cut > floor_index(state) else None


def keep_newest_bound(state: RunState, rule: Rule, keep: int) -> int:
    """The bound of an edit with ``rule`` that spares the newest ``keep`` tool uses it selects (counted by call
    id) and reaches every older one: the start of the atomic unit holding the oldest use kept, so a call
    is never edited apart from its results. Also never past the start of a pending turn.

    Uses are counted in the view's tail (from ``view.start``: older messages are not sent, so none of theirs is
    "kept"). Walks back from the newest message only until ``keep`` uses are found or the rule's current bound or
    the tail's start is reached, so asking each request costs the messages since the last edit or compaction,
    not the log."""
    current = next((e.before for e in state.view.edits if e.rule == rule), 0)
    seen: set[str] = set()
    i = len(state)
    stop = max(current, state.view.start)
    while i > stop and len(seen) < keep:
        i -= 1
        seen.update(p.call_id for p in state.messages[i].parts if p.call_id and rule.selects(p))
    if len(seen) < keep:
        return current
    bound = unit_floor(state, i)
    pf = state.protected_from
    return max(current, bound if pf is None else min(bound, pf))


def newest_results_bound(state: RunState, keep: int, rule: Rule) -> int | None:
    """The bound of an edit with ``rule`` that spares the ``keep`` newest tool results: the index of the message
    holding the ``keep``-th newest (``len(state)`` for ``keep`` 0). None when there are no more than ``keep``.
    Capped at the start of an unresolved pending turn, and never below the bound ``rule`` already has in the
    view (a result edited before its turn became pending stays edited: showing it again would change the
    protected turn).

    Counted by result, as LangChain counts ToolMessages and SWE-agent observations, so the bound may fall
    between the results of one parallel batch (:func:`keep_newest_bound` rounds down to the start of the unit
    instead): safe for an edit of results only, whose ids stay. Walks back over
    the newest ``keep`` results only."""
    n = len(state)
    i, seen = n, 0
    while i > 0 and seen < keep:
        i -= 1
        seen += sum(1 for p in state.messages[i].parts if p.kind == "tool_result")
    if seen < keep or state.tool_uses(View()) == state.tool_uses(View(start=i)):
        return None  # no call, so no result, before i
    pf = state.protected_from
    current = next((e.before for e in state.view.edits if e.rule == rule), 0)
    return max(current, i if pf is None else min(i, pf))


def smallest_summary_chars(state: RunState, wrapper: str = "{summary}") -> int:
    """Characters of the shortest summary the mock summariser writes: the wrapper, six section titles with a
    line each (about 200 characters) and the task restated (the first user message, at most 300 characters;
    ``sim.replay.summariser``)."""
    first = first_user_index(state)
    goal = state.messages[first].chars if first is not None else 0
    return len(wrapper.replace("{summary}", "")) + 200 + min(goal, 300)


def plan_shrinks(state: RunState, plan: Plan, margin: float = 1.5) -> bool:
    """Whether ``plan``'s view has fewer tokens than the current one, as the ``compaction-shrinks`` invariant
    judges (:meth:`RunState.view_size`). A summarising plan is charged ``margin`` times the smallest summary
    (:func:`smallest_summary_chars`, at four characters a token) in place of the summary it folds in, so a
    plan that might grow the view is refused. Replacing small parts with a longer placeholder grows a view:
    this tells."""
    after = plan.view_from(state.view)
    if plan.summarize:
        after = after.with_(summary=None)
    tokens = state.view_size(after)[0]
    if plan.summarize:
        tokens += round(margin * smallest_summary_chars(state, plan.summary_request.wrapper) / 4)
    return tokens < state.view_size()[0]


def reported_total(state: RunState) -> int | None:
    """The last request's reported prompt plus its output (None before any request); once the view changed since
    (a compaction), the prompt the next request sends. What clients that count the provider's ``total_tokens``
    check against their limit (Cline, Letta)."""
    if state.last_input_tokens is None:
        return None
    if state.view_changed_since_request:
        return state.view_size()[0]
    return state.last_input_tokens + (state.last_output_tokens or 0)
