"""GitHub Copilot: the SDK/CLI's "infinite sessions" (background compaction) and VS Code Copilot Chat's summarised
conversation history (mid-turn too).

Sources (``reference/field-2026.md`` §3): the Copilot SDK's ``InfiniteSessionConfig`` (the Java SDK's pages and the
``github-copilot-sdk`` crate's docs: background compaction at 0.80 of the window, blocking until it is done at 0.95,
on by default in the CLI, no user threshold: ``github/copilot-cli`` #3026) and ``microsoft/vscode-copilot-chat`` (MIT)
``src/extension/prompts/node/agent/summarizedConversationHistory.tsx`` (summarise when the rendered prompt exceeds its
budget, ``BudgetExceededError``, also mid-turn at a tool-call round; the rounds after the summarised one kept; the
``<analysis>`` then ``<summary>`` reply in eight sections). Neither ships its compaction in a registry package: no
conformance suite.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies._tail import client_estimate, summary_plan
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, keep_reverts, plan_shrinks, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

BACKGROUND_COMPACTION_THRESHOLD = 0.80  # InfiniteSessionConfig: start compacting in the background
BUFFER_EXHAUSTION_THRESHOLD = 0.95  # InfiniteSessionConfig: block the session until compaction completes
COPILOT_PROMPT = (
    "Write a checkpoint of this session for the agent that continues it: the user's goals and instructions, the work "
    "done (files, commands, results), decisions, open problems and the next steps."
)
#: Our wording of summarizedConversationHistory.tsx's instructions: an analysis, then a summary in eight sections.
VSCODE_PROMPT = (
    "First analyse the conversation in <analysis> tags, then write a <summary> with these sections: conversation "
    "overview; technical foundation; codebase status; problem resolution; progress tracking; active work state; "
    "recent operations; continuation plan."
)


@dataclass(frozen=True)
class CopilotInfiniteSessionsConfig:
    """``InfiniteSessionConfig``'s thresholds, shares of the context window.

    Attributes:
        background_compaction_threshold: start compacting at this share (0.80).
        buffer_exhaustion_threshold: block until compaction completes at this share (0.95).
    """

    background_compaction_threshold: float = BACKGROUND_COMPACTION_THRESHOLD
    buffer_exhaustion_threshold: float = BUFFER_EXHAUSTION_THRESHOLD

    def __post_init__(self) -> None:
        b, x = self.background_compaction_threshold, self.buffer_exhaustion_threshold
        if not 0 < b <= x <= 1:
            raise InvalidConfig(
                f"background_compaction_threshold ({b!r}) and buffer_exhaustion_threshold ({x!r}) must satisfy "
                "0 < background <= exhaustion <= 1"
            )


@register("copilot-infinite-sessions")
class CopilotInfiniteSessions(Policy[CopilotInfiniteSessionsConfig]):
    """GitHub Copilot SDK/CLI infinite sessions: from 0.80 of the window, a checkpoint of all but the live turn is made
    in the background and swapped in when done; at 0.95 the session waits for it.

    * **Trigger**, before every model call: the estimate (the last reported prompt and output, plus chars/4 since)
      at or over ``background_compaction_threshold`` of the window.
    * **Timing**: background (``sim.replay.background``): the checkpoint is made from the view at the trigger and
      lands before the first request that starts once it is done, or before the first request whose estimate is at
      or over ``buffer_exhaustion_threshold`` (the session blocks until compaction completes). What came in
      meanwhile stays verbatim after it.
    * **Kept**: the live turn (from the last user message) at the trigger; everything before is summarised with the
      previous checkpoint.

    Differences: what the CLI keeps verbatim is not documented; the live turn is ours. How long the real checkpoint
    takes is not documented: the engine's model of a model call times it.

    Known deviation: ``revert-resolution`` (Copilot knows nothing of reverts): a change compacted away is not brought
    back for a revert that comes later.
    """

    TUNABLE = {
        "background_compaction_threshold": "0.4:0.9:0.05",
    }
    TUNABLE_NATIVE = {
        "background_compaction_threshold": "InfiniteSessionConfig backgroundCompactionThreshold = {value}",
    }

    Config = CopilotInfiniteSessionsConfig
    timing = "background"
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "Copilot knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    def over_trigger(self, state: RunState) -> bool:
        return client_estimate(state) >= self.config.background_compaction_threshold * state.model.context_window

    def must_wait(self, state: RunState) -> bool:
        return client_estimate(state) >= self.config.buffer_exhaustion_threshold * state.model.context_window

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        start = state.last_user_index if state.last_user_index >= 0 else len(state)
        return summary_plan(state, start, SummaryRequest(prompt=COPILOT_PROMPT, role="user"), mode="checkpoint")


@dataclass(frozen=True)
class VSCodeCopilotChatConfig:
    """No parameters of its own: the budget is the model's prompt budget (the window less its output reserve)."""


