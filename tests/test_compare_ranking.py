"""csim compare, ranked: the objective's order, the frontier and the recommended row, 120 columns, the recorded bill."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cli.main import main
from sim.core.config import normalise_run
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.cost import Pricer
from sim.core.errors import InvalidConfig, UnknownName
from sim.sweep.bills import recorded_bill
from sim.sweep.compare import pareto_front
from sim.sweep.driver import run_sweep
from sim.sweep.ranked_view import WIDTH, number, render_ranked
from sim.sweep.ranking import higher_is_better, pareto_mask, parse_constraint, rank
from sim.sweep.results import load_results
from sim.sweep.spec import PolicyGrid, Source, SweepSpec

RECORDED = Path(__file__).resolve().parents[1].parent / "shared" / "recorded" / "claude-code"


def frame(rows: list[tuple[str, float, float, float]]) -> pd.DataFrame:
    """A summary table by hand: config, mean cost, mean retention, retention's lower bound."""
    return pd.DataFrame(
        {
            "config": [r[0] for r in rows],
            "cost_usd_mean": [r[1] for r in rows],
            "retention_mean": [r[2] for r in rows],
            "retention_lo": [r[3] for r in rows],
            "overflows_mean": [0.0] * len(rows),
        }
    )


HAND = frame(
    [
        ("dear", 3.0, 0.99, 0.97),  # the best keeper, the dearest
        ("mid", 2.0, 0.95, 0.80),  # frontier; retention 0.95 but a wide interval
        ("bad", 2.5, 0.90, 0.88),  # dominated by mid (dearer, forgets more)
        ("cheap", 1.0, 0.60, 0.50),  # the cheapest, forgets
        ("tie", 2.0, 0.94, 0.93),  # same cost as mid, keeps less: dominated, ranked after mid
    ]
)


def test_rank_orders_by_cost_and_marks_frontier_and_recommended() -> None:
    ranked = rank(HAND)
    assert ranked["config"].tolist() == ["cheap", "mid", "tie", "bad", "dear"]
    assert ranked["rank"].tolist() == [1, 2, 3, 4, 5]
    flags = ranked.set_index("config")
    assert flags["frontier"].to_dict() == {"cheap": True, "mid": True, "tie": False, "bad": False, "dear": True}
    assert flags["feasible"].all()
    assert flags["recommended"].tolist().count(True) == 1 and flags.loc["cheap", "recommended"]


def test_a_constraint_picks_the_cheapest_frontier_row_that_meets_it() -> None:
    on_mean = rank(HAND, constraints=[parse_constraint("retention>=0.9")]).set_index("config")
    assert on_mean.loc[on_mean["recommended"]].index.tolist() == ["mid"]
    assert on_mean["feasible"].to_dict() == {"cheap": False, "mid": True, "tie": True, "bad": True, "dear": True}
    # on the lower bound, the frontier is cost against retention_lo: mid's wide interval drops it, tie ranks first
    on_lo = rank(HAND, constraints=[parse_constraint("retention_lo >= 0.9")]).set_index("config")
    assert on_lo["frontier"].to_dict() == {"cheap": True, "tie": True, "mid": False, "bad": False, "dear": True}
    assert on_lo.loc[on_lo["recommended"]].index.tolist() == ["tie"]
    none_meet = rank(HAND, constraints=[parse_constraint("retention>0.999")])
    assert not none_meet["recommended"].any() and not none_meet["feasible"].any()


def test_higher_is_better_ranks_descending_and_frontier_swaps_axes() -> None:
    ranked = rank(HAND, objective="retention")
    assert ranked["config"].tolist() == ["dear", "mid", "tie", "bad", "cheap"]
    assert ranked.set_index("config").loc["dear", "recommended"]
    assert higher_is_better("retention") and higher_is_better("retention_lo") and higher_is_better("success")
    assert not higher_is_better("cost_usd") and not higher_is_better("overflows")
    assert not higher_is_better("total_cost_usd") and not higher_is_better("input_tokens")


