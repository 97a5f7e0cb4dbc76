"""Retention: which of the facts a conversation establishes each request's view still shows, where they are needed.

A fact (:class:`sim.core.conversation.Fact`) has a source message and the messages that need it. When a needing
message enters the log, the fact is due: the next agent request judges it visible or lost (:meth:`Retention.judge`)
and records one row (the ``facts`` table). A fact is visible when the view's summary or an injected message carries
it (by id, or, for an injected message, its text, as a re-attached file does), or when the view shows its source
message, or a copy of it the reactive agent made (:class:`sim.replay.reactive.Reactions`), or one of its carriers
(another message holding the same text, :attr:`~sim.core.conversation.Fact.carriers`: a re-read, a recorded summary
restating it), with a part that still holds the fact's text in its text or a tool call's arguments (not replaced,
dropped or truncated away). A mined probe (:mod:`sim.formats.probes`) is also visible when the summary's text holds
its text verbatim. A fact bounded away as its source entered the log (a truncated tool result) is lost from the
start, unless a carrier shows it later.

Each row also says the fact's compaction round: how many compactions (rollbacks included: each is a compaction
record of the log) came between its source entering the log and the request that needs it, 0 when none did. The
engine tells of each one through :meth:`Retention.compacted`. Recall by round says whether a policy keeps what
it has compacted once and loses it over several, as a summary of a summary does.

What a compaction loses (:meth:`Retention.lost`) is tested only on the facts whose visibility it can have changed,
so a compaction costs the size of what it touched, not of the conversation.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.invariants import edited_ranges, minus, ranges
from sim.core.state import Ledger
from sim.core.tokenizers import Memo, memoised
from sim.core.view import ByView, Injected, TruncateFn, View, edit_parts, rule_for
from sim.replay.reactions import Reactions

FactIndex = tuple[dict[str, list[Fact]], dict[str, list[Fact]], dict[str, Fact]]


def fact_index(conv: Conversation) -> FactIndex:
    """Facts by the message that needs them, by source message, and by id. Built once per conversation and
    worker (:func:`memoised`): a sweep runs many configurations over one conversation object, and a run that
    stops early should not pay for indexing all of it each time."""
    by_need: dict[str, list[Fact]] = {}
    by_source: dict[str, list[Fact]] = {}
    for f in conv.facts:
        for n in f.needed_at:
            by_need.setdefault(n, []).append(f)
        by_source.setdefault(f.source, []).append(f)
    return by_need, by_source, {f.id: f for f in conv.facts}


class Retention:
    """One run's facts: which are due, which were lost on entry, and what each request showed of them."""

    def __init__(
        self,
        conversation: Conversation,
        memo: Memo,
        ledger: Ledger,
        reactions: Reactions,
        has_system: bool,
        truncate: TruncateFn,
    ) -> None:
        self.by_need, self.by_source, self.by_id = memoised(memo, conversation, "facts", fact_index)
        self.by_carrier: dict[str, list[Fact]] = memoised(memo, conversation, "fact-carriers", _carrier_index)
        self.by_text: TextIndex = memoised(memo, conversation, "fact-texts", _text_index)
        self.mined_by_text: TextIndex = memoised(memo, conversation, "mined-texts", _mined_text_index)
        self.facts = conversation.facts
        self.ledger, self.reactions, self.has_system, self.truncate = ledger, reactions, has_system, truncate
        self.lost_on_entry: set[str] = set()
        #: Facts needed by messages appended since the last agent request, judged at the next one.
        self.due: list[Fact] = []
        self.needed = self.visible = 0
        #: Per fact kind: [needed, visible].
        self.by_kind: dict[str, list[int]] = {}
        #: One row per (fact, request that needed it): kind, age in messages since its source, its compaction
        #: round, visible or not.
        self.rows: list[dict[str, Any]] = []
        #: The log's length at each compaction, oldest first: a source at index ``i`` went through those after it.
        self.compacted_at: list[int] = []
        #: The facts each injected message carries (by id or text), and the last few views' (by id, holding the view):
        #: a view keeps the messages an earlier one injected (the study's checkpoints pile up), so each is read once.
        self._carried: dict[Injected, frozenset[str]] = {}
        self._view_carried: ByView[frozenset[str]] = ByView()

    def copy(self, ledger: Ledger, reactions: Reactions) -> Retention:
        """This record over a copied run's ``ledger`` and ``reactions``."""
        other = Retention.__new__(Retention)
        other.__dict__.update(self.__dict__)
        other.ledger, other.reactions = ledger, reactions
        other.lost_on_entry, other.due, other.rows = set(self.lost_on_entry), list(self.due), list(self.rows)
        other.compacted_at = list(self.compacted_at)
        other.by_kind = {k: list(v) for k, v in self.by_kind.items()}
        return other

    def entered(self, m: Message) -> None:
        """``m`` was appended: its facts bounded away on entry are lost, and those it needs are due."""
        for f in self.by_source.get(m.id, ()):
            if not any(_holds(p, f.text) for p in m.parts):
                self.lost_on_entry.add(f.id)  # bounded away on entry (or never present)
        self.due.extend(self.by_need.get(m.id, ()))

    def judge(self, view: View, turn: int) -> tuple[int, int]:
        """Judge every due fact against ``view``, the prompt of the agent request being sent at ``turn``: one row
        each; returns how many were needed and how many visible."""
        due, self.due = self.due, []
        visible = 0
        n = len(self.ledger.messages)
        for f in due:
            ok = self.visible_in(f, view)
            visible += ok
            k = self.by_kind.setdefault(f.kind, [0, 0])
            k[0] += 1
            k[1] += ok
            src = self.ledger.index.get(f.source, 0)  # a source never appended counts from the start, as its age
            self.rows.append(
                {
                    "turn": turn,
                    "fact": f.id,
                    "kind": f.kind,
                    "visible": bool(ok),
                    "age_messages": n - src,
                    "round": len(self.compacted_at) - bisect_right(self.compacted_at, src),
                }
            )
        self.needed += len(due)
        self.visible += visible
        return len(due), visible

    def visible_in(self, f: Fact, view: View) -> bool:
        """Whether ``view`` shows fact ``f`` (see the module docstring)."""
        if view.summary is not None and (f.id in view.summary.facts or (f.mined and f.text in view.summary.text)):
            return True
        if view.injected and f.id in self._carried_by(view):
            return True
        index = self.ledger.index
        if any((c := index.get(cid)) is not None and self._carries(f, c, view) for cid in f.carriers):
            return True
        src = index.get(f.source)
        if src is None or f.id in self.lost_on_entry:
            return False
        if src == 0 and self.has_system:
            return True
        if self._carries(f, src, view):
            return True
        copies = self.reactions.copies.get(f.source)  # a reactive run's re-acquired or restated copies
        return copies is not None and any(self._carries(f, self.ledger.index[c], view) for c in copies)

    def _carries_of(self, x: Injected) -> frozenset[str]:
        """Ids of the facts injected message ``x`` carries: by id, or its text holding theirs. Once per message."""
        hit = self._carried.get(x)
        if hit is None:
            hit = self._carried[x] = x.facts | _facts_in(self.by_text, x.text)
        return hit

    def _carried_by(self, view: View) -> frozenset[str]:
        """Ids of the facts ``view``'s injected messages carry; once per view while it is among the last few."""
        return self._view_carried.get(
            view, "", lambda: frozenset().union(*(self._carries_of(x) for x in view.injected))
        )

    def _carries(self, f: Fact, src: int, view: View) -> bool:
        """Whether ``view`` shows message ``src`` with a part that still holds ``f``'s text."""
        if not view.shows(src):
            return False
        rules = view.rules_at(src)
        if not rules:
            return True
        m = self.ledger.messages[src]
        for old, new in zip(m.parts, edit_parts(m, rules, self.truncate), strict=True):
            if not _holds(old, f.text) or new is None:
                continue
            if new is old or (rule_for(old, rules).action == "truncate" and _holds(new, f.text)):  # type: ignore[union-attr]
                return True
        return False

    def compacted(self, before: View, after: View) -> str:
        """A compaction (or rollback) took the view from ``before`` to ``after``, the log as it is now: counted
        for the rounds of the facts needed later; returns what it lost (:meth:`lost`)."""
        self.compacted_at.append(len(self.ledger.messages))
        return self.lost(before, after)

    def lost(self, before: View, after: View) -> str:
        """Ids of the facts established so far that ``before`` showed and ``after`` does not (comma-joined).

        Only facts whose visibility can have changed are tested: those from messages the compaction may
        have dropped, cleared or unpinned, and those the old summary or injected messages carried (by id or text)."""
        msgs = self.ledger.messages
        n = len(msgs)
        touched = [*minus(ranges(before, n), ranges(after, n)), *edited_ranges(before, after, n)]
        copy_of = self.reactions.copy_of
        candidates = {
            f.id: f
            for a, b in touched
            for i in range(a, b)
            for f in self.by_source.get(copy_of.get(msgs[i].id, msgs[i].id), ())
        }
        carried = self.by_carrier
        candidates.update((f.id, f) for a, b in touched for i in range(a, b) for f in carried.get(msgs[i].id, ()))
        # What the old summary and injected messages carried (as visible_in reads them: by id, or by their text), where
        # the new view no longer holds them: a re-attached file an earlier compaction made and this one leaves out, a
        # probe restated in the old summary. What the new view still holds it still shows.
        kept = set(after.injected)
        for x in before.injected:
            if x not in kept:
                candidates.update((fid, self.by_id[fid]) for fid in self._carries_of(x) if fid in self.by_id)
        if before.summary is not None and before.summary != after.summary:
            old = before.summary
            candidates.update((fid, self.by_id[fid]) for fid in old.facts if fid in self.by_id)
            candidates.update((fid, self.by_id[fid]) for fid in _facts_in(self.mined_by_text, old.text))
        return ",".join(
            sorted(fid for fid, f in candidates.items() if self.visible_in(f, before) and not self.visible_in(f, after))
        )

    def unreached(self, script: list[Message]) -> dict[str, int]:
        """Per fact kind, the needs of the script the run never judged because it stopped first (an overflow, an
        exhausted budget): a need counts where a complete replay judges it, at a message with a reply at or after
        it. A stopped run did not do the rest of its task, so retention counts these as lost."""
        last_reply = max((i for i, m in enumerate(script) if m.role == "assistant"), default=-1)
        out: dict[str, int] = {}
        for m in script[: last_reply + 1]:
            for f in self.by_need.get(m.id, ()):
                out[f.kind] = out.get(f.kind, 0) + 1
        for kind, (needed, _) in self.by_kind.items():
            out[kind] = out.get(kind, 0) - needed
        return {k: v for k, v in sorted(out.items()) if v > 0}


