"""Fidelity: calibrated replays against recorded prompt tokens and recorded compactions."""

from __future__ import annotations

import csv
import functools
import json
import os
from pathlib import Path

import pytest

from sim.calibration import fidelity, files
from sim.calibration import fit as cal
from sim.cli.main import main
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.errors import InvalidConfig

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
CAL = cal.Calibration(
    "anthropic",
    "claude-code",
    "cl100k_base",
    cal.Coefficients(20_000, 40, 1.1, 3_000),
    10,
    cal.HeldOut("conversation", 9, 10, 0, 0, 0, 0),
    "synthetic",
    "c",
)


def _session(pre_tokens: int = 99_000) -> Conversation:
    """Two turns, a recorded compaction (summary message), two more turns; no usage yet."""
    msgs = [Message("u1", "user", (Part("text", "Refactor the loader and keep the API."),))]
    for k in range(2):
        msgs += [
            Message(f"a{k}", "assistant", (Part("tool_call", call_id=f"c{k}", name="read", args="{}"),)),
            Message(f"t{k}", "tool", (Part("tool_result", f"line {k}\n" * 300, call_id=f"c{k}", name="read"),)),
        ]
    msgs.append(
        Message(
            "s",
            "user",
            (Part("text", "This session is being continued. Summary: loader refactor."),),
            meta={"compact_summary": True, "compact_boundary": {"trigger": "auto", "pre_tokens": pre_tokens}},
        )
    )
    for k in range(2, 4):
        msgs += [
            Message(f"a{k}", "assistant", (Part("tool_call", call_id=f"c{k}", name="read", args="{}"),)),
            Message(f"t{k}", "tool", (Part("tool_result", f"more {k}\n" * 100, call_id=f"c{k}", name="read"),)),
        ]
    msgs.append(Message("end", "assistant", (Part("text", "Done."),)))
    return Conversation("s1", tuple(msgs), meta={"compactions": [{"index": 5}]})


def _with_recorded_usage(conv: Conversation, c: cal.Calibration) -> Conversation:
    """Give every reply the usage the calibration predicts from the engine's own counts of its segment."""
    usage: dict[str, int] = {}
    for seg in cal.segments(conv):
        replies = [m for m in seg.messages if m.role == "assistant"]
        for m, row in zip(replies, cal.replay_counts(seg), strict=True):
            usage[m.id] = c.apply(row["context_tokens"], row["messages_in_view"], cal.opens_with_summary(seg))
    msgs = tuple(
        Message(
            m.id, m.role, m.parts, usage=Usage(cache_read_tokens=usage[m.id]) if m.id in usage else None, meta=m.meta
        )
        for m in conv.messages
    )
    return Conversation(conv.id, msgs, meta=conv.meta)


def test_a_perfect_calibration_replays_with_zero_error_across_compactions() -> None:
    conv = _with_recorded_usage(_session(), CAL)
    res = fidelity.replay(conv, CAL, "continue")
    assert [r["turn"] for r in res.rows] == [1, 2, 3, 4, 5]
    assert [r["segment"] for r in res.rows] == [0, 0, 1, 1, 1]
    assert all(r["relative_error"] == 0 for r in res.rows)
    assert [r["summarised"] for r in res.rows] == [False, False, True, True, True]
    [k] = res.compactions
    assert k["after_turn"] == 2 and k["pre_tokens"] == 99_000
    # the request at the boundary holds everything before it: more than the last recorded prompt
    assert k["simulated"] > res.rows[1]["simulated"]


def test_stop_ends_the_curve_at_the_first_compaction() -> None:
    conv = _with_recorded_usage(_session(), CAL)
    res = fidelity.replay(conv, CAL, "stop")
    assert [r["turn"] for r in res.rows] == [1, 2]
    assert len(res.compactions) == 1
    with pytest.raises(InvalidConfig):
        fidelity.replay(conv, CAL, "skip")  # type: ignore[arg-type]


def test_a_wrong_calibration_shows_in_the_curve(tmp_path: Path) -> None:
    conv = _with_recorded_usage(_session(), CAL)
    off = cal.Calibration(**{**CAL.__dict__, "coefficients": cal.Coefficients(20_000, 40, 1.1, 0)})
    res = fidelity.replay(conv, off, "continue", "calibrated")
    errs = [r["relative_error"] for r in res.rows]
    assert errs[:2] == [0, 0] and all(e < 0 for e in errs[2:])  # the missing post-compaction overhead
    curve, comps = fidelity.write(res, tmp_path)
    rows = list(csv.DictReader(curve.read_text().splitlines()))
    assert list(rows[0]) == fidelity.CURVE_COLUMNS
    assert fidelity.CURVE_COLUMNS[:7] == [
        "turn",
        "segment",
        "message_id",
        "recorded",
        "simulated",
        "relative_error",
        "summarised",
    ]
    assert len(rows) == 5 and len(list(csv.DictReader(comps.read_text().splitlines()))) == 1


