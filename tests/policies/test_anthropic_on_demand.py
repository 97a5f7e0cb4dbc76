"""``anthropic-on-demand-compaction`` and ``anthropic-background-compaction`` (``policies/anthropic_on_demand.py``), and
the client estimate they and five other policies share (``policies._tail.client_estimate``)."""

from __future__ import annotations

from policies import make_policy
from policies._tail import client_estimate
from policies.anthropic_api import SUMMARY_WRAPPER
from policies.anthropic_on_demand import AnthropicBackgroundCompaction, AnthropicOnDemandCompaction
from sim.core.log import CompactionCreated
from sim.core.model import ModelConfig
from sim.core.view import Summary
from sim.replay.engine import RunConfig, run
from tests.builders import asst, call, conv, reported, shown_ids, state_of, sys, tool, user, user_turns

MODEL = ModelConfig(context_window=200_000, output_reserve=8_192)
SMALL = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")


def test_the_client_estimate_counts_the_reply_once() -> None:
    """The last request's prompt and the reply's output, then a quarter of what came after the reply: the reply's
    own characters are not counted a second time."""
    c = conv(sys("s", id="sys"), user("go", id="u"), asst("x" * 4_000, [call("c1")], id="a"), tool("c1", "y" * 400))
    st = reported(state_of(AnthropicOnDemandCompaction(), c), reply=2, prompt=1_000, output=1_000)
    after_reply = st.chars(3, 4)
    assert client_estimate(st) == 1_000 + 1_000 + -(-after_reply // 4)


def test_on_demand_asks_at_its_trigger_and_the_block_replaces_everything_sent() -> None:
    c = conv(sys("s", id="sys"), *user_turns(3, steps=3, size=300))
    pol = AnthropicOnDemandCompaction()
    assert pol.decide(state_of(pol, c, MODEL, context=149_999), "auto") is None
    st = state_of(pol, c, MODEL, context=150_000)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.start == len(c.messages) and plan.mode == "compact"
    assert plan.summary_request.role == "assistant" and plan.summary_request.wrapper == SUMMARY_WRAPPER
    assert shown_ids(c, plan.view_from(st.view).with_(summary=Summary("s"))) == ["sys", "<summary>"]
    assert pol.decide(st, "manual") is None and pol.decide(st, "overflow") is None


def test_an_unresolved_pending_turn_is_never_summarised() -> None:
    c = conv(
        sys("s", id="sys"),
        *user_turns(2, steps=2, size=300),
        user("deploy?", id="ask"),
        asst("May I deploy?", pending=True, id="p"),
        user("wait", id="w"),
    )
    pol = AnthropicOnDemandCompaction()
    plan = pol.decide(state_of(pol, c, MODEL, context=160_000), "auto")
    ids = [m.id for m in c.messages]
    assert plan is not None and plan.start == ids.index("ask")


def test_background_makes_the_on_demand_summary_and_lands_it_later() -> None:
    """The same first summary as at once, landed later with what came since after it."""
    c = conv(sys("s", id="sys"), *user_turns(6, steps=10, size=400))
    params = {"trigger_tokens": "5000"}
    fg = [
        e
        for e in run(make_policy("anthropic-on-demand-compaction", params), c, SMALL).log
        if isinstance(e, CompactionCreated)
    ]
    bg = [
        e
        for e in run(make_policy("anthropic-background-compaction", params), c, SMALL).log
        if isinstance(e, CompactionCreated)
    ]
    assert fg and bg and AnthropicBackgroundCompaction.timing == "background"
    assert fg[0].staleness is None and bg[0].staleness is not None
    assert bg[0].staleness.started_turn == fg[0].turn < bg[0].turn and bg[0].view == fg[0].view


def test_a_block_landed_mid_thinking_loop_is_continued_from() -> None:
    """The background request sent inside a thinking tool loop, its block landing several rounds later: the rounds
    that came since follow the block and the provider accepts the request (the documented swap), where the loop's
    opening thinking went into the block."""
    from tests.builders import thinking_loop

    c = conv(sys("s", id="sys"), user("go", id="u0"), *thinking_loop(40, size=700))
    r = run(make_policy("anthropic-background-compaction", {"trigger_tokens": "5000"}), c, SMALL)
    landed = [e for e in r.log if isinstance(e, CompactionCreated)]
    assert landed and all(e.staleness is not None and e.staleness.messages >= 2 for e in landed)
    assert r.summary["finish_reason"] == "completed"
    assert not [v for v in r.violations if v.invariant == "atomic-units"]
