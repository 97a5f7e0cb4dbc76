"""Replay a conversation through a policy, request by request, and record everything.

One module because the phases of a replay (append, automatic and manual compaction, the summariser call,
the request and its checks, the budget check) all read and write one run state, and split apart they would
reach into each other's private fields; what is not that loop lives elsewhere (sizes in
:mod:`sim.core.state`, the view's layout in :mod:`sim.core.view`, lockstep in :mod:`sim.replay.lockstep`, the
config in :mod:`sim.core.config`).

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
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from policies.base import AskPoint, Plan, Policy
from sim.calibration.fit import opens_with_summary
from sim.core.budgets import BudgetTracker
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.cost import Pricer
from sim.core.errors import InvalidRequest, InvariantViolation, PromptTooLong
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
from sim.core.view import Rule, Summary, View, edit_parts, fold, rule_for
from sim.replay import model as wire
from sim.replay.model import MESSAGE_OVERHEAD, PART_OVERHEAD, REQUEST_OVERHEAD
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
        self.pricer = Pricer(config.model.name, config.model.price_provider)
        self.ledger = Ledger(sizer=self._edited_sizes, count=self.tok.count)
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
        self._last_auto_turn = -10
        self.retained = {"needed": 0, "visible": 0}
        self.retention_by_kind: dict[str, list[int]] = {}

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
        hit = self.tok.derived.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        sizes = self._measure(m)
        self.tok.derived[key] = (m, sizes)
        return sizes

    def _measure(self, m: Message) -> MessageSizes:
        tokens = MESSAGE_OVERHEAD + sum(self._part_tokens(p) for p in m.parts)
        return MessageSizes(m.chars, tokens, len(m.calls), hash(m))

    def _edited_sizes(self, m: Message, rules: tuple[Rule, ...]) -> tuple[int, int]:
        """Characters and tokens of ``m`` as ``rules`` edit it ((0, 0): not sent); the ledger's sizer."""
        if not rules:
            sz = self._sizes(m)
            return sz.chars, sz.tokens
        key = (id(m), ("sizes", rules))  # memoised() written out: asked for every message a view edits
        hit = self.tok.derived.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        sizes = self._measure_edited(m, rules)
        self.tok.derived[key] = (m, sizes)
        return sizes

    def _measure_edited(self, m: Message, rules: tuple[Rule, ...]) -> tuple[int, int]:
        # One pass over the parts, counting as sim.core.view.edit_parts edits and sim.core.view.edited_chars counts (a
        # test holds them together), without building the edited parts.
        chars = tokens = kept = 0
        for p in m.parts:
            rule = rule_for(p, rules)
            if rule is None:
                kept, chars, tokens = kept + 1, chars + p.chars, tokens + self._part_tokens(p)
            elif rule.action == "placeholder":
                text = rule.placeholder_for(p)
                edit = (None, text) if p.kind == "tool_call" else (text, None)
                kept, chars, tokens = kept + 1, chars + len(text), tokens + self._part_tokens(p, *edit)
            elif rule.action == "truncate":
                cut = self.tok.truncate(p.text, rule.max_tokens, rule.head_share, rule.text)
                kept, chars = kept + 1, chars + p.chars - len(p.text) + len(cut)
                tokens += self._part_tokens(p, cut)
        return (chars, MESSAGE_OVERHEAD + tokens) if kept else (0, 0)

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
        candidates = {
            f.id: f for a, b in touched for i in range(a, b) for f in self._facts_by_source.get(msgs[i].id, ())
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
            # A loop: automatic compactions on consecutive turns that each leave the view over the policy's
            # trigger. _last_auto_turn is the turn of the last automatic compaction that did.
            over = self.policy.over_trigger(self.state)
            if over is None:
                over = self.policy.decide(self.state, "auto") is not None
            if over and self._last_auto_turn == self.state.turn - 1 and self.state.turn > 0:
                self._violate(
                    "compaction-loop",
                    "agent",
                    f"compaction {cid} at turn {self.state.turn} leaves the view over the policy's trigger, "
                    f"as the automatic compaction of turn {self.state.turn - 1} did: no progress",
                )
            self._last_auto_turn = self.state.turn if over else -10
        return True

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
        return True

    def _edit_changes(self, before: View, after: View) -> Callable[[int], bool]:
        """Whether going from ``before`` to ``after`` changes a part of message ``i`` (for check_compaction)."""
        msgs, trunc = self.ledger.messages, self.tok.truncate

        def changed(i: int) -> bool:
            a = edit_parts(msgs[i], before.rules_at(i), trunc)
            b = edit_parts(msgs[i], after.rules_at(i), trunc)
            return any(x is not y for x, y in zip(a, b, strict=True))

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
            for f in self._facts_by_source.get(self.ledger.messages[i].id, ()):
                if (
                    f.id not in self._lost_on_entry
                    and f.text in t
                    and (before.summary is None or f.id not in before.summary.facts)
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
        if self.config.calibration is not None:  # the summariser call carries the agent's prompt overhead too
            input_tokens = self.config.calibration.apply(input_tokens, 3, before.summary is not None)
        cfg = self.config.summariser
        cap = cfg.max_output_tokens or self.model.output_reserve
        if plan.summary_max_tokens is not None:
            cap = min(cap, plan.summary_max_tokens)
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
        self._record_request(
            "summariser",
            input_tokens,
            out_tokens,
            0,
            error=outcome.failed,
            compaction_id=cid,
            billed=outcome.failed != "summariser call failed",
        )
        if outcome.failed or not outcome.text.strip():
            self.log.append(CompactionFailed(self.state.turn, trigger, outcome.failed or "empty summary"))
            self.state.failed_in_a_row += 1
            return None
        return Summary(
            plan.summary_wrapper.replace("{summary}", outcome.text), outcome.facts, plan.start, cid, plan.summary_role
        )

    # -- requests -----------------------------------------------------------------------------------
    def _charge(self, input_tokens: int, output_tokens: int) -> float:
        cost = self.pricer.cost(input_tokens, output_tokens)
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
    ) -> None:
        # A rejected request (400) is not billed; a call that answered, even with nothing, is.
        billed = error is None if billed is None else billed
        cost = self._charge(context, output) if billed else 0.0
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
            )
        )

    def _request_size(self, view: View, grace: bool) -> tuple[str | None, int, int]:
        """The status line, prompt tokens and messages of a request for ``view`` (pure)."""
        status = self.tracker.status_line() if self.status else None
        _, view_tokens, in_view = self.state._totals(view)
        tokens = (
            REQUEST_OVERHEAD
            + view_tokens
            + (0 if grace else self.tools_tokens)
            + (MESSAGE_OVERHEAD + self.tok.count(status) if status else 0)
        )
        if self.config.calibration is not None:  # report what the provider would count (sim.calibration.fit)
            summarised = view.summary is not None or self._opens_summarised
            tokens = self.config.calibration.apply(tokens, in_view, summarised)
        return status, tokens, in_view

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

    def _decide(self, k: int, phase: int) -> Plan | None:
        """The policy's plan at ``phase`` of message ``k``; in lockstep, the one the members that stay agree on."""
        if self._members is not None:
            return self._sync(k, phase)
        if phase == MANUAL:
            return self.policy.decide(self.state, "manual")
        point: AskPoint = "response" if phase == RESPONSE else "request"
        return self.policy.decide(self.state, "auto") if self.policy.asked_at(self.state, point) else None

    def _agent_request(self, reply: Message, grace: bool = False) -> None:
        """Send the request that ``reply`` answers (compacting and retrying on overflow as the policy says)."""
        st = self.state
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
        self.tracker.turns += 1
        self.tracker.tool_calls += sz.calls
        self.tracker.last_context = tokens
        self._record_request(
            "grace" if grace else "agent", tokens, out, in_view, needed=len(due), visible=visible, violations=found
        )
        st.last_input_tokens = tokens
        st.last_output_tokens = out
        st.messages_at_last_request = len(self.ledger.messages)
        st.view_at_last_request = view
        st.chars_at_last_request = self.ledger.chars_prefix[-1]
        st.turn += 1
        self._append(reply, synthetic=grace)
        for dim, used, limit in self.tracker.new_warnings():
            self.log.append(BudgetWarned(st.turn, dim, used, limit))

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
        if self.config.budgets.on_exhaustion == "fail" or dim == "cost":
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
        if self._outcome is not None:
            return False
        if message is not None:
            self._script.append(message)
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
                    self._auto_compact(k, phase == AFTER_ROLLBACK)
                    phase = SEND
                if phase == SEND:
                    self._sync(k, SEND)
                    self._agent_request(m)
                    phase = BUDGET
                if phase == MANUAL:
                    plan = self._decide(k, MANUAL)
                    if plan is not None:
                        self._compact(plan, "manual")
                    continue
                if phase == BUDGET:
                    self._sync(k, BUDGET)
                    self._exhaustion(m, list(msgs[k + 1 : k + 40]))
                if after_response:
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
        e.log = self.log.copy()
        e.tracker = replace(self.tracker, warned=set(self.tracker.warned))
        e.violations, e.fact_rows = list(self.violations), list(self.fact_rows)
        e._index = dict(self._index)
        e._lost_on_entry = set(self._lost_on_entry)
        e._due, e.retained = list(self._due), dict(self.retained)
        e.retention_by_kind = {k: list(v) for k, v in self.retention_by_kind.items()}
        return e

    def _result(self, reason: str, exhausted: str | None) -> RunResult:
        rows, compactions = request_rows(self.log), compaction_rows(self.log)  # the log is the record
        agent = [r for r in rows if r["request_kind"] != "summariser" and not r["error"]]
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
            "cumulative_input_tokens": sum(r["context_tokens"] for r in rows if r["billed"]),
            "cumulative_output_tokens": sum(r["output_tokens"] for r in rows),
            "total_cost_usd": round(sum(r["cost_usd"] for r in rows), 10),
            "compactions": compactions,
            "compaction_count": len(compactions),
            "overflows": self.overflows,
            "facts_needed": self.retained["needed"],
            "facts_visible": self.retained["visible"],
            "retention_recall": self.retained["visible"] / self.retained["needed"] if self.retained["needed"] else None,
            "retention_by_kind": {
                k: {"needed": v[0], "visible": v[1], "recall": v[1] / v[0] if v[0] else None}
                for k, v in sorted(self.retention_by_kind.items())
            },
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
