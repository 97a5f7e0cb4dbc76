"""Letta (formerly MemGPT): sliding-window summarisation of the in-context messages, with "all" as the fallback.

Read (the repository's current snapshot is emptied, so index versions of ``letta-ai/letta``):
``letta/services/summarizer/summarizer_sliding_window.py@63d3146f`` (``summarize_via_sliding_window``),
``summarizer_all.py@f5044053`` (``summarize_all``), ``compact.py@1a4b119f`` (``compact_messages``: modes, fallbacks,
the placement ``[system, summary, *kept]``), ``summarizer_config.py@0ca33c58`` (``CompactionSettings``: mode
``sliding_window``, ``clip_chars`` 50,000), ``thresholds.py@98c7d106`` (``get_compaction_trigger_threshold``),
``constants.py@63d3146f`` (``SUMMARY_TRUNCATION_SUFFIX``), and ``letta/agents/letta_agent_v3.py`` (index id
51860362311: the post-step check ``context_token_estimate > threshold`` with ``context_token_estimate =
usage.total_tokens``, and compact-and-retry on ``ContextWindowExceededError`` up to ``max_summarizer_retries``); the
catalogue ``reference/policy-catalogue.md`` §B13 (``partial_evict_summarizer_percentage`` 0.30,
``max_summarizer_retries`` 3 from ``SummarizerSettings``) and §F.

Letta keeps every message in its database; the agent's ``message_ids`` list says which are in context: a view.
The in-context list is ``[system, summary (after a compaction), ...]`` and every index below is in that list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import end_cut, plan_shrinks, reported_total
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import View

SLIDING_WINDOW_PERCENTAGE = 0.30  # SummarizerSettings.partial_evict_summarizer_percentage
EVICTION_STEP = 0.10  # summarize_via_sliding_window: the eviction fraction grows by 10 % a try
SUMMARIZATION_TRIGGER_MULTIPLIER = 0.9  # letta.constants: GPT-5 models (or force_proactive) compact at 0.9 window
CLIP_CHARS = 50_000  # CompactionSettings.clip_chars: the summary is cut there (+ SUMMARY_TRUNCATION_SUFFIX)
MAX_SUMMARIZER_RETRIES = 3  # SummarizerSettings.max_summarizer_retries: compact-and-retry on a context-window error
# The summary message Letta builds (package_summarize_message_no_counts): a JSON system alert carrying the summary;
# its wording was not re-read, so ours.
SUMMARY_WRAPPER = (
    '{{"type": "system_alert", "message": "Earlier messages are hidden to fit the context window. A summary of them '
    'follows:\\n{summary}"}}'
)
SUMMARY_PROMPT = (
    "Summarise the messages that are about to leave the context window so the agent can continue: what the user "
    "asked, what was done and found, and what remains."
)


@dataclass(frozen=True)
class LettaConfig:
    """``CompactionSettings`` and the trigger.

    Attributes:
        mode: ``sliding_window`` (the default) or ``all`` (summarise every message but the system prompt).
        sliding_window_percentage: the share of the window left after a sliding-window compaction is ``1 - p``
            (0.30: a goal of 70 %); the eviction starts at ``p`` and grows by 0.10 before each try.
        force_proactive: compact at 0.9 of the window (Letta does for GPT-5 models); else at the window itself.
        clip_chars: the summary's length cap in characters (50,000; as an output cap of a quarter as many tokens).
    """

    mode: Literal["sliding_window", "all"] = "sliding_window"
    sliding_window_percentage: float = SLIDING_WINDOW_PERCENTAGE
    force_proactive: bool = False
    clip_chars: int = CLIP_CHARS

    def __post_init__(self) -> None:
        if self.mode not in ("sliding_window", "all"):
            raise InvalidConfig(f"mode={self.mode!r} must be 'sliding_window' or 'all'")
        if not 0.0 <= self.sliding_window_percentage <= 1.0:
            raise InvalidConfig(
                f"sliding_window_percentage={self.sliding_window_percentage!r} must be between 0 and 1 "
                "(Letta asserts <= 1.0)"
            )
        if self.clip_chars <= 0:
            raise InvalidConfig(f"clip_chars={self.clip_chars!r} must be greater than 0")


@register("letta")
class Letta(Policy[LettaConfig]):
    """Letta: past the window, summarise the oldest 40 % (then 50 %...) of messages until 70 % of it is left.

    * After each step (the reply and its tool results are in), ``usage.total_tokens`` of that step's call (prompt
      plus completion) against ``get_compaction_trigger_threshold``: the whole window for most models, 0.9 of it for
      GPT-5 models; strictly over it, compact. A context-window error compacts and retries, up to 3 times. Asked here
      before the next request, with the same numbers.
    * ``sliding_window``: goal ``(1 - 0.30) * window``; the eviction fraction starts at 0.30 and grows by 0.10 before
      each try (so first 40 %); the cut is the last assistant message at or before ``round(fraction * N)`` of the
      ``N`` in-context messages; the tokens of ``[system, *messages[cut:]]`` are counted; again until under the goal.
      Then ``messages[1:cut]`` are summarised: the previous summary, at index 1, included (regenerated). A fraction
      reaching 1.0, no assistant message, or a cut at the last message raise, and Letta falls back to ``all``.
    * ``all``: every message but the system prompt is summarised (a pending approval request at the end stays).
    * The result is ``[system, summary, *messages[cut:]]``, the summary clipped at 50,000 characters.

    Known deviations: the cut counts messages, so it may fall inside the live thinking tool loop (``atomic-units``) and
    summarise the newest user message of a long loop, as ``all`` always does (``live-turn``); reverts are unknown to
    it (``revert-resolution``).

    Differences: token counts are the engine's exact ones (Letta counts with the provider's counter; a heuristic
    counter adds a 1.3 margin); the sliding window's own check after compacting (over the trigger again: summarise
    all that is left, which drops the first summary) is not modelled, as the goal is below the trigger; the summary
    is clipped as an output cap of a quarter of ``clip_chars`` tokens; the summary message is a user message (Letta's
    ``summary`` role, sent as a user message); nothing of an unresolved pending turn is summarised.
    """

    TUNABLE = {
        "sliding_window_percentage": "0.1:0.9:0.1",
    }
    TUNABLE_NATIVE = {
        "sliding_window_percentage": "CompactionSettings(sliding_window_percentage={value})",
    }

    Config = LettaConfig
    known_deviations = frozenset({"atomic-units", "live-turn", "revert-resolution"})
    deviation_reasons = {
        "atomic-units": (
            "Letta's cut counts messages, so it can drop the reply whose thinking opened the live tool loop"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "live-turn": "Letta can summarise the newest user message of a long loop (mode all always does)",
        "revert-resolution": "Letta knows nothing of reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return MAX_SUMMARIZER_RETRIES

    def threshold(self, state: RunState) -> int:
        window = state.model.context_window
        return int(window * SUMMARIZATION_TRIGGER_MULTIPLIER) if self.config.force_proactive else window

    @staticmethod
    def context_token_estimate(state: RunState) -> int | None:
        """``usage.total_tokens`` of the last step's call; once the view changed since (a compaction), the prompt
        the next request sends (Letta's estimate after compacting)."""
        return reported_total(state)

    def over_trigger(self, state: RunState) -> bool:
        estimate = self.context_token_estimate(state)
        return estimate is not None and estimate > self.threshold(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "auto" and not self.over_trigger(state):
            return None
        if self.config.mode == "sliding_window":
            plan = self.sliding_window(state)
            if plan is not None:
                return plan
        return self.summarise_all(state)

    def plan(self, state: RunState, start: int, mode: str) -> Plan | None:
        pf = state.protected_from
        if pf is not None:
            start = min(start, pf)
        if start <= state.view.start:
            return None
        plan = Plan(
            start=start,
            summarize=True,
            summary_request=SummaryRequest(
                role="user", wrapper=SUMMARY_WRAPPER, prompt=SUMMARY_PROMPT, max_tokens=self.config.clip_chars // 4
            ),
            mode=mode,
        )
        return plan if plan_shrinks(state, plan) else None

    def sliding_window(self, state: RunState) -> Plan | None:
        """``summarize_via_sliding_window``; None where it raises (the caller falls back to ``all``)."""
        msgs, n, view = state.messages, len(state), state.view
        tail = list(range(max(view.start, 1 if state.has_system else 0), n))
        has_summary = view.summary is not None
        head = 1 + has_summary  # the system prompt, then the summary
        total = head + len(tail)  # N, the in-context messages

        def log_index(i: int) -> int | None:
            return tail[i - head] if i >= head else None

        p = self.config.sliding_window_percentage
        goal = (1 - p) * state.model.context_window
        approx: float = state.model.context_window
        eviction = p
        cut: int | None = None
        while approx >= goal and eviction < 1.0:
            eviction += EVICTION_STEP
            cutoff = round(eviction * total)
            cut = next(
                (
                    i
                    for i in range(min(cutoff, total - 1), 0, -1)
                    if (j := log_index(i)) is not None and msgs[j].role == "assistant"
                ),
                None,
            )
            if cut is None:
                continue
            approx = state.view_size(View(start=tail[cut - head]))[0]  # [system, *messages[cut:]]
        maximum = total - 2 if n and msgs[-1].pending else total - 1
        if cut is None or eviction >= 1.0 or cut >= maximum:
            return None
        return self.plan(state, tail[cut - head], "sliding_window")

    def summarise_all(self, state: RunState) -> Plan | None:
        """``summarize_all``: every in-context message but the system prompt (a pending request at the end stays)."""
        n = len(state)
        start = end_cut(state)
        if n and state.messages[-1].pending:
            start = min(start, state.unit_start(n - 1))
        return self.plan(state, start, "all")
