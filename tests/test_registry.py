"""The registries: names found on demand, every name listed, a miss answered with the closest name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policies import POLICIES, registered_in_sources
from sim.core.errors import UnknownName

ROOT = Path(__file__).resolve().parents[1]


def test_the_names_read_from_the_sources_are_the_names_the_modules_register() -> None:
    """Every policy the modules register when imported is found by reading the sources, under its own module."""
    registered = {e.name: e.obj.__module__ for e in POLICIES}
    assert registered == registered_in_sources()


def test_asking_for_one_policy_imports_only_its_module_and_a_miss_lists_every_policy() -> None:
    code = (
        "import sys\n"
        "from policies import POLICIES\n"
        "POLICIES.get('claude-code')\n"
        "mine = {m for m in sys.modules if m.startswith('policies.')}\n"
        "print(sorted(mine))\n"
        "print(len(POLICIES))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT).stdout
    first, count = out.splitlines()
    assert "policies.claude_code" in first and "policies.codex" not in first
    assert int(count) == len(registered_in_sources()) >= 60
    with pytest.raises(UnknownName, match="claude-code"):
        POLICIES.get("claude-cod")
