"""Token calibration: the fit, its file, the engine applying it, and its held-out error on real sessions."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies import make_policy
from sim.calibration import files
from sim.calibration import fit as cal
from sim.calibration import group as group_module
from sim.cli.main import main
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.errors import InvalidConfig
from sim.core.tokenizers import get_tokenizer
from sim.replay.engine import RunConfig, run

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")

#: Issue 15's bar for estimated text, held out by session.
TARGET_MEDIAN, TARGET_P90 = 0.02, 0.05


def _samples(
    coef: tuple[float, float, float, float],
    n: int = 40,
    convs: int = 3,
    kinds: tuple[float, float, float] | None = None,
) -> list[cal.Sample]:
    """``convs`` conversations of two segments each (the second opens with a summary), requests whose messages
    grow by random amounts of prose, code and JSON, recorded as ``fixed + per_message x messages + ratio x
    tokens (+ after_compaction)``: one ratio, or one per kind when ``kinds`` is given."""
    rng = np.random.default_rng(7)
    ratios = kinds or (coef[2],) * 3
    out = []
    head = 400
    per_segment = max(2, n // (2 * convs))
    for c in range(convs):
        for seg in range(2):
            content = np.zeros(3, dtype=np.int64)
            msgs = 0
            for i in range(per_segment):
                content += rng.integers(50, 3_000, size=3)
                msgs += int(rng.integers(1, 6))
                summ = seg == 1
                tokens = head + int(content.sum())
                y = coef[0] + coef[1] * msgs + float(np.dot(ratios, content)) + coef[2] * head + coef[3] * summ
                out.append(
                    cal.Sample(
                        f"c{c}",
                        seg,
                        i,
                        f"m{c}.{seg}.{i}",
                        tokens,
                        msgs,
                        summ,
                        tokens * 4,
                        int(round(y)),
                        "anthropic",
                        "claude-code",
                        "main",
                        (int(content[0]), int(content[1]), int(content[2])),
                    )
                )
    return out


@given(
    fixed=st.floats(1_000, 40_000), per_message=st.floats(0, 200), scale=st.floats(0.8, 1.4), after=st.floats(0, 8_000)
)
def test_fit_recovers_known_coefficients(fixed: float, per_message: float, scale: float, after: float) -> None:
    rows = _samples((fixed, per_message, scale, after))
    got = cal.fit_coefficients(rows)  # the whole-prompt fit
    # targets are rounded to whole tokens, so recovery is to rounding precision
    assert got[0] == pytest.approx(fixed, abs=25)
    assert got[1] == pytest.approx(per_message, abs=0.2)
    assert got[2] == pytest.approx(scale, abs=1e-3)
    assert got[3] == pytest.approx(after, abs=25)
    c = cal.fit(rows, by_kind=True)  # the fit on what each request added: the same model, each kind the same ratio
    assert c.per_message == pytest.approx(per_message, abs=0.2) and c.scale == pytest.approx(scale, abs=1e-3)
    assert c.kind_scales == pytest.approx((scale,) * 3, abs=1e-3)
    assert c.fixed == pytest.approx(fixed, abs=25) and c.after_compaction == pytest.approx(after, abs=25)
    e = cal.held_out(rows)
    assert e.anchored and e.p90 < 1e-3 and e.absolute_p90 is not None and e.absolute_p90 < 1e-3


@given(
    prose=st.floats(0.8, 1.4),
    code=st.floats(0.8, 1.4),
    js=st.floats(0.8, 1.4),
    fixed=st.floats(1_000, 40_000),
    per_message=st.floats(0, 200),
)
def test_fit_recovers_a_ratio_per_kind_and_no_fixed_enters_them(
    prose: float, code: float, js: float, fixed: float, per_message: float
) -> None:
    """Each kind's own ratio comes back, whatever each conversation's hidden overhead: the ratios are fitted on
    what each request added, so a per-conversation constant cannot leak into them."""
    rows = _samples((fixed, per_message, 1.0, 3_000), kinds=(prose, code, js))
    bumped = [replace(s, recorded=s.recorded + 5_000 * int(s.conversation[1:])) for s in rows]  # own overheads
    c = cal.fit(bumped, by_kind=True)
    assert c.kind_scales == pytest.approx((prose, code, js), abs=2e-3)
    assert c.per_message == pytest.approx(per_message, abs=0.5)
    forced = cal.held_out(bumped, by_kind=True)
    assert forced.p90 < 1e-3  # held out, anchored on each segment's first request
    assert forced.absolute_p90 is not None and forced.absolute_p90 > 0.01  # no fit knows a session's own overhead
    if max(prose, code, js) - min(prose, code, js) > 0.05:  # kinds that differ: the fit sees it and keeps them
        assert cal.fit(bumped).kind_scales is not None


def _framed(per_message: float, per_id_token: float, convs: int = 5) -> list[cal.Sample]:
    """Conversations of tool rounds, some with parallel calls, some plain text: recorded as ``fixed_c +
    per_message x messages + per_id_token x call-id tokens + 1.1 x tokens`` (each conversation its own fixed;
    each call's id 17 to 21 tokens, as Anthropic's are in cl100k_base, sent with the call and with its result)."""
    rng = np.random.default_rng(11)
    out = []
    for c in range(convs):
        tokens, msgs, ids = 500, 2, 0
        for i in range(8):
            out.append(
                cal.Sample(
                    f"c{c}",
                    0,
                    i,
                    f"m{c}.{i}",
                    tokens,
                    msgs,
                    False,
                    4 * tokens,
                    int(round(3_000 * (c + 1) + per_message * msgs + per_id_token * ids + 1.1 * tokens)),
                    "anthropic",
                    "vcr-cassette",
                    "main",
                    (tokens - 100, 0, 0),
                    id_tokens=ids,
                )
            )
            calls = int(rng.integers(0, 5))  # 0: a text reply and a user message; else calls and their results
            msgs += 2 if calls == 0 else 1 + calls
            ids += 2 * int(rng.integers(17, 22, size=calls).sum())
            tokens += int(rng.integers(20, 400))
    return out


@pytest.mark.parametrize(("per_message", "per_id_token"), [(0.0, 1.05), (30.0, 0.0)])
def test_fit_frames_by_call_ids_where_the_provider_does(per_message: float, per_id_token: float) -> None:
    """Each tool_use and tool_result block Anthropic receives carries the call's id, which the engine's count
    leaves out; the pydantic-ai cassettes show about 1.04 tokens per cl100k_base token of the ids, whatever the
    message holds. The fit takes framing by call ids where that predicts each conversation better held out, else
    per message, and recovers it."""
    rows = _framed(per_message, per_id_token)
    c = cal.fit(rows, by_kind=False)
    assert c.per_call_id_token == pytest.approx(per_id_token, abs=0.02)
    assert c.per_message == pytest.approx(per_message, abs=0.5)
    assert c.scale == pytest.approx(1.1, abs=2e-3)
    assert cal.held_out(rows).p90 < 2e-3
    wrong = "message" if per_id_token else "call_id"
    assert cal.held_out(rows).p90 < cal.Group(rows).loo(None, False, wrong)  # type: ignore[operator]


def test_a_fit_without_tool_calls_frames_per_message() -> None:
    rows = [replace(s, id_tokens=0) for s in _framed(30.0, 0.0)]
    assert cal.Group(rows).framing_of(None) == "message"


def _billed_less() -> list[cal.Sample]:
    """Three conversations billed less as they grow (API-feature cassettes: tool search swaps tool definitions)."""

    def sample(conv: str, i: int, tokens: int, recorded: int) -> cal.Sample:
        args = (conv, 0, i, f"{conv}{i}", tokens, 2 + 2 * i, False, 4 * tokens, recorded)
        return cal.Sample(*args, "anthropic", "vcr-cassette", "main", (tokens - 100, 0, 0))

    return [
        *(sample("a", i, t, y) for i, (t, y) in enumerate([(1_000, 2_000), (2_000, 1_900), (3_000, 1_850)])),
        *(sample("b", i, t, y) for i, (t, y) in enumerate([(5_000, 6_000), (6_000, 5_900), (7_000, 5_800)])),
        *(sample("c", i, t, y) for i, (t, y) in enumerate([(9_000, 10_100), (9_500, 10_000)])),
    ]


def _loo_by_refitting(rows: list[cal.Sample], by_kind: bool, framing: str) -> float | None:
    """What the choices compare, as the fit defined it before sums: each conversation predicted by a fit on the
    rows of the others (least squares on the rows), anchored on its segments' first requests; the mean error."""
    firsts = {key: seg[0] for key, seg in _segments_of(rows).items()}
    convs = sorted({b.conversation for _, b in _growth(rows)})
    errs = []
    for conv in convs if len(convs) >= 2 else ():
        train = [s for s in rows if s.conversation != conv]
        if len(_growth(train)) < 2:
            continue
        c = cal.fit(train, by_kind, framing)  # type: ignore[arg-type]
        ratios = [c.ratio(k) for k in ("prose", "code", "json")]
        for s in rows:
            a = firsts[(s.conversation, s.segment)]
            if s.conversation == conv and a is not s:
                dk = [b - x for x, b in zip(a.kinds, s.kinds, strict=True)]
                framed = c.per_message * (s.messages - a.messages) + c.per_call_id_token * (s.id_tokens - a.id_tokens)
                errs.append(abs(a.recorded + framed + float(np.dot(ratios, dk)) - s.recorded) / s.recorded)
    return float(np.mean(errs)) if errs else None


