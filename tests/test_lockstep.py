"""sim.replay.lockstep.run_many: several policies over one replay give exactly what separate runs give, and share it."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.base import Policy
from sim.core.budgets import Budgets
from sim.core.log import encode_event
from sim.replay import engine, lockstep
from sim.replay.engine import RunConfig, RunResult, run
from sim.replay.lockstep import run_many
from sim.replay.strategies import conversations, small_model
from sim.scenarios import generate

# Every bundled policy at settings that compact at different points in an 8K window, twice the
# same setting included (the same policy object may not be shared, equal settings may).
CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("none", {}),
    ("sliding-window", {"trigger_ratio": "0.6"}),
    ("sliding-window", {"trigger_ratio": "0.9"}),
    ("cloudflare-os", {"trigger_ratio": "0.6"}),
    ("cloudflare-os", {"trigger_ratio": "0.85"}),
    ("cloudflare-os", {"trigger_ratio": "0.85"}),
    ("effect-agent", {"context_token_limit": "3000", "keep_recent_tokens": "1500", "max_bytes": "4096"}),
    ("effect-agent", {"context_token_limit": "5000", "keep_recent_tokens": "2000", "max_bytes": "4096"}),
    ("effect-agent", {"context_token_limit": "5000", "max_bytes": "2048"}),
    ("effect-agent", {}),
    # a background compaction (Policy.timing) under way while the others go on
    ("copilot-infinite-sessions", {"background_compaction_threshold": "0.6"}),
    ("copilot-infinite-sessions", {}),
]


def fingerprint(r: RunResult) -> str:
    """Everything a run reports, as text: two runs agree when these are equal."""
    return json.dumps(
        [
            r.run_id,
            r.policy,
            r.params,
            r.summary,
            r.rows,
            r.fact_rows,
            r.compactions,
            [repr(v) for v in r.violations],
            [encode_event(e) for e in r.log],
        ],
        sort_keys=True,
        default=str,
    )


def policies_of(picks: list[int]) -> list[Policy]:
    return [make_policy(CONFIGS[i][0], CONFIGS[i][1]) for i in picks]


def assert_same_as_separate_runs(picks: list[int], conv: Any, config: RunConfig) -> None:
    together = run_many(policies_of(picks), conv, config)
    alone = [run(p, conv, config) for p in policies_of(picks)]
    assert len(together) == len(alone)
    for i, (a, b) in enumerate(zip(together, alone, strict=True)):
        assert fingerprint(a) == fingerprint(b), f"configuration {CONFIGS[picks[i]]} differs in lockstep"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    conv=conversations(),
    picks=st.lists(st.integers(0, len(CONFIGS) - 1), min_size=1, max_size=6),
    max_turns=st.none() | st.integers(1, 30),
    on_exhaustion=st.sampled_from(["final-answer", "fail"]),
    run_status=st.sampled_from(["auto", "appended", "off"]),
    strict=st.booleans(),
)
def test_lockstep_results_equal_separate_runs(
    conv: Any, picks: list[int], max_turns: int | None, on_exhaustion: str, run_status: str, strict: bool
) -> None:
    # Generated conversations bring /compact commands, pending approvals, reverts and overflows; the
    # budget brings exhaustion (final answer or failure): every place where a member forks off. Strict
    # runs stop at the first violation, which may come while the members are still together.
    config = RunConfig(
        model=small_model(),
        tokenizer="chars4",
        run_status=run_status,  # type: ignore[arg-type]
        budgets=Budgets(max_turns=max_turns, on_exhaustion=on_exhaustion),  # type: ignore[arg-type]
        strict=strict,
    )
    assert_same_as_separate_runs(picks, conv, config)


@pytest.mark.parametrize("scenario", ["coding-agent", "research-agent", "support-chat"])
def test_lockstep_equals_separate_runs_on_the_scenarios(scenario: str) -> None:
    conv = generate(scenario, 0, **({"turns": 300} if scenario == "support-chat" else {}))
    for window in (30_000, 200_000):
        config = RunConfig(model=small_model(window), seed=0)
        assert_same_as_separate_runs(list(range(len(CONFIGS))), conv, config)


def test_policies_that_never_compact_share_the_whole_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[int] = []
    real = engine.Engine._agent_request

    def counting(self: engine.Engine, reply: Any, grace: bool = False) -> None:
        sent.append(1)
        real(self, reply, grace)

    monkeypatch.setattr(engine.Engine, "_agent_request", counting)
    conv = generate("coding-agent", 0)
    config = RunConfig(model=small_model(1_000_000))  # no trigger is reached in a million tokens
    one = run(make_policy("none"), conv, config)
    alone = len(sent)
    sent.clear()
    many = run_many(
        [make_policy("none"), make_policy("sliding-window"), make_policy("sliding-window", {"trigger_ratio": "0.6"})],
        conv,
        config,
    )
    assert alone == one.summary["agent_requests"] > 0
    assert len(sent) == alone  # three configurations, one replay
    assert [r.policy for r in many] == ["none", "sliding-window", "sliding-window"]
    assert len({r.run_id for r in many}) == 3


def test_policies_that_shape_requests_differently_never_share() -> None:
    cfg = RunConfig()
    keys = {
        lockstep._replay_key(make_policy(n, p), cfg)
        for n, p in [("none", {}), ("effect-agent", {}), ("effect-agent", {"max_bytes": "2048"})]
    }
    assert len(keys) == 3  # effect-agent appends the run-status line and bounds results by max_bytes
    assert lockstep._replay_key(
        make_policy("effect-agent", {"context_token_limit": "9000"}), cfg
    ) == lockstep._replay_key(make_policy("effect-agent", {"context_token_limit": "5000"}), cfg)


def test_a_shared_rollback_then_a_compaction_only_some_members_make(monkeypatch: pytest.MonkeyPatch) -> None:
    # coding-agent seed 2 in an 80K window: the three settings roll back together, then one of them
    # compacts the restored view at once and the others do not (found by search; the assertion on
    # where they forked keeps the example honest if the scenario changes).
    forks: list[int] = []
    real = engine.Engine.copy

    def watching(self: engine.Engine, policy: Policy) -> engine.Engine:
        if sys._getframe(1).f_locals.get("phase") == engine.AFTER_ROLLBACK:
            forks.append(1)
        return real(self, policy)

    monkeypatch.setattr(engine.Engine, "copy", watching)
    settings_ = [{"trigger_ratio": t} for t in ("0.5", "0.7", "0.9")]
    conv = generate("coding-agent", 2)
    config = RunConfig(model=small_model(80_000), seed=2)
    together = run_many([make_policy("cloudflare-os", p) for p in settings_], conv, config)
    alone = [run(make_policy("cloudflare-os", p), conv, config) for p in settings_]
    assert [fingerprint(r) for r in together] == [fingerprint(r) for r in alone]
    assert forks, "no member forked off after a shared rollback: pick another example"


def test_policies_whose_clients_place_other_cache_breakpoints_replay_apart() -> None:
    """claude-code writes with 1-hour breakpoints, none with 5-minute ones: replayed together they would share the
    first one's cache placement (priced as the other policy's client never sends its requests)."""
    conv = generate("coding-agent", seed=0, turns=60)
    config = RunConfig(model=small_model(60_000))
    for names in (["none", "claude-code"], ["claude-code", "none"]):
        together = run_many([make_policy(n) for n in names], conv, config)
        alone = [run(make_policy(n), conv, config) for n in names]
        assert [fingerprint(r) for r in together] == [fingerprint(r) for r in alone], names
