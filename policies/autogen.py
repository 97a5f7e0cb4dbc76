"""AutoGen's model contexts: ``BufferedChatCompletionContext``, ``TokenLimitedChatCompletionContext`` and
``HeadAndTailChatCompletionContext``.

Read: the ``autogen-core`` package 0.7.5 on PyPI, files ``autogen_core/model_context/
_buffered_chat_completion_context.py``, ``_token_limited_chat_completion_context.py`` and
``_head_and_tail_chat_completion_context.py``; and the catalogue ``reference/policy-catalogue.md`` §B19 and §F,
which read ``microsoft/autogen``'s main branch. ``conformance/autogen-core/`` runs the package's own
``get_messages`` on scripted message lists and ``tests/conformance/test_conformance_autogen_core.py`` compares
these policies with what it returned.

A model context stores every message an agent adds and answers ``get_messages()`` with what the next model call
sees, recomputed from the whole list each time: a view over an append-only list, never a rewrite, and never a
summary. ``AssistantAgent`` keeps its system message apart and asks before every model call (each step of a tool
loop too), so every count and index below is over the messages after the system prompt, and these policies are
asked before every request.

AutoGen's messages map onto the log's (a user, an assistant or a function-result message each), except that an
agent stores every result of one batch of calls as one ``FunctionExecutionResultMessage`` (``AssistantAgent`` adds
the batch's results together), where the log may hold a tool message per result (a recording, the scenarios): so
a run of tool messages counts as one AutoGen message everywhere these policies count (:func:`unit_starts`), and
where AutoGen drops "a leading function result message" they drop the whole run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policies.base import Plan, Policy, Trigger, register
from policies.helpers import plan_shrinks
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.invariants import minus, ranges
from sim.core.state import RunState
from sim.core.view import Injected, View, spans_of

# The Core user guide's model-context example (``BufferedChatCompletionContext(buffer_size=5)``); the class has
# no default.
BUFFER_SIZE = 5
# HeadAndTailChatCompletionContext has no defaults either: the task (the first message) and the same five
# newest messages as the buffered example.
HEAD_SIZE = 1
TAIL_SIZE = 5
# The user message HeadAndTailChatCompletionContext puts between head and tail (source "System").
SKIPPED = "Skipped {n} messages."


def context_base(state: RunState) -> int:
    """The first message of AutoGen's context: past the system prompt, which the agent keeps apart."""
    return 1 if state.has_system else 0


#: ``unit_starts`` prefix sums, keyed by the log's list of messages (held, so its id is not reused while the entry
#: lives): extended as the log grows, O(new messages) per request. A cache: the sums are a function of the messages.
_UNITS: dict[int, tuple[Sequence[Message], list[int]]] = {}


def unit_starts(state: RunState) -> list[int]:
    """``x[i]``: how many AutoGen messages log messages ``[0, i)`` are, a run of tool messages (one batch's results)
    counting once."""
    msgs = state.messages
    hit = _UNITS.get(id(msgs))
    if hit is None or hit[0] is not msgs or len(hit[1]) > len(msgs) + 1:
        if len(_UNITS) >= 32:
            _UNITS.clear()
        hit = _UNITS[id(msgs)] = (msgs, [0])
    prefix = hit[1]
    for i in range(len(prefix) - 1, len(msgs)):
        joins = msgs[i].role == "tool" and i > 0 and msgs[i - 1].role == "tool"
        prefix.append(prefix[-1] + (0 if joins else 1))
    return prefix


def units(state: RunState, a: int, b: int) -> int:
    """AutoGen messages among log messages ``[a, b)`` (``a`` a unit's start)."""
    p = unit_starts(state)
    return p[b] - p[a]


def last_units(state: RunState, k: int, floor: int) -> int:
    """The log index where the newest ``k`` AutoGen messages start (``messages[-k:]``), not below ``floor``. Walks
    back over those ``k`` only."""
    i, seen = len(state), 0
    msgs = state.messages
    while i > floor and seen < k:
        i -= 1
        while i > floor and msgs[i].role == "tool" and msgs[i - 1].role == "tool":
            i -= 1
        seen += 1
    return i


def first_units(state: RunState, k: int, base: int) -> int:
    """The log index where the ``k``-th AutoGen message from ``base`` ends (``messages[:k]``)."""
    i, seen, n = base, 0, len(state)
    msgs = state.messages
    while i < n and seen < k:
        i += 1
        while i < n and msgs[i].role == "tool" and msgs[i - 1].role == "tool":
            i += 1
        seen += 1
    return i


