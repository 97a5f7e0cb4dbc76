"""Declared deviations are reported as such: the violations table says which violations the policy declares (and
why), ``csim run``'s line counts them apart, ``csim compare`` lists them with their reasons (issue 33, item 3;
issue 34, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies import POLICIES
from sim import api
from sim.cli.main import main
from sim.sweep.compare import compare, render
from sim.sweep.parts import declared_reasons, violations_text
from sim.sweep.results import Results, records


@pytest.mark.parametrize("name", [e.name for e in POLICIES if POLICIES.get(e.name).known_deviations])
def test_every_declared_deviation_says_why(name: str) -> None:
    cls = POLICIES.get(name)
    assert set(cls.deviation_reasons) == set(cls.known_deviations), f"{name}: one reason per known deviation"
    for invariant in cls.known_deviations:
        reason = cls.declared(invariant)
        assert reason and "no reason given" not in reason
    for invariant in {"tool-pairing", "live-turn", "atomic-units", "system-first"} - cls.known_deviations:
        assert cls.declared(invariant) is None


@pytest.fixture(scope="module")
def claude_code_run() -> Results:
    # a 40,000-token window makes Claude Code compact (and summarise its live turn) often within 60 requests
    return api.run("claude-code", {}, scenario="coding-agent", seeds=[0], window=40_000)


def test_violations_table_marks_declared_ones(claude_code_run: Results) -> None:
    v = claude_code_run.violations
    live = v[v["invariant"] == "live-turn"]
    assert len(live) > 0
    assert live["declared"].all()
    assert (live["reason"] == "Claude Code summarises the live turn, its last user message included").all()
    runs = claude_code_run.runs
    assert runs["declared_violations"].iloc[0] == (v["declared"]).sum() == len(v)


def test_summary_phrase_counts_declared_apart(claude_code_run: Results) -> None:
    v = claude_code_run.violations
    n = len(v)
    assert violations_text(records(v)) == f"0 violations ({n} declared: live-turn)"
    reason = "Claude Code summarises the live turn, its last user message included"
    assert declared_reasons(records(v)) == [f"{n} live-turn, declared: {reason}"]
    mixed = v.head(3).assign(declared=[True, False, False], reason=["why", None, None])
    assert violations_text(records(mixed)) == "2 violations (1 declared: live-turn)"


def test_compare_shows_declared_apart(claude_code_run: Results) -> None:
    table = compare(claude_code_run)
    n = len(claude_code_run.violations)
    assert table["violations_mean"].iloc[0] == 0
    assert table["declared_mean"].iloc[0] == n
    assert table["declared_deviations"].iloc[0].startswith(f"{n} live-turn, declared: Claude Code summarises")
    text = render(table)
    assert "Declared deviations" in text and f"claude-code: {n} live-turn, declared: Claude Code" in text


def test_csim_run_line_says_declared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    args = ["run", "--policy", "claude-code", "--scenario", "coding-agent", "--seed", "0", "--window", "40000"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "0 violations (" in printed and " declared: live-turn)" in printed
    assert "live-turn, declared: Claude Code summarises the live turn" in printed
