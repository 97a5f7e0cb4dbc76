"""The ``mastra-observational-memory`` policy (``policies/mastra.py``)."""

from __future__ import annotations

from policies.mastra import MastraObservationalMemory, MastraObservationalMemoryConfig
from sim.core.model import ModelConfig
from sim.core.view import Summary
from sim.replay.engine import Engine
from tests.builders import compaction_records, conv, request_turn, shown_ids, state_of, sys, user
from tests.policies.reverts import SMALL, shows_revert_resolution


def test_defaults() -> None:
    cfg = MastraObservationalMemory().config
    assert (cfg.message_tokens, cfg.observation_tokens) == (30_000, 40_000)


def test_observes_unobserved_messages_before_the_live_turn() -> None:
    pol = MastraObservationalMemory(MastraObservationalMemoryConfig(message_tokens=2_000))
    c = conv(sys("s", id="sys"), *(d for k in range(1, 8) for d in request_turn(k, 1_600)), user("next", id="next"))
    st = state_of(pol, c, ModelConfig())
    assert pol.unobserved_tokens(st) >= 2_000
    plan = pol.decide(st, "auto")
    assert plan is not None and shown_ids(c, plan.view_from(st.view).with_(summary=Summary("o"))) == [
        "sys",
        "<summary>",
        "next",
    ]
    default = MastraObservationalMemory()
    assert default.decide(state_of(default, c, ModelConfig()), "auto") is None  # under 30,000


def test_engine_run_and_known_deviation() -> None:
    pol = MastraObservationalMemory(MastraObservationalMemoryConfig(message_tokens=3_000))
    c = conv(sys("s", id="sys"), *(d for k in range(1, 40) for d in request_turn(k, 1_600)))
    res = Engine(pol, c, SMALL).run()
    assert compaction_records(res) and not res.violations
    assert shows_revert_resolution(pol)
