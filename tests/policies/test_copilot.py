"""The ``copilot-infinite-sessions`` and ``vscode-copilot-chat`` policies (``policies/copilot.py``)."""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.copilot import CopilotInfiniteSessions, VSCodeCopilotChat
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Summary
from sim.replay.engine import Engine
from tests.builders import asst, call, compaction_records, conv, request_turn, shown_ids, state_of, sys, tool, user
from tests.policies.reverts import SMALL, shows_revert_resolution

MODEL = ModelConfig(context_window=200_000, output_reserve=8_192)


def chat(turns: int, size: int = 2_000) -> Conversation:
    return conv(sys("You are Copilot.", id="sys"), *(d for k in range(1, turns + 1) for d in request_turn(k, size)))


def test_infinite_sessions_thresholds() -> None:
    cfg = CopilotInfiniteSessions().config
    assert (cfg.background_compaction_threshold, cfg.buffer_exhaustion_threshold) == (0.80, 0.95)
    with pytest.raises(InvalidConfig, match="background"):
        make_policy("copilot-infinite-sessions", {"background_compaction_threshold": "0.99"})
    c = conv(*chat(20).messages, user("next", id="next"))
    assert (
        CopilotInfiniteSessions().decide(state_of(CopilotInfiniteSessions(), c, MODEL, context=159_999), "auto") is None
    )
    st = state_of(CopilotInfiniteSessions(), c, MODEL, context=160_000)
    plan = CopilotInfiniteSessions().decide(st, "auto")
    assert plan is not None and shown_ids(c, plan.view_from(st.view).with_(summary=Summary("s"))) == [
        "sys",
        "<summary>",
        "next",
    ]


def test_vscode_summarises_mid_turn_keeping_the_newest_round() -> None:
    """Over the prompt budget inside a tool loop: the newest round (call and result) stays, with the turn's request."""
    small = ModelConfig(context_window=4_000, output_reserve=500)
    loop = [
        d
        for k in range(12)
        for d in (asst(f"s{k}", [call(f"x{k}")], id=f"l{k}"), tool(f"x{k}", "y" * 1_200, id=f"r{k}"))
    ]
    c = conv(sys("s", id="sys"), *chat(2, 400).messages[1:], user("fix it", id="task"), *loop)
    st = state_of(VSCodeCopilotChat(), c, small)
    assert VSCodeCopilotChat().over_trigger(st)
    plan = VSCodeCopilotChat().decide(st, "auto")
    assert plan is not None
    assert shown_ids(c, plan.view_from(st.view).with_(summary=Summary("s")))[-4:] == ["<summary>", "task", "l11", "r11"]


def test_engine_runs_and_known_deviations() -> None:
    for pol in (CopilotInfiniteSessions(), VSCodeCopilotChat()):
        res = Engine(pol, chat(40, 1_600), SMALL).run()
        assert compaction_records(res) and not res.violations, type(pol).__name__
        assert shows_revert_resolution(pol), type(pol).__name__