def _segments_of(rows: list[cal.Sample]) -> dict[tuple[str, int], list[cal.Sample]]:
    out: dict[tuple[str, int], list[cal.Sample]] = {}
    for s in rows:
        out.setdefault((s.conversation, s.segment), []).append(s)
    return out


def _growth(rows: list[cal.Sample]) -> list[tuple[cal.Sample, cal.Sample]]:
    """(first request of its segment, later request) for every later request."""
    return [(seg[0], s) for seg in _segments_of(rows).values() for s in seg[1:]]


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(lambda: _samples((2_000, 40.0, 1.1, 900), convs=5, kinds=(1.0, 1.25, 0.9)), id="kinds"),
        pytest.param(lambda: _framed(0.0, 1.05), id="call-ids"),
        pytest.param(lambda: _framed(30.0, 0.0, convs=7), id="per-message"),
        pytest.param(_billed_less, id="billed-less"),
        pytest.param(lambda: _samples((2_000, 0.0, 1.1, 0), convs=2), id="two-conversations"),
    ],
)
@pytest.mark.parametrize("by_kind", [True, False])
@pytest.mark.parametrize("framing", ["message", "call_id"])
def test_the_choices_from_sums_agree_with_fits_on_the_rows(rows, by_kind: bool, framing: str) -> None:
    """The choices (framing, a ratio per kind) compare fits on all but a conversation or two, solved from each
    conversation's sums of the normal equations; they agree with least squares on the rows to rounding, through
    every branch of the fit (a ratio per kind or one, whole prompts where growth is billed less)."""
    data = rows()
    rng = np.random.default_rng(5)
    noisy = [replace(s, recorded=int(s.recorded * (1 + rng.normal(0, 0.01)))) for s in data]  # no exact fit
    group = cal.Group(noisy)
    for exclude in (None, *range(len(group.names))):  # every one: they are worked out together, in one batch
        keep = [s for s in noisy if exclude is None or s.conversation != group.names[exclude]]
        want = _loo_by_refitting(keep, by_kind, framing)
        got = group.loo(exclude, by_kind, framing)  # type: ignore[arg-type]
        assert (got is None) == (want is None)
        if want is not None:
            assert got == pytest.approx(want, rel=1e-9)


