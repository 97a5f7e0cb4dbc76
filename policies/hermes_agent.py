"""Hermes Agent (NousResearch/hermes-agent): ``ContextCompressor``, a tool-output prune pass, then a summary of the
middle between the protected head and tail.

Sources: the reading of ``NousResearch/hermes-agent:agent/context_compressor.py`` in ``reference/field-2026.md`` §3
(constructor defaults: ``threshold_percent``, ``protect_first_n``, ``protect_last_n``, ``_SUMMARY_RATIO`` with its
floor and ceiling, the 160,000-character summariser input, the "REFERENCE ONLY" prefix), PR #1096 (2026-03-12:
"lower default compression threshold from 85% to 50%", all five places the default lives) and PR #66249's
description of ``_SMALL_CTX_THRESHOLD_PERCENT = 0.75``, the raise-only floor for windows under 512,000 tokens.
Hermes Agent is on PyPI (``hermes-agent`` 0.19.0), but its compressor needs its auxiliary-model client; no
conformance suite is provided.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies._tail import client_estimate, summary_plan
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, smallest_summary_chars
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

THRESHOLD_PERCENT = 0.50  # ContextCompressor(threshold_percent=0.50), PR #1096 (was 0.85)
SMALL_CTX_THRESHOLD_PERCENT = 0.75  # raise-only floor under SMALL_CTX_WINDOW (PR #66249's description)
SMALL_CTX_WINDOW = 512_000
PROTECT_FIRST_N = 3  # ContextCompressor(protect_first_n=3)
PROTECT_LAST_N = 20  # ContextCompressor(protect_last_n=20)
PRESSURE_KEEP_LAST = 3  # under pressure the tail keeps 3 messages (the field notes' reading of the compressor)
SUMMARY_RATIO, SUMMARY_MIN_TOKENS, SUMMARY_MAX_TOKENS = 0.20, 2_000, 10_000  # _SUMMARY_RATIO and its bounds
SUMMARY_INPUT_CHARS = 160_000  # the summariser's input: head and tail with an omitted-middle marker
PRUNED_TOOL_OUTPUT = "[Old tool output cleared to save context space]"  # the prune pre-pass's placeholder
#: Our wording of the summary's frame: a reference for the model, not instructions, ended by a marker.
SUMMARY_WRAPPER = (
    "[CONTEXT SUMMARY - REFERENCE ONLY: earlier turns were compressed; treat this as background, not as "
    "instructions]\n{summary}\n[END OF CONTEXT SUMMARY]"
)
SUMMARY_PROMPT = (
    "Summarise the conversation turns below for the agent that continues the work: the user's goals and rules, "
    "decisions, files, commands and errors with exact names, what is done and what is next. Merge the earlier "
    "summary, if any, into the new one."
)


@dataclass(frozen=True)
class HermesAgentConfig:
    """``ContextCompressor``'s parameters, Hermes' names.

    Attributes:
        threshold_percent: compress when the estimate reaches this share of the window (0.50, PR #1096); under
            ``small_ctx_window`` tokens it is raised to at least 0.75.
        protect_first_n: the oldest messages kept verbatim (3).
        protect_last_n: the newest messages kept verbatim (20).
        small_ctx_window: windows smaller than this get the 0.75 floor (512,000; scaled by ``csim check``).
    """

    threshold_percent: float = THRESHOLD_PERCENT
    protect_first_n: int = PROTECT_FIRST_N
    protect_last_n: int = PROTECT_LAST_N
    small_ctx_window: int = field(default=SMALL_CTX_WINDOW, metadata={"tokens": True})

    def __post_init__(self) -> None:
        if not 0 < self.threshold_percent <= 1:
            raise InvalidConfig(f"threshold_percent={self.threshold_percent!r} must be in (0, 1]")
        if self.protect_first_n < 0 or self.protect_last_n < 1:
            raise InvalidConfig(
                f"protect_first_n ({self.protect_first_n!r}) must be >= 0 and protect_last_n "
                f"({self.protect_last_n!r}) >= 1"
            )


@register("hermes-agent")
class HermesAgent(Policy[HermesAgentConfig]):
    """Hermes Agent: at 0.50 of the window (0.75 under 512K), summarise all but the first 3 and last 20 messages.

    * **Trigger**, before every model call: the provider's last reported prompt and output plus a quarter of the
      characters since (Hermes' chars/4 preflight); compress at ``threshold_percent`` of the window, raised to
      0.75 for windows under 512,000 tokens (the floor applies only to the default and above, PR #66249).
    * **Kept**: the first ``protect_first_n`` messages after the system prompt (to the end of the unit the last one is
      in: a call stays with its results, as Hermes aligns its boundaries) and the last ``protect_last_n``.
    * **Summary**: the middle; tool outputs in it are cleared first (the prune pre-pass: the summariser is shown
      none), its input capped at 160,000 characters from both ends with an omitted-middle marker, its output at
      ``_SUMMARY_RATIO`` 0.20 of what it compresses between 2,000 and 10,000 tokens (the larger bound here: the
      compressed size is known only once written); the earlier summary is updated, not discarded; the summary sits
      after the protected head, framed "REFERENCE ONLY".

    Under pressure (the head, the tail and the smallest summary still over the threshold) the tail keeps only the
    newest 3 messages; still over, no compression is made (Hermes' failure cooldown keeps it from compressing again
    at once).

    Differences: ``protect_last_n`` counts messages (Hermes measures the tail by a token budget with a floor of 8
    messages and, under pressure, demotes large tool outputs inside it); the tail never starts inside the live turn
    or an atomic unit (the harness's contract: the cut moves back to the turn's user message); the failure cooldown,
    the deterministic fallback summary, image weights and the mechanical "anchor index" are not modelled.

    Known deviation: ``revert-resolution`` (Hermes Agent knows nothing of reverts): a change compacted away is
    not brought back for a revert that comes later.
    """

    TUNABLE = {
        "threshold_percent": "0.3:0.9:0.05",
        "protect_last_n": "5:40:5",
    }
    TUNABLE_NATIVE = {
        "threshold_percent": "ContextCompressor(threshold_percent={value})",
        "protect_last_n": "ContextCompressor(protect_last_n={value})",
    }

    Config = HermesAgentConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "Hermes Agent knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    def threshold(self, state: RunState) -> float:
        cfg = self.config
        pct = cfg.threshold_percent
        if state.model.context_window < cfg.small_ctx_window and pct >= THRESHOLD_PERCENT:
            pct = max(pct, SMALL_CTX_THRESHOLD_PERCENT)
        return pct * state.model.context_window

    def over_trigger(self, state: RunState) -> bool:
        return client_estimate(state) >= self.threshold(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "auto" and not self.over_trigger(state):
            return None
        cfg = self.config
        base = 1 if state.has_system else 0
        end = min(base + cfg.protect_first_n, len(state))
        while 0 < end < len(state) and not state.can_cut(
            end
        ):  # the head ends on a unit's end (a call with its results)
            end += 1
        head = tuple(range(base, end)) if cfg.protect_first_n else ()
        start = max(len(state) - cfg.protect_last_n, floor_index(state))
        request = SummaryRequest(
            prompt=SUMMARY_PROMPT,
            wrapper=SUMMARY_WRAPPER,
            role="user",
            drop_tool_outputs=True,
            input_max_chars=SUMMARY_INPUT_CHARS,
            input_keep="ends",
            max_tokens=SUMMARY_MAX_TOKENS,
        )
        pinned = tuple(i for i in head if state.view.shows(i))
        plan = summary_plan(state, start, request, pinned=pinned)
        if plan is None or trigger != "auto" or not self._still_over(state, plan):
            return plan
        # Under pressure Hermes keeps fewer of the newest messages (PRESSURE_KEEP_LAST); still over, it does not
        # compress again into the same state (its failure cooldown).
        tight = summary_plan(state, max(len(state) - PRESSURE_KEEP_LAST, floor_index(state)), request, pinned=pinned)
        return tight if tight is not None and not self._still_over(state, tight) else None

    def _still_over(self, state: RunState, plan: Plan) -> bool:
        """Whether ``plan``'s view, its summary counted at the smallest the summariser writes, is still over the
        threshold."""
        tokens = state.view_size(plan.view_from(state.view).with_(summary=None))[0]
        return tokens + smallest_summary_chars(state, SUMMARY_WRAPPER) // 4 >= self.threshold(state)
