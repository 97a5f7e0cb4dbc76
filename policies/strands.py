"""Strands Agents (AWS, ``strands-agents`` on PyPI): ``SlidingWindowConversationManager`` and
``SummarizingConversationManager``.

Read: the ``strands-agents`` package 1.62.0, files ``strands/agent/conversation_manager/
sliding_window_conversation_manager.py`` (``window_size=40``, ``should_truncate_results``, ``per_turn``,
``apply_management``, ``reduce_context``, ``_find_tool_pair_trim_point``, ``_truncate_tool_results`` with
``_PRESERVE_CHARS = 200``), ``summarizing_conversation_manager.py`` (``summary_ratio=0.3`` clamped to [0.1, 0.8],
``preserve_recent_messages=10``, ``_summarize_oldest``), ``conversation_manager.py`` (``proactive_compression``,
``DEFAULT_COMPRESSION_THRESHOLD = 0.7``), ``compression/context_compression.py`` (``find_valid_trim_point``,
``adjust_split_point_for_tool_pairs``, ``DEFAULT_SUMMARIZATION_PROMPT``, ``as_user_summary``), ``agent/agent.py``
(``apply_management`` in the ``finally`` of every invocation; ``reduce_context(e=...)`` on
``ContextWindowOverflowException``, then the event loop cycle again) and ``event_loop/event_loop.py``
(``_estimate_input_tokens``: the last assistant's usage plus the new messages counted); ``reference/field-2026.md``
§3. ``conformance/strands-agents/`` runs the package's own managers on scripted histories and
``tests/conformance/test_conformance_strands_agents.py`` compares these policies with what they left.

Strands keeps Bedrock-style messages: a batch's tool results are one user message of ``toolResult`` blocks, so a run
of tool messages in the log counts as one Strands message (:func:`policies.autogen.unit_bounds`).
"""

from __future__ import annotations

from dataclasses import dataclass

from policies._tail import client_estimate
from policies.autogen import unit_bounds
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, plan_shrinks, safe_cut
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule

WINDOW_SIZE = 40  # SlidingWindowConversationManager(window_size=40)
PRESERVE_CHARS = 200  # _PRESERVE_CHARS: a truncated result keeps its first and last 200 characters
COMPRESSION_THRESHOLD = 0.7  # DEFAULT_COMPRESSION_THRESHOLD of proactive_compression=True
SUMMARY_RATIO, PRESERVE_RECENT = 0.3, 10  # SummarizingConversationManager defaults
#: How many times a run compacts and retries on one overflow: Strands reduces and re-enters the event loop until the
#: call fits or nothing can be reduced (it raises); the engine needs a bound.
OVERFLOW_RETRIES = 8
#: ``_truncate_tool_results`` keeps 200 characters at each end; the engine truncates in tokens: 50 tokens each end at
#: four characters a token, with our marker.
TRUNCATE = Rule(
    kinds=frozenset({"tool_result"}),
    action="truncate",
    max_tokens=2 * PRESERVE_CHARS // 4,
    head_share=0.5,
    text="...\n\n... [truncated: {n} tokens removed] ...\n\n...",
)
#: Our wording of ``DEFAULT_SUMMARIZATION_PROMPT``: bullet points, third person, topics, tools run and their results,
#: code and technical details, key insights; no conversational reply.
SUMMARY_PROMPT = (
    "Summarise the conversation as a structured document in bullet points, in the third person, without addressing "
    "anyone: the topics and questions covered, every significant tool run and its result, code and technical "
    "details shared, and the key insights."
)


def strands_units(state: RunState) -> list[int]:
    """Where each Strands message the view's tail holds starts (a run of tool messages one message), then ``n``."""
    return unit_bounds(state, floor_index(state), len(state))


def is_user_text(state: RunState, i: int) -> bool:
    m = state.messages[i]
    return m.role == "user" and m.command is None


def trim_index(state: RunState, bounds: list[int], count: int, window: int) -> int | None:
    """``reduce_context``'s trim over the first ``count`` Strands messages: from ``len - window_size`` (2 when not
    over), the first plain user message (``find_valid_trim_point``), else the first call answered by the next message
    (``_find_tool_pair_trim_point``); the log index to keep from, or None when there is none."""
    start = 2 if count <= window else count - window
    for k in range(start, count):
        if is_user_text(state, bounds[k]):
            return bounds[k]
    for k in range(start, count - 1):
        m = state.messages[bounds[k]]
        if m.calls and state.messages[bounds[k + 1]].role == "tool":
            return bounds[k]
    return None


