"""Invariants checked on every request, each named after the failure it catches.

Drawn from ``reference/failure-modes.md``. Structural checks here cost O(pinned + reverts +
pending) per request, never O(conversation); the provider's own pairing rules are checked on the
rendered request by :mod:`sim.model`, and the log's append-only property by :meth:`RunLog.verify`.

Names (stable, used in results and in ``Policy.known_deviations``):

* ``tool-pairing``: the provider rejected the request's call/result structure.
* ``atomic-units``: a cut falls inside a unit (a batch and its results, a thinking tool loop).
* ``live-turn``: the last user message, and so the live turn, is not in the view.
* ``system-first``: the system prompt is not first or not byte-identical.
* ``revert-resolution``: a revert in the view whose change is not in the view.
* ``protected-span``: a message of an unresolved pending turn was compacted.
* ``log-append-only``: an event of the log changed after it was appended.
* ``compaction-shrinks``: a compaction did not make the view smaller.
* ``compaction-loop``: an automatic compaction right after the previous request's automatic
  compaction: the first did not get the view under the trigger, so the policy compacts every turn.
* ``failed-summary-unchanged``: a failed or empty summary changed the view.
* ``plan-invalid``: the policy asked for something impossible (moving the view backwards, indices
  out of range); the plan is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.state import RunState
from sim.view import View

NAMES = (
    "tool-pairing", "atomic-units", "live-turn", "system-first", "revert-resolution", "protected-span",
    "log-append-only", "compaction-shrinks", "compaction-loop", "failed-summary-unchanged", "plan-invalid",
)


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which, where, and what exactly broke."""

    invariant: str
    turn: int
    request_kind: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] turn {self.turn} ({self.request_kind}): {self.detail}"


def check_view(state: RunState, view: View) -> list[tuple[str, str]]:
    """Structural checks of the view an agent request is about to send: (invariant, detail) pairs."""
    out: list[tuple[str, str]] = []
    n = len(state)
    msgs = state.messages
    if view.start < n and not state.can_cut(view.start):
        u = state.unit_start(view.start)
        out.append(("atomic-units", f"the view starts at message {view.start} ({msgs[view.start].id!r}), inside "
                    f"the unit that starts at {u} ({msgs[u].id!r})"))
    for p in view.pinned:
        if p >= n:
            continue
        whole = state.can_cut(p) and (p + 1 >= n or state.can_cut(p + 1) or (p + 1) in view.pinned
                                     or p + 1 >= view.start)
        if not whole:
            out.append(("atomic-units", f"pinned message {p} ({msgs[p].id!r}) is not a whole unit"))
    lu = state.last_user_index
    if lu >= 0 and not view.shows(lu):
        out.append(("live-turn", f"the last user message {lu} ({msgs[lu].id!r}) is not in the view "
                    f"(view starts at {view.start})"))
    for r, c in state.reverts:
        if view.shows(r) and not view.shows(c):
            out.append(("revert-resolution", f"revert at message {r} ({msgs[r].id!r}) is kept but the change it "
                        f"reverts, at message {c} ({msgs[c].id!r}), is not in the view"))
    pf = state.protected_from
    if pf is not None:
        if view.start > pf:
            out.append(("protected-span", f"messages from {pf} on belong to an unresolved pending turn, but the view "
                        f"starts at {view.start}"))
        elif view.cleared_through > pf and any(m.role == "tool" for m in msgs[pf:view.cleared_through]):
            out.append(("protected-span", f"tool results from {pf} to {view.cleared_through} belong to an "
                        "unresolved pending turn but were cleared"))
    return out


def check_plan_bounds(state: RunState, before: View, start: int, cleared_through: int,
                      pinned: tuple[int, ...]) -> str | None:
    """Why a plan is impossible, or None."""
    n = len(state)
    if not 0 <= start <= n:
        return f"start {start} is outside 0..{n}"
    if start < before.start:
        return f"start {start} moves the view back before {before.start}; compaction never un-compacts"
    if cleared_through < before.cleared_through:
        return f"cleared_through {cleared_through} is below the previous bound {before.cleared_through}"
    if any(not 0 <= p < start for p in pinned):
        return f"pinned {pinned} must lie before start {start}"
    return None
