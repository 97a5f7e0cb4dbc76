"""The ``hermes-agent`` policy (``policies/hermes_agent.py``): Hermes Agent's ContextCompressor."""

from __future__ import annotations

from policies.hermes_agent import PROTECT_LAST_N, HermesAgent, HermesAgentConfig
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.view import Summary
from sim.replay.engine import Engine, RunConfig
from tests.builders import compaction_records, conv, request_turn, shown_ids, state_of, sys

BIG = ModelConfig(context_window=1_000_000, output_reserve=8_192)
SMALL_CTX = ModelConfig(context_window=200_000, output_reserve=8_192)


def chat(turns: int, size: int = 400) -> Conversation:
    return conv(sys("You are Hermes.", id="sys"), *(d for k in range(1, turns + 1) for d in request_turn(k, size)))


def test_defaults_and_the_small_window_floor() -> None:
    """0.50 of the window (PR #1096), raised to 0.75 under 512,000 tokens; protect 3 first, 20 last."""
    cfg = HermesAgent().config
    assert (cfg.threshold_percent, cfg.protect_first_n, cfg.protect_last_n) == (0.5, 3, PROTECT_LAST_N)
    c = chat(12)
    assert HermesAgent().threshold(state_of(HermesAgent(), c, BIG)) == 500_000
    assert HermesAgent().threshold(state_of(HermesAgent(), c, SMALL_CTX)) == 150_000
    low = HermesAgent(HermesAgentConfig(threshold_percent=0.3))  # below the default: the user's value stands
    assert low.threshold(state_of(low, c, SMALL_CTX)) == 60_000


def test_trigger_boundary_and_kept_head_and_tail() -> None:
    c = chat(12)
    assert HermesAgent().decide(state_of(HermesAgent(), c, SMALL_CTX, context=149_000), "auto") is None
    st = state_of(HermesAgent(), c, SMALL_CTX, context=150_000)
    plan = HermesAgent().decide(st, "auto")
    assert plan is not None and plan.summarize and plan.summary_request.drop_tool_outputs
    ids = shown_ids(c, plan.view_from(st.view).with_(summary=Summary("s")))
    assert ids[:4] == ["sys", "u1", "a1", "t1"] and "<summary>" in ids
    assert len(c.messages) - plan.start >= PROTECT_LAST_N


def test_engine_run_compacts_and_keeps_the_head() -> None:
    """A whole run on a 16,000-token window: it compacts, always keeping the task (message 1), without a violation."""
    config = RunConfig(model=ModelConfig(context_window=16_000, output_reserve=1_000), tokenizer="chars4")
    res = Engine(HermesAgent(), chat(40, 2_400), config).run()
    recs = compaction_records(res)
    assert recs and all(r.view.shows(1) for r in recs)
    assert not res.violations


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(HermesAgent(HermesAgentConfig(protect_first_n=0, protect_last_n=4)))


def test_under_pressure_the_tail_keeps_three_messages() -> None:
    """When the head, the 20 newest messages and a summary would still be over the threshold, the tail keeps 3 (here
    moved back to the live turn's user message: 4)."""
    c = chat(12, 16_000)  # about 4,000 tokens a turn: the newest 20 messages (5 turns) alone pass 18,000
    model = ModelConfig(context_window=24_000, output_reserve=1_000)  # 0.75 floor: 18,000
    st = state_of(HermesAgent(), c, model, context=18_000)
    plan = HermesAgent().decide(st, "auto")
    assert plan is not None and plan.start == st.last_user_index == len(c.messages) - 4
