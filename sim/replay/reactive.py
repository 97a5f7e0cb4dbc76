"""The closed-loop agent: what a reactive run does before a scripted request whose facts the view lost.

:mod:`sim.core.agent` says what the options mean and where the rules come from; this module carries them
out on an engine through the small protocol :class:`Host` (append a message, send an extra request, and ask
the run's retention whether a fact is visible), so the engine's own bookkeeping (tokens, cost, cache, budgets,
the policy's compactions before every request) covers the extra work as it covers the script.

Every message added here is synthetic and has an id derived from the scripted reply it precedes
(``<reply id>~re1``), unique in the log. A message that carries a fact again (a re-acquired tool result, a
redone decision, a restated constraint) is recorded as a *copy* of the fact's source, so the fact counts as
visible wherever a copy is shown, and a later compaction that drops the copy loses the fact again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from sim.core.agent import AgentConfig
from sim.core.budgets import BudgetTracker
from sim.core.config import RunConfig
from sim.core.conversation import Fact, Message, Part
from sim.core.invariants import minus, ranges
from sim.core.state import Ledger, RunState
from sim.core.view import View
from sim.replay.reactions import Reactions, draw
from sim.replay.retention import Retention

#: How far back from a fact's source the exchange that led to it is looked for (messages, within its turn).
REDO_LOOKBACK = 12


class Host(Protocol):
    """What the reactive agent needs of a run (:class:`sim.replay.engine.Engine` is one): the run's state, log
    and facts, and two actions: append a message, and send an extra request answered by a reply of its own."""

    state: RunState
    ledger: Ledger
    config: RunConfig
    tracker: BudgetTracker
    reactions: Reactions
    retention: Retention

    @property
    def script(self) -> list[Message]:
        """The script being replayed (it grows when a run is stepped with new messages)."""
        ...

    def append(self, m: Message, synthetic: bool = False) -> int:
        """Append ``m`` to the log (a tool result bounded as the policy bounds it); its index."""
        ...

    def side_request(self, k: int, reply: Message) -> None:
        """An extra agent request before script message ``k``, answered by ``reply``, taken as a scripted one."""
        ...


def react(engine: Host, k: int, reply: Message, cfg: AgentConfig) -> bool:
    """Act on the facts the request answered by ``reply`` (script message ``k``) needs, before it is sent; True
    when the agent added messages (the engine then asks the policy again before the scripted request).

    The facts due are set aside while the extra requests go out (they are judged at the scripted request,
    after the agent has acted), then handed back."""
    before = len(engine.ledger.messages)
    due, engine.retention.due = engine.retention.due, []
    try:
        pending, engine.reactions.stalls_pending = engine.reactions.stalls_pending, []
        for failed in pending:  # a summary dropped "this is not working": the agent tries it again
            for _ in range(cfg.stall_steps):
                if _repeat(engine, failed, k, reply):
                    engine.reactions.stalls += 1
        seen: set[str] = set()
        for f in due:
            if f.id in seen:
                continue
            seen.add(f.id)
            if _usable(engine, f, k, cfg):
                continue
            _act_on_loss(engine, f, k, reply, cfg)
    finally:
        engine.retention.due = due + engine.retention.due
    return len(engine.ledger.messages) > before


def is_task(m: Message) -> bool:
    """A user's request: a user message with words of its own (not a command, not only tool results)."""
    return m.role == "user" and m.command is None and any(p.kind == "text" for p in m.parts)


def task_counts(script: list[Message]) -> list[int]:
    """``out[k]``: how many user requests script messages ``[0, k)`` hold (one pass; ``len(script) + 1`` entries)."""
    out = [0]
    for m in script:
        out.append(out[-1] + is_task(m))
    return out


def task_of(counts: list[int], k: int) -> int:
    """The task script message ``k`` serves (``counts`` from :func:`task_counts`): the user requests before it,
    less one (0 before any)."""
    return max(0, counts[min(k, len(counts) - 1)] - 1)


def task_success(
    script: list[Message], reactions: Reactions, cfg: AgentConfig, sent: int | None, failed_turns: Sequence[int] = ()
) -> float:
    """The share of the script's tasks done: a task fails with ``max_unrepaired_errors`` errors left standing in
    it or a turn of it failed (the script reply at each of ``failed_turns`` was never answered:
    ``Policy.overflow_fails_turn``), and when the run stopped after sending script reply ``sent``, the task of the
    first reply it never sent and every later one were not done (a run that stops after its last reply left
    nothing undone)."""
    counts = task_counts(script)
    total = max(1, counts[-1])
    failed = {t for t, n in reactions.unrepaired_by_task.items() if n >= cfg.max_unrepaired_errors}
    failed.update(task_of(counts, j + 1) for j in failed_turns)
    if sent is not None:
        unsent = next((j for j in range(sent + 1, len(script)) if script[j].role == "assistant"), None)
        if unsent is not None:
            failed.update(range(task_of(counts, unsent + 1), total))
    return (total - len(failed)) / total


