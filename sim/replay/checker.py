"""``csim check``: fuzz a policy's invariants with Hypothesis and report the shrunk counterexample.

The checker generates conversations with :func:`sim.replay.strategies.conversations`, replays each under
the policy with every invariant checked on every request (``deep_checks`` on, so the log's
append-only digest and the view folded from the log are re-verified at each request too), and
fails an example when the run records a violation the policy class does not declare in
``known_deviations`` (nor the caller in ``allow``), when the policy raises, or when it is not pure
(``policy-purity``: ``decide`` asked twice answers differently, or a lockstep replay of two
configurations, as ``csim sweep`` makes, differs from the run alone). Everything else,
including a context overflow, is a legitimate outcome: a policy may fail to fit, it may not send an
invalid request.

Hypothesis runs programmatically and derandomized, without its example database and without the constants
of the modules the process happens to have loaded (:func:`sim.replay.strategies.fixed_constants`), so the same
call gives the same report byte for byte, in any process (``csim check`` in CI must be repeatable). On failure,
Hypothesis shrinks and replays the minimal failing example last; the inner test records every
failing example in a closure, so what is left there after the run is the shrunk one.
"""

from __future__ import annotations

import dataclasses
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings

from policies import load_policy_class
from policies.base import Plan, Policy, Trigger
from sim.core.conversation import Conversation
from sim.core.invariants import Violation
from sim.core.params import make_config
from sim.core.state import RunState
from sim.core.tokenizers import get_tokenizer
from sim.replay.activity import Activity, ScenarioRun, Watch, acts_of, scenario_runs, watch
from sim.replay.engine import Engine, RunConfig, RunResult
from sim.replay.lockstep import run_many
from sim.replay.strategies import conversations, describe, fixed_constants, small_model

# Defaults applied to a policy whose configuration is sized for a 200K window and would never act
# inside the checker's small one. Each is reported in CheckReport.notes when applied.
CONTEXT_LIMIT_SHARE = 0.60  # context_token_limit left unset: the policy would never compact
KEEP_RECENT_SHARE = 0.25  # keep_recent_tokens above the window: the summary cut could never move
#: The window that policies' absolute token defaults are sized for (the Claude models' 200K). A config
#: field marked ``metadata={"tokens": True}`` (an absolute token count: a trigger, a buffer, a kept tail)
#: is scaled by ``window / REFERENCE_WINDOW`` for a check in a smaller window, unless the user gave it.
REFERENCE_WINDOW = 200_000


@dataclass(frozen=True)
class Counterexample:
    """The shrunk failing example: what was replayed, where it broke, and how."""

    conversation: Conversation
    listing: str
    violations: tuple[Violation, ...]
    exception: str | None
    turn: int
    request_kind: str
    finish_reason: str

    def invariants(self) -> list[str]:
        """Names of the unexpected invariants broken (``exception`` when the policy raised)."""
        names = sorted({v.invariant for v in self.violations})
        return names + (["exception"] if self.exception else [])

    def request_line(self) -> str:
        """Which request broke, located in the conversation: turn k is the request for the k-th reply."""
        replies = [i for i, m in enumerate(self.conversation.messages) if m.role == "assistant"]
        where = ""
        if self.request_kind in ("agent", "summariser", "grace") and self.turn < len(replies):
            i = replies[self.turn]
            where = f", the request for message {i} ({self.conversation.messages[i].id})"
        elif self.turn >= len(replies):
            where = ", after the last reply"
        return f"turn {self.turn} ({self.request_kind}){where}; run finished: {self.finish_reason}"


