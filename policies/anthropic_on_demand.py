"""The Anthropic API's on-demand compaction (beta ``compact-2026-09-04``), at once and in the background.

Sources read (for facts; nothing here is copied from them): the documentation pages
``platform.claude.com/docs/en/build-with-claude/compaction`` (the overview: on-demand compaction is the one to use
wherever it is available; the client decides when, by sending a request; the returned block goes first in
``messages``, in place of the messages it summarises) and ``.../build-with-claude/compaction-background`` (the
background loop, quoted in :class:`AnthropicBackgroundCompaction`), and ``reference/field-2026.md`` §3 (the request
parameter ``"compaction": {"type": "summarize"}`` returns only a compaction block that replaces every message sent;
it is not combined with ``context_management``; the API rejects a compaction request that ends in an open tool
call; there is no keep parameter: the client picks the cut, and what it keeps it sends verbatim after the block).

The server writes the summary (catalogue §G3: opaque); the mock summariser stands for it, in ``<summary>`` tags as
``anthropic-compaction``'s. The client's own threshold is not the API's: the documentation leaves it to the client.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies._tail import client_estimate
from policies.anthropic_api import COMPACTION_PROMPT, TOKENS, block_decision
from policies.base import Plan, Policy, Trigger, register
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

#: Ours: the client's threshold, set to the documented default of the API's own trigger (``compact_20260112``'s
#: 150,000 input tokens), so the on-demand and threshold variants compact at the same size by default.
TRIGGER_TOKENS = 150_000


@dataclass(frozen=True)
class OnDemandConfig:
    """The client's side of on-demand compaction.

    Attributes:
        trigger_tokens: the client asks for a compaction when its estimate of the next prompt (the last response's
            reported prompt and output, plus a quarter of the characters appended since) reaches this; ours, 150,000
            (:data:`TRIGGER_TOKENS`).
    """

    trigger_tokens: int = field(default=TRIGGER_TOKENS, metadata=TOKENS)

    def __post_init__(self) -> None:
        if self.trigger_tokens < 1:
            raise InvalidConfig(f"trigger_tokens={self.trigger_tokens!r} must be at least 1")


@register("anthropic-on-demand-compaction")
class AnthropicOnDemandCompaction(Policy[OnDemandConfig]):
    """Anthropic on-demand compaction (compact-2026-09-04): the client asks at 150,000 tokens, and the block replaces
    every message it sent.

    * **When**, before each model call: the client's estimate at or over ``trigger_tokens``. The log then ends with a
      user message or tool results, never an open tool call (which the API rejects).
    * **What**: the whole history sent, the previous block included, becomes one compaction block (an assistant
      message in ``<summary>`` tags), first in ``messages``; the model then answers from it (mid tool loop afresh,
      its thinking included, which the replay's next scripted reply stands for).

    Known deviations: ``live-turn``, the block replaces the user's latest message with the rest; ``compaction-loop``,
    the client of the documentation's loop asks whenever its estimate is over its threshold, and nothing there
    stops a request that cannot come under it (here: an unresolved pending turn the harness keeps whole). The harness's
    contracts hold here as in ``anthropic-compaction``: an unresolved pending turn is never summarised and a revert
    of a change already summarised rolls the view back. A compaction that would not shrink the view is skipped.
    """

    TUNABLE = {
        "trigger_tokens": "50000:180000:10000",
    }

    Config = OnDemandConfig
    known_deviations = frozenset({"live-turn", "compaction-loop"})
    deviation_reasons = {
        "live-turn": "the compaction block replaces every message sent, the user's latest included",
        "compaction-loop": (
            "the documented loop asks for a compaction whenever the client's estimate is over its threshold; nothing "
            "stops one that what must stay keeps over it"
        ),
    }

    def over_trigger(self, state: RunState) -> bool:
        return client_estimate(state) >= self.config.trigger_tokens

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        return block_decision(self, state, trigger, 0, COMPACTION_PROMPT)


@register("anthropic-background-compaction")
class AnthropicBackgroundCompaction(AnthropicOnDemandCompaction):
    """Anthropic background compaction: the on-demand request sent at 150,000 tokens while work goes on, its block
    swapped in for exactly the messages it held.

    The documentation's loop (``compaction-background``), as the engine's background timing carries it out
    (``sim.replay.background``): the compaction request is sent with the history as it stands and the number of
    messages it held is recorded; the conversation goes on with the full history, only appended to, and no other
    compaction is asked for until this one is swapped in; when the block arrives those messages are dropped from
    the front and the block put in their place, every later turn staying after it; the swapped history is sent
    on the first request after the block arrives. The block arrives 86.4 s after the request on the run's clock
    (the engine's figure from recorded compactions; the API publishes none), or sooner when a request would not fit
    without it (a client has no other way out). Decisions, trigger and deviations are those of
    ``anthropic-on-demand-compaction``.
    """

    timing = "background"
    # Under way, no second compaction is asked for (the documented swap), and what lands is stale by what came since:
    # the loop of the on-demand client is not this one's (csim check shows none).
    known_deviations = frozenset({"live-turn"})
    deviation_reasons = {"live-turn": AnthropicOnDemandCompaction.deviation_reasons["live-turn"]}
