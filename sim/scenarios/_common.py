"""What the synthetic scenarios share: seeding, parameter checks, a message builder, sizes and filler.

One module because nearly half of it is the word banks the filler is drawn from (prose, code, logs, support
lines), which read best beside the code that draws and sizes it.

The generators must give the same conversation for the same seed and parameters in any process, so
nothing here touches global random state, the ``random`` module or ``hash()`` of a string (salted per
process). A scenario's generator is ``numpy.random.default_rng(SeedSequence([seed, key]))`` where
``key`` is derived from the scenario's name with SHA-256.

Filler text has to be cheap (a 120-turn research session holds well over a million characters) and
still look like text to a real tokenizer, so that token counts land near the ~4 characters per token
of real tool output. It is built from line banks: a few thousand plausible lines per style (code,
prose, test logs, directory listings...), made once per process from a fixed seed, then sampled with
the scenario's generator and joined. Sampling whole lines keeps the per-character cost at a single
``str.join``, and the random order keeps texts distinct, so a tokenizer's memo does not flatter them.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from sim.core.conversation import Conversation, Fact, FactKind, Message, Part, Role, Tool
from sim.core.errors import InvalidConfig

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

F = TypeVar("F", bound=Callable[..., Conversation])


# -- seeding ------------------------------------------------------------------------------------------
def stable_key(name: str) -> int:
    """A 64-bit integer for ``name`` that is the same in every process (unlike ``hash(name)``)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def check_seed(seed: object) -> int:
    """The seed as an int; SeedSequence takes only non-negative integers, so say so up front."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise InvalidConfig(f"seed={seed!r} is not allowed: the seed must be an integer >= 0")
    return int(seed)


class Rng:
    """The scenario's numpy generator, with scalar draws served from buffered blocks.

    A generator makes thousands of small choices (which tool, which template, how many); a scalar call
    into numpy costs microseconds, a list lookup a few dozen nanoseconds. Blocks are drawn from the one
    generator in a fixed order, so the stream is still a pure function of the seed. Bulk draws (which
    filler lines) go to the generator directly as arrays.
    """

    _BLOCK = 1024

    def __init__(self, gen: np.random.Generator) -> None:
        self.gen = gen
        self._u: list[float] = []
        self._i = 0
        self._z: list[float] = []
        self._j = 0

    def random(self) -> float:
        """Uniform in [0, 1)."""
        if self._i >= len(self._u):
            self._u = self.gen.random(self._BLOCK).tolist()
            self._i = 0
        self._i += 1
        return self._u[self._i - 1]

    def normal(self) -> float:
        if self._j >= len(self._z):
            self._z = self.gen.standard_normal(self._BLOCK).tolist()
            self._j = 0
        self._j += 1
        return self._z[self._j - 1]

    def randint(self, a: int, b: int | None = None) -> int:
        """An integer in ``[0, a)``, or in ``[a, b)`` when ``b`` is given."""
        lo, hi = (0, a) if b is None else (a, b)
        if self._i >= len(self._u):
            self._u = self.gen.random(self._BLOCK).tolist()
            self._i = 0
        self._i += 1
        return lo + min(int(self._u[self._i - 1] * (hi - lo)), hi - lo - 1)

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.random()

    def indices(self, n: int, k: int) -> list[int]:
        """``k`` integers in ``[0, n)``: a bulk draw when ``k`` is large enough to repay numpy's call cost."""
        if k > 48:
            return cast(list[int], self.gen.integers(0, n, k).tolist())
        if self._i + k > len(self._u):
            self._u = self._u[self._i :] + self.gen.random(self._BLOCK).tolist()
            self._i = 0
        out = [min(int(u * n), n - 1) for u in self._u[self._i : self._i + k]]
        self._i += k
        return out


def scenario_rng(name: str, seed: int) -> Rng:
    """The one generator a scenario draws from: its seed spread together with the scenario's name, so two
    scenarios given the same seed do not draw the same stream."""
    return Rng(np.random.default_rng(np.random.SeedSequence([check_seed(seed), stable_key(name)])))


