"""``csim check`` says what the policy did, fails one that never acts, says when a plan lets pins go, and runs each
bundled scenario once (issue 33, item 2)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from policies.base import Plan, Policy, Trigger
from policies.helpers import first_user_index, plan_shrinks, safe_cut
from sim.cli.main import main
from sim.core.invariants import NAMES as INVARIANTS
from sim.core.state import RunState
from sim.replay.checker import check_policy


@dataclass(frozen=True)
class RatioConfig:
    trigger_ratio: float = 0.5


class NeverActs(Policy[RatioConfig]):
    """Means to compact past half the budget, but its plan never shrinks anything: it answers None every time."""

    Config = RatioConfig

    def over_trigger(self, state: RunState) -> bool:
        return state.estimated_context_tokens() >= self.config.trigger_ratio * state.model.input_budget

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        return None


class ForgetsItsPin(Policy[RatioConfig]):
    """Drops all but the newest messages past half the budget, pinning the first user message the first time only:
    the next plan does not restate the pin, so it leaves the view."""

    Config = RatioConfig

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if (
            trigger == "auto"
            and state.estimated_context_tokens() < self.config.trigger_ratio * state.model.input_budget
        ):
            return None
        cut = safe_cut(state, len(state) - 2)
        first = first_user_index(state)
        if cut is None:
            return None
        pinned = (first,) if first is not None and first < cut and not state.view.spans else ()
        plan = Plan(start=cut, pinned=pinned, mode="drop")
        return plan if plan_shrinks(state, plan) else None


def _ref(cls: type[Policy[RatioConfig]]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def test_a_policy_that_never_acts_fails_saying_so() -> None:
    report = check_policy(_ref(NeverActs), {}, examples=30, tokenizer="chars4")
    assert not report.passed and report.counterexample is None
    assert report.activity is not None and report.activity.any_acted == 0 and report.activity.triggered > 0
    text = report.render()
    assert text.startswith(f"FAIL {_ref(NeverActs)}: never compacted in any example, though the context passed its")
    assert "acted in 0 of 30 examples" in text


def test_a_policy_that_never_compacts_by_design_passes() -> None:
    report = check_policy("none", {}, examples=20, tokenizer="chars4")
    assert report.passed, report.render()
    assert report.activity is not None and report.activity.never_compacts and report.activity.triggered > 0


def test_what_the_policy_did_is_counted() -> None:
    report = check_policy("sliding-window", {}, examples=40, tokenizer="chars4")
    act = report.activity
    assert report.passed and act is not None
    assert 0 < act.any_acted <= 40 and act.acted["dropped"] > 0 and act.acted["summarised"] == 0
    assert act.acted_when_triggered <= act.triggered
    assert f"acted in {act.any_acted} of 40 examples (dropped {act.acted['dropped']}" in report.render()


def test_a_plan_that_lets_a_pin_go_is_said_out_loud() -> None:
    # ForgetsItsPin breaks invariants too (it drops reverted changes, pins inside a unit): all tolerated, so the
    # check runs its examples and says what they did instead of shrinking a violation
    report = check_policy(_ref(ForgetsItsPin), {}, examples=40, tokenizer="chars4", allow=INVARIANTS)
    assert report.activity is not None and report.activity.pins_dropped > 0
    assert "let messages an earlier plan pinned leave the view" in report.render()
    assert "pinned=state.view.pinned" in report.render()


def test_each_bundled_scenario_is_run_once() -> None:
    report = check_policy("sliding-window", {}, examples=5, tokenizer="chars4", scenarios=True)
    names = [r.scenario for r in report.scenarios]
    assert names == ["coding-agent", "research-agent", "support-chat"]
    research = report.scenarios[1]
    assert research.acts and all(kind == "dropped" for kind, _ in research.acts)
    assert f"scenario research-agent (default length, {research.requests} agent requests" in report.render()


def test_progress_counts_the_examples() -> None:
    seen: list[int] = []
    check_policy("sliding-window", {}, examples=10, tokenizer="chars4", progress=seen.append)
    assert seen[:3] == [1, 2, 3] and seen[-1] >= 10


def test_csim_check_prints_activity_and_progress(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--policy", "sliding-window", "--examples", "10", "--no-scenarios", "--progress"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "acted in" in out and "scenario" not in out
    assert "check: 10 of 10 examples replayed" in err
