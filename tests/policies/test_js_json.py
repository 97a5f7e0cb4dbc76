"""``policies._js_json`` against JavaScript: every expected string here is what Node 20 printed for
``JSON.stringify(JSON.parse(text))`` (and its ``.length``) on the same text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies import _js_json as js
from sim.core.conversation import Part


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.0", "1"),
        ("-0", "0"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("1e-7", "1e-7"),
        ("0.000001", "0.000001"),
        ("123e18", "123000000000000000000"),
        ("-2.5e-5", "-0.000025"),
        ("9007199254740993", "9007199254740992"),
        ("123456789012345678901234", "1.2345678901234569e+23"),
        ("5e-324", "5e-324"),
        ("1.5e300", "1.5e+300"),
        ("-1.0E-10", "-1e-10"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(text: str, expected: str) -> None:
    assert js.dumps(js.parse(text)) == expected


def test_integer_like_keys_come_first_in_numeric_order() -> None:
    text = '{"b":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6,"a":[1,2]}'
    assert js.dumps(js.parse(text)) == '{"2":3,"10":2,"4294967294":6,"b":1,"01":4,"4294967295":5,"a":[1,2]}'


def test_strings_escape_as_json_stringify() -> None:
    assert js.dumps(js.parse('"\\ud800x\\udc00"')) == '"\\ud800x\\udc00"'  # lone surrogates escaped
    out = js.dumps(js.parse('"a\\u001f\\n\\"\\\\é😀"'))
    assert out == '"a\\u001f\\n\\"\\\\é😀"'
    assert js.utf16_length(out) == 18  # the astral character counts two


def test_slice16_cuts_in_utf16_code_units() -> None:
    assert js.slice16("a😀b", 2) == "a\ud83d"  # 'a😀b'.slice(0, 2): the pair cut, its high surrogate kept
    assert js.slice16("a😀b", 3) == "a😀"
    assert js.slice16("abc", 5) == "abc"


def _units(text: str) -> list[int]:
    """UTF-16 code units by definition: one per code point up to U+FFFF (a lone surrogate too), a pair past it."""
    out: list[int] = []
    for ch in text:
        c = ord(ch)
        out += [c] if c <= 0xFFFF else [0xD800 + ((c - 0x10000) >> 10), 0xDC00 + ((c - 0x10000) & 0x3FF)]
    return out


#: ASCII, two-byte, astral and lone-surrogate characters, so cuts fall inside pairs and next to lone halves.
_JS_TEXT = st.text(st.sampled_from(["a", " ", "é", "中", "😀", "𝄞", "\ud83d", "\ude00", "\udbff"]), max_size=30)


@given(_JS_TEXT, st.integers(-2, 40))
def test_slice16_and_utf16_length_count_code_units(text: str, n: int) -> None:
    units = _units(text)
    assert js.utf16_length(text) == len(units)
    cut = js.slice16(text, n)
    assert _units(cut) == units[: max(n, 0)]
    assert cut == text or text.startswith(cut) or _units(cut)[-1] in range(0xD800, 0xDC00)  # only a split pair differs


def test_a_result_value_is_its_json_or_its_string() -> None:
    value = Part("tool_result", '{"a": [1.0]}', call_id="c", is_json=True)
    assert js.result_json(value) == '{"a":[1]}'
    assert js.result_json(Part("tool_result", '{"a": [1.0]}', call_id="c")) == '"{\\"a\\": [1.0]}"'
    assert js.result_json(Part("tool_result", "[tool result cleared]", call_id="c", is_json=True)) == (
        '"[tool result cleared]"'  # an edit's placeholder is not JSON: a string again
    )
