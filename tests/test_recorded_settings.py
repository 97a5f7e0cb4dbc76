"""Settings matter on the shared Claude Code sessions (issue 34): a trigger set lower compacts earlier.

Why: a policy whose trigger parameter changes nothing on a real session is either broken or never acts there,
and the results would not show which. ``benchmarks/settings_sensitivity.py`` checks every bundled policy (its
table is ``benchmarks/results/settings-sensitivity.md``); this module pins the cases that must keep holding,
on one long session, each policy's settings in one lockstep sweep (a few seconds each).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from policies import POLICIES, make_policy
from sim import api
from sim.sweep.results import Results

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
SESSION = RECORDED / "claude-code" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"

needs_session = pytest.mark.skipif(
    not SESSION.exists(), reason=f"the shared Claude Code session is not at {SESSION} (../shared absent)"
)


@functools.cache
def _sweep(policy: str, param: str, values: tuple[Any, ...]) -> Results:
    """``policy`` with ``param`` at each of ``values`` on the session, replayed in lockstep."""
    return api.run_spec(api.spec({policy: {param: list(values)}}, conversations=str(SESSION)))


def _by_config(results: Results) -> dict[str, pd.DataFrame]:
    return {str(k): g for k, g in results.compactions.groupby("config")}


@needs_session
def test_claude_code_autocompact_pct_compacts_at_three_different_requests() -> None:
    """``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` 50, 70 and 85 of the effective window (90,000, 126,000 and 153,000
    tokens): the session's context passes each at another request, so each setting's first compaction comes at
    its own request, the lower setting first, and the lower setting peaks lower."""
    r = _sweep("claude-code", "autocompact_pct", (50, 70, 85))
    comps = _by_config(r)
    labels = [f"claude-code autocompact_pct={p:.1f}" for p in (50, 70, 85)]
    assert sorted(comps) == sorted(labels)
    first = [int(comps[label]["turn"].min()) for label in labels]
    assert first[0] < first[1] < first[2], first
    assert all((comps[label]["trigger"] == "auto").all() for label in labels)
    runs = r.runs.set_index("config")
    peaks = [int(runs.loc[label, "peak_context_tokens"]) for label in labels]
    assert peaks[0] < peaks[1] < peaks[2], peaks
    assert (runs["finish_reason"] == "completed").all()
    # Each first compaction fired as the context reached its threshold: every agent request before the one just
    # before it was under the threshold (Claude Code's estimate, the last prompt plus chars/4 since, lags the
    # provider's count by a little), and the forked summariser request, the conversation as it stood, is over it.
    q = r.requests
    for label, pct, turn in zip(labels, (50, 70, 85), first, strict=True):
        threshold = (200_000 - 20_000) * pct / 100
        mine = q[q["config"] == label]
        agent = mine[mine["request_kind"] == "agent"]
        assert int(agent[agent["turn"] < turn - 1]["context_tokens"].max()) < threshold, label
        summariser = mine[(mine["request_kind"] == "summariser") & (mine["turn"] == turn)]
        assert int(summariser["context_tokens"].iloc[0]) >= threshold, label


@needs_session
@pytest.mark.parametrize(
    ("policy", "param", "values"),
    [("smolagents", "max_length", (5_000, 50_000)), ("crewai", "usable_window_tokens", (20_000, 170_000))],
)
def test_a_bound_on_entry_changes_the_prompt_of_a_recording(policy: str, param: str, values: tuple[int, ...]) -> None:
    """Both bound tool results as they enter the log (smolagents' truncation at ``max_length`` characters, CrewAI's
    deferral of results over a quarter of ``usable_window_tokens`` to a file). The session's largest results are
    30,000+ characters, so the tighter setting sends less and the run no longer overflows: it makes all 157
    requests without one, where the looser one overflows. Both gave identical rows at every setting while a bounded
    result kept the size the provider recorded for the whole result (``benchmarks/results/settings-sensitivity.md``).
    """
    r = _sweep(policy, param, values)
    runs = r.runs.assign(value=[json.loads(p)[param] for p in r.runs["params"]]).set_index("value")
    tight, loose = runs.loc[values[0]], runs.loc[values[1]]
    assert tight["finish_reason"] == "completed" and int(tight["agent_requests"]) == 157
    assert int(tight["overflows"]) == 0 and int(loose["overflows"]) > 0
    assert float(tight["total_cost_usd"]) != float(loose["total_cost_usd"])
    assert int(tight["compaction_count"]) == 0  # what changed is what entered the log, not a compaction


@needs_session
@pytest.mark.parametrize(
    ("policy", "param", "values"),
    [
        ("swe-agent-masking", "n", (2, 5)),  # masked the oldest results of a parallel batch the next reply answers
        ("jetbrains-hybrid", "n", (43,)),  # counted masking steps inside the live turn as a compaction loop
        ("jetbrains-summary", "n", (10,)),  # an assistant checkpoint inside the live turn: now declared
        ("effect-agent", "context_token_limit", (60_000,)),  # a tail inside the live thinking loop: now declared
    ],
)
def test_no_undeclared_violation_on_the_session(policy: str, param: str, values: tuple[int, ...]) -> None:
    """Settings at which these policies broke an invariant they did not declare on this session (the sensitivity
    sweep's list, ``benchmarks/results/settings-sensitivity.md``): now each compacts with none."""
    r = _sweep(policy, param, values)
    assert (r.runs["compaction_count"] > 0).all()
    undeclared = r.violations[~r.violations["declared"].astype(bool)]
    assert undeclared.empty, undeclared[["config", "invariant", "detail"]].head().to_dict("records")


def test_the_sensitivity_sweep_tries_every_policy_with_settings_it_accepts() -> None:
    """``benchmarks/settings_sensitivity.py`` names every registered policy (a new one must be added, with settings or
    with why it has none), and every setting it tries is a field of the policy's config that builds (a setting the
    config refuses would only show when the long run fails on it)."""
    path = ROOT / "benchmarks" / "settings_sensitivity.py"
    spec = importlib.util.spec_from_file_location("settings_sensitivity", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert set(bench.TRIALS) | set(bench.UNSWEPT) == set(POLICIES.names())
    assert not set(bench.TRIALS) & set(bench.UNSWEPT)
    for policy, (param, values) in bench.TRIALS.items():
        assert param in {f.name for f in dataclasses.fields(POLICIES.get(policy).Config)}, policy
        assert len(values) >= 2, policy
        for value in values:
            make_policy(policy, {param: value})