def _holds(p: Part, text: str) -> bool:
    """Whether part ``p`` holds ``text``: in its text, or in a tool call's JSON arguments (a mined probe's use)."""
    return text in p.text or (p.args is not None and text in p.args)


#: Facts with a text by its first :data:`GRAM` characters, those shorter apart, and how many there are.
TextIndex = tuple[dict[str, list[Fact]], list[Fact], int]
GRAM = 3


def _text_index(conv: Conversation, mined_only: bool = False) -> TextIndex:
    """The conversation's facts (or its mined probes alone) for :func:`_facts_in`. Once per conversation."""
    by_gram: dict[str, list[Fact]] = {}
    short: list[Fact] = []
    for f in conv.facts:
        if mined_only and not f.mined:
            continue
        if len(f.text) >= GRAM:
            by_gram.setdefault(f.text[:GRAM], []).append(f)
        elif f.text:
            short.append(f)
    return by_gram, short, sum(map(len, by_gram.values())) + len(short)


def _mined_text_index(conv: Conversation) -> TextIndex:
    """The mined probes alone: a summary's text carries those (:meth:`Retention.visible_in`)."""
    return _text_index(conv, mined_only=True)


def _facts_in(index: TextIndex, text: str) -> frozenset[str]:
    """Ids of the facts whose text ``text`` holds. A text shorter than there are facts (a note an injected message
    makes) is read once, looking up the facts that could start at each position; a longer one is searched for each
    fact's text. The same set either way."""
    by_gram, short, count = index
    if not count:
        return frozenset()
    found = {f.id for f in short if f.text in text}
    if len(text) < count:
        for i in range(len(text) - GRAM + 1):
            for f in by_gram.get(text[i : i + GRAM], ()):
                if text.startswith(f.text, i):
                    found.add(f.id)
    else:
        found.update(f.id for fs in by_gram.values() for f in fs if f.text in text)
    return frozenset(found)


def _carrier_index(conv: Conversation) -> dict[str, list[Fact]]:
    """Facts by the messages that carry their text besides the source (:attr:`Fact.carriers`)."""
    out: dict[str, list[Fact]] = {}
    for f in conv.facts:
        for c in f.carriers:
            out.setdefault(c, []).append(f)
    return out


__all__ = ["FactIndex", "Retention", "fact_index"]
