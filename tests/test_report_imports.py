"""Reading a results folder never imports code it names (issue 12): a manifest naming ``module:Class`` as a
policy makes no import in ``load_results``, ``sim.api.load``, ``csim compare`` or ``csim report``; the report
replays a run of user code only when told to on the command line (``--policy module:Class``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sim import api
from sim.cli.main import main
from sim.core.config import normalise_run
from sim.core.errors import InvalidConfig
from sim.report import data as rd
from sim.sweep.compare import compare
from sim.sweep.driver import run_sweep
from sim.sweep.results import load_results
from sim.sweep.spec import PolicyGrid, Source, SweepSpec

MODULE = "csim_test_userpolicy"
USER_POLICY = f'''
import pathlib
pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")
from policies.baselines import NoCompaction

class Mine(NoCompaction):
    """A user's policy: the bundled none, under another name."""

    name = "{MODULE}:Mine"
'''


def _spec(policy: str) -> SweepSpec:
    return SweepSpec(
        (PolicyGrid(policy, ()), PolicyGrid("sliding-window", (("trigger_ratio", ("0.7",)),))),
        (Source("scenario", "coding-agent", (("turns", "4"), ("huge_prob", "0"))),),
        (0,),
        normalise_run({"window": 12000}, "test"),
    )


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding a user's policy module, on sys.path and the current directory, as a user's would be."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(USER_POLICY)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(folder)
    yield folder
    sys.modules.pop(MODULE, None)


def _forget(folder: Path) -> None:
    sys.modules.pop(MODULE, None)
    (folder / "IMPORTED").unlink(missing_ok=True)


def _not_imported(folder: Path) -> bool:
    return MODULE not in sys.modules and not (folder / "IMPORTED").exists()


@pytest.fixture
def shared_results(user_dir: Path, tmp_path: Path) -> Path:
    """A results folder made with bundled policies, then edited to name the user's module (a shared folder)."""
    out = tmp_path / "shared"
    run_sweep(_spec("none"), out, workers=1, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["spec"]["policies"][0]["policy"] = f"{MODULE}:Mine"
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert _not_imported(user_dir)
    return out


def test_reading_results_that_name_a_module_imports_nothing(shared_results: Path, user_dir: Path) -> None:
    res = load_results(shared_results)
    api.load(shared_results)
    compare(res)
    rd.run_row(res, rd.choose_run(res))
    assert rd.user_code(res) == [f"{MODULE}:Mine"]
    assert set(rd.replayable(res, shared_results)) == set(res.runs.loc[res.runs["policy"] != "none", "run_key"])
    assert _not_imported(user_dir)


def test_the_run_page_log_of_a_run_named_as_user_code_is_refused_not_imported(
    shared_results: Path, user_dir: Path
) -> None:
    res = load_results(shared_results)
    key = res.runs.loc[res.runs["policy"] == "none", "run_key"].iloc[0]
    with pytest.raises(InvalidConfig, match=rf"never imports it.*--keep-logs.*--policy {MODULE}:Mine"):
        rd.run_log(res, shared_results, key)
    other = res.runs.loc[res.runs["policy"] == "sliding-window", "run_key"].iloc[0]
    assert rd.run_log(res, shared_results, other).events  # a bundled policy's run is still replayed
    assert _not_imported(user_dir)


def test_csim_report_refuses_before_running_a_notebook(
    shared_results: Path, user_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = load_results(shared_results)
    key = res.runs.loc[res.runs["policy"] == "none", "run_key"].iloc[0]
    assert main(["report", str(shared_results), "--out", str(tmp_path / "rep"), "--run", key]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"pass --policy {MODULE}:Mine to allow it" in err
    assert not (tmp_path / "rep" / "run.ipynb").exists()
    assert _not_imported(user_dir)


def test_user_code_is_replayed_when_the_command_line_allows_it(user_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    run_sweep(_spec(f"{MODULE}:Mine"), out, workers=1, progress=False)  # the user ran their own code
    _forget(user_dir)
    res = load_results(out)
    key = res.runs.loc[res.runs["config"].str.startswith(MODULE), "run_key"].iloc[0]
    with pytest.raises(InvalidConfig, match="never imports it"):
        rd.run_log(res, out, key)
    assert _not_imported(user_dir)
    log = rd.run_log(res, out, key, allow=[f"{MODULE}:Mine"])
    assert log.source.startswith("replayed") and log.events
    assert (user_dir / "IMPORTED").exists()


def test_a_kept_log_needs_no_import(user_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "kept"
    run_sweep(_spec(f"{MODULE}:Mine"), out, workers=1, progress=False, logs=True)
    _forget(user_dir)
    res = load_results(out)
    assert set(rd.replayable(res, out)) == set(res.runs["run_key"])
    key = res.runs.loc[res.runs["config"].str.startswith(MODULE), "run_key"].iloc[0]
    assert rd.run_log(res, out, key).source.startswith("kept in")
    assert _not_imported(user_dir)
