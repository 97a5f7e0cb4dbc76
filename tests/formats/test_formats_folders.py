"""A folder of recordings that also holds other files: those are named as skipped, with why, and the rest is read.

Benchmark runs leave their recordings among other files: mini-swe-agent writes ``preds.json``, exit statuses
and a log next to one ``<id>/<id>.traj.json`` per instance; OpenHands writes ``metadata.json`` and the
SWE-bench predictions ``output.swebench.jsonl`` next to ``output.jsonl``. Every command that reads a folder
(``csim import``, ``calibrate``, ``fidelity``, ``run --conversation DIR``) goes through
:func:`sim.formats.importing.import_paths`, so they are tested here through it and through two commands.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sim.cli.main import main
from sim.core.errors import FormatError
from sim.formats.importing import import_paths

OTHERS = {  # name -> what a results folder holds besides the recordings (written by us)
    "results_summary.json": '{"total_instances": 2, "resolved_instances": 1, "resolved_ids": ["acme__widget-42"]}',
    "preds.json": '{"acme__widget-42": {"model_name_or_path": "m", "instance_id": "acme__widget-42", '
    '"model_patch": "diff --git a/x b/x"}}',
    "exit_statuses_1.yaml": "Submitted:\n- acme__widget-42\n- acme__widget-43\n",
    "README.md": "# a results folder\n",
    "minisweagent.log": "INFO started\n",
}


@pytest.fixture
def mini_results(golden: Path, tmp_path: Path) -> Path:
    """A mini-swe-agent results folder: two trajectories (the text-mode golden, twice) and the other files."""
    root = tmp_path / "results"
    doc = json.loads((golden / "mini_swe_agent.traj.json").read_text(encoding="utf-8"))
    for iid in ("acme__widget-42", "acme__widget-43"):
        (root / iid).mkdir(parents=True)
        (root / iid / f"{iid}.traj.json").write_text(json.dumps({**doc, "instance_id": iid}), encoding="utf-8")
    for name, text in OTHERS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _passed_over(root: Path, fmt: str) -> dict[str, str]:
    report = import_paths([root], fmt)
    return {f.path.name: f.passed_over or "" for f in report.passed_over}


@pytest.mark.parametrize("fmt", ["auto", "mini-swe-agent"])
def test_other_files_are_named_with_why_and_the_recordings_read(mini_results: Path, fmt: str) -> None:
    report = import_paths([mini_results], fmt)
    assert sorted(c.id for c in report.conversations) == ["acme__widget-42", "acme__widget-43"]
    assert {f.format for f in report.read_files} == {"mini-swe-agent"}
    why = _passed_over(mini_results, fmt)
    assert sorted(why) == sorted(OTHERS)
    assert why["README.md"].startswith("not a recording (a folder's .json,") and "minisweagent.log" in why
    expected = "not a recording: no format recognises it" if fmt == "auto" else "not read as mini-swe-agent"
    assert why["results_summary.json"].startswith(expected) and why["preds.json"].startswith(expected)


def test_a_broken_recording_in_the_folder_is_still_an_error(mini_results: Path) -> None:
    bad = mini_results / "acme__widget-43" / "acme__widget-43.traj.json"
    bad.write_text(bad.read_text(encoding="utf-8")[:-40], encoding="utf-8")  # still sniffed, cut short
    with pytest.raises(FormatError) as info:
        import_paths([mini_results], "mini-swe-agent")
    assert info.value.path == str(bad)
    report = import_paths([mini_results], "mini-swe-agent", lenient=True)
    assert [c.id for c in report.conversations] == ["acme__widget-42"]
    assert [f.path for f in report.read_files if f.error] == [bad]
    assert any(line.startswith(f"{bad}: not read: ") for line in report.notes())


def test_a_file_named_on_the_command_line_is_read_as_asked(mini_results: Path) -> None:
    with pytest.raises(FormatError) as info:  # named, it is not passed over: the importer says what is wrong
        import_paths([mini_results / "results_summary.json"], "mini-swe-agent")
    assert "without a 'messages' list" in info.value.problem


def test_csim_import_and_calibrate_read_the_folder(
    mini_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(mini_results), "--out", str(tmp_path / "imported")]) == 0
    out = capsys.readouterr().out
    assert f"{mini_results / 'results_summary.json'}: skipped: not a recording: no format recognises it" in out
    assert out.splitlines()[-1].startswith("total: 2 files, 2 conversations")
    assert out.splitlines()[-1].endswith("passed over 5 other files (not recordings)")
    cal = tmp_path / "cal.json"  # the command that stopped at results_summary.json
    assert main(["calibrate", str(mini_results), "--format", "mini-swe-agent", "--out", str(cal)]) == 0
    captured = capsys.readouterr()
    assert "6 recorded requests with usage" in captured.out and cal.is_file()
    skipped = [line.split(": skipped: ")[0] for line in captured.err.splitlines() if ": skipped: " in line]
    assert skipped == [str(mini_results / n) for n in sorted(OTHERS)]


def test_run_and_calibrate_read_a_folder_through_the_same_code(mini_results: Path) -> None:
    from sim.cli.calibration import load_source
    from sim.formats.importing import recorded_conversations

    convs, notes = recorded_conversations(mini_results, "mini-swe-agent")
    assert sorted(c.id for c in convs) == ["acme__widget-42", "acme__widget-43"]
    assert sorted(n.split(": skipped: ")[0] for n in notes) == [str(mini_results / n) for n in sorted(OTHERS)]
    groups, _, digest = load_source(str(mini_results), None)  # no --format: auto
    assert [(fmt, sorted(c.id for c in cs)) for fmt, cs in groups] == [
        ("mini-swe-agent", ["acme__widget-42", "acme__widget-43"])
    ]
    (mini_results / "README.md").write_text("changed\n", encoding="utf-8")
    assert load_source(str(mini_results), None)[2] == digest  # the checksum covers the recordings read only


def test_an_openhands_evaluation_folder(golden: Path, tmp_path: Path) -> None:
    """``output.jsonl`` is read; the predictions and metadata beside it are not taken for recordings."""
    root = tmp_path / "CodeActAgent" / "claude_maxiter_30"
    root.mkdir(parents=True)
    shutil.copy(golden / "openhands_eval.jsonl", root / "output.jsonl")
    (root / "metadata.json").write_text(
        json.dumps({"agent_class": "CodeActAgent", "llm_config": {"model": "m"}, "max_iterations": 30}),
        encoding="utf-8",
    )
    (root / "output.swebench.jsonl").write_text(
        '{"instance_id": "acme__widget-7", "model_patch": "diff", "model_name_or_path": "m"}\n', encoding="utf-8"
    )
    report = import_paths([tmp_path], "auto")
    assert [(f.path.name, f.format) for f in report.read_files] == [("output.jsonl", "openhands-eval")]
    assert sorted(f.path.name for f in report.passed_over) == ["metadata.json", "output.swebench.jsonl"]
    assert [c.id for c in report.conversations] == ["acme__widget-7", "acme__widget-11"]
