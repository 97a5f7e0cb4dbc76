"""The report's retention by compaction round (sim.report.retention) on hand-built results: the figure when there
is something to draw, words instead of empty axes when there is not, and the table beside cost."""

from __future__ import annotations

import pandas as pd
import pytest

from sim.report import figures as rf
from sim.report import retention as rr
from sim.sweep.parts import RUN_COLUMNS, SWEEP_FACT_COLUMNS
from sim.sweep.results import Results, typed


def results(facts: list[dict[str, object]], unreached: dict[str, int] | None = None) -> Results:
    configs = sorted({str(f["config"]) for f in facts} | set(unreached or {}))
    zeros = {c: 0 for c, dtype in RUN_COLUMNS.items() if dtype == "int64"}
    runs = typed(
        [{**zeros, "config": c, "run_key": c, "facts_unreached": (unreached or {}).get(c, 0)} for c in configs],
        RUN_COLUMNS,
    )
    rows = [{"run_key": f["config"], "conversation": "c0", "seed": 0, "turn": 1, **f} for f in facts]
    empty = pd.DataFrame()
    return Results("sweep", {}, runs, empty, typed(rows, SWEEP_FACT_COLUMNS), empty, empty, None)


def need(config: str, kind: str, rnd: int | None, visible: bool) -> dict[str, object]:
    return {"config": config, "fact": "f", "kind": kind, "age_messages": 3, "round": rnd, "visible": visible}


FACTS = [
    need("keeps", "artifact", 0, True),
    need("keeps", "artifact", 1, True),
    need("keeps", "decision", 5, True),
    need("forgets", "artifact", 0, True),
    need("forgets", "artifact", 1, False),
    need("forgets", "decision", 1, True),
    need("forgets", "decision", 40, False),
]


def test_round_bins_are_labelled_and_open_at_the_end() -> None:
    assert rr.round_names() == ["0", "1", "2", "3", "4–7", "8–31", "32+"]
    b = rr.binned(results(FACTS).facts)
    assert b["bin"].astype(str).tolist() == ["0", "1", "4–7", "0", "1", "1", "32+"]


def test_the_figure_is_drawn_when_needs_went_through_compactions() -> None:
    data = results(FACTS)
    assert rr.rounds_missing(data) is None
    fig = rr.fig_retention_rounds(data, rf.colours(["keeps", "forgets"]))
    assert fig is not None
    left, right = fig.axes[:2]
    (forgets,) = [ln for ln in left.get_lines() if ln.get_label() == "forgets"]
    # forgets: round 0 1/1, round 1 1/2, round 32+ 0/1, at the bins' positions
    assert list(forgets.get_xdata()) == [0, 1, 6] and list(forgets.get_ydata()) == [100.0, 50.0, 0.0]
    widths = [p.get_width() for p in right.patches]
    assert sum(widths) == pytest.approx(200.0), "each configuration's needs add up to 100%"
    html = rf.show(fig, "retention-rounds", "c")._repr_html_()
    assert 'id="fig-retention-rounds"' in html and "data:image/png;base64," in html


@pytest.mark.parametrize(
    ("facts", "says"),
    [
        ([], "No run needed a fact"),
        ([need("a", "artifact", None, True)], "written before fact rows had a compaction round"),
        ([need("a", "artifact", 0, True), need("a", "recall", 0, False)], "all 2 needs are round 0 (50.0%"),
    ],
    ids=["no facts", "older results", "never compacted"],
)
def test_without_rounds_to_compare_the_report_says_why_in_words(facts: list[dict[str, object]], says: str) -> None:
    data = results(facts)
    assert rr.fig_retention_rounds(data, rf.colours(["a"])) is None
    reason = rr.rounds_missing(data)
    assert reason is not None and says in reason


def test_the_table_sets_retention_by_kind_and_round_beside_cost() -> None:
    data = results(FACTS, unreached={"forgets": 3})
    table = pd.DataFrame({"config": ["keeps", "forgets"], "cost_usd_mean": [2.0, 1.25], "retention_mean": [1.0, 0.2]})
    t = rr.retention_table(data, table).set_index("config")
    assert list(t.columns) == [
        "cost per conversation (USD)",
        "retention (%)",
        "needs never reached",
        "all judged (%)",
        "artifact (%)",
        "decision (%)",
        "round 0 (%)",
        "round 1 (%)",
        "round 4–7 (%)",
        "round 32+ (%)",
    ]
    assert t.loc["forgets"].tolist() == [
        "1.250",
        "20.0",
        "3",
        "50.0 (4)",
        "50.0 (2)",
        "50.0 (2)",
        "100.0 (1)",
        "50.0 (2)",
        "",
        "0.0 (1)",
    ]
    assert t.loc["keeps", "round 4–7 (%)"] == "100.0 (1)" and t.loc["keeps", "round 32+ (%)"] == ""
