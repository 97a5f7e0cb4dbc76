"""LangMem ``summarize_messages`` / ``SummarizationNode``: summarise the oldest unsummarised messages once they pass a
threshold and the rest fits; a running summary, extended each time.

Read: ``langchain-ai/langmem`` at ``b5dbe4aa`` (2026-06-19), ``src/langmem/short_term/summarization.py``
(``_preprocess_messages``, ``_adjust_messages_before_summarization``, ``_prepare_summarization_result``,
``summarize_messages``, the default prompts, ``RunningSummary``), the same file as the ``langmem`` package on PyPI
ships it; the catalogue ``reference/policy-catalogue.md`` §B7d and §F. ``conformance/langmem/`` runs the package's
own ``summarize_messages`` with a fake chat model on scripted histories and before every model call of the long
conversations of ``conformance/long/``, and ``tests/conformance/test_conformance_langmem.py`` compares this policy with
what it summarised.

``summarize_messages`` is a pure function of the graph's messages and the running summary (``SummarizationNode``
calls it before every model call, keeping the full history in ``messages`` and the LLM's input in another key): so it
is a view. It skips a leading system message, starts after the last summarised message, and walks forward over the
unsummarised ones adding their tokens; the first time the tokens walked reach ``max_tokens_before_summary`` while
the rest still fits ``max_tokens - max_summary_tokens - system tokens``, everything walked is summarised (an AI
message with tool calls at the end takes its tool messages along). The summariser is asked to create a summary, or,
with a running summary, to extend it with the new messages; its input is cut to the newest ``max_tokens`` less the
running summary's tokens when longer. The LLM then sees the system message, a system message "Summary of the
conversation so far: ..." and the messages after the summarised ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

MAX_SUMMARY_TOKENS = 256  # summarize_messages' max_summary_tokens default
MAX_TOKENS_SHARE = 0.8  # ours: LangMem requires max_tokens; unset, 0.8 of the model's input budget
# count_tokens_approximately: a quarter of the characters, rounded up, and 3 tokens a message.
CHARS_PER_TOKEN = 4.0
EXTRA_TOKENS_PER_MESSAGE = 3
# DEFAULT_FINAL_SUMMARY_PROMPT: the system message that carries the running summary.
SUMMARY_WRAPPER = "Summary of the conversation so far: {summary}"
# Our wording of DEFAULT_INITIAL_SUMMARY_PROMPT and DEFAULT_EXISTING_SUMMARY_PROMPT (the instruction follows the
# messages): write a summary of them; or extend the given summary with them.
INITIAL_PROMPT = "Summarise the conversation above."
EXTEND_PROMPT = "Above are new messages of a conversation you summarised before: extend that summary with them."


def message_tokens(m: Message, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """The approximate count of the LangChain messages a log message stands for: per message, its characters over
    ``chars_per_token`` rounded up, plus 3. A tool message is one ToolMessage per result; an assistant message counts
    its text and each call's name and arguments; thinking is not counted."""
    if m.role == "tool":
        return sum(
            math.ceil(len(p.text) / chars_per_token) + EXTRA_TOKENS_PER_MESSAGE
            for p in m.parts
            if p.kind == "tool_result"
        )
    chars = sum(len(p.text) for p in m.parts if p.kind not in ("tool_call", "thinking"))
    chars += sum(len(p.name or "") + len(p.args or "") for p in m.calls)
    return math.ceil(chars / chars_per_token) + EXTRA_TOKENS_PER_MESSAGE


@dataclass(frozen=True)
class LangMemConfig:
    """Parameters, LangMem's names.

    Attributes:
        max_tokens: the most tokens the LLM's input may hold after summarising, and the summariser's input budget
            (required by LangMem); unset, 0.8 of the model's input budget (ours).
        max_tokens_before_summary: the unsummarised tokens that start a summary; unset, ``max_tokens`` (LangMem's
            default).
        max_summary_tokens: the tokens budgeted for the summary (256; not passed to the summariser).
        chars_per_token: the approximate counter's ratio (``count_tokens_approximately``: 4).
    """

    max_tokens: int | None = None
    max_tokens_before_summary: int | None = None
    max_summary_tokens: int = MAX_SUMMARY_TOKENS
    chars_per_token: float = CHARS_PER_TOKEN

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_summary_tokens >= self.max_tokens:
            raise InvalidConfig(
                f"max_summary_tokens ({self.max_summary_tokens!r}) must be less than max_tokens ({self.max_tokens!r}), "
                "as LangMem requires"
            )
        if self.max_summary_tokens < 0 or (self.max_tokens_before_summary or 1) < 1:
            raise InvalidConfig("max_summary_tokens must be >= 0 and max_tokens_before_summary >= 1 or unset")
        if self.chars_per_token <= 0:
            raise InvalidConfig(f"chars_per_token={self.chars_per_token!r} must be positive")


