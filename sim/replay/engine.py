"""Replay a conversation through a policy, request by request, and record everything.

One module because the phases of a replay (append, automatic and manual compaction, the summariser call,
the request and its checks, the budget check) all read and write one run state, and split apart they would
reach into each other's private fields; what is not that loop lives elsewhere (sizes in
:mod:`sim.core.state`, the view's layout in :mod:`sim.core.view`, lockstep in :mod:`sim.replay.lockstep`, the
prompt cache's blocks in :mod:`sim.replay.caching`, anchored sizes in :mod:`sim.calibration.anchor`, the config in
:mod:`sim.core.config`). What stays here of sizing is the per-message measure the ledger, the cache blocks and
the anchors all read, memoised per worker; it is the next piece to move out if the module grows again.

The engine is the imperative shell around pure pieces: the policy decides, :mod:`sim.core.view` says
what the model sees, :mod:`sim.replay.model` renders and validates the request, :mod:`sim.replay.summariser`
answers summariser calls, :mod:`sim.core.invariants` checks each request. It touches no files, clocks or
global random state; all randomness comes from ``numpy.random.SeedSequence([seed, ...])``.

Replay: user and tool messages of the script are appended to the log (tool results bounded by the
policy on entry). Every scripted ``assistant`` message is the reply to one agent request whose
prompt is the view at that moment: before it, the policy may compact; if the provider rejects the
prompt as too long, the policy may compact and retry (``retry_on_overflow`` times) before the run
ends with a context overflow. A ``/compact`` user command asks the policy to compact at once, and
that turn ends without a model call.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from policies.base import AskPoint, Plan, Policy
from sim.calibration.anchor import Anchors, anchors_for
from sim.calibration.fit import opens_with_summary
from sim.calibration.kinds import kind_of
from sim.core.budgets import BudgetTracker
from sim.core.cache import TTL, CachePlacement, CacheUsage, NoCache, cache_model
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.cost import Pricer
from sim.core.errors import InvalidRequest, InvariantViolation, PromptTooLong, UnknownName
from sim.core.invariants import Violation, check_compaction, check_plan, check_view, edited_ranges, minus, ranges
from sim.core.log import (
    BudgetWarned,
    CompactionCreated,
    CompactionFailed,
    MessageAppended,
    RequestSent,
    RunFinished,
    RunLog,
    compaction_rows,
    request_rows,
)
from sim.core.state import Ledger, RunState
from sim.core.tokenizers import CountingTokenizer, Memo, get_tokenizer, memoised
from sim.core.view import Rule, Summary, View, call_id_tokens, edit_parts, fold, rule_for
from sim.replay import model as wire
from sim.replay.caching import RequestCache, message_times
from sim.replay.model import DEFAULT_MODEL, MESSAGE_OVERHEAD, PART_OVERHEAD, REQUEST_OVERHEAD
from sim.replay.reactive import Reactions, react, signals_lost, task_success
from sim.replay.request import RequestBuilder, flat_pieces, head_pieces, tail_pieces
from sim.replay.summariser import summarise


@dataclass
class RunResult:
    """What one run produced: request rows, compactions, violations, the log, and the summary."""

    run_id: str
    policy: str
    params: dict[str, Any]
    params_hash: str
    conversation_id: str
    seed: int
    rows: list[dict[str, Any]]
    compactions: list[dict[str, Any]]
    violations: list[Violation]
    log: RunLog
    summary: dict[str, Any]
    #: One row per (fact, request that needed it): kind, age in messages since its source, visible or not.
    fact_rows: list[dict[str, Any]] = field(default_factory=list)


def run_id_for(policy: Policy[Any], conversation: Conversation, config: RunConfig, memo: Memo | None = None) -> str:
    """A stable id from the policy spec, the conversation id and the seed: same inputs, same id."""
    settings = memoised(memo, config, "asdict", asdict)  # a sweep task starts many runs with one config
    blob = json.dumps([policy.spec(), conversation.id, config.seed, settings], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


class MessageSizes(NamedTuple):
    """What the engine needs to know of a message's size, computed once per message per worker."""

    chars: int
    tokens: int
    calls: int  # tool calls it makes
    content_hash: int  # hash(message) when first seen, for the log's digest chain (sim.core.log)


#: The phases of a message in a replay (Engine._replay).
MESSAGE, MANUAL, AFTER_ROLLBACK, SEND, BUDGET, RESPONSE = range(6)


class _Finished(Exception):
    def __init__(self, reason: str, exhausted: str | None = None) -> None:
        self.reason, self.exhausted = reason, exhausted


