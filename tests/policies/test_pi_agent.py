"""The ``pi`` policy (``policies/pi_agent.py``): pi's session compaction."""

from __future__ import annotations

import pytest

from policies.pi_agent import KEEP_RECENT_TOKENS, RESERVE_TOKENS, SUMMARY_WRAPPER, Pi, PiConfig, pi_tokens
from sim.core.conversation import Conversation, Message, Part
from sim.core.model import ModelConfig
from sim.core.view import Summary, View
from sim.replay.engine import Engine, RunConfig
from tests.builders import (
    Draft,
    asst,
    call,
    compaction_records,
    conv,
    reported,
    request_turn,
    state_of,
    sys,
    tool,
    user,
)

MODEL = ModelConfig(context_window=200_000, output_reserve=8_192)


def chat(turns: int, size: int = 4_000) -> Conversation:
    return conv(sys("You are pi.", id="sys"), *(d for k in range(1, turns + 1) for d in request_turn(k, size)))


def test_defaults() -> None:
    cfg = Pi().config
    assert (cfg.reserve_tokens, cfg.keep_recent_tokens) == (RESERVE_TOKENS, KEEP_RECENT_TOKENS) == (16_384, 20_000)


def test_trigger_is_window_less_reserve() -> None:
    """``contextTokens > contextWindow - reserveTokens``: 183,616 on a 200,000 window."""
    c = chat(60)
    assert Pi().decide(state_of(Pi(), c, MODEL, context=183_616), "auto") is None
    assert Pi().decide(state_of(Pi(), c, MODEL, context=183_617), "auto") is not None


def test_keeps_the_newest_tokens_from_a_user_or_assistant_message() -> None:
    """The kept messages start at no tool result and hold ``keep_recent_tokens`` (here 8,000, pi's estimate) but
    for the result the cut moved forward past."""
    pol = Pi(PiConfig(keep_recent_tokens=8_000))
    c = chat(60)
    st = state_of(pol, c, MODEL, context=190_000)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.summarize
    assert c.messages[plan.start].role != "tool"  # pi never cuts at a tool result
    kept = sum(pi_tokens(m) for m in c.messages[plan.start :])
    assert kept < 8_000 <= kept + pi_tokens(c.messages[plan.start - 1])
    assert c.messages[plan.start - 1].role == "tool"


def test_engine_run() -> None:
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")
    res = Engine(Pi(PiConfig(reserve_tokens=2_000, keep_recent_tokens=1_500)), chat(40, 1_600), config).run()
    assert compaction_records(res) and not res.violations


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(Pi(PiConfig(reserve_tokens=2_000, keep_recent_tokens=1_500)))


