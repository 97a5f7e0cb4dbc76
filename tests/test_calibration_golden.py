"""``csim calibrate`` on the shared recordings gives the figures it gave before the fit was made linear.

The golden files in ``tests/golden/calibration/`` hold, for each shared recording folder, what ``csim calibrate``
printed and every coefficient and held-out error of the file it wrote, recorded with the implementation that
rebuilt every leave-one-out fit from the rows (commit a9f054a, before per-conversation sufficient statistics).
The recording path is written relative to the recordings folder, so the files hold no machine's paths.
``CSIM_UPDATE_GOLDEN=1`` rewrites them (only after a change meant to move the figures, said in its commit).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sim.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
GOLDEN = ROOT / "tests" / "golden" / "calibration"

#: (golden name, recordings folder under RECORDED, extra arguments)
SOURCES = [
    ("claude-code", "claude-code", []),
    ("openhands", "openhands", []),
    ("pydantic-ai-cassettes", "pydantic-ai-cassettes", ["--format", "vcr-cassette", "--lenient"]),
]


def calibrate_figures(folder: Path, extra: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """What ``csim calibrate`` prints and writes for ``folder``, with the folder's path made relative."""
    assert main(["calibrate", str(folder), *extra, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.replace(str(RECORDED), "$RECORDED").replace(str(out), "$OUT")
    written = json.loads(out.read_text(encoding="utf-8"))
    for c in written["calibrations"]:
        c["fitted_on"] = c["fitted_on"].replace(str(RECORDED), "$RECORDED")
    return {"args": [str(folder.relative_to(RECORDED)), *extra], "stdout": printed, **written}


@pytest.mark.parametrize(("name", "sub", "extra"), SOURCES, ids=[s[0] for s in SOURCES])
def test_calibrate_figures_match_the_golden_file(name: str, sub: str, extra: list[str], tmp_path, capsys) -> None:
    folder = RECORDED / sub
    if not folder.is_dir():
        pytest.skip(f"recorded sample not found at {folder} (set CSIM_RECORDED to its folder)")
    got = calibrate_figures(folder, extra, tmp_path / "cal.json", capsys)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("CSIM_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(path.read_text(encoding="utf-8"))
    if [c["checksum"] for c in got["calibrations"]] != [c["checksum"] for c in want["calibrations"]]:
        pytest.fail(f"the recordings in {folder} are not the ones {path} was recorded on (their checksum differs)")
    assert got["stdout"] == want["stdout"]
    for g, w in zip(got["calibrations"], want["calibrations"], strict=True):
        where = g["provider"] + "/" + g["format"] + "/" + g["agent"]
        assert _differences(g, w) == [], where  # every coefficient and error, to the last few digits


def _differences(got: object, want: object, path: str = "") -> list[str]:
    """Where ``got`` and ``want`` differ: equal structure and strings, floats within 1e-9 relative (1e-12
    absolute). The fit's floats move in their last digit or two with the linear-algebra library a machine installs
    (numpy's BLAS sums in another order), which says nothing of the calibration; printed figures compare exactly."""
    if isinstance(want, dict) and isinstance(got, dict):
        if got.keys() != want.keys():
            return [f"{path}: keys {sorted(got)} != {sorted(want)}"]
        return [d for k in want for d in _differences(got[k], want[k], f"{path}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} items != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in _differences(g, w, f"{path}[{i}]")]
    if isinstance(want, float) and isinstance(got, float):
        return [] if got == pytest.approx(want, rel=1e-9, abs=1e-12) else [f"{path}: {got!r} != {want!r}"]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]