def _usable(engine: Host, f: Fact, k: int, cfg: AgentConfig) -> bool:
    """Whether the agent can use ``f`` now: visible, and (with context rot) drawn as used."""
    st = engine.state
    if not engine.retention.visible_in(f, st.view):
        return False
    if not (cfg.rot_length or cfg.rot_middle):
        return True
    length = min(1.0, st.estimated_context_tokens() / max(1, st.model.input_budget))
    p_use = 1.0 - cfg.rot_length * length - cfg.rot_middle * _middle(engine, f)
    if draw(engine.config.seed, "use", f.id, k) < p_use:
        return True
    engine.reactions.facts_unused += 1
    return False


def _middle(engine: Host, f: Fact) -> float:
    """1 for a fact whose newest shown carrier sits in the middle of the view's messages, 0 at either end (a
    fact only a summary or an injected message carries sits at the start)."""
    st = engine.state
    view, n = st.view, len(st)
    shown = [i for i in _carriers(engine, f) if view.shows(i)]
    if not shown or n <= 1:
        return 0.0
    lo = view.start if view.start < n else 0
    pos = (max(shown) - lo) / max(1, n - 1 - lo)
    return max(0.0, 1.0 - abs(2.0 * min(1.0, max(0.0, pos)) - 1.0))


def _carriers(engine: Host, f: Fact) -> list[int]:
    index = engine.ledger.index
    ids = [f.source, *engine.reactions.copies.get(f.source, ())]
    return [index[i] for i in ids if i in index]


def _act_on_loss(engine: Host, f: Fact, k: int, reply: Message, cfg: AgentConfig) -> None:
    src = engine.ledger.index.get(f.source)
    if src is None:  # established by a message the run never reached: nothing to act on
        return
    source = engine.ledger.messages[src]
    part = next((p for p in source.parts if p.kind == "tool_result" and f.text and f.text in p.text), None)
    if source.role == "tool" and part is not None and f.id not in engine.retention.lost_on_entry:
        _reacquire(engine, f, src, part, k, reply)
        return
    r = engine.reactions
    if draw(engine.config.seed, "wrong", f.id, k) < cfg.wrong_recall:
        r.errors += 1
        if draw(engine.config.seed, "repair", f.id, k) < cfg.repair_rate:
            r.errors_repaired += 1
            for _ in range(cfg.repair_steps):
                _redo(engine, f, src, k, reply)
        else:
            r.errors_unrepaired += 1
            if len(r.task_counts) != len(engine.script) + 1:  # counted once per script (it grows when stepped)
                r.task_counts = task_counts(engine.script)
            task = task_of(r.task_counts, k)
            r.unrepaired_by_task[task] = r.unrepaired_by_task.get(task, 0) + 1
        return
    r.repeated_work += 1
    _redo(engine, f, src, k, reply)


def _next_id(engine: Host, reply: Message) -> str:
    """A new id for a message the agent adds (and, with ``-call``, ``-result``, ``-results``, for its results)."""
    engine.reactions.serial += 1
    mid = f"{reply.id}~re{engine.reactions.serial}"
    engine.reactions.added.update((mid, f"{mid}-result", f"{mid}-results"))
    return mid


def _extra_request(engine: Host, k: int, answer: Message) -> None:
    before = engine.tracker.cost
    engine.reactions.extra_requests += 1
    try:
        engine.side_request(k, answer)
    finally:
        engine.reactions.extra_cost_usd += engine.tracker.cost - before


def _call_of(engine: Host, src: int, call_id: str | None) -> Part | None:
    msgs = engine.ledger.messages
    for i in range(src - 1, max(-1, src - 1 - REDO_LOOKBACK), -1):
        for p in msgs[i].parts:
            if p.kind == "tool_call" and p.call_id == call_id:
                return p
    return None