def test_rank_splits_by_group_and_leaves_missing_values_last() -> None:
    two = pd.concat([HAND.assign(source="a"), HAND.assign(source="b")], ignore_index=True)
    two.loc[(two["source"] == "b") & (two["config"] == "cheap"), "cost_usd_mean"] = np.nan
    ranked = rank(two, group=["source"])
    b = ranked[ranked["source"] == "b"]
    assert b["config"].tolist() == ["mid", "tie", "bad", "dear", "cheap"]
    assert not b.set_index("config").loc["cheap", "frontier"]
    assert ranked.groupby("source")["recommended"].sum().to_dict() == {"a": 1, "b": 1}


@given(st.lists(st.tuples(st.floats(0, 10), st.floats(0, 1)), min_size=1, max_size=12))
def test_pareto_mask_agrees_with_the_compare_frontier(points: list[tuple[float, float]]) -> None:
    cost, ret = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    assert np.flatnonzero(pareto_mask(cost, ret)).tolist() == pareto_front(cost, ret)


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("retention=>0.9", InvalidConfig, "is not COLUMN OP NUMBER"),
        ("retention>=high", InvalidConfig, "'high' is not a number"),
        ("retention>=nan", InvalidConfig, "finite"),
        ("retentoin>=0.9", UnknownName, "Did you mean 'retention'"),
    ],
)
def test_bad_constraints_say_what_to_write(text: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        parse_constraint(text)


def test_numbers_are_abbreviated() -> None:
    assert number("input_tokens", 1_234_567) == "1.23M" and number("peak_context", 45_600) == "45.6K"
    assert number("cost_usd", 0.012345) == "0.0123" and number("cost_usd", 1234.5) == "1,234"
    assert number("cost_usd", 0.5, signed=True) == "+0.5000" and number("retention", float("nan")) == "n/a"


def test_a_long_label_is_shortened_to_fit() -> None:
    long = HAND.assign(
        config=[
            f"policy-with-a-very-long-name trigger_ratio=0.{i} keep_recent=12345 summary_budget=999" for i in range(5)
        ],
        cost_usd_lo=HAND["cost_usd_mean"],
        cost_usd_hi=HAND["cost_usd_mean"],
        cost_usd_diff=0.0,
        retention_hi=HAND["retention_mean"],
        success_mean=1.0,
        completed_mean=1.0,
        compactions_mean=2.0,
        baseline="none",
    )
    text = render_ranked(rank(long, constraints=[parse_constraint("retention_lo>=0.9")]))
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert "…" in text and "R*" in text


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ranked")
    spec = SweepSpec(
        (
            PolicyGrid("none"),
            PolicyGrid("claude-code"),
            PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.5", "0.8")),)),
        ),
        (Source("scenario", "coding-agent", (("turns", "14"), ("huge_prob", "0"))),),
        (0, 1),
        normalise_run({"window": 12000}, "test"),
    )
    run_sweep(spec, out, workers=1, progress=False)
    return out


def widest(out: str, results: Path) -> int:
    """The widest line csim printed, the results directory (the user's own path, of any length) counted as 9 columns."""
    return max(len(line.replace(str(results), "<results>")) for line in out.splitlines())


def test_csim_compare_is_ranked_and_at_most_120_wide(small_sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(small_sweep)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert widest(out, small_sweep) <= 120
    summary = load_results(small_sweep).summary
    assert summary is not None and len(summary) == 4
    expected = rank(summary)["config"].tolist()
    assert summary.sort_values("cost_usd_mean")["cost_usd_mean"].is_monotonic_increasing
    rows = [line for line in lines if line.strip()[:1].isdigit() and any(c in line for c in expected)]
    printed = [next(c for c in sorted(expected, key=len, reverse=True) if c in line) for line in rows]
    assert printed == expected
    costs = [float(summary.set_index("config").loc[c, "cost_usd_mean"]) for c in printed]
    assert costs == sorted(costs)
    assert sum(" R* " in line for line in rows) == 1
    assert {"rank", "feasible", "frontier", "recommended"} <= set(summary.columns)


def test_csim_compare_by_and_require(small_sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(small_sweep), "--by", "retention", "--require", "overflows==0"]) == 0
    out = capsys.readouterr().out
    assert "Ranked by retention (higher is better)" in out and "meets overflows==0" in out
    assert widest(out, small_sweep) <= 120
    assert main(["compare", str(small_sweep), "--by", "cost_us"]) == 2
    assert "Did you mean 'cost_usd'" in capsys.readouterr().err
    assert main(["compare", str(small_sweep), "--require", "retention>>0.9"]) == 2
    assert "COLUMN OP NUMBER" in capsys.readouterr().err
    assert main(["compare", str(small_sweep), "--by", "retention", "--by", "cost_usd"]) == 2
    assert "one metric at a time" in capsys.readouterr().err


def test_csim_compare_wide_prints_every_column(small_sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(small_sweep), "--wide"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) > 120
    for head in ("input tokens", "peak context", "cache read", "violations", "declared", "Δ requests"):
        assert head in out
    assert "Paired difference against baseline 'none'" in out


def test_recorded_bill_prices_each_recorded_reply() -> None:
    def reply(i: int, usage: Usage | None, **meta: object) -> Message:
        return Message(f"a{i}", "assistant", (Part("text", f"reply {i}"),), usage=usage, meta=meta)

    u1, u2 = Usage(1000, 50, 20_000, 3000), Usage(200, 10, 23_000, 0)
    msgs = (
        Message("u0", "user", (Part("text", "go"),), meta={"timestamp": "2026-03-01T10:00:00Z"}),
        reply(1, u1, model="claude-sonnet-4-5", cache_write_1h=1000, timestamp="2026-03-01T10:00:05Z"),
        Message("u1", "user", (Part("text", "more"),)),
        reply(2, u2, model="claude-sonnet-4-5", timestamp="2026-03-01T10:01:00Z"),
        Message("u2", "user", (Part("text", "again"),)),
        reply(3, u2, api_id_repeated=True),  # double-counted by the recording: not billed twice
        Message("u3", "user", (Part("text", "bye"),)),
        reply(4, None),
    )
    conv = Conversation("c", msgs)
    p = Pricer("claude-sonnet-4-5", "anthropic")
    at = datetime(2026, 3, 1, 10, 0, 5, tzinfo=UTC)
    want = p.cost(u1.prompt_tokens, 50, 20_000, 2000, 1000, at)
    want += p.cost(u2.prompt_tokens, 10, 23_000, 0, 0, datetime(2026, 3, 1, 10, 1, tzinfo=UTC))
    got = recorded_bill(conv)
    assert got is not None and got[0] == 2 and got[1] == pytest.approx(want)
    assert want > 0
    assert recorded_bill(Conversation("bare", msgs[:1] + (reply(1, None),))) is None


@pytest.mark.skipif(not (RECORDED / "subagent.jsonl").exists(), reason="the shared Claude Code recordings are absent")
def test_csim_compare_names_the_recorded_bill(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sim.formats.importing import recorded_conversations

    path = RECORDED / "subagent.jsonl"
    spec = SweepSpec(
        (PolicyGrid("none"), PolicyGrid("claude-code")),
        (Source("conversation", str(path)),),
        (0,),
        normalise_run({}, "test"),
    )
    run_sweep(spec, tmp_path, workers=1, progress=False)
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert widest(out, tmp_path) <= 120
    (conv,), _ = recorded_conversations(path, "auto")
    bill = recorded_bill(conv)
    assert bill is not None and bill[1] > 0
    assert f"bill ${bill[1]:.4f}" in out and "Recorded bill" in out
    written = pd.read_csv(tmp_path / "bills.csv")
    assert written["recorded_cost_usd"].iloc[0] == pytest.approx(bill[1])
