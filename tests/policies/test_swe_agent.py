"""SWE-agent's ``LastNObservations`` and the Complexity Trap study's ``SummarizeEveryNTurns`` settings.

Each test names the rule it shows from ``SWE-agent/SWE-agent@3ea751c0:sweagent/agent/history_processors.py``
or the study's ``Recursive-Safeguarding/the-complexity-trap@1b07decf`` (catalogue §B10, §D1). Decisions are
driven on states from :func:`tests.builders.state_of`; runs use the ``chars4`` tokenizer.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.swe_agent import (
    CHECKPOINT_WRAPPER,
    MAX_OBSERVATION_LENGTH,
    PLACEHOLDER,
    JetBrainsHybrid,
    JetBrainsHybridConfig,
    JetBrainsSummary,
    JetBrainsSummaryConfig,
    SweAgentMasking,
    SweAgentMaskingConfig,
)
from sim.core.conversation import Conversation, Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import View, edit_parts
from sim.replay.engine import RunConfig, run
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    conv,
    log_messages,
    revert,
    run_capture,
    state_of,
    sys,
    text_of,
    user,
)
from tests.builders import tool as tool_msg

C4 = RunConfig(model=ModelConfig(provider="openai"), tokenizer="chars4")
PROBLEM = "Fix the failing test in tests/test_app.py."


def output(i: int, lines: int = 12) -> str:
    return "\n".join(f"step {i} line {k}: " + "x" * 30 for k in range(lines))


def swe_run(turns: int, *, lines: int = 12, names: tuple[str, ...] = ("bash",), final: bool = True) -> Conversation:
    """An SWE-agent history: system, the problem statement, ``turns`` turns (reasoning with one tool call and
    its observation), a closing reply."""
    d: list[Draft] = [sys("You are an autonomous programmer."), user(PROBLEM, id="problem")]
    for i in range(turns):
        name = names[i % len(names)]
        d.append(asst(f"Thought {i}: run something.", [call(f"c{i}", name, json.dumps({"cmd": i}))], id=f"a{i}"))
        d.append(tool_msg(f"c{i}", output(i, lines), name=name, id=f"o{i}"))
    if final:
        d.append(asst("Submitting the fix.", id="submit"))
    return conv(*d)


def outputs(state: RunState, view: View) -> dict[str, str]:
    """Each tool output the view shows, by message id, as the view's edits leave it."""
    out = {}
    for i, m in enumerate(state.messages):
        if m.role == "tool" and view.shows(i):
            out[m.id] = next(p.text for p in edit_parts(m, view.rules_at(i)) if p is not None)
    return out


def masked(state: RunState, policy: Any) -> dict[str, bool]:
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    return {k: is_elided(v) for k, v in outputs(state, view).items()}


def is_elided(text: str) -> bool:
    """SWE-agent's placeholder, with whatever line count it was filled in with."""
    return re.fullmatch(re.escape(PLACEHOLDER).replace(re.escape("{lines}"), r"\d+"), text) is not None


# -- LastNObservations --------------------------------------------------------------------------------------
def test_masking_defaults() -> None:
    """``n`` 5 ("used in the original paper to elide but the last 5 observations"), ``polling`` 1, no tagged
    tools, ``max_observation_length`` 100,000; ``n`` must be positive (``validate_n``)."""
    cfg = SweAgentMaskingConfig()
    assert (cfg.n, cfg.polling, cfg.keep_output_tools, cfg.max_observation_length) == (5, 1, (), 100_000)
    with pytest.raises(InvalidConfig, match="must be positive"):
        SweAgentMaskingConfig(n=0)
    assert PLACEHOLDER.startswith("Old environment output: (") and PLACEHOLDER.endswith(" lines omitted)")


def test_all_but_the_newest_5_observations_are_elided() -> None:
    """``_get_omit_indices``: observations are the instance template (the problem statement, index 0, never
    elided) and the outputs; ``observations[1 : len - n]`` read the placeholder. Actions stay as they were."""
    pol = SweAgentMasking()
    st_ = state_of(pol, swe_run(8))
    assert masked(st_, pol) == {f"o{i}": i < 3 for i in range(8)}
    plan = pol.decide(st_, "auto")
    assert plan is not None
    view = plan.view_from(st_.view)
    assert [p.args for p in edit_parts(st_.messages[2], view.rules_at(2)) if p and p.kind == "tool_call"] == [
        json.dumps({"cmd": 0})
    ]
    assert view.shows(1) and st_.messages[1].text == PROBLEM
    assert SweAgentMasking().decide(state_of(pol, swe_run(5)), "auto") is None  # 6 observations: none elided


