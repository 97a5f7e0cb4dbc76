"""Invariants checked on every request, each named after the failure it catches.

Drawn from ``reference/failure-modes.md``. Structural checks here cost O(spans + reverts +
pending) per request, never O(conversation); the provider's own pairing rules are checked on the
rendered request by :mod:`sim.replay.model`, and the log's append-only property by :meth:`RunLog.verify`.

Names (stable, used in results and in ``Policy.known_deviations``):

* ``tool-pairing``: the provider rejected the request's call/result structure.
* ``atomic-units``: a cut falls inside a unit (a batch and its results, a thinking tool loop).
* ``live-turn``: the last user message, and so the live turn, is not in the view; or the newest tool
  results (those the next reply answers) are cleared or dropped (:func:`newest_results_cleared`).
* ``system-first``: the system prompt is not first or not byte-identical.
* ``revert-resolution``: a revert in the view whose change is not in the view.
* ``protected-span``: a compaction compacted a message of a pending turn that was unresolved when
  the compaction was made (judged per compaction, by :func:`check_compaction`: a message compacted
  before a later turn raised a pending request was not protected when it was compacted).
* ``log-append-only``: an event of the log changed after it was appended.
* ``compaction-shrinks``: a compaction did not make the view smaller.
* ``compaction-loop``: repeated compaction that does not make progress
  (``reference/failure-modes.md`` section 4, invariant P4): automatic compactions on consecutive turns,
  each made while the view was over the policy's own trigger (:meth:`policies.base.Policy.over_trigger`),
  that each leave it still over: by the policy's count right after it and still once the request after it
  has reported the compacted prompt (right after, a client's count can be a rough fallback estimate).
  Consecutive compactions are fine when either got under the trigger: the turn between grew the
  prompt past it again, or the first was held back (by revert protection, say) and the next caught up;
  and when a rollback between them brought messages back (the second compacts what came back).
* ``failed-summary-unchanged``: a failed or empty summary changed the view.
* ``policy-purity`` (``csim check`` only): ``decide`` answered the same question differently, or a
  lockstep replay differed from the run alone (``sim.replay.checker``).
* ``plan-invalid``: the policy asked for something impossible (moving the view backwards, pinning
  again a message the view had dropped, indices out of range, an edit or a ``cleared_through`` past the
  log); the plan is ignored. Only a rollback (``Plan.restore``, to a checkpoint) may bring messages back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sim.core.state import RunState
from sim.core.view import View, rule_for

NAMES = (
    "tool-pairing",
    "atomic-units",
    "live-turn",
    "system-first",
    "revert-resolution",
    "protected-span",
    "log-append-only",
    "compaction-shrinks",
    "compaction-loop",
    "failed-summary-unchanged",
    "plan-invalid",
    "policy-purity",
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


def ranges(view: View, n: int) -> list[tuple[int, int]]:
    """The log ranges ``view`` shows (its closed spans and its tail), clipped to ``[0, n)``; the system
    prompt is shown besides."""
    if n >= view.reach:  # every span whole (spans are non-empty): only the tail can be empty
        return [*view.spans, (view.start, n)] if view.start < n else list(view.spans)
    return [(a, min(b, n)) for a, b in (*view.spans, (view.start, n)) if a < min(b, n)]


def minus(xs: list[tuple[int, int]], ys: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The messages of ranges ``xs`` that no range of ``ys`` holds, as ranges (both sorted, disjoint).

    One merge of the two lists, O(len(xs) + len(ys)): a view many compactions have cut into thousands of spans (the
    OpenAI Agents session's on a long support chat) made the scan of every ``ys`` per ``xs`` the run's largest cost."""
    out: list[tuple[int, int]] = []
    first = 0  # the first range of ys that ends after the current xs range starts
    for a, b in xs:
        while first < len(ys) and ys[first][1] <= a:
            first += 1
        lo, k = a, first
        while k < len(ys) and ys[k][0] < b:
            c, d = ys[k]
            if c > lo:
                out.append((lo, c))
            lo = max(lo, d)
            k += 1
        if lo < b:
            out.append((lo, b))
    return out


def check_view(state: RunState, view: View) -> list[tuple[str, str]]:
    """Structural checks of the view an agent request is about to send: (invariant, detail) pairs.

    Every span edge is checked against the unit it falls in, O(spans) once per view (``RunState.remember``), and the
    rest asks ``view.shows``, O(log spans) per revert."""
    out: list[tuple[str, str]] = []
    n = len(state)
    msgs = state.messages
    # Every unit is shown whole or not at all: a range may open or close inside a unit only where the
    # neighbouring message is shown too (by another range).
    if 0 < view.start < n and not state.can_cut(view.start) and not view.shows(view.start - 1):
        u = state.unit_start(view.start)
        out.append(
            (
                "atomic-units",
                f"the view starts at message {view.start} ({msgs[view.start].id!r}), inside "
                f"the unit that starts at {u} ({msgs[u].id!r})",
            )
        )
    out += state.remember(view, "split-units", lambda: _split_units(state, view))
    lu = state.last_user_index
    if lu >= 0 and not view.shows(lu):
        out.append(
            (
                "live-turn",
                f"the last user message {lu} ({msgs[lu].id!r}) is not in the view (view starts at {view.start})",
            )
        )
    newest = newest_results_cleared(state, view)
    if newest is not None:
        out.append(
            (
                "live-turn",
                f"message {newest} ({msgs[newest].id!r}) holds the newest tool results, which the next reply "
                "answers, but the view clears or drops them",
            )
        )
    for r, c in state.shown_reverts(view):
        if not view.shows(c):
            out.append(
                (
                    "revert-resolution",
                    f"revert at message {r} ({msgs[r].id!r}) is kept but the change it "
                    f"reverts, at message {c} ({msgs[c].id!r}), is not in the view",
                )
            )
    return out


