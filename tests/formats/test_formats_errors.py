"""Malformed input, the same way for every importer: strict names file and line, lenient keeps going."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.core.errors import FormatError
from sim.formats import FORMATS, read

_NATIVE_HEAD = '{"format":"csim-conversation","version":1,"id":"x","tools":[],"meta":{}}'


def _native(i: int) -> str:
    return json.dumps({"type": "message", "id": f"m{i}", "role": "user", "parts": [{"kind": "text", "text": f"t{i}"}]})


def _claude(i: int) -> str:
    return json.dumps(
        {"type": "user", "uuid": f"u{i}", "sessionId": "s", "message": {"role": "user", "content": f"t{i}"}}
    )


def _openai(i: int) -> str:
    return json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": f"t{i}"}]})


# Three good lines per format; line 3 is then broken in each test.
GOOD = {
    "native": [_NATIVE_HEAD, _native(1), _native(2), _native(3)],
    "claude-code": [_claude(1), _claude(2), _claude(3), _claude(4)],
    "openai-chat": [_openai(1), _openai(2), _openai(3), _openai(4)],
}
WRONG_TYPE = {
    "native": '{"type":"message","id":"m2","role":"user","parts":"hi"}',
    "claude-code": '{"type":"user","uuid":"u3","message":{"role":"user","content":42}}',
    "openai-chat": '{"messages":"hi"}',
}
SUFFIX = {"native": ".jsonl", "claude-code": ".jsonl", "openai-chat": ".jsonl"}


def _file(tmp_path: Path, fmt: str, line3: bytes) -> Path:
    lines = [s.encode("utf-8") for s in GOOD[fmt]]
    lines[2] = line3
    p = tmp_path / f"broken{SUFFIX[fmt]}"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


def _texts(fmt: str, path: Path) -> list[str]:
    return [m.text for c in read(path, fmt, lenient=True).conversations for m in c.messages]


BREAKS = {
    "truncated": lambda fmt: GOOD[fmt][2][:-7].encode("utf-8"),
    "wrong type": lambda fmt: WRONG_TYPE[fmt].encode("utf-8"),
    "bad utf-8": lambda fmt: GOOD[fmt][2].encode("utf-8").replace(b"t", b"\xff\xfe", 1),
    "not an object": lambda fmt: b"[1, 2]" if fmt != "openai-chat" else b"7",
}


def test_all_registered() -> None:
    import sim.formats.claude_code
    import sim.formats.native
    import sim.formats.openai_chat  # noqa: F401  (importing registers them)

    assert {"native", "openai-chat", "claude-code"} <= set(FORMATS.names())


@pytest.mark.parametrize("fmt", sorted(GOOD))
@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_broken_line(tmp_path: Path, fmt: str, kind: str) -> None:
    path = _file(tmp_path, fmt, BREAKS[kind](fmt))
    with pytest.raises(FormatError) as info:
        read(path, fmt)
    assert info.value.path == str(path) and info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: ")
    result = read(path, fmt, lenient=True)
    assert [s.line for s in result.skipped] == [3]
    texts = _texts(fmt, path)
    expected = {"native": ["t1", "t3"], "claude-code": ["t1", "t2", "t4"], "openai-chat": ["t1", "t2", "t4"]}
    assert texts == expected[fmt]  # nothing before or after the bad line is lost


@pytest.mark.parametrize("fmt", sorted(GOOD))
@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_empty_file(tmp_path: Path, fmt: str, content: bytes) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_bytes(content)
    for lenient in (False, True):
        with pytest.raises(FormatError, match=r"empty\.jsonl: empty file, expected "):
            read(p, fmt, lenient=lenient)


@pytest.mark.parametrize("fmt", sorted(GOOD))
def test_missing_file(tmp_path: Path, fmt: str) -> None:
    with pytest.raises(FormatError, match="cannot read file"):
        read(tmp_path / "nope.jsonl", fmt)


def test_openai_json_document_errors(tmp_path: Path) -> None:
    p = tmp_path / "doc.json"
    p.write_text('[\n  {"role": "user", "content": "a"},\n  {"role": "user", "content": "b"\n]\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"doc\.json:4: invalid JSON"):
        read(p, "openai-chat")
    p.write_bytes(b'[\n {"role": "user", "content": "a"},\n {"role": "user", "content": "\xff"}\n]\n')
    with pytest.raises(FormatError, match=r"doc\.json:3: invalid UTF-8"):
        read(p, "openai-chat")
    result = read(p, "openai-chat", lenient=True)
    assert [m.text for m in result.conversations[0].messages] == ["a", "\ufffd"]
    assert [s.line for s in result.skipped] == [3]