@dataclass
class CheckReport:
    """What ``check_policy`` found.

    Attributes:
        policy: the policy reference checked (registered name or ``module:Class``).
        params: the parameters the policy ran with (given ones plus any applied default, as strings).
        passed: no example broke an undeclared invariant and the policy never raised.
        examples: examples run, counted by the test itself (shrinking replays included).
        deviations: known deviations seen, as the number of examples each occurred in.
        allowed: invariants tolerated on request (``allow``) that were seen, counted the same way.
        notes: defaults the checker applied, said out loud.
        counterexample: the shrunk failing example, when ``passed`` is false.
        activity: what the policy did in the examples: how many it acted in, by kind, and how many passed its
            trigger (:class:`Activity`); a policy that never acted where its trigger was passed fails.
        scenarios: one run on each bundled scenario at its default length (``scenarios=True``).
    """

    policy: str
    params: dict[str, str]
    passed: bool
    examples: int
    window: int
    deviations: dict[str, int] = field(default_factory=dict)
    allowed: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    counterexample: Counterexample | None = None
    activity: Activity | None = None
    scenarios: list[ScenarioRun] = field(default_factory=list)

    def render(self) -> str:
        """The CLI's text: one PASS line, or the counterexample block."""
        seen = "; ".join(
            f"{label}: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))
            for label, counts in (("known deviations seen", self.deviations), ("allowed by request", self.allowed))
            if counts
        )
        lines = [f"note: {n}" for n in self.notes]
        act = self.activity
        extra = [] if act is None else [act.render(self.examples), *(f"note: {n}" for n in act.notes())]
        extra += [f"scenario {r.render()}" for r in self.scenarios]
        if self.passed:  # the verdict last, after what the policy did
            verdict = f"PASS {self.policy}: {self.examples} examples, no violation" + (f" ({seen})" if seen else "")
            return "\n".join([*lines, *extra, verdict])
        if self.counterexample is None and act is not None:
            lines.append(f"FAIL {self.policy}: {act.never_acted(self.examples)}")
            lines.append(f"params: {_params_text(self.params)}")
            return "\n".join([*lines, *extra])
        ce = self.counterexample
        assert ce is not None
        lines.append(
            f"FAIL {self.policy}: {', '.join(ce.invariants())} after {self.examples} examples "
            f"(counterexample shrunk to {len(ce.conversation.messages)} messages)"
        )
        lines.append(f"params: {_params_text(self.params)}")
        lines.append(f"request: {ce.request_line()}")
        if ce.violations:
            lines.append("violations:")
            lines += [f"  {v}" for v in ce.violations]
        if ce.exception:
            lines.append("exception:")
            lines += [f"  {line}" for line in ce.exception.rstrip().splitlines()]
        lines.append(f"conversation ({len(ce.conversation.messages)} messages; window {self.window} tokens):")
        lines.append(ce.listing)
        if seen:
            lines.append(f"before the failure, {seen}")
        return "\n".join([*lines, *extra])


class _Tally(Counter[str]):
    """The known deviations seen, by examples (the counter), and what the policy did (:class:`Activity`)."""

    def __init__(self, never_compacts: bool) -> None:
        super().__init__()
        self.activity = Activity(never_compacts=never_compacts)
        self.replays = 0
        self.progress: Callable[[int], None] | None = None


def _record(tally: _Tally, seen: Watch, acts: list[tuple[str, str]]) -> None:
    """Add one example's record to the tally's :class:`Activity`."""
    a = tally.activity
    for kind in sorted({k for k, _ in acts}):
        a.acted[kind] += 1
    a.any_acted += bool(acts)
    a.triggered += seen.triggered
    a.acted_when_triggered += seen.triggered and any(t in ("auto", "overflow") for _, t in acts)
    if seen.pins_dropped:
        a.pins_dropped += seen.pins_dropped
        a.pin_examples += 1
        a.first_pin_drop = a.first_pin_drop or seen.first_pin_drop


def _params_text(params: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items())) or "(defaults)"