def _split_units(state: RunState, view: View) -> list[tuple[str, str]]:
    """The ``atomic-units`` problems of ``view``'s closed spans: an edge inside a unit whose neighbour no other range
    shows. O(spans); once the log is past the view's spans, their answer no longer changes (``RunState.remember``)."""
    out: list[tuple[str, str]] = []
    n, msgs = len(state), state.messages
    for a, b in view.spans:
        if a >= n:
            continue
        b = min(b, n)
        edges = []
        if a > 0 and not state.can_cut(a) and not view.shows(a - 1):
            edges.append((a, a - 1))
        if b < n and not state.can_cut(b) and not view.shows(b):
            edges.append((b - 1, b))
        for p, q in edges[:1] if b - a == 1 else edges:
            u = state.unit_start(p)
            out.append(
                (
                    "atomic-units",
                    f"pinned message {p} ({msgs[p].id!r}) keeps only part of the unit that "
                    f"starts at {u} ({msgs[u].id!r}): message {q} is not in the view",
                )
            )
    return out


def newest_results_cleared(state: RunState, view: View) -> int | None:
    """The first message of the trailing tool messages (the results the next reply answers) whose results
    ``view`` replaces by a placeholder or drops, or None. Older results of the live turn may be cleared (a
    long tool loop is, by Anthropic's and LangChain's clearing); these may not, whatever their size, or the
    model answers a call it cannot see the result of. Truncation keeps them (a head and a tail): allowed.
    O(trailing tool messages)."""
    msgs = state.messages
    k = len(state)
    while k > 0 and msgs[k - 1].role == "tool":
        k -= 1
    for i in range(k, len(state)):
        rules = view.rules_at(i)
        if not rules or not view.shows(i):
            continue
        for p in msgs[i].parts:
            rule = rule_for(p, rules) if p.kind == "tool_result" else None
            if rule is not None and rule.action != "truncate":
                return i
    return None


def edited_ranges(before: View, after: View, n: int) -> list[tuple[int, int]]:
    """Ranges of messages whose edits differ between ``before`` and ``after``: O(edits) ranges, covering
    what a compaction newly edited (a moved bound covers only the messages between its two positions)."""
    bounds = sorted({0, n, *(min(e.before, n) for e in (*before.edits, *after.edits))})
    return [
        (a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b and before.rules_at(a) != after.rules_at(a)
    ]


def check_compaction(
    state: RunState, before: View, after: View, changed: Callable[[int], bool] | None = None
) -> list[tuple[str, str]]:
    """Checks of one compaction (``before`` -> ``after``) against what was protected when it was made.

    Only what this compaction newly compacts is judged: messages leaving the view and messages shown
    before and after whose parts it newly edits (``changed(i)``: whether the edit changes message ``i``; by
    default, whether it is a tool message). A message that comes back into the view edited (a rollback to
    a checkpoint that cleared it) was not visible before, so the model sees more of it, not less. A
    message compacted by an earlier compaction, before a later turn raised a pending request, was not
    protected then and is not a breach now.
    """
    pf = state.protected_from
    if pf is None:
        return []
    out: list[tuple[str, str]] = []
    msgs = state.messages
    n = len(state)
    left = next((i for a, b in minus(ranges(before, n), ranges(after, n)) for i in range(max(a, pf), b)), None)
    if left is not None:
        out.append(
            (
                "protected-span",
                f"messages from {pf} on belong to an unresolved pending turn, but message "
                f"{left} ({msgs[left].id!r}) left the view (the view now starts at {after.start})",
            )
        )
    changed = changed or (lambda i: msgs[i].role == "tool")
    edited = next(
        (
            i
            for a, b in edited_ranges(before, after, n)
            for i in range(max(a, pf), b)
            if before.shows(i) and after.shows(i) and changed(i)
        ),
        None,
    )
    if edited is not None:
        out.append(
            (
                "protected-span",
                f"messages from {pf} on belong to an unresolved pending turn, but the tool "
                f"results of message {edited} ({msgs[edited].id!r}) were cleared",
            )
        )
    return out


def check_plan(state: RunState, before: View, after: View) -> str | None:
    """Why the view a plan asks for is impossible, or None."""
    n = len(state)
    if not 0 <= after.start <= n:
        return f"start {after.start} is outside 0..{n}"
    if after.start < before.start:
        return f"start {after.start} moves the view back before {before.start}; compaction never un-compacts"
    if after.cleared_through < before.cleared_through:
        return f"cleared_through {after.cleared_through} is below the previous bound {before.cleared_through}"
    if any(not 0 <= a < b <= after.start for a, b in after.spans):
        return f"pinned {after.pinned} must lie before start {after.start}"
    back = next((i for a, b in minus(list(after.spans), ranges(before, n)) for i in range(a, b)), None)
    if back is not None:
        return (
            f"pins message {back} ({state.messages[back].id!r}), which the view had dropped: compaction never "
            "brings back what an earlier one dropped (only a rollback to a checkpoint does)"
        )
    far = next((e for e in after.edits if e.before > n), None)
    if far is not None:
        return f"an edit reaches message {far.before}, past the log's {n} messages"
    slots = len(after.spans) + 1
    if after.summary_slot is not None and not 0 <= after.summary_slot < slots:
        return f"summary_slot {after.summary_slot} is outside 0..{slots - 1}"
    if any(x.slot is not None and not 0 <= x.slot < slots for x in after.injected):
        return f"an injected message's slot is outside 0..{slots - 1}"
    return None
