"""The letta policy (``policies/letta.py``): Letta's sliding-window summarisation and its "all" fallback.

Each test paraphrases the ``letta-ai/letta`` source it checks (``summarizer_sliding_window.py``, ``summarizer_all.py``,
``compact.py``, ``thresholds.py``, ``letta_agent_v3.py``). Decisions are driven on a state built with
:func:`tests.builders.state_of` (``context=`` sets the last call's tokens); runs use the engine with ``chars4``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.letta import Letta, LettaConfig
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Summary, View
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    conv,
    revert,
    state_of,
    sys,
    thinking_loop,
    thinking_rejection,
    tool,
    tool_steps,
    user,
    user_turns,
)

C4 = RunConfig(model=small_model(), tokenizer="chars4")


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are a Letta agent."), user("Fix the parser.", id="task"), *drafts)


def letta(**cfg: object) -> Letta:
    return Letta(LettaConfig(**cfg))  # type: ignore[arg-type]


def sliding_window_summarises_the_task() -> Conversation:
    """One task, then a tool loop that overflows the window: the sliding window's cut (40 % of the messages) passes
    the task, the only user message."""
    return chat(*tool_steps(60, size=600), asst("done"))


def window_for(c: Conversation, share: float) -> ModelConfig:
    """A model whose window makes the whole of ``c`` (chars4) about ``share`` of it."""
    tokens = state_of(Letta(), c).view_size()[0]
    return ModelConfig(context_window=max(1_000, int(tokens / share)), output_reserve=100)


# -- configuration and trigger -----------------------------------------------------------------------------------------
def test_defaults() -> None:
    """``CompactionSettings``: mode ``sliding_window``, ``clip_chars`` 50,000; ``partial_evict_summarizer_percentage``
    0.30; 3 summariser retries on a context-window error."""
    cfg = Letta().config
    assert (cfg.mode, cfg.sliding_window_percentage, cfg.force_proactive, cfg.clip_chars) == (
        "sliding_window",
        0.30,
        False,
        50_000,
    )
    assert Letta().retry_on_overflow == 3
    with pytest.raises(InvalidConfig, match="sliding_window_percentage"):
        make_policy("letta", {"sliding_window_percentage": "1.5"})


def test_threshold_is_the_window_or_ninety_percent() -> None:
    """``get_compaction_trigger_threshold``: the window for most models; 0.9 of it for GPT-5 or ``force_proactive``."""
    state = state_of(Letta(), chat())
    assert Letta().threshold(state) == 200_000
    assert letta(force_proactive=True).threshold(state) == 180_000


def test_trigger_is_strictly_over_the_last_calls_total() -> None:
    """``context_token_estimate > compaction_trigger_threshold``, the estimate being the last call's
    ``usage.total_tokens``: at the threshold, nothing; one over, compact."""
    c = chat(*tool_steps(12))
    policy = letta(force_proactive=True)
    assert policy.decide(state_of(policy, c, context=180_000), "auto") is None
    assert policy.decide(state_of(policy, c, context=180_001), "auto") is not None
    assert policy.decide(state_of(policy, c), "auto") is None  # no call yet


# -- the sliding window ------------------------------------------------------------------------------------------------
def test_first_try_evicts_forty_percent_to_an_assistant_message() -> None:
    """The eviction fraction starts at 0.30 and grows by 0.10 before the first try: ``round(0.4 * N)``, moved back to
    the last assistant message at or before it; a tail under 70 % of the window stops there."""
    # N = 26: system, task, a1 t1 ... a12 t12; round(0.4 * 26) = 10: t5, so a5 (index 10)
    c = chat(*tool_steps(12, size=2_000))
    model = window_for(c, 0.9)  # the tail from a5 is under 70 % of this window
    state = state_of(Letta(), c, model)
    plan = Letta().decide(state, "overflow")
    assert plan is not None and plan.mode == "sliding_window" and c.messages[plan.start].id == "a5"
    assert plan.summarize and plan.summary_request.role == "user" and "system_alert" in plan.summary_request.wrapper
    assert plan.summary_request.max_tokens == 12_500


def test_the_fraction_grows_until_the_goal() -> None:
    """Over the goal after a try: +10 % and again. A window the whole log overflows by 30 % needs more than
    40 % evicted."""
    c = chat(*tool_steps(12, size=2_000))
    model = window_for(c, 1.3)  # the whole log is 1.3 windows: 40 % is not enough to get under 70 %
    state = state_of(Letta(), c, model)
    plan = Letta().decide(state, "overflow")
    assert plan is not None and plan.mode == "sliding_window"
    kept = state.view_size(View(start=plan.start))[0]
    assert kept < 0.7 * model.context_window and plan.start > 10


def test_the_previous_summary_is_resummarised() -> None:
    """``messages[1:cut]`` starts with the previous summary at index 1: the engine folds it into the new one."""
    c = chat(*tool_steps(12))
    view = View(start=6, summary=Summary("earlier work", role="user"))
    model = window_for(c, 0.9)
    state = state_of(Letta(), c, model, view=view)
    plan = Letta().decide(state, "overflow")
    assert plan is not None and plan.summarize and plan.start > 6


def test_falls_back_to_all_when_no_cut_fits() -> None:
    """No assistant message to cut at, or a fraction reaching 1.0: Letta raises and falls back to ``all``: everything
    but the system prompt is summarised."""
    c = chat(asst("a short answer", id="a1"), user("x " * 3000, id="u2"))
    state = state_of(Letta(), c, ModelConfig(context_window=1_000, output_reserve=100))
    plan = Letta().decide(state, "overflow")
    assert plan is not None and plan.mode == "all" and plan.start == len(c.messages)


def test_all_mode() -> None:
    c = chat(*tool_steps(6))
    plan = letta(mode="all").decide(state_of(Letta(), c), "manual")
    assert plan is not None and plan.mode == "all" and plan.start == len(c.messages)


def test_a_pending_request_at_the_end_stays() -> None:
    """``summarize_all`` keeps a pending approval request at the end (and the harness keeps the pending turn)."""
    c = chat(*tool_steps(6), user("deploy?", id="ask"), asst("Needs approval.", [call("d1")], id="ad", pending=True))
    plan = letta(mode="all").decide(state_of(Letta(), c), "manual")
    assert plan is not None and c.messages[plan.start].id == "ask"


# -- in a run, and the known deviations -------------------------------------------------------------------------------
def test_in_a_run_overflow_compacts_and_retries() -> None:
    """A context-window error: compact, then retry; the run goes on."""
    turns = user_turns(8, size=600)
    res = Engine(Letta(), chat(*turns, asst("done")), C4).run()
    assert res.summary["compaction_count"] >= 2 and res.summary["finish_reason"] == "completed"
    assert {r["trigger"] for r in res.summary["compactions"]} == {"overflow"}


def test_the_sliding_window_summarises_the_task_of_a_long_loop() -> None:
    """Known deviation ``live-turn``: the cut counts messages."""
    res = Engine(Letta(), sliding_window_summarises_the_task(), C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_the_cut_can_fall_inside_a_live_thinking_loop() -> None:
    """Known deviation ``atomic-units``: the cut counts messages, so it can keep later replies of the live loop
    without the one whose thinking opened it, which Anthropic rejects without interleaved thinking."""
    for interleaved in (False, True):
        c = chat(*thinking_loop(12, interleaved=interleaved))
        plan = Letta().decide(state_of(Letta(), c, window_for(c, 0.9)), "overflow")
        assert plan is not None and plan.start > c.index()["a1"]
        assert (thinking_rejection(Letta(), c, plan) is None) is interleaved


def test_a_kept_revert_can_lose_its_change() -> None:
    """Known deviation ``revert-resolution``: Letta knows nothing of reverts."""
    c = chat(
        asst("edit", [call("c1")], parts=[change("ch1")], id="a1"),
        tool("c1", "ok " * 50, id="t1"),
        *tool_steps(10, first=2),
        asst("undo", [call("c9")], parts=[revert("ch1")], id="a99"),
        tool("c9", "ok", id="t99"),
    )
    state = state_of(Letta(), c, window_for(c, 0.9))
    plan = Letta().decide(state, "overflow")
    assert plan is not None and plan.start > 2