def test_the_choices_are_the_same_however_they_are_batched(monkeypatch: pytest.MonkeyPatch) -> None:
    """:meth:`Group.loo` solves the fits of every conversation left out together, in batches of at most
    ``_MAX_SYSTEMS`` fits, and gives the one-ratio figure with the per-kind one: one conversation to a batch, or
    one ratio asked before a ratio per kind, gives the same numbers to the last bit."""
    rng = np.random.default_rng(7)
    rows = [
        replace(s, recorded=int(s.recorded * (1 + rng.normal(0, 0.01))))
        for s in _samples((2_000, 40.0, 1.1, 900), convs=6, kinds=(1.0, 1.25, 0.9))
    ]
    keys = [(e, k, f) for e in (None, *range(6)) for k in (True, False) for f in ("message", "call_id")]
    whole = cal.Group(rows)
    want = {key: whole.loo(*key) for key in keys}  # type: ignore[arg-type]
    monkeypatch.setattr(group_module, "_MAX_SYSTEMS", 1)
    apart = cal.Group(rows)
    got = {key: apart.loo(*key) for key in reversed(keys)}  # type: ignore[arg-type]
    assert got == want
    assert len({v for v in want.values() if v is not None}) > 2  # the figures differ: the test can tell them apart


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
    path = files.save(cals, tmp_path / "cal.json")
    assert files.load(path) == cals
    assert path.read_bytes() == files.save(files.load(path), tmp_path / "again.json").read_bytes()


