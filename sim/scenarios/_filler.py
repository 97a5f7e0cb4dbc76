"""Filler text: about so many tokens of code, prose, logs, listings and the like, drawn from line banks.

Filler text has to be cheap (a 120-turn research session holds well over a million characters) and
still look like text to a real tokenizer, so that token counts land near the ~4 characters per token
of real tool output. It is built from line banks: a few thousand plausible lines per style (code,
prose, test logs, directory listings...), made once per process from a fixed seed, then sampled with
the scenario's generator and joined. Sampling whole lines keeps the per-character cost at a single
``str.join``, and the random order keeps texts distinct, so a tokenizer's memo does not flatter them.
The words the lines are made of live in :mod:`sim.scenarios._prose_words` and
:mod:`sim.scenarios._code_words`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from sim.scenarios._code_words import DIRS, FUNCS, IDENTS, TYPES
from sim.scenarios._prose_words import NAMES, PROSE_WORDS, SUPPORT_LINES, WEB_CHROME
from sim.scenarios._rng import Rng, stable_key

CHARS_PER_TOKEN: dict[str, float] = {
    "prose": 5.1,
    "code": 4.55,
    "log": 3.55,
    "listing": 2.7,
    "grep": 4.1,
    "web": 5.2,
    "support": 5.3,
    "record": 3.1,
}
"""Characters per cl100k_base token of each filler style, measured on 5,000-token samples.

