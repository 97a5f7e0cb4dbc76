"""What a policy author is given: the helpers, when the engine asks, trigger units, and summariser-input shaping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from policies.base import NoConfig, Plan, Policy, SummaryRequest, Trigger, When
from policies.baselines import NoCompaction
from policies.helpers import keep_newest_bound, plan_shrinks, safe_cut
from sim.core.conversation import Conversation
from sim.core.log import CompactionCreated, MessageAppended
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule, View
from sim.replay.engine import RunConfig, run
from sim.replay.lockstep import run_many
from tests.builders import asst, call, change, compact_cmd, conv, fact, revert, state_of, sys, tool, user
from tests.test_lockstep import fingerprint


def _loop(turns: int, size: int = 300) -> Conversation:
    """Turns of: a user request, two tool calls one after the other, an answer."""
    drafts = [sys("s")]
    for t in range(turns):
        drafts += [user(f"task {t}"), asst(calls=[f"a{t}"]), tool(f"a{t}", "x" * size)]
        drafts += [asst(calls=[call(f"b{t}", "read")]), tool(f"b{t}", "y" * size, name="read"), asst(f"done {t}")]
    return conv(*drafts)


class _ClearsAlways(Policy[NoConfig]):
    """Clears every tool result it can, whenever it is asked: when it is asked shows in where it compacts. The
    newest results (those the next reply answers) stay, as the live-turn invariant requires."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        k = len(state)
        while k > 0 and state.messages[k - 1].role == "tool":
            k -= 1
        plan = Plan(start=state.view.start, cleared_through=min(k, state.protected_from or k))
        return plan if plan_shrinks(state, plan) else None


class _ClearsOncePerTurn(_ClearsAlways):
    when: ClassVar[frozenset[When]] = frozenset({"user_turn"})


class _ClearsAfterResponses(_ClearsAlways):
    when: ClassVar[frozenset[When]] = frozenset({"response"})


@pytest.mark.parametrize(("cls", "mid_loop"), [(_ClearsAlways, True), (_ClearsOncePerTurn, False)])
def test_when_says_at_which_requests_the_policy_is_asked(cls: type[Policy[NoConfig]], mid_loop: bool) -> None:
    c = _loop(4)
    res = run(cls(), c, RunConfig(tokenizer="chars4"))
    assert res.compactions
    replies = [i for i, m in enumerate(c.messages) if m.role == "assistant"]
    after_user = {t for t, i in enumerate(replies) if c.messages[i - 1].role == "user"}
    turns = {comp["turn"] for comp in res.compactions}
    assert turns <= after_user if not mid_loop else not turns <= after_user
    assert not res.violations


@pytest.mark.parametrize(("cls", "after"), [(_ClearsAlways, {"user", "tool"}), (_ClearsAfterResponses, {"assistant"})])
def test_a_policy_asked_after_responses_compacts_right_after_a_reply(cls: type[Policy[NoConfig]], after: set) -> None:
    c = _loop(4)
    res = run(cls(), c, RunConfig(tokenizer="chars4"))
    last_role, roles_before = None, set()
    for e in res.log:
        if isinstance(e, MessageAppended):
            last_role = e.message.role
        elif isinstance(e, CompactionCreated):
            roles_before.add(last_role)
    assert res.compactions and roles_before <= after
    assert not res.violations
    # In lockstep with policies asked at other points, each run is what it is alone.
    members = [_ClearsAfterResponses(), _ClearsAlways(), NoCompaction(), _ClearsAfterResponses()]
    config = RunConfig(tokenizer="chars4")
    assert [fingerprint(r) for r in run_many(members, c, config)] == [fingerprint(run(p, c, config)) for p in members]


def test_tool_uses_counts_calls_in_the_view() -> None:
    c = _loop(3)
    st = state_of(NoCompaction(), c)
    assert st.tool_uses() == 6
    assert st.tool_uses(View(start=7)) == 4  # the first turn (messages 1-6) left the view
    assert st.tool_uses(View(start=13, spans=((2, 4),))) == 3  # one call kept by a span, two in the tail


def test_keep_newest_bound_spares_the_newest_uses_of_the_selected_tools() -> None:
    c = _loop(3)
    st = state_of(NoCompaction(), c)
    rule = Rule(kinds=frozenset({"tool_result", "tool_call"}), exclude_tools=frozenset({"read"}))
    # grep uses sit at messages 2/3, 8/9, 14/15: keeping 2 spares the second turn's on, from its unit's start
    assert keep_newest_bound(st, rule, 2) == 8
    assert keep_newest_bound(st, rule, 5) == 0  # fewer uses than that: nothing to edit
    st.view = View(edits=(Edit(rule, 9),))
    assert keep_newest_bound(st, rule, 1) == 14 and keep_newest_bound(st, rule, 3) == 9  # never below the bound


