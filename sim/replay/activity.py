"""What a policy did in a run, for ``csim check``: whether it acted (summarised, dropped, cleared, rolled back), whether
the context passed its trigger, whether a plan let pinned messages go, and one run on each bundled scenario.

A check that never sees the policy compact proves nothing about it: issue 33 found a 40-line policy that passed
``csim check`` at once and never compacted on a long scenario or a real session. So the checker counts what the
policy did in its examples and fails a policy whose trigger was passed and that never compacted automatically;
and it says so when a plan lets a pinned message leave the view unnamed (a ``Plan`` keeps only the spans it names).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from policies.base import Plan, Policy, Trigger
from sim.core.log import CompactionCreated
from sim.core.params import make_config
from sim.core.state import RunState
from sim.core.view import View
from sim.replay.engine import Engine, RunConfig
from sim.scenarios import SCENARIOS, scenario_conversation
from sim.scenarios import _load as load_scenarios

#: What a compaction did to the view, in the words of ``csim check``'s report.
ACTS = ("summarised", "dropped", "cleared", "rolled back")


def act_kind(before: View, event: CompactionCreated) -> str:
    """What one compaction did: summarised what left the view, dropped messages without a summary, or only
    cleared or edited parts (tool results, inputs, thinking) of messages it kept; or rolled back."""
    after = event.view
    if event.mode == "rollback":
        return "rolled back"
    if event.summarised != (0, 0) or (after.summary is not None and after.summary != before.summary):
        return "summarised"
    if any(before.shows(i) and not after.shows(i) for i in range(max(before.start, after.start))):
        return "dropped"
    return "cleared"


def acts_of(events: Iterable[object]) -> list[tuple[str, str]]:
    """``(kind, trigger)`` of each compaction of a run's log, in order (:func:`act_kind`)."""
    view, out = View(), []
    for e in events:
        if isinstance(e, CompactionCreated):
            out.append((act_kind(view, e), e.trigger))
            view = e.view
    return out


@dataclass
class Activity:
    """What the policy did over the examples.

    Attributes:
        acted: examples with at least one compaction, by what it did (an example can count under several).
        any_acted: examples with at least one compaction of any kind.
        triggered: examples whose context passed the policy's trigger at some request: the policy's own
            ``over_trigger`` said so, or (for a policy that does not say) the context reached the model's input
            budget, or the provider refused a prompt as too long.
        acted_when_triggered: of those, examples with an automatic compaction (trigger ``auto`` or ``overflow``).
        pins_dropped: plans that let a message an earlier plan pinned (a span of the view) leave the view without
            naming it again; examples they happened in, and the first such plan.
        never_compacts: the policy keeps :meth:`Policy.decide` as the base class has it (it never compacts by
            design: ``none``), or it acts only on what generated conversations lack (``Policy.acts_on``), so the
            rule that it must act does not apply.
        acts_on: what the policy needs to see before it acts (``Policy.acts_on``), said in a note when it never did.
    """

    acted: Counter[str] = field(default_factory=Counter)
    any_acted: int = 0
    triggered: int = 0
    acted_when_triggered: int = 0
    pins_dropped: int = 0
    pin_examples: int = 0
    first_pin_drop: str = ""
    never_compacts: bool = False
    acts_on: str = ""

    @property
    def failed(self) -> bool:
        """A policy that means to compact, whose trigger was passed, and that never compacted in any example."""
        return not self.never_compacts and self.triggered > 0 and self.any_acted == 0

    def render(self, examples: int) -> str:
        kinds = ", ".join(f"{k} {self.acted[k]}" for k in ACTS if self.acted[k])
        return (
            f"acted in {self.any_acted} of {examples} examples"
            + (f" ({kinds})" if kinds else "")
            + f"; the context passed the policy's trigger in {self.triggered}, and it compacted automatically in "
            f"{self.acted_when_triggered} of those"
        )

    def never_acted(self, examples: int) -> str:
        return (
            f"never compacted in any example, though the context passed its trigger in {self.triggered} of "
            f"{examples} (over_trigger said so, or the context reached the window): decide returned None, or plans "
            "that did not shrink the view, every time it was asked. Run it on a scenario (csim run --policy ... "
            "--scenario research-agent) and read its plans; a policy that means never to compact keeps "
            "Policy.decide as it is"
        )

    def notes(self) -> list[str]:
        out = []
        if self.acts_on and not self.any_acted:
            out.append(f"the policy acts on {self.acts_on}: it never acted, and is not failed for it")
        if not self.pins_dropped:
            return out
        return [
            *out,
            f"{self.pins_dropped} plans in {self.pin_examples} examples let messages an earlier plan pinned leave the "
            f"view ({self.first_pin_drop}): a Plan keeps only the spans it names; if they were meant to stay, "
            "restate them (pinned=state.view.pinned, or spans=state.view.spans) and leave out only those to release",
        ]