def unit_bounds(state: RunState, base: int, n: int) -> list[int]:
    """Where each AutoGen message among log messages ``[base, n)`` starts, then ``n``."""
    msgs = state.messages
    starts = [i for i in range(base, n) if i == base or not (msgs[i].role == "tool" and msgs[i - 1].role == "tool")]
    return [*starts, n]


def past_results(state: RunState, i: int) -> int:
    """``i`` moved past a leading run of tool messages (AutoGen's one ``FunctionExecutionResultMessage``)."""
    msgs, n = state.messages, len(state)
    while i < n and msgs[i].role == "tool":
        i += 1
    return i


def head_end(state: RunState, end: int) -> int:
    """The end of a head ``[.., end)`` as AutoGen cuts it: without a last assistant message holding function calls
    (their results are not in the head); a head ending inside a batch's run of tool messages takes the rest of
    the run (AutoGen's one result message)."""
    msgs, n = state.messages, len(state)
    if not 0 < end < n:
        return end
    last = msgs[end - 1]
    if last.role == "tool":
        return past_results(state, end)
    if last.role == "assistant" and last.calls:
        return end - 1
    return end


def tokens(state: RunState, a: int, b: int) -> int:
    """Exact tokens of log messages ``[a, b)`` as stored (O(1), from the state's prefix sums)."""
    return state.view_size(View(start=a))[0] - state.view_size(View(start=b))[0]


def kept_plan(state: RunState, kept: list[tuple[int, int]], injected: tuple[Injected, ...] = ()) -> Plan | None:
    """The plan whose view shows exactly ``kept`` (sorted, disjoint ranges after the system prompt) and
    ``injected``, or None when that is the view already.

    A pending turn's messages (from :attr:`RunState.protected_from`) stay, as the harness requires. A kept range
    below the view's start becomes a span; the view's start never moves back, and what the view no longer shows
    stays out (:func:`still_shown`)."""
    n, view = len(state), state.view
    pf = state.protected_from
    kept = still_shown(state, kept)
    if pf is not None:  # what the view shows of a pending turn stays (nothing hidden is shown again for it)
        kept = [*kept, *((max(a, pf), b) for a, b in ranges(view, n) if b > pf)]
    shown = spans_of(i for a, b in kept for i in range(a, min(b, n)))
    tail_from = n
    if shown and shown[-1][1] == n:
        tail_from = shown[-1][0]
        shown = shown[:-1]
    start = max(tail_from, view.start)
    spans = [(a, min(b, start)) for a, b in shown if a < start]
    if tail_from < start:
        spans.append((tail_from, start))
    plan = Plan(start=start, spans=tuple(spans), injected=injected, mode="drop")
    base = context_base(state)
    if injected == view.injected and merged(ranges(plan.view_from(view), n), base) == merged(ranges(view, n), base):
        return None  # the view already shows exactly these messages
    return plan


