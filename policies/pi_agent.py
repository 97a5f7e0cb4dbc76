"""pi coding agent (``earendil-works/pi``, formerly ``badlogic/pi-mono``): session compaction past
``window - reserveTokens``, keeping the newest ``keepRecentTokens``.

Sources: the npm package ``@earendil-works/pi-coding-agent`` 1.6.0, its ``dist`` read and run
(``conformance/pi-coding-agent/``): ``dist/core/compaction/compaction.js`` (``DEFAULT_COMPACTION_SETTINGS``, lines
53-57: ``reserveTokens`` 16,384, ``keepRecentTokens`` 20,000, also ``dist/core/settings-defaults.js`` lines 8-12;
``calculateContextTokens`` 65-67; ``estimateContextTokens`` and ``estimateProjectedContextTokens`` 110-169;
``shouldCompact`` 173-177; ``estimateTokens`` 201-252; the cut points and ``findCutPoint`` 253-374;
``findProjectedCutPoint`` and ``prepareCompaction`` 555-662; ``compact`` with the split turn 688-725),
``dist/core/agent-session.js`` (when it is called: ``_checkCompaction`` 2496-2615 after a run's last reply and
before the next run, ``_compactBeforeNextAssistantResponse`` 476-490 before each further model call of a run,
``_omitRecoveryAttempt`` 906-931 and the single compact-and-retry on overflow 2538-2580) and ``dist/core/messages.js``
lines 7-12 and 103-110 (the summary as a user message between ``<summary>`` tags). Earlier readings of the TypeScript
(``packages/coding-agent/src/core/compaction/compaction.ts``, ``reference/field-2026.md`` §3; ``Yeachan-Heo/gajae-code``
#2335; ``HCF-STUDIOS/openhermit`` PR #282) quote the same two constants. Conformance: ``conformance/pi-coding-agent/``
runs those functions on 28 hand-made sessions and on the long conversations, model call by model call
(``tests/conformance/test_conformance_pi_coding_agent.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, keep_reverts, plan_shrinks, unit_floor
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

RESERVE_TOKENS = 16_384  # DEFAULT_COMPACTION_SETTINGS.reserveTokens
KEEP_RECENT_TOKENS = 20_000  # DEFAULT_COMPACTION_SETTINGS.keepRecentTokens
#: Our wording of pi's structured checkpoint (its six headings) and of the anchored update for later rounds.
SUMMARY_PROMPT = (
    "Write a checkpoint of the session for the agent that continues it, under these headings: Goal; Constraints & "
    "Preferences; Progress (Done, In Progress, Blocked); Key Decisions; Next Steps; Critical Context. If an earlier "
    "checkpoint is given, update it: keep what still holds, move finished work to Done, add what is new."
)
#: How pi shows a compaction's summary to the model (``messages.js``: ``COMPACTION_SUMMARY_PREFIX`` and ``_SUFFIX``).
SUMMARY_WRAPPER = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n"
    "</summary>"
)


def _js_len(s: str) -> int:
    """``s.length`` in JavaScript: UTF-16 code units."""
    return len(s) if s.isascii() else len(s.encode("utf-16-le")) // 2


def _compact(value: Any) -> Any:
    """A parsed JSON value as ``JSON.stringify`` writes its numbers: an integral float without its ``.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _arguments_chars(args: str | None) -> int:
    """``JSON.stringify(block.arguments).length``: the arguments as compact JSON (the raw text if it is not JSON)."""
    if not args:
        return 2  # {}
    try:
        value = json.loads(args)
    except ValueError:
        return _js_len(args)
    return _js_len(json.dumps(_compact(value), separators=(",", ":"), ensure_ascii=False))


