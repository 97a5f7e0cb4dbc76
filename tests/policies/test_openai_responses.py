"""OpenAI Responses compaction as policies: ``openai-agents-session`` (the Agents SDK's
``OpenAIResponsesCompactionSession``) and ``openai-responses-compaction`` (the API's ``compact_threshold``).

Each test names the rule it shows: ``openai_responses_compaction_session.py`` (``openai/openai-agents-python``
@7f7a44f8, 0.22.0), the API's compaction guide (catalogue §B4). Decisions are driven on states built with
:func:`tests.builders.state_of`; whole runs use the ``chars4`` tokenizer.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.openai_responses import (
    COMPACTION_THRESHOLD,
    AgentsSessionConfig,
    OpenAIAgentsSession,
    OpenAIResponsesCompaction,
    ResponsesCompactionConfig,
    candidate_items,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import RunConfig, run
from tests.builders import Draft, asst, change, compact_cmd, compaction_records, conv, revert, state_of, sys, tool, user

MODEL = ModelConfig(provider="openai", context_window=8_000, output_reserve=1_000)
C4 = RunConfig(model=MODEL, tokenizer="chars4")


def turns(k: int, steps: int = 2, *, size: int = 400, then: bool = True) -> Conversation:
    """``k`` user turns of ``steps`` call/result rounds and an answer (``2 x steps + 1`` candidate items a turn); then
    (``then``) the next user message."""
    d: list[Draft] = [sys("You are a coding agent.")]
    for t in range(k):
        d.append(user(f"Task {t}: fix module {t}.", id=f"u{t}"))
        for s in range(steps):
            d.append(asst("", [f"c{t}_{s}"], id=f"a{t}_{s}"))  # a function_call item alone
            d.append(tool(f"c{t}_{s}", f"out {t}.{s} " + "x" * size, id=f"t{t}_{s}"))
        d.append(asst(f"Module {t} fixed.", id=f"d{t}"))
    if then:
        d.append(user("Next task.", id="next"))
    return conv(*d)


def session(**kw: int) -> OpenAIAgentsSession:
    return OpenAIAgentsSession(AgentsSessionConfig(**kw))


def server(threshold: int) -> OpenAIResponsesCompaction:
    return OpenAIResponsesCompaction(ResponsesCompactionConfig(compact_threshold=threshold))


# -- OpenAIResponsesCompactionSession -----------------------------------------------------------------------------
def test_session_defaults() -> None:
    """``DEFAULT_COMPACTION_THRESHOLD = 10``: an item count, not tokens."""
    assert AgentsSessionConfig().compaction_threshold == COMPACTION_THRESHOLD == 10
    assert make_policy("openai-agents-session").when == frozenset({"user_turn"})
    with pytest.raises(InvalidConfig, match="at least 1"):
        AgentsSessionConfig(compaction_threshold=0)


def test_candidate_items_are_responses_items() -> None:
    """``select_compaction_candidate_items`` counts every item but user messages and compaction items: an assistant
    message item, a reasoning item, each ``function_call`` and each ``function_call_output``."""
    c = conv(
        sys("s"),
        user("u"),
        asst("looking", ["c1", "c2"], thinking="hm"),
        Draft("tool", tool("c1", "a").parts + tool("c2", "b").parts),
    )
    assert [candidate_items(m) for m in c.messages] == [0, 0, 4, 2]


@pytest.mark.parametrize(("threshold", "fires"), [(11, False), (10, True), (9, True)])
def test_session_trigger_counts_items_after_a_turn(threshold: int, fires: bool) -> None:
    """``default_should_trigger_compaction``: ``len(candidates) >= threshold``. Two turns of two rounds hold 10
    candidate items (per turn: two calls, two outputs, an answer); the new user message is not yet stored."""
    pol = session(compaction_threshold=threshold)
    assert (pol.decide(state_of(pol, turns(2)), "auto") is not None) == fires


def test_session_compacts_only_between_turns() -> None:
    """``save_result_to_session``: a turn that produced local tool outputs only defers compaction; the run's final
    answer (a turn without them) runs it. A request mid tool loop is not a compaction point however many items
    there are."""
    pol = session(compaction_threshold=2)
    c = turns(3, then=False)
    mid = conv(*c.messages[:-1])  # ends on a tool output of the last turn
    assert pol.decide(state_of(pol, mid), "auto") is None


def test_session_window_keeps_user_messages_then_the_item() -> None:
    """``responses.compact`` returns the window that replaces the session: the user messages, in order, then the
    encrypted compaction item (an assistant-role summary here); the new user message follows it."""
    pol = session()
    c = turns(2)
    st = state_of(pol, c)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.summarize and plan.summary_request.role == "assistant"
    assert [c.messages[i].id for i in plan.pinned] == ["u0", "u1"]
    assert c.messages[plan.start].id == "next"
    res = run(pol, conv(*c.messages, asst("On it.", id="reply")), C4)
    (rec,) = compaction_records(res)
    assert rec.view.spans == ((1, 2), (7, 8)) and rec.view.summary is not None
    assert not [v for v in res.violations if v.invariant != "revert-resolution"]


def test_session_counts_only_items_since_the_last_compaction() -> None:
    """After a compaction the session holds the user messages and the item (no candidates): the next one waits for
    10 new items."""
    pol = session()
    c = turns(4)
    res = run(pol, conv(*c.messages, asst("On it.", id="reply")), C4)
    recs = compaction_records(res)
    assert [r.view.start for r in recs] == [13, 25]  # before u2 and before "next": 10 new items each time
    assert recs[1].view.spans == ((1, 2), (7, 8), (13, 14), (19, 20))


def test_session_manual_compact_forces() -> None:
    """``run_compaction({"force": True})`` skips the decision hook: ``/compact`` compacts whatever the count."""
    pol = session()
    c = conv(*turns(1, then=False).messages, compact_cmd(id="cmd"))
    assert pol.decide(state_of(pol, c), "auto") is None
    assert pol.decide(state_of(pol, c), "manual") is not None


def test_session_deviation_revert_resolution() -> None:
    """Known deviation ``revert-resolution``: the user messages stay and the assistant's changes go, so a kept user
    message can revert a change no longer in the view."""
    d: list[Draft] = [sys("s"), user("Fix it.", id="u0")]
    d += [asst("Editing.", ["c0"], parts=[change("ch1", "edit app.py")], id="a0"), tool("c0", "ok", id="t0")]
    for s in range(1, 6):
        d += [asst(f"Step {s}.", [f"c{s}"], id=f"a{s}"), tool(f"c{s}", "x" * 400, id=f"t{s}")]
    d += [asst("Done.", id="d0"), user("Undo that edit.", revert("ch1"), id="u1"), asst("Reverted.", id="d1")]
    res = run(session(), conv(*d), C4)
    assert compaction_records(res)
    assert any(v.invariant == "revert-resolution" for v in res.violations)


# -- context_management compaction --------------------------------------------------------------------------------
def test_server_defaults() -> None:
    """No public default ``compact_threshold``: ours is 150,000 (Anthropic's documented server default)."""
    assert ResponsesCompactionConfig().compact_threshold == 150_000
    with pytest.raises(InvalidConfig):
        ResponsesCompactionConfig(compact_threshold=0)


@pytest.mark.parametrize(("delta", "fires"), [(1, False), (0, True), (-1, True)])
def test_server_threshold_boundary(delta: int, fires: bool) -> None:
    """ "When the rendered token count crosses the configured threshold, the server runs server-side compaction":
    at the threshold it compacts (the exact tokens of the request's input)."""
    c = turns(2, then=False)
    st = state_of(server(1), c)
    tokens = st.view_size()[0]
    pol = server(tokens + delta)
    assert (pol.decide(state_of(pol, c), "auto") is not None) == fires


def test_server_compacts_the_whole_input_into_the_item() -> None:
    """The server "emits a compaction output item ... and prunes context before continuing inference"; items before
    the newest compaction item may be dropped: the whole input, latest user message included, is the item."""
    c = turns(2, then=False)
    pol = server(500)
    st = state_of(pol, c)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.start == len(c.messages) and plan.pinned == ()
    assert plan.summary_request.role == "assistant"
    assert pol.decide(st, "manual") is None and pol.decide(st, "overflow") is None


def test_server_mid_tool_loop_and_live_turn_deviation() -> None:
    """Checked on every request, mid tool loop included; known deviation ``live-turn``: the user's latest message
    goes into the item."""
    c = conv(*turns(1, steps=8, size=1_500, then=False).messages)
    res = run(server(2_000), c, C4)
    recs = compaction_records(res)
    assert recs and all(r.mode == "server-compaction" for r in recs)
    assert any(v.invariant == "live-turn" for v in res.violations)


def test_server_compaction_inside_a_thinking_loop_is_accepted() -> None:
    """Compacting inside a tool loop opened with thinking: the model answers afresh from the item (which the next
    scripted reply stands for), so the loop's later replies after it are accepted."""
    d: list[Draft] = [sys("s"), user("Fix it.", id="u0")]
    for s in range(8):
        d += [asst(f"Step {s}.", [f"c{s}"], thinking="plan" if s == 0 else None, id=f"a{s}")]
        d += [tool(f"c{s}", "x" * 1_500, id=f"t{s}")]
    res = run(server(2_000), conv(*d, asst("Done.", id="done")), C4)
    assert res.summary["compaction_count"] >= 1 and res.summary["finish_reason"] == "completed"
    assert not any(v.invariant == "atomic-units" for v in res.violations)
