"""Deliberately broken policies: each breaks exactly one invariant, so the suite can show that
``check_policy`` catches it and shrinks the counterexample to a few messages.

They compact at every opportunity, whatever the size, so the smallest conversation that gives
them a chance to misbehave is also the smallest counterexample: shrinking has a short way to go.
None declares ``known_deviations``.

``OPEN_ISSUES`` at the end lists the invariants the *bundled* policies break today through a bug
already pinned by a repro test; both test modules read it.
"""

from __future__ import annotations

import dataclasses

from policies.base import Plan, Policy, Trigger
from policies.helpers import floor_index, keep_reverts
from sim.core.conversation import Part
from sim.core.state import RunState
from sim.core.view import Edit, Rule


class CutsMidUnit(Policy):
    """Starts the view right after an assistant message with tool calls: the results lose their call."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs = state.messages
        for i in range(len(state) - 2, floor_index(state) - 1, -1):
            if (
                msgs[i].role == "assistant"
                and msgs[i].calls
                and msgs[i + 1].role == "tool"
                and i + 1 > state.view.start
            ):
                return Plan(start=i + 1, cleared_through=state.view.cleared_through, mode="drop")
        return None


class RewritesLog(Policy):
    """Replaces a message of the log with an edited copy: history rewritten behind the engine's back."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs = state.messages
        if len(msgs) > 1 and msgs[1].parts[0].kind == "text" and not msgs[1].text.startswith("[edited]"):
            edited = dataclasses.replace(msgs[1].parts[0], text="[edited] " + msgs[1].parts[0].text)
            msgs[1] = dataclasses.replace(msgs[1], parts=(edited, *msgs[1].parts[1:]))  # type: ignore[index]
        return None


class EditsPartInPlace(Policy):
    """Mutates a frozen part of an appended message in place (``object.__setattr__``): the same
    object stays in the log, so only the log's digest chain can notice."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs = state.messages
        if len(msgs) > 1:
            part: Part = msgs[1].parts[0]
            if not part.text.endswith(" (edited)"):
                object.__setattr__(part, "text", part.text + " (edited)")
        return None


class DropsLastUser(Policy):
    """Starts the view right after the last user message: the live turn loses what it answers."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        lu = state.last_user_index
        s = lu + 1
        if lu < 0 or s >= len(state) or not state.can_cut(s) or s <= state.view.start:
            return None
        if state.protected_from is not None:
            return None
        return Plan(start=s, cleared_through=state.view.cleared_through, mode="drop")


class ForgetsReverts(Policy):
    """Cuts between a change and the revert that undoes it, keeping the revert and the live turn."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        view, lu, pf = state.view, state.last_user_index, state.protected_from
        for r, c in reversed(state.reverts):
            if not (view.shows(r) and view.shows(c)):
                continue
            for s in range(c + 1, r + 1):
                if state.can_cut(s) and s > view.start and (lu < 0 or s <= lu) and (pf is None or s <= pf):
                    return Plan(start=s, cleared_through=view.cleared_through, mode="drop")
        return None


class GrowsView(Policy):
    """Moves nothing but summarises anyway: the view gains a summary and loses nothing."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if len(state) < 2:
            return None
        return Plan(
            start=state.view.start, cleared_through=state.view.cleared_through, summarize=True, mode="summarize"
        )


class NeverUnderItsTrigger(Policy):
    """Its trigger sits below anything a view can hold (as kimi-code PR #2498's threshold sat below
    the fixed overhead): before every request it drops the oldest unit left before the live turn, and
    says it is still over its trigger afterwards, so it compacts turn after turn without progress."""

    def over_trigger(self, state: RunState) -> bool:
        return True

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None
        lo = floor_index(state)
        s = lo + 1
        while s < len(state) and not state.can_cut(s):
            s += 1
        lu, pf = state.last_user_index, state.protected_from
        if lu < 0 or s > lu or (pf is not None and s > pf) or keep_reverts(state, s) < s:
            return None
        return Plan(start=s, cleared_through=state.view.cleared_through, mode="drop")


class KeepsACounter(Policy):
    """Counts the times it is asked and compacts on every other question: state of its own, so it answers
    the same question differently (a sweep's lockstep replay would diverge from the run alone)."""

    def __init__(self, config: object = None) -> None:
        super().__init__(config)
        self.asked = 0

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        self.asked += 1
        if self.asked % 2 or state.last_user_index <= floor_index(state):
            return None
        return Plan(start=state.view.start, cleared_through=len(state), mode="prune")


class DropsToolResults(Policy):
    """Drops old tool results outright (a ``drop`` edit) but keeps the calls that asked for them: the
    provider rejects the orphaned calls, and the simulator must not hide it."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        bound = len(state)
        if trigger != "auto" or state.messages[-1].role != "tool" or any(e.before >= bound for e in state.view.edits):
            return None
        return Plan(start=state.view.start, edits=(Edit(Rule(action="drop"), bound),), mode="drop-results")


class RaisesMidRun(Policy):
    """Raises as soon as a tool result is in the log: a policy bug the checker must report as such."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if any(m.role == "tool" for m in state.messages):
            raise ValueError("policy bug: cannot handle tool results")
        return None


# Each broken policy and the invariants its counterexample must name (one of them is enough).
BROKEN: dict[type[Policy], set[str]] = {
    CutsMidUnit: {"tool-pairing", "atomic-units"},
    RewritesLog: {"log-append-only"},
    EditsPartInPlace: {"log-append-only"},
    DropsLastUser: {"live-turn"},
    ForgetsReverts: {"revert-resolution"},
    GrowsView: {"compaction-shrinks", "plan-invalid"},
    NeverUnderItsTrigger: {"compaction-loop"},
    KeepsACounter: {"policy-purity"},
    DropsToolResults: {"tool-pairing"},
    RaisesMidRun: {"exception"},
}

# Invariants the bundled policies break today through a bug already pinned by a repro test (an
# xfail(strict=True) test in test_properties.py, named in the value): the checks tolerate them
# (``check_policy(allow=...)``) so the rest of the search still runs, and the repro test turns
# into an XPASS failure the day the bug is fixed, which is the moment to drop the entry here.
# Empty today: every bug found so far is fixed and pinned by a plain regression test instead.
OPEN_ISSUES: dict[str, dict[str, str]] = {}
