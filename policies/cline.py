"""Cline's context management: the legacy programmatic truncation (``ContextManager``).

Read: ``cline/cline`` (fetched), ``apps/vscode/src/core/context/context-management/ContextManager.ts`` and
``context-window-utils.ts`` at ``6eeee7c4`` (2026-06-24, the last version before ``1f31738b`` deleted them as unused
after the move to the SDK), ``apps/vscode/src/core/prompts/responses.ts`` at the same commit (the notices), and the
caller ``apps/vscode/src/core/task/index.ts`` at ``864419d8`` (2026-06-23, the last commit that called it:
``attemptApiRequest`` and ``handleContextWindowExceededError``); the catalogue ``reference/policy-catalogue.md``
§B15 and §F.

Cline keeps the whole API conversation history and sends a view of it: the first user message and the first
assistant reply (indices 0 and 1), then everything after ``conversationHistoryDeletedRange = [2, end]``, with the
first reply's first text block replaced by a notice. Its history is Anthropic-shaped, strictly alternating: a tool
call's results are ``tool_result`` blocks of the next user message. So every index below counts Cline messages: the
log after the system prompt, each assistant message one message, each run of user and tool messages between two
assistant messages one user message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from policies.base import Plan, Policy, Trigger, register
from policies.helpers import plan_shrinks
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

    Known deviations: the deleted range counts messages, so it can end inside a thinking tool loop
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

    Config = ClineLegacyConfig
    known_deviations = frozenset({"atomic-units", "live-turn", "revert-resolution"})

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
        if state.last_input_tokens is None:
            return None
        if state.view_at_last_request is not None and state.view is not state.view_at_last_request:
            return state.view_size()[0]
        return state.last_input_tokens + (state.last_output_tokens or 0)

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