@pytest.mark.parametrize(("outputs_", "kept"), [(5, 5), (6, 6), (7, 7), (8, 5), (9, 6), (10, 7), (11, 5), (12, 6)])
def test_polling_moves_the_window_in_steps(outputs_: int, kept: int) -> None:
    """``polling`` 3: ``last_removed = floor(len / 3) * 3 - n``, so between 5 and 7 outputs stay."""
    pol = SweAgentMasking(SweAgentMaskingConfig(polling=3))
    flags = masked(state_of(pol, swe_run(outputs_)), pol)
    assert list(flags.values()) == [True] * (outputs_ - kept) + [False] * kept


def test_tagged_tools_keep_their_output_and_still_count() -> None:
    """``TagToolCallObservations`` tags a tool's observations ``keep_output``: never elided, still counted."""
    pol = SweAgentMasking(SweAgentMaskingConfig(n=2, keep_output_tools=("view",)))
    flags = masked(state_of(pol, swe_run(6, names=("bash", "view"))), pol)
    assert flags == {"o0": True, "o1": False, "o2": True, "o3": False, "o4": False, "o5": False}
    assert make_policy("swe-agent-masking", {"keep_output_tools": "view,find"}).config.keep_output_tools == (
        "view",
        "find",
    )


def test_observations_over_100000_characters_are_clipped_head_only() -> None:
    """``next_step_truncated_observation_template``: the first ``max_observation_length`` characters, then
    "<response clipped>" and a note with the number of characters elided."""
    pol = SweAgentMasking()
    long = Part("tool_result", "a" * 60_000 + "b" * 40_001, call_id="c", name="bash")
    clipped = pol.bound_tool_result(long).text
    assert clipped.startswith("a" * 60_000 + "b" * 40_000 + "<response clipped><NOTE>")
    assert "should not exceeded 100000 characters. 1 characters were elided." in clipped
    exact = Part("tool_result", "a" * MAX_OBSERVATION_LENGTH, call_id="c", name="bash")
    assert pol.bound_tool_result(exact) is exact


def test_in_a_run_every_query_shows_the_newest_5_outputs() -> None:
    """History processors run before every query over the whole history; an elided output says how many
    lines it had, as SWE-agent's placeholder does."""
    conversation = swe_run(12)
    lines = {
        p.call_id: len(p.text.splitlines()) for m in conversation.messages for p in m.parts if p.kind == "tool_result"
    }
    res, captured, _ = run_capture(SweAgentMasking(), conversation, C4)
    assert res.violations == [] and len(res.compactions) == 7
    for cap in captured:
        results = [(m.get("tool_call_id"), text_of(m["content"])) for m in cap.rendered if m["role"] == "tool"]
        kept = min(5, len(results))
        elided = [c == PLACEHOLDER.replace("{lines}", str(lines.get(cid, -1))) for cid, c in results]
        assert elided == [True] * (len(results) - kept) + [False] * kept


def test_nothing_of_a_pending_turn_is_elided() -> None:
    """The harness's contract (SWE-agent has no pending turns): the edit stops at the pending turn."""
    c = swe_run(8)
    msgs = [Draft(m.role, m.parts, id=m.id, pending=m.id == "a2") for m in c.messages]
    pol = SweAgentMasking(SweAgentMaskingConfig(n=1))
    st_ = state_of(pol, conv(*msgs))
    assert st_.protected_from == 1  # no user message after the problem: the whole run is the pending turn
    assert pol.decide(st_, "auto") is None


