"""NexAU (``nex-agi/NexAU``): context compaction before and after each model call, by clearing old tool results or
by a summary of all but the newest iterations, and an emergency summary with one retry on a provider overflow.

Read: ``nex-agi/NexAU`` at commit ``1df3fd24ad054d64b74bd39beb3f33034fb5cbf7`` (2026-05-22; ``pyproject.toml``
version 0.4.1), directory ``nexau/archs/main_sub/execution/middleware/context_compaction/``: ``middleware.py``
(``ContextCompactionMiddleware.before_model``, ``after_model``, ``wrap_model_call``), ``config.py``
(``CompactionConfig``), ``factory.py``, ``trigger_strategies/token_threshold.py``, ``compact_stratigies/
compact_tool_result.py`` (``ToolResultCompaction``), ``compact_stratigies/sliding_window.py``
(``SlidingWindowCompaction``, the ``llm_summary`` strategy), ``compact_stratigies/user_model_full_trace_adaptive.py``
(the emergency strategy), ``prompts/compact_prompt.md``; and ``nexau/archs/main_sub/utils/token_counter.py``
(``TokenCounter``) and ``nexau/core/usage.py`` (``TokenUsage.context_used_tokens``). Earlier this module followed
NexAU's guide ``context_compaction.md`` only (``reference/field-2026.md`` §3), which names no ``before_model`` check.

NexAU is not on PyPI (``pip index versions nexau``: no matching distribution) and its compaction needs its agent
runtime (``Message`` types, ``LLMCaller``): no conformance suite.

The middleware checks at two points, with no guard against compacting again on the next call:

* ``before_model``, before every model call (mid tool loop included): the messages' token estimate
  (``TokenCounter``'s default ``fallback`` counter: a quarter of the characters of each text, plus 3 a message and
  its role, 1 a block, 8 a tool use, 6 a tool result), compacted when it reaches ``threshold`` of the window. No
  skip.
* ``after_model``, after every model call: the reply's reported usage (``context_used_tokens``: uncached input plus
  cache reads, so the prompt, without the reply); skipped when the last assistant message made no tool call.

Here the engine asks before each request and right after each reply (``when``); ``decide`` tells the points apart
by the last message: an assistant message is the reply just made.

Both strategies group the messages after the system prompt into *iterations*: each assistant message starts one,
the user messages right before it join it, the tool results after it belong to it; with ``keep_user_rounds`` > 0,
into *user rounds* instead, each ending at an assistant message without tool calls (the unfinished one last). The
newest ``keep_iterations`` (or ``keep_user_rounds``) are kept; with no more than that, nothing happens.

On a provider overflow (``wrap_model_call``, while ``emergency_compact_enabled``), ``UserModelFullTraceAdaptive
Compaction`` keeps the system prompt, the newest iteration and the last user message, summarises everything else
into one message placed right after the system prompt (a ``FRAMEWORK`` message, sent as a user message) and the call
is retried once.

Defaults (``config.py`` ``CompactionConfig``): ``threshold`` 0.75, ``keep_iterations`` 3, ``keep_user_rounds`` 0
(off; both set raises), ``compaction_strategy`` ``tool_result_compaction`` (``sliding_window`` is a deprecated
name of ``llm_summary``), ``compactable_tools`` unset (every tool), ``emergency_compact_enabled`` True.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies._tail import summary_plan
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, keep_reverts, plan_shrinks, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule

THRESHOLD = 0.75  # config.py threshold; token_threshold.py compacts when tokens / max_context_tokens >= it
KEEP_ITERATIONS = 3  # config.py keep_iterations
KEEP_USER_ROUNDS = 0  # config.py keep_user_rounds: 0 is off
COMPACTED = "Tool call result has been compacted"  # compact_tool_result.py: what a compacted result reads
#: sliding_window.py ``_HANDOFF_SUMMARY_PREFIX``, verbatim: ``with_handoff_prefix`` puts it and a blank line before
#: every summary, regular and emergency. Quoted because the model is sent it, as a placeholder would be.
HANDOFF_PREFIX = (
    "Another language model started to solve this problem and produced a summary of the conversation so far. "
    "You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work. "
    "Here is the summary produced by the other language model; use the information in this summary to assist with "
    "your own analysis:"
)
SUMMARY_WRAPPER = HANDOFF_PREFIX + "\n\n{summary}"
#: Our own wording of ``prompts/compact_prompt.md`` (about 3,700 characters there): a continuation summary in six
#: sections, the last listing every user message verbatim.
SUMMARY_PROMPT = (
    "Write a continuation summary so that another instance can resume this work: the task and its constraints, "
    "what has been done, the files and outputs involved, discoveries and decisions, the next steps, the context to "
    "keep, and every user message so far quoted verbatim in order."
)
#: token_counter.py's fallback counter, per message: ``_MESSAGE_OVERHEAD_TOKENS`` 3, the role (1 to 3 tokens) and
#: ``_BLOCK_OVERHEAD_TOKENS`` 1 for its block (ours, rounded: 5); per tool call, ``_TOOL_USE_OVERHEAD_TOKENS`` 8 and
#: its result's ``_TOOL_RESULT_OVERHEAD_TOKENS`` 6, and its id counted in each (ours: a token each).
MESSAGE_OVERHEAD = 5
CALL_OVERHEAD = 8 + 6 + 2
#: user_model_full_trace_adaptive.py: ``keep_recent_iterations`` 1; the merged summary's output cap
#: ``max(192, min(merge_output_cap 3072, int(window * merge_output_max_ratio 0.06))``.
EMERGENCY_KEEP_ITERATIONS = 1
MERGE_OUTPUT_MIN, MERGE_OUTPUT_CAP, MERGE_OUTPUT_RATIO = 192, 3_072, 0.06


@dataclass(frozen=True)
class NexAUConfig:
    """``CompactionConfig``'s compaction settings, NexAU's names (``config.py``).

    Attributes:
        threshold: compact once the count reaches this share of the window (0.75).
        keep_iterations: the newest iterations kept (3).
        keep_user_rounds: when > 0, the newest user rounds kept instead of iterations (0: off).
        compactable_tools: the tools whose results ``tool_result_compaction`` may clear; unset: every tool.
        emergency_compact_enabled: on a provider overflow, the emergency summary and one retry (True).
    """

    threshold: float = THRESHOLD
    keep_iterations: int = KEEP_ITERATIONS
    keep_user_rounds: int = KEEP_USER_ROUNDS
    compactable_tools: tuple[str, ...] | None = None
    emergency_compact_enabled: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise InvalidConfig(f"threshold={self.threshold!r} must be in (0, 1]")
        if self.keep_iterations < 1:  # both strategies' __init__: "keep_iterations must be >= 1"
            raise InvalidConfig(f"keep_iterations={self.keep_iterations!r} must be >= 1")
        if self.keep_user_rounds < 0:
            raise InvalidConfig(f"keep_user_rounds={self.keep_user_rounds!r} must be >= 0")
        if self.keep_iterations != KEEP_ITERATIONS and self.keep_user_rounds > 0:
            raise InvalidConfig("cannot set both keep_iterations and keep_user_rounds")


def estimate(state: RunState) -> int:
    """``TokenCounter``'s fallback count of the view (``before_model``'s): a quarter of its characters, rounded up,
    plus the overheads of its messages and tool calls."""
    _, sent = state.view_size()
    return -(-state.chars_in_view() // 4) + MESSAGE_OVERHEAD * sent + CALL_OVERHEAD * state.tool_uses()


def iteration_start(state: RunState, keep: int) -> int | None:
    """Where the newest ``keep`` iterations start (``_group_into_iterations``): the ``keep``-th newest assistant
    message, moved back over the user messages right before it; None when no message of the view lies before it
    (no more iterations than ``keep``)."""
    lo, seen, msgs = floor_index(state), 0, state.messages
    for i in range(len(state) - 1, lo - 1, -1):
        if msgs[i].role == "assistant":
            seen += 1
            if seen == keep:
                while i > lo and msgs[i - 1].role == "user":
                    i -= 1
                return i if i > lo else None
    return None


def round_start(state: RunState, keep: int) -> int | None:
    """Where the newest ``keep`` user rounds start (``_group_into_user_rounds``: a round ends at an assistant message
    without tool calls, the unfinished one is the newest): right after the ``keep``-th newest such end that has a
    message after it; None when no message of the view lies before."""
    lo, seen, msgs = floor_index(state), 0, state.messages
    for b in range(len(state) - 1, lo, -1):
        m = msgs[b - 1]
        if m.role == "assistant" and not m.calls:
            seen += 1
            if seen == keep:
                return b
    return None


#: Why both strategies declare ``atomic-units``: the emergency path's cut, which NexAU makes in the live turn too.
EMERGENCY_THINKING = (
    "NexAU's emergency summary keeps only the newest iteration and the last user message: mid tool loop it"
    " summarises the reply that opened the turn, and that reply's thinking with it"
)


class _NexAU(Policy[NexAUConfig]):
    """The part both strategies share: the two check points, the kept part, the emergency path."""

    TUNABLE = {
        "threshold": "0.5:0.95:0.05",
        "keep_iterations": "1:10",
    }
    TUNABLE_NATIVE = {
        "threshold": "CompactionConfig(threshold={value})",
        "keep_iterations": "CompactionConfig(keep_iterations={value})",
    }

    Config = NexAUConfig
    when = frozenset({"request", "response"})

    @property
    def retry_on_overflow(self) -> int:
        """``wrap_model_call``: one emergency compaction and one retry, when ``emergency_compact_enabled``."""
        return 1 if self.config.emergency_compact_enabled else 0

    def count(self, state: RunState) -> int:
        """The count of the point ``state`` is at: right after a reply (the last message an assistant's), the
        reported prompt (``after_model``; the estimate when the view changed since); else the estimate
        (``before_model``)."""
        after_reply = len(state) > 0 and state.messages[-1].role == "assistant"
        if after_reply and state.last_input_tokens is not None and not state.view_changed_since_request:
            return state.last_input_tokens
        return estimate(state)

    def over_trigger(self, state: RunState) -> bool:
        return self.count(state) >= self.config.threshold * state.model.context_window

    def kept_from(self, state: RunState) -> int | None:
        """The first message of the kept iterations (or user rounds); None when there is nothing older."""
        if self.config.keep_user_rounds > 0:
            return round_start(state, self.config.keep_user_rounds)
        return iteration_start(state, self.config.keep_iterations)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if len(state) == 0:
            return None
        if trigger == "overflow":
            return self.emergency(state) if self.config.emergency_compact_enabled else None
        if trigger != "auto":
            return None  # no /compact: middleware.py says its handlers do not exist yet
        last = state.messages[-1]
        if last.role == "assistant" and not last.calls:
            return None  # after_model: "Last assistant message has no tool calls, skipping compaction"
        if not self.over_trigger(state):
            return None
        start = self.kept_from(state)
        return None if start is None else self._plan(state, start)

    def _plan(self, state: RunState, start: int) -> Plan | None:
        raise NotImplementedError

    def emergency(self, state: RunState) -> Plan | None:
        """``UserModelFullTraceAdaptiveCompaction.compact``: keep the newest iteration and the last user message,
        summarise the rest into a message right after the system prompt."""
        start = iteration_start(state, EMERGENCY_KEEP_ITERATIONS)
        if start is None:
            return None
        pf = state.protected_from
        cut = keep_reverts(state, unit_floor(state, start if pf is None else min(start, pf)))
        lu = state.last_user_index
        held = [c for r, c in state.reverts if r == lu and c < cut]  # a revert in the pinned user message
        if held:
            cut = keep_reverts(state, unit_floor(state, min(held)))
        if cut <= floor_index(state):
            return None
        pinned = (lu,) if 0 <= lu < cut else ()
        window = state.model.context_window
        request = SummaryRequest(
            prompt=SUMMARY_PROMPT,
            wrapper=SUMMARY_WRAPPER,
            role="user",
            max_tokens=max(MERGE_OUTPUT_MIN, min(MERGE_OUTPUT_CAP, int(window * MERGE_OUTPUT_RATIO))),
        )
        plan = Plan(
            start=cut,
            summarize=True,
            pinned=pinned,
            summary_slot=0 if pinned else None,
            summary_request=request,
            mode="emergency",
        )
        return plan if plan_shrinks(state, plan) else None


@register("nexau-tool-result-compaction")
class NexAUToolResultCompaction(_NexAU):
    """NexAU ToolResultCompaction: at 0.75 of the window, before or after a model call, older tool results cleared.

    * **When**: before each model call by NexAU's estimate, and right after each reply with tool calls by its
      reported prompt, at ``threshold`` of the window.
    * **What**: every tool result before the newest ``keep_iterations`` iterations (or ``keep_user_rounds`` user
      rounds) reads "Tool call result has been compacted"; with ``compactable_tools`` set, only those tools' results
      (calls, ids and other messages stay).
    * **Overflow**: the emergency summary and one retry (see the module).

    Differences: nothing of a pending turn is cleared (the harness's contract); the emergency summary is one
    summariser call on everything it replaces (NexAU: two halves, each cut to its first 0.35 of the window, and a
    merge call); Anthropic cache writes count in the reported prompt (``context_used_tokens`` leaves them out).

    Known deviations: ``compaction-loop``: clearing results keeps every message, so a view whose messages alone stay
    over the threshold is cleared again at the next call (NexAU checks before and after every call).
    ``revert-resolution`` (NexAU knows nothing of reverts): a change the emergency summary replaced is not brought
    back for a revert that comes later. ``atomic-units``: the emergency summary cuts inside the live turn, so in a
    tool loop whose first reply alone thinks, the request's final turn starts without thinking (Anthropic rejects
    it; NexAU's retry after a 400 covers only invalid thinking signatures, ``llm_caller.py``).
    """

    known_deviations = frozenset({"compaction-loop", "revert-resolution", "atomic-units"})
    deviation_reasons = {
        "compaction-loop": (
            "clearing results keeps every message, so a view whose messages alone"
            " stay over the threshold is cleared again before every call"
        ),
        "revert-resolution": (
            "NexAU knows nothing of reverts: a change its emergency summary replaced is not brought back for its revert"
        ),
        "atomic-units": EMERGENCY_THINKING,
    }

    @property
    def rule(self) -> Rule:
        tools = self.config.compactable_tools
        return Rule(kinds=frozenset({"tool_result"}), tools=None if tools is None else frozenset(tools), text=COMPACTED)

    def _plan(self, state: RunState, start: int) -> Plan | None:
        rule, pf = self.rule, state.protected_from
        bound = start if pf is None else min(start, pf)
        current = next((e.before for e in state.view.edits if e.rule == rule), 0)
        if bound <= current:
            return None
        edits = tuple(e for e in state.view.edits if e.rule != rule) + (Edit(rule, bound),)
        view = state.view  # an emergency summary's pinned user message and slot stay
        plan = Plan(
            start=view.start,
            spans=view.spans,
            summary_slot=view.summary_slot,
            edits=edits,
            mode="tool-result-compaction",
        )
        return plan if plan_shrinks(state, plan) else None


@register("nexau-summary")
class NexAUSummary(_NexAU):
    """NexAU LLM summary: at 0.75 of the window, before or after a call, all but the newest 3 iterations summarised.

    * **When**: as ``nexau-tool-result-compaction``.
    * **What**: everything before the newest ``keep_iterations`` iterations (or ``keep_user_rounds`` user rounds) is
      summarised, the previous summary with it, and the summary, after NexAU's hand-off prefix, is a user message
      before the kept part.
    * **Overflow**: the emergency summary and one retry (see the module).

    Differences: the cut never passes the live turn's user message (the harness keeps it): in one long tool loop the
    older iterations of that turn stay until it ends; nothing of a pending turn is summarised. NexAU merges the
    summary into the first kept message when that is a user message (replacing its content with the summary and
    "The user request for this round is:" and its text), so a summary kept that way stays in it and the next one
    covers only what slid out since; here every summary folds in the previous one. NexAU splits a summariser input
    over the window into chunks and, when the summary call fails, uses the newest messages' text as the summary;
    here a failed summary leaves the view unchanged.

    Known deviations: ``revert-resolution`` (NexAU knows nothing of reverts): a change summarised away is not
    brought back for a revert that comes later. ``compaction-loop``: NexAU checks before and after every model call
    with no guard against compacting again (``SlidingWindowCompaction`` gives up only after 3 failed summaries in a
    row), so while what it keeps holds the view over the threshold it summarises again at every call.
    ``atomic-units``: as ``nexau-tool-result-compaction``'s, the emergency summary's cut in the live turn.
    """

    known_deviations = frozenset({"revert-resolution", "compaction-loop", "atomic-units"})
    deviation_reasons = {
        "revert-resolution": (
            "NexAU knows nothing of reverts: a change compacted away is not brought back for its revert"
        ),
        "compaction-loop": (
            "NexAU checks before and after every model call with no guard against compacting again: while what"
            " it keeps holds the view over the threshold, it summarises again at every call"
        ),
        "atomic-units": EMERGENCY_THINKING,
    }

    def _plan(self, state: RunState, start: int) -> Plan | None:
        return summary_plan(state, start, SummaryRequest(prompt=SUMMARY_PROMPT, wrapper=SUMMARY_WRAPPER, role="user"))