# -- pi 1.6.0's own code (conformance/pi-coding-agent/): each test fails on the reading before it -------------------
def steps(n: int, size: int = 4_000, first: int = 1) -> list[Draft]:
    """``n`` tool steps ``a<k>`` (text "s", one call, 2 pi tokens) and ``t<k>`` (``size`` characters of words: size/4
    pi tokens, a fifth of that for cl100k)."""
    return [
        d
        for k in range(first, first + n)
        for d in (asst("s", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "word " * (size // 5), id=f"t{k}"))
    ]


def index(c: Conversation, id: str) -> int:
    return next(i for i, m in enumerate(c.messages) if m.id == id)


THRESHOLD = 200_000 - RESERVE_TOKENS  # 183,616


def test_before_a_further_call_the_reply_is_counted_once() -> None:
    """Mid-run pi adds ``estimateTokens`` of the messages after the reply to its usage (prompt plus output): here
    2,000 for the result, landing on the threshold exactly, which is not over it. Counting the characters appended
    since the request counts the reply a second time and compacts."""
    c = conv(*chat(5).messages, user("request 6", id="u6"), *steps(1, 8_000, first=6))
    pol = Pi(PiConfig(keep_recent_tokens=1_000))
    st = reported(state_of(pol, c, MODEL), index(c, "a6"), THRESHOLD - 50 - 2_000, 50)
    assert pol.context_tokens(st, len(c.messages)) == THRESHOLD
    assert pol.decide(st, "auto") is None
    st = reported(state_of(pol, c, MODEL), index(c, "a6"), THRESHOLD - 50 - 2_000 + 1, 50)
    assert pol.decide(st, "auto") is not None


def test_the_prompt_that_starts_the_call_is_not_counted() -> None:
    """pi checks after the run's last reply, before the next prompt is in the session: a prompt of 1,000 tokens over
    a usage at the threshold triggers nothing."""
    c = conv(*chat(6).messages, user("x" * 4_000, id="u9"))
    st = reported(state_of(Pi(), c, MODEL), index(c, "d6"), THRESHOLD - 50, 50)
    assert Pi().decide(st, "auto") is None
    assert not Pi().over_trigger(st)


@pytest.mark.parametrize("tokenizer", ["chars4", RunConfig().tokenizer])
def test_the_cut_moves_forward_from_a_tool_result(tokenizer: str) -> None:
    """Walking back from the reply (the prompt after it is not in pi's session): done 1, t4 1,000, a4 2, t3 1,000:
    2,003 tokens reach 2,002 at t3, a tool result, so the cut moves forward to a4, whatever the provider's tokenizer
    counts (pi estimates)."""
    c = conv(
        sys("You are pi.", id="sys"), user("task", id="u1"), *steps(4), asst("done", id="d"), user("next", id="u2")
    )
    pol = Pi(PiConfig(keep_recent_tokens=2_002))
    st = reported(state_of(pol, c, MODEL, tokenizer=tokenizer), index(c, "d"), 190_000, 50)
    plan = pol.decide(st, "auto")
    assert plan is not None and c.messages[plan.start].id == "a4"
    assert [pi_tokens(c.messages[index(c, i)]) for i in ("d", "t4", "a4", "t3")] == [1, 1_000, 2, 1_000]


def test_a_long_live_turn_is_split() -> None:
    """Mid-run, the newest 2,002 tokens end inside the live turn: pi keeps from its assistant message a16 and summarises
    the turn's opening (the prompt u4 included) with the history."""
    c = conv(*chat(3).messages, user("request 4", id="u4"), *steps(6, first=11))
    pol = Pi(PiConfig(keep_recent_tokens=2_002))
    st = reported(state_of(pol, c, MODEL), index(c, "a16"), 190_000, 50)
    plan = pol.decide(st, "auto")
    assert plan is not None and c.messages[plan.start].id == "a16"


def test_overflow_compacts_and_retries_once() -> None:
    """Under the threshold, a provider overflow still compacts (``_runAutoCompaction("overflow", true)``), once."""
    c = conv(*chat(8).messages, user("next", id="u9"))
    pol = Pi(PiConfig(keep_recent_tokens=2_000))
    st = reported(state_of(pol, c, MODEL), index(c, "d8"), 50_000, 50)
    assert pol.retry_on_overflow == 1
    assert pol.decide(st, "auto") is None
    plan = pol.decide(st, "overflow")
    assert plan is not None and c.messages[plan.start].id not in ("u1", "u9")


def test_overflow_on_a_prompt_over_the_kept_tokens_summarises_it() -> None:
    """The prompt alone reaches ``keepRecentTokens``: the cut lands on it, the last visible message before the
    omitted failed attempt, and moves past it (``findProjectedCutPoint``'s recovery suffix): all is summarised."""
    c = conv(*chat(3).messages, user("z" * 8_000, id="u9"))
    pol = Pi(PiConfig(keep_recent_tokens=1_000))
    st = reported(state_of(pol, c, MODEL), index(c, "d3"), 50_000, 50)
    plan = pol.decide(st, "overflow")
    assert plan is not None and plan.start == len(c.messages)


def test_a_reply_from_before_a_compaction_checks_nothing() -> None:
    """After ``/compact`` the last reply's usage is stale: ``_checkCompaction`` skips it, over the threshold or not."""
    c = conv(*chat(8).messages, user("next", id="u9"))
    small = ModelConfig(context_window=3_000, output_reserve=500)
    pol = Pi(PiConfig(reserve_tokens=500, keep_recent_tokens=1_000))
    st = reported(state_of(pol, c, small), index(c, "d8"), 2_900, 50)
    assert pol.decide(st, "auto") is not None
    st.view = View(start=index(c, "u5"), summary=Summary(SUMMARY_WRAPPER.format(summary="s"), through=index(c, "u5")))
    assert pol.decide(st, "auto") is None


def test_the_summary_is_shown_between_summary_tags() -> None:
    assert SUMMARY_WRAPPER.format(summary="S").endswith("following summary:\n\n<summary>\nS\n</summary>")


def test_estimate_counts_thinking_compact_arguments_and_each_result_apart() -> None:
    """``estimateTokens``: text and thinking characters, a call's name and ``JSON.stringify`` of its arguments (no
    spaces); each result of a batch is a toolResult of its own, rounded up apart."""
    a = Message("a", "assistant", (Part("thinking", "x" * 10), Part("text", "y" * 3), call("c", "grep", '{"a": 1.0}')))
    assert pi_tokens(a) == -(-(10 + 3 + 4 + len('{"a":1}')) // 4)
    batch = Message("t", "tool", tuple(Part("tool_result", "r" * 5, call_id=f"c{k}", name="grep") for k in range(3)))
    assert pi_tokens(batch) == 3 * 2
