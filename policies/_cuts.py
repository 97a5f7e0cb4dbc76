"""Helpers shared by policies that move the start of the view: walking to unit boundaries, keeping
reverts with their changes, staying behind protected spans. Pure functions of the run state."""

from __future__ import annotations

from sim.state import RunState


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
    """Change ids recorded before ``cut`` that no revert has undone: what a checkpoint must carry."""
    reverted = {c for _, c in state.reverts}
    out = []
    for i, m in enumerate(state.messages[:cut]):
        if i in reverted:
            continue
        out.extend(p.ref or "" for p in m.parts if p.kind == "change")
    return out
