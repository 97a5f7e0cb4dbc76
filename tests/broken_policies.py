"""Deliberately broken policies: each breaks one invariant, so the suite can show that ``check_policy``
catches it by that invariant alone (every other one tolerated) and shrinks the counterexample to a few
messages. One module because ``BROKEN`` at the end maps every class to its invariant, and the tests and the
notebook test load them by ``module:Class``.

They compact at every opportunity, whatever the size, so the smallest conversation that gives
them a chance to misbehave is also the smallest counterexample: shrinking has a short way to go.
None declares ``known_deviations``. At least one per invariant of ``sim.core.invariants.NAMES``, and the
classes issue 12 found the checks missed: a bound past the log (:class:`ClearsPastTheLog`), the newest
results cleared (:class:`ClearsNewestResults`), a dropped message pinned again (:class:`RepinsDropped`).

``OPEN_ISSUES`` at the end lists the invariants the *bundled* policies break today through a bug
already pinned by a repro test; both test modules read it.
"""

from __future__ import annotations

import dataclasses

from policies.base import Plan, Policy, SummaryRequest, Trigger
from policies.helpers import floor_index, keep_reverts
from sim.core.conversation import Part
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Rule, View


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


class DropsToolCalls(Policy):
    """Drops old tool calls (a ``drop`` edit on ``tool_call`` parts) and keeps their results: the provider
    rejects results that answer no call (the mirror of :class:`DropsToolResults`)."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        bound = len(state)
        if trigger != "auto" or any(e.before >= bound for e in state.view.edits) or not state.tool_uses(state.view):
            return None
        return Plan(start=state.view.start, edits=(Edit(Rule(kinds=frozenset({"tool_call"}), action="drop"), bound),))


class EmptiesOldReplies(Policy):
    """Drops every part of the older assistant messages (text, thinking and calls) but none of the tool
    results: the replies are no longer sent, and their results answer calls the request does not hold."""

    RULE = Rule(kinds=frozenset({"text", "thinking", "tool_call"}), action="drop")

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        bound = len(state) - 1
        if trigger != "auto" or any(e.before >= bound for e in state.view.edits) or not state.tool_uses(state.view):
            return None
        return Plan(start=state.view.start, edits=(Edit(self.RULE, bound),), mode="drop-replies")


class PinsHalfAUnit(Policy):
    """Drops the tail up to the end of its oldest unit of several messages (a call and its results) but pins
    that unit's first message: a call kept without its results."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        lo, lu = floor_index(state), state.last_user_index
        if trigger != "auto" or state.protected_from is not None:
            return None
        a = lo
        while a < lu:
            b = a + 1
            while b < len(state) and not state.can_cut(b):
                b += 1
            if b - a >= 2:
                if b > lu or keep_reverts(state, b) < b:
                    return None
                return Plan(start=b, pinned=(*state.view.pinned, a), mode="drop")
            a = b
        return None


class CutsInsideThinkingLoop(Policy):
    """Starts the view, behind the last user message (pinned), at a later step of the live tool loop whose opening
    reply thought, a step that carries no thinking of its own: the request's final turn then opens without its
    thinking block, which Anthropic rejects. Every call keeps its result, so only the thinking rule sees it."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs, lu, n = state.messages, state.last_user_index, len(state)
        if lu < 0 or lu + 1 >= n or msgs[-1].role != "tool" or state.view.start > lu:
            return None
        opening = msgs[lu + 1]
        if opening.role != "assistant" or not opening.parts or opening.parts[0].kind != "thinking":
            return None
        for i in range(lu + 2, n):
            m = msgs[i]
            if m.role == "assistant" and not any(p.kind == "thinking" for p in m.parts) and state.can_cut(i):
                if state.protected_from is not None or keep_reverts(state, i) < i:
                    return None
                return Plan(start=i, pinned=(lu,), mode="drop")
        return None


class ClearsNewestResults(Policy):
    """Clears every tool result, the newest included, before each request: the model is asked to answer
    calls whose results it cannot see, whatever their size."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        n = len(state)
        if trigger != "auto" or n < 2 or state.messages[-1].role != "tool" or state.view.cleared_through >= n:
            return None
        return Plan(start=state.view.start, cleared_through=n, mode="prune")


class SummarisesTheLiveTurn(Policy):
    """Summarises through the last user message: the summary may say what was asked, the request does not."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        lu = state.last_user_index
        s = lu + 1
        if trigger != "auto" or lu < 0 or s >= len(state) or not state.can_cut(s) or s <= state.view.start:
            return None
        if state.protected_from is not None or keep_reverts(state, s) < s:
            return None
        return Plan(start=s, summarize=True, mode="summarize")


class RewritesSystemPrompt(Policy):
    """Replaces the system prompt in the log with a shorter one (an "optimised" prompt): the request no
    longer starts with the system prompt the run began with."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs = state.messages
        if msgs and msgs[0].role == "system" and not msgs[0].text.startswith("[short]"):
            msgs[0] = dataclasses.replace(msgs[0], parts=(Part("text", "[short] be brief"),))  # type: ignore[index]
        return None


