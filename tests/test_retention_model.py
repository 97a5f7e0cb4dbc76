"""The retention model fitted on real summaries (issue 28): the fit, the bundled file, the mock summariser that uses
it, and what it does over rounds."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from sim.calibration import retention_fit as rf
from sim.cli.main import main
from sim.core.conversation import Fact
from sim.core.errors import InvalidConfig
from sim.core.retention import BUNDLED, KindRate, SummariserConfig, load_model
from sim.core.tokenizers import get_tokenizer
from sim.replay.summariser import fact_draw, keep_probabilities, named_kinds, summarise

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
COUNT = get_tokenizer("cl100k_base").count


def _claude_code() -> Path:
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    return folder


# --- the fit ---------------------------------------------------------------------------------------------------


def test_the_slots_rate_is_recovered_from_summaries_drawn_with_it() -> None:
    rng = np.random.default_rng(7)
    true = 0.03
    exps = []
    for tokens, n in [(3_000, 150), (3_500, 260), (2_000, 90), (4_000, 400)]:
        p = 1 - math.exp(-true * tokens / n)
        exps.append((float(tokens), n, int(rng.binomial(n, p))))
    got = rf.fit_rate(exps)
    assert abs(got - true) / true < 0.15
    assert rf.fit_rate([(3_000.0, 10, 0)]) == 0.0  # nothing kept: no room at all
    assert rf.fit_rate([(3_000.0, 10, 10)]) > 1.0  # all kept: as much room as the bisection allows


def test_a_slots_kind_keeps_less_of_a_crowded_span_and_more_with_a_longer_summary() -> None:
    k = KindRate("artifact", "slots", rate=0.024)
    assert k.keep(3_500, 300) < k.keep(3_500, 100) < k.keep(3_500, 10) < 1.0
    assert k.keep(1_000, 100) < k.keep(3_500, 100)
    share = KindRate("constraint", "share", first=0.53, later=0.66)
    assert (share.keep(3_500, 5, 1), share.keep(3_500, 5, 2), share.keep(10, 500, 5)) == (0.53, 0.66, 0.66)


def test_the_bundled_model_is_the_fit_of_the_shared_recordings_and_holds_out_within_10_points() -> None:
    """Done-when of issue 28: held out by session, predicted survival within 10 points of observed for every kind
    with at least 20 observations. Measured: artifacts 39.9% predicted vs 39.4% observed (258c7280, fitted on
    fa812bfe) and 27.2% vs 27.6% (fa812bfe, fitted on 258c7280); no other kind has 20."""
    from sim.formats.importing import recorded_conversations

    folder = _claude_code()
    convs = [c for p in sorted(folder.glob("*.jsonl")) for c in recorded_conversations(p, "claude-code")[0]]
    summaries = rf.recorded_summaries(convs, COUNT)
    assert len(summaries) == 2 and len({s.session for s in summaries}) == 2
    model = rf.fit(summaries, "../shared/recorded/claude-code")
    err = rf.max_error(model)
    assert err is not None and err <= 0.10
    judged = [r for r in model.held_out if r["observations"] >= rf.MIN_OBSERVATIONS]
    assert {r["kind"] for r in judged} == {"artifact"} and len(judged) == 2
    # a fixed share per kind (the old form) misses by 12 points where the fitted form misses by under 1
    shares = {r["session"]: r["observed"] for r in judged}
    assert abs(shares[min(shares)] - shares[max(shares)]) > 0.10
    bundled = load_model(None)
    assert bundled.kinds == model.kinds and bundled.summary_tokens == model.summary_tokens
    assert bundled.held_out == model.held_out
    assert bundled.rate("artifact").form == "slots" and bundled.rate("constraint").form == "share"
    assert "Compaction Cliff" in bundled.rate("constraint").source and "fitted" in bundled.rate("artifact").source


def test_csim_calibrate_retention_writes_a_file_the_summariser_reads(tmp_path: Path, capsys) -> None:
    folder = _claude_code()
    out = tmp_path / "retention.json"
    assert main(["calibrate", str(folder), "--format", "claude-code", "--retention", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "held out by session" in text and "artifact" in text and "Compaction Cliff" in text
    cfg = SummariserConfig(retention=str(out))
    assert cfg.model.rate("artifact").rate == pytest.approx(load_model(None).rate("artifact").rate)
    again = tmp_path / "again.json"
    assert main(["calibrate", str(folder), "--format", "claude-code", "--retention", "--out", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()  # the bootstrap is seeded


def test_csim_fidelity_retention_prints_and_writes_observed_beside_predicted(tmp_path: Path, capsys) -> None:
    folder = _claude_code()
    session = folder / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    cal, model = tmp_path / "cal.json", tmp_path / "retention.json"
    other = folder / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
    assert main(["calibrate", str(other), "--format", "claude-code", "--out", str(cal)]) == 0
    assert main(["calibrate", str(other), "--format", "claude-code", "--retention", "--out", str(model)]) == 0
    capsys.readouterr()
    out = tmp_path / "fid"
    args = ["fidelity", str(session), "--format", "claude-code", "--calibration", str(cal)]
    assert main([*args, "--retention", str(model), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "observed vs predicted artifact 39.4% vs 39.9% (165)" in text  # fitted on the other session only
    [summary] = json.loads((out / "summary.json").read_text())
    pred = summary["retention"]["predicted"]["artifact"]
    assert pred["probes"] == 165 and pred["kept"] == 65
    assert abs(pred["predicted_share"] - pred["kept_share"]) <= 0.10


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("not json", "not JSON"),
        ('{"format": "other"}', "not a retention file"),
        ('{"format": "csim-retention/1", "summary_tokens": 10, "kinds": {}}', "no rate for"),
        ('{"format": "csim-retention/1", "summary_tokens": 10}', "malformed"),
    ],
)
def test_a_bad_retention_file_is_named_with_what_to_do(tmp_path: Path, body: str, says: str) -> None:
    p = tmp_path / "r.json"
    p.write_text(body)
    with pytest.raises(InvalidConfig, match=says) as exc:
        SummariserConfig(retention=str(p))
    assert str(p) in str(exc.value)
    with pytest.raises(InvalidConfig, match="no such file"):
        SummariserConfig(retention=str(tmp_path / "absent.json"))
    with pytest.raises(InvalidConfig, match="pin takes fact kinds"):
        SummariserConfig(pin=("rules",))


def test_the_bundled_file_ships_in_the_package() -> None:
    assert (ROOT / "sim" / "core" / BUNDLED).is_file()
    assert BUNDLED in (ROOT / "pyproject.toml").read_text()  # package data: an installed csim has it too


# --- the mock summariser ---------------------------------------------------------------------------------------


def _facts(kind: str, n: int, prefix: str = "f") -> list[Fact]:
    return [Fact(f"{prefix}{i}", kind, f"{kind}-{prefix}{i}", "m0") for i in range(n)]  # type: ignore[arg-type]


def _summary(candidates: list[Fact], config: SummariserConfig, seed: int = 0, rounds=None, cap: int = 20_000):
    return summarise(
        goal="do it",
        covered_messages=10,
        covered_calls=[],
        candidates=candidates,
        rounds=rounds or {},
        config=config,
        max_output_tokens=cap,
        input_tokens=50_000,
        seed=seed,
        rng=np.random.default_rng(0),
        count=COUNT,
    )


def test_a_facts_fate_depends_on_the_fact_and_its_round_not_on_what_it_is_summarised_with() -> None:
    cfg = SummariserConfig(keep_decision=0.5)
    a = _facts("decision", 40)
    b = a[:20] + _facts("decision", 30, prefix="g") + a[20:]
    first, second = _summary(a, cfg), _summary(b, cfg)
    assert first.facts == {f.id for f in a} & second.facts
    again = _summary(a, cfg, rounds={f.id: 1 for f in a})  # the same facts at their second summary: a new draw
    assert again.facts != first.facts
    assert fact_draw(0, "f1", 2) == fact_draw(0, "f1", 2) != fact_draw(0, "f1", 3)
    assert dict(again.rounds) == {f: 2 for f in again.facts}


def test_settings_the_real_systems_document_change_what_is_kept_in_their_direction() -> None:
    base = SummariserConfig()
    arts, rules = _facts("artifact", 200), _facts("constraint", 10, prefix="r")
    p = keep_probabilities(arts + rules, {}, base, 3_500)
    # a custom instruction that names a kind halves its loss
    named = SummariserConfig(instruction="Keep every constraint the user stated.")
    assert named_kinds(named.instruction) == {"constraint"}
    q = keep_probabilities(arts + rules, {}, named, 3_500)
    assert q[-1] == pytest.approx(1 - (1 - p[-1]) / 2) and q[0] == p[0]
    # a shorter summary budget keeps fewer of a fitted kind
    assert keep_probabilities(arts, {}, base, 1_000)[0] < p[0]
    small = _summary(arts, base, cap=512)  # the engine passes -R max_output_tokens (or the client's cap) as the cap
    large = _summary(arts, base)
    assert len(small.facts) < len(large.facts)
    # a pinned kind is restated
    pinned = _summary(arts + rules, SummariserConfig(pin=("constraint",)))
    assert {f.id for f in rules} <= pinned.facts


def test_a_summary_is_never_longer_than_its_length_however_many_facts_it_carries() -> None:
    cfg = SummariserConfig(keep_artifact=1.0, keep_constraint=1.0)
    many = _facts("artifact", 3_000)
    out = _summary(many, cfg)
    assert COUNT(out.text) <= load_model(None).summary_tokens + 5
    assert 0 < len(out.facts) < len(many)  # what does not fit is lost, the rest still tried
    short = _facts("constraint", 1, prefix="s")
    out2 = _summary(many[:500] + short, cfg)
    assert "s0" in out2.facts  # constraints come first


# --- over rounds, on a long scenario ---------------------------------------------------------------------------


def _recall_by_round(policy: str, **options) -> dict[tuple[str, int], float]:
    from sim import api

    res = api.run(policy, scenario="research-agent", seeds="0-9", window=100_000, **options)
    assert "compaction-shrinks" not in set(res.violations["invariant"]) if len(res.violations) else True
    f = res.facts[res.facts["kind"].isin(["constraint", "artifact"])].copy()
    f["r"] = f["round"].clip(upper=5)
    return {k: float(v) for k, v in f.groupby(["kind", "r"])["visible"].mean().items()}


def test_over_five_rounds_free_form_summaries_lose_rules_and_artifacts_and_pinned_ones_do_not() -> None:
    """Measured (research-agent, seeds 0-9, 100K window, claude-code: 4 to 6 compactions a run): constraints 89%
    visible after one round, 14% after five or more; artifacts 87% and 52%. With ``-R pin=constraint,artifact``:
    93% and 85%, 98% and 100%. The published cliff (53% of safety rules after one /compact, 10% after five)
    falls the same way."""
    free = _recall_by_round("claude-code")
    assert free[("constraint", 5)] <= free[("constraint", 1)] - 0.3
    assert free[("artifact", 5)] <= free[("artifact", 1)] - 0.2
    pinned = _recall_by_round("claude-code", summariser={"pin": "constraint,artifact"})
    for kind in ("constraint", "artifact"):
        assert all(pinned[(kind, r)] >= pinned[(kind, 1)] - 0.1 for r in range(2, 6))
    # a policy that keeps the user's messages verbatim keeps the rules they state (Codex: user messages kept)
    codex = _recall_by_round("codex")
    assert all(v == 1.0 for (kind, r), v in codex.items() if kind == "constraint" and r >= 1)


@pytest.mark.parametrize("policy", ["claude-code", "inspect-summary", "langchain-summarization", "codex", "goose"])
def test_no_summarising_policy_grows_its_summary_past_what_it_replaces(policy: str) -> None:
    from sim import api

    res = api.run(policy, scenario="research-agent", seeds="0-4", window=100_000)
    assert int(res.runs["compaction_count"].sum()) > 0
    bad = set(res.violations["invariant"]) if len(res.violations) else set()
    assert "compaction-shrinks" not in bad
