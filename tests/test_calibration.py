"""Token calibration: the fit, its file, the engine applying it, and its held-out error on real sessions."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.base import make_policy
from sim.calibration import fit as cal
from sim.cli.main import main
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.errors import InvalidConfig
from sim.replay.engine import RunConfig, run

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")

#: The brief's targets for the Claude Code main sessions (held out).
TARGET_MEDIAN, TARGET_P90 = 0.03, 0.08


def _samples(coef: tuple[float, float, float, float], n: int = 40, convs: int = 3) -> list[cal.Sample]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        tokens, msgs, summ = int(rng.integers(100, 150_000)), int(rng.integers(1, 400)), bool(i % 5 == 0)
        y = coef[0] + coef[1] * msgs + coef[2] * tokens + coef[3] * summ
        out.append(
            cal.Sample(
                f"c{i % convs}",
                0,
                i,
                f"m{i}",
                tokens,
                msgs,
                summ,
                tokens * 4,
                int(round(y)),
                "anthropic",
                "claude-code",
                "main",
            )
        )
    return out


@given(
    fixed=st.floats(1_000, 40_000), per_message=st.floats(0, 200), scale=st.floats(0.8, 1.4), after=st.floats(0, 8_000)
)
def test_fit_recovers_known_coefficients(fixed: float, per_message: float, scale: float, after: float) -> None:
    rows = _samples((fixed, per_message, scale, after))
    got = cal.fit_coefficients(rows)
    # targets are rounded to whole tokens, so recovery is to rounding precision
    assert got[0] == pytest.approx(fixed, abs=25)
    assert got[1] == pytest.approx(per_message, abs=0.2)
    assert got[2] == pytest.approx(scale, abs=1e-3)
    assert got[3] == pytest.approx(after, abs=25)
    assert cal.held_out(rows).p90 < 1e-3


def test_fit_minimises_relative_not_absolute_error() -> None:
    rows = _samples((20_000, 30, 1.1, 0), n=60)
    rng = np.random.default_rng(3)
    noisy = [replace(s, recorded=int(s.recorded * (1 + rng.normal(0, 0.05)))) for s in rows]
    x = np.array([[1.0, s.messages, s.tokens, float(s.summarised)] for s in noisy])
    y = np.array([s.recorded for s in noisy], dtype=float)
    plain, *_ = np.linalg.lstsq(x, y, rcond=None)
    weighted = cal.fit_coefficients(noisy)
    assert np.sum(cal.relative_errors(noisy, weighted) ** 2) < np.sum(cal.relative_errors(noisy, plain) ** 2)


def test_save_load_round_trip(tmp_path: Path) -> None:
    rows = _samples((25_000, 70, 1.13, 4_800))
    cals = cal.calibrate(rows, tokenizer="cl100k_base", fitted_on="synthetic", checksum="abc")
    path = cal.save(cals, tmp_path / "cal.json")
    assert cal.load(path) == cals
    assert path.read_bytes() == cal.save(cal.load(path), tmp_path / "again.json").read_bytes()


def test_load_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"nope": 1}')
    with pytest.raises(InvalidConfig, match="not a calibration file"):
        cal.load(bad)


def test_choose_picks_the_matching_group_or_says_why_not() -> None:
    base = cal.calibrate(_samples((25_000, 70, 1.13, 0)), tokenizer="cl100k_base", fitted_on="s", checksum="c")[0]
    sub = replace(base, agent="subagent")
    other = replace(base, provider="openai", format="openai-chat")
    assert cal.choose([base, sub, other], "anthropic") is base
    with pytest.raises(InvalidConfig, match="3 calibrations"):
        cal.choose([base, sub, replace(base, format="vcr")], "anthropic")


def _tiny_conversation() -> Conversation:
    return Conversation(
        "t",
        (
            Message("u1", "user", (Part("text", "Fix the failing test in parser.py"),)),
            Message("a1", "assistant", (Part("tool_call", call_id="c1", name="read", args='{"path": "parser.py"}'),)),
            Message(
                "t1", "tool", (Part("tool_result", "def parse(x):\n    return x\n" * 40, call_id="c1", name="read"),)
            ),
            Message("a2", "assistant", (Part("text", "Fixed."),)),
        ),
    )


def test_engine_applies_the_calibration_to_every_request_and_hashes_it() -> None:
    conv = _tiny_conversation()
    c = cal.Calibration(
        "anthropic",
        "native",
        "cl100k_base",
        cal.Coefficients(20_000, 50, 1.2, 0),
        10,
        cal.HeldOut("conversation", 9, 10, 0, 0, 0, 0),
        "s",
        "c",
    )
    raw = run(make_policy("none"), conv, RunConfig())
    calibrated = run(make_policy("none"), conv, RunConfig(calibration=c))
    assert raw.run_id != calibrated.run_id
    for r, k in zip(raw.rows, calibrated.rows, strict=True):
        assert k["context_tokens"] == c.apply(r["context_tokens"], r["messages_in_view"])
        assert k["context_tokens"] > 20_000


def test_samples_come_from_the_engine_counts() -> None:
    conv = _tiny_conversation()
    msgs = list(conv.messages)
    msgs[1] = replace(msgs[1], usage=Usage(input_tokens=5, cache_read_tokens=20_000, cache_write_tokens=100))
    conv = Conversation("t", tuple(msgs))
    rows = cal.samples([conv], "native")
    engine = run(make_policy("none"), conv, RunConfig(run_status="off", accounting="counted"))
    assert len(rows) == 1  # only the reply with usage
    assert rows[0].recorded == 20_105
    assert rows[0].tokens == engine.rows[0]["context_tokens"]
    assert rows[0].messages == engine.rows[0]["messages_in_view"]
    # anchored (the default for a recording with usage), the request is what the provider counted
    anchored = run(make_policy("none"), conv, RunConfig(run_status="off"))
    assert anchored.rows[0]["context_tokens"] == 20_105


# --- the real Claude Code sessions ------------------------------------------------------------------


@pytest.fixture(scope="module")
def claude_rows() -> list[cal.Sample]:
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"recorded sample not found at {folder} (set CSIM_RECORDED to its folder)")
    from sim.formats import read

    convs = [c for p in sorted(folder.rglob("*.jsonl")) for c in read(p, "claude-code").conversations]
    return cal.samples(convs, "claude-code")


def test_claude_code_held_out_error_meets_the_targets(claude_rows: list[cal.Sample]) -> None:
    main_rows = [s for s in claude_rows if s.agent == "main"]
    assert len(main_rows) == 326
    loco = cal.held_out(main_rows, "conversation")  # each session predicted by a fit on the others
    assert loco.split == "conversation" and loco.n_held_out == 326
    assert loco.median <= TARGET_MEDIAN and loco.p90 <= TARGET_P90, loco
    assert loco.p90 < loco.baseline_p90  # the tokenizer fit beats the chars baseline where it matters
    alt = cal.held_out(main_rows, "alternate")
    assert alt.median <= TARGET_MEDIAN and alt.p90 <= TARGET_P90, alt


def test_claude_code_fit_is_plausible(claude_rows: list[cal.Sample]) -> None:
    c = next(
        x
        for x in cal.calibrate(claude_rows, tokenizer="cl100k_base", fitted_on="t", checksum="c")
        if x.key == "anthropic/claude-code/main"
    )
    k = c.coefficients
    assert 18_000 <= k.fixed <= 33_000  # FORMATS.md: the missing system prompt and tools
    assert 1.0 <= k.scale <= 1.3  # Claude's tokenizer counts more tokens than cl100k_base
    assert 2_000 <= k.after_compaction <= 10_000


def test_calibrate_cli_on_a_path_writes_a_usable_file(claude_rows, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cal.json"
    assert (
        main(
            [
                "calibrate",
                str(RECORDED / "claude-code"),
                "--format",
                "claude-code",
                "--group",
                "anthropic/claude-code/main",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "n fit 326, n held out 326" in text and "chars baseline" in text
    [c] = cal.load(out)
    assert c.fitted_on.endswith("claude-code") and len(c.checksum) == 64
    assert cal.load_for_run(out, "anthropic", "claude-code") == c
