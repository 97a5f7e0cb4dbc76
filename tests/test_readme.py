"""The README's example policy is real code: it imports, registers through module:attr, and passes csim check."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from policies.base import make_policy
from sim.checker import check_policy

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def readme_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    code = next(b for b in blocks if "class KeepLastUnits" in b)
    pkg = tmp_path / "readme_example"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "policies.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "readme_example.policies:KeepLastUnits"
    for name in [m for m in sys.modules if m.startswith("readme_example")]:
        del sys.modules[name]


def test_readme_policy_loads_with_params(readme_module: str) -> None:
    policy = make_policy(readme_module, {"units": "4"})
    assert policy.config.units == 4


def test_readme_policy_is_checked_and_its_revert_gap_is_reported(readme_module: str) -> None:
    # The README example does not keep reverts with their changes; csim check must say so.
    report = check_policy(readme_module, {}, examples=25)
    assert report.passed or "revert-resolution" in report.render(), report.render()
