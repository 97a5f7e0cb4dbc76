"""What recorded summaries keep of the probes of their spans (``sim.calibration.survival``, issue 28 item 1)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from sim.calibration.survival import by_kind, observed_survival, shape_of, summaries_of
from sim.core.conversation import Conversation, Fact, Message, Part

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")


def _m(i: int, role: str, text: str, **meta: object) -> Message:
    return Message(f"m{i}", role, (Part("text", text),), meta=meta)  # type: ignore[arg-type]


def _two_rounds() -> Conversation:
    msgs = (
        _m(0, "system", "sys"),
        _m(1, "user", "fix src/app.py, never touch setup.cfg"),
        _m(2, "assistant", "reading src/app.py"),
        _m(3, "user", "Summary: working on src/app.py.", compact_summary=True),
        _m(4, "user", "also see docs/notes.md"),
        _m(5, "assistant", "ok"),
        _m(6, "user", "Summary: app.py and notes done.", compact_summary=True),
        _m(7, "assistant", "editing src/app.py and docs/notes.md"),
    )
    facts = (
        Fact("path", "artifact", "src/app.py", "m1", ("m6",), carriers=("m3",)),
        Fact("rule", "constraint", "never touch setup.cfg", "m1", ("m6",)),
        Fact("notes", "artifact", "docs/notes.md", "m4", ("m6",)),
        Fact("early", "artifact", "src/app.py", "m1", ("m2",)),
    )
    return Conversation("c", msgs, facts)


def test_each_summary_is_judged_on_what_its_span_established_or_carried() -> None:
    conv = _two_rounds()
    assert summaries_of(conv) == [3, 6]
    rows = {(r.round, r.fact): r for r in observed_survival(conv)}
    # round 1: everything before m3; the first summary keeps the path verbatim, not the rule
    assert rows[1, "path"].kept and not rows[1, "rule"].kept and rows[1, "path"].age_messages == 2
    assert rows[1, "path"].needed_after and not rows[1, "early"].needed_after  # "early" was needed before only
    # round 2: the span since m3 holds the notes (new) and the path (carried by the first summary): neither is in
    # the second summary's text verbatim ("app.py" is not "src/app.py"); the rule left with the first summary
    assert not rows[2, "path"].kept and not rows[2, "notes"].kept
    assert (2, "rule") not in rows and (2, "early") not in rows
    kinds = by_kind(rows.values())
    assert kinds["artifact"]["probes"] == 4 and kinds["artifact"]["kept"] == 2
    assert kinds["constraint"] == {
        "probes": 1,
        "kept": 0,
        "needed_after": 1,
        "kept_needed_after": 0,
        "kept_share": 0.0,
        "kept_needed_after_share": 0.0,
    }


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("src/app.py", "path"),
        ("mix.exs", "path"),
        ("git status -s", "command"),
        ("12345", "number"),
        ("3.14", "number"),
        ("Spotter.Services.Tmux", "identifier"),
        ("Plug.Conn", "identifier"),
        ("render_message", "identifier"),
    ],
)
def test_an_artifact_has_the_shape_published_measurements_count(text: str, shape: str) -> None:
    assert shape_of(text) == shape


def test_survival_by_artifact_shape() -> None:
    rows = observed_survival(_two_rounds())
    assert {r.shape for r in rows if r.kind == "artifact"} == {"path"} and all(
        r.shape == "" for r in rows if r.kind != "artifact"
    )
    assert by_kind(rows, "shape")["path"]["probes"] == 4


def test_a_conversation_without_recorded_summaries_has_nothing_to_observe() -> None:
    conv = _two_rounds()
    plain = replace(conv, messages=tuple(replace(m, meta={}) for m in conv.messages))
    assert observed_survival(plain) == [] and by_kind([]) == {}


def test_the_shared_claude_code_sessions_summaries_keep_a_third_of_their_artifacts() -> None:
    """Measured: of the probes of each session's one recorded compaction, the summary holds 75 of 272 artifacts
    (fa812bfe) and 65 of 165 (258c7280) verbatim, and none of the 3 + 3 commit subjects; file paths 37 of 67, other
    identifiers 102 of 369."""
    from sim.formats.importing import recorded_conversations

    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    rows = []
    for name in ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", "258c7280-ae70-4798-800f-63464d01a85d"):
        [conv], _ = recorded_conversations(folder / f"{name}.jsonl", "claude-code")
        rows += observed_survival(conv)
    kinds = by_kind(rows)
    art = kinds["artifact"]
    assert art["probes"] >= 300 and 0.2 < art["kept_share"] < 0.45
    assert kinds["decision"]["probes"] >= 4 and kinds["decision"]["kept"] == 0
    shapes = by_kind(rows, "shape")
    assert shapes["path"]["kept_share"] > shapes["identifier"]["kept_share"]  # the summary lists the files