class PinsRevertWithoutChange(Policy):
    """Drops everything before the newest revert's message and pins nothing back: the revert is kept (in the
    tail) and the change it undoes is gone, as in ForgetsReverts, but the cut falls at the revert itself."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        view, lu, pf = state.view, state.last_user_index, state.protected_from
        for r, c in reversed(state.reverts):
            s = state.unit_start(r)
            ok = view.shows(c) and c < s and s > view.start and state.can_cut(s)
            if ok and (lu < 0 or s <= lu) and (pf is None or s <= pf):
                return Plan(start=s, mode="drop")
        return None


class ClearsPendingResults(Policy):
    """Clears every tool result before the newest message, a pending turn's included (cloudflare-os protects
    the turn that raised an unresolved approval from any compaction). Asked after each reply too, so it acts
    as soon as a reply asks for an approval."""

    when = frozenset({"request", "response"})

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        pf, n = state.protected_from, len(state)
        k = n
        while k > 0 and state.messages[k - 1].role == "tool":
            k -= 1  # the newest results stay: the live-turn check is not the point here
        if trigger != "auto" or pf is None or k <= state.view.cleared_through:
            return None
        if not any(m.role == "tool" for m in state.messages[max(pf, state.view.cleared_through) : k]):
            return None
        return Plan(start=state.view.start, cleared_through=state.unit_start(k) if k < n else k, mode="prune")


class DropsPendingTurn(Policy):
    """Once a reply asks for an approval, keeps the user message of its turn and the reply but drops the
    work between them (asked after each reply, so it acts at once)."""

    when = frozenset({"request", "response"})

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        pf, n, view = state.protected_from, len(state), state.view
        if trigger != "auto" or pf is None or pf < view.start or state.messages[pf].role != "user":
            return None
        s = state.unit_start(n - 1)
        if s <= pf + 1 or keep_reverts(state, s) < s:
            return None
        return Plan(start=s, pinned=(*view.pinned, pf), mode="drop")


class ShrinksAnOldResult(Policy):
    """Replaces an old tool message of the log with a shortened copy (the same ids, less text): history
    rewritten to save tokens, behind the engine's back."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs = state.messages
        for i, m in enumerate(msgs[:-1]):
            if m.role == "tool" and any(p.kind == "tool_result" and p.text != "" for p in m.parts):
                parts = tuple(dataclasses.replace(p, text="") if p.kind == "tool_result" else p for p in m.parts)
                msgs[i] = dataclasses.replace(m, parts=parts)  # type: ignore[index]
                return None
        return None


