"""The ``nexau-*`` policies (``policies/nexau.py``): NexAU's compaction before and after each model call."""

from __future__ import annotations

import pytest

from policies.nexau import (
    COMPACTED,
    HANDOFF_PREFIX,
    NexAUConfig,
    NexAUSummary,
    NexAUToolResultCompaction,
    estimate,
)
from sim.core.config import RunConfig
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import View, edit_parts
from sim.replay.engine import Engine
from sim.replay.strategies import small_model
from tests.builders import (
    asst,
    call,
    change,
    compaction_records,
    conv,
    request_turn,
    revert,
    state_of,
    sys,
    tool,
    user,
)
from tests.policies.reverts import SMALL, shows_revert_resolution

MODEL = ModelConfig(context_window=10_000, output_reserve=500)


def loop(steps: int, size: int = 1_200) -> Conversation:
    d = [sys("s", id="sys"), user("do it", id="task")]
    for k in range(steps):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * size, id=f"t{k}")]
    return conv(*d, asst("next step", [call("cz")], id="az"))  # the reply just made, with a call


def result_texts(c: Conversation, st: RunState, view: View) -> dict[str, list[str]]:
    """Each tool message's result texts as ``view`` shows them."""
    return {
        m.id: [p.text for p in edit_parts(m, view.rules_at(i)) if p and p.kind == "tool_result"]
        for i, m in enumerate(c.messages)
        if m.role == "tool"
    }


def test_defaults_and_when() -> None:
    """config.py's defaults; asked before every call (before_model) and right after every reply (after_model)."""
    cfg = NexAUToolResultCompaction().config
    assert (cfg.threshold, cfg.keep_iterations, cfg.keep_user_rounds) == (0.75, 3, 0)
    assert (cfg.compactable_tools, cfg.emergency_compact_enabled) == (None, True)
    assert NexAUToolResultCompaction.when == NexAUSummary.when == frozenset({"request", "response"})
    assert NexAUSummary().retry_on_overflow == 1
    assert NexAUSummary(NexAUConfig(emergency_compact_enabled=False)).retry_on_overflow == 0
    with pytest.raises(InvalidConfig):
        NexAUConfig(keep_iterations=4, keep_user_rounds=1)  # both strategies: "Cannot set both"


def test_tool_results_before_the_newest_iterations_are_compacted() -> None:
    c = loop(8)
    pol = NexAUToolResultCompaction()
    assert pol.decide(state_of(pol, c, MODEL, context=7_000), "auto") is None  # under 0.75 x 10,000
    st = state_of(pol, c, MODEL, context=7_500)
    plan = pol.decide(st, "auto")
    assert plan is not None
    texts = result_texts(c, st, plan.view_from(st.view))
    assert texts["t5"] == [COMPACTED] and texts["t6"] != [COMPACTED]  # the newest 3 iterations: a6, a7, az


def test_after_a_reply_the_reported_prompt_without_the_reply_counts() -> None:
    """after_model counts ``context_used_tokens``: uncached input plus cache reads, the reply's output left out (the
    guide's reading counted the reply too)."""
    c = loop(8)
    pol = NexAUToolResultCompaction()
    st = state_of(pol, c, MODEL, context=7_400)
    st.last_output_tokens = 200  # 7,600 with the reply, over 7,500; the prompt alone is under
    assert pol.decide(st, "auto") is None


def test_skipped_after_a_reply_without_calls() -> None:
    c = conv(*loop(8).messages[:-1], asst("done", id="done"))
    pol = NexAUToolResultCompaction()
    assert pol.decide(state_of(pol, c, MODEL, context=9_000), "auto") is None


def chat_turns(n: int, size: int) -> list:
    """``n`` user turns, each a step with a call, its result of ``size`` characters and a reply without calls."""
    return [d for k in range(n) for d in request_turn(k, size)]


def test_checked_before_the_call_that_a_new_user_message_asks_for() -> None:
    """before_model: a new user message after a reply without calls is checked by NexAU's own estimate (no skip);
    the guide's reading asked after replies with calls only, so it never compacted here."""
    c = conv(sys("s", id="sys"), *chat_turns(6, 6_000), user("and now?", id="next"))
    pol = NexAUToolResultCompaction()
    st = state_of(pol, c, MODEL)  # no request yet: the estimate
    assert estimate(st) >= 7_500
    plan = pol.decide(st, "auto")
    assert plan is not None
    texts = result_texts(c, st, plan.view_from(st.view))
    # iterations, newest first: [d5, next], [a5, t5], [d4]; a4's result and older ones are cleared
    assert texts["t4"] == [COMPACTED] and texts["t5"] != [COMPACTED]


