"""Each agent request's prompt as cache blocks, kept between requests, and billed by the run's cache model.

A request renders as: one head block (the request overhead and the tool definitions: the first thing a
provider hashes), then one block per part of every message the view sends (the first block of a message also
carries the message's overhead), one block per summary or injected message, and last the run-status line when
the policy's system appends one. Block sizes are the engine's token counts, so a request's blocks sum to its
prompt tokens exactly (a test holds them together). Keys chain content identities (:func:`sim.core.cache.chain`),
so a block's key stands for everything before it.

The blocks are kept from one request to the next: a request that only grew adds its new messages' blocks, and
a compaction drops the blocks from the first place the new layout differs from the old one
(:func:`sim.replay.request.common_units`) and rebuilds what follows. Billing then reads only near the
breakpoints (:class:`sim.core.cache.Prompt`), so caching adds O(new messages) per request.

Breakpoints: for Anthropic the policy's :class:`~sim.core.cache.CachePlacement` (the system prompt's last block
and the last block before the status line); for OpenAI GPT-5.6 and later the ends of user, system and tool
messages (the provider's eligible message endings; we mark every tool message, not only the last of a group of
parallel results, which shortens its 20-message lookback where a turn has several tool messages); the other
models take none.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from sim.core.cache import (
    TTL,
    AnthropicCache,
    CacheModel,
    CachePlacement,
    CacheUsage,
    OpenAIBreakpointCache,
    Prompt,
    chain,
)
from sim.core.clock import Step, classify_tool, recorded_times, synthetic_times
from sim.core.conversation import Message
from sim.core.state import Ledger
from sim.core.view import Item, Messages, Rule, View, layout
from sim.replay.model import MESSAGE_OVERHEAD
from sim.replay.request import common_units

#: (content identity, tokens) of each block of one message as rules edit it: the engine's, memoised.
MessageBlocks = Callable[[int, tuple[Rule, ...]], Sequence[tuple[object, int]]]
_ELIGIBLE_ROLES = frozenset({"user", "system", "tool"})


class RequestCache:
    """The blocks of one run's latest request and the provider cache that bills them."""

    def __init__(
        self,
        model: CacheModel,
        placement: CachePlacement,
        ledger: Ledger,
        has_system: bool,
        message_blocks: MessageBlocks,
        count: Callable[[str], int],
    ) -> None:
        self.model, self.placement, self.ledger, self.has_system = model, placement, ledger, has_system
        self._message_blocks, self._count = message_blocks, count
        self._marks = (
            "placement"
            if isinstance(model, AnthropicCache)
            else "eligible"
            if isinstance(model, OpenAIBreakpointCache)
            else None
        )
        self._keys: list[int] = []
        self._cum: list[int] = []
        self._unit_end: list[int] = []  # blocks after each layout unit (a message, summary or injected message)
        self._eligible: list[int] = []  # block indices that end an eligible message (OpenAI GPT-5.6+)
        self._view: View | None = None
        self._head: tuple[int, bool] | None = None
        self._n = 0

    def copy(self, ledger: Ledger) -> RequestCache:
        """This cache, entries and blocks included, over ``ledger`` (a copy of this one's)."""
        other = copy.copy(self)
        other.ledger, other.model = ledger, self.model.copy()
        other._keys, other._cum = list(self._keys), list(self._cum)
        other._unit_end, other._eligible = list(self._unit_end), list(self._eligible)
        return other

    def usage(
        self, view: View, head_tokens: int, grace: bool, status: str | None, status_tokens: int, now: float
    ) -> CacheUsage:
        """What the provider bills for the request of ``view`` sent at ``now`` (seconds): its prompt tokens
        (``head_tokens`` of overhead and tools, the view, ``status_tokens`` of status line) by how they are
        billed. Updates the cache's entries."""
        self._sync(view, head_tokens, grace)
        keys, cum = self._keys, self._cum
        last = len(keys) - 1
        marks: list[int] = []
        ttls: list[TTL] = []
        if self._marks == "placement":
            system = self._unit_end[0] - 1 if self.has_system and self._unit_end else 0
            for pos, ttl in ((system, self.placement.system), (last, self.placement.last)):
                if ttl is not None and pos not in marks:
                    marks.append(pos)
                    ttls.append(ttl)
        elif self._marks == "eligible":
            marks = self._eligible
        if status:
            keys.append(chain(keys[-1], ("status", status)))
            cum.append(cum[-1] + status_tokens)
            if self._marks == "eligible":  # the status line is a user message; the model reads the first
                marks = [*marks[:1], *marks[max(1, len(marks) - 32) :], len(keys) - 1]  # and the newest 21
        try:
            return self.model.bill(Prompt(keys, cum, marks, ttls), now)
        finally:
            if status:
                keys.pop()
                cum.pop()

    # -- keeping the blocks ----------------------------------------------------------------------------
    def _sync(self, view: View, head_tokens: int, grace: bool) -> None:
        n = len(self.ledger.messages)
        if self._view is None or self._head != (head_tokens, grace):
            self._head = (head_tokens, grace)
            self._keys, self._cum = [chain(0, ("head", head_tokens, grace))], [head_tokens]
            self._unit_end, self._eligible = [], []
            self._feed(layout(view, n, self.has_system), 0)
        elif view is self._view:  # the same view: only messages appended since, all in its tail
            msgs = self.ledger.messages
            for i in range(max(self._n, view.start), n):
                self._add(self._message_blocks(i, view.rules_at(i)), msgs[i].role in _ELIGIBLE_ROLES)
        else:
            new = layout(view, n, self.has_system)
            same = min(common_units(layout(self._view, n, self.has_system), new), len(self._unit_end))
            end = self._unit_end[same - 1] if same else 1
            del self._keys[end:], self._cum[end:], self._unit_end[same:]
            while self._eligible and self._eligible[-1] >= end:
                self._eligible.pop()
            self._feed(new, same)
        self._view, self._n = view, n

    def _feed(self, items: list[Item], skip: int) -> None:
        """Add the blocks of ``items`` after their first ``skip`` layout units."""
        msgs = self.ledger.messages
        for item in items:
            if isinstance(item, Messages):
                size = item.b - item.a
                if skip >= size:
                    skip -= size
                    continue
                for i in range(item.a + skip, item.b):
                    self._add(self._message_blocks(i, item.rules), msgs[i].role in _ELIGIBLE_ROLES)
            elif skip:
                skip -= 1
                continue
            else:
                tokens = MESSAGE_OVERHEAD + self._count(item.text)
                self._add((((type(item).__name__, item.role, item.text), tokens),), item.role == "user")
            skip = 0

    def _add(self, blocks: Sequence[tuple[object, int]], eligible: bool) -> None:
        keys, cum = self._keys, self._cum
        for content, tokens in blocks:
            keys.append(chain(keys[-1], content))
            cum.append(cum[-1] + tokens)
        self._unit_end.append(len(keys))
        if eligible and blocks:
            self._eligible.append(len(keys) - 1)


def message_times(messages: Sequence[Message], seed: int, output_tokens: Callable[[Message], int]) -> tuple[float, ...]:
    """When each message is complete, in seconds (:mod:`sim.core.clock`): the recording's timestamps when its
    messages carry them (``meta["timestamp"]``), else seeded synthetic durations from the run's seed.

    A request answered by message ``k`` starts at ``times[k - 1]``."""
    stamps = [m.meta.get("timestamp") for m in messages]
    if any(stamps):
        return recorded_times(stamps).seconds
    calls = {p.call_id: (p.name or "", p.args or "") for m in messages for p in m.calls if p.call_id}
    steps = [
        Step(
            m.role,
            output_tokens(m) if m.role == "assistant" else 0,
            tuple(classify_tool(*calls.get(p.call_id or "", (p.name or "", ""))) for p in m.results)
            if m.role == "tool"
            else (),
        )
        for m in messages
    ]
    return synthetic_times(steps, seed)
