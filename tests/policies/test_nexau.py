"""The ``nexau-*`` policies (``policies/nexau.py``): NexAU's compaction after each model call."""

from __future__ import annotations

from policies.nexau import COMPACTED, NexAUConfig, NexAUSummary, NexAUToolResultCompaction
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.view import edit_parts
from sim.replay.engine import Engine
from tests.builders import asst, call, compaction_records, conv, request_turn, state_of, sys, tool, user
from tests.policies.reverts import SMALL, shows_revert_resolution

MODEL = ModelConfig(context_window=10_000, output_reserve=500)


def loop(steps: int, size: int = 1_200) -> Conversation:
    d = [sys("s", id="sys"), user("do it", id="task")]
    for k in range(steps):
        d += [asst(f"step {k}", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * size, id=f"t{k}")]
    return conv(*d, asst("next step", [call("cz")], id="az"))  # the reply just made, with a call


def test_defaults_and_when() -> None:
    cfg = NexAUToolResultCompaction().config
    assert (cfg.threshold, cfg.keep_iterations) == (0.75, 3)
    assert NexAUToolResultCompaction.when == frozenset({"response"})


def test_tool_results_before_the_newest_iterations_are_compacted() -> None:
    c = loop(8)
    pol = NexAUToolResultCompaction()
    assert pol.decide(state_of(pol, c, MODEL, context=7_000), "auto") is None  # under 0.75 x 10,000
    st = state_of(pol, c, MODEL, context=7_500)
    plan = pol.decide(st, "auto")
    assert plan is not None
    view = plan.view_from(st.view)
    texts = {
        m.id: [p.text for p in edit_parts(m, view.rules_at(i)) if p and p.kind == "tool_result"]
        for i, m in enumerate(c.messages)
        if m.role == "tool"
    }
    assert texts["t5"] == [COMPACTED] and texts["t6"] != [COMPACTED]  # the newest 3 iterations: a6, a7, az


def test_skipped_after_a_reply_without_calls() -> None:
    c = conv(*loop(8).messages[:-1], asst("done", id="done"))
    assert (
        NexAUToolResultCompaction().decide(state_of(NexAUToolResultCompaction(), c, MODEL, context=9_000), "auto")
        is None
    )


def test_summary_strategy_and_runs() -> None:
    turns = conv(sys("s", id="sys"), *(d for k in range(1, 40) for d in request_turn(k, 1_600)))
    for pol, c in (
        (NexAUToolResultCompaction(NexAUConfig(threshold=0.5)), loop(40, 800)),
        (NexAUSummary(NexAUConfig(threshold=0.5)), turns),
    ):
        res = Engine(pol, c, SMALL).run()
        assert compaction_records(res) and not res.violations, type(pol).__name__
    assert shows_revert_resolution(NexAUSummary(NexAUConfig(threshold=0.5)))


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