@dataclass
class Watch:
    """One example's record of the policy's answers, filled by :func:`_watch`."""

    triggered: bool = False
    pins_dropped: int = 0
    first_pin_drop: str = ""


def watch(policy: Policy[Any], seen: Watch) -> None:
    """Make ``policy.decide`` note whether the context passed the policy's trigger (its own ``over_trigger``, or
    the context at the input budget, or an overflow) and whether a plan lets pinned messages go unnamed."""
    real = policy.decide
    inside = [False]  # a policy's over_trigger may ask its own decide: answer that one as the policy does

    def decide(state: RunState, trigger: Trigger) -> Plan | None:
        if inside[0]:
            return real(state, trigger)
        inside[0] = True
        try:
            return noted(state, trigger)
        finally:
            inside[0] = False

    def noted(state: RunState, trigger: Trigger) -> Plan | None:
        if not seen.triggered:
            over = policy.over_trigger(state) if trigger == "auto" else None
            seen.triggered = (
                trigger == "overflow"
                or bool(over)
                or (over is None and trigger == "auto" and state.view_size()[0] >= state.model.input_budget)
            )
        plan = real(state, trigger)
        if plan is not None and plan.restore is None:
            kept = set(plan.view_from(state.view).pinned)
            lost = [i for i in state.view.pinned if i < plan.start and i not in kept]
            if lost:
                seen.pins_dropped += 1
                what = {"auto": "an automatic", "manual": "a /compact", "overflow": "an overflow"}[trigger]
                seen.first_pin_drop = seen.first_pin_drop or (
                    f"first at turn {state.turn}: pinned messages {lost[:5]} left out of {what} plan"
                )
        return plan

    policy.decide = decide  # type: ignore[method-assign]


@dataclass(frozen=True)
class ScenarioRun:
    """The policy on one bundled scenario at its default length, in the default 200K-token window."""

    scenario: str
    requests: int
    peak_context: int
    input_budget: int
    acts: tuple[tuple[str, str], ...]
    finish_reason: str

    def render(self) -> str:
        counts = Counter(kind for kind, _ in self.acts)
        auto = sum(trigger in ("auto", "overflow") for _, trigger in self.acts)
        kinds = ", ".join(f"{k} {counts[k]}" for k in ACTS if counts[k])
        return (
            f"{self.scenario} (default length, {self.requests} agent requests, peak {self.peak_context:,} of "
            f"{self.input_budget:,} tokens): acted {len(self.acts)} time{'s' if len(self.acts) != 1 else ''}"
            + (f" ({kinds}; {auto} automatic)" if self.acts else "")
            + f"; {self.finish_reason}"
        )


def scenario_runs(cls: type[Policy[Any]], params: dict[str, str], seed: int = 0) -> list[ScenarioRun]:
    """One run of the policy (with the user's parameters, unscaled) on each bundled scenario at its defaults."""
    load_scenarios()
    config = RunConfig(seed=seed)
    out = []
    for entry in SCENARIOS:
        conv = scenario_conversation(entry.name, seed, {})
        result = Engine(cls(make_config(cls.Config, params)), conv, config).run()
        s = result.summary
        out.append(
            ScenarioRun(
                entry.name,
                int(s["agent_requests"]),
                int(s["peak_context_tokens"]),
                config.model.input_budget,
                tuple(acts_of(result.log)),
                str(s["finish_reason"]),
            )
        )
    return out


__all__ = ["ACTS", "Activity", "ScenarioRun", "Watch", "act_kind", "acts_of", "scenario_runs", "watch"]