def still_shown(state: RunState, kept: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The messages of ``kept`` the view still shows. AutoGen recomputes from the whole list, so a message one
    call left out may be sent again by a later one (the token-limited context's middle moves right as the list
    grows); a simulated view never brings back what a compaction dropped (only a rollback to a checkpoint does),
    so such a message stays out."""
    return minus(kept, minus(kept, ranges(state.view, len(state))))


def merged(rs: list[tuple[int, int]], base: int) -> list[tuple[int, int]]:
    """Ranges from ``base`` on, adjacent ones joined."""
    out: list[tuple[int, int]] = []
    for a, b in rs:
        a = max(a, base)
        if a >= b:
            continue
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


# -- BufferedChatCompletionContext -------------------------------------------------------------------------------
@dataclass(frozen=True)
class AutoGenBufferedConfig:
    """Parameters, AutoGen's names.

    Attributes:
        buffer_size: the newest messages sent (the class has no default; 5 is the Core user guide's example).
    """

    buffer_size: int = BUFFER_SIZE

    def __post_init__(self) -> None:
        if self.buffer_size <= 0:
            raise InvalidConfig(f"buffer_size={self.buffer_size!r} must be greater than 0 (AutoGen raises too)")


@register("autogen-buffered")
class AutoGenBuffered(Policy[AutoGenBufferedConfig]):
    """AutoGen BufferedChatCompletionContext: only the newest 5 messages, without a leading function result.

    * ``get_messages`` before every model call: the last ``buffer_size`` messages of the context (a batch's results
      one message, as the agent stores them); when the first of them is a function result message, it goes too (its
      call is not sent). Nothing else: no token count, no summary, no notice of what was left out.

    Known deviations: a tool loop longer than the buffer leaves out the user message that started it
    (``live-turn``); the cut counts messages, so it falls inside the live thinking tool loop (``atomic-units``); AutoGen
    has no reverts (``revert-resolution``).

    Differences: nothing of an unresolved pending turn leaves the view (the harness's contract; AutoGen has no
    such turns).
    """

    TUNABLE = {
        "buffer_size": "2:50:4",
    }
    TUNABLE_NATIVE = {
        "buffer_size": "BufferedChatCompletionContext(buffer_size={value})",
    }

    Config = AutoGenBufferedConfig
    known_deviations = frozenset({"live-turn", "atomic-units", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "a tool loop longer than the buffer leaves out the user message that started it",
        "atomic-units": (
            "the buffer counts messages, so it can start inside the live tool loop, after the reply whose"
            " thinking opened it"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "AutoGen has no reverts",
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None
        base, n = context_base(state), len(state)
        first = past_results(state, last_units(state, self.config.buffer_size, base))
        return kept_plan(state, [(first, n)])


# -- HeadAndTailChatCompletionContext ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AutoGenHeadAndTailConfig:
    """Parameters, AutoGen's names (the class has no defaults; both must be greater than 0).

    Attributes:
        head_size: the oldest messages kept (1: the task).
        tail_size: the newest messages kept (5, as the buffered context's example).
    """

    head_size: int = HEAD_SIZE
    tail_size: int = TAIL_SIZE

    def __post_init__(self) -> None:
        if self.head_size <= 0 or self.tail_size <= 0:
            raise InvalidConfig(
                f"head_size ({self.head_size!r}) and tail_size ({self.tail_size!r}) must be greater than 0 "
                "(AutoGen raises too)"
            )


@register("autogen-head-and-tail")
class AutoGenHeadAndTail(Policy[AutoGenHeadAndTailConfig]):
    """AutoGen HeadAndTailChatCompletionContext: the first message, "Skipped n messages.", the newest 5.

    * ``get_messages`` before every model call: with no more than ``head_size + tail_size`` messages, all of
      them. Else the first ``head_size`` (less the last one when it holds only function calls), a user message
      "Skipped {n} messages." with ``n = len - head_size - tail_size``, and the last ``tail_size`` (less the first
      one when it is a function result). ``n`` counts the configured sizes, so it leaves out the messages the two
      adjustments drop.

    Known deviations: a tool loop longer than the tail leaves out the user message that started it
    (``live-turn``); both cuts count messages, so they fall inside the live thinking tool loop (``atomic-units``);
    AutoGen has no reverts (``revert-resolution``).

    Differences: a placeholder that would make the view larger than the messages it stands for waits until it
    shrinks it (the first skipped message may be shorter than "Skipped 1 messages."); nothing of an unresolved
    pending turn leaves the view.
    """

    TUNABLE = {
        "tail_size": "2:50:4",
        "head_size": "1:5",
    }
    TUNABLE_NATIVE = {
        "tail_size": "HeadAndTailChatCompletionContext(tail_size={value})",
        "head_size": "HeadAndTailChatCompletionContext(head_size={value})",
    }

    Config = AutoGenHeadAndTailConfig
    known_deviations = frozenset({"live-turn", "atomic-units", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "a tool loop longer than the tail leaves out the user message that started it",
        "atomic-units": (
            "head and tail count messages, so the tail can start inside the live tool loop, after the reply"
            " whose thinking opened it"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "AutoGen has no reverts",
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        if trigger != "auto":
            return None
        base, n = context_base(state), len(state)
        skipped = units(state, base, n) - cfg.head_size - cfg.tail_size
        if skipped <= 0:
            return None
        end = head_end(state, first_units(state, cfg.head_size, base))
        tail = past_results(state, last_units(state, cfg.tail_size, base))
        note = Injected(SKIPPED.format(n=skipped), role="user", label="autogen-skipped")
        plan = kept_plan(state, [(base, end), (tail, n)], (note,))
        return plan if plan is not None and plan_shrinks(state, plan) else None


# -- TokenLimitedChatCompletionContext ---------------------------------------------------------------------------
@dataclass(frozen=True)
class AutoGenTokenLimitedConfig:
    """Parameters, AutoGen's names.

    Attributes:
        token_limit: the most tokens the context's messages may count; None (AutoGen's default) leaves it to the
            model client's ``remaining_tokens``: the model's whole window (the context window here; AutoGen's
            clients reserve nothing for the output).
    """

    token_limit: int | None = None

    def __post_init__(self) -> None:
        if self.token_limit is not None and self.token_limit <= 0:
            raise InvalidConfig(f"token_limit={self.token_limit!r} must be greater than 0, or unset (AutoGen raises)")


def middle_out(sizes: list[int], limit: int) -> tuple[int, int]:
    """AutoGen's loop: while the messages count more than ``limit``, pop the one at ``len // 2``. The messages
    popped are always one contiguous block; returns it as positions ``[lo, hi)`` of ``sizes`` (empty: lo == hi).
    O(popped)."""
    total, m = sum(sizes), len(sizes)
    lo = hi = m // 2
    while total > limit and hi - lo < m:
        k = (m - (hi - lo)) // 2  # the index popped, in the list as it stands
        i = k if k < lo else k + (hi - lo)
        total -= sizes[i]
        lo, hi = (i, hi) if i < lo else (lo, i + 1)
    return lo, hi


@register("autogen-token-limited")
class AutoGenTokenLimited(Policy[AutoGenTokenLimitedConfig]):
    """AutoGen TokenLimitedChatCompletionContext (experimental): over the limit, drop messages from the middle.

    * ``get_messages`` before every model call: count the context's messages with the model client
      (``count_tokens``; exact here); while they count more than ``token_limit`` (unset: while the client's
      ``remaining_tokens`` is negative, i.e. more than the model's window), pop the message at ``len // 2`` (a
      batch's results one message), one at a time: middle-out, not oldest first, so the oldest messages (the task)
      and the newest stay. Then, when the first message left is a function result, it goes too. Popped calls and
      results are not paired up: a call whose result was popped, or a result whose call was, is sent as it is (a
      provider rejects it).

    Known deviations: the pops split calls from their results (``tool-pairing``) and thinking tool loops
    (``atomic-units``), can take the last user message (``live-turn``), and know nothing of reverts
    (``revert-resolution``).

    Differences: AutoGen recomputes the middle from the whole list on every call, so a view under the limit may
    change which middle it leaves out, and as the list grows the middle moves right and messages an earlier call
    left out are sent again. Here a view under the limit stays as it is; once over it, the view is AutoGen's
    middle-out cut of the whole log less what the view had already dropped (a simulated view never brings a
    dropped message back), which counts no more than AutoGen's and is AutoGen's whenever its cut covers the
    earlier ones. Nothing of an unresolved pending turn leaves the view. The count is the engine's
    (the tool schemas AutoGen's client adds are not counted, as ``tool_schema`` is empty by default).
    """

    TUNABLE = {
        "token_limit": "40000:200000:20000",
    }
    TUNABLE_NATIVE = {
        "token_limit": "TokenLimitedChatCompletionContext(token_limit={value})",
    }

    Config = AutoGenTokenLimitedConfig
    known_deviations = frozenset({"tool-pairing", "atomic-units", "live-turn", "revert-resolution"})
    deviation_reasons = {
        "tool-pairing": "AutoGen's middle-out pops split tool calls from their results",
        "atomic-units": (
            "AutoGen's middle-out pops can drop the reply whose thinking opened the live tool loop"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "live-turn": "AutoGen's middle-out pops can take the last user message",
        "revert-resolution": "AutoGen has no reverts",
    }

    def limit(self, state: RunState) -> int:
        lim = self.config.token_limit
        return state.model.context_window if lim is None else lim

    def context_tokens(self, state: RunState, view: View | None = None) -> int:
        """What AutoGen's client counts: the view without the system prompt."""
        system = state.view_size(View(start=len(state)))[0] if state.has_system else 0
        return state.view_size(view)[0] - system

    def over_trigger(self, state: RunState) -> bool:
        return self.context_tokens(state) > self.limit(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or not self.over_trigger(state):
            return None
        base, n = context_base(state), len(state)
        starts = [
            i
            for i in range(base, n)
            if i == base or not (state.messages[i].role == "tool" == state.messages[i - 1].role)
        ]
        bounds = [*starts, n]
        sizes = [tokens(state, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
        lo, hi = middle_out(sizes, self.limit(state))
        kept = still_shown(state, [(base, bounds[lo]), (bounds[hi], n)])
        first = next((a for a, b in kept if a < b), n)
        if first < n and state.messages[first].role == "tool":
            later = past_results(state, first)
            kept = [(max(a, later), b) for a, b in kept if b > later]
        return kept_plan(state, kept)
