"""Cline's context management: the legacy programmatic truncation (``ContextManager``) and the 2026 SDK compaction.

Read: ``cline/cline`` (fetched), ``apps/vscode/src/core/context/context-management/ContextManager.ts`` and
``context-window-utils.ts`` at ``6eeee7c4`` (2026-06-24, the last version before ``1f31738b`` deleted them as unused
after the move to the SDK), ``apps/vscode/src/core/prompts/responses.ts`` at the same commit (the notices), and the
caller ``apps/vscode/src/core/task/index.ts`` at ``864419d8`` (2026-06-23, the last commit that called it:
``attemptApiRequest`` and ``handleContextWindowExceededError``); the catalogue ``reference/policy-catalogue.md``
§B15 and §F. The SDK compaction: ``cline/cline`` at ``21cb8d25`` (2026-08-22),
``sdk/packages/core/src/extensions/context/compaction.ts`` (the trigger and target, ``prepareTurn``),
``compaction-shared.ts`` (constants, ``findCutIndex``, the summary request and message), ``agentic-compaction.ts``
(the default strategy) and ``sdk/packages/shared/src/llms/tokens.ts`` (the estimate); the catalogue §B15b, whose
files were older (its summary cap of 1,024 tokens is 4,096 here, and the default strategy is now ``agentic``).

The legacy mode: Cline keeps the whole API conversation history and sends a view of it: the first user message and the
first assistant reply (indices 0 and 1), then everything after ``conversationHistoryDeletedRange = [2, end]``, with
the first reply's first text block replaced by a notice. Its history is Anthropic-shaped, strictly alternating: a tool
call's results are ``tool_result`` blocks of the next user message. So every index below counts Cline messages: the
log after the system prompt, each assistant message one message, each run of user and tool messages between two
assistant messages one user message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks, reported_total
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Injected

# ``formatResponse.contextTruncationNotice()`` (responses.ts @6eeee7c4): replaces the first reply's first text block.
TRUNCATION_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal context window "
    "length. The initial user task has been retained for continuity, while intermediate conversation history has "
    "been removed. Keep this in mind as you continue assisting the user. Pay special attention to the user's latest "
    "messages."
)
# ``formatResponse.processFirstUserMessageForTruncation()`` (same file): replaces the first user message's first
# text block after a context-window error (``applyFirstUserMessageReplacement``).
FIRST_USER_REPLACEMENT = "[Continue assisting the user!]"
# ``getContextWindowInfo`` (context-window-utils.ts): the buffer kept below the window, by window size.
BUFFERS = {64_000: 27_000, 128_000: 30_000, 200_000: 40_000}
DEFAULT_BUFFER = 40_000  # any other window: max(window - 40,000, 0.8 * window)
DEFAULT_RATIO = 0.8
NOTICE_LABEL = "cline-truncation-notice"
FIRST_USER_LABEL = "cline-first-user-replacement"
TOKENS = {"tokens": True}


class Group(NamedTuple):
    """One Cline message: log messages ``[a, b)``, ``assistant`` or ``user`` (user and tool messages joined)."""

    a: int
    b: int
    role: Literal["user", "assistant"]


def cline_messages(state: RunState) -> list[Group]:
    """The log after the system prompt as Cline's alternating messages. O(log): asked only once over the trigger."""
    msgs, n = state.messages, len(state)
    out: list[Group] = []
    i = 1 if state.has_system else 0
    while i < n:
        if msgs[i].role == "assistant":
            out.append(Group(i, i + 1, "assistant"))
            i += 1
            continue
        j = i
        while j < n and msgs[j].role != "assistant":
            j += 1
        out.append(Group(i, j, "user"))
        i = j
    return out


def max_allowed_size(window: int) -> int:
    """``getContextWindowInfo``: the window less 27,000 (64K), 30,000 (128K) or 40,000 (200K), else
    ``max(window - 40,000, 0.8 * window)`` (the 400K OpenAI-Codex-OAuth case, 232,000, is not modelled)."""
    if window in BUFFERS:
        return window - BUFFERS[window]
    return int(max(window - DEFAULT_BUFFER, DEFAULT_RATIO * window))


