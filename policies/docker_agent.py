"""docker-agent (``docker/docker-agent``, formerly cagent): session compaction past 0.9 of the context window, the
newest 20,000 tokens (at most a fifth of the window) kept verbatim after a "Session Summary" user message.

Sources, ``docker/docker-agent`` at commit ``7c1086deac12941d6a372d814d4d8a7f8ff039f9`` (a stored snapshot later than
v1.59.0 of 2026-05-13, PR #3042 of 2026-06-09 and issue #4136), read file by file:

* ``pkg/compaction/compaction.go``: ``DefaultThreshold`` 0.9 (the ``compaction_threshold`` config key overrides it per
  agent or model); ``ShouldCompact``: input + output + added tokens strictly over ``int64(limit * threshold)``;
  ``SplitIndexForKeep``: the kept tail; ``FirstIndexInBudget``: the summariser's input trimmed from the front; the
  token ``Estimator`` (chars / 3.5 + 5 a message, calibrated against the provider's usage, replies counted by their
  reported output).
* ``pkg/runtime/compactor/compactor.go``: ``maxKeepTokens`` 20,000 and ``keepTokenBudget`` (``min(20000, limit / 5)``),
  ``MaxSummaryTokens`` 16,000 and ``summaryTokenBudget`` (``min(16000, limit / 4)``), ``extractMessages`` (the
  summariser's request: its system prompt, the conversation before the kept tail, its user prompt), ``RunLLM``
  (nothing to summarise, or an empty summary: no compaction).
* ``pkg/runtime/loop.go``: the trigger before each model call (``ShouldCompact`` on the session's usage, nothing
  added) and ``compactIfNeeded`` after a reply's tool calls (the usage plus the estimate of the messages since).
* ``pkg/runtime/session_compaction.go``: ``doCompact`` (the summary item with ``FirstKeptEntry``; the session's
  input tally set to the summary's output tokens, its output tally to 0) and the reasons ``threshold``,
  ``overflow``, ``manual`` (``/compact`` uses the same path, with the user's extra instructions appended).
* ``pkg/session/session.go``: ``buildSessionSummaryMessages`` and ``CompactionInput`` (the summary sent as a user
  message ``"Session Summary: "`` + text after the system messages, then the kept messages; the previous summary
  opens the next compaction's input), ``SetUsage`` (the last request's prompt and output).
* ``pkg/runtime``'s ``handleStreamError`` and ``defaultMaxOverflowCompactions`` 1 (stored copies of ``pkg/runtime``
  whose commit the index does not name): on a context overflow, compact once and retry (the counter resets on a
  successful call).

The summariser's prompts (``pkg/compaction/prompts/compaction-system.txt``, ``compaction-user.txt``) were read in the
fetched mirror's ``main`` at ``0d76412a3ed156faac105d7961753c333be0a879`` (2026-03-14; the snapshot above does not
hold them); that mirror predates PR #2259 (2026-03-26, "Preserve recent messages during session compaction", the
kept tail, ``reference/field-2026.md`` §3) and also shows ``streaming.go`` setting the input tally to prompt plus
cached tokens. docker-agent is Go and not a registry package: no conformance suite (not on PyPI or npm).
"""

from __future__ import annotations

from dataclasses import dataclass

from policies._tail import message_tokens
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, keep_reverts, plan_shrinks, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

DEFAULT_THRESHOLD = 0.9  # compaction.DefaultThreshold
MAX_KEEP_TOKENS = 20_000  # compactor.maxKeepTokens
KEEP_WINDOW_DIVISOR = 5  # keepTokenBudget: min(maxKeepTokens, limit / 5)
MAX_SUMMARY_TOKENS = 16_000  # compactor.MaxSummaryTokens
SUMMARY_WINDOW_DIVISOR = 4  # summaryTokenBudget: min(MaxSummaryTokens, limit / 4)
CHARS_PER_TOKEN = 3.5  # compaction.charsPerToken (the uncalibrated estimate of the summariser's own prompts)
PER_MESSAGE_OVERHEAD = 5  # compaction.perMessageOverhead
OVERFLOW_RETRIES = 1  # defaultMaxOverflowCompactions
#: How the summary is shown to the model: session.go's summaryMessagePrefix before the text, in a user message.
SUMMARY_WRAPPER = "Session Summary: {summary}"
#: Our wording of the summariser's system prompt and user prompt (compaction-system.txt, compaction-user.txt).
SUMMARY_PROMPT = (
    "You write summaries of conversations for later reference: the main points, the decisions taken and the context "
    "that matters, clear enough for a reader who was not part of it. Summarise the conversation above so that it can "
    "be carried on: what was done, what is under way, which files are being worked on and what comes next; the "
    "continuation will have this summary, not the conversation itself."
)


