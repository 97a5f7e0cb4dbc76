"""pi coding agent (``earendil-works/pi``, formerly ``badlogic/pi-mono``): session compaction past
``window - reserveTokens``, keeping the newest ``keepRecentTokens``.

Sources: ``packages/coding-agent/src/core/compaction/compaction.ts`` as ``reference/field-2026.md`` §3 reads it
(``DEFAULT_COMPACTION_SETTINGS``: ``reserveTokens`` 16,384 and ``keepRecentTokens`` 20,000; the context estimate of
the last assistant's ``usage`` plus chars/4 of the trailing messages; the cut walking back, only at user, assistant,
custom or bash entries, never at a tool result; the structured checkpoint and its anchored update prompt), confirmed
by third-party readings quoting the same constants (``Yeachan-Heo/gajae-code`` #2335: ``keepRecentTokens = 20000``;
``HCF-STUDIOS/openhermit`` PR #282: "trigger window - 16384, keep recent 20000 tokens"). pi ships on npm
(``@earendil-works/pi-coding-agent``); no conformance suite is provided yet (listed as not done in issue 32).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies._tail import client_estimate, summary_plan, tail_by_tokens
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
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
SUMMARY_WRAPPER = "The conversation history before this point was compacted into the following summary:\n\n{summary}"


@dataclass(frozen=True)
class PiConfig:
    """``CompactionSettings``, pi's names.

    Attributes:
        reserve_tokens: compact when the context estimate passes the window less this (16,384).
        keep_recent_tokens: the newest tokens kept verbatim, whole entries (20,000).
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

    * **Trigger**, before every model call: ``contextTokens > contextWindow - reserveTokens``, the tokens being the
      last assistant's reported usage (prompt and output) plus chars/4 of the messages after it.
    * **Kept**: walking back from the newest entry until ``keepRecentTokens`` are covered, the cut moved to the
      start of its unit (pi never cuts at a tool result).
    * **Summary**: everything before, with the previous checkpoint (pi's anchored update), as one message before the
      kept entries.

    Differences: pi may cut inside a turn (at an assistant entry) and summarises the turn's prefix apart (split-turn
    detection); here the cut moves back to the turn's user message (the harness keeps the live turn), so a long live
    turn is kept whole. The read and modified file lists pi carries in ``details`` are not modelled.

    Known deviation: ``revert-resolution`` (pi knows nothing of reverts): a change compacted away is
    not brought back for a revert that comes later.
    """

    Config = PiConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "pi knows nothing of reverts: a change compacted away is not brought back for its revert"
    }

    def over_trigger(self, state: RunState) -> bool:
        return client_estimate(state) > state.model.context_window - self.config.reserve_tokens

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        start = tail_by_tokens(state, self.config.keep_recent_tokens)
        request = SummaryRequest(prompt=SUMMARY_PROMPT, wrapper=SUMMARY_WRAPPER, role="user")
        return summary_plan(state, start, request)
