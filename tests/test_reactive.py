"""The closed-loop agent (``--agent reactive``, sim.core.agent, sim.replay.reactive): what it does when the
view lost a fact, the properties issue 17 asks for, and how stopped runs count in retention and success."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.replay.reactive as reactive
from policies import make_policy
from policies.base import Plan, Policy, Trigger
from policies.baselines import NoCompaction
from policies.swe_agent import SweAgentMasking, SweAgentMaskingConfig
from sim.core.agent import AgentConfig
from sim.core.errors import InvalidConfig
from sim.core.log import MessageAppended
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay.engine import RunConfig, run
from sim.replay.strategies import conversations, small_model
from tests.builders import asst, conv, fact, tool, user
from tests.builders import sys as system

REACTIVE = AgentConfig(agent="reactive")


def config(**agent: Any) -> RunConfig:
    return RunConfig(tokenizer="chars4", agent=AgentConfig(agent="reactive", **agent))


def reading_chat(size: int = 400) -> Any:
    """A file read early, three more reads (``size`` characters each), then the user asks about the first."""
    return conv(
        system("s"),
        user("task", id="u1"),
        asst(calls=["c1"], id="a1"),
        tool("c1", "header ALPHA-42 " + "x" * 400, name="read", id="t1"),
        asst(calls=["c2"], id="a2"),
        tool("c2", "y" * size, name="read", id="t2"),
        asst(calls=["c3"], id="a3"),
        tool("c3", "z" * size, name="read", id="t3"),
        asst("read them", id="a4"),
        user("which header had the first file?", id="u2"),
        asst("ALPHA-42", id="a5"),
        facts=[fact("f1", "artifact", "ALPHA-42", "t1", ["u2"])],
    )


def masking(n: int = 1) -> SweAgentMasking:
    return SweAgentMasking(SweAgentMaskingConfig(n=n))


def appended(result: Any) -> list[Any]:
    return [e for e in result.log if isinstance(e, MessageAppended)]


def test_a_lost_tool_result_is_read_again_before_the_step_that_needs_it() -> None:
    """Masking all but the newest observation hides the first read when the user asks about it: the reactive
    agent calls the same tool again (one extra request answered by the call), gets a result of the original's
    size, and the fact is visible at the scripted request; the scripted agent just loses it."""
    scripted = run(masking(), reading_chat(), RunConfig(tokenizer="chars4"))
    assert scripted.summary["retention_recall"] == 0.0 and scripted.summary["reacquisitions"] == 0
    res = run(masking(), reading_chat(), config())
    s = res.summary
    assert (s["reacquisitions"], s["extra_requests"], s["retention_recall"]) == (1, 1, 1.0)
    assert s["agent_requests"] == scripted.summary["agent_requests"] + 1
    assert s["extra_cost_usd"] > 0 and s["total_cost_usd"] > scripted.summary["total_cost_usd"]
    synthetic = [e.message for e in appended(res) if e.synthetic]
    call, result = synthetic
    assert call.role == "assistant" and [p.name for p in call.calls] == ["read"]
    assert result.role == "tool" and result.parts[0].call_id == call.calls[0].call_id
    assert result.parts[0].text == reading_chat().messages[3].parts[0].text  # the original's size and words
    # after the question that needs it, before the scripted answer
    assert [e.message.id for e in appended(res)][-4:] == ["u2", "a5~re1", "a5~re1-result", "a5"]
    assert s["task_success"] == 1.0 and s["violation_count"] == 0


def test_a_visible_fact_is_never_acted_on() -> None:
    """Under a policy that keeps everything the reactive run is the scripted run, request for request."""
    a = run(NoCompaction(), reading_chat(), RunConfig(tokenizer="chars4"))
    b = run(NoCompaction(), reading_chat(), config())
    assert b.summary["extra_requests"] == 0 and b.rows == a.rows


class ForgetsDecisions(Policy):
    """Test policy: from the second user message on, the view starts at the newest user message."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        lu = state.last_user_index
        if trigger != "auto" or lu <= 1 or lu <= state.view.start or not state.can_cut(lu):
            return None
        return Plan(start=lu, cleared_through=state.view.cleared_through, mode="drop")


