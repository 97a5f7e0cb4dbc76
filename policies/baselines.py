"""Baselines: never compact, and drop the oldest whole units."""

from __future__ import annotations

from dataclasses import dataclass

from policies.base import NoConfig, Plan, Policy, Trigger, register
from policies.helpers import floor_index, rollback_target
from sim.core.errors import InvalidConfig
from sim.core.state import RunState


@register("none")
class NoCompaction(Policy[NoConfig]):
    """Never compacts; the prompt grows until the provider rejects it, as an agent without compaction would.

    The reference point every other policy is compared against: its cumulative input is the cost of
    doing nothing, and its overflow is where the real agent would stop.
    """


@dataclass(frozen=True)
class SlidingWindowConfig:
    """Parameters of :class:`SlidingWindow`.

    Defaults: ``trigger_ratio`` 0.85 (the same trigger as the cloudflare-os seed, so the two differ
    only in what they do when triggered) and ``target_ratio`` 0.5 of the input budget (a project
    choice: half the budget leaves room for many turns before the next drop).
    """

    trigger_ratio: float = 0.85
    target_ratio: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.target_ratio < self.trigger_ratio <= 1:
            raise InvalidConfig(
                f"need 0 < target_ratio ({self.target_ratio!r}) < trigger_ratio ({self.trigger_ratio!r}) <= 1"
            )


@register("sliding-window")
class SlidingWindow(Policy[SlidingWindowConfig]):
    """Drops the oldest whole units to fit a target; keeps the system prompt and the first user message.

    Models the truncation baselines of LangChain ``trim_messages`` (strategy "last", include_system)
    and AutoGen ``TokenLimitedChatCompletionContext``: no summary, whole units only (a call never
    loses its result), the first user message pinned because it states the task (the fix in
    langchain-ai/langmem #111 anchors the user message for the same reason). It also never drops
    the live turn, a pending turn, or the change a kept revert needs: it keeps that change's unit as a
    pinned span and cuts past it; and when a revert arrives after its change was dropped, it rolls the
    view back to the newest checkpoint where every kept revert resolves (as cloudflare-os's
    ``rollbackChatCompaction`` does; the truncation baselines it models have no notion of reverts, so
    this is the harness's contract, not theirs).

    Pinning the change rather than holding the cut back before it (as cloudflare-os's
    ``protectRetainedReverts`` does) is what keeps the drop from looping: a revert in the live turn of a
    change made early on would otherwise keep everything between them, and every turn would drop a
    little and stay over the trigger (``csim check --examples 2000`` found it: issue 12, defect 5).
    """

    TUNABLE = {
        "trigger_ratio": "0.6:0.95:0.05",
        "target_ratio": "0.2:0.5:0.1",
    }

    Config = SlidingWindowConfig

    def over_trigger(self, state: RunState) -> bool:
        cfg = self.config
        return state.estimated_context_tokens() >= cfg.trigger_ratio * state.model.input_budget

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        if trigger != "overflow":
            target = rollback_target(state)
            if target is not None:
                return Plan(start=target.start, cleared_through=target.cleared_through, mode="rollback", restore=target)
        budget = state.model.input_budget
        estimate = state.estimated_context_tokens()
        if trigger == "auto" and estimate < cfg.trigger_ratio * budget:
            return None
        view = state.view
        first_user = next((i for i, m in enumerate(state.messages) if m.role == "user" and m.command is None), None)
        # The task stays pinned while the view shows it (a message already dropped is never pinned again).
        pinned = tuple(p for p in (first_user,) if p is not None and view.shows(p))
        n = len(state)
        lu = state.last_user_index
        # Keep the last user message; when it is pinned anyway, only the newest unit must stay.
        ceiling = lu if lu >= 0 and lu not in pinned else state.unit_start(n - 1)
        if state.protected_from is not None:
            ceiling = min(ceiling, state.protected_from)
        need = (estimate - cfg.target_ratio * budget) * 4  # characters to drop
        if need <= 0:
            return None
        lo = max(floor_index(state), (pinned[-1] + 1) if pinned else 0)
        dropped = 0
        i = lo
        spans: tuple[tuple[int, int], ...] = ()
        while i < ceiling:
            j = i + 1
            while j < n and not state.can_cut(j):
                j += 1
            if j > ceiling:
                break
            dropped += state.view_chars(i, j, view.cleared_through)
            i = j
            if dropped >= need:  # enough, unless changes a kept revert needs must stay: count them back
                spans = change_spans(state, i, pinned)
                kept = sum(state.view_chars(a, b, view.cleared_through) for a, b in spans if a >= lo)
                if dropped - kept >= need:
                    break
        spans = change_spans(state, i, pinned)
        # Compare with the floor, not the view's start: a cut that only moves past the system prompt
        # (always shown) or the pinned task drops nothing; nor does one whose every unit stays pinned.
        if i <= lo or sum(b - a for a, b in spans if a >= lo) >= i - lo:
            return None
        return Plan(
            start=i,
            cleared_through=view.cleared_through,
            summarize=False,
            pinned=pinned,
            spans=spans,
            mode="drop",
        )


def change_spans(state: RunState, cut: int, pinned: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The units before ``cut`` holding a change that a kept revert (at or after ``cut``, or in a kept unit)
    reverts, as spans to pin. Newest revert first, one pass: a unit kept for a revert can only hold older
    reverts, which the walk reaches later. A change the view no longer shows is not pinned again (outside an
    overflow, ``decide`` rolled such a view back first)."""
    kept: set[int] = set(pinned)
    spans: list[tuple[int, int]] = []
    for r, c in reversed(state.reverts):
        if c >= cut or not (r >= cut or r in kept) or c in kept:
            continue
        a = state.unit_start(c)
        b = c + 1
        while b < cut and not state.can_cut(b):
            b += 1
        if not all(state.view.shows(k) for k in range(a, b)):
            continue  # on an overflow, before any rollback: not shown now, so not pinned again either
        spans.append((a, b))
        kept.update(range(a, b))
    return tuple(sorted(spans))
