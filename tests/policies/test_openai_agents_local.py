"""The ``openai-agents-local-compaction`` policy (``policies/openai_agents_local.py``): LocalCompactionSession 0.3.0."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.baselines import NoCompaction
from policies.openai_agents_local import OpenAIAgentsLocal, OpenAIAgentsLocalConfig, items_of, newest_items, take
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import conversations
from tests.builders import asst, call, compaction_records, conv, request_turn, shown_ids, state_of, sys, tools, user
from tests.builders import tool as tool_msg

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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


def batches_then_short_turns() -> Conversation:
    """Parallel reads of two calls, a four-call batch, then user turns of one request each: at a window of 14 items
    the walk keeps the newer call of a two-call batch, skips the older one and spends its last slot on an older
    message, and the view, keeping the batch whole, holds one item more than the window."""
    d = [sys("You are a coding agent.", id="sys"), user("tidy the parser", id="task")]
    n = 0

    def batch(k: int, tag: str) -> None:
        nonlocal n
        ids = [f"r{n + j}" for j in range(k)]
        n += k
        d.extend([asst("", [call(c, "read") for c in ids], id=f"b{tag}"), tools({c: f"src {c}" for c in ids})])

    for tag in "abc":
        batch(2, tag)
    d.append(asst("read the three modules", id="note"))
    batch(1, "d")
    batch(4, "e")
    for k in range(3):
        d.append(user(f"now step {k}", id=f"step{k}"))
        batch(4, f"s{k}")
    return conv(*d[:-2], asst("all done", id="done"))


def test_window_is_stable_once_applied() -> None:
    """Issue 32 (``csim check``: compaction-loop after 6,476 examples): ``get_items`` applied to what it returned
    returns it unchanged, so right after a user turn's window the policy has nothing more to drop. The walk reads the
    whole session, not the view: the view keeps whole units, and a walk over it dropped again what the turn had
    kept, at each of consecutive user turns."""
    pol = OpenAIAgentsLocal(OpenAIAgentsLocalConfig(window_size=14))
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=1_000), tokenizer="chars4")
    res = Engine(pol, batches_then_short_turns(), config).run()
    assert len(compaction_records(res)) >= 2
    assert not res.violations


def _kept_by_walking_everything(state: RunState, base: int, end: int, window: int | None, budget: int | None):  # type: ignore[no-untyped-def]
    """``_boundary_aware_compact_with_indices`` as the package runs it: every item of the session listed, the calls
    mapped by id (the last of an id wins), then the walk back from the newest (each step the policy's ``take``)."""
    items = [(i, *it) for i in range(base, end) for it in items_of(state.messages[i])]
    if budget is None and window is not None and len(items) <= window:
        return None
    calls = {cid: k for k, (_, kind, cid, _) in enumerate(items) if kind == "call"}
    slots, tokens, kept = window, budget, set()
    for k in range(len(items) - 1, -1, -1):
        if slots == 0 or tokens == 0:
            break
        i, kind, cid, cost = items[k]
        if kind == "call" or (kind == "output" and cid not in calls):
            continue
        if kind == "output":
            slots, tokens = take(kept, (i, items[calls[cid]][0]), 2, cost + items[calls[cid]][3], slots, tokens)
        else:
            slots, tokens = take(kept, (i,), 1, cost, slots, tokens)
    return kept


@SETTINGS
@given(conversations(window=8_000), st.sampled_from([(3, None), (12, None), (None, 400), (8, 900)]))
def test_the_walk_from_the_newest_keeps_what_walking_every_item_keeps(c: Conversation, limits: tuple) -> None:  # type: ignore[type-arg]
    """The walk that stops once a budget is spent, reading each message's items from the log's running fold, keeps
    what listing every item of the session keeps, at every length of a growing log."""
    eng = Engine(NoCompaction(), c, RunConfig(tokenizer="chars4"))
    for m in c.messages:
        eng.append(m)
        n = len(eng.state)
        assert newest_items(eng.state, 1, n - 1, *limits) == _kept_by_walking_everything(eng.state, 1, n - 1, *limits)


def test_an_output_pairs_with_the_last_call_of_its_id() -> None:
    """Two calls of one id: the package's map of call ids holds the later one, whichever output asks."""
    c = conv(
        sys("s"),
        user("task"),
        asst(calls=["dup"]),
        tool_msg("dup", "first " * 40),
        asst(calls=["dup"]),
        tool_msg("dup", "second " * 40),
        user("next"),
    )
    state = state_of(NoCompaction(), c)
    for limits in [(1, None), (2, None), (3, None), (4, None), (5, None), (None, 60), (None, 200)]:
        assert newest_items(state, 1, len(state) - 1, *limits) == _kept_by_walking_everything(
            state, 1, len(state) - 1, *limits
        )