def deciding_chat() -> Any:
    return conv(
        system("s"),
        user("task", id="u1"),
        asst(calls=["c1"], id="a1"),
        tool("c1", "tests fail " + "x" * 300, name="bash", id="t1"),
        asst("We decided: pin numpy BETA-7 because the tests fail", id="d1"),
        user("go on", id="u2"),
        asst("done", id="a2"),
        facts=[fact("f1", "decision", "BETA-7", "d1", ["u2"])],
    )


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        # recalled wrongly, never repaired: one unrepaired error in the second task ("go on"), which fails at
        # the default limit of 1: half the tasks done
        ({"wrong_recall": 1.0, "repair_rate": 0.0}, (1, 0, 1, 0, 0.5)),
        ({"wrong_recall": 1.0, "repair_rate": 0.0, "max_unrepaired_errors": 2}, (1, 0, 1, 0, 1.0)),
        # recalled wrongly and repaired: the exchange and the decision redone twice (2 requests each)
        ({"wrong_recall": 1.0, "repair_rate": 1.0, "repair_steps": 2}, (1, 1, 0, 0, 1.0)),
        # not recalled wrongly: its work is repeated once (the failed approach tried again)
        ({"wrong_recall": 0.0}, (0, 0, 0, 1, 1.0)),
    ],
)
def test_a_lost_decision_is_recalled_wrongly_or_its_work_repeated(knobs: dict[str, Any], expected: tuple) -> None:
    """A decision is not in any tool's output: it is recalled wrongly (an error, repaired by redoing its work
    or left standing) or its work is repeated; unrepaired errors at the limit fail the task they happen in."""
    res = run(ForgetsDecisions(), deciding_chat(), config(**knobs))
    s = res.summary
    assert (
        s["errors"],
        s["errors_repaired"],
        s["errors_unrepaired"],
        s["repeated_work"],
        s["task_success"],
    ) == expected
    redone = s["errors_repaired"] * knobs.get("repair_steps", 2) + s["repeated_work"]
    assert s["extra_requests"] == 2 * redone  # the tool exchange again, then the decision again
    if redone:
        texts = [e.message.text for e in appended(res) if e.synthetic and e.message.role == "assistant"]
        assert "We decided: pin numpy BETA-7 because the tests fail" in texts
        assert s["retention_recall"] == 1.0  # the restated decision carries the fact
    assert s["reacquisitions"] == 0 and s["violation_count"] == 0


def test_context_rot_makes_a_long_view_forget_what_it_shows() -> None:
    """With ``rot_length`` 1 at a full window a visible fact is used with probability 1 - share of the window;
    on a window the conversation nearly fills, a long view loses facts it shows, and re-reads them."""
    model = ModelConfig(context_window=1_400, output_reserve=100)
    full = run(NoCompaction(), reading_chat(), RunConfig(tokenizer="chars4", model=model, agent=REACTIVE))
    assert full.summary["facts_unused"] == 0
    rotted = [
        run(
            NoCompaction(),
            reading_chat(),
            RunConfig(tokenizer="chars4", model=model, seed=seed, agent=AgentConfig(agent="reactive", rot_length=1.0)),
        )
        for seed in range(12)
    ]
    unused = [r.summary["facts_unused"] for r in rotted]
    assert 0 < sum(unused) < len(unused)  # sometimes, as drawn, not always
    assert all(r.summary["reacquisitions"] == r.summary["facts_unused"] for r in rotted)


def test_agent_options_are_checked() -> None:
    with pytest.raises(InvalidConfig, match="wrong_recall"):
        AgentConfig(wrong_recall=1.5)
    with pytest.raises(InvalidConfig, match="'scripted' or 'reactive'"):
        AgentConfig(agent="clever")  # type: ignore[arg-type]


