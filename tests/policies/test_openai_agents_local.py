"""The ``openai-agents-local-compaction`` policy (``policies/openai_agents_local.py``): LocalCompactionSession 0.3.0."""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.openai_agents_local import OpenAIAgentsLocal, OpenAIAgentsLocalConfig, items_of
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from tests.builders import compaction_records, conv, request_turn, shown_ids, state_of, sys, user


def chat(turns: int, size: int = 400) -> Conversation:
    return conv(sys("You are an agent.", id="sys"), *(d for k in range(1, turns + 1) for d in request_turn(k, size)))


def test_defaults_and_validation() -> None:
    cfg = OpenAIAgentsLocal().config
    assert (cfg.window_size, cfg.token_budget) == (50, None)
    with pytest.raises(InvalidConfig, match="token_budget"):
        make_policy("openai-agents-local-compaction", {"token_budget": "0"})


def test_items_of_a_step() -> None:
    """A user message is one item; an assistant message with text and a call two; each result one."""
    c = chat(1)
    assert [k for m in c.messages[1:] for k, _, _ in items_of(m)] == ["message", "message", "call", "output", "message"]


def test_window_keeps_the_newest_items_at_a_user_turn() -> None:
    """12 turns of 5 items (u, a's text and call, the output, d) are 60 items before the new user message: the newest
    50 are kept, whole units, and the new message."""
    c = conv(*chat(12).messages, user("next", id="next"))
    st = state_of(OpenAIAgentsLocal(), c)
    plan = OpenAIAgentsLocal().decide(st, "auto")
    assert plan is not None
    ids = shown_ids(c, plan.view_from(st.view))
    assert ids[-1] == "next" and "u3" in ids and "d2" not in ids and "u2" not in ids


def test_token_budget_soft_limit_keeps_the_newest() -> None:
    """A budget smaller than the newest item still keeps it (the soft limit)."""
    pol = OpenAIAgentsLocal(OpenAIAgentsLocalConfig(window_size=None, token_budget=5))
    c = conv(*chat(3, 4_000).messages, user("next", id="next"))
    st = state_of(pol, c)
    plan = pol.decide(st, "auto")
    assert plan is not None and shown_ids(c, plan.view_from(st.view))[-2:] == ["d3", "next"]


def test_engine_run() -> None:
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")
    res = Engine(OpenAIAgentsLocal(OpenAIAgentsLocalConfig(window_size=12)), chat(30, 800), config).run()
    assert compaction_records(res) and not res.violations


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(OpenAIAgentsLocal(OpenAIAgentsLocalConfig(window_size=12)))