@register("langmem")
class LangMem(Policy[LangMemConfig]):
    """LangMem summarize_messages: once the unsummarised messages pass the threshold and the rest fits, summarise them.

    * Before every model call (``SummarizationNode`` as the agent's pre-model hook): over the messages after the last
      summarised one (the system prompt apart), walk forward adding each one's approximate tokens
      (:func:`message_tokens`); at the first message where the walked tokens reach ``max_tokens_before_summary`` and
      the rest is at most ``max_tokens - max_summary_tokens - tokens(system prompt)``, everything up to it is
      summarised (an assistant message with calls takes its tool messages along). Never reached: nothing happens.
    * The summary extends the running one (the summariser is given it with the new messages, the newest
      ``max_tokens`` less its tokens of them), and the LLM sees "Summary of the conversation so far: ..." after the
      system prompt, then the unsummarised messages.

    Known deviations: the cut may pass the last user message when the live turn alone is over the budget
    (``live-turn``); LangMem has no reverts (``revert-resolution``). The cut knows calls and results, not thinking
    tool loops, so a history that reached the threshold all at once could be cut inside the live loop, which Anthropic
    rejects without interleaved thinking; asked before every call, as in a replay, LangMem's cut reaches the newest
    message, and no replay has shown it (not declared).

    Differences: the summary is a user message (LangMem's is a system message; the view's summary roles are user and
    assistant); a cut among the results of a batch held in several tool messages moves past the rest of them
    (LangMem leaves them without their call, which a provider rejects); nothing of an unresolved pending turn is
    summarised; a summary that would not shrink the view is skipped (LangMem writes it); the count leaves out the
    role names and the calls' framing that ``count_tokens_approximately`` adds.
    """

    TUNABLE = {
        "max_tokens": "20000:160000:10000",
    }
    TUNABLE_NATIVE = {
        "max_tokens": "SummarizationNode(max_tokens={value})",
    }

    Config = LangMemConfig
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "LangMem can pass the last user message when the live turn alone is over the budget",
        "revert-resolution": "LangMem has no reverts",
    }

    def max_tokens(self, state: RunState) -> int:
        mt = self.config.max_tokens
        return int(state.model.input_budget * MAX_TOKENS_SHARE) if mt is None else mt

    def tokens(self, m: Message) -> int:
        return message_tokens(m, self.config.chars_per_token)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None
        cut = self.cutoff(state)
        if cut is None:
            return None
        max_tokens = self.max_tokens(state)
        previous = state.view.summary
        # _adjust_messages_before_summarization: the summariser sees at most max_tokens less the running summary.
        budget = max_tokens - (
            math.ceil(len(previous.text) / self.config.chars_per_token) + EXTRA_TOKENS_PER_MESSAGE if previous else 0
        )
        plan = Plan(
            start=cut,
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(
                role="user",
                wrapper=SUMMARY_WRAPPER,
                prompt=EXTEND_PROMPT if previous is not None else INITIAL_PROMPT,
                input_newest_tokens=max(1, budget),
            ),
        )
        return plan if plan_shrinks(state, plan) else None

    def cutoff(self, state: RunState) -> int | None:
        """``_preprocess_messages``: the log index after the last message summarised now, None when nothing is."""
        cfg = self.config
        msgs, n = state.messages, len(state)
        base = 1 if state.has_system else 0
        start = max(state.view.start, base)
        max_tokens = self.max_tokens(state)
        before = cfg.max_tokens_before_summary if cfg.max_tokens_before_summary is not None else max_tokens
        remaining = max_tokens - cfg.max_summary_tokens - (self.tokens(msgs[0]) if state.has_system else 0)
        sizes = [self.tokens(msgs[i]) for i in range(start, n)]
        total = sum(sizes)
        if total < before:
            return None
        walked, idx = 0, None
        for k, size in enumerate(sizes):
            walked += size
            if walked >= before and total - walked <= remaining:
                idx = start + k
                break
        if idx is None:
            return None
        cut = idx + 1
        if msgs[idx].role in ("assistant", "tool"):
            while cut < n and msgs[cut].role == "tool":
                cut += 1  # its calls' results (an AI message last), or the rest of a batch's results
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        return cut if cut > start else None