@pytest.fixture(scope="module")
def held_out_calibration(tmp_path_factory) -> Path:
    """A calibration fitted without session 258c7280, so its fidelity curve is out of sample."""
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"recorded sample not found at {folder} (set CSIM_RECORDED to its folder)")
    from sim.formats import read

    convs = [
        c
        for p in sorted(folder.glob("*.jsonl"))
        if not p.name.startswith("258c")
        for c in read(p, "claude-code").conversations
    ]
    fits = cal.calibrate(
        cal.samples(convs, "claude-code"), tokenizer="cl100k_base", fitted_on="without 258c", checksum="-"
    )
    return files.save([c for c in fits if c.agent == "main"], tmp_path_factory.mktemp("cal") / "cal.json")


def test_real_session_out_of_sample(held_out_calibration: Path, tmp_path: Path, capsys) -> None:
    session = RECORDED / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    out = tmp_path / "fid"
    assert (
        main(
            [
                "fidelity",
                str(session),
                "--format",
                "claude-code",
                "--calibration",
                str(held_out_calibration),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "compaction 1 after turn 102" in text
    folder = out / "258c7280-ae70-4798-800f-63464d01a85d"
    rows = list(csv.DictReader((folder / "fidelity.csv").read_text().splitlines()))
    errs = sorted(abs(float(r["relative_error"])) for r in rows)
    assert len(errs) == 152
    # anchored (the default): the recorded messages at the recorded usage's sizes, the rest estimated with a
    # calibration fitted without this session. Measured: 0.00% median and p90.
    assert errs[len(errs) // 2] <= 0.005 and errs[int(0.9 * len(errs))] <= 0.02
    assert "anchored; 5 recorded messages estimated" in text
    assert (folder / "fidelity.png").stat().st_size > 10_000  # the curve as a figure
    # which part of each prompt was estimated: the few messages no usage covered, a small share
    shares = sorted(float(r["estimated_share"]) for r in rows)
    assert shares[len(shares) // 2] < 0.02 and shares[-1] < 0.15  # most after the compaction (its summary)
    assert all(int(r["estimated_tokens"]) <= int(r["simulated"]) for r in rows)
    [comp] = list(csv.DictReader((folder / "compactions.csv").read_text().splitlines()))
    assert int(comp["pre_tokens"]) == 167_094
    assert abs(float(comp["relative_error"])) <= 0.03  # simulated tokens at the boundary vs preTokens
    # the first request after the compaction, its overhead estimated (summary and what came back): -0.85%
    assert int(comp["first_after_recorded"]) == 33_960
    assert abs(float(comp["first_after_relative_error"])) <= 0.05
    # what the recorded summary kept of the probes of its span (sim.calibration.survival), printed and in summary.json
    assert "recorded summaries kept, verbatim, of the probes of their spans: artifact " in text
    [summary] = json.loads((out / "summary.json").read_text())
    artifacts = summary["retention"]["observed"]["artifact"]
    assert artifacts["probes"] >= 100 and 0 < artifacts["kept"] < artifacts["probes"]
    assert 0 < artifacts["kept_needed_after"] <= artifacts["needed_after"] <= artifacts["probes"]


@functools.cache
def _held_out_replay(session: str) -> tuple[Conversation, fidelity.Fidelity]:
    """A shared Claude Code session replayed (anchored) with a calibration fitted on the other recordings."""
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"recorded sample not found at {folder} (set CSIM_RECORDED to its folder)")
    from sim.formats import read

    convs = {p.stem: c for p in sorted(folder.glob("*.jsonl")) for c in read(p, "claude-code").conversations}
    others = [c for name, c in convs.items() if name != session]
    fits = cal.calibrate(cal.samples(others, "claude-code"), tokenizer="cl100k_base", fitted_on="-", checksum="-")
    conv = convs[session]
    return conv, fidelity.replay(conv, next(c for c in fits if c.agent == "main"), "continue")


@pytest.mark.parametrize(
    ("session", "recorded", "error"),
    [
        ("258c7280-ae70-4798-800f-63464d01a85d", 33_960, -0.0193),
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", 32_015, +0.0132),
    ],
)
def test_the_first_request_after_each_recorded_compaction_is_estimated_held_out(
    session: str, recorded: int, error: float
) -> None:
    """Its overhead estimated: the session's own (from its first request), the files Claude Code re-attaches
    (the five most recently used, from the history, each at most 5,000 tokens: policies.claude_code), and the
    constant the other sessions leave beyond them. Measured -1.93% and +1.32%; the bar is 5% (-1.05% for 258c7280
    while the fit framed per message; the other sessions' fit now frames by call ids, which predicts them
    better held out). Before the files
    were estimated, a constant alone missed fa812bfe by +13.4%: it re-attached 1,700 tokens, 258c7280 4,200."""
    _, res = _held_out_replay(session)
    [comp] = res.compactions
    assert comp["first_after_recorded"] == recorded
    assert comp["first_after_relative_error"] == pytest.approx(error, abs=0.001)
    assert abs(comp["first_after_relative_error"]) <= 0.05


@pytest.mark.parametrize(
    ("session", "requests", "ttl", "misses"),
    [("258c7280-ae70-4798-800f-63464d01a85d", 152, "1h", 2), ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", 157, "5m", 1)],
)
def test_real_session_cache_usage_out_of_sample(session: str, requests: int, ttl: str, misses: int) -> None:
    """The prompt cache on the recorded timestamps against each shared Claude Code session's recorded cache reads
    and writes (Claude Code 2.1.39, Opus 4.6), calibration fitted on the other sessions. Measured: every recorded
    miss predicted (each right after a background-task notification: 2 of 2 and 1 of 1), no other request
    predicted as one; cache writes -8.3% and -7.3% of the recorded; cost priced from simulated usage -2.3% and
    -1.1% of the cost priced from the recorded usage. The misses read about 4,300 tokens more than recorded:
    the client's hidden first-message context is part of the overhead the head block carries, and the rebuild
    rewrites it too."""
    conv, res = _held_out_replay(session)
    c = res.cache_summary()
    assert c is not None and c["requests"] == requests
    assert fidelity.recorded_ttl(conv.messages) == ttl
    assert c["recorded_misses"] == c["recorded_misses_predicted"] == misses
    assert c["other_requests_predicted_as_misses"] == 0
    assert abs(c["cache_write_relative_error"]) <= 0.10
    assert abs(c["cost_relative_error"]) <= 0.05
    reads = sum(r["simulated_cache_read"] for r in res.rows) / sum(r["recorded_cache_read"] for r in res.rows)
    assert 0.97 < reads < 1.03
    index = {m.id: i for i, m in enumerate(conv.messages)}
    for r in res.rows:  # each recorded miss answers a background-task notification
        if r["recorded_miss"]:
            before = conv.messages[: index[r["message_id"]]]
            assert next(m for m in reversed(before) if m.role == "user").meta.get("task_notification")


def test_every_shared_claude_code_session_replays_at_its_recorded_prompts_held_out() -> None:
    """Anchored, under ``none``, each shared Claude Code session with usage reproduces its recorded prompt tokens
    (median <= 0.5%, p90 <= 2%), the calibration for what is estimated fitted on the other sessions only."""
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"recorded sample not found at {folder} (set CSIM_RECORDED to its folder)")
    from sim.formats import read

    convs = {p.name: c for p in sorted(folder.glob("*.jsonl")) for c in read(p, "claude-code").conversations}
    checked = 0
    for name, conv in convs.items():
        if cal.agent_of(conv) != "main" or not any(m.usage for m in conv.messages):
            continue
        others = [c for n, c in convs.items() if n != name]
        fits = cal.calibrate(cal.samples(others, "claude-code"), tokenizer="cl100k_base", fitted_on="-", checksum="-")
        s = fidelity.replay(conv, next(c for c in fits if c.agent == "main")).summary()
        assert s["median_abs_relative_error"] <= 0.005 and s["p90_abs_relative_error"] <= 0.02, (name, s)
        checked += 1
    assert checked >= 4


def test_cache_reads_are_checked_against_what_the_block_hashes_prove(tmp_path: Path) -> None:
    """A token-level trace whose third request repeats the first, after a side request that diverged: the replay
    (one growing conversation) reads what came before each from the cache, the hashes prove less was sent before
    (for the side request its first 100 blocks, for the third the first request's): both are counted as reading
    beyond the proof, and the session is priced both ways."""
    from sim.formats import read

    def request(t: float, tokens_in: int, blocks: list[int]) -> dict[str, object]:
        return {"t": t, "type": "n", "model": "claude-opus-4-5", "in": tokens_in, "out": 10, "hash_ids": blocks}

    blocks = list(range(1, 200))  # 12,000 tokens: past the model's smallest cacheable prompt
    doc = {
        "id": "side", "models": ["claude-opus-4-5"], "block_size": 64, "tool_tokens": 5_000, "system_tokens": 5_000,
        "requests": [
            request(0.0, 12_000, blocks[:187]),
            request(10.0, 12_600, [*blocks[:100], *range(900, 996)]),
            request(20.0, 12_700, blocks[:198]),
        ],
    }  # fmt: skip
    path = tmp_path / "side.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (conv,) = read(path, "kv-trace").conversations
    res = fidelity.replay(conv, CAL, "continue")
    proof = res.summary()["provable_cache"]
    assert proof is not None and proof["requests"] == 2
    rows = {r["message_id"]: r for r in res.rows}
    assert rows["r2"]["provable_cache_read"] == 187 * 64
    assert rows["r2"]["simulated_cache_read"] > 187 * 64 + 64  # the side request's prompt, which r2 does not begin with
    # the side request too: the replay makes it extend the first request, the hashes show it left it at block 100
    assert rows["r1"]["provable_cache_read"] == 100 * 64 < rows["r1"]["simulated_cache_read"] - 64
    assert proof["requests_reading_beyond_proof"] == 2
    assert proof["provable_cost_usd"] > 0 and proof["simulated_cost_usd"] > 0