def _estimate(text: str) -> int:
    """``EstimateMessageTokens`` of a message holding ``text``, uncalibrated (chars / 3.5 + 5)."""
    return int(len(text) / CHARS_PER_TOKEN) + PER_MESSAGE_OVERHEAD


@dataclass(frozen=True)
class DockerAgentConfig:
    """docker-agent's compaction settings.

    Attributes:
        compaction_threshold: compact when the estimate is over this share of the context window (0.9, the
            ``compaction_threshold`` config key).
        max_keep_tokens: the newest tokens kept verbatim, at most a fifth of the window (20,000: a constant in
            docker-agent, ``maxKeepTokens``). Not scaled by ``csim check``: docker-agent scales it to the window
            itself.
    """

    compaction_threshold: float = DEFAULT_THRESHOLD
    max_keep_tokens: int = MAX_KEEP_TOKENS

    def __post_init__(self) -> None:
        if not 0 < self.compaction_threshold <= 1:
            raise InvalidConfig(f"compaction_threshold={self.compaction_threshold!r} must be in (0, 1]")
        if self.max_keep_tokens < 0:
            raise InvalidConfig(f"max_keep_tokens={self.max_keep_tokens!r} must be >= 0")


@register("docker-agent")
class DockerAgent(Policy[DockerAgentConfig]):
    """docker-agent: over 0.9 of the window, summarise all but the newest min(20,000, window / 5) tokens.

    * **Trigger**, before each model call: the last request's reported prompt plus its output, plus the tokens of
      the messages after the reply (the tool results ``compactIfNeeded`` estimates), strictly over
      ``int(window * compaction_threshold)``. The user message that starts a call is not counted (the check before
      the call adds nothing to the usage). Before the first reply the tally is 0: no compaction. After a
      compaction the tally is the summary's own output tokens, so nothing is compacted again before the next
      request reports. On a provider overflow: compact once, whatever the estimate, and retry; ``/compact`` the
      same, unconditionally.
    * **Kept** (``SplitIndexForKeep``): walking back from the newest message, the longest run of messages within
      the keep budget, started at a user or assistant message (never at a tool result); the previous summary counts
      as the first message of the walk. When everything fits, or no user or assistant message starts a run that
      fits (the newest message alone is over the budget), nothing is kept: all is summarised. The cut may fall
      inside the live turn, at one of its assistant messages, the user's prompt then summarised.
    * **Summary**: everything before the kept messages, the previous summary first, under docker-agent's prompts,
      its input trimmed from the front to ``window - min(16000, window / 4)`` less the prompts (whole messages,
      from a user or assistant message: when none fits, no compaction), its output capped at ``min(16000,
      window / 4)``; shown as a user message ``Session Summary: ...`` before the kept messages.

    Differences: docker-agent's estimator scales chars / 3.5 by the ratio the provider's usage shows (clamped to
    0.75-2.0) and counts replies by their reported output; here every message is counted exactly, as that
    calibration aims to. A summary that would not shrink the view is skipped (docker-agent applies it). Hooks
    (``pre_compact``, ``before_compaction``), a dedicated compaction model, ``/compact``'s extra instructions and
    steered messages are not modelled. Kept: a cut is never put inside a pending turn or between a kept revert and
    its change.

    Known deviations: ``live-turn``, the kept tail is a token budget, not whole turns: a long live turn loses its
    opening, the user's prompt included, and a newest message over the budget takes the whole live turn into the
    summary; ``atomic-units``, with thinking on, the kept part of a live tool loop may open with a reply that has no
    thinking block (Anthropic rejects the request); ``revert-resolution``, docker-agent knows nothing of reverts: a
    change compacted away is not brought back for a revert that comes later.
    """

    TUNABLE = {
        "compaction_threshold": "0.5:0.95:0.05",
    }
    TUNABLE_NATIVE = {
        "compaction_threshold": "compaction_threshold: {value} (the agent's config)",
    }

    Config = DockerAgentConfig
    known_deviations = frozenset({"live-turn", "atomic-units", "revert-resolution"})
    deviation_reasons = {
        "live-turn": (
            "docker-agent keeps a token budget, not whole turns: a long live turn loses its opening, the user's "
            "prompt included, and a newest message over the budget takes the whole live turn into the summary"
        ),
        "atomic-units": (
            "docker-agent cuts between the steps of the live tool loop, so a kept step may open it without thinking"
        ),
        "revert-resolution": (
            "docker-agent knows nothing of reverts: a change compacted away is not brought back for its revert"
        ),
    }

    @property
    def retry_on_overflow(self) -> int:
        return OVERFLOW_RETRIES

    def keep_budget(self, state: RunState) -> int:
        """``keepTokenBudget``: the kept tail's tokens, at most a fifth of the window."""
        return min(self.config.max_keep_tokens, state.model.context_window // KEEP_WINDOW_DIVISOR)

    @staticmethod
    def summary_budget(state: RunState) -> int:
        """``summaryTokenBudget``: the summary's output cap, at most a quarter of the window."""
        return min(MAX_SUMMARY_TOKENS, state.model.context_window // SUMMARY_WINDOW_DIVISOR)

    def estimate(self, state: RunState) -> int:
        """The session's usage tally plus the messages the trigger adds to it (0 before the first reply)."""
        if state.last_input_tokens is None:
            return 0
        if state.view_changed_since_request:  # the tally is the summary's output tokens until the next request
            summary = state.view.summary
            return 0 if summary is None else -(-len(summary.text) // 4)
        end = len(state)
        while end > 0 and state.messages[end - 1].role == "user":
            end -= 1
        reply = state.messages_at_last_request
        added = message_tokens(state, reply + 1, end) if end > reply + 1 else 0
        return state.last_input_tokens + (state.last_output_tokens or 0) + added

    def over_trigger(self, state: RunState) -> bool:
        return self.estimate(state) > int(state.model.context_window * self.config.compaction_threshold)

    def summary_tokens(self, state: RunState) -> int:
        """Tokens of the previous summary's message, which opens the compaction's input (0 without one)."""
        summary = state.view.summary
        return 0 if summary is None else -(-len(summary.text) // 4)

    def split(self, state: RunState) -> int:
        """``SplitIndexForKeep`` over the view's messages: where the kept messages start; the log's end when nothing
        is kept."""
        n, lo, budget = len(state), floor_index(state), self.keep_budget(state)
        boundary, total = n, 0
        for i in range(n - 1, lo - 1, -1):
            total += message_tokens(state, i, i + 1)
            if total > budget:
                return boundary
            if state.messages[i].role in ("user", "assistant"):
                boundary = i
        if state.view.summary is not None and total + self.summary_tokens(state) > budget:
            return boundary
        return n  # everything fits the keep budget: compact everything

    def summariser_budget(self, state: RunState) -> int:
        """What the summariser's input may hold: the window less the summary's cap and the two prompts."""
        prompts = _estimate(SUMMARY_PROMPT) + PER_MESSAGE_OVERHEAD  # a system and a user message
        return max(0, state.model.context_window - self.summary_budget(state) - prompts)

    def summarisable(self, state: RunState, cut: int) -> bool:
        """Whether ``FirstIndexInBudget`` leaves the summariser anything: a user or assistant message (or the
        previous summary) starting a run of the messages before ``cut`` that fits its budget."""
        budget, total = self.summariser_budget(state), 0
        for i in range(cut - 1, floor_index(state) - 1, -1):
            total += message_tokens(state, i, i + 1)
            if total > budget:
                return False
            if state.messages[i].role in ("user", "assistant"):
                return True
        return state.view.summary is not None and total + self.summary_tokens(state) <= budget

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "auto" and not self.over_trigger(state):
            return None
        cut = self.split(state)
        pf = state.protected_from
        cut = unit_floor(state, cut if pf is None else min(cut, pf))
        kept = keep_reverts(state, cut)  # a revert whose change already left the view cannot hold the cut back
        cut = kept if kept > floor_index(state) else cut
        if cut <= floor_index(state) or not self.summarisable(state, cut):
            return None
        request = SummaryRequest(
            prompt=SUMMARY_PROMPT,
            wrapper=SUMMARY_WRAPPER,
            role="user",
            input_newest_tokens=self.summariser_budget(state),
            max_tokens=self.summary_budget(state),
        )
        plan = Plan(start=cut, summarize=True, summary_request=request)
        return plan if plan_shrinks(state, plan) else None
