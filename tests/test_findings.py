"""``csim findings``: each claim is judged from the numbers (a fake runner proves both verdicts can come out),
the report says these are qualitative reproductions, and the command runs end to end on one finding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from sim.cli.main import main
from sim.core.errors import UnknownName
from sim.report.findings import context_editing, render, run_findings, to_frame


def fake_runner(numbers: dict[tuple[str, int], dict[str, float]]) -> Any:
    """A runner answering each (policy, window) with one run of the given numbers."""

    def runner(policy: str, params: dict[str, Any], **kw: Any) -> pd.DataFrame:
        row = {
            "agent_requests": 100.0,
            "total_cost_usd": 1.0,
            "retention_recall": 1.0,
            "task_success": 1.0,
            "reacquisitions": 0.0,
            "repeated_work": 0.0,
            "errors": 0.0,
            "stalls": 0.0,
            "facts_unused": 0.0,
            "extra_requests": 0.0,
            "overflows": 0.0,
            "finish_reason": "completed",
            **numbers[(policy, kw["window"])],
        }
        return pd.DataFrame([row])

    return runner


@pytest.mark.parametrize("raw_tokens, holds", [(10_000_000, True), (2_000_000, False)])
def test_a_claim_is_judged_from_the_numbers(raw_tokens: int, holds: bool) -> None:
    """clear_tool_uses at 1.5M tokens against a raw run of 10M (-85%) reproduces the large cut; against 2M
    (-25%) it does not, and the report says so."""
    runner = fake_runner(
        {
            ("none", 200_000): {"cumulative_input_tokens": 900_000, "finish_reason": "context-overflow"},
            ("none", 1_000_000): {"cumulative_input_tokens": raw_tokens},
            ("anthropic-clear-tool-uses", 200_000): {"cumulative_input_tokens": 1_500_000},
        }
    )
    finding = context_editing(runner)
    completes, cut = finding.claims
    assert completes.holds
    assert cut.holds is holds
    text = render([finding])
    assert ("**not reproduced**" in text) is not holds
    assert "qualitative reproductions of mechanisms" in text.replace("\n", " ")
    frame = to_frame([finding])
    assert list(frame["reproduced"]) == [True, holds]


def test_an_unknown_finding_is_named_with_the_choices() -> None:
    with pytest.raises(UnknownName, match="context-editing"):
        run_findings(only=["context-edit"])


def test_the_command_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end on the quickest finding, one seed: the printed table, findings.md and findings.csv."""
    assert main(["findings", "--only", "compaction-control", "--seeds", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "compaction_control" in out and "-58.6%" in out
    frame = pd.read_csv(tmp_path / "findings.csv")
    assert list(frame["finding"]) == ["compaction-control", "compaction-control"]
    assert (tmp_path / "findings.md").read_text(encoding="utf-8").startswith("# Published findings")


@pytest.mark.parametrize("costs, holds", [([1.4, 1.2, 1.5, 1.9], True), ([1.9, 1.5, 1.3, 1.1], False)])
def test_a_cost_curve_that_only_falls_is_monotone(costs: list[float], holds: bool) -> None:
    """The masking-window verdict: cost must rise and fall over the windows; a curve that only falls (or only
    rises) is monotone, whatever its order."""
    from sim.report.findings import masking_window

    by_window = dict(zip((10, 20, 43, 72), costs, strict=True))

    def runner(policy: str, params: dict[str, Any], **kw: Any) -> pd.DataFrame:
        cost = 5.0 if policy == "none" else by_window[params["attention_window"]]
        return fake_runner({(policy, kw["window"]): {"total_cost_usd": cost, "cumulative_input_tokens": 1}})(
            policy, params, **kw
        )

    _, curve = masking_window(runner).claims
    assert curve.holds is holds
