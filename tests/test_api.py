"""sim.api: what a notebook calls. api.run gives exactly the tables of a one-configuration sweep, in memory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from policies.baselines import NoCompaction
from sim import api
from sim.core.errors import InvalidConfig, UnknownName

SMALL = {"window": 20_000, "tokenizer": "chars4"}


def test_run_in_memory_equals_the_sweep_written_to_disk(tmp_path: Path) -> None:
    mem = api.run(
        "sliding-window",
        {"trigger_ratio": 0.7},
        scenario="research-agent",
        seeds=[0, 1],
        **SMALL,
    )
    disk = api.sweep(
        policies={"sliding-window": {"trigger_ratio": 0.7}},
        scenarios={"research-agent": {}},
        seeds="0-1",
        out=tmp_path / "s",
        progress=False,
        **SMALL,
    )
    assert len(mem.runs) == 2 and mem.runs["compaction_count"].sum() > 0, "the case must compact"
    for name in ("runs", "requests", "facts", "compactions", "violations"):
        pd.testing.assert_frame_equal(getattr(mem, name), getattr(disk, name), obj=name)
    pd.testing.assert_frame_equal(api.load(tmp_path / "s").runs, disk.runs)


def test_a_policy_class_and_a_grid_compare_against_a_baseline() -> None:
    res = api.run_spec(
        api.spec(
            {"none": {}, "sliding-window": {"trigger_ratio": [0.6, 0.9]}}, scenarios="research-agent", seeds=0, **SMALL
        )
    )
    assert sorted(res.configs) == ["none", "sliding-window trigger_ratio=0.6", "sliding-window trigger_ratio=0.9"]
    table = api.compare(res, baseline="none")
    assert set(table["config"]) == set(res.configs)
    mine = api.run(NoCompaction, scenario="research-agent", **SMALL)
    assert mine.runs["policy"].iloc[0] == "none"  # the class resolves to its registered name


def test_bad_arguments_say_what_to_do() -> None:
    with pytest.raises(InvalidConfig, match="exactly one of scenario=, conversation= or dataset="):
        api.run("none", **SMALL)
    with pytest.raises(InvalidConfig, match="use sim.api.sweep for a grid"):
        api.run("sliding-window", {"trigger_ratio": [0.6, 0.7]}, scenario="research-agent")
    with pytest.raises(UnknownName, match="windw"):
        api.run("none", scenario="research-agent", windw=1000)
    with pytest.raises(InvalidConfig, match="not both"):
        api.sweep("spec.toml", policies="none", out="x")


def test_a_sweep_keeps_logs_when_asked_and_api_log_reads_them(tmp_path: Path) -> None:
    from sim.cli.main import main

    args = ["sweep", "--policy", "sliding-window", "-P", "trigger_ratio=0.7", "--scenario", "research-agent"]
    args += ["--window", "20000", "--tokenizer", "chars4", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    assert main([*args, "--keep-logs", "--out", str(tmp_path / "kept")]) == 0
    plain, kept = api.load(tmp_path / "plain"), api.load(tmp_path / "kept")
    pd.testing.assert_frame_equal(plain.requests, kept.requests)  # keeping logs changes no result
    key = str(kept.runs["run_key"].iloc[0])
    events = api.log(tmp_path / "kept", key)
    sent = [e for e in events if e["kind"] == "request"]
    made = [e for e in events if e["kind"] == "compaction"]
    assert len(sent) == len(kept.requests) and len(made) == len(kept.compactions) > 0
    with pytest.raises(InvalidConfig, match="--keep-logs"):
        api.log(tmp_path / "plain", key)


def test_the_demo_compares_the_representative_policies() -> None:
    from policies import POLICIES
    from sim.report.demo import DEMO_SPEC

    names = [p["policy"] for p in DEMO_SPEC["policies"]]  # type: ignore[index]
    assert set(names) <= set(POLICIES.names())
    representative = {"none", "cloudflare-os", "effect-agent", "claude-code", "codex", "anthropic-clear-tool-uses"}
    assert representative | {"openhands-default", "inspect-auto"} <= set(names)