def test_safe_cut_keeps_units_the_live_turn_pending_turns_and_reverted_changes() -> None:
    c = conv(
        sys("s"),
        user("first", change("ch1")),
        asst(calls=["c1"]),
        tool("c1", "r"),
        user("second"),
        asst("ok"),
        user("third", revert("ch1")),
        asst("fine"),
    )
    st = state_of(NoCompaction(), c)
    assert safe_cut(st, 3) is None  # inside the first unit, and the revert at 6 needs the change at 1
    c2 = conv(sys("s"), user("a"), asst(calls=["c1"]), tool("c1", "r"), user("b"), asst("ok"), user("c"))
    st2 = state_of(NoCompaction(), c2)
    assert safe_cut(st2, 3) == 2  # moved down to the start of the call's unit
    assert safe_cut(st2, 99) == 6  # never above the last user message


def test_plan_shrinks_is_measured_as_the_invariant_measures() -> None:
    c = _loop(2, size=2)  # tiny results: a placeholder is longer than what it replaces
    st = state_of(NoCompaction(), c, tokenizer="cl100k_base")
    assert not plan_shrinks(st, Plan(start=0, cleared_through=len(st)))
    big = state_of(NoCompaction(), _loop(2, size=3000), tokenizer="cl100k_base")
    assert plan_shrinks(big, Plan(start=0, cleared_through=len(big)))


@dataclass(frozen=True)
class _ShapeConfig:
    drop_outputs: bool = False
    newest_tokens: int = 0


class _SummarisesOnce(Policy[_ShapeConfig]):
    Config = _ShapeConfig

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "manual":
            return None
        cut = safe_cut(state, len(state))
        cfg = self.config
        return (
            None
            if cut is None
            else Plan(
                start=cut,
                summarize=True,
                summary_request=SummaryRequest(
                    drop_tool_outputs=cfg.drop_outputs, input_newest_tokens=cfg.newest_tokens or None
                ),
            )
        )


def test_summariser_input_can_drop_tool_outputs_or_keep_the_newest_tokens() -> None:
    c = conv(
        sys("s"),
        user("the task"),
        asst(calls=["c1"]),
        tool("c1", "ERR_4417 " + "z" * 4000),
        asst("noted"),
        user("more " * 200),
        asst("ok"),
        compact_cmd(),
        user("go on"),
        asst("on it"),
        facts=[fact("err", "artifact", "ERR_4417", "m3", needed_at=["m9"])],
    )
    cfg = RunConfig(model=ModelConfig(context_window=60_000, output_reserve=4_000), tokenizer="chars4")

    def summariser_input(**params: object) -> tuple[int, frozenset[str]]:
        res = run(_SummarisesOnce(_ShapeConfig(**params)), c, cfg)  # type: ignore[arg-type]
        rows = [r for r in res.rows if r["request_kind"] == "summariser"]
        assert len(rows) == 1 and res.compactions, res.summary
        summary = [e for e in res.log if getattr(e, "kind", "") == "compaction"][-1].view.summary
        return rows[0]["context_tokens"], summary.facts

    whole, kept = summariser_input()
    dropped, kept_dropped = summariser_input(drop_outputs=True)
    newest, _ = summariser_input(newest_tokens=300)
    assert dropped < whole - 900 and newest < whole - 900  # the 4,000-character result is not sent
    assert "err" in kept and "err" not in kept_dropped  # the fact lived in the dropped output


class _OwnPlaceholder(_ClearsAlways):
    placeholder: ClassVar[str] = "[cleared by my policy]"


def test_a_policy_with_its_own_placeholder_passes_the_deep_checks_before_and_after_compacting() -> None:
    # The log folds to the run's first view (with the policy's placeholder) until the first compaction.
    res = run(_OwnPlaceholder(), _loop(4), RunConfig(tokenizer="chars4", deep_checks=True))
    assert res.compactions and not res.violations


def test_chars_as_totals_one_kind_of_part_over_any_range() -> None:
    c = _loop(3, size=300)
    st = state_of(NoCompaction(), c)
    only_results = (Rule(frozenset({"text", "thinking", "tool_call", "change", "revert", "command"}), action="drop"),)
    for a, b in ((0, len(st)), (2, 9), (5, 5)):
        walked = sum(p.chars for m in st.messages[a:b] for p in m.parts if p.kind == "tool_result")
        assert st.chars_as(a, b, only_results) == walked
