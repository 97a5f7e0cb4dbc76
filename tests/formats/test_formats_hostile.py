"""Hostile recordings (issue 12): a YAML alias bomb, lone surrogates, an integer past the digit limit.

Each is read by every path a user takes (``read``, ``--format auto``, ``csim import``), and each ends in a
one-line error naming the file (and line) or, in lenient mode, in a listed repair, never in a hang or a
traceback, and never in a half-written output file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli.main import main
from sim.core.errors import FormatError
from sim.formats import read
from sim.formats._common import check
from sim.formats.native import dumps
from tests.formats.test_formats_corruption import GOLDEN, SAMPLES


def _alias_bomb(levels: int) -> str:
    """A cassette whose request nests ``levels`` lists of nine aliases of the level below: 9**levels leaves."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    lines.append(f"interactions: [{{request: *a{levels - 1}, response: {{status: {{code: 200}}}}}}]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_by_csim_import_with_format_auto(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb(10))  # ~600 bytes, 9**10 leaves once expanded
    assert bomb.stat().st_size < 700
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sim", "import", str(bomb), "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("csim import hung on a 600-byte YAML alias bomb")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{bomb}: YAML aliases expand the document by more than 1,000,000 nodes and characters" in done.stderr


@pytest.mark.parametrize("lenient", [False, True])
def test_alias_expansion_is_refused_before_the_value_is_built(tmp_path: Path, lenient: bool) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb(7))  # 4.8 million leaves: built at once (aliases are shared), past the bound
    with pytest.raises(FormatError, match="YAML aliases expand the document") as err:
        read(bomb, "vcr-cassette", lenient=lenient)
    assert err.value.path == str(bomb)


def test_aliases_of_one_long_string_count_its_characters(tmp_path: Path) -> None:
    f = tmp_path / "long.yaml"
    f.write_text(f"s: &s {'x' * 2000}\ninteractions: [{{request: [{', '.join(['*s'] * 600)}], response: {{}}}}]\n")
    with pytest.raises(FormatError, match="YAML aliases expand the document"):
        read(f, "vcr-cassette", lenient=True)  # 1.2 million characters from 600 aliases


def test_a_self_referring_alias_is_refused_with_its_line(tmp_path: Path) -> None:
    f = tmp_path / "loop.yaml"
    f.write_text("interactions:\n- &a {request: [*a], response: {}}\n")
    with pytest.raises(FormatError, match="alias refers to a node that contains it") as err:
        read(f, "vcr-cassette", lenient=True)
    assert err.value.line == 2


def test_a_few_aliases_as_recorders_write_them_still_read(tmp_path: Path) -> None:
    text = (GOLDEN / "vcr_cassette.yaml").read_text(encoding="utf-8")
    aliased = "x-headers: &h {content-type: [application/json]}\n" + text.replace(
        "    headers:\n      content-type:\n      - application/json\n", "    headers: *h\n"
    )
    assert aliased.count("*h") >= 2
    f = tmp_path / "vcr_cassette.yaml"
    f.write_text(aliased)
    plain = read(GOLDEN / "vcr_cassette.yaml", "vcr-cassette")
    assert len(read(f, "vcr-cassette").conversations) == len(plain.conversations)


def test_error_messages_show_a_bounded_repr_of_any_value() -> None:
    from sim.formats._common import shown

    shared: list[object] = [0] * 9
    for _ in range(30):  # 9**31 leaves behind 279 lists: repr() would never finish
        shared = [shared] * 9
    with pytest.raises(ValueError, match=r"should be an object, got list \[\[\[") as err:
        check(shared, dict, "request")
    assert len(str(err.value)) < 120
    assert len(shown("x" * 10_000_000)) <= 60
    assert shown(int("9" * 4000) ** 2).startswith("<int")  # past the digit limit: named, not printed


# --- lone surrogates ------------------------------------------------------------------------------


def _needle(fmt: str, raw: str) -> str:
    """A message text that appears verbatim inside a JSON string of the sample (in the cassette: inside the
    JSON text of a request body, the nested JSON a cassette holds)."""
    if fmt == "vcr-cassette":
        return "Count to three."
    if fmt == "kv-trace":  # a trace holds no text: its id names every message (and so its placeholder text)
        return "golden_trace"
    stem = SAMPLES[fmt][0].split(".")[0]
    for line in (GOLDEN / f"{stem}.expected.jsonl").read_text(encoding="utf-8").splitlines():
        for part in json.loads(line).get("parts", []):
            text = part.get("text", "")
            escaped = json.dumps(text)[1:-1]
            if len(text) >= 6 and "\\" not in escaped and escaped in raw:
                return str(text)
    raise AssertionError(f"no plain message text found in the {fmt} sample")


