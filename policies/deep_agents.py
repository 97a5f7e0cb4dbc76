"""Deep Agents ``SummarizationMiddleware`` (``create_deep_agent``'s default): past 0.85 of the input, summarise all but
the newest 10%, offload what was summarised to a file the summary names, and shorten old ``write_file`` /
``edit_file`` arguments first.

Read: ``langchain-ai/deepagents`` at ``23b83ad5`` (2026-08-21), ``libs/deepagents/deepagents/middleware/
summarization.py`` (``compute_summarization_defaults``, ``_DeepAgentsSummarizationMiddleware.__init__`` and its
``wrap_model_call``, ``_build_new_messages_with_path``, ``_get_history_path``, ``_truncate_args``,
``_determine_truncate_cutoff_index``, ``_truncate_tool_call``) and ``_overflow_clip.py``; the summarising itself is
LangChain's ``SummarizationMiddleware`` helper (``_should_summarize``, ``_determine_cutoff_index``,
``_create_summary``), which ``policies/langchain.py`` models and whose counting this policy reuses; the catalogue
``reference/policy-catalogue.md`` §B7e and §F. The ``deepagents`` package 0.7.32 on PyPI has the same rules (and also
drops Claude reasoning blocks from kept messages older than the summary, which has no counterpart here);
``conformance/deepagents/`` runs its ``wrap_model_call`` with a fake chat model on scripted states and before every
model call of the long conversations of ``conformance/long/``, and ``tests/conformance/test_conformance_deepagents.py``
compares this policy with what the model was sent and with each decision.

Before every model call (``wrap_model_call``), from the messages as the last summarisation event left them (the
state is never rewritten: a private ``_summarization_event`` holds the cut and the summary message, so this is a
view):

1. Argument truncation: when the count (``count_tokens_approximately`` of the system message and the messages)
   reaches the truncation trigger, every string argument over ``max_length`` (2,000) characters of a ``write_file``
   or ``edit_file`` call in the messages before the truncation keep window becomes its first 20 characters and
   "...(argument truncated)". The count is taken again.
2. Summarisation: when the count reaches the trigger, the cut leaves the newest ``keep`` (LangChain's token keep:
   the longest suffix within the budget, moved back to the AI message of a tool message it lands on); everything
   before (the previous summary included) is written to ``/conversation_history/{session_id}.md`` and summarised by
   LangChain's helper (its prompt, on the newest 4,000 tokens), and the model gets a user message saying the
   conversation was summarised, naming the file, and giving the summary in ``<summary>`` tags, then the kept messages.
3. A ``ContextOverflowError`` from the model below the trigger takes the same summarising path and calls again.

Defaults (``compute_summarization_defaults``), for a model whose profile gives ``max_input_tokens``: trigger
``("fraction", 0.85)``, keep ``("fraction", 0.10)``, truncation trigger and keep the same; without a profile:
``("tokens", 170000)``, ``("messages", 6)``, truncation at 20 messages keeping 20.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, plan_shrinks
from policies.langchain import (
    CHARS_PER_TOKEN,
    EXTRA_TOKENS_PER_MESSAGE,
    ROLE_CHARS,
    SUMMARY_PROMPT,
    approx_tokens,
    fraction_tokens,
    parse_size,
    safe_cutoff_point,
    suffix_tokens,
)
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule, View

# compute_summarization_defaults, with a model profile.
TRIGGER = "fraction:0.85"
KEEP = "fraction:0.1"
MAX_ARG_LENGTH = 2_000  # TruncateArgsSettings.max_length's default
TRUNCATION_TEXT = "...(argument truncated)"  # TruncateArgsSettings.truncation_text's default
TRUNCATED_TOOLS = frozenset({"write_file", "edit_file"})  # _truncate_args: only these calls' arguments
# What a truncated call's arguments read here: the engine replaces a call's arguments whole (see the differences).
TRUNCATED_ARGS = '{"...": "' + TRUNCATION_TEXT + '"}'
# _build_new_messages_with_path, with the file's path ({path}) and the summary.
SUMMARY_WRAPPER = (
    "You are in the middle of a conversation that has been summarized.\n\nThe full conversation history has been "
    "saved to {path} should you need to refer back to it for details.\n\nA condensed summary follows:\n\n"
    "<summary>\n{summary}\n</summary>"
)
HISTORY_PATH = "/conversation_history/{session}.md"  # _get_history_path, with the default artifacts root


@lru_cache(maxsize=4096)
def longest_string_arg(args: str) -> int:
    """The length of a call's longest string argument (``_truncate_tool_call`` measures each top-level value of the
    arguments alone); 0 for arguments that are not a JSON object."""
    try:
        parsed = json.loads(args)
    except ValueError:
        return 0
    if not isinstance(parsed, dict):
        return 0
    return max((len(v) for v in parsed.values() if isinstance(v, str)), default=0)


@dataclass(frozen=True)
class DeepAgentsConfig:
    """Parameters, Deep Agents' names (``kind:value`` as ``langchain-summarization`` takes them).

    Attributes:
        trigger: when to summarise (default ``fraction:0.85`` of the model's input budget).
        keep: what stays verbatim (default ``fraction:0.1``).
        truncate_trigger: when to truncate old arguments (default ``fraction:0.85``); ``none`` turns it off.
        truncate_keep: the newest messages whose arguments stay (default ``fraction:0.1``).
        max_arg_length: a string argument longer than this many characters is truncated (2,000).
        trim_tokens_to_summarize: the summariser sees the newest this many tokens (LangChain's 4,000).
        keep_last_user: the harness's contract, as ``langchain-summarization``'s: a last user message the cut passes
            stays in view after the summary. False summarises it, as Deep Agents does.
    """

    trigger: str = TRIGGER
    keep: str = KEEP
    truncate_trigger: str | None = TRIGGER
    truncate_keep: str = KEEP
    max_arg_length: int = MAX_ARG_LENGTH
    trim_tokens_to_summarize: int | None = 4_000
    keep_last_user: bool = True

    def __post_init__(self) -> None:
        parse_size(self.trigger, "trigger")
        parse_size(self.keep, "keep")
        if self.truncate_trigger is not None and self.truncate_trigger.strip().lower() not in ("", "none"):
            parse_size(self.truncate_trigger, "truncate_trigger")
        parse_size(self.truncate_keep, "truncate_keep")
        if self.max_arg_length < 1:
            raise InvalidConfig(f"max_arg_length={self.max_arg_length!r} must be at least 1")


@register("deep-agents")
class DeepAgents(Policy[DeepAgentsConfig]):
    """Deep Agents SummarizationMiddleware: past 0.85 of the input, all but the newest 10% summarised and offloaded.

    * Before every model call: old ``write_file``/``edit_file`` arguments are truncated once the count reaches the
      truncation trigger (messages before the newest 10% of the input budget); then, if the count is still at the
      trigger, LangChain's summarisation runs with a fraction keep of 0.1, and the summary message names the file the
      summarised messages were written to. A provider's context-length error summarises the same way.
    * The count is ``count_tokens_approximately`` of the system prompt and the messages the model would get
      (``langchain-summarization``'s :func:`~policies.langchain.approx_tokens`, plus the system prompt).

    Known deviations: as ``langchain-summarization``'s, its cut knows AI/tool pairs, not thinking tool loops
    (``atomic-units``), there are no reverts (``revert-resolution``), and it summarises again before every model call
    while it is over the trigger (``compaction-loop``): a keep of 0.1 of the input under a trigger of 0.85 leaves no
    such tail by itself, but an unresolved pending turn the harness keeps whole can (``csim check`` at 10,000
    examples).

    Differences: a truncated call's arguments are replaced whole by ``{"...": "...(argument truncated)"}`` (Deep
    Agents keeps every key and the first 20 characters of each string over ``max_length``), and once one call before
    the bound has a string argument over ``max_length``, every ``write_file``/``edit_file`` call before it is replaced
    (the engine edits a kind of part, not one argument; an edit that would not shrink the view is skipped); the history
    file is named but reading it back is not modelled, and its name is derived from the system prompt (Deep
    Agents draws a random session id); on an overflow, the large tool results at the end of the kept messages are not
    offloaded (``_clip_overflow_tail``); tool schemas are not counted; and ``langchain-summarization``'s
    differences (the last user message stays in view; nothing of a pending turn is summarised; a summary that would
    not shrink the view is skipped).
    """

    TUNABLE = {
        "trigger": "fraction:0.5,fraction:0.6,fraction:0.7,fraction:0.8,fraction:0.85,fraction:0.9",
        "keep": "fraction:0.05,fraction:0.1,fraction:0.2,fraction:0.3",
    }
    TUNABLE_NATIVE = {
        "trigger": "SummarizationMiddleware(trigger={value})",
        "keep": "SummarizationMiddleware(keep={value})",
    }

    Config = DeepAgentsConfig
    known_deviations = frozenset({"atomic-units", "revert-resolution", "compaction-loop"})
    deviation_reasons = {
        "compaction-loop": (
            "as LangChain's middleware, it summarises again before every model call while over the trigger: what must"
            " stay (a pending turn the harness keeps whole) can keep it over"
        ),
        "atomic-units": (
            "Deep Agents' cut knows AI/tool pairs, so it can drop the reply whose thinking opened the live tool loop"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "Deep Agents has no reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return 1

    # -- counting --------------------------------------------------------------------------------------------------
    def count(self, state: RunState, edits: tuple[Edit, ...] | None = None) -> int:
        """``_count_tokens``: the system message and the messages (with ``edits`` in place of the view's), as
        ``count_tokens_approximately`` counts them."""
        view = state.view if edits is None else state.view.with_(edits=edits)
        system = 0
        if state.has_system:
            system = math.ceil((state.messages[0].chars + ROLE_CHARS) / CHARS_PER_TOKEN) + EXTRA_TOKENS_PER_MESSAGE
        return system + approx_tokens(state, view, CHARS_PER_TOKEN)

    def reached(self, state: RunState, spec: str, count: int) -> bool:
        """A ``ContextSize`` trigger: ``messages`` when the model gets that many, else the count against the tokens or
        the fraction of the input budget."""
        kind, value = parse_size(spec, "trigger")
        if kind == "messages":
            return state.view_size()[1] - (1 if state.has_system else 0) >= value
        threshold = int(value) if kind == "tokens" else fraction_tokens(state, value)
        return count >= threshold

    def over_trigger(self, state: RunState) -> bool:
        return self.reached(state, self.config.trigger, self.count(state, self.truncated_edits(state)))

    # -- argument truncation -----------------------------------------------------------------------------------------
    def truncate_rule(self) -> Rule:
        return Rule(kinds=frozenset({"tool_call"}), tools=TRUNCATED_TOOLS, text=TRUNCATED_ARGS)

    def truncate_bound(self, state: RunState) -> int:
        """``_determine_truncate_cutoff_index``: messages before it have their arguments truncated. Token and fraction
        keeps walk back from the newest message while the kept tokens stay within the budget (no safe-cut move)."""
        kind, value = parse_size(self.config.truncate_keep, "truncate_keep")
        n, start = len(state), max(state.view.start, 1 if state.has_system else 0)
        if kind == "messages":
            return max(start, n - int(value))
        target = max(1, int(value) if kind == "tokens" else fraction_tokens(state, value))
        i, kept = n, 0
        while i > start:
            size = suffix_tokens(state, i - 1, CHARS_PER_TOKEN) - suffix_tokens(state, i, CHARS_PER_TOKEN)
            if kept + size > target:
                return i
            kept += size
            i -= 1
        return start

    def truncated_edits(self, state: RunState) -> tuple[Edit, ...]:
        """The view's edits with the argument truncation where ``_truncate_args`` applies it now (its bound only
        moves forward, and only over calls with a string argument over ``max_length``)."""
        trigger = self.config.truncate_trigger
        rule = self.truncate_rule()
        current = next((e.before for e in state.view.edits if e.rule == rule), 0)
        if trigger is None or trigger.strip().lower() in ("", "none"):
            return state.view.edits
        if not self.reached(state, trigger, self.count(state)):
            return state.view.edits
        bound = self.truncate_bound(state)
        pf = state.protected_from
        if pf is not None:
            bound = min(bound, pf)
        if bound <= current or not self._long_args_before(state, current, bound):
            return state.view.edits
        others = tuple(e for e in state.view.edits if e.rule != rule)
        return (*others, Edit(rule, bound))

    def _long_args_before(self, state: RunState, a: int, b: int) -> bool:
        """Whether a truncated tool's call in ``[a, b)`` has a string argument over ``max_length`` characters."""
        limit = self.config.max_arg_length
        return any(
            p.name in TRUNCATED_TOOLS and longest_string_arg(p.args or "") > limit
            for m in state.messages[a:b]
            for p in m.calls
        )

    # -- the decision -------------------------------------------------------------------------------------------------
    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "manual":
            return None
        edits = self.truncated_edits(state)
        if trigger == "auto" and not self.reached(state, self.config.trigger, self.count(state, edits)):
            if edits != state.view.edits:
                plan = Plan(start=state.view.start, edits=edits, mode="truncate-args")
                return plan if plan_shrinks(state, plan) else None
            return None
        base = self.summary_cut(state, edits)
        if base is None:
            return None
        path = HISTORY_PATH.format(session=self.session(state))
        plan = Plan(
            start=base.start,
            pinned=base.pinned,
            summary_slot=base.summary_slot,
            edits=edits,
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(
                role="user",
                wrapper=SUMMARY_WRAPPER.replace("{path}", path),
                prompt=SUMMARY_PROMPT,
                input_newest_tokens=self.config.trim_tokens_to_summarize,
            ),
        )
        return plan if plan_shrinks(state, plan) else None

    def summary_cut(self, state: RunState, edits: tuple[Edit, ...]) -> Plan | None:
        """LangChain's ``_determine_cutoff_index`` over the messages as the argument truncation left them (``edits``):
        the newest ``keep`` (a token or fraction keep: the longest suffix within the budget, found by bisection; the
        previous summary counts as the oldest message), a cut on a tool message moved back to the AI message whose
        calls it answers; with the last user message pinned when the cut passes it (``keep_last_user``)."""
        cfg = self.config
        base, n = floor_index(state), len(state)
        offset = 1 if state.view.summary is not None else 0  # list position k is log index base + k - offset
        total = n - base + offset
        kind, value = parse_size(cfg.keep, "keep")
        k: int | None
        if kind == "messages":
            k = total - int(value) if total > value else None
        else:
            target = max(1, int(value) if kind == "tokens" else fraction_tokens(state, value))
            if approx_tokens(state, state.view.with_(edits=edits), CHARS_PER_TOKEN) <= target:
                return None

            def fits(j: int) -> bool:
                return approx_tokens(state, View(start=base + j - offset, edits=edits), CHARS_PER_TOKEN) <= target

            k = offset + bisect.bisect_left(range(offset, total), True, key=fits)
            if k >= total:
                k = total - 1
            k = k if k > 0 else None
        if k is None:
            return None
        cut = safe_cutoff_point(state, base + k - offset, base)
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        if cut <= base:
            return None
        lu = state.last_user_index
        pinned = (lu,) if cfg.keep_last_user and 0 <= lu < cut and state.view.shows(lu) else ()
        return Plan(start=cut, pinned=pinned, summary_slot=0, summarize=True)

    @staticmethod
    def session(state: RunState) -> str:
        """The history file's session id: ``session_`` and 32 hex digits, from the system prompt here."""
        seed = state.messages[0].text if len(state) else ""
        return "session_" + hashlib.sha256(seed.encode()).hexdigest()[:32]
