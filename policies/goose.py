"""Goose (block/goose): auto-compaction of the whole agent-visible history into one summary.

Read at ``block/goose@0036b819`` (catalogue ``reference/policy-catalogue.md`` §B14 and its §F row):
``crates/goose/src/context_mgmt/mod.rs`` (``DEFAULT_COMPACTION_THRESHOLD``, ``check_if_compaction_needed``,
``compact_messages``, ``do_compact`` with the middle-out ``filter_tool_responses``, ``format_message_for_compacting``,
the three continuation texts, ``ENABLE_TOOL_PAIR_SUMMARIZATION = false``); ``crates/goose/src/prompts/compaction.md``
read at ``11453df8`` (the summary template: Goal, Constraints & Preferences, Progress, Key Decisions, Next Steps,
Critical Context); the "smart context management" docs for the overflow retries (catalogue [D]).

Goose is Rust and not on PyPI: there is no conformance suite for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import end_cut, floor_index, plan_shrinks
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Rule, View

DEFAULT_COMPACTION_THRESHOLD = 0.8  # mod.rs; GOOSE_AUTO_COMPACT_THRESHOLD overrides it
#: ``do_compact``: on ContextLengthExceeded, retry with this share of tool responses removed from the middle out.
REMOVAL_PERCENTAGES = (0, 10, 20, 50, 100)
#: Tokens the summariser request adds around its prompt and transcript (the request and its three messages).
SUMMARISER_FRAMING = 16
OVERFLOW_RETRIES = 2  # docs: compaction on a context-length error is attempted at most twice
# The continuation the assistant "says" after the summary (mod.rs), verbatim: after a compaction before a new user
# message, inside a tool loop, and after a manual compaction.
CONVERSATION_CONTINUATION_TEXT = (
    "Your context was compacted. The previous message contains a summary of the conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
    "Just continue the conversation naturally based on the summarized context."
)
TOOL_LOOP_CONTINUATION_TEXT = (
    "Your context was compacted. The previous message contains a summary of the conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
    "Continue calling tools as necessary to complete the task."
)
MANUAL_COMPACT_CONTINUATION_TEXT = (
    "Your context was compacted at the user's request. The previous message contains a summary of the conversation "
    "so far.\nDo not mention that you read a summary or that conversation summarization occurred.\n"
    "Just continue the conversation naturally based on the summarized context."
)
# Our wording of compaction.md: a structured checkpoint for the model that continues, in six sections, keeping exact
# paths, names and errors, code only when needed, nothing that is easy to re-derive from files.
SUMMARY_PROMPT = (
    "Summarise the conversation history as a structured checkpoint that you will read to continue the session. "
    "Sections: Goal; Constraints & Preferences; Progress (Done, In Progress, Blocked); Key Decisions with their "
    "reasons; Next Steps in order; Critical Context (data, examples, error messages, references). Be concise but "
    "complete, keep exact file paths, function names and error messages, include code only when it is needed to "
    "continue, and leave out what can be re-derived from the files."
)


def middle_out(count: int, percent: int) -> tuple[int, int]:
    """``filter_tool_responses``: which of ``count`` tool responses (by position) are removed at ``percent``, as a
    range ``[lo, hi)``: ``max(1, count * percent // 100)`` of them, alternately just before and at the middle."""
    if percent == 0 or count == 0:
        return 0, 0
    remove = max(1, count * percent // 100)
    middle = count // 2
    chosen: list[int] = []
    for i in range(remove):
        offset = i // 2
        if i % 2 == 0:
            if middle > offset:
                chosen.append(middle - offset - 1)
        elif middle + offset < count:
            chosen.append(middle + offset)
    return (min(chosen), max(chosen) + 1) if chosen else (0, 0)


# A rule that leaves tool results as they are (a truncation longer than any text): put before a drop rule, it shields
# the messages before its bound, so the two together drop the results of a middle range only.
_KEEP = Rule(kinds=frozenset({"tool_result"}), action="truncate", max_tokens=10**12, text="")
_DROP = Rule(kinds=frozenset({"tool_result"}), action="drop")
# ``format_message_for_compacting`` leaves thinking and reasoning out of the summariser's input.
_NO_THINKING = Rule(kinds=frozenset({"thinking"}), action="drop")


@dataclass(frozen=True)
class GooseConfig:
    """Parameters, named after Goose's.

    Attributes:
        threshold: ``GOOSE_AUTO_COMPACT_THRESHOLD`` (``DEFAULT_COMPACTION_THRESHOLD`` 0.8): compact when the tokens are
            over this share of the context limit; 0 or less, or 1 or more, disables auto-compaction.
        context_limit: the model config's ``context_limit``; unset: the simulated model's context window.
    """

    threshold: float = DEFAULT_COMPACTION_THRESHOLD
    context_limit: int | None = None

    def __post_init__(self) -> None:
        if self.context_limit is not None and self.context_limit < 1:
            raise InvalidConfig(f"context_limit={self.context_limit!r} must be >= 1, or unset for the model's window")


@register("goose")
class Goose(Policy[GooseConfig]):
    """Goose: over 0.8 of the context limit, summarise everything; the latest user message is re-appended.

    * **Trigger** (``check_if_compaction_needed``, before each model call of the agent loop): ``current_tokens /
      context_limit > threshold``, ``current_tokens`` being the session's tokens from the provider's usage (here the
      last request's prompt plus its reply) or, when there is none (right after a compaction), the tokenizer's count
      of the agent-visible messages. Also ``/compact`` (manual), and a context-length error from the provider
      (compact and retry, at most twice).
    * **Compaction** (``compact_messages``): every agent-visible message is summarised (nothing is kept verbatim) and
      becomes user-visible only; the summary is a user message (agent-only), followed by an assistant continuation:
      "Your context was compacted. …" ("Just continue the conversation naturally…" when the compaction came before a
      new user message, "Continue calling tools as necessary…" inside a tool loop, "…at the user's request…" after a
      manual one). Except after a manual compaction, the most recent user message with text only is then re-appended
      verbatim.
    * **Summariser input** (``do_compact``): the messages as ``[role]: text`` lines, thinking left out (here: edits
      of the messages that leave the view, which only the summariser reads); when the
      summariser's prompt is too long, the tool responses are removed from the middle out, 10%, 20%, 50%, then
      100% of them, until it fits.

    Here the re-appended user message is the log's own message kept in view after the summary and the continuation
    (the agent sees the same text; the summariser is not shown it, where Goose summarises it too), and what followed
    it in a tool loop is summarised away, as in Goose. The middle-out removal is decided before the call on the
    summariser input's token count against the model's input budget (Goose tries each step against the provider).
    Differences: a thinking tool loop still open at the log's end stays in view after the re-appended message (the
    loop's next reply joins its unit; Goose summarises it too); nothing of an unresolved pending turn is summarised
    (the harness's contract); a compaction that would not shrink the view is skipped, and so is one that would
    summarise nothing but the previous summary (a second ``/compact`` in a row: Goose summarises the summary again,
    with no reason to come out shorter). Tool-pair summarisation (``GOOSE_TOOL_CALL_CUTOFF``) is off at this commit
    and not modelled; the ``truncate``/``clear`` strategies of the CLI are not modelled.

    Known deviations: ``live-turn`` (after ``/compact`` the last user message is summarised too and not re-appended);
    ``revert-resolution`` (Goose has no notion of reverts: a kept pending turn's revert may lose its change).
    """

    TUNABLE = {
        "threshold": "0.3:0.95:0.05",
    }
    TUNABLE_NATIVE = {
        "threshold": "GOOSE_AUTO_COMPACT_THRESHOLD={value} (environment variable)",
    }

    Config = GooseConfig
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "after /compact Goose summarises the last user message too and does not re-append it",
        "revert-resolution": "Goose has no notion of reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return OVERFLOW_RETRIES

    def context_limit(self, state: RunState) -> int:
        return self.config.context_limit if self.config.context_limit is not None else state.model.context_window

    @staticmethod
    def current_tokens(state: RunState) -> int:
        """The session's tokens: the last request's usage, or the count of the view when there is none since the view
        last changed (Goose drops the running total when it replaces the conversation)."""
        changed = state.view_changed_since_request
        if state.last_input_tokens is None or changed:
            return state.view_size()[0]
        return state.last_input_tokens + (state.last_output_tokens or 0)

    def over_trigger(self, state: RunState) -> bool:
        t = self.config.threshold
        if t <= 0 or t >= 1:
            return False  # auto-compaction disabled
        return self.current_tokens(state) / self.context_limit(state) > t

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if len(state) == 0 or (trigger == "auto" and not self.over_trigger(state)):
            return None
        manual = trigger == "manual"
        n = len(state)
        start = end_cut(state)
        pf = state.protected_from
        if pf is not None:
            start = min(start, pf)
        lu = state.last_user_index
        preserved = None if manual or lu < 0 or not state.view.shows(lu) or lu >= start else lu
        if manual:
            text = MANUAL_COMPACT_CONTINUATION_TEXT
        elif preserved == n - 1:
            text = CONVERSATION_CONTINUATION_TEXT
        else:
            text = TOOL_LOOP_CONTINUATION_TEXT
        pinned = () if preserved is None else (preserved,)
        if start <= floor_index(state) and set(state.view.pinned) <= set(pinned):
            return None  # nothing but the summary would leave the view: a summary of it alone need not be shorter
        edits = self._middle_out(state, start)
        plan = Plan(
            start=start,
            pinned=pinned,
            summarize=True,
            summary_slot=0,
            summary_request=SummaryRequest(role="user", prompt=SUMMARY_PROMPT),
            injected=(Injected(text, role="assistant", slot=0, label="continuation"),),
            # Only the summariser reads the messages before ``start``: these edits shape its input.
            edits=(*edits, Edit(_NO_THINKING, start)),
            mode="summarize",
        )
        return plan if plan_shrinks(state, plan) else None

    def _middle_out(self, state: RunState, end: int) -> tuple[Edit, ...]:
        """The edits that leave the middle tool responses out of the summariser's input (messages before ``end`` leave
        the view, so the edits change nothing the agent sees), at the first removal share whose input fits."""
        view = state.view
        budget = state.model.input_budget
        lo = max(view.spans[0][0] if view.spans else view.start, 1 if state.has_system else 0)
        size = (
            state.view_size(View(start=lo, summary=view.summary, edits=view.edits))[0]
            - state.view_size(View(start=end, edits=view.edits))[0]
        )
        n = len(state)
        bare = View(start=n)
        prompt = state.view_size(bare.with_(injected=(Injected(SUMMARY_PROMPT),)))[0] - state.view_size(bare)[0]
        size += prompt + SUMMARISER_FRAMING
        if size <= budget:
            return ()
        tools = [i for i in range(lo, end) if state.messages[i].role == "tool" and view.shows(i)]
        for percent in REMOVAL_PERCENTAGES[1:]:
            a, b = middle_out(len(tools), percent)
            first, last = tools[a], tools[b - 1] + 1
            saved = (
                state.view_size(View(start=first, edits=view.edits))[0]
                - state.view_size(View(start=first, edits=(*view.edits, Edit(_DROP, last))))[0]
            )
            if size - saved <= budget or percent == REMOVAL_PERCENTAGES[-1]:
                return (Edit(_KEEP, first), Edit(_DROP, last)) if first > 0 else (Edit(_DROP, last),)
        return ()
