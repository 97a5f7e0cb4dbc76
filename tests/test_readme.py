"""The README's example policies are real code: they import, load through module:attr, and pass csim check."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from policies import make_policy
from sim.replay.checker import check_policy

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.fixture
def readme_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    code = "\n".join(b for b in _blocks() if "mypkg/policies.py" in b)
    pkg = tmp_path / "readme_example"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "policies.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "readme_example.policies"
    for name in [m for m in sys.modules if m.startswith("readme_example")]:
        del sys.modules[name]


def test_readme_policy_loads_with_params(readme_module: str) -> None:
    policy = make_policy(f"{readme_module}:KeepLastUnits", {"units": "4"})
    assert policy.config.units == 4


@pytest.mark.parametrize(("name", "params"), [("KeepLastUnits", {}), ("ClearToolUses", {"trigger_tokens": "2000"})])
def test_readme_policies_pass_csim_check(readme_module: str, name: str, params: dict[str, str]) -> None:
    # The README says both pass `csim check --examples 500`; 150 here keeps the suite fast, and the derandomised
    # ci profile makes the examples the same on every run.
    report = check_policy(f"{readme_module}:{name}", params, examples=150)
    assert report.passed, report.render()
    assert report.examples == 150


def test_readme_clear_tool_uses_example_is_at_most_30_lines() -> None:
    block = next(b for b in _blocks() if "class ClearToolUses" in b)
    body = block[block.index("@dataclass") :].strip().splitlines()
    assert len(body) <= 30, len(body)


def test_readme_policy_table_lists_every_registered_policy() -> None:
    from policies import POLICIES

    text = README.read_text()
    table = text[text.index("## Policies") : text.index("## Checking a policy")]
    rows = {line.split("|")[1].strip().strip("`") for line in table.splitlines() if line.startswith("| `")}
    assert rows == set(POLICIES.names())


def test_readme_formats_table_lists_every_registered_format() -> None:
    """The table under "Recorded conversations" and ``csim list formats`` name the same formats."""
    from sim.formats import FORMATS, _load

    _load()
    text = README.read_text()
    table = text[text.index("## Recorded conversations") : text.index("### Public datasets")]
    rows = [line.split("|")[1].strip().strip("`") for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(set(rows))
    assert set(rows) == set(FORMATS.names())