@settings(max_examples=50, deadline=None)
@given(turns=st.integers(0, 30), n=st.integers(1, 8), polling=st.integers(1, 4))
def test_property_the_newest_outputs_stay_and_the_rest_read_the_placeholder(turns: int, n: int, polling: int) -> None:
    """Whatever ``n`` and ``polling``: a prefix of the outputs is elided, and the rest, at least ``n`` and
    fewer than ``n + polling`` once any is elided, stay verbatim."""
    pol = SweAgentMasking(SweAgentMaskingConfig(n=n, polling=polling))
    flags = list(masked(state_of(pol, swe_run(turns)), pol).values())
    elided = sum(flags)
    assert flags == [True] * elided + [False] * (turns - elided)
    expected = max(0, ((turns + 1) // polling) * polling - n - 1)
    assert elided == expected
    if elided:
        assert n <= turns - elided < n + polling


# -- SummarizeEveryNTurns (the study's LLM-Summary) ---------------------------------------------------------
def test_summary_and_hybrid_defaults() -> None:
    """``..._openhands_N=21_M=10.yaml``: n 21, keep_last_m_turns 10; ``..._N=43_M=10_masking_M=10.yaml``:
    n 43, keep 10, then ``last_n_observations`` n 10."""
    s, h = JetBrainsSummaryConfig(), JetBrainsHybridConfig()
    assert (s.n, s.keep_last_m_turns, s.mask_n) == (21, 10, None)
    assert (h.n, h.keep_last_m_turns, h.mask_n) == (43, 10, 10)
    assert JetBrainsHybrid.Config is JetBrainsHybridConfig and JetBrainsSummary.Config is JetBrainsSummaryConfig
    with pytest.raises(InvalidConfig, match="keep_last_m_turns"):
        JetBrainsSummaryConfig(keep_last_m_turns=-1)


def test_summarises_the_oldest_21_turns_once_31_are_unsummarised() -> None:
    """``len(unprocessed_turns) < n + keep_last_m_turns``: nothing; at 31, the oldest 21 turns become one
    assistant message "Checkpoint for the last 21 turns:", after the system prompt and the problem statement,
    and the newest 10 turns stay verbatim."""
    pol = JetBrainsSummary()
    assert pol.decide(state_of(pol, swe_run(30, final=False)), "auto") is None
    st_ = state_of(pol, swe_run(31, final=False))
    plan = pol.decide(st_, "auto")
    assert plan is not None and plan.summarize
    assert st_.messages[plan.start].id == "a21" and plan.pinned == (1,)
    assert (plan.summary_request.role, plan.summary_request.wrapper) == (
        "assistant",
        "Checkpoint for the last 21 turns:\n{summary}",
    )
    assert CHECKPOINT_WRAPPER.format(turns=21) == plan.summary_request.wrapper


def test_in_a_run_checkpoints_accumulate_and_the_context_oscillates() -> None:
    """n = 3, m = 2 for a short run: a checkpoint at every 3 turns past 5; the view is system, problem, every
    checkpoint so far (the study's cache resends them), then between 2 and 4 turns."""
    pol = JetBrainsSummary(JetBrainsSummaryConfig(n=3, keep_last_m_turns=2))
    res, captured, _ = run_capture(pol, swe_run(14), C4)
    assert res.violations == [] and len(res.compactions) == 4
    for cap in captured:
        view = cap.view
        turns = sum(1 for m in cap.rendered if m.get("tool_calls"))
        if view.summary is not None:
            assert 2 <= turns <= 4
            roles = [m["role"] for m in cap.rendered[:3]]
            assert roles == ["system", "user", "assistant"] and text_of(cap.rendered[1]["content"]) == PROBLEM
            checkpoints = [
                m for m in cap.rendered if m["role"] == "assistant" and text_of(m["content"]).startswith("Checkpoint")
            ]
            assert len(checkpoints) == 1 + len(view.injected)
            assert all(text_of(m["content"]).startswith("Checkpoint for the last 3 turns:\n") for m in checkpoints)
    assert len(captured[-1].view.injected) == 3


def test_a_later_user_message_is_never_summarised_away() -> None:
    """The study's histories have one user message; here a later one holds the cut back (the live turn)."""
    c = swe_run(12, final=False)
    msgs = list(c.messages)
    late = [*msgs[:14], user("Also keep the old API.", id="late"), *msgs[14:]]
    pol = JetBrainsSummary(JetBrainsSummaryConfig(n=8, keep_last_m_turns=2))
    st_ = state_of(pol, conv(*late))
    plan = pol.decide(st_, "auto")
    assert plan is not None and st_.messages[plan.start].id == "late"
    assert plan.summary_request.wrapper.startswith("Checkpoint for the last 6 turns:")


def test_deviation_revert_resolution() -> None:
    """The study's processor knows no reverts: a revert kept in view can lose its change to a checkpoint."""
    d: list[Draft] = [sys("s"), user(PROBLEM, id="problem")]
    d.append(asst("Edit it.", [call("c0", "edit", "{}")], parts=[change("ch1", "edit a.py")], id="a0"))
    d.append(tool_msg("c0", "edited", name="edit", id="o0"))
    for i in range(1, 8):
        d.append(asst(f"t{i}", [call(f"c{i}", "bash", "{}")], id=f"a{i}"))
        d.append(tool_msg(f"c{i}", output(i), name="bash", id=f"o{i}"))
    d.append(asst("Undo it.", [call("c8", "edit", "{}")], parts=[revert("ch1", "undo")], id="a8"))
    d.append(tool_msg("c8", "reverted", name="edit", id="o8"))
    d.append(asst("done"))
    pol = JetBrainsSummary(JetBrainsSummaryConfig(n=3, keep_last_m_turns=2))
    res = run(pol, conv(*d), C4)
    assert "revert-resolution" in {v.invariant for v in res.violations}
    assert "revert-resolution" in JetBrainsSummary.known_deviations


def released_backlog(live_steps: int = 160, after: int = 4) -> Conversation:
    """The problem, two turns, a user message opening a live turn of ``live_steps`` steps (it holds the summary
    back at its user message), then a user message that releases the backlog and ``after`` more turns; one-line
    outputs, so the whole fits a small window. The study's checkpoints then catch up ``n`` turns a query."""
    msgs = list(swe_run(2 + live_steps, lines=1, final=False).messages)
    d = [*msgs[:6], user("Now the second part.", id="live"), *msgs[6:], user("Carry on.", id="next")]
    for i in range(2 + live_steps, 2 + live_steps + after):
        d.append(asst(f"Thought {i}.", [call(f"c{i}", "bash", "{}")], id=f"a{i}"))
        d.append(tool_msg(f"c{i}", output(i, 1), name="bash", id=f"o{i}"))
    return conv(*d)


def test_deviation_compaction_loop_a_released_backlog_is_summarised_n_turns_a_query() -> None:
    """A live turn of many steps holds the summary back at its user message; the next user message releases the
    backlog, and the oldest n turns are summarised on each of the following queries, each checkpoint leaving the
    turns not yet summarised over n + m, until the backlog is gone: consecutive compactions the policy declares."""
    pol = JetBrainsSummary(JetBrainsSummaryConfig(n=3, keep_last_m_turns=2))
    res = run(pol, released_backlog(28, after=3), C4)
    after = [int(x["turn"]) for x in res.compactions if int(x["turn"]) >= 30]
    assert len(after) >= 3 and after == list(range(after[0], after[0] + len(after)))  # one query after another
    loops = [v for v in res.violations if v.invariant == "compaction-loop"]
    assert loops and "compaction-loop" in JetBrainsSummary.known_deviations
    assert {v.invariant for v in res.violations} <= JetBrainsSummary.known_deviations


# -- the hybrid ---------------------------------------------------------------------------------------------
def test_hybrid_masks_between_summaries_and_summarises_43_turns() -> None:
    """Between summaries ``last_n_observations`` (n 10) elides all but the newest 10 outputs of the view
    (the problem statement is its first observation); at 53 unsummarised turns the oldest 43 become a
    checkpoint, and the 10 kept turns' outputs are all visible (11 observations: none elided)."""
    pol = JetBrainsHybrid()
    st_ = state_of(pol, swe_run(30, final=False))
    flags = masked(st_, pol)
    assert list(flags.values()) == [True] * 20 + [False] * 10
    st_ = state_of(pol, swe_run(53, final=False))
    plan = pol.decide(st_, "auto")
    assert plan is not None and plan.summarize and st_.messages[plan.start].id == "a43"
    assert plan.summary_request.wrapper.startswith("Checkpoint for the last 43 turns:") and plan.edits == ()


def test_hybrid_run_with_small_settings() -> None:
    """n = 4, m = 2, masking n = 2: every query shows at most 2 unmasked outputs, and checkpoints come every 4
    turns past 6."""
    pol = JetBrainsHybrid(JetBrainsHybridConfig(n=4, keep_last_m_turns=2, mask_n=2))
    res, captured, _ = run_capture(pol, swe_run(16), C4)
    assert res.violations == [] and sum(1 for c in res.compactions if c["mode"] == "summarize") == 3
    for cap in captured:
        contents = [text_of(m["content"]) for m in cap.rendered if m["role"] == "tool"]
        assert sum(not is_elided(c) for c in contents) <= 2
    assert [m.id for m in log_messages(res)][-1] == "submit"


@settings(max_examples=30, deadline=None)
@given(turns=st.integers(0, 40), n=st.integers(1, 6), m=st.integers(0, 5))
def test_property_a_summary_takes_exactly_the_oldest_n_turns(turns: int, n: int, m: int) -> None:
    """On a fresh history, a checkpoint is made exactly when there are ``n + m`` turns or more, and it takes
    the oldest ``n`` (the kept part starts at turn ``n``)."""
    pol = JetBrainsSummary(JetBrainsSummaryConfig(n=n, keep_last_m_turns=m))
    st_ = state_of(pol, swe_run(turns, final=False))
    plan = pol.decide(st_, "auto")
    if turns < n + m:
        assert plan is None
    elif turns == n:  # keep_last_m_turns 0: every turn is summarised
        assert plan is not None and plan.start == len(st_)
    else:
        assert plan is not None and st_.messages[plan.start].id == f"a{n}"


def test_an_output_elided_before_its_turn_became_pending_stays_elided() -> None:
    """Found by the stateful test: outputs elided at one request, then a pending reply makes their turn
    protected; the next edit must not lower its bound (that would show them again inside the protected turn)."""
    from sim.core.conversation import Message
    from sim.replay.strategies import small_model

    def results(*ids: str) -> list[Message]:
        return [Message(f"t{i}", "tool", (Part("tool_result", "r", call_id=i, name="read"),)) for i in ids]

    msgs = [
        Message("m0", "system", (Part("text", "s"),)),
        Message("m1", "user", (Part("text", "t"),)),
        Message("m2", "assistant", (Part("tool_call", call_id="c1", name="read", args="{}"),)),
        Message("m3", "tool", (Part("tool_result", "r " * 42 + "r", call_id="c1", name="read"),)),
        Message("m4", "user", (Part("text", "next"),)),
        Message("m5", "assistant", tuple(Part("tool_call", call_id=c, name="read", args="{}") for c in ("c2", "c3"))),
        *results("c2", "c3"),
        Message("m8", "assistant", tuple(Part("tool_call", call_id=c, name="read", args="{}") for c in ("c4", "c5"))),
        Message("m9", "tool", tuple(Part("tool_result", "r", call_id=c, name="read") for c in ("c4", "c5"))),
        Message("m10", "assistant", (Part("text", "a" * 10),), pending=True),
        Message("m11", "assistant", (Part("tool_call", call_id="c6", name="read", args="{}"),)),
        *results("c6"),
        Message("m13", "assistant", (Part("text", "done"),)),
    ]
    res = run(
        SweAgentMasking(SweAgentMaskingConfig(n=3)),
        Conversation("p", tuple(msgs)),
        RunConfig(model=small_model(8_000), tokenizer="chars4", deep_checks=True),
    )
    assert res.compactions and not res.violations


def test_the_results_the_next_reply_answers_are_never_elided() -> None:
    """A parallel batch whose results come in more tool messages than ``n`` (as Claude Code recordings have them):
    LastNObservations would elide the oldest of them, but the next reply answers all of them, so the edit stops at
    the batch (the ``live-turn`` invariant; SWE-agent itself makes one call a step). The older outputs are elided."""
    d: list[Draft] = [sys("You are an autonomous programmer."), user(PROBLEM, id="problem")]
    for i in range(3):
        d += [asst(f"Thought {i}.", [call(f"c{i}", "bash")], id=f"a{i}"), tool_msg(f"c{i}", output(i), id=f"o{i}")]
    d.append(asst("Three at once.", [call(f"p{k}", "bash") for k in range(3)], id="batch"))
    d += [tool_msg(f"p{k}", output(10 + k), name="bash", id=f"r{k}") for k in range(3)]
    d.append(asst("Done.", id="done"))
    pol = SweAgentMasking(SweAgentMaskingConfig(n=2))
    st_ = state_of(pol, conv(*d[:-1]))
    assert masked(st_, pol) == {"o0": True, "o1": True, "o2": True, "r0": False, "r1": False, "r2": False}
    res, _, _ = run_capture(pol, conv(*d), C4)
    assert res.violations == [] and len(res.compactions) > 0
