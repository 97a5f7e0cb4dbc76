"""NexAU (``nex-agi/NexAU``): context compaction after each model call, by clearing old tool results or by a summary,
keeping the newest iterations.

Source: NexAU's advanced guide ``context_compaction.md`` (``reference/field-2026.md`` §3): compaction is checked
after each model call, at 75% of the context window, and skipped when the last assistant message made no tool call;
an iteration is an assistant message with its tool results, the newest ``keep_iterations`` kept; the
``ToolResultCompaction`` strategy replaces older results with "Tool call result has been compacted", the LLM summary
strategy summarises the older iterations. ``keep_iterations``' default is not in the guide as read: 3 here (ours).
NexAU is Python but its compaction needs its agent runtime; no conformance suite.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies._tail import summary_plan
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, plan_shrinks, reported_total, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule

THRESHOLD = 0.75  # the guide: compact after a model call at 75% of the context window
KEEP_ITERATIONS = 3  # ours: the guide names keep_iterations without a default we could read
COMPACTED = "Tool call result has been compacted"  # ToolResultCompaction's placeholder
SUMMARY_PROMPT = (
    "Summarise the earlier iterations of this agent run (each a model call and its tool results) for the agent that "
    "continues it: the task, findings with exact values, decisions, errors and what remains to do."
)
RESULTS = Rule(kinds=frozenset({"tool_result"}), text=COMPACTED)


@dataclass(frozen=True)
class NexAUConfig:
    """NexAU's compaction settings.

    Attributes:
        threshold: compact after a model call once the context reaches this share of the window (0.75).
        keep_iterations: the newest iterations (assistant message and its results) kept (ours: 3).
    """

    threshold: float = THRESHOLD
    keep_iterations: int = KEEP_ITERATIONS

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise InvalidConfig(f"threshold={self.threshold!r} must be in (0, 1]")
        if self.keep_iterations < 1:
            raise InvalidConfig(f"keep_iterations={self.keep_iterations!r} must be >= 1")


class _NexAU(Policy[NexAUConfig]):
    """The part both strategies share: asked right after each model reply, skipped after a reply without calls."""

    Config = NexAUConfig
    when = frozenset({"response"})

    def over_trigger(self, state: RunState) -> bool:
        total = reported_total(state)
        tokens = state.view_size()[0] if total is None else total
        return tokens >= self.config.threshold * state.model.context_window

    def kept_from(self, state: RunState) -> int | None:
        """The first message of the newest ``keep_iterations`` iterations (each starts at an assistant message), at the
        start of its unit; None when there are no more iterations than that."""
        seen = 0
        for i in range(len(state) - 1, floor_index(state) - 1, -1):
            if state.messages[i].role == "assistant":
                seen += 1
                if seen == self.config.keep_iterations:
                    return unit_floor(state, i)
        return None

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) == 0:
            return None
        last = state.messages[-1]
        if last.role != "assistant" or not last.calls or not self.over_trigger(state):
            return None
        start = self.kept_from(state)
        return None if start is None else self._plan(state, start)

    def _plan(self, state: RunState, start: int) -> Plan | None:
        raise NotImplementedError


@register("nexau-tool-result-compaction")
class NexAUToolResultCompaction(_NexAU):
    """NexAU ToolResultCompaction: after a model call at 0.75 of the window, old tool results read a placeholder.

    * **When**: right after each model reply that made tool calls, when the last reported prompt and reply reach
      ``threshold`` of the window.
    * **What**: every tool result before the newest ``keep_iterations`` iterations becomes "Tool call result has been
      compacted" (calls and ids stay).

    Differences: nothing of a pending turn is cleared (the harness's contract).

    Known deviation: ``compaction-loop``: clearing results keeps every message, so a view whose messages alone stay
    over the threshold is compacted again after the next model call (NexAU checks after every call).
    """

    known_deviations = frozenset({"compaction-loop"})
    deviation_reasons = {
        "compaction-loop": (
            "clearing results keeps every message, so a view whose messages alone"
            " stay over the threshold is cleared again before every call"
        )
    }

    def _plan(self, state: RunState, start: int) -> Plan | None:
        pf = state.protected_from
        bound = start if pf is None else min(start, pf)
        current = next((e.before for e in state.view.edits if e.rule == RESULTS), 0)
        if bound <= current:
            return None
        edits = tuple(e for e in state.view.edits if e.rule != RESULTS) + (Edit(RESULTS, bound),)
        plan = Plan(start=state.view.start, edits=edits, mode="tool-result-compaction")
        return plan if plan_shrinks(state, plan) else None


@register("nexau-summary")
class NexAUSummary(_NexAU):
    """NexAU LLM summary: after a model call at 0.75 of the window, summarise all but the newest 3 iterations.

    * **When**: as ``nexau-tool-result-compaction``.
    * **What**: everything before the newest ``keep_iterations`` iterations is summarised (the previous summary folded
      in), the summary a user message before them.

    Differences: the cut never passes the live turn's user message (the harness keeps it): in one long tool loop the
    older iterations of that turn stay until it ends.

    Known deviation: ``revert-resolution`` (NexAU knows nothing of reverts): a change summarised away is not brought
    back for a revert that comes later.
    """

    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "NexAU knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    def _plan(self, state: RunState, start: int) -> Plan | None:
        return summary_plan(state, start, SummaryRequest(prompt=SUMMARY_PROMPT, role="user"))
