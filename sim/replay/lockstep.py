"""Lockstep: several configurations replay one conversation together while their policies agree.

A sweep's configurations of one policy usually agree until the first compaction, and often never compact at
all. :func:`run_many` replays them as one engine while every member declines to compact, and forks a member
off (:meth:`Engine.copy`: a copy of the whole run state) at the first step where its run may differ. Results
are the same as separate runs; ``tests/test_lockstep.py`` holds every field of every result to that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies.base import AskPoint, Plan, Policy, Trigger
from sim.core.config import RunConfig
from sim.core.conversation import Conversation
from sim.core.tokenizers import CountingTokenizer
from sim.replay.engine import AFTER_ROLLBACK, MANUAL, MESSAGE, RESPONSE, SEND, Engine, Phase, RunResult, appends_status


class _Dissolved(Exception):
    """Every member of a lockstep replay has forked off."""


def _replay_key(policy: Policy[Any], config: RunConfig) -> tuple[object, ...]:
    """What shapes a replay besides the policy's decisions: policies with equal keys see the same
    requests for as long as they all decline to compact, and the prompt cache bills them alike (the
    engine's cache takes its breakpoints from the policy it starts with, and a fork keeps them)."""
    return (
        policy.placeholder,
        appends_status(policy, config),
        policy.bound_key(),
        policy.cache_placement,
        policy.timing,
    )


def sync(e: Engine, k: int, phase: Phase) -> Plan | None:
    """In lockstep, before ``phase`` of message ``k``: fork off the members whose runs differ from here;
    the compaction the members that stay agree on, if any.

    Members stay while their policies decline to compact. Members of one class that make the same
    manual compaction, or the same automatic rollback, stay together too (any other automatic
    compaction is followed by a check that depends on each policy's own trigger, so it forks). A
    request the provider would reject as too long, and an exhausted budget, fork every member:
    policies may act differently there. A fork is this engine's state under the member's policy
    (members', for several), resumed at this phase.
    """
    members = e.members
    if members is None:
        return None
    st = e.state
    groups: list[list[Policy[Any]]] = []
    plans: list[Plan | None] = []
    if phase in (MESSAGE, AFTER_ROLLBACK, MANUAL, RESPONSE):
        trigger: Trigger = "manual" if phase == MANUAL else "auto"
        point: AskPoint = "response" if phase == RESPONSE else "request"
        for p in members:
            plan = p.decide(st, trigger) if phase == MANUAL or p.asked_at(st, point) else None
            shareable = plan is None or phase == MANUAL or (phase == MESSAGE and plan.restore is not None)
            for g, q in zip(groups, plans, strict=True):
                if shareable and q == plan and (plan is None or type(g[0]) is type(p)):
                    g.append(p)
                    break
            else:
                groups.append([p])
                plans.append(plan)
        # The members that decline stay here; if none does, the first group that may stay together does.
        keep = next((i for i, q in enumerate(plans) if q is None), -1)
        if keep < 0 and phase != AFTER_ROLLBACK:
            keep = next((i for i, q in enumerate(plans) if q is not None and (phase == MANUAL or q.restore)), -1)
    elif phase == SEND:
        if e.prompt_fits():
            return None
        groups, plans, keep = [[p] for p in members], [None] * len(members), -1
    else:  # BUDGET
        if e.tracker.exhausted() is None:
            return None
        groups, plans, keep = [[p] for p in members], [None] * len(members), -1
    if keep == 0 and len(groups) == 1:
        return plans[0]
    for i, g in enumerate(groups):
        if i != keep:
            fork = e.copy(g[0])
            fork.members = g if len(g) > 1 else None
            e.forks.append((fork, k, phase))
    if keep < 0:
        raise _Dissolved
    e.policy = groups[keep][0]
    e.members = groups[keep] if len(groups[keep]) > 1 else None  # alone, it runs as a plain engine
    return plans[keep]


def _complete(e: Engine, k: int, phase: Phase) -> dict[int, RunResult]:
    """Replay ``e`` from phase ``phase`` of message ``k`` to the end, with every fork it makes; the results
    by ``id`` of their policy."""
    if e.members is None:
        return {id(e.policy): e.finish_with(*e.resume(k, phase))}
    try:
        outcome: tuple[str, str | None] | None = e.resume(k, phase)
    except _Dissolved:
        outcome = None
    done: dict[int, RunResult] = {}
    if outcome is not None:  # the members still here finished together, on one log: check it once
        problem = e.log_problem()
        for p in e.members if e.members is not None else [e.policy]:
            done[id(p)] = e.copy(p).finish_with(*outcome, checked=True, problem=problem)
    for fork, k2, phase2 in e.forks:
        done.update(_complete(fork, k2, phase2))
    return done


def run_many(
    policies: Sequence[Policy[Any]],
    conversation: Conversation,
    config: RunConfig | None = None,
    *,
    tokenizer: CountingTokenizer | None = None,
) -> list[RunResult]:
    """:func:`run` for each policy, in order, with the same results, sharing the work they have in common.

    Policies that shape requests alike (:func:`_replay_key`) replay together, in lockstep, while each
    declines to compact; a policy forks off with a copy of the state at the first step where its run
    could differ and carries on alone. A sweep's configurations of one policy usually agree until the
    first compaction, and often never compact at all, so this saves most of their engine work. Policy
    decisions must be pure (as :meth:`Policy.decide` requires): every member is asked at every step.
    """
    config = config or RunConfig()
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, p in enumerate(policies):
        # A reactive agent's trajectory depends on what its view lost, so its runs never share a replay.
        groups.setdefault((i,) if config.agent.reactive else _replay_key(p, config), []).append(i)
    out: dict[int, RunResult] = {}
    for idx in groups.values():
        members = [policies[i] for i in idx]
        lead = Engine(members[0], conversation, config, tokenizer)
        lead.members = members if len(members) > 1 else None
        lead.lockstep = sync
        done = _complete(lead, 0, MESSAGE)
        out.update((i, done[id(policies[i])]) for i in idx)
    return [out[i] for i in range(len(policies))]


__all__ = ["run_many", "sync"]