def effective_params(cls: type[Policy[Any]], params: dict[str, str], window: int) -> tuple[dict[str, str], list[str]]:
    """The parameters to check with, and a note for each default the checker applied.

    A policy configured for a 200K window may never act inside the checker's small window, and a
    check that never compacts proves nothing. So fields marked as absolute token counts
    (``metadata={"tokens": True}``) are scaled from :data:`REFERENCE_WINDOW` to ``window``; an unset
    ``context_token_limit`` (effect-agent: unset means never compact) becomes 60% of the window, and a
    ``keep_recent_tokens`` larger than the whole window becomes 25% of it, unless the user gave them.
    """
    out = dict(params)
    notes: list[str] = []
    fields = {f.name: f for f in dataclasses.fields(cls.Config)}
    scaled = {
        f.name: f.default
        for f in fields.values()
        if f.metadata.get("tokens") and f.name not in out and isinstance(f.default, int) and f.default > 0
    }
    if scaled and window < REFERENCE_WINDOW:
        for name, default in scaled.items():
            out[name] = str(max(1, default * window // REFERENCE_WINDOW))
        notes.append(
            "scaled to the window (sized for 200K, not given): "
            + ", ".join(f"{name}={out[name]} (default {default})" for name, default in scaled.items())
        )
    if (
        "context_token_limit" in fields
        and "context_token_limit" not in out
        and fields["context_token_limit"].default is None
    ):
        out["context_token_limit"] = str(int(window * CONTEXT_LIMIT_SHARE))
        notes.append(
            f"context_token_limit={out['context_token_limit']} ({CONTEXT_LIMIT_SHARE:.0%} of the "
            f"{window}-token window): it was not given, and unset means the policy never compacts"
        )
    keep = fields.get("keep_recent_tokens")
    if (
        keep is not None
        and "keep_recent_tokens" not in out
        and isinstance(keep.default, int)
        and keep.default >= window
    ):
        out["keep_recent_tokens"] = str(int(window * KEEP_RECENT_SHARE))
        notes.append(
            f"keep_recent_tokens={out['keep_recent_tokens']} ({KEEP_RECENT_SHARE:.0%} of the "
            f"window): the default {keep.default} exceeds the {window}-token window, so no summary "
            "could ever cut"
        )
    return out, notes


class _Shown:
    """A generated conversation with a one-line repr: Hypothesis builds the repr of the failing
    example (and warns past 30 kB), while the report prints its own compact description."""

    __slots__ = ("conversation",)

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    def __repr__(self) -> str:
        return f"<conversation of {len(self.conversation.messages)} messages>"


class _Failed(Exception):
    """Raised from one place only, so Hypothesis sees every failure as the same bug and shrinks it."""


def generated(examples: int, *, window: int = 8_000, max_turns: int = 40) -> tuple[Conversation, ...]:
    """``examples`` conversations from the strategy :func:`check_policy` draws from (derandomized: the same every
    call, though not the same examples a check draws itself), to pass as its ``corpus`` to many checks at once: each
    check then replays them without generating its own."""
    out: list[Conversation] = []

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        verbosity=Verbosity.quiet,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(conversations(window=window, max_turns=max_turns).map(_Shown))
    def collect(shown: _Shown) -> None:
        out.append(shown.conversation)

    with fixed_constants():
        collect()
    return tuple(out)


def check_policy(
    policy_ref: str,
    params: dict[str, str],
    *,
    examples: int = 200,
    seed: int = 0,
    window: int = 8_000,
    max_turns: int = 40,
    tokenizer: str = "cl100k_base",
    allow: Iterable[str] = (),
    scenarios: bool = False,
    progress: Callable[[int], None] | None = None,
    corpus: Sequence[Conversation] | None = None,
) -> CheckReport:
    """Fuzz ``policy_ref`` over generated conversations; see the module docstring.

    Args:
        policy_ref: a registered policy name or ``package.module:Class``.
        params: policy parameters as given on the command line (``-P name=value``).
        examples: conversations to generate (Hypothesis ``max_examples``).
        seed: the run seed (summariser draws); generation itself is derandomized.
        window: context window of the small model the runs use.
        max_turns: most turns per generated conversation.
        tokenizer: the provider's tokenizer in the runs (``cl100k_base`` exact, ``chars4`` the estimate).
        allow: further invariants to tolerate besides the class's ``known_deviations``, e.g. one with
            an open bug report, so the rest of the search is not cut short by it. They are counted
            and reported apart from the known deviations, never silently.
        scenarios: also run the policy once on each bundled scenario at its default length (200K window, the
            given parameters unscaled) and report how often it acted there.
        progress: called with the number of examples run so far, after each one.
        corpus: conversations to replay instead of generating them (``examples``, ``max_turns`` and the
            generation are then unused): a test suite that checks fifty policies generates one set
            (:func:`generated`) and replays it under each. If one fails, Hypothesis searches as usual, so the
            counterexample is shrunk; should the search not meet a failure, the corpus's failing conversation is
            reported unshrunk.
    """
    cls = load_policy_class(policy_ref)
    run_params, notes = effective_params(cls, params, window)
    make_config(cls.Config, run_params)  # a bad parameter fails here, once, not inside every example
    known = cls.known_deviations
    allowed = frozenset(allow) - known
    config = RunConfig(model=small_model(window), deep_checks=True, seed=seed, tokenizer=tokenizer)
    count = 0
    deviations = _Tally(never_compacts=cls.decide is Policy.decide or bool(cls.acts_on))
    deviations.activity.acts_on = cls.acts_on
    deviations.progress = progress
    failure: list[Counterexample] = []

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        # No explain phase: it replays the shrunk example hundreds of times to say which parts
        # could vary, which costs more than the search and the shrink together.
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(conversations(window=window, max_turns=max_turns).map(_Shown))
    def inner(shown: _Shown) -> None:
        nonlocal count
        count += 1
        found = _replay(cls, run_params, shown.conversation, config, known | allowed, deviations)
        if found is None:
            return
        failure.append(found)
        raise _Failed(", ".join(found.invariants()))

    passed = True
    if corpus is None:
        try:
            with fixed_constants():
                inner()
        except _Failed:
            passed = False
    else:
        for conv in corpus:
            count += 1
            found = _replay(cls, run_params, conv, config, known | allowed, deviations)
            if found is not None:
                searched = check_policy(
                    policy_ref,
                    params,
                    examples=examples,
                    seed=seed,
                    window=window,
                    max_turns=max_turns,
                    tokenizer=tokenizer,
                    allow=allow,
                    scenarios=scenarios,
                    progress=progress,
                )  # a search of its own, so the counterexample is shrunk
                if searched.counterexample is not None:
                    return searched
                failure.append(found)  # the search met none: the corpus's, unshrunk
                passed = False
                break
    activity = deviations.activity
    if passed and activity.failed:
        passed = False
    return CheckReport(
        policy_ref,
        run_params,
        passed,
        count,
        window,
        {k: v for k, v in sorted(deviations.items()) if k in known},
        {k: v for k, v in sorted(deviations.items()) if k in allowed},
        notes,
        failure[-1] if failure and not passed else None,
        activity,
        scenario_runs(cls, params, seed) if scenarios else [],
    )


def _replay(
    cls: type[Policy[Any]],
    params: dict[str, str],
    conv: Conversation,
    config: RunConfig,
    known: frozenset[str],
    deviations: Counter[str],
) -> Counterexample | None:
    """One example: run, sort violations into known and unexpected; a Counterexample when it fails.

    Every example is a new conversation, so the shared tokenizer's memo is trimmed after each: it must not keep
    them all alive. (Here, not in the test function: Hypothesis derives a derandomised run's seed from that
    function's code, and a change there draws other examples.)"""
    seen = Watch()
    try:
        policy = cls(make_config(cls.Config, params))  # a fresh policy per example: no state leaks between runs
        impure = _ask_twice(policy)
        if isinstance(deviations, _Tally):
            watch(policy, seen)
        listing = describe(conv)  # before the run: a policy that edits messages in place must not hide it
        engine = Engine(policy, conv, config)
        try:
            result = engine.run()
        except Exception as exc:  # the policy (or the engine under it) raised: always a failure
            text = "".join(traceback.format_exception(exc, limit=-3))  # the innermost frames say where
            return Counterexample(conv, listing, (), text, engine.state.turn, "agent", "exception")
        if impure:
            return Counterexample(
                conv, listing, tuple(impure[:1]), None, impure[0].turn, "agent", result.summary["finish_reason"]
            )
        if not result.violations:
            lockstep = _lockstep_difference(cls, params, conv, config, result)
            if lockstep is not None:
                return Counterexample(
                    conv, listing, (lockstep,), None, lockstep.turn, "agent", result.summary["finish_reason"]
                )
        if isinstance(deviations, _Tally):
            _record(deviations, seen, acts_of(result.log))
        unexpected = tuple(v for v in result.violations if v.invariant not in known)
        for name in sorted({v.invariant for v in result.violations if v.invariant in known}):
            deviations[name] += 1
        if not unexpected:
            return None
        first = unexpected[0]
        return Counterexample(
            conv, listing, unexpected, None, first.turn, first.request_kind, result.summary["finish_reason"]
        )
    finally:
        get_tokenizer(config.tokenizer).trim()
        if isinstance(deviations, _Tally):
            deviations.replays += 1
            if deviations.progress is not None:
                deviations.progress(deviations.replays)


def _ask_twice(policy: Policy[Any]) -> list[Violation]:
    """Make ``policy.decide`` ask the policy twice at every call; the list fills when the answers differ.

    Policies must be pure (a sweep's lockstep replay asks every configuration at every step, sometimes
    twice): a policy that keeps state of its own answers the same question differently."""
    found: list[Violation] = []
    real = policy.decide

    def decide(state: RunState, trigger: Trigger) -> Plan | None:
        first, second = real(state, trigger), real(state, trigger)
        if first != second and not found:
            found.append(
                Violation(
                    "policy-purity",
                    state.turn,
                    "agent",
                    f"decide(state, {trigger!r}) answered {_brief(first)}, then {_brief(second)} to "
                    "the same state: a policy must not keep state of its own (csim sweep relies on it)",
                )
            )
        return first

    policy.decide = decide  # type: ignore[method-assign]
    return found


def _brief(plan: Plan | None) -> str:
    """A plan as its fields that differ from the defaults."""
    if plan is None:
        return "None"
    fields = (
        f"{f.name}={getattr(plan, f.name)!r}"
        for f in dataclasses.fields(plan)
        if f.name == "start" or getattr(plan, f.name) != f.default
    )
    return f"Plan({', '.join(fields)})"


def _lockstep_difference(
    cls: type[Policy[Any]], params: dict[str, str], conv: Conversation, config: RunConfig, alone: RunResult
) -> Violation | None:
    """Two configurations of the policy replayed in lockstep (as ``csim sweep`` does) against the run alone.

    Without deep checks: the run alone had them and found nothing, and they only add violations (none can appear
    in a replay that matches it), so re-verifying the log and re-rendering every request here would be a third of
    the example's time spent on nothing. The run id, a digest of the configuration, differs by that flag alone."""
    together = run_many(
        [cls(make_config(cls.Config, params)) for _ in range(2)], conv, dataclasses.replace(config, deep_checks=False)
    )
    expected = {k: v for k, v in alone.summary.items() if k != "run_id"}
    for r in together:
        if {k: v for k, v in r.summary.items() if k != "run_id"} != expected or r.rows != alone.rows:
            turn = next(
                (a["turn"] for a, b in zip(alone.rows, r.rows, strict=False) if a != b), alone.summary["requests"]
            )
            return Violation(
                "policy-purity",
                turn,
                "agent",
                "replayed in lockstep with a second configuration (as "
                "csim sweep replays them), the run differs from the run alone; decide must be pure",
            )
    return None


__all__ = ["CheckReport", "Counterexample", "check_policy", "effective_params", "generated"]