# -- stopped runs did not do their task ---------------------------------------------------------------------
def test_an_overflowed_run_counts_the_needs_it_never_reached_as_lost() -> None:
    """``none`` on a window the chat overflows stops before the user's question: the need it never reached
    counts against retention, and neither the task in progress nor the question after it was done."""
    model = ModelConfig(context_window=1_000, output_reserve=100)
    res = run(NoCompaction(), reading_chat(size=4_000), RunConfig(tokenizer="chars4", model=model))
    s = res.summary
    assert s["finish_reason"] == "context-overflow"
    assert (s["facts_needed"], s["facts_visible"], s["facts_unreached"]) == (1, 0, 1)
    assert s["retention_recall"] == 0.0 and s["task_success"] == 0.0
    done = run(NoCompaction(), reading_chat(), RunConfig(tokenizer="chars4")).summary
    assert (done["facts_unreached"], done["retention_recall"], done["task_success"]) == (0, 1.0, 1.0)


# -- properties --------------------------------------------------------------------------------------------
# Settings that lose facts on the small generated conversations, so the agent has something to act on.
PROPERTY_POLICIES = {
    "swe-agent-masking": {"n": 1},
    "cloudflare-os": {},
    "jetbrains-summary": {"n": 3, "keep_last_m_turns": 2},
    "anthropic-clear-tool-uses": {"trigger_tokens": 2_000, "keep": 1},
}
ACTED: list[int] = []  # re-acquisitions, repeats and errors per generated run, for the check after the property


