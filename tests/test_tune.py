"""``csim tune``: search spaces, constraints on paired bounds, the held-out split, the store's run keys, a tune
interrupted mid-way that resumes without rerunning a finished run, and the same answer for the same seed."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from policies import POLICIES, load_policy_class, make_policy
from sim.cli.main import main
from sim.core.errors import CsimError, InvalidConfig, UnknownName
from sim.sweep.executors import ExecutorSpec
from sim.sweep.grid import plan
from sim.sweep.space import declared_space, grid_size, parse_dim, policy_space
from sim.sweep.spec import PolicyGrid, Source, SweepSpec
from sim.sweep.tune import Budget, Store, TuneSpec, plan_units, setting_of, split
from sim.sweep.tunerun import run_tune
from sim.sweep.tunestats import Constraint, frontier, interval, resamples
from sim.sweep.tuneview import _pct, render

SCENARIO = Source("scenario", "coding-agent", (("huge_prob", "0"), ("turns", "20")))
SPACE = ("trigger_ratio=0.5:0.9:0.1", "tail_ratio=0.1,0.3")  # 10 settings: a grid within a budget of 10


def small_spec(**kw: Any) -> TuneSpec:
    base: dict[str, Any] = dict(
        policies=("cloudflare-os",),
        sources=(SCENARIO,),
        seeds=(0, 1, 2, 3),
        run=(("window", 20000),),
        space=SPACE,
        batch=2,
        # On a 20K window every trigger below the default's 0.85 compacts earlier: a lower peak, never an overflow.
        objective="peak_context",
        constraints=("overflows<=0",),
    )
    return TuneSpec(**{**base, **kw})


# -- spaces ---------------------------------------------------------------------------------------------------
def test_at_least_ten_policies_declare_a_space_and_every_value_builds() -> None:
    declared = [n for n in POLICIES.names() if declared_space(n)]
    assert len(declared) >= 10, declared
    for name in declared:
        space = declared_space(name)
        fields = {f.name for f in dataclasses.fields(load_policy_class(name).Config)}
        assert set(space) <= fields
        for dim in space.values():
            assert dim.countable and dim.size() >= 2, (name, dim)
            for value in dim.grid():  # each value alone builds a valid config (pairs may not: see the tune's invalid)
                make_policy(name, {dim.name: str(value)})
        native: dict[str, str] = getattr(load_policy_class(name), "TUNABLE_NATIVE", {})
        assert set(native) <= fields and all("{value}" in v for v in native.values()), name


def test_ranges_parse_and_bad_ones_say_how() -> None:
    assert parse_dim("x", "0.5:0.9:0.1").grid() == [0.5, 0.6, 0.7, 0.8, 0.9]
    assert parse_dim("n", "1:4").grid() == [1, 2, 3, 4]
    assert parse_dim("k", "fraction:0.5,fraction:0.8").grid() == ["fraction:0.5", "fraction:0.8"]
    d = parse_dim("t", "0.001:0.1:log")
    assert d.log and not d.countable and grid_size({"t": d}) is None
    for bad in ("0.9:0.5", "a:b", "1:2:3:4", "0:10:log", "1:2:-1"):
        with pytest.raises(InvalidConfig):
            parse_dim("x", bad)
    assert list(policy_space("cloudflare-os", SPACE)["tail_ratio"].grid()) == ["0.1", "0.3"]
    with pytest.raises(UnknownName, match="Did you mean 'trigger_ratio'"):
        small_spec(space=("trigger_ration=0.5:0.9",))
    with pytest.raises(InvalidConfig, match="declares no search space"):
        small_spec(policies=("none",), space=())


# -- numbers ----------------------------------------------------------------------------------------------------
def test_constraints_hold_the_right_bound() -> None:
    ret = Constraint.parse("retention>=default")
    assert (ret.column, ret.op, ret.threshold, ret.bound) == ("retention_recall", ">=", None, "lo")
    over = Constraint.parse("overflows==0")
    assert (over.op, over.threshold, over.bound) == ("<=", 0.0, "hi")
    default = {"mean": 0.8, "lo": 0.7, "hi": 0.9}
    assert ret.violation({"mean": 0.75, "lo": 0.71, "hi": 0.8}, default) <= 0
    assert ret.violation({"mean": 0.9, "lo": 0.69, "hi": 0.99}, default) > 0  # a better mean, a lower bound
    assert over.violation({"mean": 0.0, "lo": 0.0, "hi": 0.0}, default) <= 0
    assert over.violation({"mean": 0.1, "lo": 0.0, "hi": 0.3}, default) > 0
    margin = Constraint.parse("retention>=default-0.01")  # non-inferiority: at most 0.01 below the default's bound
    assert (margin.threshold, margin.margin, margin.limit(default)) == (None, -0.01, pytest.approx(0.69))
    assert margin.violation({"mean": 0.9, "lo": 0.695, "hi": 0.99}, default) <= 0
    assert margin.violation({"mean": 0.9, "lo": 0.685, "hi": 0.99}, default) > 0
    assert Constraint.parse("cost<=default+.5").limit({"mean": 1.0, "lo": 0.8, "hi": 1.2}) == pytest.approx(1.7)
    for bad in ("retention>default", "retention>=lots", "overflows==1", "retension>=0.5", "retention>=default-x"):
        with pytest.raises(CsimError):
            Constraint.parse(bad)


def test_intervals_are_seeded_and_paired() -> None:
    draws = resamples(8)
    assert np.array_equal(draws, resamples(8))
    a = np.array([1.0, 2, 3, 4, 5, 6, 7, 8])
    got = interval(a, draws)
    assert got["lo"] < got["mean"] == 4.5 < got["hi"]
    shifted = interval(a + 10, draws)  # paired: the same draws move both bounds by exactly the shift
    assert shifted["lo"] == pytest.approx(got["lo"] + 10) and shifted["hi"] == pytest.approx(got["hi"] + 10)
    assert np.isnan(interval(np.full(3, np.nan), resamples(3))["mean"])


def test_frontier_keeps_the_undominated_once() -> None:
    pts = [(1.0, 0.5), (2.0, 0.9), (1.5, 0.4), (1.0, 0.5), (3.0, 0.9), (float("nan"), 1.0)]
    assert frontier(pts) == [0, 1]
    assert frontier([(1.0, 5.0), (2.0, 1.0)], higher_is_better=False) == [0, 1]


# -- conversations and the store ----------------------------------------------------------------------------------
def test_the_split_is_by_session_deterministic_and_disjoint() -> None:
    units, _, _ = plan_units(small_spec(seeds=tuple(range(10))), None)
    tune, held = split(units, 0.3, 0)
    assert len(held) == 3 and len(tune) == 7
    assert not {u.unit.conversation for u in tune} & {u.unit.conversation for u in held}
    again = split(units, 0.3, 0)
    assert [u.unit.conversation for u in again[1]] == [u.unit.conversation for u in held]
    other = split(units, 0.3, 1)[1]
    assert [u.unit.conversation for u in other] != [u.unit.conversation for u in held]  # the seed moves the split
    assert split(units[:1], 0.3, 0) == ([units[0]], [])  # one conversation: nothing to hold out


def test_the_store_keys_runs_as_a_sweep_does(tmp_path: Path) -> None:
    spec = small_spec()
    units, shared, version = plan_units(spec, None)
    store = Store(tmp_path / "store", shared, ExecutorSpec("local", 1))
    setting = setting_of("cloudflare-os", {"trigger_ratio": "0.7"})
    rows = store.measure([setting], units, version, ("cloudflare-os",))[0]
    sweep = SweepSpec(
        (PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.7",)),)),), spec.sources, spec.seeds, spec.run
    )
    tasks, _, _ = plan(sweep)
    assert sorted(r["run_key"] for r in rows) == sorted(r.run_key for t in tasks for r in t.runs)
    assert len(store.ran) == len(units)
    again = Store(tmp_path / "store", shared, ExecutorSpec("local", 1))
    read = again.measure([setting], units, version, ("cloudflare-os",))[0]
    assert [(r["run_key"], r["total_cost_usd"]) for r in read] == [(r["run_key"], r["total_cost_usd"]) for r in rows]
    assert again.ran == []  # read from the parts, not run again


# -- a whole tune: resumed, repeated -----------------------------------------------------------------------------
class Stop(KeyboardInterrupt):
    pass


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("tune") / "ref"
    return run_tune(small_spec(), out, Budget(trials=6), workers=1, progress=False), out


def trials_of(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (t["number"], json.dumps(t["params"], sort_keys=True), t["objective"]["mean"], t["feasible"])
        for w in result["windows"]
        for s in w["policies"]
        for t in s["trials"]
    ]


def test_an_interrupted_tune_resumes_without_rerunning_a_finished_run(
    reference: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    out = tmp_path / "t"
    seen: list[int] = []

    def stop_after_two(_st: Any, trial: dict[str, Any]) -> None:
        seen.append(trial["number"])
        if len(seen) == 3:  # mid-way through the second batch: its runs are stored, the tune is not
            raise Stop

    with pytest.raises(Stop):
        run_tune(small_spec(), out, Budget(trials=6), workers=1, progress=False, on_trial=stop_after_two)
    assert json.loads((out / "tune.json").read_text())["finished"] is False
    first = Store(out / "store", {}, ExecutorSpec("local", 1))
    stored_before = set(first.rows)
    assert stored_before

    ran: list[str] = []
    resumed = run_tune(small_spec(), out, Budget(trials=6), workers=1, progress=False)
    ran = Store(out / "store", {}, ExecutorSpec("local", 1)).rows.keys() - stored_before
    assert resumed["runs"]["ran"] == len(ran) > 0  # only the runs that were missing ran
    assert trials_of(resumed) == trials_of(reference[0])  # the same trials as a tune never interrupted
    assert render(resumed) == render(reference[0])
    assert run_tune(small_spec(), out, Budget(trials=6), workers=1, progress=False)["runs"]["ran"] == 0


def test_a_larger_budget_in_the_same_folder_goes_on_from_the_stored_runs(
    reference: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    out = tmp_path / "t"
    shutil.copytree(reference[1], out)
    before = set(Store(out / "store", {}, ExecutorSpec("local", 1)).rows)
    longer = run_tune(small_spec(), out, Budget(trials=10), workers=1, progress=False)  # the budget is not the spec
    after = set(Store(out / "store", {}, ExecutorSpec("local", 1)).rows)
    (s,) = longer["windows"][0]["policies"]
    assert s["sampler"] == "grid (10 settings)" and len(s["trials"]) == 10  # every setting; those tried read back
    assert before < after and longer["runs"]["ran"] == len(after - before)
    tried = {json.dumps(t["params"], sort_keys=True) for t in reference[0]["windows"][0]["policies"][0]["trials"]}
    tuning, held = (len(longer["windows"][0][k]) for k in ("tuning", "held_out"))
    new_best = s["recommend"] != reference[0]["windows"][0]["policies"][0]["recommend"]
    assert longer["runs"]["ran"] == (10 - len(tried)) * tuning + new_best * held  # the settings not tried before


def test_the_answer_is_checked_on_held_out_sessions(reference: tuple[dict[str, Any], Path]) -> None:
    result, out = reference
    (w,) = result["windows"]
    assert w["held_out"] and not set(w["held_out"]) & set(w["tuning"])
    (s,) = w["policies"]
    assert s["sampler"].startswith("TPE") and len(s["trials"]) + len(s["invalid"]) == 6  # 10 settings > 6 trials
    assert s["improves"], "a trigger below the default's must lower the peak context"
    assert s["best"]["feasible"] and s["holdout"]["units"] == len(w["held_out"])
    assert s["native"] and s["native"][0].startswith("COMPACTION_TRIGGER_RATIO = ")
    text = render(result)
    assert "held out (1 conversation)" in text and "in its own terms" in text
    assert max(map(len, text.splitlines())) <= 120
    assert json.loads((out / "tune.json").read_text())["spec"] == json.loads(json.dumps(small_spec().normalised()))


def test_another_spec_in_the_same_folder_is_refused(reference: tuple[dict[str, Any], Path]) -> None:
    with pytest.raises(InvalidConfig, match="holds another tune"):
        run_tune(small_spec(seed=7), reference[1], Budget(trials=2), workers=1, progress=False)


def test_cli_tune_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tune", "--policy", "cloudflare-os", "--scenario", "coding-agent", "-S", "turns=20", "-S", "huge_prob=0"]
    args += ["--seeds", "0-3", "--window", "20000", "--budget", "4", "--workers", "1", "--quiet", "--batch", "2"]
    args += ["--space", "trigger_ratio=0.5:0.8:0.1", "--space", "tail_ratio=0.1"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().out
    assert "csim tune: 1 policies" in first and "4 trials, grid" in first  # 4 settings fit a budget of 4
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out == first  # the same seed prints the same answer
    assert (tmp_path / "a" / "answer.txt").read_text() == first
    for bad, said in (
        (["--budget", "ten"], "--budget 'ten'"),
        (["--policy", "cloudflare-oss"], "Did you mean"),
        (["--constraint", "retention>0.5"], "is not COLUMN>=X"),
    ):
        assert main([*args, *bad, "--out", str(tmp_path / "c")]) == 2
        assert said in capsys.readouterr().err


def test_the_report_of_a_tune_folder(reference: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    _, out = reference
    assert main(["report", str(out), "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "tune.html").read_text()
    for ident in ("fig-tune-history", "fig-tune-frontier", "table-tune-importance", "table-tune-holdout"):
        assert f'id="{ident}"' in page, ident
    assert "trigger_ratio" in page.split('id="table-tune-importance"')[1].split("</table>")[0]
    assert main(["report", str(out), "--out", str(tmp_path / "s")]) == 0
    assert (tmp_path / "s" / "tune.html").read_bytes() == page.encode()  # seeded importance, PNGs without metadata
    from sim.report.tune import importance, load_tune

    with pytest.raises(InvalidConfig, match="not the output of csim tune"):
        load_tune(tmp_path)
    renamed = json.loads((out / "tune.json").read_text().replace('"cloudflare-os"', '"nowhere.to.be:Found"'))
    assert len(importance(renamed)) == 2  # the space comes from tune.json: no policy code is imported to read it


def test_by_window_prints_a_trigger_per_window(tmp_path: Path) -> None:
    spec = small_spec(windows=(20000, 40000), run=())
    result = run_tune(spec, tmp_path / "w", Budget(trials=4), workers=1, progress=False)
    assert [w["window"] for w in result["windows"]] == [20000, 40000]
    text = render(result)
    advisor = text.split("threshold advisor")[1].splitlines()
    rows = [line.split() for line in advisor if line.startswith(("20,000", "40,000"))]
    assert [r[:3] for r in rows] == [
        ["20,000", "cloudflare-os", "trigger_ratio"],
        ["40,000", "cloudflare-os", "trigger_ratio"],
    ]
    with pytest.raises(InvalidConfig, match="a context window is in tokens"):
        small_spec(windows=(200,))


def test_a_change_too_small_for_one_decimal_is_not_printed_as_nil() -> None:
    assert _pct(49.3157, 49.3323) == "-0.03%"  # nexau-summary's one cent (benchmarks/results/tune-measure.md)
    assert (_pct(0.9, 1.0), _pct(1.0, 1.0), _pct(100.001, 100.0)) == ("-10.0%", "+0.0%", "+0.001%")
