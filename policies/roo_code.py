"""Roo Code's context management: intelligent condensing, with sliding-window truncation as the fallback.

Read: ``RooCodeInc/Roo-Code`` (fetched) at ``9d65772d`` (2026-01-22, the last version before "Intelligent Context
Condensation v2", ``cf5d42e1``, replaced the kept first message and last three with a summary of everything; the
catalogue read ``04fc2a02``, 2026-01-15, the same design): ``src/core/context-management/index.ts``
(``manageContext``, ``willManageContext``, ``truncateConversation``), ``src/core/condense/index.ts``
(``summarizeConversation``, ``getKeepMessagesWithToolBlocks``, ``N_MESSAGES_TO_KEEP``), ``src/core/task/Task.ts`` (the
caller before every API request, ``handleContextWindowExceededError``, ``FORCED_CONTEXT_REDUCTION_PERCENT``,
``MAX_CONTEXT_WINDOW_RETRIES``), ``packages/core/src/message-utils/consolidateTokenUsage.ts`` (``contextTokens``),
``src/core/webview/ClineProvider.ts`` (the settings' defaults) and ``src/shared/support-prompt.ts`` (the ``CONDENSE``
prompt); the catalogue ``reference/policy-catalogue.md`` §B16 and §F.

Roo's history is Anthropic-shaped (a call's results are ``tool_result`` blocks of the next user message), so its
message counts are over :func:`policies.cline.cline_messages`: each assistant message one message, each run of user and
tool messages one user message. It never deletes: condensed messages are tagged (``condenseParent``) and hidden ones too
(``truncationParent``), and the API gets the untagged ones; a view over the log here.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.cline import Group, cline_messages
from policies.helpers import plan_shrinks
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Injected, View

TOKEN_BUFFER_PERCENTAGE = 0.1  # context-management/index.ts: allowed = window * 0.9 - reserved
N_MESSAGES_TO_KEEP = 3  # condense/index.ts: the newest messages kept verbatim
AUTO_CONDENSE_PERCENT = 100  # ClineProvider.ts: autoCondenseContextPercent ?? 100 (and autoCondenseContext ?? true)
MIN_CONDENSE_THRESHOLD, MAX_CONDENSE_THRESHOLD = 5, 100  # condense/index.ts: a profile's threshold range
FORCED_CONTEXT_REDUCTION_PERCENT = 75  # Task.ts: the threshold manageContext gets after a context-window error
MAX_CONTEXT_WINDOW_RETRIES = 3  # Task.ts
TRUNCATION_FRACTION = 0.5  # manageContext's fallback: truncateConversation(messages, 0.5, ...)
TRUNCATION_MARKER = "[Sliding window truncation: {n} messages hidden to reduce context]"  # truncateConversation
MARKER_LABEL = "roo-truncation-marker"
# Our words for the CONDENSE prompt (support-prompt.ts): a detailed summary in six numbered sections.
CONDENSE_PROMPT = (
    "Write a detailed summary of the conversation so far, attentive to the user's explicit requests and your own "
    "actions, with the technical detail needed to carry on. Structure it as: 1. Previous Conversation; 2. Current "
    "Work; 3. Key Technical Concepts; 4. Relevant Files and Code; 5. Problem Solving; 6. Pending Tasks and Next Steps "
    "(quoting the most recent messages verbatim to show where the work stopped). Output only the summary."
)
KEEPS_CALLS = "summary_keeps_calls"  # checkpoint key: the tail's first message stands for the summary's tool_use blocks


@dataclass(frozen=True)
class RooCodeConfig:
    """Roo's settings.

    Attributes:
        auto_condense_context: condense automatically (``autoCondenseContext``, default on); off, only the
            sliding-window truncation runs.
        auto_condense_context_percent: condense once the context reaches this percentage of the window
            (``autoCondenseContextPercent``, default 100; a profile may set 5 to 100).
    """

    auto_condense_context: bool = True
    auto_condense_context_percent: int = AUTO_CONDENSE_PERCENT

    def __post_init__(self) -> None:
        if not MIN_CONDENSE_THRESHOLD <= self.auto_condense_context_percent <= MAX_CONDENSE_THRESHOLD:
            raise InvalidConfig(
                f"auto_condense_context_percent={self.auto_condense_context_percent!r} must be between "
                f"{MIN_CONDENSE_THRESHOLD} and {MAX_CONDENSE_THRESHOLD}"
            )


def tokens_between(state: RunState, a: int, b: int) -> int:
    """Exact tokens of log messages ``[a, b)`` as stored."""
    return state.view_size(View(start=a))[0] - state.view_size(View(start=b))[0]


@register("roo-code")
class RooCode(Policy[RooCodeConfig]):
    """Roo Code: at 100 % of the window (or past 0.9 window - max tokens), summarise all but the first and last 3.

    * Before every API request (``attemptApiRequest``): ``prevContextTokens`` = the last request's input plus output
      (``contextTokens``; after a condense, the count it reported) plus the tokens of the last message (the one about
      to be sent). ``allowedTokens = window * 0.9 - maxTokens`` (the model's output cap, 8,192 if unknown).
    * With ``autoCondenseContext`` (on): condense when ``100 * prev / window >= autoCondenseContextPercent`` (100) or
      ``prev > allowedTokens``. ``summarizeConversation`` keeps the first message and the last 3
      (``N_MESSAGES_TO_KEEP``) and summarises the messages since the last summary (the first message and the previous
      summary included). A kept message whose results answer calls in the condensed region gets those ``tool_use``
      blocks (and that message's reasoning) appended to the summary, and is summarised too. It refuses when one message
      or fewer is to be summarised, when a summary is among the last 3 ("condensed recently"), and when the new context
      would not be smaller ("context grew"). The summary is an assistant message (``isSummary``) before the kept 3,
      written to the six-section ``CONDENSE`` prompt.
    * Fallback, when condensing is off, refused or failed and ``prev > allowedTokens``: ``truncateConversation(0.5)``
      hides ``floor((visible - 1) * 0.5)`` (rounded down to even) of the visible messages after the first and puts a
      user message "[Sliding window truncation: N messages hidden to reduce context]" where they were.
    * On a context-window error (up to 3 times): the same, with the condense threshold at 75 %.

    As a view: the first message pinned, the summary (assistant) before the tail; the tail starts at the kept 3, or at
    the assistant message whose calls the first kept message answers (it stands for the ``tool_use`` blocks Roo moves
    into the summary); truncation markers are injected user messages before the tail.

    Known deviations: the kept messages count messages, so the tail may start at a reply inside the live thinking tool
    loop (``atomic-units``) and leave the newest user message out of a long tool loop (``live-turn``); reverts are
    unknown to it (``revert-resolution``).

    Differences: the tail keeps the whole assistant message whose calls Roo copies into the summary (its text too);
    the summariser sees what leaves the view and the previous summary, not the first message again; the fallback
    counts the messages the view sends (Roo counts its stored history, where condensed messages still count as
    visible), never hides the summary, and skips a kept first message's tool results whose calls it hid; nothing of an
    unresolved pending turn leaves the view.
    """

    TUNABLE = {
        "auto_condense_context_percent": "50:100:5",
    }
    TUNABLE_NATIVE = {
        "auto_condense_context_percent": "autoCondenseContextPercent: {value} (settings)",
    }

    Config = RooCodeConfig
    known_deviations = frozenset({"atomic-units", "live-turn", "revert-resolution"})
    deviation_reasons = {
        "atomic-units": (
            "Roo counts kept messages, so the tail can start inside the live tool loop, behind its assistant summary"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "live-turn": "a long tool loop can leave Roo's newest user message out",
        "revert-resolution": "Roo knows nothing of reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return MAX_CONTEXT_WINDOW_RETRIES

    @staticmethod
    def allowed_tokens(state: RunState) -> float:
        return state.model.context_window * (1 - TOKEN_BUFFER_PERCENTAGE) - state.model.output_reserve

    @staticmethod
    def prev_context_tokens(state: RunState) -> int | None:
        """``totalTokens + lastMessageTokens``; None before the first request. Once the view changed since (a
        condense or a truncation), the prompt the next request sends (Roo reads the count the condense reported)."""
        if state.last_input_tokens is None:
            return None
        if state.view_changed_since_request:
            return state.view_size()[0]
        since = min(state.messages_at_last_request + 1, len(state))
        return state.last_input_tokens + (state.last_output_tokens or 0) + tokens_between(state, since, len(state))

    def due(self, state: RunState, percent: int) -> tuple[bool, bool]:
        """(condense, truncate): whether each threshold is reached."""
        prev = self.prev_context_tokens(state)
        if prev is None:
            return False, False
        over = prev > self.allowed_tokens(state)
        condense = self.config.auto_condense_context and (100 * prev / state.model.context_window >= percent or over)
        return condense, over

    def over_trigger(self, state: RunState) -> bool:
        condense, over = self.due(state, self.config.auto_condense_context_percent)
        return condense or over

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "manual":
            return self.condense(state)
        percent = (
            FORCED_CONTEXT_REDUCTION_PERCENT if trigger == "overflow" else self.config.auto_condense_context_percent
        )
        condense, over = self.due(state, percent)
        plan = self.condense(state) if condense else None
        if plan is None and over:
            plan = self.truncate(state)
        return plan

    @staticmethod
    def tail_groups(state: RunState, groups: list[Group]) -> list[Group]:
        """The messages of the view's tail, as Roo's messages."""
        start = state.view.start
        return [g for g in groups if g.b > start and g.a >= 1] if start > 0 else groups[1:]

    def condense(self, state: RunState) -> Plan | None:
        groups = cline_messages(state)
        if len(groups) < 2 or groups[0].role != "user":
            return None
        view = state.view
        keeps_calls = dict(view.checkpoint).get(KEEPS_CALLS) == "1"
        if view.summary is not None:
            after_summary = len(self.tail_groups(state, groups)) - keeps_calls
            if after_summary <= N_MESSAGES_TO_KEEP - 1:
                return None  # "condensed recently": the summary is among the last 3
        elif len(groups) <= N_MESSAGES_TO_KEEP + 1:
            return None  # "not enough messages"
        keep_start = len(groups) - N_MESSAGES_TO_KEEP
        first_kept = groups[keep_start]
        cut, calls = first_kept.a, False
        if state.messages[first_kept.a].role == "tool" and groups[keep_start - 1].role == "assistant":
            cut, calls = groups[keep_start - 1].a, True  # the tool_use blocks go with the summary
        pf = state.protected_from
        if pf is not None and pf < cut:
            cut, calls = pf, False
        first = groups[0]
        if cut <= max(view.start, first.b):
            return None  # one message or fewer to summarise
        plan = Plan(
            start=cut,
            spans=((first.a, first.b),),
            summarize=True,
            summary_request=SummaryRequest(role="assistant", prompt=CONDENSE_PROMPT),
            mode="summarize",
            checkpoint=((KEEPS_CALLS, "1" if calls else "0"),),
        )
        return plan if plan_shrinks(state, plan) else None

    def truncate(self, state: RunState) -> Plan | None:
        groups = cline_messages(state)
        if len(groups) < 2:
            return None
        view = state.view
        keeps_calls = dict(view.checkpoint).get(KEEPS_CALLS) == "1"
        tail = self.tail_groups(state, groups)
        has_summary = view.summary is not None
        visible = 1 + has_summary + len(tail) - keeps_calls
        raw = int((visible - 1) * TRUNCATION_FRACTION)
        hidden = raw - raw % 2
        if hidden <= 0:
            return None
        k = hidden - has_summary + keeps_calls  # of the tail's messages (the summary and its calls count as one)
        if k <= 0:
            return None  # only the summary would go (see Differences)
        msgs, n = state.messages, len(state)
        start = n
        if k < len(tail):
            g = tail[k]
            start = g.a
            while start < g.b and msgs[start].role == "tool":
                start += 1
        pf = state.protected_from
        if pf is not None:
            start = min(start, pf)
        if start <= view.start:
            return None
        marker = Injected(TRUNCATION_MARKER.format(n=hidden), role="user", label=MARKER_LABEL)
        first = groups[0]
        plan = Plan(
            start=start,
            spans=((first.a, first.b),),
            injected=(*view.injected, marker),
            mode="truncate",
            checkpoint=((KEEPS_CALLS, "0"),),
        )
        return plan if plan_shrinks(state, plan) else None