class InjectsAndDropsNothing(Policy):
    """Compacts by adding a reminder and removing nothing: the view can only grow, whatever the sizes."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) < 2 or len(state.view.injected) >= 3:
            return None
        note = Injected(f"reminder {len(state.view.injected) + 1}: stay on task")
        return Plan(start=state.view.start, injected=(*state.view.injected, note), mode="inject")


class HugePlaceholder(Policy):
    """Clears old tool results with a placeholder longer than any result the window can hold."""

    PLACEHOLDER = "[cleared] " * 4_000

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        k = len(state)
        while k > 0 and state.messages[k - 1].role == "tool":
            k -= 1
        k = state.unit_start(k) if k < len(state) else k
        pf = state.protected_from
        k = k if pf is None else min(k, pf)
        old = next((e.before for e in state.view.edits), 0)
        if trigger != "auto" or not any(m.role == "tool" for m in state.messages[old:k]):
            return None
        return Plan(start=state.view.start, edits=(Edit(Rule(text=self.PLACEHOLDER), k),), mode="prune")


class ClearsOneResultATurn(Policy):
    """Its trigger is any prompt at all: every turn it clears the results of one more message and says it
    is still over its trigger, so it compacts on consecutive turns without getting under it."""

    def over_trigger(self, state: RunState) -> bool:
        return True

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        ct, pf = state.view.cleared_through, state.protected_from
        k = len(state)
        while k > 0 and state.messages[k - 1].role == "tool":
            k -= 1
        nxt = next((i + 1 for i in range(ct, k) if state.messages[i].role == "tool"), None)
        if trigger != "auto" or nxt is None or (pf is not None and nxt > pf):
            return None
        return Plan(start=state.view.start, cleared_through=nxt, mode="prune")


class WrapsAwayTheSummary(Policy):
    """Summarises with a wrapper that leaves the summariser's text out: history is replaced by a fixed
    placeholder whatever the summariser answered (langchain #39261: the summary call never counted)."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        lo, lu = floor_index(state), state.last_user_index
        s = lo + 1
        while s < len(state) and not state.can_cut(s):
            s += 1
        if trigger != "auto" or lu < 0 or s > lu or state.protected_from is not None or keep_reverts(state, s) < s:
            return None
        return Plan(
            start=s,
            summarize=True,
            summary_request=SummaryRequest(wrapper="[conversation summarised]"),
            mode="summarize",
        )


class ClearsPastTheLog(Policy):
    """Sets ``cleared_through`` past the end of the log, so the next tool result would be cleared as it
    arrives (issue 12: there was no upper bound)."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or state.view.cleared_through > len(state):
            return None
        return Plan(start=state.view.start, cleared_through=len(state) + 2, mode="prune")


class RepinsDropped(Policy):
    """Drops the oldest unit, then pins its first message again at the next compaction, without a
    rollback (OpenHands #11910: a dropped first message re-inserted beside the summary)."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        base = 1 if len(state) and state.messages[0].role == "system" else 0
        view = state.view
        if trigger != "auto":
            return None
        if view.start > base and not view.spans:
            return Plan(start=view.start, pinned=(base,), mode="drop")
        return _drop_oldest_unit(state) if not view.spans else None


class PinsPastStart(Policy):
    """Pins a message of the tail (a span after ``start``): the view would show it twice."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) < 2:
            return None
        return Plan(start=state.view.start, pinned=(len(state) - 1,), mode="pin")


class RestoresAForeignView(Policy):
    """Asks to roll back to a view that is not a checkpoint of this run (one it built itself)."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) < 2:
            return None
        return Plan(start=0, restore=View(), mode="rollback")


class ReturnsNonsense(Policy):
    """Returns something that is not a plan once a tool result is in the log: the engine must report the
    policy's bug, not crash somewhere unrelated or carry on."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if any(m.role == "tool" for m in state.messages):
            return "compact please"  # type: ignore[return-value]
        return None


def _drop_oldest_unit(state: RunState) -> Plan | None:
    """Drop the oldest unit of the tail, when that keeps the live turn, a pending turn and every revert whole."""
    lo, lu = floor_index(state), state.last_user_index
    j = lo + 1
    while j < len(state) and not state.can_cut(j):
        j += 1
    if lu < 0 or j > lu or state.protected_from is not None or keep_reverts(state, j) < j:
        return None
    return Plan(start=j, pinned=state.view.pinned, mode="drop")


# Each broken policy and the one invariant it breaks: the checker must catch it by that invariant alone (the
# others tolerated), whatever the sizes, not through a side effect such as a placeholder longer than what it
# replaced. ``exception``: the policy raises or answers nonsense, which is reported as such.
BROKEN: dict[type[Policy], str] = {
    DropsToolResults: "tool-pairing",
    DropsToolCalls: "tool-pairing",
    EmptiesOldReplies: "tool-pairing",
    CutsMidUnit: "atomic-units",
    PinsHalfAUnit: "atomic-units",
    CutsInsideThinkingLoop: "atomic-units",
    DropsLastUser: "live-turn",
    ClearsNewestResults: "live-turn",
    SummarisesTheLiveTurn: "live-turn",
    RewritesSystemPrompt: "system-first",
    ForgetsReverts: "revert-resolution",
    PinsRevertWithoutChange: "revert-resolution",
    ClearsPendingResults: "protected-span",
    DropsPendingTurn: "protected-span",
    RewritesLog: "log-append-only",
    EditsPartInPlace: "log-append-only",
    ShrinksAnOldResult: "log-append-only",
    GrowsView: "compaction-shrinks",
    InjectsAndDropsNothing: "compaction-shrinks",
    HugePlaceholder: "compaction-shrinks",
    NeverUnderItsTrigger: "compaction-loop",
    ClearsOneResultATurn: "compaction-loop",
    WrapsAwayTheSummary: "failed-summary-unchanged",
    ClearsPastTheLog: "plan-invalid",
    RepinsDropped: "plan-invalid",
    PinsPastStart: "plan-invalid",
    RestoresAForeignView: "plan-invalid",
    KeepsACounter: "policy-purity",
    RaisesMidRun: "exception",
    ReturnsNonsense: "exception",
}

# Invariants the bundled policies break today through a bug already pinned by a repro test (an
# xfail(strict=True) test in test_properties.py, named in the value): the checks tolerate them
# (``check_policy(allow=...)``) so the rest of the search still runs, and the repro test turns
# into an XPASS failure the day the bug is fixed, which is the moment to drop the entry here.
# Empty today: every bug found so far is fixed and pinned by a plain regression test instead.
# Empty today: the last entry (cloudflare-os, protected-span) was the checker reading a rollback that lifts an
# edit as a new edit (fixed in sim.core.invariants.check_compaction, regression test in tests/test_stateful.py).
# An entry is ``policy: {invariant: the name of its repro test in tests/test_properties.py}``.
OPEN_ISSUES: dict[str, dict[str, str]] = {}