def test_checked_before_a_call_in_a_tool_loop_by_the_estimate() -> None:
    """Mid tool loop the request after a result is checked too, by the estimate (a tool message last)."""
    c = conv(*loop(8).messages[:-1])  # last: t7, the request for the next step
    pol = NexAUSummary()
    st = state_of(pol, c, MODEL)
    assert estimate(st) < 7_500
    assert pol.decide(st, "auto") is None
    big = conv(*loop(8, 4_000).messages[:-1])
    st = state_of(pol, big, MODEL)
    assert estimate(st) >= 7_500
    assert pol.decide(st, "auto") is None  # one turn: the cut stops at its user message (the harness's contract)
    pol = NexAUToolResultCompaction()
    plan = pol.decide(state_of(pol, big, MODEL), "auto")
    assert plan is not None  # a5, a6, a7 kept: t0..t4 cleared


def test_an_iteration_takes_the_user_messages_right_before_it() -> None:
    """``_group_into_iterations`` moves the user messages right before an assistant message into its iteration, so
    the kept part starts at the user message, not at the assistant message after it."""
    d = [sys("s", id="sys")]
    for k in range(3):
        d += [user(f"question {k} " + "q" * 4_000, id=f"u{k}"), asst(f"answer {k} " + "w" * 4_000, id=f"d{k}")]
    d += [user("go", id="u3"), asst("step", [call("c1")], id="a1"), tool("c1", "r" * 8_000, id="t1")]
    c = conv(*d, asst("next", [call("c2")], id="a2"))
    pol = NexAUSummary()
    st = state_of(pol, c, MODEL, context=8_000)
    plan = pol.decide(st, "auto")
    assert plan is not None
    # iterations, newest first: [a2], [u3, a1, t1], [u2, d2]; kept from u2
    assert c.messages[plan.start].id == "u2"


def test_keep_user_rounds_keeps_whole_rounds() -> None:
    """With ``keep_user_rounds`` the newest rounds are kept whole (a round ends at a reply without calls), however
    many iterations the newest holds; 3 iterations would clear the round's older results."""
    d = [sys("s", id="sys"), user("first", id="u1"), asst("s1", [call("c1")], id="a1")]
    d += [tool("c1", "r" * 8_000, id="t1"), asst("done", id="f1"), user("second", id="u2")]
    for k in range(2, 7):
        d += [asst(f"s{k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 4_000, id=f"t{k}")]
    c = conv(*d, asst("more", [call("cz")], id="az"))
    pol = NexAUToolResultCompaction(NexAUConfig(keep_user_rounds=1))
    st = state_of(pol, c, MODEL, context=8_000)
    plan = pol.decide(st, "auto")
    assert plan is not None
    texts = result_texts(c, st, plan.view_from(st.view))
    assert texts["t1"] == [COMPACTED] and texts["t2"] != [COMPACTED]


def test_compactable_tools_limit_what_is_cleared() -> None:
    """``compactable_tools``: only results of those tools are compacted, the others kept whole."""
    d = [sys("s", id="sys"), user("do it", id="task")]
    for k in range(8):
        name = "read" if k % 2 else "grep"
        d += [asst(f"s{k}", [call(f"c{k}", name)], id=f"a{k}"), tool(f"c{k}", "r" * 1_200, name=name, id=f"t{k}")]
    c = conv(*d, asst("next", [call("cz")], id="az"))
    pol = NexAUToolResultCompaction(NexAUConfig(compactable_tools=("read",)))
    st = state_of(pol, c, MODEL, context=7_500)
    plan = pol.decide(st, "auto")
    assert plan is not None
    texts = result_texts(c, st, plan.view_from(st.view))
    assert texts["t1"] == [COMPACTED] and texts["t0"] != [COMPACTED]


def test_summary_strategy_and_runs() -> None:
    turns = conv(sys("s", id="sys"), *(d for k in range(1, 40) for d in request_turn(k, 1_600)))
    for pol, c in (
        (NexAUToolResultCompaction(NexAUConfig(threshold=0.5)), loop(40, 800)),
        (NexAUSummary(NexAUConfig(threshold=0.5)), turns),
    ):
        res = Engine(pol, c, SMALL).run()
        assert compaction_records(res) and not res.violations, type(pol).__name__
    assert shows_revert_resolution(NexAUSummary(NexAUConfig(threshold=0.5)))


def test_summary_reads_the_handoff_prefix() -> None:
    turns = conv(sys("s", id="sys"), *(d for k in range(1, 40) for d in request_turn(k, 1_600)))
    eng = Engine(NexAUSummary(NexAUConfig(threshold=0.5)), turns, SMALL)
    eng.run()
    assert eng.state.view.summary is not None and eng.state.view.summary.text.startswith(HANDOFF_PREFIX + "\n\n")


def three_large_results() -> Conversation:
    """One turn of three 2,600-token results: the newest three iterations alone overflow an 8,000-token window with
    500 reserved, so nothing but the emergency path can save the request."""
    d = [sys("s", id="sys"), user("do it", id="task")]
    for k in range(3):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 10_400, id=f"t{k}")]
    return conv(*d, asst("done", id="done"))


