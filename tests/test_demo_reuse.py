"""``csim demo`` run again reuses its finished runs, as a sweep does, and says so; other code starts afresh.

The demo's grid is swapped for a small one here (two policies, one short scenario, one seed): what is tested is
how a second demo treats the folder of the first, not the grid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sim.sweep.driver
import sim.sweep.grid
from sim.core.errors import InvalidConfig
from sim.report import demo as demo_module

SMALL = {
    "sweep": {"name": "demo"},
    "run": {"window": 200_000},
    "policies": [{"policy": "none"}, {"policy": "sliding-window"}],
    "scenarios": [{"name": "support-chat"}],
}


@pytest.fixture
def small_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_module, "DEMO_SPEC", SMALL)


def _parts(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "parts").iterdir())


def test_a_second_demo_reuses_every_run_and_says_so(small_demo, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "demo"
    first = demo_module.demo(out, seeds=(0,), report=False)
    parts = _parts(out)
    capsys.readouterr()

    def no_run(*args: object) -> None:
        raise AssertionError("a run was replayed although the demo's folder held it finished")

    monkeypatch.setattr(sim.sweep.driver, "run_task", no_run)
    again = demo_module.demo(out, seeds=(0,), report=False)
    assert "demo: reused 2 of 2 runs finished in" in capsys.readouterr().err
    assert _parts(out) == parts
    assert again.equals(first)


def test_a_demo_made_by_other_code_is_replaced_saying_why(small_demo, tmp_path, capsys, monkeypatch) -> None:
    """The code digest is in every run key (``package_version``): after an edit no run could be reused."""
    out = tmp_path / "demo"
    demo_module.demo(out, seeds=(0,), report=False)
    capsys.readouterr()
    monkeypatch.setattr(sim.sweep.grid, "code_digest", lambda policies=(): "edited")
    demo_module.demo(out, seeds=(0,), report=False)
    err = capsys.readouterr().err
    assert "(other code): none of its runs can be reused, so it is replaced" in err
    assert "reused" not in err.replace("can be reused", "")
    assert json.loads((out / "manifest.json").read_text())["code"].endswith("+code.edited")


def test_a_demo_with_other_seeds_is_replaced(small_demo, tmp_path, capsys) -> None:
    out = tmp_path / "demo"
    demo_module.demo(out, seeds=(0,), report=False)
    capsys.readouterr()
    demo_module.demo(out, seeds=(0, 1), report=False)
    assert "holds another grid (other seeds)" in capsys.readouterr().err
    assert len(json.loads((out / "manifest.json").read_text())["spec"]["seeds"]) == 2


def test_a_folder_that_is_not_the_demo_is_left_alone(small_demo, tmp_path) -> None:
    out = tmp_path / "other"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"kind": "sweep", "spec": {"name": "mine"}}))
    with pytest.raises(InvalidConfig, match="not the demo's"):
        demo_module.demo(out, seeds=(0,), report=False)
    assert (out / "manifest.json").exists()