class Engine:
    """One run of one policy over one conversation: :meth:`run` replays it whole (as :func:`run` does);
    :meth:`step` takes one message at a time, also messages not in the conversation yet, and :meth:`finish`
    ends it. The conversation gives the facts, the tools and the script's opening."""

    def __init__(
        self,
        policy: Policy[Any],
        conversation: Conversation,
        config: RunConfig | None = None,
        tokenizer: CountingTokenizer | None = None,
    ) -> None:
        config = config or RunConfig()
        self.policy, self.conv, self.config = policy, conversation, config
        self.tok = tokenizer or get_tokenizer(config.tokenizer)
        self.model = config.model
        self._pricers: dict[str, Pricer] = {}
        self.unpriced: set[str] = set()  # recorded models the price table does not know (priced as the default)
        # A reply the recording names no model for was served by the recording's (most frequent) model.
        self._recorded_model: str | None = memoised(self.tok.derived, conversation, "recorded-model", _recorded_model)
        self._model_name = config.model.name or DEFAULT_MODEL  # the model of the latest request
        self.pricer = self._pricer(self._model_name)
        # Usage-anchored accounting (sim.calibration.anchor): recorded messages at the provider's own counts,
        # what the simulator writes estimated. Sizes then depend on the anchors, so they get a memo of their own.
        self.anchors = config.anchors if config.anchors is not None else self._derive_anchors(conversation, config)
        self._memo = (
            self.tok.derived if self.anchors is None else memoised(self.tok.derived, self.anchors, "memo", _new_memo)
        )
        self._estimates: dict[str, int] = {}  # text -> its estimate with anchors: a pure function, shared by copies
        by_ids = (
            config.calibration is not None
            and config.calibration.coefficients.per_call_id_token
            and self.anchors is None
        )
        self.ledger = Ledger(
            sizer=self._edited_sizes, count=self._text_tokens, id_count=self.tok.count if by_ids else None
        )
        self.state = RunState(self.ledger, config.model)
        self.state.view = View(placeholder=policy.placeholder)
        self.state.checkpoints.append(self.state.view)
        self.log = RunLog()
        self.tracker = BudgetTracker(config.budgets)
        self.violations: list[Violation] = []
        self.fact_rows: list[dict[str, Any]] = []
        self.overflows = 0
        self.run_id = run_id_for(policy, conversation, config, self.tok.derived)
        self.status = _appends_status(policy, config)
        self.tools_tokens = sum(
            self.tok.count(t.name) + self.tok.count(t.description) + self.tok.count(t.parameters) + PART_OVERHEAD
            for t in conversation.tools
        )
        self.has_system = bool(conversation.messages) and conversation.messages[0].role == "system"
        self.requests = RequestBuilder(self.ledger, config.model, self.has_system, self.tok.derived, self.tok.truncate)
        cached, provider = config.cache == "provider", config.model.price_provider
        self.cache = RequestCache(
            (lambda name: cache_model(provider, name)) if cached else NoCache,
            _placement(policy.cache_placement, config.cache_ttl),
            self.ledger,
            self.has_system,
            self._message_blocks,
            self._text_tokens,
            config.calibration.coefficients if config.calibration is not None and self.anchors is None else None,
        )
        # The closed-loop agent (sim.replay.reactive): what it did, and whether it acts at all.
        self._reactive = config.agent.reactive
        self.reactions = Reactions()
        self._sent = -1  # the last script reply whose request was sent (task success counts what came after)
        self._times: tuple[float, ...] = ()  # when each script message is complete (sim.replay.caching)
        self._now = 0.0  # when the current request starts
        # The script message at whose completion a compaction happens (None: when the current request starts): what
        # a forked summariser request is billed at (_compaction_time).
        self._clock_at: int | None = None
        self._index: dict[str, int] = {}
        index = memoised(self.tok.derived, conversation, "facts", fact_index)
        self._facts_by_need, self._facts_by_source, self._facts_by_id = index
        # Bounding tool results on entry is skipped for policies that keep them as they are.
        self._bounds = policy.bound_key() is not None
        # Lockstep (run_many): the policies replaying together, and the forks that left, with where.
        self._members: list[Policy[Any]] | None = None
        # The script being replayed (grows when step() is given messages), the next message to take, and how
        # a stepped run ended.
        self._script: list[Message] = list(conversation.messages)
        self._next = 0
        self._outcome: tuple[str, str | None] | None = None
        self._lockstep: Callable[[Engine, int, int], Plan | None] | None = (
            None  # sim.replay.lockstep.sync, set by run_many
        )
        self._forks: list[tuple[Engine, int, int]] = []
        # A replayed segment that starts from a recorded summary is "after a compaction" for calibration.
        self._opens_summarised = config.calibration is not None and opens_with_summary(conversation)
        self._lost_on_entry: set[str] = set()
        self._due: list[Fact] = []
        self._compaction_attempts = 0
        self._last_auto_turn = -10  # the turn of the last link of a compaction loop (_settle_loop)
        self._loop_claim: tuple[str, int] | None = None  # an automatic compaction that may be one, and its turn
        self.retained = {"needed": 0, "visible": 0}
        self.retention_by_kind: dict[str, list[int]] = {}

    def _derive_anchors(self, conversation: Conversation, config: RunConfig) -> Anchors | None:
        """Anchors for a recording with usage under ``accounting="anchored"`` (once per conversation, tokenizer
        and calibration in a worker); None for a conversation without usage (a synthetic scenario)."""
        if config.accounting != "anchored" or not any(m.usage for m in conversation.messages):
            return None
        cal = config.calibration
        key = ("anchors", config.tokenizer, cal)
        return memoised(self.tok.derived, conversation, key, lambda c: anchors_for(c, cal, config.tokenizer))

    # -- sizes ------------------------------------------------------------------------------------
    def _part_tokens(self, p: Part, text: str | None = None, args: str | None = None) -> int:
        """Tokens of part ``p``, or of ``p`` with its text or arguments replaced (an edit)."""
        n = self.tok.count(p.text if text is None else text)
        if p.kind in ("tool_call", "tool_result"):
            n += PART_OVERHEAD + self.tok.count(p.name or "") + self.tok.count((p.args if args is None else args) or "")
        elif p.kind in ("change", "revert", "command"):
            n += PART_OVERHEAD
        return n

    def _sizes(self, m: Message) -> MessageSizes:
        # Memoised per message object in the worker's memo: every configuration a worker runs over the same
        # conversation reuses them, so a sweep pays for a message's sizes once. (memoised() inlined: hot path.)
        key = (id(m), "sizes")  # memoised() written out: this is the hottest lookup of a run
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        sizes = self._measure(m)
        self._memo[key] = (m, sizes)
        return sizes

    def _measure(self, m: Message) -> MessageSizes:
        tokens = self._message_overhead(m) + sum(t for _, _, _, t in self._part_sizes(m, ()))
        return MessageSizes(m.chars, tokens, len(m.calls), hash(m))

    def _raw_tokens(self, m: Message) -> int:
        """The engine's own count of ``m`` (framing included), whatever the anchors say."""
        return MESSAGE_OVERHEAD + sum(self._part_tokens(p) for p in m.parts)

    def _anchor_of(self, m: Message) -> tuple[int, float]:
        """With anchors: ``m``'s provider size and the factor from the engine's count of a part to its share."""
        assert self.anchors is not None
        key = (id(m), "anchor")
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        raw = self._raw_tokens(m)
        ids = call_id_tokens(m, self.tok.count) if self.anchors.coefficients.per_call_id_token else 0
        total = self.anchors.message_tokens(m, raw, ids)
        value = (total, total / raw if raw else 0.0)
        self._memo[key] = (m, value)
        return value

    def _message_overhead(self, m: Message) -> int:
        """A message's framing: the engine's constant, or with anchors what its provider size leaves after its
        parts' shares (parts round down, so it is never negative)."""
        if self.anchors is None:
            return MESSAGE_OVERHEAD
        total, _ = self._anchor_of(m)
        return total - sum(t for _, rule, _, t in self._part_sizes(m, ()) if rule is None)

    def _text_tokens(self, text: str) -> int:
        """Tokens of a text the view adds as a message of its own (summary, injected), framing excluded: the
        ledger's count."""
        if self.anchors is None:
            return self.tok.count(text)
        hit = self._estimates.get(text)
        if hit is None:  # the ratio of its kind (sim.calibration.kinds); asked for on every request that sends it
            hit = self._estimates[text] = (
                self.anchors.estimate_text(self.tok.count(text), kind_of(text)) - MESSAGE_OVERHEAD
            )
        return hit

    def _edited_sizes(self, m: Message, rules: tuple[Rule, ...]) -> tuple[int, int]:
        """Characters and tokens of ``m`` as ``rules`` edit it ((0, 0): not sent); the ledger's sizer."""
        if not rules:
            sz = self._sizes(m)
            return sz.chars, sz.tokens
        key = (id(m), ("sizes", rules))  # memoised() written out: asked for every message a view edits
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        sizes = self._measure_edited(m, rules)
        self._memo[key] = (m, sizes)
        return sizes

    def _measure_edited(self, m: Message, rules: tuple[Rule, ...]) -> tuple[int, int]:
        sizes = self._part_sizes(m, rules)
        if not sizes:
            return 0, 0
        return sum(s[2] for s in sizes), self._message_overhead(m) + sum(s[3] for s in sizes)

    def _part_sizes(self, m: Message, rules: tuple[Rule, ...]) -> list[tuple[int, Rule | None, int, int]]:
        """(index, rule, characters, tokens) of each part of ``m`` that ``rules`` keep, as edited.

        One pass over the parts, counting as sim.core.view.edit_parts edits and sim.core.view.edited_chars
        counts (a test holds them together), without building the edited parts."""
        out: list[tuple[int, Rule | None, int, int]] = []
        a = self.anchors
        f = self._anchor_of(m)[1] if a is not None else 1.0
        for j, p in enumerate(m.parts):
            rule = rule_for(p, rules) if rules else None
            if rule is None:  # with anchors, the part's share of the message's provider size
                t = self._part_tokens(p)
                out.append((j, None, p.chars, t if a is None else math.floor(t * f)))
            elif rule.action == "placeholder":  # text the simulator writes: estimated
                text = rule.placeholder_for(p)
                edit = (None, text) if p.kind == "tool_call" else (text, None)
                t = self._part_tokens(p, *edit)
                out.append((j, rule, len(text), t if a is None else a.scale(t, "prose")))
            elif rule.action == "truncate":
                cut = self.tok.truncate(p.text, rule.max_tokens, rule.head_share, rule.text)
                t = self._part_tokens(p, cut)
                out.append((j, rule, p.chars - len(p.text) + len(cut), t if a is None else a.scale(t, kind_of(cut))))
        return out

    def _message_blocks(self, m: Message, rules: tuple[Rule, ...]) -> tuple[tuple[object, int], ...]:
        """``m`` as ``rules`` edit it, as prompt-cache blocks (sim.replay.caching): one per part kept, keyed by the
        message's content hash, the part's index and the rule that edited it; the first block also carries the
        message's overhead. They sum to the message's tokens. Memoised per message object; reads nothing of the
        run, so a copied engine's cache may keep calling the original's."""
        key = (id(m), ("blocks", rules))
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        h = self._sizes(m).content_hash
        sizes = self._part_sizes(m, rules)
        frame = self._message_overhead(m)
        blocks: tuple[tuple[object, int], ...]
        if sizes:
            blocks = tuple(((h, j, rule), t + (frame if k == 0 else 0)) for k, (j, rule, _, t) in enumerate(sizes))
        else:  # a message without parts is sent as its overhead; an edited one left empty is not sent
            blocks = (((h, -1, None), frame),) if not rules and not m.parts else ()
        self._memo[key] = (m, blocks)
        return blocks

    def view_size(self, view: View) -> tuple[int, int]:
        """Exact prompt tokens of ``view`` without tools or the status line, and the messages it sends."""
        return self.state.view_size(view)

    def view_tokens(self, view: View) -> int:
        return self.view_size(view)[0]

    # -- log ----------------------------------------------------------------------------------------
    def _append(self, m: Message, synthetic: bool = False) -> int:
        if m.role == "tool" and self._bounds:
            bounded = tuple(self.policy.bound_tool_result(p) for p in m.parts)
            if bounded != m.parts:
                m = Message(m.id, m.role, bounded, m.pending, m.resolves, m.usage, m.meta)
        sz = self._sizes(m)
        i = self.ledger.append(m, sz.chars, sz.tokens, sz.calls)
        self._index[m.id] = i
        self.log.append(MessageAppended(i, m, synthetic), sz.content_hash)
        for f in self._facts_by_source.get(m.id, ()):
            if not any(f.text in p.text for p in m.parts):
                self._lost_on_entry.add(f.id)  # bounded away on entry (or never present)
        self._due.extend(self._facts_by_need.get(m.id, ()))
        return i

    def _violate(self, invariant: str, request_kind: str, detail: str) -> None:
        v = Violation(invariant, self.state.turn, request_kind, detail)
        self.violations.append(v)
        if self.config.strict:
            raise InvariantViolation(str(v))

    # -- facts ----------------------------------------------------------------------------------------
    def fact_visible(self, f: Fact, view: View) -> bool:
        """Whether ``view`` shows fact ``f``: its summary or an injected message carries it (by id, or its text
        appears in the injected text, as in a re-attached file), or its source
        message is shown with a part that still holds the fact's text (not replaced, dropped or truncated away)."""
        if view.summary is not None and f.id in view.summary.facts:
            return True
        if view.injected and any(f.id in x.facts or (f.text and f.text in x.text) for x in view.injected):
            return True
        src = self._index.get(f.source)
        if src is None or f.id in self._lost_on_entry:
            return False
        if src == 0 and self.has_system:
            return True
        if self._carries(f, src, view):
            return True
        copies = self.reactions.copies.get(f.source)  # a reactive run's re-acquired or restated copies
        return copies is not None and any(self._carries(f, self._index[c], view) for c in copies)

    def _carries(self, f: Fact, src: int, view: View) -> bool:
        """Whether ``view`` shows message ``src`` with a part that still holds ``f``'s text."""
        if not view.shows(src):
            return False
        rules = view.rules_at(src)
        if not rules:
            return True
        m = self.ledger.messages[src]
        for old, new in zip(m.parts, edit_parts(m, rules, self.tok.truncate), strict=True):
            if f.text not in old.text or new is None:
                continue
            if new is old or (rule_for(old, rules).action == "truncate" and f.text in new.text):  # type: ignore[union-attr]
                return True
        return False

    def _facts_lost(self, before: View, after: View) -> str:
        """Ids of the facts established so far that ``before`` showed and ``after`` does not (comma-joined).

        Only facts whose visibility can have changed are tested: those from messages the compaction may
        have dropped, cleared or unpinned, and those the old summary carried; so a compaction costs the
        size of what it touched, not of the whole conversation.
        """
        msgs = self.ledger.messages
        n = len(msgs)
        touched = [*minus(ranges(before, n), ranges(after, n)), *edited_ranges(before, after, n)]
        copy_of = self.reactions.copy_of
        candidates = {
            f.id: f
            for a, b in touched
            for i in range(a, b)
            for f in self._facts_by_source.get(copy_of.get(msgs[i].id, msgs[i].id), ())
        }
        for fid in (*(before.summary.facts if before.summary else ()), *(x for i in before.injected for x in i.facts)):
            if fid in self._facts_by_id:
                candidates[fid] = self._facts_by_id[fid]
        return ",".join(
            sorted(
                fid for fid, f in candidates.items() if self.fact_visible(f, before) and not self.fact_visible(f, after)
            )
        )

    # -- compaction -------------------------------------------------------------------------------
    def _compact(self, plan: Plan, trigger: str) -> bool:
        """Carry out ``plan``; True when the view changed."""
        before = self.state.view
        if plan.restore is not None:
            return self._restore(plan.restore, trigger)
        view = plan.view_from(before)
        bad = check_plan(self.state, before, view)
        if bad:
            self._violate("plan-invalid", "agent", f"{type(self.policy).__name__}: {bad}")
            return False
        self._compaction_attempts += 1
        cid = f"c{self._compaction_attempts}"
        tokens_before = self.view_tokens(before)
        # whether the policy compacts because it is over its trigger (compaction-loop, below)
        over_before = trigger == "auto" and self.policy.over_trigger(self.state) is not False
        summary = before.summary
        summarised = (0, 0)
        if plan.summarize:
            outcome = self._summarise(plan, before, view, cid, trigger)
            if outcome is None:
                if self.state.view is not before:
                    self._violate(
                        "failed-summary-unchanged", "summariser", "the view changed although the summary failed"
                    )
                return False
            summary = outcome
            summarised = (before.start, plan.start)
            view = replace(view, summary=summary)
        tokens_after = self.view_tokens(view)
        if tokens_after == tokens_before and view == before:
            return False
        self.state.view = view
        self.state.compactions += 1
        if plan.summarize:
            self.state.failed_in_a_row = 0
            if self._reactive:
                signals_lost(self, before, view, cid)
        self.state.checkpoints.append(view)
        self.log.append(
            CompactionCreated(
                cid,
                self.state.turn,
                trigger,
                plan.mode,
                view,
                tokens_before,
                tokens_after,
                summarised,
                self._facts_lost(before, view),
            )
        )
        if tokens_after >= tokens_before:
            self._violate(
                "compaction-shrinks",
                "agent",
                f"compaction {cid} ({plan.mode}) went from {tokens_before} to {tokens_after} tokens",
            )
        for name, detail in check_compaction(self.state, before, view, self._edit_changes(before, view)):
            self._violate(name, "agent", f"compaction {cid}: {detail}")
        if trigger == "auto":
            # A loop: automatic compactions on consecutive turns, each made over the policy's trigger, that each
            # leave the view over it. One made under the trigger (housekeeping, such as clearing a result as it
            # ages out) is no link. Right after a compaction the policy's own count may be a fallback estimate
            # (chars / 4 until the next request reports), so "leaves it over" is only a claim until the request
            # after it: _settle_loop judges it then, by the policy's count once the provider has counted the
            # compacted prompt. A claim no request settles (the run ended first) is dropped.
            self._loop_claim = None
            if over_before and self._over_trigger():
                self._loop_claim = (cid, self.state.turn)
            else:
                self._last_auto_turn = -10
        return True

    def _over_trigger(self) -> bool:
        """Whether the policy is at or over its automatic trigger now; a policy that does not say is over
        when it would compact again."""
        over = self.policy.over_trigger(self.state)
        if over is None:
            return self.policy.decide(self.state, "auto") is not None
        return over

    def _settle_loop(self) -> None:
        """Judge the claim of the last automatic compaction once the request after it has reported its prompt
        (before the reply is in): it is a link of a compaction loop when the policy is still over its trigger.
        _last_auto_turn is the turn of the last link; two on consecutive turns are a ``compaction-loop``."""
        claim, self._loop_claim = self._loop_claim, None
        if claim is None:
            return
        cid, turn = claim
        over = self._over_trigger()
        if over and self._last_auto_turn == turn - 1 and turn > 0:
            self._violate(
                "compaction-loop",
                "agent",
                f"compaction {cid} at turn {turn} leaves the view over the policy's trigger (its request reported "
                f"{self.state.last_input_tokens} tokens), as the automatic compaction of turn {turn - 1} did: "
                "no progress",
            )
        self._last_auto_turn = turn if over else -10

    def _restore(self, view: View, trigger: str) -> bool:
        """Roll the view back to an earlier checkpoint (the view of an earlier compaction, or the start)."""
        if not any(view is c for c in self.state.checkpoints):
            self._violate(
                "plan-invalid",
                "agent",
                f"{type(self.policy).__name__}: restore names a view that is not an earlier checkpoint of this run",
            )
            return False
        before = self.state.view
        if view is before:
            return False
        self._compaction_attempts += 1
        cid = f"c{self._compaction_attempts}"
        tokens_before, tokens_after = self.view_tokens(before), self.view_tokens(view)
        for name, detail in check_compaction(self.state, before, view, self._edit_changes(before, view)):
            self._violate(name, "agent", f"rollback {cid}: {detail}")
        self.state.view = view
        lost = self._facts_lost(before, view)
        self.log.append(
            CompactionCreated(
                cid, self.state.turn, trigger, "rollback", view, tokens_before, tokens_after, (0, 0), lost
            )
        )
        # What a rollback brings back is new to compact: a compaction after it is no repeat of the one before
        # (compaction-loop judges consecutive compactions of one growing view).
        self._last_auto_turn, self._loop_claim = -10, None
        return True

    def _edit_changes(self, before: View, after: View) -> Callable[[int], bool]:
        """Whether going from ``before`` to ``after`` newly edits a part of message ``i`` (for check_compaction):
        ``after`` shows a part otherwise than ``before`` did, and otherwise than the message holds it. Lifting an
        edit (a rollback to a checkpoint that did not hide or clear the part) compacts nothing."""
        msgs, trunc = self.ledger.messages, self.tok.truncate

        def changed(i: int) -> bool:
            a = edit_parts(msgs[i], before.rules_at(i), trunc)
            b = edit_parts(msgs[i], after.rules_at(i), trunc)
            raw = msgs[i].parts
            return any(x is not y and y is not r for x, y, r in zip(a, b, raw, strict=True))

        return changed

    def _summarise(self, plan: Plan, before: View, after: View, cid: str, trigger: str) -> Summary | None:
        """The summary of what leaves the view (shown by ``before``, not by ``after``), each message as
        ``after`` edits it, with the previous summary folded in; None when the summariser call fails."""
        n = len(self.ledger.messages)
        span = [
            i
            for a, b in minus(ranges(before, n), ranges(after, n))
            for i in range(a, b)
            if not (self.has_system and i == 0)
        ]
        clip = plan.summary_clip_chars
        texts: list[str] = []
        blocks: list[list[str]] = []  # each message's pieces, for keeping whole messages (summary_input_keep "ends")
        candidates: list[Fact] = []
        if before.summary is not None:
            prev_ids = before.summary.facts
            candidates.extend(f for f in self.conv.facts if f.id in prev_ids)
        pieces: list[str] = []  # the transcript in pieces, for counting: see below
        for i in span:
            shown = self.requests.message(i, after.rules_at(i))
            if shown is not None and plan.summary_drop_tool_outputs and shown.results:
                kept = tuple(p for p in shown.parts if p.kind != "tool_result")
                shown = Message(shown.id, shown.role, kept) if kept else None
            if shown is None:
                continue
            parts = flat_pieces(shown)
            if clip is not None and sum(map(len, parts)) > clip:
                parts = [*head_pieces(parts, clip), " …"]
            t = "".join(parts)
            if texts:
                pieces.append("\n\n")
            pieces.extend(parts)
            texts.append(t)
            blocks.append(parts)
            mid = self.ledger.messages[i].id
            for f in self._facts_by_source.get(self.reactions.copy_of.get(mid, mid), ()):  # a reactive copy's too
                if (
                    f.id not in self._lost_on_entry
                    and f.text in t
                    and (before.summary is None or f.id not in before.summary.facts)
                    and f not in candidates
                ):
                    candidates.append(f)
        body = "\n\n".join(texts)
        prev_text = before.summary.text if before.summary else ""
        if plan.summary_input_keep == "ends" and plan.summary_input_max_chars is not None:
            kept_blocks = _ends_within(
                [len(t) for t in texts],
                plan.summary_input_max_chars
                - len(plan.summary_system_prompt)
                - (len(prev_text) + 2 if before.summary else 0),
            )
            if kept_blocks is not None:
                head, omitted, tail = kept_blocks
                marker = plan.summary_input_marker.replace("{n}", str(omitted))
                chosen = [*blocks[:head], [marker], *blocks[len(blocks) - tail :]] if omitted else blocks
                pieces = [x for j, b in enumerate(chosen) for x in ([*b] if j == 0 else ["\n\n", *b])]
                body = "".join(pieces)
                candidates = [
                    f for f in candidates if (before.summary and f.id in before.summary.facts) or f.text in body
                ]
        elif plan.summary_input_max_chars is not None and len(body) > plan.summary_input_max_chars:
            body = body[-plan.summary_input_max_chars :]
            candidates = [f for f in candidates if (before.summary and f.id in before.summary.facts) or f.text in body]
            pieces = tail_pieces(pieces, plan.summary_input_max_chars)
        if plan.summary_input_newest_tokens is not None:
            budget, k = plan.summary_input_newest_tokens, len(pieces)
            while k > 0 and budget - self.tok.count(pieces[k - 1]) >= 0:
                k -= 1
                budget -= self.tok.count(pieces[k])
            if k:
                pieces = pieces[k:]
                body = "".join(pieces)
                candidates = [
                    f for f in candidates if (before.summary and f.id in before.summary.facts) or f.text in body
                ]
        # The transcript is counted piece by piece (message texts, tool results, labels, blank lines):
        # each piece is memoised, and the big ones are the texts the agent's requests already counted, so
        # every configuration and every later compaction that shows the summariser the same messages shares
        # the counts instead of tokenising one new half-megabyte text per compaction. The difference from
        # counting the joined text is BPE merges across piece boundaries.
        body_tokens = sum(self.tok.count(t) for t in pieces)
        input_tokens = (
            REQUEST_OVERHEAD
            + 3 * MESSAGE_OVERHEAD
            + self.tok.count(plan.summary_system_prompt)
            + self.tok.count(prev_text)
            + body_tokens
        )
        if self.anchors is not None:  # the agent's overhead, and the summariser's own text estimated
            input_tokens = self.anchors.overhead + self.anchors.estimate(input_tokens)
        elif self.config.calibration is not None:  # the summariser call carries the agent's prompt overhead too
            input_tokens = self.config.calibration.apply(input_tokens, 3, before.summary is not None)
        cfg = self.config.summariser
        cap = cfg.max_output_tokens or self.model.output_reserve
        if plan.summary_max_tokens is not None:
            cap = min(cap, plan.summary_max_tokens)
        # A client that forks its agent request (Policy.summary_request) sends the view as the agent would, the
        # instruction appended; billed through the prompt cache, so only with caching on. A fork that does not
        # fit the window falls back to the separate request, as Claude Code falls back when its fork fails.
        fork = self.policy.summary_request == "fork" and self.config.cache == "provider"
        if fork:
            fork_tokens = self._fork_tokens(before, plan.summary_system_prompt)
            fork = wire.fits_window(fork_tokens, self.model, max_output=cap)
            if fork:
                input_tokens = fork_tokens
        try:
            wire.check_window(input_tokens, self.model, max_output=cap)
        except PromptTooLong as exc:
            self.overflows += 1
            self._record_request("summariser", input_tokens, 0, 0, error=f"prompt-too-long: {exc}", compaction_id=cid)
            self.log.append(CompactionFailed(self.state.turn, trigger, f"summariser overflow: {exc}"))
            self.state.failed_in_a_row += 1
            return None
        goal_idx = next((i for i, m in enumerate(self.ledger.messages) if m.role == "user" and m.command is None), None)
        goal = self.ledger.messages[goal_idx].text if goal_idx is not None else ""
        calls = [p.name or "tool" for i in span for p in self.ledger.messages[i].parts if p.kind == "tool_call"]
        rng = np.random.default_rng(np.random.SeedSequence([self.config.seed, 1, self._compaction_attempts]))
        outcome = summarise(
            goal=goal,
            covered_messages=len(span),
            covered_calls=calls,
            candidates=candidates,
            config=cfg,
            max_output_tokens=cap,
            rng=rng,
            count=self.tok.count,
        )
        out_tokens = self.tok.count(outcome.text)
        billed = outcome.failed != "summariser call failed"
        usage, at = None, None
        if fork and billed:  # a call that failed never reached the cache
            at = self._compaction_time()
            usage = self._cache_usage(before, False, plan.summary_system_prompt, input_tokens, now=at, fork=True)
        self._record_request(
            "summariser",
            input_tokens,
            out_tokens,
            0,
            error=outcome.failed,
            compaction_id=cid,
            billed=billed,
            usage=usage,
            at=at,
        )
        if outcome.failed or not outcome.text.strip():
            self.log.append(CompactionFailed(self.state.turn, trigger, outcome.failed or "empty summary"))
            self.state.failed_in_a_row += 1
            return None
        text = plan.summary_wrapper.replace("{summary}", outcome.text)
        if outcome.text not in text:  # committed as a summary, but not the summariser's: as if it had failed
            self._violate(
                "failed-summary-unchanged",
                "summariser",
                f"compaction {cid} commits a summary without the summariser's text (summary_wrapper "
                f"{plan.summary_wrapper[:40]!r} has no {{summary}}): the view changed with no summary in it",
            )
        return Summary(text, outcome.facts, plan.start, cid, plan.summary_role)

    # -- requests -----------------------------------------------------------------------------------
    def _pricer(self, name: str) -> Pricer:
        """The pricer of model ``name``: the run's model (an unknown one is the user's error), or a recorded
        model looked up at the run's price provider, then at any provider, then without a routing prefix
        (``litellm_proxy/claude-...``); one the table does not know is priced as :data:`DEFAULT_MODEL` and
        named in the run's ``unpriced_models``."""
        hit = self._pricers.get(name)
        if hit is not None:
            return hit
        provider = self.config.model.price_provider
        if self.config.model.name is not None or name == DEFAULT_MODEL:
            hit = Pricer(name, provider)
        else:
            short = name.rsplit("/", 1)[-1]
            for model, prov in ((name, provider), (name, None), (short, provider), (short, None)):
                try:
                    hit = Pricer(model, prov)  # type: ignore[arg-type]
                    break
                except UnknownName:
                    continue
            if hit is None:
                self.unpriced.add(name)
                hit = self._pricer(DEFAULT_MODEL)
        self._pricers[name] = hit
        return hit

    def _use_model(self, reply: Message) -> None:
        """The model serving the request ``reply`` answers: the run's, else the one the recording names."""
        if self.config.model.name is None:
            recorded = reply.meta.get("model") or self._recorded_model
            if isinstance(recorded, str) and recorded:
                self._model_name = recorded
                self.pricer = self._pricer(recorded)

    def _charge(self, input_tokens: int, output_tokens: int, usage: CacheUsage) -> float:
        cost = self.pricer.cost(input_tokens, output_tokens, usage.read, usage.write_5m, usage.write_1h)
        self.tracker.tokens += input_tokens + output_tokens
        self.tracker.cost += cost
        return cost

    def _record_request(
        self,
        kind: str,
        context: int,
        output: int,
        in_view: int,
        *,
        error: str | None = None,
        compaction_id: str | None = None,
        needed: int = 0,
        visible: int = 0,
        violations: Iterable[Violation] = (),
        billed: bool | None = None,
        usage: CacheUsage | None = None,
        at: float | None = None,
    ) -> None:
        """Log one request and bill it. ``usage``: how the prompt cache bills its prompt (None: all uncached, as a
        ``separate`` summariser call is: its transcript is a prompt of its own that shares no prefix with the
        agent's). ``at``: when it started (None: when the current request starts)."""
        # A rejected request (400) is not billed; a call that answered, even with nothing, is.
        billed = error is None if billed is None else billed
        usage = usage or CacheUsage(uncached=context)
        cost = self._charge(context, output, usage) if billed else 0.0
        summary = self.state.view.summary
        self.log.append(
            RequestSent(
                self.state.turn,
                kind,
                context,
                output,
                in_view,
                error,
                cost,
                billed,
                compaction_id or (summary.compaction_id if summary else ""),
                self.state.compactions,
                needed,
                visible,
                "; ".join(v.invariant for v in violations),
                usage.read if billed else 0,
                usage.write_5m if billed else 0,
                usage.write_1h if billed else 0,
                self._now if at is None else at,
                self._model_name,
            )
        )

    def _request_size(self, view: View, grace: bool) -> tuple[str | None, int, int]:
        """The status line, prompt tokens and messages of a request for ``view`` (pure)."""
        status = self.tracker.status_line() if self.status else None
        _, view_tokens, in_view, ids = self.state._totals(view)
        tokens = self._head_tokens(grace) + view_tokens + self._status_tokens(status)
        if (
            self.config.calibration is not None and self.anchors is None
        ):  # report what the provider would count (sim.calibration.fit)
            summarised = view.summary is not None or self._opens_summarised
            tokens = self.config.calibration.apply(tokens, in_view, summarised, ids)
        return status, tokens, in_view

    def _head_tokens(self, grace: bool) -> int:
        """Prompt tokens outside the messages: framing and tool definitions, or with anchors the recording's
        overhead (which holds its tools: a grace request without tools keeps it)."""
        if self.anchors is not None:
            return self.anchors.overhead
        return REQUEST_OVERHEAD + (0 if grace else self.tools_tokens)

    def _instruction_tokens(self, text: str) -> int:
        """Tokens of a forked summariser request's instruction, a user message of its own."""
        return MESSAGE_OVERHEAD + self._text_tokens(text)

    def _fork_tokens(self, view: View, instruction: str) -> int:
        """Prompt tokens of a summariser request forked from the agent's (``Policy.summary_request`` ``fork``):
        the agent request for ``view`` (its tools included; no status line) with ``instruction`` appended as a
        last user message, counted as the agent request is (with a calibration, the provider's count; the
        instruction, like the status line, adds no per-message term: the cache blocks count it so too)."""
        _, view_tokens, in_view, ids = self.state._totals(view)
        tokens = self._head_tokens(False) + view_tokens + (self._instruction_tokens(instruction) if instruction else 0)
        if self.config.calibration is not None and self.anchors is None:
            summarised = view.summary is not None or self._opens_summarised
            tokens = self.config.calibration.apply(tokens, in_view, summarised, ids)
        return tokens

    def _status_tokens(self, status: str | None) -> int:
        if not status:
            return 0
        if self.anchors is None:
            return MESSAGE_OVERHEAD + self.tok.count(status)
        return self.anchors.estimate_text(self.tok.count(status), "prose")

    def _auto_compact(self, k: int, after_rollback: bool) -> None:
        """The policy's automatic compaction before the request answered by message ``k``; in lockstep, the
        rollback the members agree on (the others fork off in ``_sync``)."""
        if not after_rollback:
            plan = self._decide(k, MESSAGE)
            if plan is None or not self._compact(plan, "auto"):
                return
            if plan.restore is None:
                # A policy whose system checks again after compacting (recheck_after_compaction) is asked until it
                # declines; each compaction changed the view, and the log bounds how often that can happen.
                for _ in range(len(self.state) if self.policy.recheck_after_compaction else 0):
                    plan = self._decide(k, AFTER_ROLLBACK)
                    if plan is None or plan.restore is not None or not self._compact(plan, "auto"):
                        break
                return
        # A rollback restores an earlier, larger view; the policy may compact it before sending.
        plan = self._decide(k, AFTER_ROLLBACK)
        if plan is not None and plan.restore is None:
            self._compact(plan, "auto")

    def _side_request(self, k: int, reply: Message) -> None:
        """A request the reactive agent adds before script message ``k`` (sim.replay.reactive), taken like a
        scripted one: the policy's automatic compaction, the request, the budget check, and the compaction
        after the response for a policy asked then. Reactive runs replay alone (no lockstep)."""
        self._auto_compact(k, False)
        self._agent_request(reply, synthetic=True)
        self._exhaustion(reply, [])
        if "response" in self.policy.when:
            plan = self._decide(k, RESPONSE)
            if plan is not None:
                self._compact(plan, "auto")

    def _decide(self, k: int, phase: int) -> Plan | None:
        """The policy's plan at ``phase`` of message ``k``; in lockstep, the one the members that stay agree on."""
        if self._members is not None:
            return self._sync(k, phase)
        if phase == MANUAL:
            return self.policy.decide(self.state, "manual")
        point: AskPoint = "response" if phase == RESPONSE else "request"
        return self.policy.decide(self.state, "auto") if self.policy.asked_at(self.state, point) else None

    def _start_request(self, k: int) -> None:
        """The request answered by script message ``k`` starts when message ``k - 1`` is complete."""
        self._ensure_times(k)
        self._now = self._times[k - 1] if k > 0 else 0.0
        self.tracker.elapsed_seconds = self._now  # the status line's elapsed and the duration budget

    def _compaction_time(self) -> float:
        """When the compaction being made happens, in seconds: once the script message ``_clock_at`` is
        complete (before a request: when it starts; ``/compact``, after a reply: once that is complete), else
        (during a request: on overflow, among the reactive agent's requests) when the current request starts."""
        i = self._clock_at
        if i is None:
            return self._now
        if i < 0:
            return 0.0
        self._ensure_times(i)
        return self._times[i]

    def _ensure_times(self, k: int) -> None:
        """Make sure the times reach script message ``k`` (computed once per worker and seed, lazily)."""
        if k >= len(self._times):
            script = self._script
            if len(script) == len(self.conv.messages):  # the conversation's times, once per worker and seed
                self._times = memoised(self.tok.derived, self.conv, ("times", self.config.seed), self._script_times)
            else:  # stepped past the conversation: its times are a prefix of these
                self._times = self._script_times(self.conv)

    def _script_times(self, _: object) -> tuple[float, ...]:
        return message_times(self._script, self.config.seed, lambda m: self._sizes(m).tokens - MESSAGE_OVERHEAD)

    def _agent_request(self, reply: Message, grace: bool = False, synthetic: bool = False) -> None:
        """Send the request that ``reply`` answers (compacting and retrying on overflow as the policy says);
        ``reply`` is logged as synthetic for a grace turn or when ``synthetic`` (the reactive agent's)."""
        st = self.state
        self._use_model(reply)
        attempts = 1 + max(0, self.policy.retry_on_overflow)
        while True:
            view = st.view
            status, tokens, in_view = self._request_size(view, grace)
            found = [Violation(name, st.turn, "agent", detail) for name, detail in check_view(st, view)]
            sys_problem = self.requests.system_problem(view)
            if sys_problem:
                found.append(Violation("system-first", st.turn, "agent", sys_problem))
            try:
                self.requests.validate(view, status)
            except InvalidRequest as exc:
                self.requests.reset()
                found.append(Violation("tool-pairing", st.turn, "agent", str(exc)))
                self._record_violations(found)
                self._record_request("agent", tokens, 0, in_view, error=f"invalid-request: {exc}", violations=found)
                raise _Finished("provider-error") from None
            if self.config.deep_checks:
                self._deep_check(found)
            self._record_violations(found)
            try:
                wire.check_window(tokens, self.model)
            except PromptTooLong as exc:
                self.overflows += 1
                self._record_request("agent", tokens, 0, in_view, error=f"prompt-too-long: {exc}", violations=found)
                attempts -= 1
                if attempts > 0:
                    plan = self.policy.decide(st, "overflow")
                    if plan is not None and self._compact(plan, "overflow"):
                        continue
                raise _Finished("context-overflow") from None
            break
        due, self._due = self._due, []
        visible = 0
        for f in due:
            ok = self.fact_visible(f, view)
            visible += ok
            k = self.retention_by_kind.setdefault(f.kind, [0, 0])
            k[0] += 1
            k[1] += ok
            self.fact_rows.append(
                {
                    "turn": st.turn,
                    "fact": f.id,
                    "kind": f.kind,
                    "visible": bool(ok),
                    "age_messages": len(self.ledger.messages) - self._index.get(f.source, 0),
                }
            )
        self.retained["needed"] += len(due)
        self.retained["visible"] += visible
        sz = self._sizes(reply)
        out = sz.tokens - MESSAGE_OVERHEAD  # the reply's parts, without the per-message overhead
        if self.anchors is not None and reply.usage is not None and reply.usage.output_tokens > 0:
            out = reply.usage.output_tokens  # anchored: what the provider counted (thinking included)
        self.tracker.turns += 1
        self.tracker.tool_calls += sz.calls
        self.tracker.last_context = tokens
        self._record_request(
            "grace" if grace else "agent",
            tokens,
            out,
            in_view,
            needed=len(due),
            visible=visible,
            violations=found,
            usage=self._cache_usage(view, grace, status, tokens),
        )
        st.last_input_tokens = tokens
        st.last_output_tokens = None  # the reply is not in yet: what the policy counts now is this prompt
        st.messages_at_last_request = len(self.ledger.messages)
        st.view_at_last_request = view
        st.chars_at_last_request = self.ledger.chars_prefix[-1]
        self._settle_loop()
        st.last_output_tokens = out
        st.turn += 1
        self._append(reply, synthetic=grace or synthetic)
        for dim, used, limit in self.tracker.new_warnings():
            self.log.append(BudgetWarned(st.turn, dim, used, limit))

    def _cache_usage(
        self,
        view: View,
        grace: bool,
        status: str | None,
        tokens: int,
        *,
        now: float | None = None,
        fork: bool = False,
    ) -> CacheUsage:
        """The prompt cache's bill of a request of ``tokens`` (as reported) for ``view``, sent at ``now`` (default:
        when the current request starts). With ``fork``, a forked summariser request whose last message is the
        instruction ``status`` (:meth:`_fork_tokens`). With a calibration, the blocks carry the provider's count
        (sim.replay.caching) up to its ``after_compaction`` term and rounding. A test holds the blocks to the
        request's tokens where nothing rewrote the log."""
        head = self._head_tokens(grace)
        tail = self._instruction_tokens(status) if fork and status else self._status_tokens(status)
        when = self._now if now is None else now
        kind = "instruction" if fork else "status"
        usage = self.cache.usage(view, head, grace, status, tail, when, self._model_name, kind)
        if usage.total == tokens:
            return usage
        # The blocks are the engine's own counts and agree with the request's, except with a calibration (its
        # whole-request rounding and after_compaction term) and under a policy that rewrote the log behind the
        # engine's back (log-append-only reports that): the uncached end takes the difference.
        cached = min(usage.read + usage.write_5m + usage.write_1h, tokens)
        read = min(usage.read, cached)
        w1 = min(usage.write_1h, cached - read)
        return CacheUsage(tokens - cached, read, cached - read - w1, w1)

    def _record_violations(self, found: list[Violation]) -> None:
        for v in found:
            self._violate(v.invariant, v.request_kind, v.detail)

    def _deep_check(self, found: list[Violation]) -> None:
        problem = self._log_problem()
        if problem:
            found.append(Violation("log-append-only", self.state.turn, "agent", problem))
        if fold(self.log, self.state.checkpoints[0]) != self.state.view:
            found.append(
                Violation(
                    "log-append-only",
                    self.state.turn,
                    "agent",
                    "the view folded from the log differs from the engine's view",
                )
            )
        full = self.requests.render(self.state.view)
        try:
            (wire.validate_anthropic if self.model.provider == "anthropic" else wire.validate_openai)(full)
        except InvalidRequest as exc:
            found.append(Violation("tool-pairing", self.state.turn, "agent", f"full re-validation: {exc}"))

    def _log_problem(self) -> str | None:
        problem = self.log.verify()
        if problem:
            return problem
        appended = [e for e in self.log if isinstance(e, MessageAppended)]
        if len(appended) != len(self.ledger.messages):
            return f"{len(self.ledger.messages)} messages in the log's list but {len(appended)} were appended"
        for e in appended:
            if self.ledger.messages[e.index] is not e.message:
                return f"message {e.index} ({e.message.id!r}) was replaced after it was appended"
        return None

    def _exhaustion(self, reply: Message, upcoming: list[Message]) -> None:
        dim = self.tracker.exhausted()
        if dim is None:
            return
        if self.config.budgets.on_exhaustion == "fail" or dim in ("cost", "duration"):
            raise _Finished("budget-failed", dim)
        if reply.calls:
            settled = Message(
                f"{reply.id}-settled",
                "tool",
                tuple(
                    Part(
                        "tool_result",
                        "not executed: the run's budget is exhausted",
                        call_id=p.call_id,
                        name=p.name,
                        is_error=True,
                    )
                    for p in reply.calls
                ),
            )
            self._append(settled, synthetic=True)
            nxt = next((m for m in upcoming if m.role == "assistant" and m.text), None)
            final = Message(
                f"{reply.id}-final",
                "assistant",
                (Part("text", nxt.text if nxt else "Final answer: the budget is exhausted."),),
            )
            self._agent_request(final, grace=True)
        raise _Finished("budget-exhausted", dim)

    # -- the loop -------------------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Replay the whole script and finish: :meth:`step` through every message, then :meth:`finish`."""
        return self._finish(*self._replay(0, MESSAGE))

    def step(self, message: Message | None = None) -> bool:
        """Take the next message of the script through all its phases, or ``message``, added to the script
        first (a conversation that grows as it is replayed). True while the run goes on; False once it has
        ended (a context overflow, an exhausted budget, a strict violation) or the script is used up.

        A step sees no further than its message: an exhausted budget's final answer uses the script's next
        reply only when the script already holds it (as it does in :meth:`run`)."""
        if message is not None:  # kept after the run ended too: what it never reached counts (retention, tasks)
            self._script.append(message)
        if self._outcome is not None:
            return False
        k = self._next
        if k >= len(self._script):
            return False
        self._next = k + 1
        outcome = self._replay(k, MESSAGE, k + 1)
        if outcome != ("completed", None):
            self._outcome = outcome
        return self._outcome is None

    def finish(self) -> RunResult:
        """End a run driven by :meth:`step`: check its log and give the result. Call once."""
        return self._finish(*(self._outcome or ("completed", None)))

    def _replay(self, k0: int, phase0: int, k1: int | None = None) -> tuple[str, str | None]:
        """Replay from phase ``phase0`` of message ``k0`` up to message ``k1`` (default: the end of the
        script); the finish reason and the exhausted budget dimension.

        Each message is taken in phases. A user or tool message: ``MESSAGE`` (append it), then ``MANUAL``
        after a ``/compact`` command (the policy's manual compaction). A reply: ``MESSAGE`` (the policy's
        automatic compaction), ``AFTER_ROLLBACK`` (its second chance, after a rollback), ``SEND`` (the
        request it answers), ``BUDGET`` (the budget check), ``RESPONSE`` (the automatic compaction of a
        policy asked after each response). Between phases the run's state is whole, so lockstep members can
        fork there and resume.
        """
        msgs = self._script
        # Whether any policy here is asked after responses (members only ever leave a lockstep group, so a
        # "no" holds for the whole replay): most are not, and the phase then costs nothing.
        after_response = any("response" in p.when for p in (self._members or (self.policy,)))
        try:
            for k in range(k0, len(msgs) if k1 is None else k1):
                m = msgs[k]
                phase = phase0 if k == k0 else MESSAGE
                if phase == MESSAGE and m.role != "assistant":
                    self._append(m)
                    if not (m.role == "user" and m.command == "compact"):
                        continue
                    phase = MANUAL
                if phase in (MESSAGE, AFTER_ROLLBACK):
                    self._clock_at = k - 1  # before the request that message k answers, which starts then
                    self._auto_compact(k, phase == AFTER_ROLLBACK)
                    phase = SEND
                if phase == SEND:
                    self._sync(k, SEND)
                    self._start_request(k)
                    self._clock_at = None
                    if self._reactive and react(self, k, m, self.config.agent):
                        self._auto_compact(k, False)  # the agent's messages came after the policy was asked
                    self._agent_request(m)
                    self._sent = k
                    phase = BUDGET
                if phase == MANUAL:
                    self._clock_at = k  # once the command is complete
                    plan = self._decide(k, MANUAL)
                    if plan is not None:
                        self._compact(plan, "manual")
                    continue
                if phase == BUDGET:
                    self._sync(k, BUDGET)
                    self._exhaustion(m, list(msgs[k + 1 : k + 40]))
                if after_response:
                    self._clock_at = k  # once the reply is complete
                    plan = self._decide(k, RESPONSE)
                    if plan is not None:
                        self._compact(plan, "auto")
        except _Finished as fin:
            return fin.reason, fin.exhausted
        except InvariantViolation:
            return "invariant-violation", None
        return "completed", None

    def _finish(
        self, reason: str, exhausted: str | None, *, checked: bool = False, problem: str | None = None
    ) -> RunResult:
        """End the run: check the log (unless ``checked``, when ``problem`` is the verdict), close it."""
        if not self.config.strict or reason != "invariant-violation":
            if not checked:
                problem = self._log_problem()
            if problem:
                try:
                    self._violate("log-append-only", "agent", problem)
                except InvariantViolation:
                    reason = "invariant-violation"
        self.log.append(RunFinished(reason, exhausted))
        return self._result(reason, exhausted)

    # -- lockstep: several policies over one replay (sim.replay.lockstep.run_many) ---------------------------------
    def _sync(self, k: int, phase: int) -> Plan | None:
        """In lockstep, before ``phase`` of message ``k``: the compaction the members that stay agree on, after
        forking off those whose runs differ from here (``sim.replay.lockstep.sync``); alone, nothing to do."""
        if self._members is None or self._lockstep is None:
            return None
        return self._lockstep(self, k, phase)

    def copy(self, policy: Policy[Any] | None = None) -> Engine:
        """This run as it stands, to step on independently: a copy of everything the run has done, sharing
        nothing mutable with this engine; under ``policy`` when given (lockstep's forks), else this policy.

        Only valid between steps, where everything a run has done is in the fields below; a field added
        to the engine that changes during a run must be copied here too (the test of run_many checks
        every result field against separate runs, and the stateful test steps copies alongside)."""
        policy = policy if policy is not None else self.policy
        e = copy.copy(self)
        e.policy, e._members, e._forks, e._script = policy, None, [], list(self._script)
        e.run_id = run_id_for(policy, self.conv, self.config, self.tok.derived)
        e.ledger = self.ledger.copy()
        e.state = self.state.copy(e.ledger)
        e.requests = self.requests.copy(e.ledger)
        e.cache = self.cache.copy(e.ledger)
        e.log = self.log.copy()
        e.tracker = replace(self.tracker, warned=set(self.tracker.warned))
        e.violations, e.fact_rows = list(self.violations), list(self.fact_rows)
        e.unpriced, e._pricers = set(self.unpriced), dict(self._pricers)
        e._index = dict(self._index)
        e._lost_on_entry = set(self._lost_on_entry)
        e._due, e.retained = list(self._due), dict(self.retained)
        e.retention_by_kind = {k: list(v) for k, v in self.retention_by_kind.items()}
        e.reactions = self.reactions.copy()
        return e

    def _unreached_needs(self) -> dict[str, int]:
        """Per fact kind, the needs of the script the run never judged because it stopped first (an overflow, an
        exhausted budget): a need counts where a complete replay judges it, at a message with a reply at or after
        it. A stopped run did not do the rest of its task, so retention counts these as lost."""
        script = self._script
        last_reply = max((i for i, m in enumerate(script) if m.role == "assistant"), default=-1)
        out: dict[str, int] = {}
        for m in script[: last_reply + 1]:
            for f in self._facts_by_need.get(m.id, ()):
                out[f.kind] = out.get(f.kind, 0) + 1
        for kind, (needed, _) in self.retention_by_kind.items():
            out[kind] = out.get(kind, 0) - needed
        return {k: v for k, v in sorted(out.items()) if v > 0}

    def _compaction_costs(self, compactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each compaction row with what it cost and when it paid that back.

        ``cost_usd``: its summariser calls, plus the cache rewrite it caused: the cache writes of the first agent
        request after it, priced at what writing costs over reading (had the prompt not changed, the cache would
        have read those tokens; new messages written at that request are counted too, a small overstatement).
        ``payback_requests``: the agent requests after it until the tokens it removed, priced as the prompt
        would have billed them (at the cache-read rate with caching, else the input rate), add up to its cost;
        None when that does not happen within the run (or it removed nothing)."""
        if not compactions:
            return compactions
        provider_cache = self.config.cache == "provider"
        summariser: dict[str, float] = {}
        first_after: dict[str, dict[str, Any]] = {}
        later: dict[str, int] = {}  # agent requests after each compaction
        pending: list[str] = []
        for ev in self.log:
            if isinstance(ev, CompactionCreated):
                pending.append(ev.id)
                later[ev.id] = 0
            elif isinstance(ev, RequestSent) and ev.billed:
                if ev.request_kind == "summariser":
                    summariser[ev.compaction_id] = summariser.get(ev.compaction_id, 0.0) + ev.cost_usd
                    continue
                for cid in pending:
                    first_after[cid] = ev.row()
                pending = []
                for cid in later:
                    later[cid] += 1
        out = []
        for c in compactions:
            cid = c["compaction_id"]
            first = first_after.get(cid)
            rewrite, unit = 0.0, 0.0
            if first is not None:
                r_in, _, r_cr, r_cw, r_cw1h = self._pricer(first["model"]).rates()
                unit = (r_cr if provider_cache else r_in) / 1e6
                rewrite = (
                    first["cache_write_5m_tokens"] * (r_cw - r_cr) + first["cache_write_1h_tokens"] * (r_cw1h - r_cr)
                ) / 1e6
            cost = summariser.get(cid, 0.0) + max(rewrite, 0.0)
            saved = (c["tokens_before"] - c["tokens_after"]) * unit
            k = math.ceil(cost / saved) if saved > 0 else None
            payback = k if k is not None and k <= later.get(cid, 0) else None
            out.append({**c, "cost_usd": round(cost, 10), "payback_requests": payback})
        return out

    def _result(self, reason: str, exhausted: str | None) -> RunResult:
        rows, compactions = request_rows(self.log), compaction_rows(self.log)  # the log is the record
        parts = [0.0, 0.0, 0.0, 0.0]  # uncached input, cache reads, cache writes, output (USD)
        for r in rows:
            if r["billed"]:
                split = self._pricer(r["model"]).split(*_usage_of(r))
                parts = [a + b for a, b in zip(parts, split, strict=True)]
        compactions = self._compaction_costs(compactions)
        agent = [r for r in rows if r["request_kind"] != "summariser" and not r["error"]]
        unreached = self._unreached_needs() if reason != "completed" else {}
        needed = self.retained["needed"] + sum(unreached.values())
        by_kind = {k: [v[0], v[1]] for k, v in self.retention_by_kind.items()}
        for kind, n in unreached.items():
            by_kind.setdefault(kind, [0, 0])[0] += n
        success = task_success(
            self._script, self.reactions, self.config.agent, None if reason == "completed" else self._sent
        )
        billed_input = sum(r["context_tokens"] for r in rows if r["billed"])
        summary = {
            "run_id": self.run_id,
            "policy": self.policy.name,
            "params": self.policy.params(),
            "params_hash": self.policy.params_hash(),
            "conversation": self.conv.id,
            "seed": self.config.seed,
            "requests": len(rows),
            "agent_requests": len(agent),
            "peak_context_tokens": max((r["context_tokens"] for r in agent), default=0),
            "cumulative_input_tokens": billed_input,
            "cumulative_output_tokens": sum(r["output_tokens"] for r in rows),
            "total_cost_usd": round(sum(r["cost_usd"] for r in rows), 10),
            "cache_read_tokens": sum(r["cache_read_tokens"] for r in rows),
            "cache_write_tokens": sum(r["cache_write_5m_tokens"] + r["cache_write_1h_tokens"] for r in rows),
            "cache_hit_share": _share(sum(r["cache_read_tokens"] for r in rows), billed_input),
            "summariser_cost_usd": round(sum(r["cost_usd"] for r in rows if r["request_kind"] == "summariser"), 10),
            "unpriced_models": ", ".join(sorted(self.unpriced)),
            "cost_input_usd": round(parts[0], 10),
            "cost_cache_read_usd": round(parts[1], 10),
            "cost_cache_write_usd": round(parts[2], 10),
            "cost_output_usd": round(parts[3], 10),
            "compaction_cost_usd": round(sum(c["cost_usd"] for c in compactions), 10),
            "compactions": compactions,
            "compaction_count": len(compactions),
            "overflows": self.overflows,
            "facts_needed": needed,
            "facts_visible": self.retained["visible"],
            "facts_unreached": sum(unreached.values()),
            "retention_recall": self.retained["visible"] / needed if needed else None,
            "retention_by_kind": {
                k: {"needed": v[0], "visible": v[1], "recall": v[1] / v[0] if v[0] else None}
                for k, v in sorted(by_kind.items())
            },
            "task_success": success,
            **self.reactions.summary(),
            "finish_reason": reason,
            "exhausted": exhausted,
            "violation_count": len(self.violations),
            "violations_by_invariant": _count(v.invariant for v in self.violations),
            "messages_in_log": len(self.ledger.messages),
        }
        return RunResult(
            self.run_id,
            self.policy.name,
            self.policy.params(),
            self.policy.params_hash(),
            self.conv.id,
            self.config.seed,
            rows,
            compactions,
            self.violations,
            self.log,
            summary,
            self.fact_rows,
        )


def _placement(placement: CachePlacement, ttl: str) -> CachePlacement:
    """The policy's breakpoints with the run's TTL (``cache_ttl``; ``policy``: as the policy places them)."""
    if ttl == "policy":
        return placement
    chosen: TTL = "1h" if ttl == "1h" else "5m"
    return CachePlacement(chosen if placement.system else None, chosen if placement.last else None)


def _usage_of(row: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """A request row's tokens as :meth:`sim.core.cost.Pricer.cost` takes them."""
    return (
        row["context_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
        row["cache_write_5m_tokens"],
        row["cache_write_1h_tokens"],
    )


def _recorded_model(conversation: Conversation) -> str | None:
    """The model a recording names most often for its replies (ties: the first in name order); None if none."""
    counts = Counter(
        n for m in conversation.messages if m.role == "assistant" and isinstance(n := m.meta.get("model"), str) and n
    )
    return max(sorted(counts), key=counts.__getitem__) if counts else None


def _new_memo(_: object) -> dict[Any, Any]:
    return {}


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _ends_within(sizes: list[int], budget: int, joiner: int = 2) -> tuple[int, int, int] | None:
    """Which whole blocks of ``sizes`` characters (joined by ``joiner`` characters) a summariser input of
    ``budget`` characters keeps when it keeps both ends: ``(head, omitted, tail)`` block counts, or None when
    everything fits. The head takes the oldest blocks up to half the budget, the tail the newest up to the
    rest; what lies between is omitted (``Plan.summary_input_keep`` ``"ends"``)."""
    if sum(s + joiner for s in sizes) <= budget:
        return None
    half = budget // 2
    start, end, used = 0, len(sizes) - 1, 0
    while start <= end and used + sizes[start] + joiner <= half:
        used += sizes[start] + joiner
        start += 1
    while end >= start and used + sizes[end] + joiner <= budget:
        used += sizes[end] + joiner
        end -= 1
    return start, end - start + 1, len(sizes) - 1 - end


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))


def run(
    policy: Policy[Any],
    conversation: Conversation,
    config: RunConfig | None = None,
    *,
    tokenizer: CountingTokenizer | None = None,
) -> RunResult:
    """Replay ``conversation`` under ``policy``; deterministic in (policy, conversation, config)."""
    return Engine(policy, conversation, config or RunConfig(), tokenizer).run()


def _appends_status(policy: Policy[Any], config: RunConfig) -> bool:
    """Whether each request carries the run-status line: as the policy's system does, unless the run says."""
    return policy.run_status if config.run_status == "auto" else config.run_status == "appended"


__all__ = ["Engine", "MessageSizes", "RunConfig", "RunResult", "run", "run_id_for"]
