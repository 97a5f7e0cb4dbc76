"""The invariant checks of issue 12, defect 6, on hand-built states: each catches its class whatever the sizes.

The broken policies of ``tests/broken_policies.py`` show the same through ``csim check``; these pin the checks
themselves: a bound past the log, the newest tool results cleared, a dropped message pinned again, a rewritten
system prompt.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.baselines import NoCompaction
from sim.core.conversation import Part
from sim.core.invariants import check_plan, check_view, minus, newest_results_cleared
from sim.core.view import Edit, Rule, View
from sim.replay.engine import Engine, RunConfig
from tests.builders import asst, conv, state_of, sys, tool, user

SIZES = [1, 40, 4_000]  # shorter than the placeholder, about as long, far longer


def _script(size: int, *, end_on_results: bool = True) -> list:  # type: ignore[type-arg]
    drafts = [sys("s"), user("task"), asst(calls=["c1"]), tool("c1", "a" * size), asst(calls=["c2", "c3"])]
    drafts += [tool("c2", "b" * size), tool("c3", "c" * size)]
    return drafts if end_on_results else [*drafts, asst("done"), user("next")]


@pytest.mark.parametrize("size", SIZES)
def test_clearing_the_newest_results_breaks_the_live_turn(size: int) -> None:
    st = state_of(NoCompaction(), conv(*_script(size)))
    n = len(st)
    assert newest_results_cleared(st, View.of(cleared_through=4)) is None  # older results: allowed
    assert newest_results_cleared(st, View.of(cleared_through=n)) == 5  # the newest batch's first message
    found = check_view(st, View.of(cleared_through=6))
    assert any(k == "live-turn" and "newest tool results" in d for k, d in found), found
    assert not check_view(st, View.of(cleared_through=5))
    dropped = View(edits=(Edit(Rule(action="drop"), n),))
    assert newest_results_cleared(st, dropped) == 5
    truncated = View(edits=(Edit(Rule(action="truncate", max_tokens=1), n),))
    assert newest_results_cleared(st, truncated) is None  # a head and a tail are still there
    calls_only = View(edits=(Edit(Rule(kinds=frozenset({"tool_call"})), n),))
    assert newest_results_cleared(st, calls_only) is None


@pytest.mark.parametrize("size", SIZES)
def test_nothing_to_protect_once_the_turn_moved_on(size: int) -> None:
    st = state_of(NoCompaction(), conv(*_script(size, end_on_results=False)))
    assert newest_results_cleared(st, View.of(cleared_through=len(st))) is None


@pytest.mark.parametrize("size", SIZES)
def test_a_plan_may_not_pin_again_what_the_view_dropped(size: int) -> None:
    st = state_of(NoCompaction(), conv(*_script(size, end_on_results=False)))
    before = View.of(start=4)  # messages 1-3 dropped
    assert check_plan(st, before, View.of(start=5)) is None
    problem = check_plan(st, before, View.of(start=5, pinned=(1,)))
    assert problem is not None and "pins message 1" in problem and "rollback" in problem
    kept = View.of(start=4, pinned=(1,))  # pinned by the earlier compaction: keeping it is fine
    assert check_plan(st, kept, View.of(start=5, pinned=(1,))) is None
    assert check_plan(st, kept, View.of(start=5, pinned=(1, 4))) is None  # 4 was in the tail


def test_a_bound_past_the_log_is_an_invalid_plan() -> None:
    st = state_of(NoCompaction(), conv(*_script(10)))
    n = len(st)
    assert check_plan(st, View(), View.of(cleared_through=n)) is None
    problem = check_plan(st, View(), View.of(cleared_through=n + 1))
    assert problem is not None and "past the log" in problem


def test_a_rewritten_system_prompt_is_caught_by_system_first() -> None:
    c = conv(*_script(10, end_on_results=False), asst("ok"))
    eng = Engine(NoCompaction(), c, RunConfig(tokenizer="chars4"))
    for m in c.messages[:3]:
        eng.append(m)
    assert eng.requests.system_problem(eng.state.view) is None
    msgs = eng.state.messages
    msgs[0] = dataclasses.replace(msgs[0], parts=(Part("text", "other"),))  # type: ignore[index]
    problem = eng.requests.system_problem(eng.state.view)
    assert problem is not None and "began with" in problem


def test_protected_span_judges_what_a_compaction_newly_hides_not_what_it_brings_back() -> None:
    """``protected-span`` flags a compaction that clears a result the view showed inside an unresolved pending
    turn. A rollback to a checkpoint that had cleared that result brings it back (it was out of the view), so
    the model sees more of the turn, not less: nothing is flagged. Before the fix, the checker read any edit
    that differed as a new one (the cloudflare-os rollback repro in tests/test_stateful.py)."""
    from sim.core.invariants import check_compaction

    c = conv(sys("s"), user("task"), asst(calls=["c1"]), tool("c1", "r" * 400), asst("waiting", pending=True))
    st = state_of(NoCompaction(), c)
    assert st.protected_from == 1
    clear = (Edit(Rule(kinds=frozenset({"tool_result"}), action="placeholder"), 4),)
    assert check_compaction(st, View(start=4), View(start=0, edits=clear)) == []
    found = check_compaction(st, View(start=0), View(start=0, edits=clear))
    assert [name for name, _ in found] == ["protected-span"] and "message 3" in found[0][1]


def test_an_earlier_event_tampered_with_is_caught_by_the_whole_check_a_run_ends_with() -> None:
    """Deep checks verify the log's digest chain incrementally (what was appended since the last request), so a
    check costs what was appended; an event rewritten before that point is still caught by the full verification
    every run ends with (``log-append-only``)."""
    from sim.core.log import MessageAppended
    from sim.replay.integrity import log_problem

    eng = Engine(NoCompaction(), conv(*_script(40), asst("done")), RunConfig(deep_checks=True))
    for _ in range(4):
        eng.step()
    assert log_problem(eng.log, eng.ledger, incremental=True) is None and eng.log.verified == len(eng.log)
    first = eng.log[1]
    assert isinstance(first, MessageAppended)
    forged = dataclasses.replace(first.message, parts=(Part("text", "rewritten"),))
    object.__setattr__(first, "message", forged)  # a rewrite behind the engine's back, before the last check
    assert log_problem(eng.log, eng.ledger, incremental=True) is None  # what was verified is not verified again
    assert "changed after it was appended" in (log_problem(eng.log, eng.ledger) or "")
    while eng.step():
        pass
    result = eng.finish()
    assert [v.invariant for v in result.violations] == ["log-append-only"]


def _ranges(cuts: list[int]) -> list[tuple[int, int]]:
    """Sorted, disjoint ranges from sorted cut points: every other gap between them."""
    edges = sorted(set(cuts))
    return [(a, b) for a, b in zip(edges[::2], edges[1::2], strict=False) if a < b]


@given(st.lists(st.integers(0, 60), max_size=24), st.lists(st.integers(0, 60), max_size=24))
def test_minus_is_the_set_difference_of_the_messages(xcuts: list[int], ycuts: list[int]) -> None:
    xs, ys = _ranges(xcuts), _ranges(ycuts)
    got = minus(xs, ys)
    covered = {i for a, b in ys for i in range(a, b)}
    assert [i for a, b in got for i in range(a, b)] == [i for a, b in xs for i in range(a, b) if i not in covered]
    assert all(a < b for a, b in got) and all(b <= c for (_, b), (c, _) in zip(got, got[1:], strict=False))
