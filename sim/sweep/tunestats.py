"""``csim tune``'s numbers: the objective, constraints on interval bounds, paired bootstrap intervals, the frontier.

Statistical unit: a conversation and seed (a recording is replayed under one seed; a scenario makes one conversation
per seed). Every setting of a tune is measured on the same units in the same order, and every interval is the
percentile bootstrap of the mean over one fixed set of resamples (:func:`resamples`, seeded): the intervals are
*paired*, so the default's bound and a candidate's bound move together with the conversations drawn, and a
difference between them is not the spread between conversations.

A constraint holds a column's bound to a threshold: ``COLUMN>=X`` on the **lower** bound of the column's interval,
``COLUMN<=X`` on the **upper** bound (``==0`` is ``<=0`` for a count that cannot go below 0). ``X`` is a number or
``default``, the default settings' own bound on the same units: ``retention>=default`` asks that the lower bound of
retention be no lower than the default's lower bound. ``default-0.01`` (or ``default+X``) moves that limit by a
margin: a non-inferiority test, which lets a setting lose at most 0.01 of the default's lower bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sim.core.errors import InvalidConfig, UnknownName
from sim.sweep.parts import RUN_COLUMNS

#: Short names (as ``csim compare`` prints them) for the runs columns a tune is most often asked about.
ALIASES: dict[str, str] = {
    "cost": "total_cost_usd",
    "cost_usd": "total_cost_usd",
    "retention": "retention_recall",
    "retention_r0": "retention_round0",
    "retention_r1": "retention_round1",
    "retention_r2plus": "retention_round2plus",
    "success": "task_success",
    "overflows": "overflows",
    "violations": "undeclared_violations",
    "input_tokens": "cumulative_input_tokens",
    "peak_context": "peak_context_tokens",
    "compactions": "compaction_count",
    "trajectory": "agent_requests",
    "extra_cost": "extra_cost_usd",
}
NUMERIC = ("int64", "Int64", "float64", "boolean")
RESAMPLES = 2000
BOOTSTRAP_SEED = 20_240_601
DEFAULT_CONSTRAINTS = ("retention>=default", "overflows<=0")


def column_of(name: str) -> str:
    """The runs column a name means (a short name or a column), or a "did you mean" naming the choices."""
    col = ALIASES.get(name, name)
    numeric = [c for c, t in RUN_COLUMNS.items() if t in NUMERIC and c != "seed"] + ["undeclared_violations"]
    if col not in numeric:
        raise UnknownName("run column", name, sorted(set(numeric) | set(ALIASES)))
    return col


@dataclass(frozen=True)
class Constraint:
    """``column op threshold`` on a bound of the column's paired interval (None: the default's bound)."""

    text: str
    column: str
    op: Literal[">=", "<="]
    threshold: float | None
    margin: float = 0.0  # added to the default's bound (``default-0.01``): a non-inferiority margin

    @classmethod
    def parse(cls, text: str) -> Constraint:
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==)\s*(\S+)\s*", text)
        if not m:
            raise InvalidConfig(
                f"--constraint {text!r} is not COLUMN>=X, COLUMN<=X or COLUMN==0 (X a number, 'default', or "
                "'default' with a margin such as default-0.01), e.g. --constraint retention>=default "
                "--constraint overflows==0"
            )
        name, op, raw = m.groups()
        col = column_of(name)
        if op == "==":
            if raw != "0":
                raise InvalidConfig(f"--constraint {text!r}: == is only for 0 (a count that must not happen)")
            op = "<="
        margin = 0.0
        relative = re.fullmatch(r"default([+-]\d+(?:\.\d*)?|[+-]\.\d+)?", raw)
        if relative:
            threshold, margin = None, float(relative.group(1) or 0.0)
        else:
            try:
                threshold = float(raw)
            except ValueError:
                raise InvalidConfig(f"--constraint {text!r}: the threshold must be a number or 'default'") from None
        return cls(text.strip(), col, ">=" if op == ">=" else "<=", threshold, margin)

    @property
    def bound(self) -> Literal["lo", "hi"]:
        return "lo" if self.op == ">=" else "hi"

    def limit(self, default: Mapping[str, float]) -> float:
        """The value the bound is held to: the threshold, or the default's own bound moved by the margin."""
        return self.threshold if self.threshold is not None else default[self.bound] + self.margin

    def violation(self, stats: Mapping[str, float], default: Mapping[str, float]) -> float:
        """How far ``stats`` miss the constraint (<= 0: met). A missing figure (no conversation needed a fact) is
        met only when the default has none either."""
        limit = self.limit(default)
        got = stats[self.bound]
        if np.isnan(limit):
            return 0.0
        if np.isnan(got):
            return 1.0
        gap = limit - got if self.op == ">=" else got - limit
        return float(gap if gap > 1e-12 else min(gap, 0.0))


def resamples(n: int, count: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """``count`` bootstrap draws of ``n`` unit indices, the same for every setting measured on those units."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(count, n)) if n else np.zeros((count, 0), dtype=np.int64)


def interval(values: Sequence[float] | np.ndarray, draws: np.ndarray) -> dict[str, float]:
    """Mean and 95% percentile interval of the mean over ``draws`` (NaNs, units without a figure, left out)."""
    v = np.asarray(values, dtype="float64")
    if len(v) == 0 or np.isnan(v).all():
        return {"mean": float("nan"), "lo": float("nan"), "hi": float("nan")}
    mean = float(np.nanmean(v))
    if len(v) == 1:
        return {"mean": mean, "lo": mean, "hi": mean}
    picked = v[draws]
    with np.errstate(all="ignore"):
        present = (~np.isnan(picked)).sum(axis=1)
        sums = np.nansum(picked, axis=1)
        means = np.where(present > 0, sums / np.maximum(present, 1), np.nan)
    means = means[~np.isnan(means)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"mean": mean, "lo": float(lo), "hi": float(hi)}


def frontier(points: Sequence[tuple[float, float]], higher_is_better: bool = True) -> list[int]:
    """Indices of the points no other point beats: lower first coordinate (the objective) and better second
    (higher for a ``>=`` constraint), each at least as good and one strictly better. NaN points never qualify.
    Kept here until ``csim compare``'s ranked frontier is merged; then one can call the other."""
    sign = 1.0 if higher_is_better else -1.0
    first: dict[tuple[float, float], int] = {}  # equal points: the first stands for them all
    for i, (a, b) in enumerate(points):
        if not (np.isnan(a) or np.isnan(b)):
            first.setdefault((a, b), i)
    ok = sorted(first.values())
    out = []
    for i in ok:
        a, b = points[i][0], sign * points[i][1]
        beaten = any(
            points[j][0] <= a and sign * points[j][1] >= b and (points[j][0] < a or sign * points[j][1] > b)
            for j in ok
            if j != i
        )
        if not beaten:
            out.append(i)
    return sorted(out, key=lambda i: (points[i][0], -sign * points[i][1], i))


__all__ = [
    "ALIASES",
    "DEFAULT_CONSTRAINTS",
    "Constraint",
    "column_of",
    "frontier",
    "interval",
    "resamples",
]
