"""The ``strands-*`` policies (``policies/strands.py``): Strands Agents' conversation managers (1.62.0)."""

from __future__ import annotations

from policies.strands import (
    TRUNCATE,
    StrandsSlidingWindow,
    StrandsSlidingWindowConfig,
    StrandsSummarizing,
    StrandsSummarizingConfig,
)
from sim.core.conversation import Conversation, Message, Part
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from tests.builders import asst, call, compaction_records, conv, request_turn, state_of, sys, tool, user


def chat(turns: int, size: int = 400) -> Conversation:
    return conv(
        sys("You are a Strands agent.", id="sys"), *(d for k in range(1, turns + 1) for d in request_turn(k, size))
    )


def test_defaults() -> None:
    cfg = StrandsSlidingWindow().config
    assert (cfg.window_size, cfg.should_truncate_results, cfg.per_turn, cfg.proactive_compression) == (
        40,
        True,
        False,
        None,
    )
    s = StrandsSummarizing().config
    assert (s.summary_ratio, s.preserve_recent_messages) == (0.3, 10)
    assert StrandsSummarizing(StrandsSummarizingConfig(summary_ratio=0.95)).config.summary_ratio == 0.8  # clamped


def test_sliding_window_after_an_invocation() -> None:
    """11 turns of 4 messages then a new user message: 44 messages before it, over 40; the trim starts at message
    ``44 - 40 = 4``, the first plain user message from there (``u2``)."""
    c = conv(*chat(11).messages, user("next", id="next"))
    st = state_of(StrandsSlidingWindow(), c)
    plan = StrandsSlidingWindow().decide(st, "auto")
    assert plan is not None and c.messages[plan.start].id == "u2"
    assert StrandsSlidingWindow().decide(state_of(StrandsSlidingWindow(), chat(11)), "auto") is None  # mid-invocation


def test_a_batch_of_results_is_one_message() -> None:
    """Two calls and their two results (two tool messages) count as two Strands messages, not three."""
    d = [sys("s", id="sys")]
    for k in range(14):
        d += [user(f"q{k}", id=f"u{k}"), asst("two", [call(f"a{k}"), call(f"b{k}")], id=f"x{k}")]
        d += [tool(f"a{k}", "1", id=f"ta{k}"), tool(f"b{k}", "2", id=f"tb{k}")]
    c = conv(*d, user("next", id="next"))  # 14 x 3 = 42 Strands messages (56 log messages) before the new one
    plan = StrandsSlidingWindow().decide(state_of(StrandsSlidingWindow(), c), "auto")
    assert plan is not None and c.messages[plan.start].id == "u1"  # from message 42 - 40 = 2: the second turn


def test_overflow_truncates_the_oldest_results_first() -> None:
    c = conv(*chat(3, 2_000).messages)
    st = state_of(StrandsSlidingWindow(), c)
    plan = StrandsSlidingWindow().decide(st, "overflow")
    assert plan is not None and plan.mode == "truncate"
    assert [e.before for e in plan.edits or () if e.rule == TRUNCATE] == [4]  # t1's message and nothing later
    st2 = state_of(StrandsSlidingWindow(), c, view=plan.view_from(st.view))
    again = StrandsSlidingWindow().decide(st2, "overflow")
    assert again is None or again.mode == "trim"  # already truncated: a second overflow trims


def test_summarizing_on_overflow_only() -> None:
    c = chat(12)
    pol = StrandsSummarizing()
    st = state_of(pol, c)
    assert pol.decide(st, "auto") is None
    plan = pol.decide(st, "overflow")
    assert plan is not None and plan.summarize and plan.summary_request.role == "user"
    assert c.messages[plan.start].role != "tool"  # never starting on a tool result
    assert plan.start - 1 <= int(48 * 0.3) + 1  # about 30% of the 48 messages summarised


def test_engine_runs() -> None:
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")
    for pol in (StrandsSlidingWindow(StrandsSlidingWindowConfig(window_size=10)), StrandsSummarizing()):
        res = Engine(pol, chat(40, 1_600), config).run()
        assert compaction_records(res) and not res.violations, type(pol).__name__


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(StrandsSlidingWindow(StrandsSlidingWindowConfig(window_size=10)))
    assert shows_revert_resolution(StrandsSummarizing())


def test_overflow_truncation_leaves_a_pending_turn_alone() -> None:
    """Found by ``benchmarks/check_policies.py`` at 10,000 examples: the oldest results inside an unresolved pending
    turn are not truncated (the harness's contract); the overflow trims instead, or does nothing."""
    c = conv(
        sys("s", id="sys"),
        user("do it", id="u0"),
        asst("reading", [call("c1")], id="a0"),
        tool("c1", "z" * 2_000, id="t0"),
        Message("p", "assistant", (Part("text", "may I edit?"),), pending=True),
        user("later", id="u1"),
        asst("ok", id="d1"),
    )
    plan = StrandsSlidingWindow().decide(state_of(StrandsSlidingWindow(), c), "overflow")
    assert plan is None or plan.mode != "truncate"
