"""coder/coder chat: compaction at a share of the model's context limit, 70% by default and 30% for windows of
500,000 tokens or more.

Source: ``coder/coder`` PR #28899 (merged 2026-09-02, "default chat compaction threshold to 30% for large-context
models": newly created model configs with a context limit of 500k+ tokens default to a 30% ``compression_threshold``
when it is omitted; 200k and 272k windows keep the 70% default; an explicit value wins), via
``reference/field-2026.md`` §3. coder is Go, not a registry package: no conformance suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies._tail import client_estimate, summary_plan, tail_by_tokens
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

COMPRESSION_THRESHOLD = 70  # percent: the default (PR #28899 keeps it for 200k and 272k windows)
LARGE_CONTEXT_THRESHOLD = 30  # percent, for context limits of LARGE_CONTEXT tokens or more (PR #28899)
LARGE_CONTEXT = 500_000
#: Ours: what coder keeps after compacting is not in the sources read; the newest 20,000 tokens, whole turns, as
#: pi, opencode and Codex keep (the ecosystem's figure the PR's discussion compares against).
KEEP_RECENT_TOKENS = 20_000
SUMMARY_PROMPT = (
    "Summarise the chat so far for the agent that continues it: the user's request and constraints, what was done "
    "(files, commands, results), decisions and open problems, and the next steps."
)


@dataclass(frozen=True)
class CoderConfig:
    """A coder chat model config's compaction settings.

    Attributes:
        compression_threshold: percent of the context limit at which to compact; unset: 70, or 30 for a context
            limit of 500,000 tokens or more (PR #28899).
        keep_recent_tokens: the newest tokens kept verbatim (ours: 20,000).
    """

    compression_threshold: int | None = None
    keep_recent_tokens: int = field(default=KEEP_RECENT_TOKENS, metadata={"tokens": True})

    def __post_init__(self) -> None:
        if self.compression_threshold is not None and not 0 < self.compression_threshold <= 100:
            raise InvalidConfig(f"compression_threshold={self.compression_threshold!r} must be a percent in (0, 100]")
        if self.keep_recent_tokens < 0:
            raise InvalidConfig(f"keep_recent_tokens={self.keep_recent_tokens!r} must be >= 0")


@register("coder")
class Coder(Policy[CoderConfig]):
    """coder chat: at 70% of the context limit (30% from 500K), summarise all but the newest turns.

    * **Trigger**, before every model call: the provider's last reported prompt and output plus chars/4 since, at or
      over ``compression_threshold`` percent of the window (the window-dependent default of PR #28899).
    * **Kept** (ours): the newest ``keep_recent_tokens``, the cut at a turn or unit start; the rest is summarised into
      one user message, the previous summary folded in.

    Known deviations: ``revert-resolution`` (coder knows nothing of reverts): a change compacted away is
    not brought back for a revert that comes later; ``compaction-loop``: the threshold is checked before each request
    and the sources read name no guard, so when what must stay (the kept tail, an unresolved pending turn the harness
    keeps whole) holds the context over it, coder compacts again at the next request (``csim check`` at 10,000
    examples).
    """

    TUNABLE = {
        "compression_threshold": "20:95:5",
    }
    TUNABLE_NATIVE = {
        "compression_threshold": "compression_threshold: {value} (the chat model config, percent)",
    }

    Config = CoderConfig
    known_deviations = frozenset({"revert-resolution", "compaction-loop"})
    deviation_reasons = {
        "revert-resolution": (
            "coder knows nothing of reverts: a change compacted away is not brought back for its revert"
        ),
        "compaction-loop": (
            "the threshold is checked before each request and the sources read name no guard: what must stay (the kept"
            " tail, a pending turn) can hold it over on consecutive turns"
        ),
    }

    def threshold_percent(self, state: RunState) -> int:
        pct = self.config.compression_threshold
        if pct is not None:
            return pct
        return LARGE_CONTEXT_THRESHOLD if state.model.context_window >= LARGE_CONTEXT else COMPRESSION_THRESHOLD

    def over_trigger(self, state: RunState) -> bool:
        return client_estimate(state) * 100 >= self.threshold_percent(state) * state.model.context_window

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        start = tail_by_tokens(state, self.config.keep_recent_tokens)
        return summary_plan(state, start, SummaryRequest(prompt=SUMMARY_PROMPT, role="user"))