def _with_lone_surrogate(tmp_path: Path, fmt: str) -> tuple[Path, int]:
    """The format's sample with a ``\\ud800`` escape put before each copy of one message text (a format may
    hold it twice, in a field it does not import); and the line of the first."""
    raw = (GOLDEN / SAMPLES[fmt][0]).read_text(encoding="utf-8")
    needle = _needle(fmt, raw)
    path = tmp_path / SAMPLES[fmt][0]
    path.write_text(raw.replace(needle, "\\ud800" + needle), encoding="utf-8")
    return path, raw.count("\n", 0, raw.index(needle)) + 1


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_a_lone_surrogate_is_refused_with_its_line_or_mended_and_reported(tmp_path: Path, fmt: str) -> None:
    path, line = _with_lone_surrogate(tmp_path, fmt)
    with pytest.raises(FormatError, match="lone UTF-16 surrogate") as err:
        read(path, fmt)
    assert err.value.path == str(path)
    if fmt == "vcr-cassette":
        assert err.value.line is not None and err.value.line <= line  # the interaction holding the body
    else:
        assert err.value.line == line
    result = read(path, fmt, lenient=True)
    repairs = [s for s in result.skipped if "surrogates replaced by U+FFFD" in s.reason]
    assert repairs and repairs[0].path == str(path)
    written = "".join(dumps(c) for c in result.conversations)
    assert "\ufffd" in written
    written.encode("utf-8")  # what a run hashes and the writer writes: no UnicodeEncodeError


def test_an_escaped_backslash_before_u_d800_is_plain_text(tmp_path: Path) -> None:
    f = tmp_path / "chat.json"
    f.write_text(json.dumps([{"id": "c", "messages": [{"role": "user", "content": "C:\\ud800\\x"}]}]))
    (conv,) = read(f, "openai-chat").conversations
    assert conv.messages[0].text == "C:\\ud800\\x"


def test_csim_import_of_a_lone_surrogate_leaves_no_file_strict_and_mends_it_lenient(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "chat.json"
    f.write_text('[{"id": "c", "messages": [\n{"role": "user", "content": "hi \\ud800"}]}]')
    out = tmp_path / "out"
    assert main(["import", str(f), "--format", "auto", "--out", str(out)]) == 2
    assert f"{f}:2: a lone UTF-16 surrogate" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())  # no empty or half-written file
    assert main(["import", str(f), "--lenient", "--out", str(out)]) == 0
    assert "surrogates replaced by U+FFFD" in capsys.readouterr().out
    assert "hi \ufffd" in (out / "chat.jsonl").read_text(encoding="utf-8")


def test_csim_run_on_a_lone_surrogate_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "chat.json"
    f.write_text('[{"id": "c", "messages": [{"role": "user", "content": "hi \\udc00"}]}]')
    args = ["run", "--policy", "none", "--conversation", str(f), "--format", "openai-chat"]
    assert main([*args, "--out", str(tmp_path / "r")]) == 2
    assert f"{f}:1: a lone UTF-16 surrogate" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_an_integer_past_the_digit_limit_is_a_format_error(tmp_path: Path) -> None:
    f = tmp_path / "chat.json"
    f.write_text('[{"id": "c", "messages": [{"role": "user", "content": ' + "1" * 5000 + "}]}]")
    with pytest.raises(FormatError, match="invalid JSON: Exceeds the limit"):
        read(f, "openai-chat")
    lines = tmp_path / "chat.jsonl"
    lines.write_text('{"messages": [{"role": "user", "content": "ok"}]}\n{"messages": ' + "1" * 5000 + "}\n")
    result = read(lines, "openai-chat", lenient=True)
    assert len(result.conversations) == 1 and result.skipped[0].line == 2


# --- line numbers in the JSON-document importers -------------------------------------------------------

DOCUMENT_FORMATS = ["swe-agent", "mini-swe-agent", "openhands-events", "openhands-llm"]


@pytest.mark.parametrize("fmt", DOCUMENT_FORMATS)
def test_a_bad_record_of_a_json_document_names_its_line(tmp_path: Path, fmt: str) -> None:
    doc = json.loads((GOLDEN / SAMPLES[fmt][0]).read_text(encoding="utf-8"))
    records = doc
    for key in SAMPLES[fmt][1] or ():
        records = records[key]
    records[1] = 4242  # not an object
    path = tmp_path / SAMPLES[fmt][0]
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    with pytest.raises(FormatError, match="should be an object") as err:
        read(path, fmt)
    assert err.value.line is not None and lines[err.value.line - 1].strip().startswith("4242")
    assert str(err.value).startswith(f"{path}:{err.value.line}: ")
    skipped = [s for s in read(path, fmt, lenient=True).skipped if "should be an object" in s.reason]
    assert [s.line for s in skipped] == [err.value.line]