def conversation_id(name: str, seed: int, params: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    """``NAME-seedN``, plus a short digest of the overrides when some parameter is not its default, so
    runs over a parameter grid get distinct run ids."""
    overrides = {k: v for k, v in sorted(params.items()) if defaults.get(k) != v}
    base = f"{name}-seed{seed}"
    if not overrides:
        return base
    digest = hashlib.sha256(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:8]
    return f"{base}-{digest}"


# -- parameters ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    """The allowed values of one scenario parameter: a closed range, plus isolated extra values
    (``compact_at=-1`` meaning "never")."""

    kind: type  # int or float
    lo: float
    hi: float
    also: tuple[float, ...] = ()

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        extra = "".join(f" or {x:g}" for x in self.also)
        return f"{what} in [{self.lo:g}, {self.hi:g}]{extra}"

    def coerce(self, scenario: str, name: str, value: object) -> int | float:
        """``value`` as this parameter's type, or InvalidConfig naming the parameter and its range."""
        bad = InvalidConfig(
            f"scenario {scenario!r}: parameter {name}={value!r} is out of range; allowed: {self.describe()}"
        )
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise bad
        if self.kind is int:
            if not isinstance(value, numbers.Integral) and not float(value).is_integer():
                raise bad
            v: int | float = int(value) if isinstance(value, numbers.Integral) else int(float(value))
        else:
            v = float(value)
            if not math.isfinite(v):
                raise bad
        if v in self.also or self.lo <= v <= self.hi:
            return v
        raise bad


def validated(scenario: str, specs: Mapping[str, Param]) -> Callable[[F], F]:
    """Wrap a generator so every call checks the seed and each parameter before any drawing.

    The wrapper keeps the generator's signature (``inspect.signature`` follows ``__wrapped__``), which is
    where the CLI reads defaults and their types. Checking the specs against the signature here turns a
    forgotten range into an import error rather than a silently unchecked parameter.
    """

    def deco(fn: F) -> F:
        sig = inspect.signature(fn)
        names = [n for n in sig.parameters if n != "seed"]
        if set(names) != set(specs):
            raise RuntimeError(f"scenario {scenario!r}: ranges {sorted(specs)} do not match parameters {names}")
        for n in names:
            specs[n].coerce(scenario, n, sig.parameters[n].default)

        @functools.wraps(fn)
        def wrapper(seed: int, **params: Any) -> Conversation:
            unknown = sorted(set(params) - set(specs))
            if unknown:
                raise InvalidConfig(
                    f"scenario {scenario!r} has no parameter {unknown[0]!r}; its parameters are "
                    + ", ".join(f"{n} ({specs[n].describe()})" for n in names)
                )
            check_seed(seed)
            typed = {k: specs[k].coerce(scenario, k, v) for k, v in params.items()}
            return fn(int(seed), **typed)

        return wrapper  # type: ignore[return-value]

    return deco


def defaults_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """A generator's keyword defaults (what the spec file must repeat)."""
    return {n: p.default for n, p in inspect.signature(fn).parameters.items() if n != "seed"}


# -- sizes --------------------------------------------------------------------------------------------
def lognormal_int(rng: Rng, median: float, sigma: float, lo: int, hi: int) -> int:
    """A heavy-tailed size: lognormal around ``median``, clipped to ``[lo, hi]``.

    Tool output sizes in real agent logs are close to lognormal: most results are small, and a few are
    one or two orders of magnitude above the median.
    """
    x = median * math.exp(sigma * rng.normal())
    return int(min(max(round(x), lo), hi))


def result_tokens(
    rng: Rng, median: float, sigma: float, huge_prob: float, huge_tokens: int, lo: int = 20, hi: int | None = None
) -> tuple[int, bool]:
    """Tokens for one tool result and whether it is a huge one (a whole log, a generated file).

    Huge results are a separate mode rather than the lognormal's far tail, because in practice they come
    from a different cause (someone cat-ed a bundle), at about ``huge_tokens`` give or take a fifth.
    """
    if huge_prob > 0 and rng.random() < huge_prob:
        n = lognormal_int(rng, huge_tokens, 0.15, max(lo, huge_tokens // 2), max(lo, huge_tokens * 2))
        return n, True
    cap = hi if hi is not None else max(lo, int(median * 12))
    return lognormal_int(rng, median, sigma, lo, cap), False


# -- filler text --------------------------------------------------------------------------------------
_FUNCTION_WORDS = (
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "for",
    "with",
    "on",
    "that",
    "is",
    "are",
    "was",
    "by",
    "from",
    "as",
    "at",
    "this",
    "which",
    "be",
    "it",
    "not",
    "or",
    "an",
    "have",
    "has",
    "we",
    "its",
    "their",
    "were",
    "but",
    "than",
    "into",
    "per",
    "more",
    "so",
    "can",
    "may",
    "no",
    "one",
    "two",
    "all",
)

# Function words repeated, as in real prose, where they make up about half of all words; that is what
# brings a tokenizer's count down to roughly four or five characters per token.
_PROSE = _FUNCTION_WORDS * 5 + (
    "data",
    "system",
    "results",
    "study",
    "report",
    "value",
    "values",
    "model",
    "users",
    "service",
    "process",
    "request",
    "response",
    "error",
    "errors",
    "time",
    "cost",
    "costs",
    "rate",
    "rates",
    "level",
    "levels",
    "period",
    "sample",
    "samples",
    "measured",
    "increase",
    "decrease",
    "compared",
    "average",
    "median",
    "total",
    "annual",
    "monthly",
    "first",
    "second",
    "third",
    "more",
    "less",
    "than",
    "after",
    "before",
    "during",
    "between",
    "across",
    "within",
    "under",
    "over",
    "about",
    "most",
    "some",
    "each",
    "other",
    "these",
    "those",
    "new",
    "old",
    "current",
    "previous",
    "analysis",
    "review",
    "evidence",
    "trial",
    "trials",
    "program",
    "policy",
    "market",
    "energy",
    "price",
    "prices",
    "demand",
    "supply",
    "network",
    "storage",
    "performance",
    "latency",
    "throughput",
    "memory",
    "capacity",
    "load",
    "peak",
    "average",
    "growth",
    "change",
    "changes",
    "effect",
    "effects",
    "impact",
    "significant",
    "small",
    "large",
    "higher",
    "lower",
    "however",
    "although",
    "because",
    "while",
    "therefore",
    "also",
    "only",
    "still",
    "often",
    "rarely",
    "generally",
    "typically",
    "reported",
    "observed",
    "estimated",
    "found",
    "shows",
    "suggests",
    "indicates",
    "remains",
    "appears",
    "become",
    "became",
    "used",
    "using",
    "based",
    "including",
    "per",
    "percent",
    "share",
    "region",
    "regions",
    "country",
    "countries",
    "city",
    "local",
    "national",
    "public",
    "private",
    "sector",
    "industry",
    "firms",
    "teams",
    "workers",
    "customers",
    "households",
    "participants",
    "researchers",
    "authors",
    "agency",
    "survey",
    "surveys",
    "dataset",
    "table",
    "figure",
    "section",
    "method",
    "methods",
    "approach",
    "framework",
    "baseline",
    "scenario",
    "scenarios",
    "range",
    "limit",
    "limits",
    "risk",
    "risks",
    "quality",
    "safety",
    "standard",
    "standards",
    "version",
    "update",
    "updates",
    "release",
    "support",
    "operation",
    "operations",
    "field",
    "test",
    "tests",
    "lab",
    "conditions",
    "temperature",
    "pressure",
    "efficiency",
    "output",
    "input",
    "heat",
    "water",
    "air",
    "power",
    "battery",
    "batteries",
    "cell",
    "cells",
    "material",
    "materials",
    "plant",
    "plants",
    "site",
    "sites",
    "year",
    "years",
    "heterogeneity",
    "electrification",
    "procurement",
    "interoperability",
    "attribution",
    "calibration",
    "sensitivity",
    "longitudinal",
    "cross-sectional",
    "counterfactual",
    "retrofitted",
    "subsidised",
    "self-reported",
    "peer-reviewed",
    "methodology",
    "confounders",
    "uncertainty",
    "projections",
    "deployment",
    "installers",
    "municipalities",
    "utilities",
    "grid-scale",
    "weather-adjusted",
    "seasonal",
    "upstream",
    "downstream",
    "throughput-bound",
    "well-documented",
    "respondents",
    "stakeholders",
    "regulators",
    "outliers",
    "percentile",
    "quartile",
    "intervals",
    "robustness",
    "replication",
)

_NAMES = (
    "Norway",
    "Ontario",
    "Bavaria",
    "Hokkaido",
    "Scotland",
    "Quebec",
    "Minnesota",
    "Lombardy",
    "Tasmania",
    "the OECD",
    "Eurostat",
    "the IEA",
    "NREL",
    "Fraunhofer ISE",
    "the ONS",
    "Statistics Canada",
)

_IDENTS = (
    "row",
    "rows",
    "item",
    "items",
    "total",
    "amount",
    "currency",
    "tenant",
    "tenants",
    "invoice",
    "invoices",
    "record",
    "records",
    "batch",
    "payload",
    "result",
    "results",
    "config",
    "settings",
    "client",
    "session",
    "user",
    "account",
    "order",
    "orders",
    "line",
    "lines",
    "entry",
    "entries",
    "key",
    "keys",
    "value",
    "values",
    "index",
    "cache",
    "buffer",
    "stream",
    "writer",
    "reader",
    "parser",
    "schema",
    "field",
    "fields",
    "export",
    "exporter",
    "job",
    "jobs",
    "worker",
    "queue",
    "task",
    "tasks",
    "event",
    "events",
    "handler",
    "request",
    "response",
    "status",
    "count",
    "offset",
    "limit",
    "cursor",
    "page",
    "token",
    "path",
    "name",
    "label",
    "price",
    "tax",
    "discount",
    "rate",
    "period",
    "start",
    "end",
)

_FUNCS = (
    "load",
    "save",
    "parse",
    "render",
    "build",
    "compute",
    "validate",
    "normalize",
    "serialize",
    "fetch",
    "apply",
    "merge",
    "split",
    "flush",
    "resolve",
    "lookup",
    "register",
    "dispatch",
    "format",
    "collect",
    "emit",
    "update",
    "create",
    "delete",
    "retry",
    "wrap",
    "close",
    "open",
)

_TYPES = ("int", "str", "float", "bool", "Decimal", "dict[str, Any]", "list[Row]", "Optional[str]", "bytes")

_DIRS = ("src", "tests", "docs", "scripts", "config", "migrations", "vendor", "tools", "fixtures")

_SUPPORT = (
    "Thanks for your patience while I check that.",
    "I understand how frustrating a late delivery is, especially when you planned around it.",
    "Let me pull up the details on our side before I promise anything.",
    "Our standard window for returns is thirty days from delivery, and damaged items are always covered.",
    "I can see the notes from the previous conversation, so you will not need to repeat yourself.",
    "Refunds go back to the original payment method and usually appear within five to seven business days.",
    "If the carrier marks a parcel delivered but it never arrived, we open a trace with them first.",
    "Replacement items ship from the nearest warehouse with stock, which can change the estimate.",
    "I have added a note to the account so that anyone picking this up later sees the full history.",
    "Warranty claims need a photo of the damage and the serial number from the label.",
    "Store credit is applied instantly and does not expire for two years.",
    "Express shipping upgrades are free when we are replacing something that arrived broken.",
    "The tracking page sometimes lags a day behind the carrier's own scans.",
    "I want to make sure we fix this properly rather than quickly.",
    "Please keep the original packaging until the claim is closed, in case the carrier asks for it.",
    "Subscription changes take effect from the next billing cycle unless you ask for them to start now.",
    "Price matching applies within fourteen days of purchase for identical items from listed retailers.",
    "Our team can only change the delivery address before the parcel leaves the warehouse.",
    "I will stay on this conversation until everything is sorted out.",
    "The order history shows every shipment, including partial ones that went out separately.",
)

SUPPORT_LINES = _SUPPORT
"""Ordinary support sentences, for wrapping an agent's specific answer in the usual courtesies."""

_WEB_CHROME = (
    "Share this article",
    "Related reading",
    "Subscribe to our newsletter",
    "Cookie settings",
    "Back to top",
    "Download the full report (PDF)",
    "Figure 2. Results by region",
    "Table 1. Summary statistics",
    "Methods",
    "Limitations",
    "Acknowledgements",
    "References",
    "Key findings",
    "Abstract",
    "Discussion",
)


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
    words = d.several(_PROSE, d(hi, lo))
    k = d(8)
    if k == 0:
        words.insert(d(len(words)), f"{d(1000) / 10:.1f}%")
    elif k == 1:
        words.insert(d(len(words)), f"(n={d(5000, 12)})")
    elif k == 2:
        words.insert(d(len(words)), d.of(_NAMES))
    elif k == 3:
        words[d(len(words))] += ","
    elif k == 4:
        words.insert(d(len(words)), str(d(2025, 1998)))
    s = " ".join(words)
    return s[:1].upper() + s[1:] + "."


def _code_line(d: _Draws) -> str:
    def ident() -> str:
        return d.of(_IDENTS)

    def func() -> str:
        return f"{d.of(_FUNCS)}_{ident()}"

    indent = "    " * d(4)
    k = d(12)
    if k == 0:
        return f"def {func()}({ident()}: {d.of(_TYPES)}, {ident()}=None):"
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
    mod, stem = d.of(_IDENTS), d.of(_IDENTS)
    if k <= 2:
        return f"tests/{mod}/test_{stem}.py::test_{d.of(_FUNCS)}_{stem} PASSED{' ' * d(8, 1)}[{d(100, 1):>3}%]"
    if k == 3:
        return (
            f"2024-05-{d(29, 1):02d} {d(24):02d}:{d(60):02d}:{d(60):02d},{d(1000):03d} "
            f"INFO {mod}.{stem} {_prose_sentence(d, 3, 8)}"
        )
    if k == 4:
        return f"    {_code_line(d).strip()}"
    return f"  {mod}/{stem}.py:{d(900, 10)}: in {d.of(_FUNCS)}_{stem}"


def _listing_line(d: _Draws) -> str:
    base = f"{d.of(_DIRS)}/{d.of(_IDENTS)}"
    if d(4) == 0:
        return f"drwxr-xr-x  {d(40, 2):>3}  {base}/"
    return f"-rw-r--r--  {d(40000, 80):>6}  {base}/{d.of(_IDENTS)}_{d.of(_FUNCS)}.py"


def _grep_line(d: _Draws) -> str:
    return f"{d.of(_DIRS[:2])}/{d.of(_IDENTS)}/{d.of(_IDENTS)}_{d.of(_FUNCS)}.py:{d(900, 1)}:{_code_line(d).rstrip()}"


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
        return d.of(_WEB_CHROME)
    return " ".join(d.several(_sentences(), d(4, 1)))


def _support_line(d: _Draws) -> str:
    return d.of(_SUPPORT)


def _record_line(d: _Draws) -> str:
    key = f"{d.of(_IDENTS)}_{d.of(_IDENTS)}"
    k = d(4)
    if k == 0:
        return f'  "{key}": {d(100000)},'
    if k == 1:
        return f'  "{key}": "{d.of(_IDENTS)}-{d(9999, 100)}",'
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


def pick(rng: Rng, items: Sequence[Any]) -> Any:
    """One element of ``items``, drawn with ``rng``."""
    return items[rng.randint(len(items))]


def chance(rng: Rng, p: float) -> bool:
    """True with probability ``p`` (always draws, so the stream does not depend on ``p`` being 0)."""
    return rng.random() < p


# -- parts --------------------------------------------------------------------------------------------
def text(s: str) -> Part:
    return Part("text", s)


def thinking(s: str) -> Part:
    return Part("thinking", s)


def call(call_id: str, name: str, args: Mapping[str, Any]) -> Part:
    """A tool call; arguments as canonical JSON so that equal calls serialise to equal bytes."""
    return Part("tool_call", call_id=call_id, name=name, args=json.dumps(dict(args), sort_keys=True))


def result(call_id: str, name: str, body: str, is_error: bool = False) -> Part:
    return Part("tool_result", body, call_id=call_id, name=name, is_error=is_error)


def tool(name: str, description: str, properties: Mapping[str, Any], required: Sequence[str]) -> Tool:
    """A tool offered to the model, its JSON schema as canonical text (its size counts in every prompt)."""
    schema = {"type": "object", "properties": dict(properties), "required": list(required)}
    return Tool(name, description, json.dumps(schema, sort_keys=True))


# -- the builder --------------------------------------------------------------------------------------
@dataclass
class _DraftFact:
    kind: FactKind
    text: str
    source: str
    needed_at: list[str] = field(default_factory=list)


class ScenarioBuilder:
    """Appends messages with ids ``m0001``, ``m0002``..., hands out call and change ids, and records facts.

    Facts are drafts until :meth:`build`: a generator learns where a fact is needed only as it writes
    the later messages, so :meth:`need` adds those places as it goes, and :meth:`build` checks what the
    engine relies on (the text is verbatim in a text or tool result of the source; every need comes after
    the source and is a user or tool message, where a new model request starts).
    """

    def __init__(self, rng: Rng) -> None:
        self.rng = rng
        self.messages: list[Message] = []
        self._index: dict[str, int] = {}
        self._facts: list[_DraftFact] = []
        self._calls = 0
        self._changes = 0
        self._tags: set[str] = set()

    # ids
    @property
    def last_id(self) -> str:
        return self.messages[-1].id

    @property
    def last_role(self) -> str:
        return self.messages[-1].role if self.messages else ""

    def call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls:04d}"

    def change_id(self) -> str:
        self._changes += 1
        return f"chg-{self._changes}"

    def tag(self, digits: int = 4) -> str:
        """A hex tag not handed out before in this conversation: makes paths, errors and ids unique, so a
        fact's text points at one place."""
        while True:
            t = f"{self.rng.randint(16**digits):0{digits}x}"
            if t not in self._tags:
                self._tags.add(t)
                return t

    def number(self, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi)`` whose decimal text is unique in this conversation."""
        while True:
            n = self.rng.randint(lo, hi)
            if str(n) not in self._tags:
                self._tags.add(str(n))
                return n

    # messages
    def add(self, role: Role, *parts: Part, pending: bool = False, resolves: tuple[str, ...] = ()) -> str:
        mid = f"m{len(self.messages) + 1:04d}"
        self._index[mid] = len(self.messages)
        self.messages.append(Message(mid, role, tuple(parts), pending=pending, resolves=resolves))
        return mid

    def add_results(self, calls: Sequence[Part], bodies: Sequence[str | tuple[str, bool]]) -> list[str]:
        """One tool message per call, in order, right after the calls (the pairing providers require)."""
        ids = []
        for c, b in zip(calls, bodies, strict=True):
            body, err = (b, False) if isinstance(b, str) else b
            ids.append(self.add("tool", result(c.call_id or "", c.name or "", body, err)))
        return ids

    # facts
    def fact(self, kind: FactKind, fact_text: str, source: str) -> int:
        """Record a fact established by message ``source``; returns a handle for :meth:`need`."""
        self._facts.append(_DraftFact(kind, fact_text, source))
        return len(self._facts) - 1

    def need(self, handle: int | None, at: str | None = None) -> None:
        """The fact matters again at message ``at`` (by default the newest message, the input to the next
        model request). Ignored when ``handle`` is None (a fact this run never established), when ``at``
        is not after the source, or when it is already listed."""
        if handle is None:
            return
        f = self._facts[handle]
        at = at or self.last_id
        if self._index[at] <= self._index[f.source] or at in f.needed_at:
            return
        if self.messages[self._index[at]].role not in ("user", "tool"):
            raise RuntimeError(f"fact {f.text!r} needed at {at}, which is not a user or tool message")
        f.needed_at.append(at)

    def facts_of(self, kind: FactKind) -> list[int]:
        return [i for i, f in enumerate(self._facts) if f.kind == kind]

    def facts_from(self, source: str) -> list[int]:
        """Handles of the facts message ``source`` establishes."""
        return [i for i, f in enumerate(self._facts) if f.source == source]

    def fact_text(self, handle: int) -> str:
        return self._facts[handle].text

    def build(self, conv_id: str, tools: Sequence[Tool], meta: Mapping[str, Any]) -> Conversation:
        """The conversation. Facts nothing ever needed are left out: a fact is a probe of retention, and
        one without a place where it is needed probes nothing (a short run can end before its use)."""
        facts = []
        kept = [f for f in self._facts if f.needed_at]
        for n, f in enumerate(kept, 1):
            src = self.messages[self._index[f.source]]
            if not any(f.text in p.text for p in src.parts if p.kind in ("text", "tool_result")):
                raise RuntimeError(f"fact {f.text!r} is not in the text of its source {f.source}")
            facts.append(Fact(f"f{n:03d}", f.kind, f.text, f.source, tuple(f.needed_at)))
        return Conversation(conv_id, tuple(self.messages), tuple(facts), tuple(tools), dict(meta))
