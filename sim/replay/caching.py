"""Each agent request's prompt (and a forked summariser request's) as cache blocks, kept between requests, and billed
by the run's cache model.

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

With a calibration (``csim calibrate``: the provider's count is ``fixed + per_message x messages +
per_call_id_token x call-id tokens + scale x tokens``), the blocks carry the provider's count: the head carries the
fixed part (the hidden system prompt and tool schemas sit at the front of the prompt, where the cache holds them),
each message its per-message part and its tool calls' and results' ids, and every block is scaled; prefix sums are
rounded as the whole prompt's count is. ``after_compaction`` is counted as uncached input at the end: where in the
prompt it sits is not known.

Warm start: the agent's system prompt and tools are the same in all its sessions, so when a session starts their
cache entry is already live elsewhere (the first request of the recorded Claude Code session fa812bfe reads
17,842 tokens). With a system breakpoint, the first request is preceded by one on the head and system blocks
alone, its bill discarded.

Client rebuilds: Claude Code answers a background task's completion (a user message the importer marks
``meta["task_notification"]``) with a request whose conversation the cache no longer matches: it reads only the
tools and system prompt and writes the whole conversation again, though the transcript before it is unchanged.
Reported in anthropics/claude-code#64901 (cache read collapses "to the system+tools floor" after async task
notifications) and #87215 (full re-writes "immediately after a task-notification user record"); in both shared
Claude Code recordings all three notifications do it (2.1.39, Opus 4.6: 21,460 and 21,496 tokens read, the rest
written) and no other request does. It is a client behaviour with nothing fitted, so it is kept as the reports
describe it: every block after the system prompt (after the head without one) is keyed anew from that request
on, and later requests read the entries it wrote.

Summariser requests: a policy whose client forks its agent request to summarise (``Policy.summary_call``
``fork``: ``claude-code`` and its microcompact variant, ``codex-remote``; each names its source) sends the view the
agent would send, its tools included and no status line, with the summary instruction appended as a last user
message. It is billed here like an agent request, at the moment of the compaction: the blocks are synced to that
view (usually the last request's, grown by the messages since: O(new messages)), so it reads what the cache still
holds of the last request's prefix (nothing past an expired TTL), writes at the policy's breakpoints what is new
since, and the instruction, in the place of the status line, sits after the last Anthropic breakpoint (uncached)
and is an eligible message ending for OpenAI GPT-5.6+. Every other summariser request (``separate``, and any with
``--cache off``) is a prompt of its own, the transcript under the instruction, billed as uncached input.

Caching off (``--cache off``, or a model the provider caches nothing for): no blocks are kept, and the engine bills
each prompt whole as uncached input; the blocks catch up from where they were if a later request's model caches.

Breakpoints: for Anthropic the policy's :class:`~sim.core.cache.CachePlacement` (the system prompt's last block
and the last block before the status line); for OpenAI GPT-5.6 and later the ends of user, system and tool
messages (the provider's eligible message endings; we mark every tool message, not only the last of a group of
parallel results, which shortens its 20-message lookback where a turn has several tool messages); the other
models take none.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

from sim.core.cache import (
    TTL,
    AnthropicCache,
    CacheModel,
    CachePlacement,
    CacheUsage,
    NoCache,
    OpenAIBreakpointCache,
    Prompt,
    chain,
)
from sim.core.conversation import Message
from sim.core.counting import Coefficients
from sim.core.model import MESSAGE_OVERHEAD
from sim.core.state import Ledger
from sim.core.view import Item, Messages, Rule, View, call_id_tokens, layout
from sim.replay.request import common_units

#: (content identity, tokens) of each block of a message as rules edit it: the engine's, memoised.
MessageBlocks = Callable[[Message, tuple[Rule, ...]], Sequence[tuple[object, int]]]
_ELIGIBLE_ROLES = frozenset({"user", "system", "tool"})
#: The message meta key of a request at which the client re-sends its conversation unmatched (see above).
REBUILD_MARK = "task_notification"


class RequestCache:
    """The blocks of one run's latest request and the provider cache that bills them."""

    def __init__(
        self,
        model: Callable[[str], CacheModel],
        placement: CachePlacement,
        ledger: Ledger,
        has_system: bool,
        message_blocks: MessageBlocks,
        count: Callable[[str], int],
        calibration: Coefficients | None = None,
    ) -> None:
        self.placement, self.ledger, self.has_system = placement, ledger, has_system
        self._message_blocks, self._count, self._cal = message_blocks, count, calibration
        self._new_model = model
        self.models: dict[str, CacheModel] = {}  # one per model name: the provider keeps caches per model
        self._keys: list[int] = []
        self._raw: list[int] = []  # the engine's tokens through each block
        self._cum: list[int] = self._raw  # the provider's: a list of its own with a calibration
        self._unit_end: list[int] = []  # blocks after each layout unit (a message, summary or injected message)
        self._ids: list[int] = []  # tokens of call ids through each layout unit (a calibration's)
        self._adding = 0  # the call-id tokens of the unit being added
        self._eligible: list[int] = []  # block indices that end an eligible message (OpenAI GPT-5.6+)
        self._view: View | None = None
        self._head: tuple[int, bool] | None = None
        self._n = 0
        self._rebuilds = 0  # task notifications so far: salts the key of the first block after the system prompt

    def copy(self, ledger: Ledger) -> RequestCache:
        """This cache, entries and blocks included, over ``ledger`` (a copy of this one's)."""
        other = copy.copy(self)
        other.ledger = ledger
        other.models = {name: m.copy() for name, m in self.models.items()}
        other._keys, other._raw = list(self._keys), list(self._raw)
        other._cum = other._raw if self._cal is None else list(self._cum)
        other._unit_end, other._eligible = list(self._unit_end), list(self._eligible)
        other._ids = list(self._ids)
        return other

    def usage(
        self,
        view: View,
        head_tokens: int,
        grace: bool,
        status: str | None,
        status_tokens: int,
        now: float,
        model_name: str,
        tail_kind: str = "status",
    ) -> CacheUsage:
        """What the provider bills for the request of ``view`` sent to ``model_name`` at ``now`` (seconds): its
        prompt tokens (``head_tokens`` of overhead and tools, the view, ``status_tokens`` of status line) by how
        they are billed. Updates that model's cache entries.

        ``status`` is the request's last message, after the last breakpoint the policy places: the run-status
        line, or with ``tail_kind="instruction"`` a forked summariser request's instruction (see "Summariser
        requests" above)."""
        model = self.models.get(model_name)
        fresh = model is None
        if model is None:
            model = self.models[model_name] = self._new_model(model_name)
        kind = (
            "placement"
            if isinstance(model, AnthropicCache)
            else "eligible"
            if isinstance(model, OpenAIBreakpointCache)
            else None
        )
        warm = fresh and kind == "placement"
        if isinstance(model, NoCache):  # nothing is cached: no blocks to keep (the engine bills the whole prompt)
            return model.bill(Prompt((), ()), now)
        self._sync(view, head_tokens, grace)
        keys, cum = self._keys, self._cum
        last = len(keys) - 1
        system = self._unit_end[0] - 1 if self.has_system and self._unit_end else 0
        if warm and self.placement.system is not None:  # see "Warm start" above
            model.bill(Prompt(keys[: system + 1], cum[: system + 1], [system], [self.placement.system]), now)
        marks: list[int] = []
        ttls: list[TTL] = []
        if kind == "placement":
            for pos, ttl in ((system, self.placement.system), (last, self.placement.last)):
                if ttl is not None and pos not in marks:
                    marks.append(pos)
                    ttls.append(ttl)
        elif kind == "eligible":
            marks = self._eligible
        if status:
            self._push(chain(keys[-1], (tail_kind, status)), status_tokens, new_unit=False)
            if kind == "eligible":  # the status line is a user message; the model reads the first
                marks = [*marks[:1], *marks[max(1, len(marks) - 32) :], len(keys) - 1]  # and the newest 21
        try:
            return model.bill(Prompt(keys, cum, marks, ttls), now)
        finally:
            if status:
                self._pop()

    # -- keeping the blocks ----------------------------------------------------------------------------
    def _sync(self, view: View, head_tokens: int, grace: bool) -> None:
        n = len(self.ledger.messages)
        rebuilds = self._rebuilds + sum(1 for m in self.ledger.messages[self._n : n] if m.meta.get(REBUILD_MARK))
        rebuilt, self._rebuilds = rebuilds != self._rebuilds, rebuilds
        if self._view is None or self._head != (head_tokens, grace):
            self._head = (head_tokens, grace)
            self._keys, self._raw, self._unit_end, self._eligible, self._ids = [], [], [], [], []
            self._cum = self._raw if self._cal is None else []
            self._push(chain(0, ("head", head_tokens, grace)), head_tokens, new_unit=False)
            self._feed(layout(view, n, self.has_system), 0)
        elif view is self._view and not rebuilt:  # the same view: only messages appended since, all in its tail
            msgs = self.ledger.messages
            for i in range(max(self._n, view.start), n):
                self._add_message(msgs[i], view.rules_at(i))
        else:
            new = layout(view, n, self.has_system)
            same = min(common_units(layout(self._view, n, self.has_system), new), len(self._unit_end))
            if rebuilt:  # everything after the system prompt is keyed anew
                same = min(same, int(self.has_system))
            end = self._unit_end[same - 1] if same else 1
            del self._keys[end:], self._raw[end:], self._unit_end[same:], self._ids[same:]
            if self._cal is not None:
                del self._cum[end:]
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
                    self._add_message(msgs[i], item.rules)
            elif skip:
                skip -= 1
                continue
            else:
                tokens = MESSAGE_OVERHEAD + self._count(item.text)
                self._add((((type(item).__name__, item.role, item.text), tokens),), item.role == "user")
            skip = 0

    def _add_message(self, m: Message, rules: tuple[Rule, ...]) -> None:
        framed = self._cal is not None and self._cal.per_call_id_token  # (with a calibration, no anchors: raw counts)
        ids = call_id_tokens(m, self._count, rules) if framed else 0
        self._add(self._message_blocks(m, rules), m.role in _ELIGIBLE_ROLES, ids)

    def _add(self, blocks: Sequence[tuple[object, int]], eligible: bool, ids: int = 0) -> None:
        keys = self._keys
        salt = self._rebuilds if len(self._unit_end) == int(self.has_system) else 0  # the first unit after it
        self._adding = ids
        for k, (content, tokens) in enumerate(blocks):
            self._push(chain(keys[-1], (REBUILD_MARK, salt, content) if salt and k == 0 else content), tokens, k == 0)
        self._unit_end.append(len(keys))
        self._ids.append((self._ids[-1] if self._ids else 0) + ids)
        self._adding = 0
        if eligible and blocks:
            self._eligible.append(len(keys) - 1)

    def _push(self, key: int, tokens: int, new_unit: bool) -> None:
        raw = self._raw
        raw.append((raw[-1] if raw else 0) + tokens)
        self._keys.append(key)
        c = self._cal
        if c is not None:  # the provider's count of this prefix, as Calibration.apply counts a whole prompt
            units = len(self._unit_end) + new_unit
            ids = (self._ids[-1] if self._ids else 0) + self._adding
            x = math.floor(c.fixed + c.per_message * units + c.per_call_id_token * ids + c.scale * raw[-1] + 0.5)
            self._cum.append(max(x, self._cum[-1] if self._cum else 0))

    def _pop(self) -> None:
        self._keys.pop()
        self._raw.pop()
        if self._cal is not None:
            self._cum.pop()


def placement_with_ttl(placement: CachePlacement, ttl: str) -> CachePlacement:
    """The policy's breakpoints with the run's TTL (``cache_ttl``; ``policy``: as the policy places them)."""
    if ttl == "policy":
        return placement
    chosen: TTL = "1h" if ttl == "1h" else "5m"
    return CachePlacement(chosen if placement.system else None, chosen if placement.last else None)
