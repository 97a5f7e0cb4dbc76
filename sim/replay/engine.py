"""Replay a conversation through a policy, request by request, and record everything.

The engine only sequences a replay's phases; each thing it records or computes is a sibling's:
:mod:`sim.replay.compaction` carries out a policy's plan (a rollback, a summary), :mod:`sim.replay.measure` sizes
every message and request (one accounting mode, chosen when the run starts),
:mod:`sim.replay.retention` judges the facts each request needs, :mod:`sim.replay.summary_input` builds a
summariser request's transcript, :mod:`sim.replay.billing` prices requests and compactions,
:mod:`sim.replay.loops` watches for compaction loops, :mod:`sim.replay.result` turns the log into the run's tables
and summary. The policy decides, :mod:`sim.core.view` says what the model sees, :mod:`sim.replay.request` renders
and validates each request, :mod:`sim.replay.summariser` answers summariser calls, :mod:`sim.core.invariants`
checks each request. It touches no files, clocks or global random state; all randomness comes from
``numpy.random.SeedSequence([seed, ...])``.

Replay: user and tool messages of the script are appended to the log (tool results bounded by the
policy on entry). Every scripted ``assistant`` message is the reply to one agent request whose
prompt is the view at that moment: before it, the policy may compact; if the provider rejects the
prompt as too long, the policy may compact and retry (``retry_on_overflow`` times) before the run
ends with a context overflow (or, for a policy whose client survives it, ``overflow_fails_turn``, only the turn:
the script's messages up to the next user message are skipped). A ``/compact`` user command asks the policy to
compact at once, and that turn ends without a model call.

The reactive agent (:mod:`sim.replay.reactive`) and lockstep (:mod:`sim.replay.lockstep`) drive the engine
through its public methods: :meth:`Engine.append`, :meth:`Engine.side_request`, :meth:`Engine.resume`,
:meth:`Engine.finish_with`, :meth:`Engine.copy` and the fields they name.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import asdict, replace
from enum import IntEnum
from typing import Any

from policies.base import AskPoint, Plan, Policy
from sim.core.budgets import BudgetTracker
from sim.core.cache import CacheUsage, NoCache, cache_model
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.counting import stand_ins
from sim.core.errors import InvalidRequest, InvariantViolation, PromptTooLong
from sim.core.identity import run_id
from sim.core.invariants import Violation, check_view
from sim.core.log import (
    BudgetWarned,
    MessageAppended,
    RunFinished,
    RunLog,
)
from sim.core.model import fits_window
from sim.core.state import Ledger, RunState
from sim.core.tokenizers import CountingTokenizer, Memo, get_tokenizer, memoised
from sim.core.view import View
from sim.replay import model as wire
from sim.replay.anchoring import run_anchors
from sim.replay.background import UnderWay
from sim.replay.billing import Billing, record_request
from sim.replay.caching import RequestCache, placement_with_ttl
from sim.replay.compaction import compact, over_trigger, under_way
from sim.replay.integrity import deep_problems, log_problem
from sim.replay.loops import LoopWatch
from sim.replay.measure import Counted, measure_for
from sim.replay.reactions import Reactions
from sim.replay.reactive import react, task_success
from sim.replay.request import RequestBuilder
from sim.replay.result import RunIdentity, RunResult, run_result
from sim.replay.retention import Retention
from sim.replay.timing import RunClock


class Phase(IntEnum):
    """The phases of a message in a replay (:meth:`Engine.resume`)."""

    MESSAGE = 0
    MANUAL = 1
    AFTER_ROLLBACK = 2
    SEND = 3
    BUDGET = 4
    RESPONSE = 5


MESSAGE, MANUAL, AFTER_ROLLBACK, SEND, BUDGET, RESPONSE = Phase


def run_id_for(policy: Policy[Any], conversation: Conversation, config: RunConfig, memo: Memo | None = None) -> str:
    """A stable id from the policy spec, the conversation id and the seed: same inputs, same id."""
    settings = memoised(memo, config, "asdict", asdict)  # a sweep task starts many runs with one config
    return run_id(policy.spec(), conversation.id, config.seed, settings)


class _Finished(Exception):
    def __init__(self, reason: str, exhausted: str | None = None) -> None:
        self.reason, self.exhausted = reason, exhausted


class _TurnFailed(Exception):
    """The provider rejected a request as too long and the policy's client ends only the turn."""


