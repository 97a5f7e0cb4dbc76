"""Semantic Kernel's chat history reducers: ``ChatHistoryTruncationReducer`` (and the safe reduction index they
share).

Read: the ``semantic-kernel`` package 1.45.0 on PyPI (Python), files ``semantic_kernel/contents/history_reducer/
chat_history_reducer.py`` (``target_count``, ``threshold_count`` and ``auto_reduce``, with their defaults),
``chat_history_truncation_reducer.py`` and ``chat_history_reducer_utils.py`` (``locate_safe_reduction_index``,
``contains_function_call_or_result``); the catalogue ``reference/policy-catalogue.md`` §B20 and §F.
``conformance/semantic-kernel/`` runs the package's own ``reduce()`` on scripted histories and
``tests/conformance/test_conformance_semantic_kernel.py`` compares this policy with what it kept.

A reducer is a ``ChatHistory`` that rewrites its own messages: what it drops is gone for every later call. Unlike
an agent's model context, the history holds the system message, so counts here include it. ``reduce()`` runs
when the application calls it, or, with ``auto_reduce``, after every message added; here, before every model
call (the history a call sees is the one the last addition reduced).
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

# ChatHistoryReducer.target_count is required (``gt=0``), with no default: 10 is ours.
TARGET_COUNT = 10
THRESHOLD_COUNT = 0  # ChatHistoryReducer.threshold_count's default


def function_content(m: Message) -> bool:
    """``contains_function_call_or_result``: a tool message, or a message holding a call or a result."""
    return m.role == "tool" or any(p.kind in ("tool_call", "tool_result") for p in m.parts)


Entry = tuple[str, bool]  # a history message as the safe index sees it: its role, whether it holds function content


def entries(state: RunState, start: int, summary: bool) -> list[Entry]:
    """The reducer's history: the system message, the summary (an assistant message) if any, the view's tail."""
    msgs = state.messages
    head: list[Entry] = [("system", False)] if state.has_system else []
    if summary:
        head.append(("assistant", False))
    return head + [(m.role, function_content(m)) for m in msgs[start:]]


def safe_reduction_index(
    history: list[Entry], target_count: int, threshold_count: int, offset: int = 0, has_system: bool = False
) -> int | None:
    """``locate_safe_reduction_index`` over ``history`` (each message as (role, holds function content)): the first
    message of the kept tail, None when no reduction is needed.

    The naive cut leaves ``target_count`` messages (one fewer when the system message is re-added); it moves back
    while it and the message before it both hold function content, so a chain of calls and results stays whole
    (back to the chain's first message); then, within the threshold window, the newest user message at or before
    it is preferred."""
    if has_system:
        target_count -= 1
        if target_count <= 0:
            return len(history)
    total = len(history)
    threshold_index = total - threshold_count - target_count
    if threshold_index <= offset:
        return None
    i = total - target_count
    while i >= offset:
        role, fc = history[i]
        if role == "system" or not fc:
            break
        if i - 1 < offset or not history[i - 1][1]:
            break
        i -= 1
    target_index = i
    while i >= threshold_index:
        if history[i][0] == "user":
            return i
        i -= 1
    return target_index


@dataclass(frozen=True)
class SemanticKernelTruncationConfig:
    """Parameters, Semantic Kernel's names.

    Attributes:
        target_count: messages left after a reduction, the system message included (required by SK, ``gt=0``;
            10 is ours).
        threshold_count: how many messages beyond ``target_count`` the history may hold before it is reduced,
            and the window in which the cut prefers a user message (SK's default 0).
    """

    target_count: int = TARGET_COUNT
    threshold_count: int = THRESHOLD_COUNT

    def __post_init__(self) -> None:
        if self.target_count <= 0:
            raise InvalidConfig(f"target_count={self.target_count!r} must be greater than 0 (SK's Field(gt=0))")
        if self.threshold_count < 0:
            raise InvalidConfig(f"threshold_count={self.threshold_count!r} must be >= 0 (SK's Field(ge=0))")


@register("semantic-kernel-truncation")
class SemanticKernelTruncation(Policy[SemanticKernelTruncationConfig]):
    """Semantic Kernel ChatHistoryTruncationReducer: past target + threshold messages, keep about the newest 10.

    * ``reduce()``: nothing while the history holds at most ``target_count + threshold_count`` messages. Else the
      safe reduction index (:func:`safe_reduction_index`): the newest ``target_count`` messages, the system message
      counting as one of them, the cut moved back to the start of a chain of calls and results, and to a user
      message within ``threshold_count`` before it. Everything before the cut is dropped for good (a rewrite) and
      the first system message put back in front. No summary, no notice.
    * A cut moved back to the first call of a tool loop keeps the whole loop: in a long one, a reduction drops
      the user message that started it and then nothing more until the loop ends.

    Known deviations: the cut passes the user message of a tool loop longer than the target (``live-turn``);
    SK has no reverts (``revert-resolution``). (The cut may fall on the reply that closes a thinking tool loop,
    which Anthropic accepts: the loop is over; a live loop is kept from its first call.)

    Differences: a cut never passes the start of an unresolved pending turn (the harness's contract); reductions
    happen before model calls, where ``auto_reduce`` reduces after every message added (a call's results and the
    reply before them are added one by one, so SK may cut at an index we skip).
    """

    TUNABLE = {
        "target_count": "4:40:4",
        "threshold_count": "0:20:5",
    }
    TUNABLE_NATIVE = {
        "target_count": "ChatHistoryTruncationReducer(target_count={value})",
        "threshold_count": "ChatHistoryTruncationReducer(threshold_count={value})",
    }

    Config = SemanticKernelTruncationConfig
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "SK's cut passes the user message of a tool loop longer than the target",
        "revert-resolution": "SK has no reverts",
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        if trigger != "auto":
            return None
        n, start = len(state), state.view.start
        base = 1 if state.has_system else 0
        start = max(start, base)
        history = entries(state, start, summary=False)
        if len(history) <= cfg.target_count + cfg.threshold_count:
            return None
        index = safe_reduction_index(
            history, cfg.target_count, cfg.threshold_count, has_system=base == 1 and len(history) > cfg.target_count
        )
        if index is None:
            return None
        cut = n if index >= len(history) else start + index - base
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        if cut <= start:
            return None
        return Plan(start=cut, mode="truncate")


# -- ChatHistorySummarizationReducer ------------------------------------------------------------------------------
# Our wording of DEFAULT_SUMMARIZATION_PROMPT: at most five sentences, both sides of the dialog, earlier summaries
# kept, nothing judged or assumed.
SUMMARY_PROMPT = (
    "Summarise the whole dialog below, an earlier summary included, in at most five sentences. Cover what both the "
    "user and the assistant said, keep every detail of the earlier summary, and keep what the conversation needs "
    "to go on. Do not judge, correct, interpret or guess, and say nothing of what has not happened."
)


@dataclass(frozen=True)
class SemanticKernelSummarizationConfig:
    """Parameters, Semantic Kernel's names.

    Attributes:
        target_count: messages left after a reduction, the system message and the summary included (required by
            SK, ``gt=0``; 10 is ours).
        threshold_count: messages beyond ``target_count`` before a reduction, and the window in which the cut
            prefers a user message (SK's default 0).
        include_function_content_in_summary: show calls and results to the summariser (SK's default False: they
            are left out of its input).
    """

    target_count: int = TARGET_COUNT
    threshold_count: int = THRESHOLD_COUNT
    include_function_content_in_summary: bool = False

    def __post_init__(self) -> None:
        SemanticKernelTruncationConfig(self.target_count, self.threshold_count)  # the same checks


@register("semantic-kernel-summarization")
class SemanticKernelSummarization(Policy[SemanticKernelSummarizationConfig]):
    """Semantic Kernel ChatHistorySummarizationReducer: past target + threshold messages, summarise all but ~10.

    * ``reduce()``: nothing while the history (system message and summary included) holds at most
      ``target_count + threshold_count`` messages. Else the safe reduction index, as the truncation reducer finds
      it; the messages before it (the previous summary among them) are summarised, calls and results left out of
      the summariser's input unless ``include_function_content_in_summary``, and the history becomes the system
      message, the summary (the service's reply: an assistant message marked ``__summary__``), and the messages
      from the index on. A span with nothing to summarise (only calls and results) is no reduction.
    * ``use_single_summary`` (SK's default True) makes no difference here: SK finds earlier summaries only at the
      very front of the history, and the system message is in front of them, so the previous summary is always
      summarised again with the new span (one summary, regenerated).

    Known deviations: as the truncation reducer's (``live-turn``, ``revert-resolution``), and ``atomic-units``: the
    safe reduction index starts a chain of calls and results, and a text reply inside a tool loop ends a chain, so
    in a live loop whose first step alone thinks the cut may fall after a reply and drop that step; the later
    steps then open the request's final assistant turn without thinking, which Anthropic rejects
    (``locate_safe_reduction_index`` knows no thinking blocks).

    Differences: the summariser is shown the calls (not the results) when function content is left out (SK shows
    it neither); with no system prompt, SK's ``use_single_summary=False`` keeps every summary side by side, which
    is not modelled; a cut never passes the start of an unresolved pending turn; reductions happen before model
    calls, not after every message added; a summary that would not shrink the view is skipped. When the safe index
    is the history's first message after the summary (a tool loop longer than the target, walked back to its first
    call), SK summarises the previous summary alone again, before every call until the loop ends; here there is
    nothing new to summarise, so no plan (``test_conformance_semantic_kernel``: ``summary-only``).
    """

    TUNABLE = {
        "target_count": "4:40:4",
        "threshold_count": "0:20:5",
    }
    TUNABLE_NATIVE = {
        "target_count": "ChatHistorySummarizationReducer(target_count={value})",
        "threshold_count": "ChatHistorySummarizationReducer(threshold_count={value})",
    }

    Config = SemanticKernelSummarizationConfig
    known_deviations = frozenset({"live-turn", "revert-resolution", "atomic-units"})
    deviation_reasons = {
        "live-turn": "SK's cut passes the user message of a tool loop longer than the target",
        "revert-resolution": "SK has no reverts",
        "atomic-units": "SK's cut may drop a live tool loop's first step, whose thinking opened the turn",
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        plan = self.reduction(state) if trigger == "auto" else None
        return plan if plan is not None and plan_shrinks(state, plan) else None

    def reduction(self, state: RunState) -> Plan | None:
        """What ``reduce()`` would do, before our check that the summary shrinks the view."""
        cfg = self.config
        n = len(state)
        base = 1 if state.has_system else 0
        start = max(state.view.start, base)
        summary = state.view.summary is not None
        history = entries(state, start, summary)
        if len(history) <= cfg.target_count + cfg.threshold_count:
            return None
        head = base + (1 if summary else 0)  # history index of the first log message
        index = safe_reduction_index(
            history, cfg.target_count, cfg.threshold_count, has_system=base == 1 and len(history) > cfg.target_count
        )
        if index is None:
            return None
        cut = n if index >= len(history) else start + max(index - head, 0)
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        if cut <= start:
            return None
        span = history[head : head + cut - start]
        if not summary and not any(
            role != "system" and (cfg.include_function_content_in_summary or not fc) for role, fc in span
        ):
            return None  # extract_range found nothing to summarise
        return Plan(
            start=cut,
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(
                role="assistant", prompt=SUMMARY_PROMPT, drop_tool_outputs=not cfg.include_function_content_in_summary
            ),
        )