def test_load_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"nope": 1}')
    with pytest.raises(InvalidConfig, match="not a calibration file"):
        files.load(bad)


def test_a_file_framed_per_tool_block_asks_for_a_new_calibration(tmp_path: Path) -> None:
    """A file from before the framing by call ids holds ``per_tool_block``, a different unit: refused, saying what
    to do, rather than read as if its coefficient were per id token."""
    cals = cal.calibrate(_samples((25_000, 70, 1.13, 0)), tokenizer="cl100k_base", fitted_on="s", checksum="c")
    path = files.save(cals, tmp_path / "cal.json")
    old = path.read_text().replace('"per_call_id_token"', '"per_tool_block"')
    assert old != path.read_text()
    path.write_text(old)
    with pytest.raises(InvalidConfig, match="per block.*run csim calibrate again"):
        files.load(path)


def test_choose_picks_the_matching_group_or_says_why_not() -> None:
    base = cal.calibrate(_samples((25_000, 70, 1.13, 0)), tokenizer="cl100k_base", fitted_on="s", checksum="c")[0]
    sub = replace(base, agent="subagent")
    other = replace(base, provider="openai", format="openai-chat")
    assert files.choose([base, sub, other], "anthropic") is base
    with pytest.raises(InvalidConfig, match="3 calibrations"):
        files.choose([base, sub, replace(base, format="vcr")], "anthropic")


