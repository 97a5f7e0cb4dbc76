"""The ``docker-agent`` policy (``policies/docker_agent.py``): docker-agent's session compaction."""

from __future__ import annotations

from policies._tail import message_tokens
from policies.docker_agent import (
    DEFAULT_THRESHOLD,
    MAX_KEEP_TOKENS,
    SUMMARY_WRAPPER,
    DockerAgent,
    DockerAgentConfig,
)
from sim.core.conversation import Conversation
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
MID = ModelConfig(context_window=50_000, output_reserve=4_096)  # keep budget 10,000; summary cap 12,500


def chat(turns: int, size: int = 4_000) -> Conversation:
    turns_ = (d for k in range(1, turns + 1) for d in request_turn(k, size))
    return conv(sys("You are docker-agent.", id="sys"), *turns_)


def steps(n: int, size: int = 4_000, first: int = 1) -> list[Draft]:
    """``n`` tool steps ``a<k>`` (one call) and ``t<k>`` (``size`` characters)."""
    return [
        d
        for k in range(first, first + n)
        for d in (asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * size, id=f"t{k}"))
    ]


def index(c: Conversation, id: str) -> int:
    return next(i for i, m in enumerate(c.messages) if m.id == id)


def test_defaults_and_budgets() -> None:
    """0.9 (``DefaultThreshold``); the kept tail min(20,000, window / 5), the summary min(16,000, window / 4)."""
    pol = DockerAgent()
    assert (pol.config.compaction_threshold, pol.config.max_keep_tokens) == (DEFAULT_THRESHOLD, MAX_KEEP_TOKENS)
    assert (DEFAULT_THRESHOLD, MAX_KEEP_TOKENS, pol.retry_on_overflow) == (0.9, 20_000, 1)
    c = chat(2)
    for window, keep, summary in ((200_000, 20_000, 16_000), (50_000, 10_000, 12_500), (8_000, 1_600, 2_000)):
        st = state_of(pol, c, ModelConfig(context_window=window, output_reserve=500))
        assert (pol.keep_budget(st), pol.summary_budget(st)) == (keep, summary)


def test_trigger_boundary_is_strictly_over() -> None:
    """``ShouldCompact``: input + output strictly over ``int64(200000 * 0.9)``."""
    c = chat(60)
    assert DockerAgent().decide(state_of(DockerAgent(), c, MODEL, context=180_000), "auto") is None
    assert DockerAgent().decide(state_of(DockerAgent(), c, MODEL, context=180_001), "auto") is not None
    low = DockerAgent(DockerAgentConfig(compaction_threshold=0.5))
    assert low.decide(state_of(low, c, MODEL, context=100_000), "auto") is None
    assert low.decide(state_of(low, c, MODEL, context=100_001), "auto") is not None


def test_tool_results_after_the_reply_count_but_the_new_prompt_does_not() -> None:
    """Mid tool loop the results since the reply are added to its usage (``compactIfNeeded``); before a call that a
    user message starts, nothing is added (the check at the top of the loop)."""
    c = conv(*chat(5).messages, user("request 6", id="u6"), *steps(1, 8_000, first=6))
    st = state_of(DockerAgent(), c, MODEL)
    result = message_tokens(st, index(c, "t6"), index(c, "t6") + 1)
    reported(st, index(c, "a6"), 180_000 - 50 - result, 50)
    assert DockerAgent().estimate(st) == 180_000 and DockerAgent().decide(st, "auto") is None
    reported(st, index(c, "a6"), 180_000 - 50 - result + 1, 50)
    assert DockerAgent().decide(st, "auto") is not None

    c = conv(*chat(6).messages, user("x" * 40_000, id="u7"))  # a 10,000-token prompt, not counted
    st = reported(state_of(DockerAgent(), c, MODEL), index(c, "d6"), 180_000 - 50, 50)
    assert DockerAgent().estimate(st) == 180_000 and not DockerAgent().over_trigger(st)


def test_no_report_no_compaction_yet_overflow_and_compact_still_do() -> None:
    """Before the first reply the session's tally is 0; on a provider overflow (once) and on ``/compact`` docker-agent
    compacts whatever the estimate."""
    c = chat(60)
    st = state_of(DockerAgent(), c, MID)  # no request made yet: the view is over the window
    assert st.view_size()[0] > 50_000 and DockerAgent().estimate(st) == 0
    assert DockerAgent().decide(st, "auto") is None
    assert DockerAgent().decide(st, "overflow") is not None
    assert DockerAgent().decide(st, "manual") is not None


def test_after_a_compaction_nothing_is_compacted_before_the_next_report() -> None:
    """The summary replaces the tally (the summary's output tokens, output 0): the stale usage over the trigger
    compacts nothing until the next request reports."""
    c = conv(*chat(8).messages, user("next", id="u9"))
    st = reported(state_of(DockerAgent(), c, MODEL), index(c, "d8"), 190_000, 50)
    assert DockerAgent().decide(st, "auto") is not None
    st.view = View(start=index(c, "u5"), summary=Summary(SUMMARY_WRAPPER.format(summary="s"), through=index(c, "u5")))
    assert DockerAgent().decide(st, "auto") is None


