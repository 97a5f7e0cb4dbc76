"""Background compaction (``Policy.timing = "background"``): the summary is made from the view as it stands, and
swapped in later, while the agent goes on with the whole history.

The systems that do this: GitHub Copilot's infinite sessions (compaction starts in the background at 0.80 of the
window and the session blocks at 0.95 until it is done: ``InfiniteSessionConfig``), the Anthropic API's background
compaction (keep working on the full history, start no other compaction until the result is swapped in, then drop
exactly the prefix that was sent: platform.claude.com ``build-with-claude/compaction-background``) and Claude Code's
precomputed compaction (``anthropics/claude-code`` #70459: a stale precompute keeps some 200,000 tokens verbatim,
cache-written rather than read). ``reference/field-2026.md`` §3 and N6 name the sources.

What the engine does, and why each step is so:

* **Start**: the policy's automatic summarising plan is made as usual, the summariser request sent and billed then
  (:func:`sim.replay.compaction.summary_of`, on the view at the start); nothing changes in the view. The summary is
  done :data:`SUMMARY_SECONDS` later on the run's clock: what the two compactions of the shared Claude Code sessions
  took from the summary request to the summary (86.5 and 86.2 s; ``../shared/recorded/claude-code/*/subagents/
  agent-acompact-*.jsonl``, prompts of some 169,000 tokens, summaries of some 14,000 characters, Opus 4.6). A fixed
  time, not one from the mock summary's length: the mock writes 1,000 to 3,500 characters where those summaries
  have 14,000, so :class:`sim.core.clock.ClockParams`' model of a call (2 s + 0.02 s per output token), which gives
  74 to 82 s for the real summaries, would give a few seconds for the mock's.
* **Meanwhile** the policy is not asked for another automatic compaction (as the Anthropic API asks of a client).
* **Swap**: before the first request that starts once the summary is done, or before the first request the policy
  says cannot go without it (:meth:`policies.base.Policy.must_wait`) or that would not fit the window (the client
  waits for the summary rather than fail), the view the summary made is swapped in. A view names a
  prefix of the log and keeps an open-ended tail, so everything that came in since the start stays verbatim after
  the summary: the summary is stale by those messages (:class:`sim.core.log.Staleness`: how many, their tokens and
  how long the agent waited). The first request after the swap writes the new prefix to the cache, the stale tail
  included; the compactions table's ``cost_usd`` counts that write with the summariser call.
* **Cancelled**: a ``/compact`` or a rollback while one is under way drops it (what it summarised is no longer the
  view it would land on); so does a turn it would take that became an unresolved pending turn since it started
  (a reply that asks the user, after a start that summarised its turn: nothing of a pending turn is compacted); a run
  that ends first never uses it. Its summariser request stays billed either way: the
  requests table keeps it under its ``compaction_id``, with no compaction of that id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.core.log import Staleness
from sim.core.view import View

if TYPE_CHECKING:
    from sim.replay.engine import Engine

#: Seconds from a background summary's request to its summary (the module docstring gives the source).
SUMMARY_SECONDS = 86.4


@dataclass(frozen=True)
class UnderWay:
    """A background compaction made and not yet swapped in."""

    cid: str
    mode: str
    before: View  # the view it was made from
    view: View  # the view it makes (an open-ended tail: later messages follow the summary)
    summarised: tuple[int, int]
    turn: int  # the turn it was started at
    messages: int  # the log's length then
    ready: float  # when its summary is done, in seconds on the run's clock


def start(e: Engine, before: View, view: View, cid: str, mode: str, summarised: tuple[int, int]) -> None:
    """Compaction ``cid`` (``before`` -> ``view``, its summary made) starts in the background now."""
    done = e.clock.compaction_time() + SUMMARY_SECONDS
    e.background = UnderWay(cid, mode, before, view, summarised, e.state.turn, len(e.ledger.messages), done)


def due(e: Engine) -> float | None:
    """The seconds the agent waits for the background compaction under way before the request about to start, when
    it is swapped in now: its summary is done by then, the policy cannot send this request without it, or the
    request would not fit the window (the client waits rather than fail); else None (nothing under way, or not
    yet)."""
    b = e.background
    if b is None:
        return None
    now = e.clock.compaction_time()
    if now < b.ready and not e.policy.must_wait(e.state) and e.prompt_fits():
        return None
    return max(0.0, b.ready - now)


def staleness(e: Engine, b: UnderWay, waited: float) -> Staleness:
    """What came in between ``b``'s start and now, kept verbatim after its summary, and the wait."""
    n, tp = len(e.ledger.messages), e.ledger.tokens_prefix
    return Staleness(b.turn, n - b.messages, tp[n] - tp[b.messages], round(waited, 6))


__all__ = ["UnderWay", "due", "staleness", "start"]
