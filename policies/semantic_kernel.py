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

from policies.base import Plan, Policy, Trigger, register
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

# ChatHistoryReducer.target_count is required (``gt=0``), with no default: 10 is ours.
TARGET_COUNT = 10
THRESHOLD_COUNT = 0  # ChatHistoryReducer.threshold_count's default


def function_content(m: Message) -> bool:
    """``contains_function_call_or_result``: a tool message, or a message holding a call or a result."""
    return m.role == "tool" or any(p.kind in ("tool_call", "tool_result") for p in m.parts)


def safe_reduction_index(
    history: list[Message], target_count: int, threshold_count: int, offset: int = 0, has_system: bool = False
) -> int | None:
    """``locate_safe_reduction_index`` over ``history`` (a list of messages as the reducer holds them): the first
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
        m = history[i]
        if m.role == "system" or not function_content(m):
            break
        if i - 1 < offset or not function_content(history[i - 1]):
            break
        i -= 1
    target_index = i
    while i >= threshold_index:
        if history[i].role == "user":
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
    it may fall on the reply that closes a thinking tool loop, which SK does not hold together with the loop
    (``atomic-units``); SK has no reverts (``revert-resolution``).

    Differences: a cut never passes the start of an unresolved pending turn (the harness's contract); reductions
    happen before model calls, where ``auto_reduce`` reduces after every message added (a call's results and the
    reply before them are added one by one, so SK may cut at an index we skip).
    """

    Config = SemanticKernelTruncationConfig
    known_deviations = frozenset({"live-turn", "atomic-units", "revert-resolution"})

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        if trigger != "auto":
            return None
        n, start = len(state), state.view.start
        base = 1 if state.has_system else 0
        start = max(start, base)
        history = [*state.messages[:base], *state.messages[start:n]]
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