def test_kept_tail_is_the_longest_run_within_the_budget_from_a_user_or_assistant_message() -> None:
    """``SplitIndexForKeep``: walking back, the kept messages stay within 10,000 tokens and start at no tool result;
    the next older user or assistant message would take them over."""
    c = chat(40)
    st = state_of(DockerAgent(), c, MID, context=46_000)
    plan = DockerAgent().decide(st, "auto")
    assert plan is not None and plan.summarize
    n = len(c.messages)
    assert c.messages[plan.start].role in ("user", "assistant")
    assert message_tokens(st, plan.start, n) <= 10_000
    prev = max(i for i in range(plan.start) if c.messages[i].role in ("user", "assistant"))
    assert message_tokens(st, prev, n) > 10_000


def test_the_cut_may_fall_inside_the_live_turn() -> None:
    """A live turn of ten 1,000-token steps: the newest 10,000 tokens start at one of its assistant messages, and the
    turn's prompt ``u4`` is summarised."""
    c = conv(*chat(3).messages, user("request 4", id="u4"), *steps(10, first=11))
    st = state_of(DockerAgent(), c, MID, context=46_000)
    plan = DockerAgent().decide(st, "auto")
    assert plan is not None and plan.start > index(c, "u4") == st.last_user_index
    assert c.messages[plan.start].role == "assistant"


def test_a_newest_message_over_the_budget_keeps_nothing() -> None:
    """The newest result alone is over the keep budget: no user or assistant message starts a run that fits, so
    everything is summarised, the live turn included (the "keep nothing" sentinel)."""
    c = conv(*chat(6).messages, user("read the log", id="u7"), asst("reading", [call("c7")], id="a7"))
    c = conv(*c.messages, tool("c7", "z" * 44_000, id="t7"))  # 11,000 tokens
    st = state_of(DockerAgent(), c, MID, context=46_000)
    plan = DockerAgent().decide(st, "auto")
    assert plan is not None and plan.start == len(c.messages)


def test_everything_within_the_budget_is_all_summarised() -> None:
    """A short conversation over the trigger (its usage carried by a large system prompt and tools): every message
    fits the keep budget, which ``SplitIndexForKeep`` answers with "compact everything"."""
    c = chat(2, 400)
    st = state_of(DockerAgent(), c, MID, context=46_000)
    assert message_tokens(st, 1, len(c.messages)) <= 10_000
    plan = DockerAgent().decide(st, "auto")
    assert plan is not None and plan.start == len(c.messages)


def test_the_summary_request_and_where_the_summary_goes() -> None:
    """A user message ``Session Summary: ...`` before the kept messages; output capped at window / 4, the input at
    the window less that cap and the prompts."""
    st = state_of(DockerAgent(), chat(40), MID, context=46_000)
    plan = DockerAgent().decide(st, "auto")
    assert plan is not None
    req = plan.summary_request
    assert req.role == "user" and req.wrapper == "Session Summary: {summary}"
    assert req.max_tokens == 12_500
    assert req.input_newest_tokens is not None and 37_000 < req.input_newest_tokens < 37_500
    assert plan.summary_slot is None  # right before the kept messages


def test_nothing_to_summarise_within_the_summariser_budget_is_no_compaction() -> None:
    """``FirstIndexInBudget``: the message just before the kept tail is a result larger than the summariser's input
    budget, so no user or assistant message starts what it could send: the compaction is skipped."""
    small = ModelConfig(context_window=8_000, output_reserve=500)
    c = conv(
        sys("You are docker-agent.", id="sys"),
        user("read it", id="u1"),
        asst("reading", [call("c1")], id="a1"),
        tool("c1", "z" * 28_000, id="t1"),  # 7,000 tokens, over 8,000 - 2,000 - the prompts
        asst("read", id="d1"),
        user("next", id="u2"),
    )
    st = state_of(DockerAgent(), c, small, context=7_500)
    assert DockerAgent().split(st) == index(c, "d1")
    assert DockerAgent().decide(st, "auto") is None


def test_engine_run() -> None:
    """A whole run on an 8,000-token window compacts, each summary a user ``Session Summary:`` message, without a
    violation (the turns are short: the kept tail starts at a whole turn)."""
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")
    res = Engine(DockerAgent(), chat(40, 1_600), config).run()
    recs = compaction_records(res)
    assert recs
    assert all(r.view.summary is not None and r.view.summary.role == "user" for r in recs)
    assert all(r.view.summary.text.startswith("Session Summary: ") for r in recs if r.view.summary)
    assert not res.violations


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(DockerAgent())