@settings(max_examples=40, deadline=None)
@given(
    c=conversations(window=8_000),
    name=st.sampled_from(sorted(PROPERTY_POLICIES)),
    seed=st.integers(0, 3),
    wrong=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_reactive_runs_keep_every_invariant(c: Any, name: str, seed: int, wrong: float) -> None:
    """On generated conversations: a re-acquisition never happens for a visible fact (checked as it happens),
    every re-acquired result pairs with its call (the provider's rules, checked on every request), and the
    reactive run breaks no invariant the scripted one keeps."""
    checked: list[bool] = []
    original = reactive._reacquire

    def watched(engine: Any, f: Any, *rest: Any) -> None:
        checked.append(engine.fact_visible(f, engine.state.view))
        original(engine, f, *rest)

    reactive._reacquire = watched  # type: ignore[assignment]
    try:
        cfg = RunConfig(
            tokenizer="chars4",
            model=small_model(8_000),
            seed=seed,
            deep_checks=True,
            agent=AgentConfig(agent="reactive", wrong_recall=wrong),
        )
        res = run(make_policy(name, PROPERTY_POLICIES[name]), c, cfg)
    finally:
        reactive._reacquire = original  # type: ignore[assignment]
    assert not any(checked)
    assert res.summary["reacquisitions"] == len(checked)
    assert all(e.message.role != "user" for e in appended(res) if e.synthetic)  # the agent never speaks as the user
    ACTED.append(res.summary["extra_requests"] + res.summary["errors"])
    scripted = run(
        make_policy(name, PROPERTY_POLICIES[name]),
        c,
        RunConfig(tokenizer="chars4", model=small_model(8_000), seed=seed),
    )
    tolerated = make_policy(name, {}).known_deviations
    kinds = {v.invariant for v in res.violations} - tolerated
    assert kinds <= {v.invariant for v in scripted.violations}, kinds
    assert "tool-pairing" not in kinds


def test_the_property_saw_the_agent_act() -> None:
    """Runs after the property (file order): generated runs in which the agent never acted would prove little."""
    if not ACTED:
        test_reactive_runs_keep_every_invariant()
    assert sum(1 for n in ACTED if n) >= 3, ACTED


@settings(max_examples=25, deadline=None)
@given(c=conversations(window=8_000, max_turns=20), seed=st.integers(0, 3))
def test_none_under_a_large_window_never_acts(c: Any, seed: int) -> None:
    """``none`` with room for everything loses nothing, so the reactive agent never adds a request."""
    res = run(
        NoCompaction(),
        c,
        RunConfig(tokenizer="chars4", model=ModelConfig(context_window=10_000_000), seed=seed, agent=REACTIVE),
    )
    s = res.summary
    assert (s["reacquisitions"], s["repeated_work"], s["errors"], s["extra_requests"]) == (0, 0, 0, 0)


def test_a_reactive_run_gives_the_same_bytes_in_another_process() -> None:
    """Same inputs and seed, same bytes: the draws hash the seed, fact and request, with no random state."""
    code = (
        "from sim import api; import io; "
        "r = api.run('swe-agent-masking', {'n': 2}, scenario='coding-agent', seeds='0-1', agent='reactive'); "
        "b = io.BytesIO(); r.requests.to_parquet(b, index=False); r.runs.to_parquet(b, index=False); "
        "import hashlib, sys; sys.stdout.write(hashlib.sha256(b.getvalue()).hexdigest())"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(outs) == 1 and len(next(iter(outs))) == 64


# -- found in review ---------------------------------------------------------------------------------------
def test_the_policy_is_asked_again_after_the_agent_acted() -> None:
    """The re-read result is a new observation: masking all but the newest one hides the one before it again
    before the scripted request goes out, as the policy would before any request."""
    from sim.replay.engine import Engine

    eng = Engine(masking(), reading_chat(), config())
    eng.run()
    t3 = eng.ledger.index["t3"]
    assert eng.reactions.reacquisitions == 1
    assert eng.state.view.rules_at(t3), "t3 was left unmasked after the re-read"


def test_the_agent_never_speaks_as_the_user() -> None:
    """A lost user constraint is restated by the agent, in a reply: a synthetic user message would pass for the
    user's current request (policies and the live-turn check key on the last user message)."""
    c = conv(
        system("s"),
        user("task one", id="u1"),
        asst(calls=["c1"], id="a1"),
        tool("c1", "grep output " + "g" * 200, id="t1"),
        asst("found it", id="a2"),
        user("use CONFIG-9 from now on", id="u2"),
        asst("noted", id="a3"),
        user("now fix the parser", id="u3"),
        asst("fixed", id="a4"),
        facts=[fact("f1", "constraint", "CONFIG-9", "u2", ["u3"])],
    )
    res = run(ForgetsDecisions(), c, config(wrong_recall=0.0))
    added = [e.message for e in appended(res) if e.synthetic]
    assert res.summary["repeated_work"] == 1 and [m.role for m in added] == ["assistant"]
    assert added[0].text == "use CONFIG-9 from now on"  # no tool exchange from the turn before is replayed
    assert res.summary["retention_recall"] == 1.0 and res.summary["violation_count"] == 0


def test_a_failure_tried_again_is_no_new_signal() -> None:
    """Summaries that drop every failure make the agent try each of the script's failing steps again, once per
    drop of the original: a retry a later summary drops is not retried in turn (no feedback loop)."""
    from sim.core.retention import SummariserConfig
    from sim.scenarios import generate

    conv0 = generate("coding-agent", 0, turns=60)
    failures = sum(1 for m in conv0.messages if m.role == "tool" and any(p.is_error for p in m.parts))
    cfg = RunConfig(
        model=ModelConfig(context_window=60_000), agent=REACTIVE, summariser=SummariserConfig(keep_recall=0)
    )
    res = run(make_policy("claude-code", {}), conv0, cfg)
    assert 0 < res.summary["stalls"] <= failures * max(1, res.summary["compaction_count"])
    assert res.summary["finish_reason"] == "completed"


def test_a_budget_spent_on_the_last_reply_leaves_no_task_undone() -> None:
    """Exhausting the turn budget with the script's last reply ends the run 'budget-exhausted', but every reply
    was sent: every task is done."""
    from sim.core.budgets import Budgets

    replies = sum(1 for m in reading_chat().messages if m.role == "assistant")
    res = run(NoCompaction(), reading_chat(), RunConfig(tokenizer="chars4", budgets=Budgets(max_turns=replies)))
    assert res.summary["finish_reason"] == "budget-exhausted" and res.summary["task_success"] == 1.0