# --- lenient mode on many bad records --------------------------------------------------------------------


def test_lenient_mode_lists_a_hundred_skips_then_counts_the_rest_by_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "many.jsonl"
    good = '{"messages": [{"role": "user", "content": "hi"}]}'
    bad = ['{"messages": 5}', '{"messages": "x"}', "[1, 2"]  # two kinds of wrong type, one of invalid JSON
    f.write_text("\n".join([good, *(bad[k % 3] for k in range(3000)), good]) + "\n")
    result = read(f, "openai-chat", lenient=True)
    assert len(result.conversations) == 2
    listed = [s for s in result.skipped if s.count == 1]
    counted = [s for s in result.skipped if s.count > 1]
    assert len(listed) == 100 and all(s.line is not None for s in listed)
    assert sum(s.count for s in result.skipped) == 3000
    assert len(counted) == 3  # one per kind of reason: numbers and quoted values do not make a new kind
    assert all(s.line is None and "N" in s.reason for s in counted)
    assert main(["import", str(f), "--lenient", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") < 110 and "3000 skipped" in out and "more skipped, not listed, like:" in out


# --- import folders and output names -------------------------------------------------------------------

_CHAT = '[{"id": "c", "messages": [{"role": "user", "content": "%s"}]}]'


def test_an_import_folder_does_not_follow_links_out_of_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sim.formats.importing import collect_paths

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.json").write_text(_CHAT % "secret")
    folder = tmp_path / "downloads"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.json").write_text(_CHAT % "mine")
    (folder / "link.json").symlink_to(outside / "secret.json")
    (folder / "sub" / "dir.json").symlink_to(outside, target_is_directory=True)
    (folder / "linkdir").symlink_to(outside, target_is_directory=True)
    (folder / "inside.json").symlink_to(folder / "a.json")  # a link that stays inside is followed
    assert collect_paths([folder]) == [folder / "a.json", folder / "inside.json"]
    out = tmp_path / "out"
    assert main(["import", str(folder), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{folder / 'link.json'}: not read: a symbolic link to {outside / 'secret.json'}" in printed
    assert f"{folder / 'linkdir'}: not read: a symbolic link to {outside}" in printed
    assert "secret" not in "".join(p.read_text() for p in out.iterdir())
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "inside.jsonl"]
    assert main(["import", str(folder / "link.json"), "--out", str(tmp_path / "named")]) == 0  # named: read


def test_inputs_whose_names_differ_only_in_case_or_unsafe_characters_get_distinct_files(tmp_path: Path) -> None:
    from sim.formats.importing import FileReport, output_names

    names = output_names(
        [FileReport(Path(n), "openai-chat") for n in ["A b.json", "x/A_b.json", "a_B.json", "a?b.json"]]
    )
    assert len({n.casefold() for n in names}) == 4, names
    for k, n in enumerate(["Log.json", "log.json"]):
        (tmp_path / f"d{k}").mkdir()
        (tmp_path / f"d{k}" / n).write_text(_CHAT % n)
    out = tmp_path / "out"
    assert main(["import", str(tmp_path / "d0"), str(tmp_path / "d1"), "--out", str(out)]) == 0
    assert sorted(p.read_text().count("Log.json") + p.read_text().count("log.json") for p in out.iterdir()) == [1, 1]


def test_a_file_name_that_is_not_utf8_is_one_line_saying_to_rename_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    name = os.fsdecode(b"bad\xff.json")  # the surrogate escape Python gives undecodable bytes of a name
    (folder / name).write_text('[{"role": "user", "content": "hi"}]')  # a message list: its id is the name
    assert main(["import", str(folder), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "the file name is not valid UTF-8" in err and "rename the file" in err and err.count("\n") == 1


def test_csim_calibrate_on_a_folder_does_not_follow_links_out_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sim.cli.calibration import load_source

    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    sample = (GOLDEN / "claude_code.jsonl").read_text(encoding="utf-8")
    (tmp_path / "in" / "a.jsonl").write_text(sample)
    (tmp_path / "out" / "secret.jsonl").write_text(sample.replace("0000aaaa", "5ec2e7aa"))
    (tmp_path / "in" / "link.jsonl").symlink_to(tmp_path / "out" / "secret.jsonl")
    groups, _, _ = load_source(str(tmp_path / "in"), "claude-code", None, False)
    assert [c.id for _, convs in groups for c in convs] == [
        c.id for c in read(tmp_path / "in" / "a.jsonl", "claude-code").conversations
    ]
    assert f"{tmp_path / 'in' / 'link.jsonl'}: not read: a symbolic link" in capsys.readouterr().err