@dataclass(frozen=True)
class StrandsSlidingWindowConfig:
    """``SlidingWindowConversationManager``'s parameters, Strands' names.

    Attributes:
        window_size: the most messages kept (40; a batch's results one message).
        should_truncate_results: on an overflow, first truncate the oldest message's tool results (True).
        per_turn: also apply the window before every model call (False: only after each invocation). Strands also
            takes an integer N (every N calls): not modelled.
        proactive_compression: trim before a model call once the estimate reaches this share of the window (unset:
            off; ``True`` in Strands is 0.7).
    """

    window_size: int = WINDOW_SIZE
    should_truncate_results: bool = True
    per_turn: bool = False
    proactive_compression: float | None = None

    def __post_init__(self) -> None:
        if self.window_size < 1:
            raise InvalidConfig(
                f"window_size={self.window_size!r} must be >= 1 (Strands' 0, drop everything, is not modelled)"
            )
        if self.proactive_compression is not None and not 0 < self.proactive_compression <= 1:
            raise InvalidConfig(f"proactive_compression={self.proactive_compression!r} must be in (0, 1], or unset")


@register("strands-sliding-window")
class StrandsSlidingWindow(Policy[StrandsSlidingWindowConfig]):
    """Strands SlidingWindowConversationManager: after each invocation, keep the newest 40 messages from a user message.

    * **When**: ``apply_management`` after every invocation (here at the next invocation's first request, its new
      user message not counted), with ``per_turn`` before every model call too, with ``proactive_compression``
      before a call whose estimate (last usage plus the new messages) reaches that share of the window; and on an
      overflow (``reduce_context(e=...)``), up to 8 times for one request.
    * **Trim** (more than ``window_size`` messages, or on overflow/proactive): from ``len - window_size`` (2 when not
      over), the first plain user message, else the first tool call whose results follow; everything before it
      leaves. Nothing is summarised and nothing marks the gap.
    * **Overflow**: first, while ``should_truncate_results``, the oldest message with tool results has each result
      over 400 characters cut to its first and last 200 (once; a second overflow then trims).

    Differences: the truncation keeps 50 tokens at each end (four characters a token) with our marker; neither the
    truncation nor the trim touches an unresolved pending turn, and the trim is made safe
    (:func:`policies.helpers.safe_cut`): a trim past the last user message (the tool-pair fallback inside
    a long live turn) is held at it, one inside a thinking tool loop moves to its start; ``pin_first`` and
    ``per_turn=N`` are not modelled.

    Known deviation: ``revert-resolution`` (Strands knows nothing of reverts): a change compacted away is
    not brought back for a revert that comes later.
    """

    TUNABLE = {
        "window_size": "10:100:10",
    }
    TUNABLE_NATIVE = {
        "window_size": "SlidingWindowConversationManager(window_size={value})",
    }

    Config = StrandsSlidingWindowConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "Strands knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    @property
    def retry_on_overflow(self) -> int:
        return OVERFLOW_RETRIES

    def over_trigger(self, state: RunState) -> bool | None:
        p = self.config.proactive_compression
        return None if p is None else client_estimate(state) >= p * state.model.context_window

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "manual" or len(state) == 0:
            return None
        cfg = self.config
        bounds = strands_units(state)
        count = len(bounds) - 1
        if trigger == "overflow":
            plan = self._truncate(state) if cfg.should_truncate_results else None
            return plan if plan is not None else self._trim(state, bounds, count)
        post = is_user_text(state, len(state) - 1) and count > 0
        if post and count - 1 > cfg.window_size:  # apply_management before the new user message was appended
            return self._trim(state, bounds[:-1] + [len(state) - 1], count - 1)
        if cfg.per_turn and count > cfg.window_size:
            return self._trim(state, bounds, count)
        if self.over_trigger(state):
            return self._trim(state, bounds, count)
        return None

    def _trim(self, state: RunState, bounds: list[int], count: int) -> Plan | None:
        cut = trim_index(state, bounds, count, self.config.window_size)
        if cut is None:
            return None
        safe = safe_cut(state, cut)
        return None if safe is None else Plan(start=safe, mode="trim")

    def _truncate(self, state: RunState) -> Plan | None:
        """``_truncate_tool_results`` on the oldest message with tool results in the view: None when it changes
        nothing (already truncated, or no result over 400 characters)."""
        current = next((e.before for e in state.view.edits if e.rule == TRUNCATE), 0)
        n = len(state)
        i = next((k for k in range(floor_index(state), n) if state.messages[k].role == "tool"), None)
        if i is None or i < current:
            return None
        end = i
        while end < n and state.messages[end].role == "tool":
            end += 1
        if not any(len(p.text) > 2 * PRESERVE_CHARS for k in range(i, end) for p in state.messages[k].results):
            return None
        pf = state.protected_from
        if pf is not None and end > pf:
            return None  # nothing of an unresolved pending turn is edited (the harness's contract): trim instead
        edits = tuple(e for e in state.view.edits if e.rule != TRUNCATE) + (Edit(TRUNCATE, end),)
        plan = Plan(start=state.view.start, edits=edits, mode="truncate")
        return plan if plan_shrinks(state, plan) else None


