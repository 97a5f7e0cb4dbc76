"""A results folder damaged after the fact (issue 12): a rerun checks every part it would count as done and
redoes the damaged ones, saying so; reading a damaged folder is a one-line error that says how to mend it;
a second sweep on a folder in use is refused; leftovers of a killed sweep are cleared."""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sim.cli.main import main
from sim.core.config import normalise_run
from sim.core.errors import InvalidConfig
from sim.sweep.driver import run_sweep
from sim.sweep.parts import TABLES, finished_parts
from sim.sweep.results import load_results
from sim.sweep.spec import PolicyGrid, Source, SweepSpec

SPEC = SweepSpec(
    (PolicyGrid("none", ()), PolicyGrid("sliding-window", (("trigger_ratio", ("0.7",)),))),
    (Source("scenario", "coding-agent", (("turns", "6"), ("huge_prob", "0"))),),
    (0, 1, 2),
    normalise_run({"window": 12000}, "test"),
)
RUNS_PER_PART = 2


def _bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, engine="pyarrow")
    return buf.getvalue()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "r"
    run_sweep(SPEC, out, workers=1, progress=False)
    return out


@pytest.fixture
def copy(reference: Path, tmp_path: Path) -> Path:
    out = tmp_path / "r"
    shutil.copytree(reference, out)
    return out


def _same_as(out: Path, reference: Path) -> None:
    got, want = load_results(out), load_results(reference)
    for name in TABLES:
        assert _bytes(getattr(got, name)) == _bytes(getattr(want, name)), name


