"""``csim findings``' 2026 results (sim.report.findings_2026): judged from the numbers, and reproduced on the bundled
research-agent scenario."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from sim.report.findings import KEYS, render, run_findings
from sim.report.findings_2026 import FINDINGS_2026, refetches


def _fake(reacq: float, success: float) -> Any:
    def runner(policy: str, params: dict[str, Any], seeds: Any, **kw: Any) -> Any:
        compressed = policy != "none"
        row = {
            "reacquisitions": reacq if compressed else 0.0,
            "task_success": success if compressed else 1.0,
            "finish_reason": "completed",
        }
        return SimpleNamespace(runs=pd.DataFrame([row]))

    return runner


@pytest.mark.parametrize(("reacq", "success", "verdicts"), [(40.0, 0.95, [True, True]), (0.0, 0.5, [False, False])])
def test_the_refetch_claims_are_judged_from_the_numbers(reacq: float, success: float, verdicts: list[bool]) -> None:
    finding = refetches((0,), _fake(reacq, success))
    assert [c.holds for c in finding.claims] == verdicts
    assert ("**not reproduced**" in render([finding])) is not all(verdicts)


def test_the_2026_findings_are_listed_and_run() -> None:
    assert set(FINDINGS_2026) <= set(KEYS)
    cliff, pinning = run_findings(seeds=(0, 1, 2), only=["compaction-cliff", "constraint-pinning"])
    # measured (seeds 0-9 for the cliff, 0-2 for pinning): rules 89% after one compaction, 14% after five or more;
    # after a compaction free-form 42%, pinned 100%, codex (user messages kept) 100%
    assert cliff.claims[0].holds, cliff.claims[0].ours
    assert pinning.claims[0].holds, pinning.claims[0].ours
    assert "53%" in cliff.claims[0].theirs and "17%" in pinning.claims[0].theirs
