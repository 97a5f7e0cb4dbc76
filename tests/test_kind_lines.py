"""The kind of a text counts its code-like lines in one pass: the same count as a search of each line.

:func:`sim.core.kinds.kind_of` once searched each of up to 200 lines of every message with ``_CODE_LINE``; it now
finds them all with ``_CODE_LINES`` over the lines joined by newlines. These hold the two counts equal, on texts
made of the fragments the pattern looks at and on every text of the shared Claude Code recordings.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core import kinds

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")

FRAGMENTS = [
    " ", "  ", "\t", "\u00a0", "\u2003", "12", "7", "→", "x", "foo", "=", ";", "{", "}", "(", ")", "[", "]",
    "def ", "class ", "import ", "from ", "return ", "function ", "const ", "let ", "var ", "if ", "for ",
    "while ", "#include", "@", "//", "#", "deff", "ifx", ".", ",", "é",
]  # fmt: skip


def _per_line(lines: list[str]) -> int:
    return sum(1 for line in lines if kinds._CODE_LINE.search(line))


def _at_once(lines: list[str]) -> int:
    return len(kinds._CODE_LINES.findall("\n".join(lines)))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines()[: kinds._SAMPLE_LINES] if line.strip()]


@given(st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join), max_size=30))
def test_one_pass_counts_the_lines_a_search_per_line_counts(lines: list[str]) -> None:
    lines = [line for line in lines if line.strip()]
    assert _at_once(lines) == _per_line(lines)


@given(st.text(max_size=400))
def test_on_any_text(text: str) -> None:
    lines = _lines(text)
    assert _at_once(lines) == _per_line(lines)


def test_on_the_shared_claude_code_recordings() -> None:
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        pytest.skip(f"recorded sample not found at {folder} (set CSIM_RECORDED to its folder)")
    from sim.formats import read

    texts = {
        p.text
        for path in sorted(folder.rglob("*.jsonl"))
        for conv in read(path, "claude-code").conversations
        for m in conv.messages
        for p in m.parts
        if p.text
    }
    code = 0
    for text in texts:
        lines = _lines(text)
        assert _at_once(lines) == _per_line(lines), text[:200]
        code += kinds.kind_of(text) == "code"
    assert len(texts) > 500 and code > 50  # the sessions read and write code: the check saw both kinds