Sizes in the scenarios are in tokens, as the engine counts them; a result meant to be ``n`` tokens gets
``n`` times its style's ratio in characters. The ratios span what real output does: dense directory
listings and JSON near 3, code and logs near 4, prose near 5; about 4 overall.
"""


class _Draws:
    """A stream of integers for building line banks, drawn from numpy in blocks.

    Drawing scalars one by one from a numpy generator costs about a microsecond each and a bank needs
    tens of thousands, so they are drawn a block at a time (modulo bias is irrelevant for filler).
    """

    def __init__(self, seed: int, block: int = 8192) -> None:
        self._rng = np.random.default_rng(seed)
        self._block = block
        self._v: list[int] = []
        self._i = 0

    def __call__(self, hi: int, lo: int = 0) -> int:
        if self._i >= len(self._v):
            self._v = self._rng.integers(0, 1 << 30, self._block).tolist()
            self._i = 0
        x = self._v[self._i]
        self._i += 1
        return lo + x % (hi - lo)

    def of(self, items: Sequence[str]) -> str:
        return items[self(len(items))]

    def several(self, items: Sequence[str], k: int) -> list[str]:
        """``k`` elements of ``items`` in one slice of the stream (the hot path of prose)."""
        if self._i + k > len(self._v):
            self._v = self._v[self._i :] + self._rng.integers(0, 1 << 30, self._block).tolist()
            self._i = 0
        n = len(items)
        out = [items[x % n] for x in self._v[self._i : self._i + k]]
        self._i += k
        return out


def _prose_sentence(d: _Draws, lo: int = 8, hi: int = 22) -> str:
    """A sentence-shaped run of words with the odd number, comma or name, so that a tokenizer sees
    something like real report prose (about 4.5 characters per token) rather than a stream of the
    commonest words."""
    words = d.several(PROSE_WORDS, d(hi, lo))
    k = d(8)
    if k == 0:
        words.insert(d(len(words)), f"{d(1000) / 10:.1f}%")
    elif k == 1:
        words.insert(d(len(words)), f"(n={d(5000, 12)})")
    elif k == 2:
        words.insert(d(len(words)), d.of(NAMES))
    elif k == 3:
        words[d(len(words))] += ","
    elif k == 4:
        words.insert(d(len(words)), str(d(2025, 1998)))
    s = " ".join(words)
    return s[:1].upper() + s[1:] + "."


def _code_line(d: _Draws) -> str:
    def ident() -> str:
        return d.of(IDENTS)

    def func() -> str:
        return f"{d.of(FUNCS)}_{ident()}"

    indent = "    " * d(4)
    k = d(12)
    if k == 0:
        return f"def {func()}({ident()}: {d.of(TYPES)}, {ident()}=None):"
    if k == 1:
        return f"{indent}# {_prose_sentence(d, 4, 10)}"
    if k == 2:
        return f"{indent}if {ident()} is None or not {ident()}.{ident()}:"
    if k == 3:
        return f"{indent}return {func()}({ident()}, {ident()}={d(500)})"
    if k == 4:
        return f"{indent}for {ident()} in self.{ident()}s:"
    if k == 5:
        return f"from {ident()}.{ident()} import {func()}, {ident().capitalize()}"
    if k == 6:
        return f'{indent}raise ValueError(f"bad {ident()}: {{{ident()}!r}}")'
    if k == 7:
        return f"class {ident().capitalize()}{ident().capitalize()}({ident().capitalize()}Base):"
    if k == 8:
        return ""
    return f"{indent}{ident()} = {func()}({ident()}.{ident()}, {ident()})"


def _log_line(d: _Draws) -> str:
    k = d(6)
    mod, stem = d.of(IDENTS), d.of(IDENTS)
    if k <= 2:
        return f"tests/{mod}/test_{stem}.py::test_{d.of(FUNCS)}_{stem} PASSED{' ' * d(8, 1)}[{d(100, 1):>3}%]"
    if k == 3:
        return (
            f"2024-05-{d(29, 1):02d} {d(24):02d}:{d(60):02d}:{d(60):02d},{d(1000):03d} "
            f"INFO {mod}.{stem} {_prose_sentence(d, 3, 8)}"
        )
    if k == 4:
        return f"    {_code_line(d).strip()}"
    return f"  {mod}/{stem}.py:{d(900, 10)}: in {d.of(FUNCS)}_{stem}"


def _listing_line(d: _Draws) -> str:
    base = f"{d.of(DIRS)}/{d.of(IDENTS)}"
    if d(4) == 0:
        return f"drwxr-xr-x  {d(40, 2):>3}  {base}/"
    return f"-rw-r--r--  {d(40000, 80):>6}  {base}/{d.of(IDENTS)}_{d.of(FUNCS)}.py"


def _grep_line(d: _Draws) -> str:
    return f"{d.of(DIRS[:2])}/{d.of(IDENTS)}/{d.of(IDENTS)}_{d.of(FUNCS)}.py:{d(900, 1)}:{_code_line(d).rstrip()}"


@functools.cache
def _sentences() -> tuple[str, ...]:
    """A pool of prose sentences that prose and web lines are made of (making each line's sentences
    afresh would cost most of the banks' build time)."""
    d = _Draws(stable_key("filler-bank/sentences"))
    return tuple(_prose_sentence(d) for _ in range(_BANK_LINES))


def _prose_line(d: _Draws) -> str:
    return " ".join(d.several(_sentences(), 2))


def _web_line(d: _Draws) -> str:
    if d(10) == 0:
        return d.of(WEB_CHROME)
    return " ".join(d.several(_sentences(), d(4, 1)))


def _support_line(d: _Draws) -> str:
    return d.of(SUPPORT_LINES)


def _record_line(d: _Draws) -> str:
    key = f"{d.of(IDENTS)}_{d.of(IDENTS)}"
    k = d(4)
    if k == 0:
        return f'  "{key}": {d(100000)},'
    if k == 1:
        return f'  "{key}": "{d.of(IDENTS)}-{d(9999, 100)}",'
    if k == 2:
        return f'  "{key}": {d(100000) / 100:.2f},'
    return f'  "{key}": "{_prose_sentence(d, 3, 7)}",'


_MAKERS: dict[str, Callable[[_Draws], str]] = {
    "prose": _prose_line,
    "code": _code_line,
    "log": _log_line,
    "listing": _listing_line,
    "grep": _grep_line,
    "web": _web_line,
    "support": _support_line,
    "record": _record_line,
}
STYLES: tuple[str, ...] = tuple(_MAKERS)
_BANK_LINES = 1024


@functools.cache
def _bank(style: str) -> tuple[tuple[str, ...], float]:
    """The line bank for ``style`` and its mean line length (plus the newline).

    Built from a constant seed, so it is data rather than state: identical in every process, and only
    the scenario's generator decides which lines a text uses.
    """
    d = _Draws(stable_key(f"filler-bank/{style}"))
    lines = tuple(_MAKERS[style](d) for _ in range(_BANK_LINES))
    return lines, sum(len(x) + 1 for x in lines) / len(lines)


def filler(rng: Rng, style: str, tokens: int) -> str:
    """About ``tokens`` cl100k tokens of ``style`` text, lines drawn with ``rng``."""
    if style not in _MAKERS:
        raise ValueError(f"unknown filler style {style!r}; styles: {', '.join(STYLES)}")
    lines, mean = _bank(style)
    k = max(1, round(tokens * CHARS_PER_TOKEN[style] / mean))
    return "\n".join([lines[i] for i in rng.indices(len(lines), k)])


def embed(rng: Rng, body: str, line: str) -> str:
    """``body`` with ``line`` inserted at a line boundary drawn with ``rng`` (a finding somewhere inside a
    page, an error somewhere inside a log)."""
    if not body:
        return line
    at = body.find("\n", rng.randint(len(body)))
    if at < 0:
        return f"{body}\n{line}"
    return f"{body[:at]}\n{line}{body[at:]}"
