"""The ``goose`` policy (``policies/goose.py``): Goose's auto-compaction.

Each test names what it checks in ``block/goose@0036b819`` ``crates/goose/src/context_mgmt/mod.rs``. Decisions are
driven on states built with :func:`tests.builders.state_of` (``context``: the last request's usage, its reply 0
tokens); runs use the engine with the ``chars4`` tokenizer on the 8,000-token test model.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.goose import (
    CONVERSATION_CONTINUATION_TEXT,
    MANUAL_COMPACT_CONTINUATION_TEXT,
    TOOL_LOOP_CONTINUATION_TEXT,
    Goose,
    GooseConfig,
    middle_out,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.view import Summary
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    compact_cmd,
    compaction_records,
    conv,
    request_turn,
    revert,
    shown_ids,
    state_of,
    sys,
    tool,
    user,
)

SMALL = small_model()  # 8,000 tokens
C4 = RunConfig(model=SMALL, tokenizer="chars4")


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are goose.", id="sys"), *drafts)


def planned(c: Conversation, trigger: str = "auto", policy: Goose | None = None, **kw: object) -> list[str] | None:
    policy = policy or Goose()
    state = state_of(policy, c, SMALL, **kw)  # type: ignore[arg-type]
    plan = policy.decide(state, trigger)  # type: ignore[arg-type]
    if plan is None:
        return None
    return shown_ids(c, plan.view_from(state.view).with_(summary=Summary("s")))


def test_defaults_and_config() -> None:
    """mod.rs ``DEFAULT_COMPACTION_THRESHOLD = 0.8``; a context-length error is compacted and retried at most twice
    (docs)."""
    assert Goose().config.threshold == 0.8  # DEFAULT_COMPACTION_THRESHOLD
    with pytest.raises(InvalidConfig, match="context_limit=0"):
        make_policy("goose", {"context_limit": "0"})
    assert Goose().retry_on_overflow == 2


def test_triggers_strictly_over_the_threshold() -> None:
    """``usage_ratio > threshold``: 6,400 of 8,000 is not over 0.8; 6,401 is."""
    c = chat(*request_turn(1, 8_000), *request_turn(2, 8_000), user("request 3", id="u3"))
    assert planned(c, context=6_400) is None
    assert planned(c, context=6_401) is not None
    assert planned(c, context=7_000) is not None


@pytest.mark.parametrize("threshold", [0.0, -1.0, 1.0, 1.5])
def test_threshold_out_of_range_disables_auto_compaction(threshold: float) -> None:
    """``if threshold <= 0.0 || threshold >= 1.0 { false }``."""
    c = chat(*request_turn(1, 8_000), *request_turn(2, 8_000), user("request 3", id="u3"))
    assert planned(c, policy=Goose(GooseConfig(threshold=threshold)), context=7_900) is None


def test_everything_is_summarised_and_the_new_user_message_reappended() -> None:
    """``compact_messages``: all agent-visible messages summarised, then the summary (user), the assistant
    continuation (the conversation variant: the preserved message is the newest), and the user message again."""
    c = chat(*request_turn(1, 8_000), *request_turn(2, 8_000), user("request 3", id="u3"))
    assert planned(c, context=7_000) == ["sys", "<summary>", CONVERSATION_CONTINUATION_TEXT, "u3"]


def test_inside_a_tool_loop_the_loop_text_and_the_loop_is_summarised() -> None:
    """Not the newest message: ``TOOL_LOOP_CONTINUATION_TEXT``; what followed the user message is summarised and the
    user message re-appended after the continuation."""
    c = chat(
        *request_turn(1, 8_000), user("request 2", id="u2"), asst("s", [call("cx")], id="ax"), tool("cx", "x" * 8_000)
    )
    assert planned(c, context=7_000) == ["sys", "<summary>", TOOL_LOOP_CONTINUATION_TEXT, "u2"]


def test_manual_compaction_keeps_no_user_message() -> None:
    """``manual_compact``: no preserved user message, the manual continuation. The last user message is summarised
    with the rest (known deviation ``live-turn``)."""
    c = chat(*request_turn(1, 8_000), *request_turn(2, 400), compact_cmd(id="cmd"))
    assert planned(c, "manual") == ["sys", "<summary>", MANUAL_COMPACT_CONTINUATION_TEXT]
    res = Engine(Goose(), compact_drops_live_turn(), C4).run()
    assert [r.trigger for r in compaction_records(res)] == ["manual"]
    assert "live-turn" in res.summary["violations_by_invariant"]


def compact_drops_live_turn() -> Conversation:
    """``/compact`` after two turns, then a reply: the manual compaction summarises the last user message too (for
    ``test_properties.HAND_BUILT``: the generated conversations' ``/compact`` rarely has enough to summarise)."""
    return chat(*request_turn(1, 8_000), *request_turn(2, 400), compact_cmd(), asst("ok"))


def test_engine_run_compacts_at_the_threshold_and_keeps_going() -> None:
    """A long session: each compaction replaces the history by a user-role summary and the run goes on to the end."""
    res = Engine(Goose(), chat(*(d for k in range(1, 30) for d in request_turn(k, 2_400))), C4).run()
    recs = compaction_records(res)
    assert len(recs) >= 2 and all(r.view.summary is not None and r.view.summary.role == "user" for r in recs)
    assert res.summary["finish_reason"] == "completed" and res.violations == []


@pytest.mark.parametrize(
    ("count", "percent", "removed"),
    [(10, 0, (0, 0)), (10, 10, (4, 5)), (10, 20, (4, 6)), (10, 50, (2, 7)), (10, 100, (0, 10)), (3, 10, (0, 1))],
)
def test_middle_out_removes_around_the_middle(count: int, percent: int, removed: tuple[int, int]) -> None:
    """``filter_tool_responses``: ``max(1, n * pct / 100)`` responses, alternately at ``middle - offset - 1`` and
    ``middle + offset``."""
    assert middle_out(count, percent) == removed


def test_summariser_overflow_drops_middle_tool_responses_from_its_input() -> None:
    """``do_compact``: on ContextLengthExceeded, retry with tool responses removed from the middle out (10%, 20%,
    50%, 100%). A prompt the provider rejected (overflow) is too long for the summariser too: the first share that
    fits is left out of its input (and only of its input: the messages leave the view anyway)."""
    c = chat(*(d for k in range(1, 11) for d in request_turn(k, 3_000)), user("request 11", id="u11"))
    state = state_of(Goose(), c, SMALL)
    assert state.view_size()[0] > SMALL.input_budget
    plan = Goose().decide(state, "overflow")
    assert plan is not None and plan.edits is not None
    drops = [e for e in plan.edits if e.rule.action == "drop" and "tool_result" in e.rule.kinds]
    assert len(drops) == 1 and drops[0].before < state.last_user_index
    small = chat(*request_turn(1, 400), *request_turn(2, 400), user("request 3", id="u3"))
    plan = Goose().decide(state_of(Goose(), small, SMALL), "overflow")
    assert plan is not None and plan.edits is not None  # fits: no tool response removed, only thinking left out
    assert [e.rule.kinds for e in plan.edits] == [frozenset({"thinking"})]


def test_known_deviation_revert_resolution() -> None:
    """Goose has no notion of reverts: a revert kept in view (the re-appended user message) loses its change."""
    c = chat(
        user("edit it", change("ch1", "edit a.py"), id="u0"),
        asst("edited", [call("c0")], id="a0"),
        tool("c0", "e" * 26_000, id="t0"),
        asst("ok", id="d0"),
        user("undo that", revert("ch1"), id="undo"),
        asst("undone"),
    )
    res = Engine(Goose(), c, C4).run()
    assert compaction_records(res) and "revert-resolution" in res.summary["violations_by_invariant"]


def test_a_second_compact_with_nothing_new_summarises_nothing() -> None:
    """Found by ``check_policies.py`` at 10,000 examples: ``/compact`` twice with nothing in between but a pending
    turn (which stays) summarised the previous summary alone, and a summary of a summary that holds the same facts is
    no shorter (241 tokens before and after: ``compaction-shrinks``). Nothing but the summary would leave the view, so
    the second is skipped."""
    from pathlib import Path

    from sim.core.log import CompactionCreated
    from sim.formats.native import read as read_native

    path = Path(__file__).parents[1] / "golden" / "counterexamples" / "goose-compacts-its-summary-again.jsonl"
    [c] = read_native(path).conversations
    assert [i for i, m in enumerate(c.messages) if m.command == "compact"] == [49, 61, 66]  # the case itself
    engine = Engine(Goose(), c, RunConfig(model=small_model(8_000), deep_checks=True))
    res = engine.run()
    made = [e for e in engine.log if isinstance(e, CompactionCreated)]
    assert [(e.trigger, e.tokens_after < e.tokens_before) for e in made] == [("manual", True), ("manual", True)]
    assert "compaction-shrinks" not in res.summary["violations_by_invariant"]