def _damage(part: Path, how: str) -> None:
    if how == "truncated runs":
        f = part / "runs.json.gz"
        f.write_bytes(f.read_bytes()[:100])
    elif how == "missing requests":
        (part / "requests.json.gz").unlink()
    elif how == "changed facts":
        f = part / "facts.json.gz"
        data = bytearray(f.read_bytes())
        data[len(data) // 2] ^= 0xFF
        f.write_bytes(bytes(data))
    elif how == "empty folder":
        shutil.rmtree(part)
        part.mkdir()
    else:
        raise AssertionError(how)


DAMAGE = ["truncated runs", "missing requests", "changed facts", "empty folder"]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_rerun_redoes_a_damaged_part_and_says_so(
    copy: Path, reference: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = finished_parts(copy)[1]
    _damage(victim, how)
    outcome = run_sweep(SPEC, copy, workers=1, progress=False)
    assert (outcome.ran, outcome.parts_written) == (RUNS_PER_PART, 1)
    assert len(outcome.notes) == 1 and str(victim) in outcome.notes[0] and "run again" in outcome.notes[0]
    assert str(victim) in capsys.readouterr().err
    _same_as(copy, reference)
    again = run_sweep(SPEC, copy, workers=1, progress=False)
    assert again.ran == 0 and not again.notes


@pytest.mark.parametrize("how", DAMAGE)
def test_reading_a_damaged_folder_is_one_line_that_says_how_to_mend_it(
    copy: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = finished_parts(copy)[0]
    _damage(victim, how)
    with pytest.raises(InvalidConfig, match=f"run the same csim sweep .* again with --out {copy}"):
        load_results(copy)
    assert main(["compare", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"csim: error: {victim}: ") and err.count("\n") == 1 and "Traceback" not in err


def test_a_part_without_its_listing_is_redone_but_still_reads(copy: Path, reference: Path) -> None:
    victim = finished_parts(copy)[0]
    (victim / "part.json").unlink()
    _same_as(copy, reference)  # as parts written before listings were: read, tables parse
    outcome = run_sweep(SPEC, copy, workers=1, progress=False)
    assert outcome.ran == RUNS_PER_PART and "has no part.json" in outcome.notes[0]
    assert json.loads((victim / "part.json").read_text())["tables"]["runs"]["rows"] == RUNS_PER_PART


def test_a_second_sweep_on_a_folder_in_use_is_refused(copy: Path) -> None:
    parts_before = sorted(p.name for p in (copy / "parts").iterdir())
    tmp = copy / "parts" / ".tmp-inprogress-1"
    tmp.mkdir()  # the first sweep's part being written
    with (copy / ".lock").open("w") as held:  # what the first sweep holds while it writes
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        with pytest.raises(InvalidConfig, match=r"in use by another csim sweep or run \(process 4242\)"):
            run_sweep(SPEC, copy, workers=1, progress=False)
    assert tmp.is_dir()  # untouched
    assert sorted(p.name for p in (copy / "parts").iterdir()) == sorted([*parts_before, tmp.name])
    tmp.rmdir()
    assert run_sweep(SPEC, copy, workers=1, progress=False).ran == 0  # the lock went with its holder


def test_leftovers_of_a_killed_sweep_are_cleared(copy: Path) -> None:
    stale = copy / ".manifest.json.tmp-4242"
    stale.write_text("{")
    run_sweep(SPEC, copy, workers=1, progress=False)
    assert not stale.exists()


# --- a disk that refuses writes -------------------------------------------------------------------------


def test_a_full_disk_during_a_sweep_is_one_line_and_leaves_no_partial_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sim.sweep.parts

    def to_full_disk(rows: object, columns: object) -> bytes:
        with open("/dev/full", "wb") as f:  # ENOSPC, as a full disk reports it
            f.write(b"x" * 65536)
            f.flush()
        return b""

    monkeypatch.setattr(sim.sweep.parts, "encode_table", to_full_disk)  # how a part's table is made
    out = tmp_path / "r"
    args = ["sweep", "--policy", "none", "--scenario", "coding-agent", "-S", "turns=4", "--window", "12000"]
    assert main([*args, "--workers", "1", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"csim: error: cannot write {out / 'parts'}") and err.count("\n") == 1
    assert "No space left on device" in err and "free some space" in err
    assert not [p for p in (out / "parts").iterdir()]  # neither a part nor its temporary folder


@pytest.mark.parametrize(
    ("code", "advice"), [(errno.EROFS, "choose an --out folder you can write to"), (errno.ENOSPC, "free some space")]
)
def test_a_read_only_or_full_output_folder_of_csim_import_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: int, advice: str
) -> None:
    import sim.formats.importing

    def refuse(report: object, out: str) -> None:
        raise OSError(code, os.strerror(code), str(Path(out) / "chat.jsonl"))

    monkeypatch.setattr(sim.formats.importing, "write_native", refuse)
    f = tmp_path / "chat.json"
    f.write_text('[{"id": "c", "messages": [{"role": "user", "content": "hi"}]}]')
    assert main(["import", str(f), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"csim: error: cannot write {tmp_path / 'out' / 'chat.jsonl'}: {os.strerror(code)}; ")
    assert advice in err and err.count("\n") == 1


@pytest.mark.parametrize("text", ["[1]", "null", "{", "\xff"])
def test_a_manifest_of_the_wrong_shape_is_one_line(copy: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    (copy / "manifest.json").write_bytes(text.encode("latin-1"))
    assert main(["compare", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"csim: error: {copy / 'manifest.json'}: ") and err.count("\n") == 1


def test_a_part_an_older_csim_wrote_without_a_column_reads_with_it_null(copy: Path) -> None:
    """A results folder is kept and read again by later versions: a part written before a column existed reads with
    that column null (an integer column becomes nullable there), beside parts that have it."""
    import gzip
    import hashlib

    part = sorted(finished_parts(copy))[0]
    f = part / "runs.json.gz"
    table = json.loads(gzip.decompress(f.read_bytes()))
    del table["recorded_compactions_left_out"]
    data = gzip.compress(json.dumps(table).encode(), mtime=0)
    f.write_bytes(data)
    listing = json.loads((part / "part.json").read_text())
    listing["tables"]["runs"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (part / "part.json").write_text(json.dumps(listing))
    runs = load_results(copy).runs
    column = runs["recorded_compactions_left_out"]
    assert str(column.dtype) == "Int64" and column.isna().sum() == len(table["run_key"]) and column.notna().any()
    assert runs["compaction_count"].dtype == "int64"  # the others as they were


def test_a_missing_flag_reads_as_unknown_not_false() -> None:
    """numpy's bool would read a missing value as False (a fact not visible, a request not billed): nullable."""
    from sim.sweep.results import typed

    frame = typed({"billed": [None, True]}, {"billed": "bool", "visible": "bool"})
    assert frame["billed"].isna().tolist() == [True, False] and frame["visible"].isna().all()
    assert typed({"billed": [False, True]}, {"billed": "bool"})["billed"].dtype == bool
