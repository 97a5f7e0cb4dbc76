"""``csim import`` end to end: the report it prints, the native files it writes, strict and lenient exits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sim.cli.main import main
from sim.formats import read

GOLDEN = Path(__file__).resolve().parent / "golden" / "formats"
SAMPLES = ["anthropic_messages.jsonl", "codex_rollout.jsonl", "openai_responses.json", "vcr_cassette.yaml"]


def _inputs(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    for name in SAMPLES:
        shutil.copy(GOLDEN / name, src / "sub" / name if name.startswith("vcr") else src / name)
    (src / "notes.txt").write_text("not a recording", encoding="utf-8")
    return src


def test_import_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _inputs(tmp_path), tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert (
        f"{src / 'codex_rollout.jsonl'}: codex-rollout, 1 conversation, 12 messages, 4 tool calls, "
        "usage on 4 of 12 messages" in text
    )
    assert f"{src / 'sub' / 'vcr_cassette.yaml'}:192: skipped: interaction 4: GET example.com" in text
    # only recording suffixes are read from a directory; the other files are named, with why, and not counted
    assert f"{src / 'notes.txt'}: skipped: not a recording (a folder's .json, .jsonl," in text
    assert text.splitlines()[-1].startswith("total: 4 files, 8 conversations, ")
    assert text.splitlines()[-1].endswith("; passed over 1 other file (not recordings)")
    written = sorted(p.name for p in out.iterdir())
    assert written == [Path(n).stem.split(".")[0] + ".jsonl" for n in SAMPLES]
    for name, fmt in [("anthropic_messages.jsonl", "anthropic-messages"), ("vcr_cassette.yaml", "vcr-cassette")]:
        original = read(next(src.rglob(name)), fmt).conversations
        assert read(out / (Path(name).stem + ".jsonl"), "native").conversations == original
    again = tmp_path / "again"
    assert main(["import", str(src), "--out", str(again)]) == 0
    for p in out.iterdir():
        assert (again / p.name).read_bytes() == p.read_bytes()  # deterministic bytes


def test_strict_bad_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _inputs(tmp_path)
    bad = src / "broken.jsonl"
    lines = (GOLDEN / "codex_rollout.jsonl").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3][:40]
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"csim: error: {bad}:4: invalid JSON")
    assert main(["import", str(bad), "--lenient", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert f"{bad}:4: skipped: invalid JSON" in out and "1 conversation, 11 messages" in out


def test_nothing_read_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}', encoding="utf-8")
    assert main(["import", str(p), "--out", str(tmp_path / "o")]) == 2
    assert "recognised no format" in capsys.readouterr().err
    assert main(["import", str(p), "--lenient", "--out", str(tmp_path / "o")]) == 2
    captured = capsys.readouterr()
    assert "x.json: not read:" in captured.out and "no conversation could be read" in captured.err