@dataclass(frozen=True)
class StrandsSummarizingConfig:
    """``SummarizingConversationManager``'s parameters, Strands' names.

    Attributes:
        summary_ratio: the share of messages summarised, oldest first (0.3, clamped to [0.1, 0.8] as Strands does).
        preserve_recent_messages: messages always kept (10).
        proactive_compression: summarise before a model call once the estimate reaches this share of the window
            (unset: only on overflow).
    """

    summary_ratio: float = SUMMARY_RATIO
    preserve_recent_messages: int = PRESERVE_RECENT
    proactive_compression: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary_ratio", max(0.1, min(0.8, self.summary_ratio)))
        if self.preserve_recent_messages < 0:
            raise InvalidConfig(f"preserve_recent_messages={self.preserve_recent_messages!r} must be >= 0")
        if self.proactive_compression is not None and not 0 < self.proactive_compression <= 1:
            raise InvalidConfig(f"proactive_compression={self.proactive_compression!r} must be in (0, 1], or unset")


@register("strands-summarizing")
class StrandsSummarizing(Policy[StrandsSummarizingConfig]):
    """Strands SummarizingConversationManager: on overflow, summarise the oldest 30% of messages, keeping the newest 10.

    * **When**: only on an overflow (``apply_management`` does nothing), or before a model call with
      ``proactive_compression``; up to 8 times for one request.
    * **What** (``_summarize_oldest``): ``max(1, int(len * summary_ratio))`` messages from the oldest, at most
      ``len - preserve_recent_messages`` (none: nothing happens), the split moved forward past tool results and past
      a call whose results do not follow; the previous summary is the first message and is summarised again.
    * **Summary**: the model's reply re-roled as a user message (``as_user_summary``), first in the history.

    Differences: the split is made safe (:func:`policies.helpers.safe_cut`: held at the last user message, at a
    thinking tool loop's start); ``pin_first`` and the
    separate summarisation agent are not modelled.

    Known deviation: ``revert-resolution`` (Strands knows nothing of reverts): a change compacted away is
    not brought back for a revert that comes later.
    """

    TUNABLE = {
        "summary_ratio": "0.1:0.8:0.1",
        "preserve_recent_messages": "2:20:2",
    }
    TUNABLE_NATIVE = {
        "summary_ratio": "SummarizingConversationManager(summary_ratio={value})",
        "preserve_recent_messages": "SummarizingConversationManager(preserve_recent_messages={value})",
    }

    Config = StrandsSummarizingConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "Strands knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    @property
    def retry_on_overflow(self) -> int:
        return OVERFLOW_RETRIES

    def over_trigger(self, state: RunState) -> bool | None:
        p = self.config.proactive_compression
        return None if p is None else client_estimate(state) >= p * state.model.context_window

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "manual" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        cfg = self.config
        bounds = strands_units(state)
        offset = 1 if state.view.summary is not None else 0  # the summary is message 0 of Strands' list
        total = len(bounds) - 1 + offset
        count = min(max(1, int(total * cfg.summary_ratio)), total - cfg.preserve_recent_messages)
        if count <= offset:
            return None
        k = count - offset  # the first kept unit

        def bad(k: int) -> bool:
            m = state.messages[bounds[k]]
            nxt = k + 1 < len(bounds) - 1 and state.messages[bounds[k + 1]].role == "tool"
            return m.role == "tool" or (bool(m.calls) and not nxt)

        while k < len(bounds) - 1 and bad(k):
            k += 1
        if k >= len(bounds) - 1:
            return None
        cut = safe_cut(state, bounds[k])
        if cut is None:
            return None
        plan = Plan(
            start=cut,
            summarize=True,
            summary_request=SummaryRequest(prompt=SUMMARY_PROMPT, role="user"),
            mode="summarize",
        )
        return plan if plan_shrinks(state, plan) else None