def pi_tokens(m: Message) -> int:
    """pi's ``estimateTokens`` of message ``m``: characters over 4, rounded up, per pi message. Text and thinking
    count their characters, a tool call its name and compact JSON arguments; a tool message is one ``toolResult``
    per result, each rounded up apart."""
    if m.role == "tool":
        return sum(-(-_js_len(p.text) // 4) for p in m.parts)
    chars = 0
    for p in m.parts:
        chars += _js_len(p.text)
        if p.kind == "tool_call":
            chars += _js_len(p.name or "") + _arguments_chars(p.args)
    return -(-chars // 4)


def history_end(state: RunState) -> int:
    """Where pi's session ends at an automatic check: before the prompt or steering messages that precede the call
    (pi checks after the run's last reply, or before the next call of the run, and appends them after)."""
    j = len(state)
    while j > 0 and state.messages[j - 1].role == "user":
        j -= 1
    return j


@dataclass(frozen=True)
class PiConfig:
    """``CompactionSettings``, pi's names.

    Attributes:
        reserve_tokens: compact when the context estimate passes the window less this (16,384).
        keep_recent_tokens: the newest tokens kept verbatim, counted with pi's estimate (20,000).
    """

    reserve_tokens: int = field(default=RESERVE_TOKENS, metadata={"tokens": True})
    keep_recent_tokens: int = field(default=KEEP_RECENT_TOKENS, metadata={"tokens": True})

    def __post_init__(self) -> None:
        if self.reserve_tokens < 0 or self.keep_recent_tokens < 0:
            raise InvalidConfig(
                f"reserve_tokens ({self.reserve_tokens!r}) and keep_recent_tokens ({self.keep_recent_tokens!r}) "
                "must be >= 0"
            )


@register("pi")
class Pi(Policy[PiConfig]):
    """pi: past window - 16,384 tokens, summarise all but the newest 20,000 into a structured checkpoint.

    * **When**, as ``AgentSession`` checks: after a run's last reply, ``usage`` (prompt plus output) against
      ``contextWindow - reserveTokens`` (``shouldCompact``: strictly over); before each further model call of a run,
      that usage plus ``estimateTokens`` of every message after the reply. The prompt or steering message that
      starts the call is not counted: pi appends it after the check. Before the first reply nothing is checked; a
      reply from before the last compaction is stale and checks nothing. Here the engine asks before every request
      and the policy decides on the log less its trailing user messages (:func:`history_end`), which is pi's session
      at the check. On a provider overflow pi compacts once, whatever the estimate, and retries.
    * **Estimate** (:func:`pi_tokens`): characters over 4, rounded up per message; a tool call counts its name and
      compact JSON arguments, each tool result is a message of its own. After a compaction, before a new reply,
      the whole context: system prompt, summary (without its wrapper) and the kept messages.
    * **Cut** (``findCutPoint``): walking back from the newest message, adding estimates, to the first message at
      which ``keepRecentTokens`` are reached; the cut at the next message that is not a tool result (pi cuts only at
      user and assistant messages), or the last such message if none follows; when the walk never gets there,
      nothing is summarised. The cut may fall inside the live turn, at one of its assistant messages (pi's split turn:
      the turn's opening, the user's prompt included, is summarised apart and the two summaries joined). On overflow,
      a cut at the last message moves past it (the failed attempt is omitted and the prompt joins the summary).
    * **Summary**: everything before the cut, with the previous checkpoint (pi's anchored update), as a user message
      before the kept messages.

    Not modelled: the split turn's second summary call (one summary here covers both parts) and the read and
    modified file lists pi appends to the summary and carries in ``details``; a summary that would not shrink the
    view is skipped (pi writes it). Kept: a cut is never put inside a pending turn or between a kept revert and
    its change.

    Known deviations: ``live-turn``, pi's split turn (a long live turn loses its opening, the user's prompt
    included, to the summary); ``atomic-units``, with thinking on, the kept part of a live tool loop may open with a
    reply that has no thinking block (Anthropic rejects the request); ``revert-resolution``, pi knows nothing of
    reverts: a change compacted away is not brought back for a revert that comes later.
    """

    TUNABLE = {
        "reserve_tokens": "4096:65536:4096",
        "keep_recent_tokens": "5000:60000:5000",
    }
    TUNABLE_NATIVE = {
        "reserve_tokens": '"compaction": {"reserveTokens": {value}} (settings.json)',
        "keep_recent_tokens": '"compaction": {"keepRecentTokens": {value}} (settings.json)',
    }

    Config = PiConfig
    known_deviations = frozenset({"revert-resolution", "live-turn", "atomic-units"})
    deviation_reasons = {
        "revert-resolution": "pi knows nothing of reverts: a change compacted away is not brought back for its revert",
        "live-turn": "pi splits a long live turn: its opening, the user's prompt included, is summarised apart",
        "atomic-units": "pi cuts between the steps of the live tool loop, so a kept step may open it without thinking",
    }

    @property
    def retry_on_overflow(self) -> int:
        return 1  # "Context overflow recovery failed after one compact-and-retry attempt"

    def context_tokens(self, state: RunState, end: int) -> int | None:
        """pi's context estimate for its session ``messages[:end]``; None before the first reply."""
        if state.last_input_tokens is None:
            return None
        if state.view_changed_since_request:
            return self.whole_context_tokens(state, end)
        reply = state.messages_at_last_request
        trailing = sum(pi_tokens(state.messages[i]) for i in range(reply + 1, end))
        return state.last_input_tokens + (state.last_output_tokens or 0) + trailing

    def whole_context_tokens(self, state: RunState, end: int) -> int:
        """``estimateProjectedContextTokens`` once the last usage predates a compaction: every message estimated."""
        view = state.view
        tokens = pi_tokens(state.messages[0]) if state.has_system else 0
        if view.summary is not None:
            head, _, tail = SUMMARY_WRAPPER.partition("{summary}")
            text = view.summary.text
            if text.startswith(head) and text.endswith(tail):
                text = text[len(head) : len(text) - len(tail)]
            tokens += -(-_js_len(text) // 4)
        kept = [i for a, b in view.spans for i in range(a, b)] + list(range(view.start, end))
        return tokens + sum(pi_tokens(state.messages[i]) for i in kept if i < end)

    def over_trigger(self, state: RunState) -> bool:
        tokens = self.context_tokens(state, history_end(state))
        return tokens is not None and tokens > state.model.context_window - self.config.reserve_tokens

    def cut(self, state: RunState, end: int, overflow: bool = False) -> int:
        """``findCutPoint`` over the view's messages before ``end``: where the kept messages start (``end`` or past
        it on overflow: everything summarised). The view's start when nothing would be summarised."""
        lo = floor_index(state)
        msgs = state.messages

        def point(ks: range) -> int | None:  # the first cut point (not a tool result) in ks
            return next((k for k in ks if msgs[k].role != "tool"), None)

        i, total = end, 0
        while i > lo:
            i -= 1
            total += pi_tokens(msgs[i])
            if total >= self.config.keep_recent_tokens:
                cut = point(range(i, end))
                if cut is None:
                    cut = point(range(i - 1, lo - 1, -1))
                if cut is None:
                    return lo
                return end if overflow and cut == end - 1 else cut
        first = point(range(lo, end))
        return lo if first is None else first

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        end = len(state) if trigger == "overflow" else history_end(state)
        if trigger == "auto":
            if end == 0 or state.last_input_tokens is None:
                return None
            if state.view_changed_since_request and state.messages[end - 1].role == "assistant":
                return None  # the last reply predates the compaction: pi checks nothing
            if not self.over_trigger(state):
                return None
        cut = self.cut(state, end, overflow=trigger == "overflow")
        pf = state.protected_from
        cut = keep_reverts(state, unit_floor(state, cut if pf is None else min(cut, pf)))
        if cut <= floor_index(state):
            return None
        request = SummaryRequest(prompt=SUMMARY_PROMPT, wrapper=SUMMARY_WRAPPER, role="user")
        plan = Plan(start=cut, summarize=True, summary_request=request)
        return plan if plan_shrinks(state, plan) else None
