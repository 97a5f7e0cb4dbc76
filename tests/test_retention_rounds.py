"""Retention by compaction round: each fact row counts the compactions between its source entering the log and the
request that needs it, and a run's summary gives recall by round (``retention_round0`` ...)."""

from __future__ import annotations

from typing import Any

from policies.base import Plan, Policy, Trigger
from policies.baselines import NoCompaction
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay.engine import Engine, RunConfig, run
from sim.replay.result import retention_by_round
from tests.builders import asst, conv, fact, tool, user
from tests.builders import sys as system

PAD = " " + "x" * 400  # a tool result worth clearing


class ClearsAtEachUser(Policy):
    """Test policy: when a new user message arrives (after the first), clear every tool result before it."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        lu = state.last_user_index
        if trigger != "auto" or lu <= 1 or state.view.cleared_through >= lu:
            return None
        return Plan(start=state.view.start, cleared_through=lu, mode="prune")


def two_compactions() -> Any:
    """Three user turns, each with a tool result; the policy compacts as the second and the third arrive."""
    return conv(
        system("s"),
        user("task", id="u1"),
        asst(calls=["c1"], id="a1"),
        tool("c1", "PATH_A" + PAD, name="read", id="t1"),
        asst("We decided DECISION_B", id="d1"),
        user("next", id="u2"),  # compaction 1 before this request: t1 cleared
        asst(calls=["c2"], id="a2"),
        tool("c2", "PATH_C" + PAD, name="read", id="t2"),
        asst("ok", id="d2"),
        user("last", id="u3"),  # compaction 2: t2 cleared
        asst("done", id="end"),
        facts=[
            fact("fa0", "artifact", "PATH_A", "t1", ["t1"]),  # judged at the request d1 answers: no compaction yet
            fact("fa", "artifact", "PATH_A", "t1", ["u2", "u3"]),  # after one, then after two compactions
            fact("fb", "decision", "DECISION_B", "d1", ["u2", "u3"]),  # an assistant's words: never cleared
            fact("fc", "artifact", "PATH_C", "t2", ["u3"]),  # entered after compaction 1: one round at u3
        ],
    )


CONFIG = RunConfig(model=ModelConfig(context_window=20_000, output_reserve=500), deep_checks=True)


def test_each_fact_row_counts_the_compactions_since_its_source_entered() -> None:
    res = run(ClearsAtEachUser(), two_compactions(), CONFIG)
    assert res.summary["compaction_count"] == 2 and not res.violations
    rows = {(r["fact"], r["turn"]): (r["round"], r["visible"]) for r in res.fact_rows}
    turn = {r["fact"]: [] for r in res.fact_rows}
    for r in res.fact_rows:
        turn[r["fact"]].append(r["turn"])
    fa_u2, fa_u3 = turn["fa"]
    assert rows[("fa0", turn["fa0"][0])] == (0, True)
    assert rows[("fa", fa_u2)] == (1, False) and rows[("fa", fa_u3)] == (2, False)
    assert rows[("fb", turn["fb"][0])] == (1, True) and rows[("fb", turn["fb"][1])] == (2, True)
    assert rows[("fc", turn["fc"][0])] == (1, False)
    s = res.summary
    assert s["retention_by_round"] == {
        0: {"needed": 1, "visible": 1, "recall": 1.0},
        1: {"needed": 3, "visible": 1, "recall": 1 / 3},
        2: {"needed": 2, "visible": 1, "recall": 0.5},
    }
    assert (s["retention_round0"], s["retention_round1"], s["retention_round2plus"]) == (1.0, 1 / 3, 0.5)
    assert s["retention_recall"] == 3 / 6


def test_without_compaction_every_need_is_round_zero() -> None:
    res = run(NoCompaction(), two_compactions(), CONFIG)
    assert res.summary["compaction_count"] == 0
    assert {r["round"] for r in res.fact_rows} == {0}
    assert res.summary["retention_round0"] == 1.0
    assert res.summary["retention_round1"] is None and res.summary["retention_round2plus"] is None


def test_a_copied_run_counts_its_own_compactions() -> None:
    """A copy (lockstep's fork) carries the compactions so far and counts the later ones apart from the original."""
    e = Engine(ClearsAtEachUser(), two_compactions(), CONFIG)
    e.retention.compacted_at.append(3)
    other = e.retention.copy(e.ledger, e.reactions)
    other.compacted_at.append(5)
    assert e.retention.compacted_at == [3] and other.compacted_at == [3, 5]


def test_rounds_two_and_more_pool_and_empty_rounds_have_no_recall() -> None:
    rows = [{"round": r, "visible": v} for r, v in ((0, True), (2, True), (3, False), (7, False))]
    out = retention_by_round(rows)
    assert out["retention_round0"] == 1.0 and out["retention_round1"] is None
    assert out["retention_round2plus"] == 1 / 3
    assert list(out["retention_by_round"]) == [0, 2, 3, 7]
    assert retention_by_round([])["retention_round0"] is None
