"""The results loader: a sweep directory and a ``csim run`` directory come back in the same shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cli import main
from sim.errors import InvalidConfig
from sim.results import TABLES, config_label, load_results, part_name
from sim.sweep import PolicyGrid, Source, SweepSpec, normalise_run, run_sweep

ARGS = [
    "--policy",
    "cloudflare-os",
    "-P",
    "trigger_ratio=0.5",
    "--scenario",
    "coding-agent",
    "-S",
    "turns=12",
    "-S",
    "huge_prob=0",
    "--window",
    "12000",
]


def test_a_csim_run_directory_loads_like_a_sweep(tmp_path: Path) -> None:
    assert main(["run", *ARGS, "--seed", "0", "--out", str(tmp_path / "run")]) == 0
    one = load_results(tmp_path / "run")
    spec = SweepSpec(
        (PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.5",)),)),),
        (Source("scenario", "coding-agent", (("turns", "12"), ("huge_prob", "0"))),),
        (0,),
        normalise_run({"window": 12000}, "test"),
    )
    run_sweep(spec, tmp_path / "sweep", workers=1, progress=False)
    many = load_results(tmp_path / "sweep")
    assert one.kind == "run" and many.kind == "sweep"
    assert one.runs["config"].tolist() == ["cloudflare-os trigger_ratio=0.5"]
    # a run directory's key has no code digest (run.json records the package version only)
    assert one.runs["run_key"].str.len().tolist() == many.runs["run_key"].str.len().tolist() == [32]
    assert one.runs.drop(columns="run_key").equals(many.runs.drop(columns="run_key"))
    for name, cols in TABLES.items():
        a, b = getattr(one, name), getattr(many, name)
        assert list(a.columns) == list(b.columns) == list(cols), name
        assert len(a) == len(b), name
    assert len(one.compactions) == int(one.runs["compaction_count"].iloc[0]) > 0
    # violations come back from run.json's strings with their fields
    assert one.violations[["turn", "invariant", "request_kind"]].equals(
        many.violations[["turn", "invariant", "request_kind"]]
    )
    assert one.requests["context_tokens"].tolist() == many.requests["context_tokens"].tolist()
    assert one.summary is None


def test_an_empty_sweep_has_typed_empty_frames(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "sweep", "spec": {}, "total_runs": 0}))
    res = load_results(tmp_path)
    for name, cols in TABLES.items():
        frame = getattr(res, name)
        assert frame.empty and {c: str(t) for c, t in frame.dtypes.items()} == {c: str(t) for c, t in cols.items()}


def test_what_is_not_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="does not exist"):
        load_results(tmp_path / "missing")
    with pytest.raises(InvalidConfig, match="neither manifest.json"):
        load_results(tmp_path)


@given(
    st.lists(st.text(alphabet="0123456789abcdef", min_size=4, max_size=8), min_size=1, max_size=6, unique=True),
    st.randoms(use_true_random=False),
)
def test_a_part_is_named_by_its_runs_in_any_order(keys: list[str], rnd: object) -> None:
    shuffled = list(keys)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert part_name(shuffled) == part_name(keys)
    assert part_name(keys + ["zzzz"]) != part_name(keys)


def test_labels_sort_parameters_and_spell_values_plainly() -> None:
    assert config_label("p", {"b": 0.8, "a": None, "c": True}) == "p a=unset b=0.8 c=true"
    assert config_label("none", {}) == "none"
