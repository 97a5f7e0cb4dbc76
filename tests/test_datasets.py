"""The public-dataset manifest, fetch with checksum verification, and reading fetched datasets."""

from __future__ import annotations

import hashlib
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sim.cli.main import main
from sim.core.errors import UnknownName
from sim.formats import datasets as ds

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
EXPECTED = {"claude-code", "swe-agent", "openhands-events", "openhands-llm", "tau-bench", "pydantic-ai-cassettes"}


@pytest.fixture
def recorded() -> Path:
    if not RECORDED.is_dir():
        pytest.skip(f"recorded sample not found at {RECORDED} (set CSIM_RECORDED to its folder)")
    return RECORDED


def _tiny(tmp_path: Path, content: bytes, digest: str | None = None) -> tuple[Path, Path]:
    """A one-file mirror and a manifest naming it with ``digest`` (the right one by default)."""
    mirror = tmp_path / "mirror"
    (mirror / "tiny").mkdir(parents=True)
    (mirror / "tiny" / "a.jsonl").write_bytes(content)
    digest = digest or hashlib.sha256(content).hexdigest()
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(
        '[datasets.tiny]\ndescription = "t"\nrepo = "o/r"\nlicence = "MIT"\nformat = "native"\nprovider = "x"\n'
        '[[datasets.tiny.files]]\nlocal = "tiny/a.jsonl"\nrepo = "o/r"\ncommit = "0123456789ab"\npath = "a.jsonl"\n'
        f'url = "https://raw.githubusercontent.com/o/r/0123456789ab/a.jsonl"\nsha256 = "{digest}"\n'
        'licence = "MIT"\nformat = "native"\n'
    )
    return mirror, manifest


def test_manifest_lists_every_public_dataset_with_address_and_checksum() -> None:
    manifest = ds.load_manifest()
    assert set(manifest) == EXPECTED
    for d in manifest.values():
        assert d.data_files, d.name
        for f in d.files:
            assert re.fullmatch(r"[0-9a-f]{64}", f.sha256), f.local
            assert re.fullmatch(r"[0-9a-f]{12,40}", f.commit), f.local
            assert f.url.startswith(f"https://raw.githubusercontent.com/{f.repo}/{f.commit}/"), f.url
            assert f.licence == "MIT"
    assert ds.get_dataset("tau-bench").data_files[0].format == "tau-bench"


def test_manifest_regenerates_from_provenance_byte_for_byte(recorded: Path) -> None:
    sys.path.insert(0, str(ROOT / "datasets"))
    try:
        import make_manifest
    finally:
        sys.path.pop(0)
    rows = make_manifest.parse_provenance((recorded / "PROVENANCE.md").read_text())
    sums = make_manifest.parse_sums((recorded / "SHA256SUMS").read_text())
    assert make_manifest.render(rows, sums) == ds.MANIFEST.read_text()


def test_datasets_list_shows_each_dataset_and_whether_its_format_is_registered(capsys, tmp_path) -> None:
    assert main(["datasets", "list", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in EXPECTED:
        assert name in out
    line = next(x for x in out.splitlines() if x.startswith("claude-code"))
    assert "format claude-code (yes)" in line and "not fetched" in line


def test_fetch_from_mirror_verifies_and_reads(recorded: Path, tmp_path: Path, capsys) -> None:
    assert main(["datasets", "fetch", "claude-code", "--from", str(recorded), "--cache", str(tmp_path)]) == 0
    assert "11 files verified" in capsys.readouterr().out
    cached = tmp_path / "claude-code" / "claude-code" / "short.jsonl"
    assert cached.read_bytes() == (recorded / "claude-code" / "short.jsonl").read_bytes()
    convs = ds.dataset_conversations("claude-code", cache=tmp_path)
    assert len(convs) == 10
    assert sum(len(c.meta["compactions"]) for c in convs) == 2
    assert ds.is_fetched("claude-code", tmp_path)


def test_checksum_mismatch_is_refused_and_the_file_deleted(tmp_path: Path) -> None:
    mirror, manifest = _tiny(tmp_path, b"{}\n", digest="0" * 64)
    with pytest.raises(ds.ChecksumMismatch) as err:
        ds.fetch("tiny", from_dir=mirror, cache=tmp_path / "cache", manifest=manifest)
    message = str(err.value)
    assert "a.jsonl" in message and "0" * 64 in message and hashlib.sha256(b"{}\n").hexdigest() in message
    assert not (tmp_path / "cache" / "tiny" / "tiny" / "a.jsonl").exists()


def test_a_corrupted_cached_file_is_fetched_again(tmp_path: Path) -> None:
    mirror, manifest = _tiny(tmp_path, b"good\n")
    cache = tmp_path / "cache"
    ds.fetch("tiny", from_dir=mirror, cache=cache, manifest=manifest)
    target = cache / "tiny" / "tiny" / "a.jsonl"
    target.write_bytes(b"tampered\n")
    ds.fetch("tiny", from_dir=mirror, cache=cache, manifest=manifest)
    assert target.read_bytes() == b"good\n"


def test_download_failure_points_to_from_dir(tmp_path: Path, monkeypatch) -> None:
    _, manifest = _tiny(tmp_path, b"x")

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)  # what sim.formats.datasets fetches with
    with pytest.raises(ds.CsimError, match="--from DIR"):
        ds.fetch("tiny", cache=tmp_path / "cache", manifest=manifest)
    assert not list((tmp_path / "cache").rglob("*.part"))


def test_reading_an_unfetched_dataset_says_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(ds.NotFetched, match="run csim datasets fetch claude-code"):
        ds.dataset_conversations("claude-code", cache=tmp_path)


def test_unknown_dataset_suggests_the_closest(tmp_path: Path, capsys) -> None:
    with pytest.raises(UnknownName, match="Did you mean 'claude-code'"):
        ds.get_dataset("claude-cod")
    assert main(["datasets", "fetch", "tau-bensh", "--cache", str(tmp_path)]) == 2
    assert "Did you mean 'tau-bench'" in capsys.readouterr().err


def test_cache_defaults_to_env_then_home(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CSIM_CACHE", str(tmp_path))
    assert ds.cache_dir("tau-bench") == tmp_path / "tau-bench"
    monkeypatch.delenv("CSIM_CACHE")
    assert ds.cache_dir("tau-bench") == Path.home() / ".cache" / "csim" / "datasets" / "tau-bench"
