"""Shared by the 2026 catalogue's policies (private: registers nothing): the client's token estimate, a kept tail
measured in tokens or in messages, and a plan that summarises what lies before it.

Each function is a small pure reading of the run state, written once because half a dozen of the systems modelled
in issue 32 (Hermes Agent, docker-agent, coder, NexAU, Copilot, Mastra) compact the same way: past a trigger,
summarise everything before a kept tail; they differ in the trigger, the tail and the summary's wording, which each
module names with its source. The cut always goes through :func:`policies.helpers.safe_cut`: never inside the live
turn, an atomic unit or a pending turn, never between a kept revert and its change.
"""

from __future__ import annotations

from policies.base import Plan, SummaryRequest
from policies.helpers import plan_shrinks, safe_cut
from sim.core.state import RunState
from sim.core.view import View


def client_estimate(state: RunState) -> int:
    """The estimate clients that read the provider's usage make: the last request's reported prompt plus its output
    (the reply is in the history now), plus a quarter of the characters appended after the reply (the reply itself is
    counted by its output tokens, not again by its characters); the view's characters over 4 before the first request
    or right after a compaction."""
    if state.last_input_tokens is None or state.view_changed_since_request:
        return -(-state.chars_in_view() // 4)
    since = state.chars_since_last_request
    reply = state.messages_at_last_request  # the reply to that request, once it is in: counted by its output
    if state.last_output_tokens is not None and len(state) > reply:
        since -= state.chars(reply, reply + 1)
    return state.last_input_tokens + (state.last_output_tokens or 0) + -(-since // 4)


def message_tokens(state: RunState, a: int, b: int) -> int:
    """Exact tokens of log messages ``[a, b)`` as stored (O(1), the state's prefix sums)."""
    return state.view_size(View(start=a))[0] - state.view_size(View(start=b))[0]


def tail_by_tokens(state: RunState, keep_tokens: int, at_least: int = 0) -> int:
    """Where a tail of at least ``keep_tokens`` tokens (walking back from the newest message, whole messages) and at
    least ``at_least`` messages starts; the view's start when the whole tail is smaller. Walks back over the tail
    only."""
    n, lo = len(state), max(state.view.start, 1 if state.has_system else 0)
    i, total = n, 0
    while i > lo and (total < keep_tokens or n - i < at_least):
        i -= 1
        total += message_tokens(state, i, i + 1)
    return i


def summary_plan(
    state: RunState, start: int, request: SummaryRequest, mode: str = "summarize", pinned: tuple[int, ...] = ()
) -> Plan | None:
    """Summarise everything the view shows before ``start`` (made safe: :func:`policies.helpers.safe_cut`), the
    previous summary folded in; ``pinned`` earlier messages stay verbatim. None when nothing would leave the view or
    the summary would not shrink it."""
    cut = safe_cut(state, start)
    if cut is None:
        return None
    plan = Plan(
        start=cut, summarize=True, summary_request=request, mode=mode, pinned=tuple(p for p in pinned if p < cut)
    )
    return plan if plan_shrinks(state, plan) else None
