"""Compaction, carried out: what the engine does with a policy's plan (:func:`compact`), a rollback to a checkpoint
(:func:`restore`), and the summary a summarising plan asks for (:func:`summary_of`).

Split from :mod:`sim.replay.engine`, which sequences a replay's phases and calls :func:`compact` wherever a policy
may compact (before a request, after a response, on ``/compact``, on overflow). Each function takes the engine whose
run it changes: the view, the log, the counters and the violations it records are the run's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from policies.base import Plan
from sim.core.errors import PromptTooLong
from sim.core.invariants import check_compaction, check_plan, check_view
from sim.core.log import CompactionCreated, CompactionFailed, Staleness
from sim.core.model import fits_window
from sim.core.view import Summary, View, edit_parts
from sim.replay import background
from sim.replay import model as wire
from sim.replay.billing import record_request
from sim.replay.reactive import signals_lost
from sim.replay.summariser import summarise
from sim.replay.summary_input import summariser_input

if TYPE_CHECKING:
    from sim.replay.engine import Engine


def compact(e: Engine, plan: Plan, trigger: str) -> bool:
    """Carry out ``plan``; True when the view changed. An automatic summary of a policy whose compaction runs in the
    background (``Policy.timing``) is made now and swapped in later (:mod:`sim.replay.background`): False here."""
    if plan.restore is not None:
        e.background = None  # a background compaction under way: what it summarised is not the view it would land on
        return restore(e, plan.restore, trigger)
    before = e.state.view
    view = plan.view_from(before)
    bad = check_plan(e.state, before, view)
    if bad:
        e.violate("plan-invalid", "agent", f"{type(e.policy).__name__}: {bad}")
        return False
    if trigger != "auto":
        e.background = None  # a /compact drops a background compaction under way (sim.replay.background)
    e.compaction_attempts += 1
    cid = f"c{e.compaction_attempts}"
    # whether the policy compacts because it is over its trigger (compaction-loop, below)
    over_before = trigger == "auto" and e.policy.over_trigger(e.state) is not False
    summarised = None
    if plan.summarize:
        summary = summary_of(e, plan, before, view, cid, trigger)
        if summary is None:
            if e.state.view is not before:
                e.violate("failed-summary-unchanged", "summariser", "the view changed although the summary failed")
            return False
        summarised = (before.start, plan.start)
        view = replace(view, summary=summary)
        if trigger == "auto" and e.policy.timing == "background":
            background.start(e, before, view, cid, plan.mode, summarised)
            return False
    return commit(e, before, view, cid, trigger, plan.mode, summarised, over_before)


def commit(
    e: Engine,
    before: View,
    view: View,
    cid: str,
    trigger: str,
    mode: str,
    summarised: tuple[int, int] | None,
    over_before: bool,
    staleness: Staleness | None = None,
) -> bool:
    """Make ``view`` the run's view in place of ``before`` (compaction ``cid``), log it and check it; True when the
    view changed. ``summarised``: the span a summary stands for, None when none was made."""
    tokens_before, tokens_after = e.view_tokens(before), e.view_tokens(view)
    if tokens_after == tokens_before and view == before:
        return False
    e.state.view = view
    e.state.compactions += 1
    if summarised is not None:
        e.state.failed_in_a_row = 0
        if e.reactive:
            signals_lost(e, before, view, cid)
    e.state.checkpoints.append(view)
    lost = e.retention.compacted(before, view)
    e.log.append(
        CompactionCreated(
            cid, e.state.turn, trigger, mode, view, tokens_before, tokens_after, summarised or (0, 0), lost, staleness
        )
    )
    if tokens_after >= tokens_before:
        e.violate(
            "compaction-shrinks",
            "agent",
            f"compaction {cid} ({mode}) went from {tokens_before} to {tokens_after} tokens",
        )
    for name, detail in check_compaction(e.state, before, view, edit_changes(e, before, view)):
        e.violate(name, "agent", f"compaction {cid}: {detail}")
    if trigger == "auto":  # a link of a compaction loop claims so now; settled after the next request
        e.loops.compacted(cid, e.state.turn, over_before and over_trigger(e))
    return True


#: The harness's contracts a background compaction can come to break while it is under way: a turn it summarised
#: asks for approval later (nothing of an unresolved pending turn may be compacted), a revert comes in of a change it
#: summarised (a kept revert keeps its change).
CONTRACTS = ("protected-span", "revert-resolution")


def stale_breaks(e: Engine, before: View, after: View) -> list[str]:
    """The contracts (:data:`CONTRACTS`) that swapping ``after`` in for ``before`` now would newly break and the
    policy does not declare it breaks; a background compaction that would is discarded instead."""
    found = {name for name, _ in check_compaction(e.state, before, after, edit_changes(e, before, after))}
    found |= {name for name, _ in check_view(e.state, after)} - {name for name, _ in check_view(e.state, before)}
    return [c for c in CONTRACTS if c in found and c not in e.policy.known_deviations]


def under_way(e: Engine, ask: Callable[[], Plan | None]) -> None:
    """Where the policy would be asked for an automatic compaction while a background one is under way: swap it in
    if it is due (:func:`sim.replay.background.due`); the policy is not asked for another compaction here, but a
    rollback it makes (``ask()``: the harness's revert contract, for a change an earlier summary took) happens, and
    drops the one under way, if any."""
    waited = background.due(e)
    if waited is not None:
        land(e, waited)
    plan = ask()  # right after a landing too: a revert may have come in of a change an earlier summary took
    if plan is not None and plan.restore is not None:
        compact(e, plan, "auto")


def land(e: Engine, waited: float = 0.0) -> bool:
    """Swap in the background compaction under way (:mod:`sim.replay.background`), the agent having waited ``waited``
    seconds for it; True when the view changed. It was made from the current view but for the messages that came
    in since, which stay after its summary."""
    b, e.background = e.background, None
    if b is None or e.state.view != b.before:  # only a cancel changes the view while one is under way: a guard
        return False
    broken = stale_breaks(e, b.before, b.view)
    if broken:
        why = f"background compaction {b.cid} discarded: landing now would break {', '.join(broken)}"
        e.log.append(CompactionFailed(e.state.turn, "auto", why))
        return False
    # The block goes first, what came since after it (the Anthropic docs have the swapped history sent at once "so
    # that thinking produced while the summary was being written stays valid"): a reply right after an assistant-role
    # block continues from it, as the reply after a summary made at once does.
    first, msgs = b.view.start, e.ledger.messages
    role = b.view.summary.role if b.view.summary is not None else None
    if role == "assistant" and not b.view.spans and first < len(msgs) and msgs[first].role == "assistant":
        e.ledger.openers.add(first)
    over_before = e.policy.over_trigger(e.state) is not False
    stale = background.staleness(e, b, waited)
    return commit(e, b.before, b.view, b.cid, "auto", b.mode, b.summarised, over_before, stale)


def over_trigger(e: Engine) -> bool:
    """Whether the policy is at or over its automatic trigger now; a policy that does not say is over
    when it would compact again."""
    over = e.policy.over_trigger(e.state)
    if over is None:
        return e.policy.decide(e.state, "auto") is not None
    return over


def restore(e: Engine, view: View, trigger: str) -> bool:
    """Roll the view back to an earlier checkpoint (the view of an earlier compaction, or the start)."""
    if not any(view is c for c in e.state.checkpoints):
        e.violate(
            "plan-invalid",
            "agent",
            f"{type(e.policy).__name__}: restore names a view that is not an earlier checkpoint of this run",
        )
        return False
    before = e.state.view
    if view is before:
        return False
    e.compaction_attempts += 1
    cid = f"c{e.compaction_attempts}"
    tokens_before, tokens_after = e.view_tokens(before), e.view_tokens(view)
    for name, detail in check_compaction(e.state, before, view, edit_changes(e, before, view)):
        e.violate(name, "agent", f"rollback {cid}: {detail}")
    e.state.view = view
    lost = e.retention.compacted(before, view)
    e.log.append(
        CompactionCreated(cid, e.state.turn, trigger, "rollback", view, tokens_before, tokens_after, (0, 0), lost)
    )
    e.loops.reset()
    return True


def edit_changes(e: Engine, before: View, after: View) -> Callable[[int], bool]:
    """Whether going from ``before`` to ``after`` newly edits a part of message ``i`` (for check_compaction):
    ``after`` shows a part otherwise than ``before`` did, and otherwise than the message holds it. Lifting an
    edit (a rollback to a checkpoint that did not hide or clear the part) compacts nothing."""
    msgs, trunc = e.ledger.messages, e.tok.truncate

    def changed(i: int) -> bool:
        a = edit_parts(msgs[i], before.rules_at(i), trunc)
        b = edit_parts(msgs[i], after.rules_at(i), trunc)
        raw = msgs[i].parts
        return any(x is not y and y is not r for x, y, r in zip(a, b, raw, strict=True))

    return changed


def summary_of(e: Engine, plan: Plan, before: View, after: View, cid: str, trigger: str) -> Summary | None:
    """The summary of what leaves the view (shown by ``before``, not by ``after``), each message as
    ``after`` edits it, with the previous summary folded in; None when the summariser call fails."""
    request = plan.summary_request
    given = summariser_input(request, before, after, e.requests, e.retention, e.tok.count)
    cfg = e.config.summariser
    asked = given.tokens(request, e.tok.count) + (e.tok.count(cfg.instruction) if cfg.instruction else 0)
    input_tokens = e.measure.summariser_tokens(asked, before.summary is not None)
    cap = cfg.max_output_tokens or e.model.output_reserve
    if request.max_tokens is not None:
        cap = min(cap, request.max_tokens)
    # A client that forks its agent request (Policy.summary_call) sends the view as the agent would, the
    # instruction appended; billed through the prompt cache, so only with caching on. A fork that does not
    # fit the window falls back to the separate request, as Claude Code falls back when its fork fails.
    fork = e.policy.summary_call == "fork" and e.config.cache == "provider"
    if fork:
        instruction = e.measure.instruction_tokens(_instruction(request.prompt, cfg.instruction))
        fork_tokens = e.prompt(before, e.measure.head_tokens(False), instruction)
        fork = fits_window(fork_tokens, e.model, max_output=cap)
        if fork:
            input_tokens = fork_tokens
    retries = 0 if fork else request.overflow_retries
    while True:
        try:
            wire.check_window(input_tokens, e.model, max_output=cap)
            break
        except PromptTooLong as exc:
            e.overflows += 1
            record_request(e, "summariser", input_tokens, 0, 0, error=f"prompt-too-long: {exc}", compaction_id=cid)
            if retries <= 0:
                e.log.append(CompactionFailed(e.state.turn, trigger, f"summariser overflow: {exc}"))
                e.state.failed_in_a_row += 1
                return None
        # sent again on the newest pieces it held less what the provider said was over (at least one piece fewer:
        # SummaryRequest.overflow_retries)
        retries -= 1
        over = input_tokens + cap - e.model.context_window
        held = sum(e.tok.count(t) for t in given.pieces)
        request = replace(request, input_newest_tokens=max(1, held - over))
        given = summariser_input(request, before, after, e.requests, e.retention, e.tok.count)
        asked = given.tokens(request, e.tok.count) + (e.tok.count(cfg.instruction) if cfg.instruction else 0)
        input_tokens = e.measure.summariser_tokens(asked, before.summary is not None)
    msgs = e.ledger.messages
    goal = next((m.text for m in msgs if m.role == "user" and m.command is None), "")
    calls = [p.name or "tool" for i in given.span for p in msgs[i].parts if p.kind == "tool_call"]
    import numpy as np  # only for a summary: a replay that makes none does without its import

    rng = np.random.default_rng(np.random.SeedSequence([e.config.seed, 1, e.compaction_attempts]))
    outcome = summarise(
        goal=goal,
        covered_messages=len(given.span),
        covered_calls=calls,
        candidates=given.candidates,
        rounds=dict(before.summary.rounds) if before.summary is not None else {},
        config=cfg,
        max_output_tokens=cap,
        input_tokens=input_tokens,
        seed=e.config.seed,
        rng=rng,
        count=e.tok.count,
    )
    out_tokens = e.tok.count(outcome.text)
    billed = outcome.failed != "summariser call failed"
    usage, at = None, None
    if fork and billed:  # a call that failed never reached the cache
        at = e.clock.compaction_time()
        usage = e.cache_usage(before, False, request.prompt, input_tokens, now=at, fork=True)
    record_request(
        e,
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
        e.log.append(CompactionFailed(e.state.turn, trigger, outcome.failed or "empty summary"))
        e.state.failed_in_a_row += 1
        return None
    text = request.wrapper.replace("{summary}", outcome.text)
    if outcome.text not in text:  # committed as a summary, but not the summariser's: as if it had failed
        e.violate(
            "failed-summary-unchanged",
            "summariser",
            f"compaction {cid} commits a summary without the summariser's text (wrapper "
            f"{request.wrapper[:40]!r} has no {{summary}}): the view changed with no summary in it",
        )
    return Summary(text, outcome.facts, plan.start, cid, request.role, outcome.rounds)


def _instruction(prompt: str, custom: str) -> str:
    """The summary request's instruction with the run's custom one (``-R instruction``) after it."""
    return f"{prompt}\n\n{custom}" if custom else prompt


__all__ = ["commit", "compact", "edit_changes", "land", "under_way", "over_trigger", "restore", "summary_of"]
