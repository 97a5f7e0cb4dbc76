"""The random stream a scenario draws from, and the draws made from it (choices, coin flips, orders, sizes).

The generators must give the same conversation for the same seed and parameters in any process, so
nothing here touches global random state, the ``random`` module or ``hash()`` of a string (salted per
process). A scenario's generator is ``numpy.random.default_rng(SeedSequence([seed, key]))`` where
``key`` is derived from the scenario's name with SHA-256.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np

from sim.core.errors import InvalidConfig

T = TypeVar("T")


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


def pick(rng: Rng, items: Sequence[Any]) -> Any:
    """One element of ``items``, drawn with ``rng``."""
    return items[rng.randint(len(items))]


def chance(rng: Rng, p: float) -> bool:
    """True with probability ``p`` (always draws, so the stream does not depend on ``p`` being 0)."""
    return rng.random() < p


def shuffled(rng: Rng, items: list[T]) -> list[T]:
    """A copy of ``items`` in an order drawn with ``rng`` (Fisher-Yates)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = rng.randint(i + 1)
        out[i], out[j] = out[j], out[i]
    return out


# -- sizes ------------------------------------------------------------------------------------------
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
