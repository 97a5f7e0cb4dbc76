"""Helpers shared by policies that move the start of the view: walking to unit boundaries, keeping
reverts with their changes, staying behind protected spans. Pure functions of the run state."""

from __future__ import annotations

from sim.state import RunState
from sim.view import View


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
    if not any(view.shows(r) and not view.shows(c) for r, c in state.reverts):
        return None
    for cp in reversed(state.checkpoints):
        if cp is view or cp.start > view.start:  # a rollback only moves the view back
            continue
        if all(cp.shows(c) or not cp.shows(r) for r, c in state.reverts) and \
                all(cp.shows(r) for r, _ in state.reverts if view.shows(r)):
            return cp
    return None
