"""What a new user meets on the command line (issue 33, item 5): ``--format auto`` by default, a wrong format that
names the one that reads, a note when seeds cannot change a recorded run, errors that list what there is."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.cli.main import main
from tests.test_fidelity import RECORDED

SHORT = RECORDED / "claude-code" / "short.jsonl"


def _needs_recording() -> None:
    if not SHORT.is_file():
        pytest.skip(f"recorded sample not found at {SHORT} (set CSIM_RECORDED to its folder)")


def test_run_reads_a_recording_with_the_default_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_recording()
    assert main(["run", "--policy", "none", "--conversation", str(SHORT), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "completed" in out and "note: seed" not in out  # the default seed: nothing to say


def test_a_wrong_format_names_the_one_that_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_recording()
    args = ["run", "--policy", "none", "--conversation", str(SHORT), "--format", "native", "--out", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "it reads as claude-code: give --format claude-code, or --format auto (the default)" in err


def test_a_seed_on_a_recording_says_what_it_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_recording()
    args = ["run", "--policy", "none", "--conversation", str(SHORT), "--seed", "3", "--out", str(tmp_path / "r")]
    assert main(args) == 0
    assert "note: seed 3 on a recording: a recording fixes the messages and their times" in capsys.readouterr().out


def test_seeds_that_change_nothing_on_recordings_are_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_recording()
    args = ["sweep", "--policy", "none", "--conversation", str(SHORT), "--seeds", "0-2", "--quiet", "--workers", "1"]
    assert main([*args, "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "note: seeds 0, 1, 2 gave identical runs for all 1 recorded (configuration, conversation) pairs" in out


def test_an_unknown_model_lists_the_table_s_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--policy", "none", "--scenario", "coding-agent", "--model", "claude-sonet-4-5"]
    assert main([*args, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "Did you mean 'claude-sonnet-4-5'?" in err and "(none)" not in err and "claude-haiku-4-5" in err
