"""LlamaIndex ``ChatSummaryMemoryBuffer``: the newest messages within 0.75 of the window verbatim, the rest summarised.

Read: the ``llama-index-core`` package 0.14.25 on PyPI, files ``llama_index/core/memory/
chat_summary_memory_buffer.py`` (``DEFAULT_TOKEN_LIMIT_RATIO``, ``SUMMARIZE_PROMPT``, ``get``,
``_split_messages_summary_or_full_text``, ``_handle_assistant_and_tool_messages``, ``_summarize_oldest_chat_history``),
``llama_index/core/base/llms/types.py`` (``ChatMessage.content``: the text blocks joined, None without one) and
``llama_index/core/agent/workflow/base_agent.py`` and ``function_agent.py`` (when an agent calls ``memory.aget()``);
the catalogue ``reference/policy-catalogue.md`` §B24 and §F, which read ``run-llama/llama_index``'s
``core/memory/chat_summary_memory_buffer.py``. ``conformance/llama-index-core/`` runs the package's own ``get()``
with its ``MockLLM`` and an offline tokenizer on scripted histories and on one memory through each long conversation
of ``conformance/long/``, and ``tests/conformance/test_conformance_llama_index_core.py`` compares this policy with
what it kept and summarised.

The memory is a chat store holding the conversation without the system prompt (the agent puts its system prompt
in front of what ``get()`` returns). ``get()`` walks the stored messages from the newest back, adding each one's
tokens while the total stays within ``token_limit``; it stops at the first that does not fit, and every older
message (an earlier summary among them) is summarised. The verbatim part must not start with an assistant or tool
message, so those move to the summarised side until it starts with another (a user message). The summary is one
LLM call on a transcript of the summarised messages and becomes a system message in front; the store is rewritten
to hold the summary and the verbatim messages, so the next ``get()`` walks over the summary too (regenerated: the
old summary is summarised again with the new overflow). With nothing to summarise but an old summary that no longer
fits, the old summary stays as it is.

When ``get()`` runs: an agent workflow (``FunctionAgent``, ``ReActAgent``) calls it once at the start of a run,
after the user's message is put, and keeps the run's tool loop in a scratchpad outside the memory, sent in full with
every step; at the end of the run (a reply without tool calls) it puts the scratchpad into the memory and calls
``get()`` again. Chat engines call it once per user message. So this policy is asked before the first model call
after a user message, and right after a reply without tool calls (``when``: ``user_turn`` and ``response``).

Token counts: ``len(tokenizer_fn(str(message.content)))`` per message, the content being the text blocks only (no
role, no tool calls; a message without text, an assistant message holding only tool calls, counts as the string
``"None"``). LlamaIndex's default tokenizer is tiktoken's ``cl100k_base``; the policy counts a quarter of the
characters, rounded up (``chars_per_token``), as the engine's ``chars4`` tokenizer does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

DEFAULT_TOKEN_LIMIT_RATIO = 0.75  # chat_summary_memory_buffer.DEFAULT_TOKEN_LIMIT_RATIO: of llm.metadata.context_window
CHARS_PER_TOKEN = 4.0  # our estimate in place of tiktoken's cl100k_base (utils.get_tokenizer), the engine's chars4
# Our wording of SUMMARIZE_PROMPT (the summariser's system message): a short summary of a user-assistant conversation.
SUMMARY_PROMPT = (
    "Below is a transcript of a conversation between a user and an assistant. Summarise briefly what it is about "
    "and what it contains."
)
NO_CONTENT = "None"  # str(ChatMessage.content) of a message without a text block


def part_text(p: Part) -> str | None:
    """The text block a part becomes in a ``ChatMessage`` (None: no text block): text, and the markers the wire
    formats render change, revert and command parts as; tool calls and thinking are not text blocks."""
    if p.kind == "text":
        return p.text
    if p.kind == "change":
        return f"[change {p.ref}] {p.text}".rstrip()
    if p.kind == "revert":
        return f"[revert {p.ref}] {p.text}".rstrip()
    if p.kind == "command":
        return f"/{p.name} {p.text}".rstrip()
    return None


def contents(m: Message) -> list[str]:
    """``str(content)`` of each ``ChatMessage`` a log message stands for: one per tool result of a tool message (a
    ``FunctionAgent`` puts one tool message per result), else one, whose content joins its text blocks with
    newlines, or is ``"None"`` without any."""
    if m.role == "tool":
        return [p.text for p in m.parts if p.kind == "tool_result"]
    texts = [t for p in m.parts if (t := part_text(p)) is not None]
    return ["\n".join(texts) if texts else NO_CONTENT]


@dataclass(frozen=True)
class LlamaIndexSummaryBufferConfig:
    """Parameters, LlamaIndex's names where it has them.

    Attributes:
        token_limit: the tokens the verbatim messages may hold; None: ``from_defaults``'s
            ``int(context_window * token_limit_ratio)`` of the model's whole window.
        token_limit_ratio: ``DEFAULT_TOKEN_LIMIT_RATIO`` 0.75.
        count_initial_tokens: count the system prompt's tokens against the limit first (LlamaIndex's default
            False: the agent does not pass an initial count).
        summarize: with an LLM (the buffer's purpose). False: ``llm=None``, where what does not fit is dropped.
        chars_per_token: the tokenizer, as characters a token (4: the engine's chars4).
    """

    token_limit: int | None = None
    token_limit_ratio: float = DEFAULT_TOKEN_LIMIT_RATIO
    count_initial_tokens: bool = False
    summarize: bool = True
    chars_per_token: float = CHARS_PER_TOKEN

    def __post_init__(self) -> None:
        if self.token_limit is not None and self.token_limit < 1:
            # validate_memory: "Token limit for full-text messages must be set and greater than 0."
            raise InvalidConfig(f"token_limit={self.token_limit!r} must be greater than 0, or unset")
        if not 0 < self.token_limit_ratio <= 1:
            raise InvalidConfig(f"token_limit_ratio={self.token_limit_ratio!r} must be in (0, 1]")
        if self.chars_per_token <= 0:
            raise InvalidConfig(f"chars_per_token={self.chars_per_token!r} must be positive")


@register("llamaindex-summary-buffer")
class LlamaIndexSummaryBuffer(Policy[LlamaIndexSummaryBufferConfig]):
    """LlamaIndex ChatSummaryMemoryBuffer: the newest messages within 0.75 of the window kept, the rest summarised.

    * Asked at the start of each agent run (the user's message just put) and at its end (a reply without tool
      calls): ``get()``. The walk from the newest message back keeps messages while their tokens (the text content
      only, :func:`contents`) stay within ``token_limit``; at the first that does not fit it stops. Leading
      assistant and tool messages of the kept part go to the summarised side, so the kept part starts on a user
      message. Everything before, the previous summary included, is summarised into one message placed first;
      without an LLM (``summarize`` off) it is dropped.
    * Nothing to summarise but a previous summary that no longer fits: it stays unchanged (no call).

    Known deviation: LlamaIndex has no reverts (``revert-resolution``).

    Differences: the summary is a user message (LlamaIndex makes it a system message; the view's summary roles are
    user and assistant, and the mock OpenAI provider, like the harness, takes a system message only first); the
    engine's summariser is shown the calls and results of the span (LlamaIndex's transcript leaves out messages
    without text, so assistant messages holding only tool calls); the last user message always stays in view (the
    harness's contract; LlamaIndex summarises it too when it alone is over the limit, or at the end of a run
    whose turn is) and nothing of an unresolved pending turn is summarised; a summary that would not shrink the
    view is skipped.
    """

    TUNABLE = {
        "token_limit": "20000:200000:10000",
    }
    TUNABLE_NATIVE = {
        "token_limit": "ChatSummaryMemoryBuffer.from_defaults(token_limit={value})",
    }

    Config = LlamaIndexSummaryBufferConfig
    when = frozenset({"user_turn", "response"})
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "LlamaIndex has no reverts",
    }

    def limit(self, state: RunState) -> int:
        lim = self.config.token_limit
        return int(state.model.context_window * self.config.token_limit_ratio) if lim is None else lim

    def tokens(self, text: str) -> int:
        """``len(tokenizer_fn(text))`` at ``chars_per_token`` characters a token, rounded up."""
        return math.ceil(len(text) / self.config.chars_per_token)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or not len(state):
            return None
        last = state.messages[-1]
        if last.role not in ("user", "assistant") or last.calls:
            return None  # mid tool loop: the run's scratchpad is outside the memory, get() is not called
        cut = self.split(state)
        if cut is None:
            return None
        if not self.config.summarize:
            return Plan(start=cut, mode="drop")
        plan = Plan(
            start=cut,
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(role="user", prompt=SUMMARY_PROMPT),
        )
        return plan if plan_shrinks(state, plan) else None

    def split(self, state: RunState) -> int | None:
        """``_split_messages_summary_or_full_text``: the log index where the verbatim messages start, None when
        nothing new is summarised (all fit; or only the previous summary does not)."""
        msgs, n = state.messages, len(state)
        base = max(state.view.start, 1 if state.has_system else 0)
        limit = self.limit(state)
        running = self.tokens(msgs[0].text) if self.config.count_initial_tokens and state.has_system else 0
        i = n
        while i > base:
            size = sum(self.tokens(c) for c in contents(msgs[i - 1]))
            if running + size > limit:
                # The walk stops at this message, or inside it at one of its results; the results kept then start
                # the verbatim part and move to the summarised side: the same cut either way.
                break
            running += size
            i -= 1
        while i < n and msgs[i].role in ("assistant", "tool"):
            i += 1  # _handle_assistant_and_tool_messages
        cut = i
        lu = state.last_user_index
        if base <= lu < cut:
            cut = lu
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        return cut if cut > base else None
