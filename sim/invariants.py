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
* ``protected-span``: a compaction compacted a message of a pending turn that was unresolved when
  the compaction was made (judged per compaction, by :func:`check_compaction`: a message compacted
  before a later turn raised a pending request was not protected when it was compacted).
* ``log-append-only``: an event of the log changed after it was appended.
* ``compaction-shrinks``: a compaction did not make the view smaller.
* ``compaction-loop``: repeated compaction that does not make progress
  (``reference/failure-modes.md`` section 4, invariant P4): automatic compactions on consecutive turns
  that each leave the view still over the policy's own trigger (:meth:`policies.base.Policy.over_trigger`).
  Consecutive compactions are fine when either got under the trigger: the turn between grew the
  prompt past it again, or the first was held back (by revert protection, say) and the next caught up.
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
    # Every unit is shown whole or not at all. The tail may open inside a unit only when the
    # message before it is pinned (and the pinned checks below then see that unit's opening).
    if 0 < view.start < n and not state.can_cut(view.start) and (view.start - 1) not in view.pinned:
        u = state.unit_start(view.start)
        out.append(("atomic-units", f"the view starts at message {view.start} ({msgs[view.start].id!r}), inside "
                    f"the unit that starts at {u} ({msgs[u].id!r})"))
    for p in view.pinned:
        if p >= n:
            continue
        # A pinned message keeps its neighbours in the same unit: each is pinned too or in the tail.
        # Checked pairwise, this makes the whole unit shown, in O(1) per pinned message.
        missing = [q for q in (p - 1, p + 1) if 0 <= q < n and not view.shows(q)
                   and not state.can_cut(max(p, q))]
        if missing:
            u = state.unit_start(p)
            out.append(("atomic-units", f"pinned message {p} ({msgs[p].id!r}) keeps only part of the unit that "
                        f"starts at {u} ({msgs[u].id!r}): message {missing[0]} is not in the view"))
    lu = state.last_user_index
    if lu >= 0 and not view.shows(lu):
        out.append(("live-turn", f"the last user message {lu} ({msgs[lu].id!r}) is not in the view "
                    f"(view starts at {view.start})"))
    for r, c in state.reverts:
        if view.shows(r) and not view.shows(c):
            out.append(("revert-resolution", f"revert at message {r} ({msgs[r].id!r}) is kept but the change it "
                        f"reverts, at message {c} ({msgs[c].id!r}), is not in the view"))
    return out


def check_compaction(state: RunState, before: View, after: View) -> list[tuple[str, str]]:
    """Checks of one compaction (``before`` -> ``after``) against what was protected when it was made.

    Only what this compaction newly compacts is judged: messages leaving the view (moved out of the
    tail and not pinned) and tool results newly cleared. A message compacted by an earlier compaction,
    before a later turn raised a pending request, was not protected then and is not a breach now.
    """
    pf = state.protected_from
    if pf is None:
        return []
    out: list[tuple[str, str]] = []
    msgs = state.messages
    n = len(state)
    left = next((i for i in range(max(pf, before.start), min(after.start, n)) if i not in after.pinned), None)
    if left is not None:
        out.append(("protected-span", f"messages from {pf} on belong to an unresolved pending turn, but message "
                    f"{left} ({msgs[left].id!r}) left the view (the view now starts at {after.start})"))
    cleared = next((i for i in range(max(pf, before.cleared_through), min(after.cleared_through, n))
                    if msgs[i].role == "tool" and after.shows(i)), None)
    if cleared is not None:
        out.append(("protected-span", f"messages from {pf} on belong to an unresolved pending turn, but the tool "
                    f"results of message {cleared} ({msgs[cleared].id!r}) were cleared"))
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