def large_results_after_thinking() -> Conversation:
    """As :func:`three_large_results`, the first reply thinking (not the later ones): the emergency summary takes it,
    and the request's final turn then opens without thinking (for ``test_properties.HAND_BUILT``)."""
    c = three_large_results()
    first = c.messages[2]
    thought = asst("step 0", [call("c0")], thinking="plan the work " * 20, id=first.id)
    return conv(*c.messages[:2], thought, *c.messages[3:])


def test_known_deviation_atomic_units_in_a_live_thinking_loop() -> None:
    """Anthropic rejects the retried request: its final turn opens at the newest iteration, which does not think."""
    for pol in (NexAUSummary(), NexAUToolResultCompaction()):
        assert pol.declared("atomic-units") is not None
        res = Engine(pol, large_results_after_thinking(), RunConfig(model=small_model(8_000), tokenizer="chars4")).run()
        assert "atomic-units" in res.summary["violations_by_invariant"], type(pol).__name__


def test_overflow_emergency_summary_and_one_retry() -> None:
    """wrap_model_call: on a provider overflow, everything but the newest iteration and the last user message is
    summarised into a message right after the system prompt, and the call retried once."""
    c = three_large_results()
    pol = NexAUSummary()
    st = state_of(pol, conv(*c.messages[:-1]), SMALL.model)
    plan = pol.decide(st, "overflow")
    assert plan is not None and plan.summarize and plan.mode == "emergency"
    assert c.messages[plan.start].id == "a2" and plan.pinned == (1,) and plan.summary_slot == 0
    assert plan.summary_request.max_tokens == 480  # max(192, min(3072, 0.06 x 8,000))
    for p in (NexAUSummary(), NexAUToolResultCompaction()):
        res = Engine(p, c, SMALL).run()
        assert res.summary["finish_reason"] == "completed", type(p).__name__
        assert [r.trigger for r in compaction_records(res)] == ["overflow"]
        assert not res.violations
    off = Engine(NexAUSummary(NexAUConfig(emergency_compact_enabled=False)), c, SMALL).run()
    assert off.summary["finish_reason"] == "context-overflow"


def revert_after_an_emergency() -> Conversation:
    """A change in the first turn, a second turn whose three large results overflow the window (the emergency
    summary replaces the first turn), then a user message that reverts the change."""
    d = [sys("s", id="sys"), user("edit it", change("ch1", "edit a.py"), id="u0"), asst("edited", id="d0")]
    d += [user("now look", id="u1")]
    for k in range(3):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 10_400, id=f"t{k}")]
    return conv(*d, asst("done", id="done"), user("undo that edit", revert("ch1"), id="undo"), asst("undone"))


def test_known_deviation_revert_resolution_after_an_emergency_summary() -> None:
    """The emergency summary knows nothing of reverts either: the tool-result strategy loses a change to it."""
    c = revert_after_an_emergency()
    res = Engine(NexAUToolResultCompaction(), c, SMALL).run()
    assert [r.trigger for r in compaction_records(res)] == ["overflow"]
    assert "revert-resolution" in res.summary["violations_by_invariant"]
    # A revert in the last user message, which the emergency summary keeps, keeps its change (the harness's rule).
    d = [*c.messages[:3], user("now look, and undo that edit", revert("ch1"), id="u1"), *c.messages[4:10]]
    pol = NexAUToolResultCompaction()
    assert pol.decide(state_of(pol, conv(*d), SMALL.model), "overflow") is None  # the change is the first message


def texts_over_the_threshold() -> Conversation:
    """A task text no clearing touches, 5,000 tokens, and a tool loop of 600-token results: after clearing, the view
    stays over 0.75 of an 8,000-token window (for ``test_properties.HAND_BUILT``)."""
    d = [sys("s", id="sys"), user("do it " + "q" * 20_000, id="task")]
    for k in range(12):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 2_400, id=f"t{k}")]
    return conv(*d, asst("done", id="done"))