def messages_to_remove(remaining: int, keep: Literal["half", "quarter"]) -> int:
    """``getNextTruncationRange``: half the remaining messages (``floor(r / 4) * 2``) or three quarters
    (``floor(r * 3 / 4 / 2) * 2``), always an even number."""
    return (remaining // 4) * 2 if keep == "half" else ((remaining * 3) // 8) * 2


@dataclass(frozen=True)
class ClineLegacyConfig:
    """Parameters.

    Attributes:
        max_allowed_size: truncate when the previous request's tokens reach this; unset (the default): Cline's
            ``getContextWindowInfo`` of the model's window (200K: 160,000; 128K: 98,000; 64K: 37,000; else
            ``max(window - 40,000, 0.8 * window)``).
    """

    max_allowed_size: int | None = field(default=None, metadata=TOKENS)

    def __post_init__(self) -> None:
        if self.max_allowed_size is not None and self.max_allowed_size <= 0:
            raise InvalidConfig(f"max_allowed_size={self.max_allowed_size!r} must be greater than 0, or unset")


@register("cline-legacy")
class ClineLegacy(Policy[ClineLegacyConfig]):
    """Cline legacy truncation: keep the first pair, drop half (or three quarters) of the rest, notice in reply 1.

    * Before every API request (``attemptApiRequest``, mid tool loop included), with ``useAutoCondense`` off:
      the previous request's ``tokensIn + tokensOut + cacheWrites + cacheReads`` against ``maxAllowedSize``; at or
      over it, truncate: ``keep = "quarter"`` when half the total is still over it, else ``"half"``.
    * ``getNextTruncationRange``: messages 0 and 1 (the first user message and the first reply) always stay; from
      the end of the previous deleted range (or 2), remove an even number of the remaining messages, half or three
      quarters (``floor(r/4)*2`` or ``floor(r*3/4/2)*2``), moved one back when the last one removed is not an
      assistant message; the deleted range is ``[2, end]``, cumulative: a view over the saved history.
    * The first reply's first text block becomes the truncation notice ("[NOTE] Some previous conversation history
      with the user has been removed...") from the first truncation on, and the first message after the deleted
      range loses its ``tool_result`` blocks (their calls were deleted).
    * On a context-window error, once (``handleContextWindowExceededError``): the same with ``"quarter"`` whatever
      the count, and the first user message's first text block becomes "[Continue assisting the user!]".

    As a view: a span of the first user message, an injected assistant message holding the notice in place of the
    first reply, and the tail from the first message after the deleted range (past its tool messages).

    Known deviations: the deleted range counts messages, so it can end inside the live thinking tool loop
    (``atomic-units``), take the newest user message when a tool loop after it is long (``live-turn``), and drop the
    change a kept revert reverts (``revert-resolution``); after a context-window error the task itself reads
    "[Continue assisting the user!]" (``live-turn`` when it is the newest user message).

    Differences: the first reply is replaced whole by the notice (Cline replaces its first text block and answers
    its calls with "result missing" when their results were deleted: the view cannot inject a tool result); a
    truncation that deletes nothing (three or fewer messages after the first pair) changes nothing here (Cline still
    writes the notice); the duplicate-file-read pass that runs first (and skips the truncation when it saves 30 % of
    the characters) is not modelled: it replaces chosen results, not a position-bounded set; nothing of an
    unresolved pending turn leaves the view.
    """

    TUNABLE = {
        "max_allowed_size": "60000:180000:10000",
    }

    Config = ClineLegacyConfig
    known_deviations = frozenset({"atomic-units", "live-turn", "revert-resolution"})
    deviation_reasons = {
        "atomic-units": (
            "Cline's deleted range counts messages, so it can end inside the live tool loop, behind its"
            " assistant notice"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "live-turn": "Cline can drop the newest user message of a long tool loop",
        "revert-resolution": "Cline can drop the change a kept revert reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return 1  # ``didAutomaticallyRetryFailedApiRequest``: one automatic truncate-and-retry

    def max_allowed(self, state: RunState) -> int:
        cfg = self.config.max_allowed_size
        return max_allowed_size(state.model.context_window) if cfg is None else cfg

    @staticmethod
    def tokens_used(state: RunState) -> int | None:
        """The previous request's prompt plus output (None before any request). Once the view changed since (a
        truncation), the prompt the next request sends: the count the next check reads, less its reply."""
        return reported_total(state)

    def over_trigger(self, state: RunState) -> bool:
        used = self.tokens_used(state)
        return used is not None and used >= self.max_allowed(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow":
            return self.truncate(state, "quarter", replace_first_user=True)
        if trigger != "auto":
            return None  # the legacy mode has no command of its own
        used, limit = self.tokens_used(state), self.max_allowed(state)
        if used is None or used < limit:
            return None
        return self.truncate(state, "quarter" if used / 2 > limit else "half")

    @staticmethod
    def deleted_end(state: RunState) -> int | None:
        """The end of the deleted range ``[2, end]`` the view holds (Cline's ``conversationHistoryDeletedRange``)."""
        value = dict(state.view.checkpoint).get("deleted_range")
        return None if value is None else int(value.split(",")[1])

    def truncate(
        self, state: RunState, keep: Literal["half", "quarter"], replace_first_user: bool = False
    ) -> Plan | None:
        groups = cline_messages(state)
        if len(groups) < 3 or groups[0].role != "user" or groups[1].role != "assistant":
            return None
        prev = self.deleted_end(state)
        start_of_rest = 2 if prev is None else prev + 1
        end = start_of_rest + messages_to_remove(len(groups) - start_of_rest, keep) - 1
        if end < len(groups) and groups[end].role != "assistant":
            end -= 1
        if end < 2:
            return None  # nothing deleted (see Differences)
        msgs, n, view = state.messages, len(state), state.view
        start = n
        if end + 1 < len(groups):  # the first message after the range, without its tool results
            g = groups[end + 1]
            start = g.a
            while start < g.b and msgs[start].role == "tool":
                start += 1
        pf = state.protected_from
        start = max(view.start, start if pf is None else min(start, pf))
        first, reply = groups[0], groups[1]
        if start <= reply.a:
            return None  # a pending turn reaches back into the first pair
        replaced = replace_first_user or any(x.label == FIRST_USER_LABEL for x in view.injected)
        replaced = replaced and msgs[first.a].parts[0].kind == "text"
        spans = ((first.a + 1 if replaced else first.a, first.b),)
        injected = [Injected(FIRST_USER_REPLACEMENT, role="user", slot=0, label=FIRST_USER_LABEL)] if replaced else []
        injected.append(Injected(TRUNCATION_NOTICE, role="assistant", label=NOTICE_LABEL))
        plan = Plan(
            start=start,
            spans=tuple((a, b) for a, b in spans if a < b),
            injected=tuple(injected),
            mode="truncate",
            checkpoint=(("deleted_range", f"2,{end}"),),
        )
        if plan.view_from(view) == view:
            return None
        return plan if plan_shrinks(state, plan) else None


# -- the Cline SDK core compaction (2026) ---------------------------------------------------------------------------
# ``compaction-shared.ts`` (@21cb8d25): the constants of the SDK's compaction.
COMPACTION_TRIGGER_RATIO = 0.9  # compact once the request reaches 0.9 of the usable input
CONTEXT_WINDOW_INPUT_RATIO = 0.9  # the usable input when a model reports only its window
DEFAULT_TARGET_RATIO = 0.7  # target: 0.7 of the trigger...
LONG_CONVERSATION_TARGET_RATIO = 0.5  # ...or half the usable input after 5 user/assistant pairs (compaction.ts)
DEFAULT_PRESERVE_RECENT_TOKENS = 20_000  # the agentic strategy's verbatim tail
DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS = 4_096  # the summariser's output cap (the catalogue's 1,024 is an older version)
TOOL_RESULT_CHAR_LIMIT = 2_000  # tool results (and thinking) in the summariser's input
CHARS_PER_TOKEN = 3  # ``@cline/shared`` tokens.ts: a deliberate over-count
MANUAL_TARGET_RATIO = 0.5  # ``/compact``: half the current message tokens
# JSON.stringify of a message adds its framing to the text: about 32 characters a message and 40 a part; one part a
# message here (the view's totals count messages, not parts).
JSON_CHARS_PER_MESSAGE = 72
# Our words for the summariser's instruction and request (``generateSummary``, ``buildSummaryRequest``): a concise
# continuation note under the headings Goal, State (Done / In Progress / Blocked), Highlights, Next and Files.
SDK_SUMMARY_SYSTEM = "Summarise this coding session as a short continuation note that spells out the next steps."
SDK_SUMMARY_REQUEST = (
    "Keep it brief and factual, under these headings: ## Goal (one sentence: what is being built or fixed); "
    "## State (Done, In Progress, Blocked); ## Highlights (notable choices or findings, if any); ## Next (the "
    "immediate next steps); ## Files (read and edited)."
)
SDK_SUMMARY_WRAPPER = "Context summary:\n\n{summary}"


def estimate(chars: int, messages: int = 1) -> int:
    """``estimateTokens(JSON.stringify(...).length)``: ``ceil(chars / 3)``, at least 1, with the JSON framing."""
    return max(1, -(-(chars + JSON_CHARS_PER_MESSAGE * messages) // CHARS_PER_TOKEN))


@dataclass(frozen=True)
class ClineConfig:
    """The SDK's ``compaction`` settings with ``enabled: true`` and the default ``strategy: "agentic"``.

    Attributes:
        preserve_recent_tokens: the verbatim tail the cut walks back to (``DEFAULT_PRESERVE_RECENT_TOKENS``,
            20,000), never more than the message target.
        max_input_tokens: the usable input; unset: 0.9 of the model's window (``resolveEffectiveMaxInputTokens`` for
            a model that reports only its window).
        summary_max_tokens: the summariser call's output cap (``DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS``, 4,096).
    """

    preserve_recent_tokens: int = field(default=DEFAULT_PRESERVE_RECENT_TOKENS, metadata=TOKENS)
    max_input_tokens: int | None = field(default=None, metadata=TOKENS)
    summary_max_tokens: int = DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS

    def __post_init__(self) -> None:
        if self.preserve_recent_tokens <= 0 or self.summary_max_tokens <= 0:
            raise InvalidConfig(
                f"preserve_recent_tokens ({self.preserve_recent_tokens!r}) and summary_max_tokens "
                f"({self.summary_max_tokens!r}) must be greater than 0"
            )
        if self.max_input_tokens is not None and self.max_input_tokens <= 0:
            raise InvalidConfig(f"max_input_tokens={self.max_input_tokens!r} must be greater than 0, or unset")


@register("cline")
class Cline(Policy[ClineConfig]):
    """Cline SDK compaction (agentic): at 0.9 of the input, summarise all but a 20,000-token tail as "Context summary".

    * ``prepareTurn``, before every model request: the request's estimate, ``ceil(JSON.stringify({systemPrompt,
      messages, tools}).length / 3)``, against ``0.9 * maxInputTokens`` (the usable input: 0.9 of the window when the
      model reports no input limit); at or over it, compact.
    * The target: half the usable input once the conversation holds 5 user/assistant pairs and the model's output
      cap is below the input limit, else 0.7 of the trigger; less the request's overhead (system prompt, tools) it is
      the message target. The verbatim tail is ``min(preserveRecentTokens, message target)``.
    * ``findCutIndex``: walk from the newest message back, adding each message's estimate, until the tail reaches
      that many tokens; never past the latest typed user message (one that is not only tool results, nor the
      summary) when there is one after the first message; then back to a safe boundary (an assistant message or a
      typed user message, never a tool-result message). A cut at 0 does nothing.
    * Everything before the cut is summarised, the previous summary passed as "Previous summary:" with only the
      messages after it (anchored); tool results and thinking clipped to 2,000 characters; the summariser (thinking
      off, output capped at 4,096 tokens) answers a sectioned request (Goal, State, Highlights, Next, Files). An
      empty summary does nothing.
    * The result: a user message "Context summary:\\n\\n..." then the messages from the cut: the first user message is
      not kept.
    * ``/compact`` (manual): the same with a target of half the current message tokens.

    Known deviations: with no typed user message after the first, the cut follows the token walk alone and takes the
    task (``live-turn``); a cut at an assistant message may fall inside the live thinking tool loop (``atomic-units``);
    reverts are unknown to it (``revert-resolution``).

    Differences: the estimate counts the view's characters with 72 characters of JSON framing a message, without
    the tool schemas; the summariser's input clips every message at 2,000 characters (Cline clips tool results and
    thinking only) and is not fitted to the summariser's own input limit; the Files section is the summariser's to
    write (Cline computes it from read_files/editor calls); the fallback to the basic strategy when the summariser
    fails, and the basic strategy of the provider-overflow recovery, are not modelled (no retry on overflow);
    nothing of an unresolved pending turn is summarised.
    """

    TUNABLE = {
        "preserve_recent_tokens": "5000:60000:5000",
    }
    TUNABLE_NATIVE = {
        "preserve_recent_tokens": "compaction.preserveRecentTokens = {value} (SDK settings)",
    }

    Config = ClineConfig
    known_deviations = frozenset({"atomic-units", "live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": (
            "with no typed user message after the first, Cline's token walk alone places the cut and can take the task"
        ),
        "atomic-units": (
            "a cut at an assistant message can fall inside the live tool loop, after the reply whose thinking opened it"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "Cline knows nothing of reverts",
    }

    def max_input(self, state: RunState) -> int:
        cfg = self.config.max_input_tokens
        return int(state.model.context_window * CONTEXT_WINDOW_INPUT_RATIO) if cfg is None else cfg

    def trigger_tokens(self, state: RunState) -> float:
        return self.max_input(state) * COMPACTION_TRIGGER_RATIO

    @staticmethod
    def request_tokens(state: RunState) -> int:
        """The request's estimate: the view's characters (system prompt, summary, messages) and their framing."""
        return estimate(state.chars_in_view(), state.view_size()[1])

    @staticmethod
    def overhead(state: RunState) -> int:
        """The request's tokens beside its messages: the system prompt."""
        return estimate(len(state.messages[0].text)) if state.has_system else 0

    def over_trigger(self, state: RunState) -> bool:
        return self.request_tokens(state) >= self.trigger_tokens(state)

    def message_target(self, state: RunState, manual: bool) -> int:
        """``resolveAutoRequestTargetTokens`` (or the manual target) less the overhead."""
        overhead, trigger, max_input = self.overhead(state), self.trigger_tokens(state), self.max_input(state)
        if manual:
            messages = self.request_tokens(state) - overhead
            return max(1, int(min(trigger - overhead, messages * MANUAL_TARGET_RATIO)))
        pairs = self.pairs(state)
        if pairs >= 5 and state.model.output_reserve < max_input:
            target = int(max_input * LONG_CONVERSATION_TARGET_RATIO)
        else:
            target = int(trigger * DEFAULT_TARGET_RATIO)
        target = max(1, min(target, max_input, max(1, int(trigger) - 1)))
        return max(1, target - overhead)

    @staticmethod
    def pairs(state: RunState) -> int:
        """``countUserAssistantPairs`` over the messages the view sends (tool results count as user messages)."""
        pairs, pending = 0, state.view.summary is not None
        for a, b in (*state.view.spans, (state.view.start, len(state))):
            for m in state.messages[max(a, 1 if state.has_system else 0) : b]:
                if m.role in ("user", "tool"):
                    pending = True
                elif m.role == "assistant" and pending:
                    pairs, pending = pairs + 1, False
        return pairs

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        keep = min(self.config.preserve_recent_tokens, self.message_target(state, trigger == "manual"))
        cut = self.cut_index(state, keep)
        if cut is None:
            return None
        plan = Plan(
            start=cut,
            summarize=True,
            summary_request=SummaryRequest(
                role="user",
                wrapper=SDK_SUMMARY_WRAPPER,
                prompt=f"{SDK_SUMMARY_SYSTEM}\n\n{SDK_SUMMARY_REQUEST}",
                clip_chars=TOOL_RESULT_CHAR_LIMIT,
                max_tokens=self.config.summary_max_tokens,
            ),
            mode="summarize",
        )
        return plan if plan_shrinks(state, plan) else None

    def cut_index(self, state: RunState, keep: int) -> int | None:
        """``findCutIndex`` over the view's messages (the summary first, then the tail), as a log index; None for a
        cut at the first of them (nothing to summarise)."""
        msgs, n, view = state.messages, len(state), state.view
        first = max(view.start, 1 if state.has_system else 0)
        if n - first < 1:
            return None
        total, candidate = 0, n
        for i in range(n - 1, first - 1, -1):
            total += estimate(msgs[i].chars)
            candidate = i
            if total >= keep:
                break
        else:
            return None  # the walk reached the first message (or the summary): a cut at 0
        last_typed = state.last_user_index
        if last_typed > first or (last_typed == first and view.summary is not None):
            candidate = min(candidate, last_typed)
        cut = candidate
        while cut > first and msgs[cut].role == "tool":
            cut -= 1
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        # A cut at the first message summarises nothing: nothing before it, or only the previous summary.
        return cut if cut > first else None
