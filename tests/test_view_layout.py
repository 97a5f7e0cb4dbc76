"""A view of many spans laid out and checked once, not once per request (``sim.core.view.layout``'s reused head,
``RunState.remember`` for the span checks of ``check_view``).

The OpenAI Agents session keeps every user message as a span of its own, so on a long chat a view holds thousands;
laying that out afresh on every request made its per-turn cost grow with the chat (``benchmarks/bench_turns.py
--scenario support-chat``). These pin the shortcuts to what the long way gives.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.baselines import NoCompaction
from sim.core.errors import InvalidConfig
from sim.core.invariants import check_view, ranges
from sim.core.view import Edit, Injected, Rule, Summary, View, _layout, layout, spans_of
from sim.replay.engine import Engine, RunConfig
from tests.builders import asst, change, conv, revert, state_of, sys, tool, user


@st.composite
def many_span_views(draw: st.DrawFn) -> View:
    """A view whose closed spans are at least the number above which layouts are reused, with a summary, injected
    messages and edits anywhere."""
    picked = {2 * i + draw(st.integers(0, 1)) for i in draw(st.sets(st.integers(1, 200), min_size=40, max_size=120))}
    start = max(picked) + draw(st.integers(1, 5))
    spans = spans_of(picked)
    slots = st.one_of(st.none(), st.integers(0, len(spans) + 2))
    summary = Summary("SUMMARY", through=start) if draw(st.booleans()) else None
    injected = tuple(
        Injected(f"file {k}", slot=draw(slots), before_summary=draw(st.booleans()))
        for k in range(draw(st.integers(0, 4)))
    )
    rules = (Rule(), Rule(action="drop", kinds=frozenset({"thinking"})))
    edits = tuple(Edit(r, draw(st.integers(1, start + 3))) for r in draw(st.lists(st.sampled_from(rules), max_size=2)))
    return View(start=start, spans=spans, summary=summary, summary_slot=draw(slots), injected=injected, edits=edits)


@given(many_span_views(), st.lists(st.integers(-10, 40), min_size=1, max_size=6), st.booleans())
def test_a_reused_layout_is_the_layout_made_afresh(view: View, offsets: list[int], has_system: bool) -> None:
    assert len(view.spans) >= 16  # the reused path, not the small views'
    for k in offsets:  # shorter logs than the view's reach too, and the same length twice
        n = max(view.reach + k, 0)
        assert layout(view, n, has_system) == _layout(view, n, has_system)
        assert layout(view, n, not has_system) == _layout(view, n, not has_system)


@given(many_span_views(), st.integers(-10, 10))
def test_the_ranges_a_view_shows_are_its_spans_and_tail_clipped_to_the_log(view: View, k: int) -> None:
    n = max(view.reach + k, 0)
    expected = [(a, min(b, n)) for a, b in (*view.spans, (view.start, n)) if a < min(b, n)]
    assert ranges(view, n) == expected


def test_a_layout_is_a_list_of_its_own() -> None:
    view = View(start=100, spans=spans_of(range(1, 80, 2)))
    first = layout(view, 120, True)
    first.clear()
    assert layout(view, 120, True) == _layout(view, 120, True)


@given(st.sets(st.integers(0, 300), max_size=150), st.integers(0, 320), st.integers(0, 400))
def test_shows_is_membership_of_a_span_or_the_tail(picked: set[int], start: int, index: int) -> None:
    view = View(start=start, spans=spans_of(i for i in picked if i < start))
    assert view.shows(index) == (index >= start or index in {i for i in picked if i < start})


@pytest.mark.parametrize("spans", [((5, 6), (1, 2)), ((1, 4), (3, 5)), ((2, 2),)])
def test_spans_out_of_order_overlapping_or_empty_are_refused(spans: tuple[tuple[int, int], ...]) -> None:
    with pytest.raises(InvalidConfig, match="sorted, disjoint ranges"):
        View(start=10, spans=spans)


def test_a_split_unit_is_reported_on_every_request_as_the_log_grows() -> None:
    """Spans that keep a call without its result: ``check_view`` remembers the spans' problems once the log is past
    them, and says the same as a state built afresh at each length."""
    drafts = [sys("s"), user("task")]
    for k in range(30):
        drafts += [user(f"question {k}"), asst(f"answer {k}")]
        if k % 10 == 3:
            drafts += [asst(calls=[f"c{k}"]), tool(f"c{k}", "out")]
    conversation = conv(*drafts)
    calls = [i for i, m in enumerate(conversation.messages) if m.calls]
    assert len(calls) == 3 and calls[-1] > 40
    users = [i for i, m in enumerate(conversation.messages) if m.role == "user"]
    view = View(start=len(drafts) - 2, spans=spans_of(i for i in (*calls, *users) if i < len(drafts) - 2))
    eng = Engine(NoCompaction(), conversation, RunConfig(tokenizer="chars4"))
    for i, m in enumerate(conversation.messages):
        eng.append(m)
        got = check_view(eng.state, view)
        assert got == check_view(state_of(NoCompaction(), conv(*drafts[: i + 1])), view), i
        split = [c for c in calls if c < i and any(k == "atomic-units" and f"message {c} " in d for k, d in got)]
        assert split == [c for c in calls if c < i], (i, got)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=60), st.data())
def test_the_reverts_a_view_shows_are_found_by_bisection(kinds: list[int], data: st.DataObject) -> None:
    """``RunState.shown_reverts``: the reverts whose revert message the view shows, in the log's order, as a walk
    over every revert finds them, at every length of a growing log (the spans' part is remembered)."""
    drafts = [sys("s")]
    for k, kind in enumerate(kinds):  # changes, reverts of earlier changes (several in one message too), talk
        refs = [f"r{j}" for j in range(k) if kinds[j] == 1][-2:]
        extra = [change(f"r{k}")] if kind == 1 else [revert(r) for r in refs] if kind == 2 else []
        drafts.append(user(f"message {k}", *extra))
    conversation = conv(*drafts)
    n = len(conversation.messages)
    start = data.draw(st.integers(1, n))
    view = View(
        start=start, spans=spans_of(data.draw(st.sets(st.integers(1, max(start - 1, 1)), max_size=20)) - {start})
    )
    eng = Engine(NoCompaction(), conversation, RunConfig(tokenizer="chars4"))
    for m in conversation.messages:
        eng.append(m)
        assert eng.state.shown_reverts(view) == [(r, c) for r, c in eng.state.reverts if view.shows(r)]