def test_known_deviation_compaction_loop() -> None:
    """Long texts that no clearing touches keep the view over 0.75 of the window: NexAU compacts after every call."""
    res = Engine(NexAUToolResultCompaction(), texts_over_the_threshold(), SMALL).run()
    assert "compaction-loop" in res.summary["violations_by_invariant"]


def kept_iterations_over_the_threshold() -> Conversation:
    """Small request turns around one whose 5,800-token result stays among the newest three iterations for several
    calls: each summary of what slid out leaves the view over 0.75 of an 8,000-token window (for
    ``test_properties.HAND_BUILT``)."""
    return conv(
        sys("You are an agent.", id="sys"),
        *(d for k in range(4) for d in request_turn(k, 1_200)),
        user("look at the big file", id="ub"),
        asst("reading", [call("cb")], id="ab"),
        tool("cb", "b" * 23_200, id="tb"),
        asst("read it", id="db"),
        *(d for k in range(5, 9) for d in request_turn(k, 1_200)),
    )


def test_known_deviation_compaction_loop_of_the_summary() -> None:
    """What NexAU keeps (the newest three iterations, one with a large result) holds the view over the threshold,
    and with no guard it summarises again at the next call (before_model, then after_model, on consecutive turns)."""
    assert NexAUSummary.declared("compaction-loop") is not None
    res = Engine(NexAUSummary(), kept_iterations_over_the_threshold(), SMALL).run()
    assert "compaction-loop" in res.summary["violations_by_invariant"]


def pending_turns_resolved_one_by_one() -> Conversation:
    """The shape of ``csim check``'s 10,000-example counterexample (benchmarks/results/check-10000.jsonl): three turns
    each ending on a pending reply (an approval asked for), the third never resolved, a tool loop of large results,
    then user messages resolving the first two pending replies, one a turn."""
    d = [sys("You are an agent.", id="sys")]
    for k in range(3):
        d += [user(f"question {k}", id=f"u{k}"), asst("may I? " + "p" * 1_600, id=f"p{k}", pending=True)]
    d += [user("go on", id="go")]
    for k in range(4):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 5_600, id=f"t{k}")]
    d += [asst("done", id="done")]
    d += [user("yes to the first", id="y0", resolves=["p0"]), asst("ok", id="o0")]
    d += [user("yes to the second", id="y1", resolves=["p1"]), asst("ok", id="o1")]
    return conv(*d, user("thanks", id="y2"), asst("ok", id="o2"))


def test_pending_turns_cap_each_summary_into_a_declared_loop() -> None:
    """Regression (csim check, 10,000 examples): an unresolved pending turn caps every cut (the harness's
    ``protected_from``), so as the earlier pending turns resolve each summary frees one of them only and the view
    stays over the threshold on consecutive turns. NexAU would compact again as well (no guard): a declared
    ``compaction-loop``, not a failure."""
    c = pending_turns_resolved_one_by_one()
    res = Engine(NexAUSummary(), c, SMALL).run()
    ids = [c.messages[r.view.start].id for r in compaction_records(res)]
    assert ids == ["u1", "u2"]  # each cut at the start of the oldest pending turn still unresolved
    assert res.summary["violations_by_invariant"] == {"compaction-loop": 1}
    assert NexAUSummary.declared("compaction-loop") is not None


def test_clearing_after_an_emergency_keeps_its_pinned_user_message() -> None:
    """The emergency summary keeps the last user message apart from the newest iteration (a span); a later clearing
    of results restates it. Regression (``csim check --examples 3000``, protected-span): the clearing plan dropped
    it, and a pending reply in its turn had made it the start of a protected turn."""
    d = [sys("You are an agent.", id="sys"), user("first", id="u0"), asst("ok", id="d0"), user("look", id="U")]
    for k in range(3):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 10_400, id=f"t{k}")]
    d += [asst("may I go on?", id="ask", pending=True), user("also this", id="u2")]
    for k in range(3, 9):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 4_000, id=f"t{k}")]
    c = conv(*d, asst("done", id="done"))
    res = Engine(NexAUToolResultCompaction(), c, RunConfig(model=small_model(8_000), tokenizer="chars4")).run()
    records = compaction_records(res)
    assert records[0].trigger == "overflow"
    assert all(r.view.shows(3) for r in records)  # U, index 3
    assert "protected-span" not in res.summary["violations_by_invariant"]