@register("vscode-copilot-chat")
class VSCodeCopilotChat(Policy[VSCodeCopilotChatConfig]):
    """VS Code Copilot Chat: when the prompt exceeds its budget, summarise the history, keeping the newest round.

    * **Trigger**, before every model call (the prompt is rendered for each tool-call round): the rendered prompt's
      tokens over the model's prompt budget (``BudgetExceededError``), and after a provider overflow (once).
    * **Kept**: mid-turn, the newest tool-call round (the last assistant message and its results); at a turn's
      start, the new user message. The rest becomes an ``<analysis>``/``<summary>`` reply in eight sections, placed
      as the summarised round's summary.

    Differences: the turn's user message stays in view before the kept round (VS Code's summary restates it; the
    harness keeps the live turn's user message); VS Code re-attaches the Anthropic thinking that opened the live turn
    after the summary, here its whole opening round (its calls and results too: a view keeps a unit whole); the
    "simple mode" fallback, ``maxToolResultLength`` truncation and the cache breakpoints are not modelled.

    Known deviation: ``revert-resolution`` (VS Code knows nothing of reverts): a change compacted away is not brought
    back for a revert that comes later.
    """

    Config = VSCodeCopilotChatConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "VS Code knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    @property
    def retry_on_overflow(self) -> int:
        return 1

    def over_trigger(self, state: RunState) -> bool:
        return state.view_size()[0] > state.model.input_budget

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "manual" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        n, lu = len(state), state.last_user_index
        start = n
        if n and state.messages[-1].role == "tool":
            start = state.unit_start(n - 1)  # the newest round: its assistant message and results
        elif lu >= 0:
            start = lu
        request = SummaryRequest(prompt=VSCODE_PROMPT, role="user")
        if start <= lu or lu < floor_index(state):
            return summary_plan(state, start, request)
        # Mid-turn: the cut falls inside the live turn, whose user message stays pinned before the kept round.
        pf = state.protected_from
        cut = keep_reverts(state, unit_floor(state, start if pf is None else min(start, pf)))
        if cut <= lu:
            return summary_plan(state, cut, request)
        plan = Plan(
            start=cut,
            pinned=(lu,),
            spans=_thinking_opening(state, lu, cut),
            summarize=True,
            summary_request=request,
            summary_slot=0,
        )
        return plan if plan_shrinks(state, plan) else None


def _thinking_opening(state: RunState, lu: int, cut: int) -> tuple[tuple[int, int], ...]:
    """The live turn's opening round when its reply opened with thinking and the cut leaves it: VS Code re-attaches
    that thinking after the summary (Anthropic requires it while the turn is in progress)."""
    i = lu + 1
    if i >= cut or state.messages[i].role != "assistant":
        return ()
    first = next((p for p in state.messages[i].parts if p.kind != "text" or p.text.strip()), None)
    if first is None or first.kind != "thinking":
        return ()
    end = i + 1
    while end < cut and state.messages[end].role == "tool":
        end += 1
    return ((i, end),)