#: In lockstep (sim.replay.lockstep.sync), before a phase of a message: the plan the members that stay agree on.
Lockstep = Callable[["Engine", int, Phase], Plan | None]


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
        self.measure: Counted = measure_for(
            conversation, self.tok, config.calibration, run_anchors(conversation, config, self.tok)
        )
        m = self.measure
        self.ledger = Ledger(sizer=m.edited_sizes, count=m.text_tokens, id_count=m.id_count)
        self.state = RunState(self.ledger, config.model)
        self.state.view = View(placeholder=policy.placeholder)
        self.state.checkpoints.append(self.state.view)
        self.log = RunLog()
        self.tracker = BudgetTracker(config.budgets)
        self.billing = Billing(config.model, conversation, self.tok.derived)
        self.violations: list[Violation] = []
        self.overflows = 0
        self.run_id = run_id_for(policy, conversation, config, self.tok.derived)
        self.status = appends_status(policy, config)
        self.has_system = bool(conversation.messages) and conversation.messages[0].role == "system"
        self.requests = RequestBuilder(self.ledger, config.model, self.has_system, self.tok.derived, self.tok.truncate)
        cached, provider = config.cache == "provider", config.model.price_provider
        self.cache = RequestCache(
            (lambda name: cache_model(provider, name)) if cached else NoCache,
            placement_with_ttl(policy.cache_placement, config.cache_ttl),
            self.ledger,
            self.has_system,
            m.message_blocks,
            m.text_tokens,
            m.cache_coefficients,
        )
        # The closed-loop agent (sim.replay.reactive): what it did, and whether it acts at all.
        self.reactive = config.agent.reactive
        self.reactions = Reactions()
        self.retention = Retention(
            conversation, self.tok.derived, self.ledger, self.reactions, self.has_system, self.tok.truncate
        )
        self._sent = -1  # the last script reply whose request was sent (task success counts what came after)
        # Bounding tool results on entry is skipped for policies that keep them as they are.
        self._bounds = policy.bound_key() is not None
        # Lockstep (sim.replay.lockstep.run_many): the policies replaying together, the hook that syncs them, and
        # the forks that left, with where they resume.
        self.members: list[Policy[Any]] | None = None
        self.lockstep: Lockstep | None = None
        self.forks: list[tuple[Engine, int, Phase]] = []
        # The script being replayed (grows when step() is given messages), the next message to take, and how
        # a stepped run ended.
        skipped = stand_ins(conversation)  # the recorded client's own compaction results
        self.left_out = len(skipped)
        self._script: list[Message] = [m for i, m in enumerate(conversation.messages) if i not in skipped]
        self.clock = RunClock(conversation, self._script, config.seed, self.tok.derived, self.measure.content_tokens)
        self._next = 0
        self._outcome: tuple[str, str | None] | None = None
        # Replies whose request failed the turn (Policy.overflow_fails_turn), and whether the script's messages are
        # being skipped until the next user message.
        self.failed_turns: list[int] = []
        self._skipping = False
        self.compaction_attempts = 0
        self.loops = LoopWatch()
        self.background: UnderWay | None = None  # made, not yet swapped in (Policy.timing); immutable, copies share

    # -- what other parts of a run read and do (sim.replay.reactive.Host, lockstep, the API) -----------------
    @property
    def script(self) -> list[Message]:
        """The script being replayed (it grows when :meth:`step` is given messages)."""
        return self._script

    def view_size(self, view: View) -> tuple[int, int]:
        """Exact prompt tokens of ``view`` without tools or the status line, and the messages it sends."""
        return self.state.view_size(view)

    def view_tokens(self, view: View) -> int:
        return self.view_size(view)[0]

    def fact_visible(self, f: Fact, view: View) -> bool:
        """Whether ``view`` shows fact ``f`` (:meth:`sim.replay.retention.Retention.visible_in`)."""
        return self.retention.visible_in(f, view)

    def prompt_fits(self) -> bool:
        """Whether the next agent request for the current view fits the model's window."""
        return fits_window(self._request_size(self.state.view, False)[1], self.model)

    def append(self, m: Message, synthetic: bool = False) -> int:
        """Append ``m`` to the log (a tool result bounded by the policy on entry); its index."""
        if m.role == "tool" and self._bounds:
            bounded = tuple(self.policy.bound_tool_result(p) for p in m.parts)
            if bounded != m.parts:
                m = Message(m.id, m.role, bounded, m.pending, m.resolves, m.usage, m.meta)
        sz = self.measure.sizes(m)
        i = self.ledger.append(m, sz.chars, sz.tokens, sz.calls)
        self.log.append(MessageAppended(i, m, synthetic), sz.content_hash)
        self.retention.entered(m)
        return i

    def side_request(self, k: int, reply: Message) -> None:
        """A request the reactive agent adds before script message ``k`` (sim.replay.reactive), taken like a
        scripted one: the policy's automatic compaction, the request, the budget check, and the compaction
        after the response for a policy asked then. Reactive runs replay alone (no lockstep)."""
        self._auto_compact(k, False)
        self._agent_request(reply, synthetic=True)
        self._exhaustion(reply, [])
        if "response" in self.policy.when:
            self._after_response(k)

    def _after_response(self, k: int) -> None:
        """The automatic compaction of a policy asked right after a reply. A summary placed right before that reply
        makes it stand for the model's answer to the summary (the client asks again from the summary, as the
        Anthropic SDK's ``compaction_control`` does; a replay has one scripted reply): it opens a turn afresh."""
        if self.background is not None:
            return under_way(self, lambda: self._decide(k, RESPONSE))
        plan = self._decide(k, RESPONSE)
        if plan is None or not compact(self, plan, "auto"):
            return
        view, n = self.state.view, len(self.ledger.messages)
        if plan.summarize and view.start == n - 1 and view.summary_slot is None and not view.injected:
            self.ledger.openers.add(n - 1)

    def violate(self, invariant: str, request_kind: str, detail: str) -> None:
        v = Violation(invariant, self.state.turn, request_kind, detail)
        self.violations.append(v)
        if self.config.strict:
            raise InvariantViolation(str(v))

    # -- requests -----------------------------------------------------------------------------------
    def prompt(self, view: View, head: int, tail: int) -> int:
        """The prompt tokens of a request for ``view`` between ``head`` and ``tail`` tokens (the tools before, the
        status line or an instruction after), as the provider would count them (:meth:`Counted.prompt_tokens`)."""
        return self._prompt_and_messages(view, head, tail)[0]

    def _prompt_and_messages(self, view: View, head: int, tail: int) -> tuple[int, int]:
        _, view_tokens, in_view, ids = self.state.totals(view)
        tokens = head + view_tokens + tail
        return self.measure.prompt_tokens(tokens, in_view, view.summary is not None, ids), in_view

    def _request_size(self, view: View, grace: bool) -> tuple[str | None, int, int]:
        """The status line, prompt tokens and messages of a request for ``view`` (pure)."""
        status = self.tracker.status_line() if self.status else None
        tokens, in_view = self._prompt_and_messages(
            view, self.measure.head_tokens(grace), self.measure.status_tokens(status)
        )
        return status, tokens, in_view

    def _auto_compact(self, k: int, after_rollback: bool) -> None:
        """The policy's automatic compaction before the request answered by message ``k``; in lockstep, the
        rollback the members agree on (the others fork off in ``_sync``)."""
        if self.background is not None:
            return under_way(self, lambda: self._decide(k, MESSAGE))
        if not after_rollback:
            plan = self._decide(k, MESSAGE)
            if plan is None or not compact(self, plan, "auto"):
                return
            if plan.restore is None:
                # A policy whose system checks again after compacting (recheck_after_compaction) is asked until it
                # declines; each compaction changed the view, and the log bounds how often that can happen.
                for _ in range(len(self.state) if self.policy.recheck_after_compaction else 0):
                    plan = self._decide(k, AFTER_ROLLBACK)
                    if plan is None or plan.restore is not None or not compact(self, plan, "auto"):
                        break
                return
        # A rollback restores an earlier, larger view; the policy may compact it before sending.
        plan = self._decide(k, AFTER_ROLLBACK)
        if plan is not None and plan.restore is None:
            compact(self, plan, "auto")

    def _decide(self, k: int, phase: Phase) -> Plan | None:
        """The policy's plan at ``phase`` of message ``k``; in lockstep, the one the members that stay agree on."""
        if self.members is not None:
            return self._sync(k, phase)
        if phase == MANUAL:
            return self.policy.decide(self.state, "manual")
        point: AskPoint = "response" if phase == RESPONSE else "request"
        return self.policy.decide(self.state, "auto") if self.policy.asked_at(self.state, point) else None

    def _agent_request(self, reply: Message, grace: bool = False, synthetic: bool = False) -> None:
        """Send the request that ``reply`` answers (compacting and retrying on overflow as the policy says);
        ``reply`` is logged as synthetic for a grace turn or when ``synthetic`` (the reactive agent's)."""
        st = self.state
        self.billing.use_model(reply)
        attempts = 1 + max(0, self.policy.retry_on_overflow)
        anthropic = self.model.provider == "anthropic"
        while True:
            view = st.view
            status, tokens, in_view = self._request_size(view, grace)
            found = [Violation(name, st.turn, "agent", detail) for name, detail in check_view(st, view)]
            sys_problem = self.requests.system_problem(view)
            if sys_problem:
                found.append(Violation("system-first", st.turn, "agent", sys_problem))
            rejected = None
            try:
                self.requests.validate(view, status)
            except InvalidRequest as exc:
                self.requests.reset()
                rejected = ("tool-pairing", str(exc))
            thinking = self.requests.thinking_problem(view) if anthropic else None
            if rejected is None and thinking is not None:
                rejected = ("atomic-units", thinking)
            if rejected is not None:
                found.append(Violation(rejected[0], st.turn, "agent", rejected[1]))
                self._record_violations(found)
                error = f"invalid-request: {rejected[1]}"
                record_request(self, "agent", tokens, 0, in_view, error=error, violations=found)
                raise _Finished("provider-error") from None
            if self.config.deep_checks:
                problems = deep_problems(self.log, self.ledger, st, self.requests, self.model.provider)
                found.extend(Violation(name, st.turn, "agent", detail) for name, detail in problems)
            self._record_violations(found)
            try:
                wire.check_window(tokens, self.model)
            except PromptTooLong as exc:
                self.overflows += 1
                record_request(self, "agent", tokens, 0, in_view, error=f"prompt-too-long: {exc}", violations=found)
                attempts -= 1
                if attempts > 0:
                    plan = self.policy.decide(st, "overflow")
                    if plan is not None and compact(self, plan, "overflow"):
                        continue
                if self.policy.overflow_fails_turn:
                    raise _TurnFailed from None
                raise _Finished("context-overflow") from None
            break
        needed, visible = self.retention.judge(view, st.turn)
        out = self.measure.reply_tokens(reply)
        self.tracker.turns += 1
        self.tracker.tool_calls += self.measure.sizes(reply).calls
        self.tracker.last_context = tokens
        record_request(
            self,
            "grace" if grace else "agent",
            tokens,
            out,
            in_view,
            needed=needed,
            visible=visible,
            violations=found,
            usage=self.cache_usage(view, grace, status, tokens),
        )
        st.last_input_tokens = tokens
        st.last_output_tokens = None  # the reply is not in yet: what the policy counts now is this prompt
        st.messages_at_last_request = len(self.ledger.messages)
        st.view_at_last_request = view
        st.chars_at_last_request = self.ledger.chars_prefix[-1]
        if self.loops.pending():  # the claim of the last automatic compaction, judged now its prompt is counted
            detail = self.loops.settle(over_trigger(self), st.last_input_tokens)
            if detail is not None:
                self.violate("compaction-loop", "agent", detail)
        st.last_output_tokens = out
        st.turn += 1
        if anthropic and self.requests.final_turn(view).fresh:  # the reply opens an assistant turn afresh
            self.ledger.openers.add(len(self.ledger.messages))
        self.append(reply, synthetic=grace or synthetic)
        for dim, used, limit in self.tracker.new_warnings():
            self.log.append(BudgetWarned(st.turn, dim, used, limit))

    def cache_usage(
        self, view: View, grace: bool, status: str | None, tokens: int, *, now: float | None = None, fork: bool = False
    ) -> CacheUsage:
        """The prompt cache's bill of a request of ``tokens`` (as reported) for ``view``, sent at ``now`` (default:
        when the current request starts). With ``fork``, a forked summariser request whose last message is the
        instruction ``status``. With a calibration, the blocks carry the provider's count (sim.replay.caching) up
        to its ``after_compaction`` term and rounding. A test holds the blocks to the request's tokens where
        nothing rewrote the log."""
        head = self.measure.head_tokens(grace)
        tail = self.measure.instruction_tokens(status or "") if fork else self.measure.status_tokens(status)
        when, kind = self.clock.now if now is None else now, "instruction" if fork else "status"
        return self.cache.usage(view, head, grace, status, tail, when, self.billing.model_name, kind).fitted(tokens)

    def _record_violations(self, found: list[Violation]) -> None:
        for v in found:
            self.violate(v.invariant, v.request_kind, v.detail)

    def log_problem(self) -> str | None:
        """What is wrong with the log, if anything (the ``log-append-only`` invariant)."""
        return log_problem(self.log, self.ledger)

    def _exhaustion(self, reply: Message, upcoming: list[Message]) -> None:
        dim = self.tracker.exhausted()
        if dim is None:
            return
        if self.config.budgets.on_exhaustion == "fail" or dim in ("cost", "duration"):
            raise _Finished("budget-failed", dim)
        if reply.calls:
            not_run = "not executed: the run's budget is exhausted"
            results = tuple(
                Part("tool_result", not_run, call_id=p.call_id, name=p.name, is_error=True) for p in reply.calls
            )
            self.append(Message(f"{reply.id}-settled", "tool", results), synthetic=True)
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
        return self.finish_with(*self.resume(0, MESSAGE))

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
        outcome = self.resume(k, MESSAGE, k + 1)
        if outcome != ("completed", None):
            self._outcome = outcome
        return self._outcome is None

    def finish(self) -> RunResult:
        """End a run driven by :meth:`step`: check its log and give the result. Call once."""
        return self.finish_with(*(self._outcome or ("completed", None)))

    def resume(self, k0: int, phase0: Phase, k1: int | None = None) -> tuple[str, str | None]:
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
        after_response = any("response" in p.when for p in (self.members or (self.policy,)))
        try:
            for k in range(k0, len(msgs) if k1 is None else k1):
                m = msgs[k]
                if self._skipping:  # a failed turn: nothing more of it is sent or appended
                    if m.role != "user":
                        continue
                    self._skipping = False
                phase = phase0 if k == k0 else MESSAGE
                if phase == MESSAGE and m.role != "assistant":
                    self.append(m)
                    if not (m.role == "user" and m.command == "compact"):
                        continue
                    phase = MANUAL
                if phase in (MESSAGE, AFTER_ROLLBACK):
                    self.clock.at = k - 1  # before the request that message k answers, which starts then
                    self._auto_compact(k, phase == AFTER_ROLLBACK)
                    phase = SEND
                if phase == SEND:
                    self._sync(k, SEND)
                    self.tracker.elapsed_seconds = self.clock.start_request(k)  # the status line's, the budget's
                    self.clock.at = None
                    try:
                        if self.reactive and react(self, k, m, self.config.agent):
                            self._auto_compact(k, False)  # the agent's messages came after the policy was asked
                        self._agent_request(m)
                    except _TurnFailed:
                        self.failed_turns.append(k)
                        self._skipping = True
                        continue
                    self._sent = k
                    phase = BUDGET
                if phase == MANUAL:
                    self.clock.at = k  # once the command is complete
                    plan = self._decide(k, MANUAL)
                    if plan is not None:
                        compact(self, plan, "manual")
                    continue
                if phase == BUDGET:
                    self._sync(k, BUDGET)
                    self._exhaustion(m, list(msgs[k + 1 : k + 40]))
                if after_response:
                    self.clock.at = k  # once the reply is complete
                    self._after_response(k)
        except _Finished as fin:
            return fin.reason, fin.exhausted
        except InvariantViolation:
            return "invariant-violation", None
        return "completed", None

    def finish_with(
        self, reason: str, exhausted: str | None, *, checked: bool = False, problem: str | None = None
    ) -> RunResult:
        """End the run with ``reason``: check the log (unless ``checked``, when ``problem`` is the verdict), close
        it, and give the result."""
        if not self.config.strict or reason != "invariant-violation":
            if not checked:
                problem = self.log_problem()
            if problem:
                try:
                    self.violate("log-append-only", "agent", problem)
                except InvariantViolation:
                    reason = "invariant-violation"
        self.log.append(RunFinished(reason, exhausted))
        policy = self.policy
        ident = RunIdentity(
            self.run_id, policy.name, policy.params(), policy.params_hash(), self.conv.id, self.config.seed
        )
        completed = reason == "completed"
        return run_result(
            ident,
            self.log,
            reason=reason,
            exhausted=exhausted,
            billing=self.billing,
            cached=self.config.cache == "provider",
            retention=self.retention,
            unreached=self.retention.unreached(self._script) if not completed or self.failed_turns else {},
            reactions=self.reactions,
            task_success=task_success(
                self._script, self.reactions, self.config.agent, None if completed else self._sent, self.failed_turns
            ),
            overflows=self.overflows,
            failed_turns=len(self.failed_turns),
            violations=self.violations,
            messages=len(self.ledger.messages),
            left_out=self.left_out,
        )

    def _sync(self, k: int, phase: Phase) -> Plan | None:
        """In lockstep, before ``phase`` of message ``k``: the compaction the members that stay agree on, after
        forking off those whose runs differ from here (``sim.replay.lockstep.sync``); alone, nothing to do."""
        if self.members is None or self.lockstep is None:
            return None
        return self.lockstep(self, k, phase)

    def copy(self, policy: Policy[Any] | None = None) -> Engine:
        """This run as it stands, to step on independently: a copy of everything the run has done, sharing
        nothing mutable with this engine; under ``policy`` when given (lockstep's forks), else this policy.

        Only valid between steps, where everything a run has done is in the fields below; a field added
        to the engine that changes during a run must be copied here too (the test of run_many checks
        every result field against separate runs, and the stateful test steps copies alongside)."""
        policy = policy if policy is not None else self.policy
        e = copy.copy(self)
        e.policy, e.members, e.forks, e._script = policy, None, [], list(self._script)
        e.run_id = run_id_for(policy, self.conv, self.config, self.tok.derived)
        e.ledger = self.ledger.copy()
        e.state = self.state.copy(e.ledger)
        e.requests = self.requests.copy(e.ledger)
        e.cache = self.cache.copy(e.ledger)
        e.log = self.log.copy()
        e.tracker = replace(self.tracker, warned=set(self.tracker.warned))
        e.violations = list(self.violations)
        e.failed_turns = list(self.failed_turns)
        e.billing = self.billing.copy()
        e.reactions = self.reactions.copy()
        e.retention = self.retention.copy(e.ledger, e.reactions)
        e.loops = replace(self.loops)
        e.clock = self.clock.copy(e._script)
        return e


def run(
    policy: Policy[Any],
    conversation: Conversation,
    config: RunConfig | None = None,
    *,
    tokenizer: CountingTokenizer | None = None,
) -> RunResult:
    """Replay ``conversation`` under ``policy``; deterministic in (policy, conversation, config)."""
    return Engine(policy, conversation, config or RunConfig(), tokenizer).run()


def appends_status(policy: Policy[Any], config: RunConfig) -> bool:
    """Whether each request carries the run-status line: as the policy's system does, unless the run says."""
    return policy.run_status if config.run_status == "auto" else config.run_status == "appended"


__all__ = ["Engine", "Phase", "RunConfig", "RunResult", "appends_status", "run", "run_id_for"]