def _reacquire(engine: Host, f: Fact, src: int, part: Part, k: int, reply: Message) -> None:
    """Call the tool again: one extra request answered by the call, then a result of the original's size."""
    engine.reactions.reacquisitions += 1
    call = _call_of(engine, src, part.call_id)
    mid = _next_id(engine, reply)
    call_id = f"{mid}-call"
    name = part.name or (call.name if call is not None else None) or "read"
    args = call.args if call is not None else "{}"
    _extra_request(engine, k, Message(mid, "assistant", (Part("tool_call", call_id=call_id, name=name, args=args),)))
    result = Message(f"{mid}-result", "tool", (replace(part, call_id=call_id),))
    engine.append(result, synthetic=True)
    engine.reactions.add_copy(f.source, result.id)


def _exchange_before(engine: Host, src: int) -> tuple[Message, list[Part]] | None:
    """The tool exchange that led to message ``src``: the nearest earlier reply with tool calls in the same
    turn, and the results that answered it."""
    msgs = engine.ledger.messages
    for i in range(src - 1, max(-1, src - 1 - REDO_LOOKBACK), -1):
        m = msgs[i]
        if m.role == "user":
            return None
        if m.role == "assistant" and m.calls:
            ids = {p.call_id for p in m.calls}
            results = [
                p for j in range(i + 1, src) for p in msgs[j].parts if p.kind == "tool_result" and p.call_id in ids
            ]
            return (m, results) if results else None
    return None


def signals_lost(engine: Host, before: View, after: View, cid: str) -> None:
    """After a compaction that wrote a summary: each failing tool result (``is_error``: a command that exited
    non-zero, a failing test run) that left the view is a "this is not working" signal, and the summary keeps it
    with the retention model's ``recall`` keep probability (Factory's recall probe asks "what was the original
    error?"). A signal the summary dropped makes the agent try the failing step again before its next one
    (``stall_steps`` times), as the Complexity Trap study reports summaries lengthen trajectories by smoothing
    over failure signals. Masking or clearing leaves the agent's own replies, which react to the failure, in the
    view, so only summaries drop the signal here."""
    msgs, n = engine.ledger.messages, len(engine.ledger.messages)
    keep = engine.config.summariser.keep("recall")
    for a, b in minus(ranges(before, n), ranges(after, n)):
        for i in range(a, b):
            m = msgs[i]
            if m.role != "tool" or not any(p.is_error for p in m.parts) or m.id in engine.reactions.added:
                continue  # a failure tried again is no new signal: only the script's own failures stall
            if draw(engine.config.seed, "signal", m.id, cid) >= keep:
                engine.reactions.stalls_pending.append(i)


def _repeat(engine: Host, failed: int, k: int, reply: Message) -> bool:
    """Try again the exchange that ended in the failing tool message ``failed``: its calls, then its results
    (the same failure, of the same size). False when no such exchange is found."""
    exchange = _exchange_before(engine, failed + 1)
    if exchange is None:
        return False
    asked, results = exchange
    answered = {p.call_id for p in results}
    calls = [p for p in asked.calls if p.call_id in answered]  # a batch's results after ``failed`` stay out
    mid = _next_id(engine, reply)
    renamed = {p.call_id: f"{mid}-{n}" for n, p in enumerate(calls)}
    _extra_request(engine, k, Message(mid, "assistant", tuple(replace(p, call_id=renamed[p.call_id]) for p in calls)))
    answers = tuple(replace(p, call_id=renamed[p.call_id]) for p in results)
    engine.append(Message(f"{mid}-results", "tool", answers), synthetic=True)
    return True


def _redo(engine: Host, f: Fact, src: int, k: int, reply: Message) -> None:
    """Redo the work that established ``f``: for a decision or plan of the agent's, the exchange that led to it
    again (its calls and results, each of the original's size); then a reply of the agent restating the source
    message (a user's constraint included). The restatement carries the fact from here on."""
    source = engine.ledger.messages[src]
    if source.role == "assistant":  # a decision or a plan: the exchange that led to it, in its own turn
        _repeat(engine, src - 1, k, reply)
    parts = tuple(p for p in source.parts if p.kind not in ("tool_call", "tool_result", "change", "revert", "command"))
    if not parts:
        return
    # The agent restates it in a reply of its own, even a user's constraint (asking the user again would make a
    # new user message, which policies and the live-turn check would take for the user's current request).
    mid = _next_id(engine, reply)
    _extra_request(engine, k, Message(mid, "assistant", parts))
    engine.reactions.add_copy(f.source, mid)


__all__ = [
    "REDO_LOOKBACK",
    "Host",
    "Reactions",
    "draw",
    "is_task",
    "react",
    "signals_lost",
    "task_counts",
    "task_of",
    "task_success",
]
