"""The ``pi`` policy (``policies/pi_agent.py``): pi's session compaction."""

from __future__ import annotations

from policies.pi_agent import KEEP_RECENT_TOKENS, RESERVE_TOKENS, Pi, PiConfig
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from tests.builders import compaction_records, conv, request_turn, state_of, sys

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


def test_keeps_the_newest_tokens_in_whole_turns() -> None:
    """The kept tail covers at least ``keep_recent_tokens`` (here 8,000) and starts at no tool result."""
    pol = Pi(PiConfig(keep_recent_tokens=8_000))
    c = chat(60)
    st = state_of(pol, c, MODEL, context=190_000)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.summarize
    assert c.messages[plan.start].role != "tool"  # pi never cuts at a tool result
    kept = st.view_size(plan.view_from(st.view).with_(summary=None))[0]
    assert kept >= 8_000


def test_engine_run() -> None:
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")
    res = Engine(Pi(PiConfig(reserve_tokens=2_000, keep_recent_tokens=1_500)), chat(40, 1_600), config).run()
    assert compaction_records(res) and not res.violations


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(Pi(PiConfig(reserve_tokens=2_000, keep_recent_tokens=1_500)))
