"""opencode (sst/opencode): session compaction to an anchored summary with a kept tail of recent turns, and the opt-in
prune of old tool outputs.

Read at ``sst/opencode@31e22f65`` (catalogue ``reference/policy-catalogue.md`` §B11 and its §F row):
``packages/opencode/src/session/compaction.ts`` (``PRUNE_MINIMUM``, ``PRUNE_PROTECT``, ``PRUNE_PROTECTED_TOOLS``,
``TOOL_OUTPUT_MAX_CHARS``, ``MIN_PRESERVE_RECENT_TOKENS``, ``MAX_PRESERVE_RECENT_TOKENS``, ``select``, ``splitTurn``,
``prune``, ``processCompaction``: the overflow replay and the synthetic "Continue…" message),
``packages/opencode/src/session/overflow.ts`` (``COMPACTION_BUFFER``, ``usable``, ``isOverflow``),
``packages/opencode/src/session/prompt.ts`` (the loop: the overflow check before every step on the last finished
assistant message's usage, the compaction task, prune after the loop ends),
``packages/core/src/session/compaction.ts`` (``buildPrompt``: the anchored prompt with ``<prior-summary>``) and
``compaction-suffix.ts`` (``SUMMARY_TEMPLATE``, ``SUMMARY_UPDATE_INSTRUCTIONS``); ``ProviderTransform.maxOutputTokens``
(``min(model.limit.output, OUTPUT_TOKEN_MAX = 32_000)``); ``MessageV2.filterCompacted`` and ``toModelMessages`` as
third-party readings quote them (the view is ``[compaction request, summary, kept tail, continuation]``; the
compaction request's part renders as "What did we do so far?").

opencode is TypeScript and not on PyPI: there is no conformance suite for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import end_cut, plan_shrinks
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Rule

COMPACTION_BUFFER = 20_000  # overflow.ts: reserved = compaction.reserved ?? min(COMPACTION_BUFFER, max output)
OUTPUT_TOKEN_MAX = 32_000  # ProviderTransform.OUTPUT_TOKEN_MAX: the max output tokens are min(model's, this)
PRESERVE_SHARE = 0.25  # preserveRecentBudget: floor(usable * 0.25) ...
MIN_PRESERVE_RECENT_TOKENS = 2_000  # ... clamped to [2,000, 15,000] (compaction.ts)
MAX_PRESERVE_RECENT_TOKENS = 15_000
PRUNE_PROTECT = 40_000  # compaction.ts: the newest 40,000 tokens of tool output are never pruned
PRUNE_MINIMUM = 20_000  # compaction.ts: prune only when more than 20,000 tokens would go
PRUNE_PROTECTED_TOOLS = ("skill",)  # compaction.ts PRUNE_PROTECTED_TOOLS
PRUNE_PROTECTED_TURNS = 2  # prune: ``if (turns < 2) continue``: the last two user turns are skipped
TOOL_OUTPUT_MAX_CHARS = 2_000  # compaction.ts: a tool result is cut to 2,000 characters for the summariser
#: How a pruned output reads to the model and to the summariser (``serialize``; ``toModelMessages``).
PRUNED = "[Old tool result content cleared]"
#: The compaction request (a user message with a ``compaction`` part) as ``toModelMessages`` renders it.
REQUEST_TEXT = "What did we do so far?"
#: The synthetic user message an automatic compaction appends (``processCompaction``), verbatim.
CONTINUE_TEXT = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
#: What precedes it after a compaction caused by a provider overflow with nothing to replay (``processCompaction``).
OVERFLOW_NOTE = (
    "The previous request exceeded the provider's size limit due to large media attachments. The conversation was "
    "compacted and media files were removed from context. If the user was asking about attached images or files, "
    "explain that the attachments were too large to process and suggest they try again with smaller or fewer "
    "files.\n\n"
)
#: ``JSON.stringify`` of a model message around its text (role, content array, type keys): the tail is sized on
#: ``Token.estimate(JSON.stringify(msgs))``, characters / 4.
JSON_FRAMING_CHARS = 40
# Our wording of buildPrompt + SUMMARY_TEMPLATE (+ SUMMARY_UPDATE_INSTRUCTIONS when a summary exists): an anchored
# summary in fixed Markdown sections, the prior summary merged in, the newer conversation winning on conflicts.
SUMMARY_PROMPT = (
    "Write an anchored summary of the conversation above so that another coding agent can continue the work. If a "
    "prior summary is given, it covers everything before the conversation: carry its objectives, constraints, "
    "decisions and still-open work into the new summary (what you leave out is lost), let the newer conversation win "
    "where they disagree, and move finished work to Completed. Use exactly these Markdown sections, terse bullets, "
    "'(none)' when empty: Objective; Important Details; Work State (Completed, Active, Blocked); Next Move; Relevant "
    "Files. Keep exact file paths, symbols, commands, error strings and identifiers. Do not mention the compaction."
)


@dataclass(frozen=True)
class OpencodeConfig:
    """Parameters, named after opencode's ``compaction`` settings and constants.

    Attributes:
        max_output_tokens: the model's max output tokens as opencode computes them; unset: ``min(the simulated
            model's output reserve, 32,000)`` (``ProviderTransform.maxOutputTokens``).
        reserved: ``compaction.reserved``; unset: ``min(20,000, max output tokens)`` (``COMPACTION_BUFFER``).
        preserve_recent_tokens: ``compaction.preserve_recent_tokens``; unset: ``clamp(floor(0.25 x usable), 2,000,
            15,000)``.
        tail_turns: ``compaction.tail_turns``: only the newest this many turns may be kept; 0 or less keeps none;
            unset: no limit.
        auto: ``compaction.auto`` (default true): compact when the last step's usage reaches the usable window.
        prune: ``compaction.prune`` (default off at this commit): clear old tool outputs after each finished turn.
        prune_protect: ``PRUNE_PROTECT``, 40,000 tokens of the newest outputs never pruned.
        prune_minimum: ``PRUNE_MINIMUM``, 20,000: prune only when more than this would go.
    """

    max_output_tokens: int | None = None
    reserved: int | None = None
    preserve_recent_tokens: int | None = None
    tail_turns: int | None = None
    auto: bool = True
    prune: bool = False
    prune_protect: int = field(default=PRUNE_PROTECT, metadata={"tokens": True})
    prune_minimum: int = field(default=PRUNE_MINIMUM, metadata={"tokens": True})

    def __post_init__(self) -> None:
        for name in ("max_output_tokens", "reserved", "preserve_recent_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InvalidConfig(f"{name}={value!r} must be >= 0, or unset for opencode's default")
        if self.prune_protect < 0 or self.prune_minimum < 0:
            raise InvalidConfig(
                f"prune_protect={self.prune_protect!r} and prune_minimum={self.prune_minimum!r} must be >= 0"
            )


def prune_rule() -> Rule:
    """A pruned output: ``state.time.compacted`` set, rendered as :data:`PRUNED`; the ``skill`` tool is never pruned."""
    return _PRUNE_RULE


_PRUNE_RULE = Rule(kinds=frozenset({"tool_result"}), exclude_tools=frozenset(PRUNE_PROTECTED_TOOLS), text=PRUNED)
_OUTPUTS = (  # what prune counts: tool outputs of every tool but the protected ones (a drop rule set for chars_as)
    Rule(kinds=frozenset({"text", "thinking", "tool_call", "change", "revert", "command"}), action="drop"),
    Rule(kinds=frozenset({"tool_result"}), tools=frozenset(PRUNE_PROTECTED_TOOLS), action="drop"),
)


@register("opencode")
class Opencode(Policy[OpencodeConfig]):
    """opencode: at context − max output − min(20k, max output), an anchored summary plus recent turns within 2k–15k.

    * **Trigger** (``isOverflow``, checked before every step of the loop): the last finished assistant message's
      usage (input + output + cache tokens of that call: here the last request's prompt and reply tokens) reaches
      ``usable = context − max output − reserved``, ``reserved = min(20,000, max output)`` (148,000 on a 200K window
      with 32K output). Right after a compaction the last finished message is the summary, which never triggers.
      ``/compact`` compacts at once (no continuation message); a prompt the provider rejects as too long is compacted
      with ``overflow`` and retried once.
    * **Kept tail** (``select``): the view's turns (a turn starts at a user message; the synthetic continuation of an
      earlier compaction starts one too), newest first, whole while they fit ``preserve_recent_tokens`` (estimated as
      chars/4 of the messages' JSON); the first that does not fit may be split at a later message whose suffix fits
      (``splitTurn``); if nothing fits, or the tail would be the whole history, everything is summarised.
    * **Summary**: the head (everything the view shows before the tail), each tool result cut to 2,000 characters, is
      summarised with the previous summary given as ``<prior-summary>`` (the anchored update); the new view is the
      compaction request ("What did we do so far?", user), the summary (assistant), the kept tail, and after an
      automatic compaction the synthetic user message "Continue if you have next steps, or stop and ask for
      clarification if you are unsure how to proceed.". On overflow, the last user message is replayed after the
      tail instead (what followed it is dropped) when an earlier user message exists; else the continuation opens
      with opencode's note that the request exceeded the provider's size limit.
    * **Prune** (``prune=true``; off by default at this commit): after each finished turn (here: before the first
      request of the next one), walking tool outputs newest first, skipping the last two user turns and stopping at
      the last compaction or at an output already pruned, the first ``prune_protect`` tokens (chars/4) are kept; the
      rest are pruned when they total more than ``prune_minimum``: each reads "[Old tool result content cleared]"
      (the ``skill`` tool's outputs are never pruned).

    Differences: the tail is sized with chars/4 of the messages plus a fixed JSON framing per message; a split never
    falls inside the live thinking tool loop (opencode splits at any step), and nothing of an unresolved pending turn is
    summarised (the harness's contracts); prune bounds by message, so an
    output that crosses the protection line takes the rest of its parallel batch with it. The summariser's input is
    clipped per message at 2,000 characters (opencode clips tool results only) and is shown what leaves the view:
    on overflow, the dropped messages after the replayed user message too (opencode leaves them out). A tail that
    reaches back past an earlier compaction's continuation message loses it (opencode keeps it in the tail). The
    "suffix" mode (the summary request reusing the cached agent request), plugins and media are not modelled. A
    summary that would not shrink the view is skipped.

    Known deviation: ``live-turn``. When the newest turn alone is larger than the budget, the tail starts inside it
    (or is empty) and the user message that opened it is summarised; the model then reads the summary and the
    synthetic "Continue…" message as the newest user turn. ``revert-resolution``: opencode has no notion of reverts;
    the tail is chosen by turns and tokens alone, so a kept revert may lose the change it reverts to the summary.
    ``atomic-units``: a tail that starts inside the live tool loop keeps its later steps without the reply whose
    thinking opened it; without interleaved thinking Anthropic rejects that request.
    """

    TUNABLE = {
        "reserved": "5000:60000:5000",
        "preserve_recent_tokens": "2000:30000:2000",
    }
    TUNABLE_NATIVE = {
        "reserved": '"compaction": {"reserved": {value}} (opencode.json)',
        "preserve_recent_tokens": '"compaction": {"preserve_recent_tokens": {value}} (opencode.json)',
    }

    Config = OpencodeConfig
    known_deviations = frozenset({"live-turn", "revert-resolution", "atomic-units"})
    deviation_reasons = {
        "live-turn": (
            "when the newest turn alone exceeds the budget, opencode summarises the user message that opened it"
        ),
        "revert-resolution": "opencode picks its tail by turns and tokens, not reverts",
        "atomic-units": (
            "a tail that starts inside the live tool loop keeps its later steps without the reply whose thinking "
            "opened it, which Anthropic rejects without interleaved thinking"
        ),
    }

    @property
    def retry_on_overflow(self) -> int:
        return 1

    # -- sizes -----------------------------------------------------------------------------------------------
    def max_output(self, state: RunState) -> int:
        cfg = self.config
        if cfg.max_output_tokens is not None:
            return cfg.max_output_tokens
        return min(state.model.output_reserve, OUTPUT_TOKEN_MAX) or OUTPUT_TOKEN_MAX

    def usable(self, state: RunState) -> int:
        """``usable``: context − max output − reserved (never below 0)."""
        out = self.max_output(state)
        reserved = self.config.reserved if self.config.reserved is not None else min(COMPACTION_BUFFER, out)
        return max(0, state.model.context_window - out - reserved)

    def preserve_budget(self, state: RunState) -> int:
        """``preserveRecentBudget``."""
        if self.config.preserve_recent_tokens is not None:
            return self.config.preserve_recent_tokens
        share = math.floor(self.usable(state) * PRESERVE_SHARE)
        return min(MAX_PRESERVE_RECENT_TOKENS, max(MIN_PRESERVE_RECENT_TOKENS, share))

    @staticmethod
    def last_step_tokens(state: RunState) -> int | None:
        """The last finished assistant message's usage: the last request's prompt plus its reply. None when there is
        none yet, or when the view changed since (then the last finished message is the summary: ``summary !== true``
        keeps it out of the check)."""
        if state.last_input_tokens is None:
            return None
        if state.view_changed_since_request:
            return None
        return state.last_input_tokens + (state.last_output_tokens or 0)

    def over_trigger(self, state: RunState) -> bool:
        tokens = self.last_step_tokens(state)
        if tokens is None:  # right after a compaction: the view as it will be sent, for the loop check
            tokens = state.view_size()[0]
        return self.config.auto and tokens >= self.usable(state)

    def estimate(self, state: RunState, a: int, b: int) -> int:
        """``Token.estimate(JSON.stringify(msgs))`` of messages ``[a, b)`` as the view shows them (pruned outputs as the
        placeholder): characters / 4 with a JSON framing per message."""
        if b <= a:
            return 0
        view = state.view
        bounds = sorted({a, b, *(e.before for e in view.edits if a < e.before < b)})
        chars = sum(state.chars_as(x, y, view.rules_at(x)) for x, y in zip(bounds, bounds[1:], strict=False))
        return math.ceil((chars + JSON_FRAMING_CHARS * (b - a)) / 4)

    # -- the decision ----------------------------------------------------------------------------------------
    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        n = len(state)
        if n == 0:
            return None
        prune = self._prune_edits(state) if trigger == "auto" else None
        compact = trigger in ("manual", "overflow") or (
            self.config.auto and (t := self.last_step_tokens(state)) is not None and t >= self.usable(state)
        )
        plan = self._compaction(state, trigger) if compact else None
        if prune is not None:
            if plan is not None:
                plan = replace(plan, edits=prune)
            else:
                plan = Plan(start=state.view.start, edits=prune, mode="prune")
        if plan is None or not plan_shrinks(state, plan):
            return None
        return plan

    # -- session compaction ----------------------------------------------------------------------------------
    def _history(self, state: RunState) -> list[int]:
        """The log indices the view shows (the system prompt aside), oldest first: opencode's ``history`` with the
        earlier compaction request and summary hidden."""
        view, n = state.view, len(state)
        lo = 1 if state.has_system else 0
        out = [i for a, b in view.spans for i in range(max(a, lo), b)]
        out.extend(range(max(view.start, lo), n))
        return out

    def _compaction(self, state: RunState, trigger: Trigger) -> Plan | None:
        msgs, n = state.messages, len(state)
        history = self._history(state)
        if trigger == "manual" and history and msgs[history[-1]].command is not None:
            history = history[:-1]  # the /compact request is the compaction marker, not history
        replay: int | None = None
        if trigger == "overflow":
            lu = state.last_user_index
            earlier = [i for i in history if i < lu and msgs[i].role == "user" and msgs[i].command is None]
            # A thinking tool loop still open after it cannot be dropped (its next reply joins the loop's unit).
            if lu >= 0 and lu in history and earlier and end_cut(state) == n:
                replay = lu
                history = [i for i in history if i < lu]
        if not history:
            return None
        tail = self._select(state, history)
        end = history[-1] + 1
        pf = state.protected_from
        if tail is not None and pf is not None:
            tail = min(tail, pf)
        if tail is not None and tail <= history[0]:
            tail = None  # the tail would be the whole history: opencode then summarises everything
        if tail is None and pf is not None and pf < end:
            tail = pf  # an unresolved pending turn is never summarised (the harness's contract)
            if tail <= history[0]:
                return None
        kept: list[int] = list(range(tail, end)) if tail is not None else []
        if replay is not None:
            kept.append(replay)
        if pf is not None:  # nothing of an unresolved pending turn leaves the view (a /compact in it included)
            kept.extend(range(pf, n))
        # Where the open tail starts: the log's end, or the start of a thinking tool loop still open there (the
        # loop's next reply joins its unit); what is kept before it is a closed span.
        start = end_cut(state)
        kept = sorted(i for i in set(kept) if i < start and state.view.shows(i))
        injected = [Injected(REQUEST_TEXT, role="user", slot=0, before_summary=True, label="compaction-request")]
        if trigger == "auto":
            injected.append(Injected(CONTINUE_TEXT, role="user", label="continue"))
        elif trigger == "overflow" and replay is None:
            injected.append(Injected(OVERFLOW_NOTE + CONTINUE_TEXT, role="user", label="continue"))
        return Plan(
            start=start,
            pinned=tuple(kept),
            summarize=True,
            summary_slot=0,
            summary_request=SummaryRequest(role="assistant", prompt=SUMMARY_PROMPT, clip_chars=TOOL_OUTPUT_MAX_CHARS),
            injected=tuple(injected),
            mode="summarize",
        )

    def _turns(self, state: RunState, history: list[int]) -> list[tuple[int, int]]:
        """``turns``: ``(start, end)`` positions in ``history`` of each turn; a turn starts at a user message (not a
        command) or at the continuation an earlier compaction put before the view's open tail."""
        msgs = state.messages
        continued = any(x.label == "continue" for x in state.view.injected)
        starts = [
            k
            for k, i in enumerate(history)
            if (msgs[i].role == "user" and msgs[i].command is None) or (continued and i == state.view.start)
        ]
        return [(s, starts[j + 1] if j + 1 < len(starts) else len(history)) for j, s in enumerate(starts)]

    def _select(self, state: RunState, history: list[int]) -> int | None:
        """``select``: the log index where the kept tail starts, or None for no tail (everything summarised)."""
        cfg = self.config
        if cfg.tail_turns is not None and cfg.tail_turns <= 0:
            return None
        budget = self.preserve_budget(state)
        turns = self._turns(state, history)
        if not turns:
            return None
        recent = turns if cfg.tail_turns is None else turns[-cfg.tail_turns :]

        def size(a: int, b: int) -> int:  # estimate of history positions [a, b), contiguous runs of the log
            total, k = 0, a
            while k < b:
                j = k
                while j + 1 < b and history[j + 1] == history[j] + 1:
                    j += 1
                total += self.estimate(state, history[k], history[j] + 1)
                k = j + 1
            return total

        total = 0
        keep: int | None = None
        for s, e in reversed(recent):
            turn_size = size(s, e)
            if total + turn_size <= budget:
                total += turn_size
                keep = s
                continue
            split = self._split(state, history, s, e, budget - total, size)
            if split is not None:
                keep = split
            break
        if keep is None or keep == 0:
            return None
        return history[keep]

    @staticmethod
    def _split(
        state: RunState, history: list[int], s: int, e: int, budget: int, size: Callable[[int, int], int]
    ) -> int | None:
        """``splitTurn``: the first later message of the turn whose suffix fits ``budget``. A message here is an
        opencode message: a user or assistant message (tool results live inside the assistant message); and only at
        a unit start (never inside the live thinking tool loop)."""
        if budget <= 0 or e - s <= 1:
            return None
        msgs = state.messages
        for k in range(s + 1, e):
            i = history[k]
            if msgs[i].role not in ("user", "assistant") or not state.can_cut(i) or history[k - 1] != i - 1:
                continue
            if size(k, e) <= budget:
                return k
        return None

    # -- prune -----------------------------------------------------------------------------------------------
    def _prune_edits(self, state: RunState) -> tuple[Edit, ...] | None:
        """``prune`` after the turn that just ended: the view's edits with the prune bound moved, or None."""
        cfg = self.config
        if not cfg.prune:
            return None
        msgs, n = state.messages, len(state)
        if msgs[-1].role != "user" or msgs[-1].command is not None:
            return None  # prune runs once per finished turn: here, when the next user message has arrived
        view = state.view
        # The user messages of the view, newest first; the new one (n - 1) and the two turns before it are skipped.
        users = [i for i in range(n - 1, view.start - 1, -1) if msgs[i].role == "user" and msgs[i].command is None]
        if len(users) < 1 + PRUNE_PROTECTED_TURNS:
            return None
        end = users[PRUNE_PROTECTED_TURNS]  # outputs in messages before this are candidates
        current = next((e.before for e in view.edits if e.rule == _PRUNE_RULE), 0)
        floor = max(view.start, current)  # stop at the last compaction, or at an output already pruned
        if end <= floor:
            return None

        def newer(i: int) -> float:  # tokens (chars/4) of the counted outputs in messages [i, end)
            return state.chars_as(i, end, _OUTPUTS) / 4

        total = newer(floor)
        if total <= cfg.prune_protect:
            return None
        lo, hi = floor, end - 1  # the newest message i whose outputs from i on pass the protection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if newer(mid) > cfg.prune_protect:
                lo = mid
            else:
                hi = mid - 1
        pruned = total - newer(lo + 1)  # the crossing message's outputs and everything older
        if pruned <= cfg.prune_minimum:
            return None
        bound = lo + 1
        pf = state.protected_from
        if pf is not None:
            bound = min(bound, pf)
        if bound <= current:
            return None
        return (*(e for e in view.edits if e.rule != _PRUNE_RULE), Edit(_PRUNE_RULE, bound))
