"""Sweep specs (TOML and flags), the grid, run keys, resumption, token sharing and progress output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cli.main import main
from sim.core.config import normalise_run
from sim.core.errors import CsimError, InvalidConfig, UnknownName
from sim.core.params import parse_seeds
from sim.core.retention import load_model
from sim.sweep import grid as sweep
from sim.sweep.driver import Progress, run_sweep
from sim.sweep.grid import plan, run_task, settings
from sim.sweep.parts import SWEEP_REQUEST_COLUMNS
from sim.sweep.results import load_results, typed
from sim.sweep.spec import PolicyGrid, Source, SweepSpec, load_spec

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "tests" / "golden" / "formats" / "native.jsonl"
TINY = (("turns", "12"), ("huge_prob", "0"))


def tiny_spec(seeds: tuple[int, ...] = (0, 1), window: int = 12_000) -> SweepSpec:
    return SweepSpec(
        (PolicyGrid("none"), PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.5", "0.8")),))),
        (Source("scenario", "coding-agent", TINY),),
        seeds,
        normalise_run({"window": window}, "test"),
    )


# -- seeds and specs ---------------------------------------------------------------------------------------
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), min_size=1, max_size=5))
def test_seed_ranges_cover_exactly_their_integers(ranges: list[tuple[int, int]]) -> None:
    text = ",".join(f"{a}-{a + n}" if n else str(a) for a, n in ranges)
    expected = sorted({s for a, n in ranges for s in range(a, a + n + 1)})
    assert list(parse_seeds(text)) == expected


@pytest.mark.parametrize("bad", ["x", "3-1", "-2", [1, "a"], 1.5, True])
def test_bad_seeds_are_config_errors(bad: object) -> None:
    with pytest.raises(InvalidConfig):
        parse_seeds(bad)


def test_example_spec_builds_the_documented_grid() -> None:
    spec = load_spec(ROOT / "datasets" / "sweeps" / "example.toml")
    labels = [s.label for s in settings(spec)]
    assert labels[0] == "none"
    assert "cloudflare-os trigger_ratio=0.8" in labels
    assert "effect-agent context_token_limit=150000" in labels
    assert len(labels) == 10
    assert [s.kind for s in spec.sources] == ["scenario"] * 3
    assert spec.seeds == (0, 1, 2, 3, 4)
    assert dict(spec.run)["window"] == 200_000


def test_spec_errors_name_the_problem(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text('[[policy]]\npolicy = "none"\n')
    with pytest.raises(UnknownName, match="Did you mean 'policies'"):
        load_spec(f)
    f.write_text('[[policies]]\npolicy = "none"\n[[scenarios]]\nname = "coding-agent"\n[run]\nwindw = 3\n')
    with pytest.raises(UnknownName, match="Did you mean 'window'"):
        load_spec(f)
    f.write_text('[[policies]]\npolicy = "none"\n')
    with pytest.raises(InvalidConfig, match="needs conversations"):
        load_spec(f)
    f.write_text("[[policies]\n")
    with pytest.raises(CsimError, match="s.toml"):
        load_spec(f)
    f.write_text(
        '[[policies]]\npolicy = "cloudflare-os"\nparams = { trigger_ratio = [0.8, 2.0] }\n'
        '[[scenarios]]\nname = "coding-agent"\n'
    )
    with pytest.raises(InvalidConfig):
        settings(load_spec(f))


def test_spec_paths_are_relative_to_the_spec_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    f = tmp_path / "sub" / "s.toml"
    f.write_text(f'[[policies]]\npolicy = "none"\n[[conversations]]\npath = "{NATIVE.name}"\n')
    spec = load_spec(f)
    assert spec.sources[0].name == str((tmp_path / "sub" / NATIVE.name).resolve())
    assert spec.sources[0].format == "auto"


def test_flags_build_the_same_spec_as_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sim.cli.main import build_parser
    from sim.cli.sweep import spec_from_args

    argv = [
        "sweep",
        "--out",
        str(tmp_path / "o"),
        "--policy",
        "cloudflare-os",
        "-P",
        "trigger_ratio=0.7,0.8",
        "-P",
        "tail_ratio=0.2",
        "--policy",
        "none",
        "--scenario",
        "coding-agent",
        "-S",
        "turns=12,14",
        "--seeds",
        "0-2",
        "--window",
        "50000",
    ]
    flags = spec_from_args(build_parser().parse_args(argv))
    f = tmp_path / "s.toml"
    f.write_text(
        '[sweep]\nseeds = "0-2"\n[run]\nwindow = 50000\n'
        '[[policies]]\npolicy = "cloudflare-os"\nparams = { trigger_ratio = [0.7, 0.8], tail_ratio = 0.2 }\n'
        '[[policies]]\npolicy = "none"\n[[scenarios]]\nname = "coding-agent"\nparams = { turns = [12, 14] }\n'
    )
    assert flags.normalised() == load_spec(f).normalised()
    assert [s.label for s in settings(flags)] == [
        "cloudflare-os tail_ratio=0.2 trigger_ratio=0.7",
        "cloudflare-os tail_ratio=0.2 trigger_ratio=0.8",
        "none",
    ]
    assert [s.label for s in flags.sources] == ["coding-agent turns=12", "coding-agent turns=14"]
    # -P before any --policy, a spec mixed with grid flags, and --seed are all one-line errors
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", "--out", "x", "-P", "a=1", "--policy", "none"])
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--policy", "none"]) == 2
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--window", "9000"]) == 2
    assert main(["sweep", "--policy", "none", "--scenario", "coding-agent", "--seed", "3", "--out", "x"]) == 2
    assert main(["sweep", "--policy", "nnone", "--scenario", "coding-agent", "--out", str(tmp_path / "o")]) == 2
    assert "Did you mean 'none'" in capsys.readouterr().err


# -- the grid and run keys ----------------------------------------------------------------------------------
def test_identical_grid_entries_run_once() -> None:
    spec = SweepSpec(
        (PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.85", "0.850")),)), PolicyGrid("cloudflare-os")),
        (Source("scenario", "coding-agent", TINY),),
    )
    assert [s.label for s in settings(spec)] == ["cloudflare-os trigger_ratio=0.85"]


def test_run_keys_are_unique_and_change_with_the_run_config() -> None:
    tasks, shared, total = plan(tiny_spec(seeds=(0, 1, 2)))
    keys = [r.run_key for t in tasks for r in t.runs]
    assert total == len(keys) == 3 * 3 and len(set(keys)) == len(keys)
    assert len(shared) == 3  # one conversation per scenario seed
    again, _, _ = plan(tiny_spec(seeds=(0, 1, 2)))
    assert [r.run_key for t in again for r in t.runs] == keys
    other, _, _ = plan(tiny_spec(seeds=(0, 1, 2), window=13_000))
    assert not set(keys) & {r.run_key for t in other for r in t.runs}
    rest, _, total2 = plan(tiny_spec(seeds=(0, 1, 2)), done=set(keys[:4]))
    assert total2 == total and [r.run_key for t in rest for r in t.runs] == keys[4:]


def test_a_retention_file_rewritten_in_place_never_reuses_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "retention.json"
    model = load_model(None).to_json()
    path.write_text(json.dumps(model), encoding="utf-8")

    def keys() -> set[str]:
        spec = SweepSpec(
            (PolicyGrid("cloudflare-os"),),
            (Source("scenario", "coding-agent", TINY),),
            (0,),
            normalise_run({"window": 12_000, "summariser": {"retention": str(path)}}, "test"),
        )
        return {r.run_key for t in plan(spec)[0] for r in t.runs}

    first = keys()
    assert keys() == first  # the same bytes: the same runs
    model["summary_tokens"] += 1  # ``csim calibrate --retention --out`` the same path, with another fit
    path.write_text(json.dumps(model), encoding="utf-8")
    load_model.cache_clear()  # a new process would read it afresh
    assert not keys() & first


def test_a_recording_runs_once_per_seed_with_the_same_conversation() -> None:
    from sim.formats.importing import recorded_conversations

    n = len(recorded_conversations(NATIVE, "native")[0])
    spec = SweepSpec((PolicyGrid("none"),), (Source("conversation", str(NATIVE), format="native"),), (0, 1))
    tasks, shared, total = plan(spec)
    assert total == 2 * n and len(shared) == n and len(tasks) == 2 * n
    assert {t.unit.seed for t in tasks} == {0, 1} and {t.unit.source for t in tasks} == {NATIVE.name}


def test_datasets_are_read_through_sim_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    import sim.sweep.grid
    from sim.formats.importing import recorded_conversations

    convs, _ = recorded_conversations(NATIVE, "native")
    calls = []
    monkeypatch.setattr(
        sim.sweep.grid,
        "dataset_conversations",
        lambda name, lenient=False: calls.append((name, lenient)) or convs,
    )
    tasks, shared, total = plan(SweepSpec((PolicyGrid("none"),), (Source("dataset", "toy", lenient=True),), (0,)))
    assert calls == [("toy", True)] and total == len(convs) and {t.unit.source_kind for t in tasks} == {"dataset"}


# -- running, resuming ---------------------------------------------------------------------------------------
def test_sweep_writes_every_run_once_and_a_rerun_skips_them(tmp_path: Path) -> None:
    out = tmp_path / "r"
    first = run_sweep(tiny_spec(), out, workers=1, progress=False)
    assert (first.total_runs, first.ran, first.skipped) == (6, 6, 0)
    res = load_results(out)
    assert res.kind == "sweep" and res.manifest["total_runs"] == 6 and res.manifest["finished"]
    assert res.runs["run_key"].is_unique and len(res.runs) == 6
    assert set(res.requests["run_key"]) == set(res.runs["run_key"])
    assert sorted(res.configs) == ["cloudflare-os trigger_ratio=0.5", "cloudflare-os trigger_ratio=0.8", "none"]
    assert res.runs["compaction_count"].sum() == len(res.compactions) > 0
    assert res.runs["violation_count"].sum() == len(res.violations)
    cf = res.runs[res.runs["policy"] == "cloudflare-os"]
    assert set(json.loads(cf["params"].iloc[0])) == {"trigger_ratio", "tail_ratio"}  # full params as JSON
    again = run_sweep(tiny_spec(), out, workers=1, progress=False)
    assert (again.ran, again.skipped, again.parts_written) == (0, 6, 0)
    pd.testing.assert_frame_equal(load_results(out).requests, res.requests)
    with pytest.raises(InvalidConfig, match="different sweep"):
        run_sweep(tiny_spec(seeds=(0, 1, 2)), out, workers=1, progress=False)


def test_one_worker_counts_each_text_once_across_configurations(monkeypatch: pytest.MonkeyPatch) -> None:
    from sim.core import tokenizers

    one = SweepSpec((PolicyGrid("none"),), (Source("scenario", "coding-agent", TINY),), (0,))
    two = SweepSpec(
        (PolicyGrid("none"), PolicyGrid("sliding-window", (("trigger_ratio", ("0.99",)),))), one.sources, (0,)
    )
    counts = []
    for spec in (one, two):
        monkeypatch.setattr(tokenizers, "_SHARED", {})
        tasks, shared, _ = plan(spec)
        run_task(shared[tasks[0].unit.key], tasks[0])
        counts.append(tokenizers.get_tokenizer("cl100k_base").calls)
    assert counts[0] > 0 and counts[1] == counts[0]


def test_progress_prints_plain_lines_off_a_terminal() -> None:
    buf = io.StringIO()
    bar = Progress(40, 0, stream=buf)
    for _ in range(40):
        bar.advance(1)
    lines = buf.getvalue().splitlines()
    assert lines[-1].startswith("sweep: 40/40 runs done")
    assert 1 < len(lines) <= 21 and all("runs/s" in ln for ln in lines)


def test_a_failing_run_names_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("policy bug")

    monkeypatch.setattr("policies.baselines.NoCompaction.decide", boom)
    with pytest.raises(sweep.RunFailed, match="'none' on conversation 'coding-agent-seed0-.*' seed 0.*policy bug"):
        run_sweep(tiny_spec(seeds=(0,)), tmp_path / "r", workers=1, progress=False)


# -- calibration ----------------------------------------------------------------------------------------------
def _calibration_file(tmp_path: Path) -> tuple[Path, object]:
    from sim.calibration import files
    from sim.calibration import fit as cal

    fit = cal.Calibration(
        "anthropic",
        "native",
        "cl100k_base",
        cal.Coefficients(5_000, 20, 1.1, 300),
        10,
        cal.HeldOut("conversation", 9, 10, 0, 0, 0, 0),
        "s",
        "c",
    )
    return files.save([fit], tmp_path / "fit.json"), fit


def test_a_calibrated_sweep_reports_provider_counts_and_keys_its_runs_apart(tmp_path: Path) -> None:
    path, fit = _calibration_file(tmp_path)
    raw = tiny_spec(seeds=(0,))
    calibrated = SweepSpec(
        raw.policies, raw.sources, raw.seeds, normalise_run({"window": 12_000, "calibration": str(path)}, "test")
    )
    tasks_raw, shared, _ = plan(raw)
    tasks_cal, _, _ = plan(calibrated)
    assert tasks_cal[0].run_config.calibration == fit and tasks_raw[0].run_config.calibration is None
    assert {r.run_key for t in tasks_raw for r in t.runs}.isdisjoint(r.run_key for t in tasks_cal for r in t.runs)
    a = typed(run_task(shared[tasks_raw[0].unit.key], tasks_raw[0])["requests"], SWEEP_REQUEST_COLUMNS)
    b = typed(run_task(shared[tasks_cal[0].unit.key], tasks_cal[0])["requests"], SWEEP_REQUEST_COLUMNS)
    first = a[a["request_kind"] == "agent"].iloc[0]
    got = b[(b["request_kind"] == "agent") & (b["config"] == first["config"])].iloc[0]
    assert got["context_tokens"] == fit.apply(int(first["context_tokens"]), int(first["messages_in_view"]))  # type: ignore[attr-defined]


def test_spec_calibration_path_is_relative_to_the_spec_and_a_missing_file_says_so(tmp_path: Path) -> None:
    _calibration_file(tmp_path)
    (tmp_path / "s.toml").write_text(
        '[run]\ncalibration = "fit.json"\n[[policies]]\npolicy = "none"\n'
        '[[scenarios]]\nname = "support-chat"\nparams = { turns = 5 }\n'
    )
    spec = load_spec(tmp_path / "s.toml")
    assert dict(spec.run)["calibration"] == str((tmp_path / "fit.json").resolve())
    assert plan(spec)[0][0].run_config.calibration is not None
    (tmp_path / "fit.json").unlink()
    with pytest.raises(InvalidConfig, match="fit.json.*cannot be read"):
        plan(spec)


def test_the_all_policies_spec_names_every_policy_and_scenario() -> None:
    """``datasets/sweeps/all-policies.toml`` (issue 16): every registered policy at its defaults over every
    bundled scenario, so a policy added to the catalogue must be added there too."""
    from policies import POLICIES
    from sim.scenarios import SCENARIOS, _load

    _load()
    spec = load_spec(ROOT / "datasets" / "sweeps" / "all-policies.toml")
    assert [s.label for s in settings(spec)] == sorted(POLICIES.names())
    assert sorted(s.name for s in spec.sources) == sorted(SCENARIOS.names())
    assert all(not s.params for s in spec.sources)
    assert dict(spec.run)["agent"] == "reactive"
