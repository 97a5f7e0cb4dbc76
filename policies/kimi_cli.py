"""Kimi CLI (MoonshotAI/kimi-cli): ``SimpleCompaction``, keep the last two user/assistant messages and summarise the
rest.

Read at ``MoonshotAI/kimi-cli@4a550eff`` (version 1.49.0, 2026-07-16; catalogue ``reference/policy-catalogue.md``
§B18 and its §F row): ``src/kimi_cli/soul/compaction.py`` (``should_auto_compact``, ``SimpleCompaction`` with
``max_preserved_messages = 2``, ``prepare``, ``compact``, ``COMPACTION_OUTPUT_PREFIX``, ``estimate_text_tokens``),
``src/kimi_cli/soul/kimisoul.py`` (the check before every step on ``token_count_with_pending``, ``compact_context``,
the token count set from the last step's ``usage.total``), ``src/kimi_cli/soul/context.py`` (the pending estimate of
messages appended since), ``src/kimi_cli/config.py`` (``reserved_context_size = 50_000``, ``compaction_trigger_ratio
= 0.85``), ``src/kimi_cli/soul/message.py`` (``system()`` wraps a text in ``<system>…</system>``) and
``src/kimi_cli/prompts/compact.md`` (the compression priorities and output structure).

``kimi-cli`` is on PyPI, but its compaction needs its LLM and ``kosong`` chat provider stack; no conformance suite is
provided for it (the catalogue lists none for §B18).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, plan_shrinks
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule

COMPACTION_TRIGGER_RATIO = 0.85  # config.py LoopControl.compaction_trigger_ratio (ge 0.5, le 0.99)
RESERVED_CONTEXT_SIZE = 50_000  # config.py LoopControl.reserved_context_size (ge 1000)
MAX_PRESERVED_MESSAGES = 2  # compaction.py SimpleCompaction(max_preserved_messages=2)
#: compaction.py: the compacted history opens with a user message: this prefix (as ``system()`` wraps it), then the
#: summariser's reply.
SUMMARY_WRAPPER = "<system>Previous context has been compacted. Here is the compaction output:</system>{summary}"
#: ``prepare`` gives the summariser the text parts of each message only: thinking and tool calls are left out (here by
#: an edit of the messages that leave the view, which only the summariser reads).
_TEXT_ONLY = Rule(kinds=frozenset({"thinking", "tool_call"}), action="drop")
# Our wording of prompts/compact.md: compact the numbered messages by priority (current task state, errors and their
# fixes, final code only, environment, design decisions, TODOs), keep errors and working solutions, merge, drop
# redundancy, condense code, answer in the tagged sections.
SUMMARY_PROMPT = (
    "Compact the conversation above. Priorities, in order: what is being worked on right now; every error met and its "
    "resolution; the final working code only; the project structure and environment; design decisions and why; open "
    "tasks and known issues. Always keep error messages, stack traces, working solutions and the current task; merge "
    "similar discussions; drop redundant explanations and failed attempts (keep their lessons); keep short code whole "
    "and long code as signatures plus key logic. Answer in sections: current_focus, environment, completed_tasks, "
    "active_issues, code_state."
)


@dataclass(frozen=True)
class KimiCliConfig:
    """Parameters, Kimi CLI's names.

    Attributes:
        compaction_trigger_ratio: compact when the context's tokens reach this share of ``max_context_size`` (0.85;
            Kimi accepts 0.5 to 0.99).
        reserved_context_size: ... or when the tokens plus this reserve reach ``max_context_size`` (50,000; at least
            1,000 in Kimi; scaled with the window by ``csim check``).
        max_preserved_messages: user/assistant messages kept verbatim from the end (``SimpleCompaction``'s 2).
        max_context_size: the model's ``max_context_size``; unset: the simulated model's context window.
    """

    compaction_trigger_ratio: float = COMPACTION_TRIGGER_RATIO
    reserved_context_size: int = field(default=RESERVED_CONTEXT_SIZE, metadata={"tokens": True})
    max_preserved_messages: int = MAX_PRESERVED_MESSAGES
    max_context_size: int | None = None

    def __post_init__(self) -> None:
        if not 0.5 <= self.compaction_trigger_ratio <= 0.99:
            raise InvalidConfig(
                f"compaction_trigger_ratio={self.compaction_trigger_ratio!r} must be in [0.5, 0.99] (Kimi's Field)"
            )
        if self.reserved_context_size < 0:
            raise InvalidConfig(f"reserved_context_size={self.reserved_context_size!r} must be >= 0")
        if self.max_context_size is not None and self.max_context_size < 1:
            raise InvalidConfig(f"max_context_size={self.max_context_size!r} must be >= 1, or unset")


@register("kimi-cli")
class KimiCli(Policy[KimiCliConfig]):
    """Kimi CLI: at 0.85 of the window or 50,000 tokens from it, summarise all but the last 2 user/assistant messages.

    * **Trigger** (``should_auto_compact``, before every step): ``token_count_with_pending`` (the last step's
      ``usage.total``, prompt plus reply, plus chars/4 of the messages appended since) ``>= max_context_size x 0.85``
      or ``+ reserved_context_size >= max_context_size``, whichever fires first; ``/compact`` compacts at once.
    * **Kept** (``SimpleCompaction.prepare``): walking back from the end, the messages from the
      ``max_preserved_messages``-th user or assistant message on (tool messages in between ride along); with fewer
      than that, nothing is compacted. The previous summary is a user message of the history and counts.
    * **Summary**: everything before is summarised (the previous summary with it: regenerated) and the history is
      rewritten to ``[user: "<system>Previous context has been compacted. Here is the compaction output:</system>" +
      summary, *kept]``. After a compaction the count is an estimate of the new history.

    Differences: the summariser's input is the engine's transcript of the messages (text parts, tool results as
    ``[name result …]``), not Kimi's numbered ``## Message`` blocks; nothing of an unresolved pending turn is
    summarised (the harness's contract); a compaction that would not shrink the view is skipped. The background-task
    snapshot Kimi appends after compacting, the custom ``/compact`` instruction and the retries with back-off are not
    modelled.

    Known deviations: ``live-turn`` (in a tool loop the two newest user/assistant messages are the loop's own replies,
    and the user message that started it is summarised); ``atomic-units`` (the kept messages may start inside a
    thinking tool loop: Kimi counts messages, not loops); ``revert-resolution`` (Kimi has no notion of reverts);
    ``compaction-loop`` (when the two kept messages alone stay over the trigger, Kimi compacts again before every
    step).
    """

    TUNABLE = {
        "compaction_trigger_ratio": "0.5:0.95:0.05",
        "max_preserved_messages": "1:6",
    }
    TUNABLE_NATIVE = {
        "compaction_trigger_ratio": "loop_control.compaction_trigger_ratio = {value} (config)",
        "max_preserved_messages": "SimpleCompaction(max_preserved_messages={value})",
    }

    Config = KimiCliConfig
    known_deviations = frozenset({"live-turn", "atomic-units", "revert-resolution", "compaction-loop"})
    deviation_reasons = {
        "live-turn": (
            "in a tool loop Kimi's two kept messages are the loop's own, and the user message that started it is "
            "summarised"
        ),
        "atomic-units": (
            "Kimi counts messages, so the kept ones can start inside the live tool loop, after the reply whose"
            " thinking opened it"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "Kimi has no notion of reverts",
        "compaction-loop": (
            "when the two kept messages alone stay over the trigger, Kimi compacts again before every step"
        ),
    }

    def max_context(self, state: RunState) -> int:
        return self.config.max_context_size if self.config.max_context_size is not None else state.model.context_window

    @staticmethod
    def token_count(state: RunState) -> int:
        """``token_count_with_pending``: the last step's prompt plus reply, plus ``estimate_text_tokens`` (chars // 4)
        of the messages appended after that reply; right after a compaction, the estimate of the new history (here
        the view's tokens)."""
        changed = state.view_changed_since_request
        if state.last_input_tokens is None or changed:
            return state.view_size()[0]
        pending = state.chars(min(state.messages_at_last_request + 1, len(state))) // 4
        return state.last_input_tokens + (state.last_output_tokens or 0) + pending

    def over_trigger(self, state: RunState) -> bool:
        cfg = self.config
        tokens, limit = self.token_count(state), self.max_context(state)
        return tokens >= limit * cfg.compaction_trigger_ratio or tokens + cfg.reserved_context_size >= limit

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or len(state) == 0:
            return None
        if trigger == "auto" and not self.over_trigger(state):
            return None
        start = self.preserve_start(state)
        if start is None:
            return None
        pf = state.protected_from
        if pf is not None:
            start = min(start, pf)
        if start <= floor_index(state) and state.view.summary is None:
            return None  # nothing to compact
        plan = Plan(
            start=start,
            summarize=True,
            summary_request=SummaryRequest(role="user", wrapper=SUMMARY_WRAPPER, prompt=SUMMARY_PROMPT),
            edits=(Edit(_TEXT_ONLY, start),),
            mode="summarize",
        )
        return plan if plan_shrinks(state, plan) else None

    def preserve_start(self, state: RunState) -> int | None:
        """``prepare``: the log index of the ``max_preserved_messages``-th user/assistant message from the end, or None
        when the history holds fewer (or ``max_preserved_messages`` is 0 or less: nothing is compacted). Commands are
        not in Kimi's history. The previous summary counts as a user message: reaching it means nothing to compact."""
        keep = self.config.max_preserved_messages
        if keep <= 0:
            return None
        msgs = state.messages
        lo = floor_index(state)
        seen = 0
        for i in range(len(state) - 1, lo - 1, -1):
            m = msgs[i]
            if m.role == "assistant" or (m.role == "user" and m.command is None):
                seen += 1
                if seen == keep:
                    return i
        return None
