"""JSON text as JavaScript writes it, and string lengths as JavaScript counts them, for the two TypeScript seeds.

Both seed systems size messages by ``JSON.stringify``: effect-agent by the UTF-8 bytes of each Effect ``Prompt``
message's JSON (``estimateMessageTokens``), Workshop by the length of each pi message's JSON
(``projectionMessageWeight``, a JavaScript string length: UTF-16 code units). Python's ``json`` differs from
``JSON.stringify`` in three places that change those sizes, and this module follows JavaScript in each (ECMA-262,
``JSON.stringify`` and ``Number::toString``; checked against Node's own output in
``tests/policies/test_js_json.py``):

* numbers: JavaScript has doubles only, so ``1.0`` writes ``1``, ``1e21`` writes ``1e+21``, ``1e-7`` writes ``1e-7``
  and an integer beyond 2**53 loses its low digits (``JSON.parse`` reads every number as a double);
* object keys: an integer-like key (``"0"`` to ``"4294967294"``, no leading zero) comes first, in numeric order,
  before the others in insertion order (the property order of a JavaScript object);
* strings: a lone surrogate is escaped (``\\udc80``), as well-formed ``JSON.stringify`` does; the rest (quotes,
  backslashes, control characters as ``\\n`` or ``\\u001f``, everything else raw) is as ``json.dumps(...,
  ensure_ascii=False)`` writes it.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from sim.core.conversation import Part

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_INDEX = 2**32 - 2
_SAFE_INTEGER = 2**53


def parse(text: str) -> Any:
    """``JSON.parse``: a JSON text as the value JavaScript reads (every number a double); raises ValueError."""
    return json.loads(text, parse_int=_js_int, parse_constant=_no_constant)


def _js_int(digits: str) -> int | float:
    n = int(digits)
    return n if -_SAFE_INTEGER <= n <= _SAFE_INTEGER else float(n)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def dumps(value: Any) -> str:
    """``JSON.stringify(value)`` of a JSON value (dicts, lists, strings, numbers, booleans, None)."""
    return "".join(_write(value))


def _write(value: Any) -> list[str]:
    out: list[str] = []
    _emit(value, out)
    return out


def _emit(value: Any, out: list[str]) -> None:
    if value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, str):
        out.append(string(value))
    elif isinstance(value, (int, float)):
        out.append(number(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _emit(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        for i, key in enumerate(_ordered_keys(value)):
            if i:
                out.append(",")
            out.append(string(key))
            out.append(":")
            _emit(value[key], out)
        out.append("}")
    else:
        raise TypeError(f"{type(value).__name__} {value!r} is not a JSON value")


def _ordered_keys(obj: dict[str, Any]) -> list[str]:
    """A JavaScript object's property order: array-index keys ascending, then the rest as inserted."""
    index = [k for k in obj if _ARRAY_INDEX.fullmatch(k) and int(k) <= _MAX_INDEX]
    if not index:
        return list(obj)
    chosen = set(index)
    return sorted(index, key=int) + [k for k in obj if k not in chosen]


def string(text: str) -> str:
    """A string as ``JSON.stringify`` quotes it."""
    quoted = json.dumps(text, ensure_ascii=False)
    if _LONE_SURROGATE.search(quoted) is None:
        return quoted
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def number(x: int | float) -> str:
    """``Number::toString`` of ``x`` (``null`` for NaN and the infinities, as ``JSON.stringify`` writes them)."""
    if isinstance(x, int) and -_SAFE_INTEGER <= x <= _SAFE_INTEGER:
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # The shortest digits that round-trip (repr's, the same rule as ECMA-262's), as s x 10^(n - k).
    tup = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, tup.digits)).rstrip("0") or "0"
    exponent = int(tup.exponent) + (len(tup.digits) - len(digits))
    k = len(digits)
    n = k + exponent
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def utf16_length(text: str) -> int:
    """A JavaScript string's ``length``: UTF-16 code units (a code point past U+FFFF counts two). Counted by the
    codec, not per character: a summariser's transcript measures every block of a long span."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def slice16(text: str, n: int) -> str:
    """``text.slice(0, n)`` in JavaScript: the first ``n`` UTF-16 code units (a pair cut in two leaves its high
    surrogate). Cut by the codec; character by character only where the cut splits a pair or the text holds lone
    surrogates (which the codec would join)."""
    n = max(n, 0)
    if text.isascii():
        return text[:n]
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * n:
        return text
    head = units[: 2 * n].decode("utf-16-le", "surrogatepass")
    if text.startswith(head):
        return head
    out: list[str] = []
    used = 0
    for ch in text:
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > n:
            if width == 2 and used < n:
                out.append(chr(0xD800 + ((ord(ch) - 0x10000) >> 10)))
            break
        out.append(ch)
        used += width
    return "".join(out)


def result_value(part: Part) -> Any:
    """The value a tool result holds as a JSON-valued client keeps it: the parsed JSON of a result marked
    ``is_json`` (``Part.is_json``; its text when that is not JSON, as an edit such as a placeholder leaves it), else
    the text itself, a string."""
    if part.is_json:
        try:
            return parse(part.text)
        except ValueError:
            return part.text
    return part.text


def result_json(part: Part) -> str:
    """``JSON.stringify`` of :func:`result_value`: a string result quoted, a JSON value in its compact text."""
    return dumps(result_value(part))


def utf8_length(text: str) -> int:
    """UTF-8 bytes as the seeds count them (a lone surrogate as the three bytes of its code point)."""
    return len(text.encode("utf-8", "surrogatepass"))


__all__ = [
    "dumps",
    "number",
    "parse",
    "result_json",
    "result_value",
    "slice16",
    "string",
    "utf8_length",
    "utf16_length",
]