def _tiny_conversation(call_id: str = "c1") -> Conversation:
    return Conversation(
        "t",
        (
            Message("u1", "user", (Part("text", "Fix the failing test in parser.py"),)),
            Message(
                "a1", "assistant", (Part("tool_call", call_id=call_id, name="read", args='{"path": "parser.py"}'),)
            ),
            Message(
                "t1",
                "tool",
                (Part("tool_result", "def parse(x):\n    return x\n" * 40, call_id=call_id, name="read"),),
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
    # framed by call ids: the second request's prompt holds the call and its result, each with the id
    toolu = "toolu_01X9wcHKKAZD9tBC711xipPa"
    id_tokens = get_tokenizer("cl100k_base").count(toolu)
    assert id_tokens > 10
    conv = _tiny_conversation(toolu)
    raw = run(make_policy("none"), conv, RunConfig())
    per_id = replace(c, coefficients=cal.Coefficients(20_000, 0, 1.2, 0, per_call_id_token=1.5))
    framed = run(make_policy("none"), conv, RunConfig(calibration=per_id, cache="provider"))
    assert [k["context_tokens"] for k in framed.rows] == [
        per_id.apply(r["context_tokens"], r["messages_in_view"], id_tokens=n)
        for r, n in zip(raw.rows, (0, 2 * id_tokens), strict=True)
    ]
    # the prompt cache's blocks carry the same count: what it bills adds up to the prompt
    for k in framed.rows:
        cached = k["cache_read_tokens"] + k["cache_write_5m_tokens"] + k["cache_write_1h_tokens"]
        assert 0 < cached <= k["context_tokens"]


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


@pytest.mark.parametrize(("agent", "rows", "held"), [("main", 326, 319), ("subagent", 23, 20)])
def test_claude_code_held_out_error_meets_the_targets(claude_rows: list[cal.Sample], agent, rows, held) -> None:
    """Estimated text, each session predicted by a fit on the others, anchored on the first request of each of
    its segments (the 7 and 3 first requests are the anchors). Measured: main 1.46% / 2.45%; subagents 1.01% /
    1.36%, where the whole-prompt fit of before missed by 6.69% / 20.91% (each subagent has its own system
    prompt). Each fit takes a ratio per kind only where that predicts its own conversations better, and framing
    by call ids or per message likewise; forced, a ratio per kind carries to the other long session
    better."""
    group = [s for s in claude_rows if s.agent == agent]
    assert len(group) == rows
    loco = cal.held_out(group, "conversation")
    assert loco.split == "conversation" and loco.anchored and loco.n_held_out == held
    assert loco.median <= TARGET_MEDIAN and loco.p90 <= TARGET_P90, loco
    assert loco.p90 < loco.baseline_p90  # the tokenizer fit beats the chars baseline where it matters
    if agent == "main":
        forced = cal.held_out(group, "conversation", by_kind=True)
        assert forced.median < loco.median and forced.p90 < loco.p90  # a ratio per kind carries, fitted on enough
        alt = cal.held_out(group, "alternate")
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
    assert k.kind_scales is not None
    prose, code, _ = k.kind_scales
    assert code > prose + 0.1  # and more again on code
    # beyond the files Claude Code re-attaches (estimated from the history), little comes back unseen
    assert abs(k.after_compaction) <= 2_000


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
    assert "n fit 326, n held out 319" in text and "estimated text" in text and "chars baseline" in text
    [c] = files.load(out)
    assert c.fitted_on.endswith("claude-code") and len(c.checksum) == 64
    assert files.load_for_run(out, "anthropic", "claude-code") == c


@pytest.mark.parametrize(
    ("folder", "key", "anchored", "held"),
    [
        ("openhands/runtime_trajs", "anthropic/openhands-events/main", True, 7),
        ("openhands/llm_data/llm-logs", "anthropic/openhands-llm/main", False, 6),
        ("openhands/llm_data/nonfncall-llm-logs", "deepseek/openhands-llm/main", False, 4),
    ],
)
def test_openhands_recordings_meet_the_targets_held_out(folder: str, key: str, anchored: bool, held: int) -> None:
    """OpenHands' shared recordings with usage, each conversation predicted by a fit on the others. The events
    (several requests each) are anchored: measured 1.49% / 1.87%. The LLM logs hold one whole request each (its
    full prompt, nothing hidden but the provider's framing), fitted on whole prompts: 0.10% / 0.22% (Claude
    Sonnet 4) and 0.00% / 0.54% (DeepSeek)."""
    from sim.cli.calibration import load_source

    path = RECORDED / folder
    if not path.is_dir():
        pytest.skip(f"recorded sample not found at {path} (set CSIM_RECORDED to its folder)")
    groups, _, _ = load_source(str(path), None, None, False)
    rows = [s for fmt, convs in groups for s in cal.samples(convs, fmt)]
    [c] = [c for c in cal.calibrate(rows, tokenizer="cl100k_base", fitted_on="t", checksum="c") if c.key == key]
    e = c.errors
    assert e.anchored is anchored and e.n_held_out == held
    assert e.median <= TARGET_MEDIAN and e.p90 <= TARGET_P90, e


def test_a_fit_never_gives_a_ratio_that_is_not_positive() -> None:
    """Where what the requests added does not track what they were billed (API-feature cassettes: tool search
    swaps tool definitions, code execution adds hidden files), the fit on differences comes out negative; it
    falls back to whole prompts, and ``csim calibrate`` still writes a usable file."""

    rows = _billed_less()
    pairs = [(b.tokens - a.tokens, b.recorded - a.recorded) for a, b in _growth(rows)]
    assert all(dt > 0 > dy for dt, dy in pairs)  # billed less as each conversation grows
    c = cal.fit(rows)
    assert c.scale > 0 and c.kind_scales is None
    [made] = cal.calibrate(rows, tokenizer="cl100k_base", fitted_on="t", checksum="c")
    assert made.coefficients.scale > 0


def test_a_ratio_per_kind_stays_a_tokenizer_ratio() -> None:
    """A kind whose column takes up something else (here the framing of the tool calls its JSON belongs to: each
    request adds 10 tokens of JSON and 100 of framing) would be fitted a ratio no two tokenizers differ by; the
    fit keeps one ratio for all instead."""
    rows = []
    for c in range(3):
        for i in range(6):
            prose, js = 500 + 200 * i + 37 * (i * i % 5), 10 * i
            recorded = 5_000 * (c + 1) + prose + 11 * js
            args = (f"c{c}", 0, i, f"m{c}.{i}", 100 + prose + js, 2 + 2 * i, False, 4 * prose, recorded)
            rows.append(cal.Sample(*args, "anthropic", "vcr-cassette", "main", (prose, 0, js)))
    c = cal.fit(rows, by_kind=True, framing="message")
    assert c.kind_scales is None
    assert cal.RATIO_RANGE[0] <= c.scale <= cal.RATIO_RANGE[1]


def test_a_kind_seen_growing_in_one_conversation_takes_the_one_ratio() -> None:
    """Code at 1.3 in conversation c0 alone, prose at 1.1 everywhere: a code ratio fitted on c0 is c0's, and the
    held-out choice cannot test it (leaving c0 out leaves no code), so code takes the one ratio; once code grows
    in a second conversation it has its own."""
    rows = _samples((2_000, 0.0, 1.1, 0), kinds=(1.1, 1.3, 1.1))
    only_c0 = [s if s.conversation == "c0" else replace(s, recorded=s.recorded - round(0.2 * s.kinds[1])) for s in rows]
    only_c0 = [
        s if s.conversation == "c0" else replace(s, kinds=(s.kinds[0] + s.kinds[1], 0, s.kinds[2])) for s in only_c0
    ]
    one = cal.fit(only_c0, by_kind=False).scale
    c = cal.fit(only_c0, by_kind=True)
    assert c.kind_scales is None or c.kind_scales[1] == pytest.approx(one, abs=1e-9)
    assert cal.fit(rows, by_kind=True).kind_scales == pytest.approx((1.1, 1.3, 1.1), abs=2e-3)


def test_a_cassettes_chained_calls_are_one_segment_of_its_file(tmp_path: Path) -> None:
    """A cassette's calls are one conversation each; those of one chain (each re-sending the previous prompt,
    all text) are one segment of the file's session, anchored on the first; the others a segment each."""
    from sim.formats import read
    from tests.builders import ANTHROPIC_RUN, cassette

    task, call, result, image = ANTHROPIC_RUN
    head = {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": [{"name": "add", "input_schema": {}}]}
    bodies = [
        {**head, "messages": [task]},
        {**head, "messages": [task, call, result]},
        {**head, "messages": [task, call, result, call, result]},
        {**head, "messages": [task, call, result, image]},
    ]
    convs = read(cassette(tmp_path, bodies), "vcr-cassette").conversations
    rows = cal.samples(convs, "vcr-cassette")
    assert [(s.conversation, s.segment) for s in rows] == [("agent_run", 0)] * 3 + [("agent_run", 3)]
    assert [(a.message_id, b.turn) for a, b in _growth(rows)] == [("response", 1), ("response", 2)]


def test_cassettes_estimated_text_held_out_by_file() -> None:
    """pydantic-ai's cassettes: the calls of one agent run whose requests show everything as text are anchored on
    the run's first call, and what each added is estimated, each file predicted by a fit on the others. Both meet
    the targets: OpenAI (29 calls held out) measured 1.52% / 4.35%; Anthropic (15) 1.86% / 3.11%, framed by the
    tokens of the call ids its tool_use and tool_result blocks carry (5.54% / 34.15% framed per message, which
    does not follow them on prompts of a few hundred tokens; 2.27% / 4.55% framed by a constant per block)."""
    from sim.cli.calibration import load_source

    path = RECORDED / "pydantic-ai-cassettes"
    if not path.is_dir():
        pytest.skip(f"recorded sample not found at {path} (set CSIM_RECORDED to its folder)")
    groups, _, _ = load_source(str(path), "vcr-cassette", None, True)
    rows = [s for fmt, convs in groups for s in cal.samples(convs, fmt)]
    made = {c.key: c.errors for c in cal.calibrate(rows, tokenizer="cl100k_base", fitted_on="t", checksum="c")}
    openai, anthropic = made["openai/vcr-cassette/main"], made["anthropic/vcr-cassette/main"]
    assert openai.anchored and openai.split == "conversation" and openai.n_held_out == 29
    assert openai.median <= TARGET_MEDIAN and openai.p90 <= TARGET_P90, openai
    assert anthropic.anchored and anthropic.n_held_out == 15
    assert anthropic.absolute_median is not None and anthropic.median < anthropic.absolute_median
    assert anthropic.median <= TARGET_MEDIAN and anthropic.p90 <= TARGET_P90, anthropic
    assert anthropic.median < anthropic.baseline_median and anthropic.p90 < anthropic.baseline_p90
