"""csim compare: bootstrap intervals, paired differences against a baseline, the Pareto frontier, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cli.main import main
from sim.core.config import normalise_run
from sim.core.errors import UnknownName
from sim.sweep.compare import bootstrap_mean, compare, pareto_front
from sim.sweep.driver import run_sweep
from sim.sweep.parts import RUN_COLUMNS
from sim.sweep.results import Results, load_results, typed
from sim.sweep.spec import PolicyGrid, Source, SweepSpec


def fake_results(rows: list[dict[str, object]]) -> Results:
    # every count 0 and every task done, but what a test sets
    zeros: dict[str, object] = {c: 0 for c, dtype in RUN_COLUMNS.items() if dtype == "int64" and c != "seed"}
    zeros["task_success"] = 1.0
    full = [
        {
            "policy": r["config"],
            "params": "{}",
            "source": "s",
            "source_kind": "scenario",
            "conversation_checksum": str(r["conversation"]),
            "run_key": f"{r['config']}-{r['conversation']}",
            **zeros,
            "retention_recall": 1.0,
            **r,
        }
        for r in rows
    ]
    empty = pd.DataFrame()
    return Results("sweep", {}, typed(full, RUN_COLUMNS), empty, empty, empty, empty, None)


def test_paired_difference_is_exact_when_the_shift_is_constant() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for conv in range(8):
        for seed in (0, 1):
            base = float(rng.uniform(1, 100))
            rows += [
                {"config": "none", "conversation": f"c{conv}", "seed": seed, "total_cost_usd": base},
                {
                    "config": "cheap",
                    "conversation": f"c{conv}",
                    "seed": seed,
                    "total_cost_usd": base - 0.5,
                    "retention_recall": 0.5,
                },
            ]
    table = compare(fake_results(rows)).set_index("config")
    assert table.loc["cheap", "cost_usd_diff"] == pytest.approx(-0.5)
    assert table.loc["cheap", "cost_usd_diff_lo"] == pytest.approx(-0.5) == table.loc["cheap", "cost_usd_diff_hi"]
    assert table.loc["cheap", "cost_usd_lo"] < table.loc["cheap", "cost_usd_mean"] < table.loc["cheap", "cost_usd_hi"]
    assert table.loc["cheap", "conversations"] == 8 and table.loc["cheap", "runs"] == 16
    assert table.loc["cheap", "baseline"] == "none"
    assert table["pareto"].all()  # cheaper but forgets: neither dominates


def test_a_dominated_configuration_is_off_the_frontier_and_baseline_misses_suggest() -> None:
    rows = [
        {"config": c, "conversation": "c0", "seed": 0, "total_cost_usd": cost, "retention_recall": rec}
        for c, cost, rec in (("a", 1.0, 0.9), ("b", 2.0, 0.8), ("c", 0.5, 0.5))
    ]
    table = compare(fake_results(rows), baseline="a").set_index("config")
    assert table["pareto"].to_dict() == {"a": True, "b": False, "c": True}
    with pytest.raises(UnknownName, match="Did you mean 'a'"):
        compare(fake_results(rows), baseline="aa")


@given(st.lists(st.tuples(st.floats(0, 10), st.floats(0, 1)), min_size=1, max_size=12))
def test_pareto_front_is_exactly_the_undominated_points(points: list[tuple[float, float]]) -> None:
    cost, ret = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    front = set(pareto_front(cost, ret))
    for i in range(len(points)):
        dominated = any(
            cost[j] <= cost[i] and ret[j] >= ret[i] and (cost[j] < cost[i] or ret[j] > ret[i])
            for j in range(len(points))
        )
        assert (i in front) == (not dominated)


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30))
def test_bootstrap_interval_holds_the_mean_and_repeats(values: list[float]) -> None:
    m, lo, hi = bootstrap_mean(np.array(values))
    assert lo - 1e-6 <= m <= hi + 1e-6
    assert (m, lo, hi) == bootstrap_mean(np.array(values))
    assert bootstrap_mean(np.array([3.0, np.nan])) == (3.0, 3.0, 3.0)


def test_csim_compare_prints_and_writes_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = SweepSpec(
        (PolicyGrid("none"), PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.5",)),))),
        (Source("scenario", "coding-agent", (("turns", "12"), ("huge_prob", "0"))),),
        (0, 1),
        normalise_run({"window": 12000}, "test"),
    )
    run_sweep(spec, tmp_path, workers=1, progress=False)
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cloudflare-os trigger_ratio=0.5" in out and "baseline 'none'" in out
    summary = load_results(tmp_path).summary
    assert summary is not None and sorted(summary["config"]) == ["cloudflare-os trigger_ratio=0.5", "none"]
    assert (tmp_path / "summary.csv").read_text().startswith("config,")
    assert main(["compare", str(tmp_path), "--baseline", "nne"]) == 2
    assert "Did you mean 'none'" in capsys.readouterr().err
    assert main(["compare", str(tmp_path), "--by", "source"]) == 0
