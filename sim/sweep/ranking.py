"""Ranking a summary table: an objective, constraints, the Pareto frontier and the recommended row.

Pure functions over the frame :func:`sim.sweep.compare.compare` returns (one row per configuration, columns
``{short}_mean``, ``{short}_lo``, ``{short}_hi``, ``{short}_diff`` ... for every short name of
:data:`sim.sweep.compare.METRICS`), so ``csim compare`` and ``csim tune`` rank the same way.

The API::

    ranked = rank(table, objective="cost_usd", constraints=[parse_constraint("retention>=0.9")])

returns a copy of ``table`` sorted best first (within each ``group`` key, e.g. ``source``), with columns:

- ``rank``: 1 = best by the objective in its direction; ties go to the better value on the frontier's second
  axis, then to the label; rows without a value rank last;
- ``feasible``: the row meets every constraint (no constraint: every row);
- ``frontier``: no other row is at least as good on both axes and better on one. The axes are the objective
  and, when constraints are given, the first constraint's column, else retention (or cost when the objective
  is retention). Rows without a value on an axis are not placed;
- ``recommended``: the best frontier row by the objective that is also feasible: with the default objective,
  the cheapest settings that keep what the constraint asks. None is recommended when no frontier row is
  feasible; with no constraint it is simply the best row by the objective, so state what must be kept
  (``--require retention>=0.9``) to get a recommendation worth quoting.

Direction (:func:`higher_is_better`): higher is better for retention (every round), task success, the cache
read share and the completed share; lower for everything else (cost, tokens, peak context, compactions,
overflows, violations, requests, errors, repeated work).

A constraint (:func:`parse_constraint`) is ``COLUMN OP NUMBER`` with OP one of ``>= <= > < ==``; COLUMN is a
short name (its mean is tested: ``retention>=0.9``), a runs column (``retention_recall>=0.9``) or a summary
column given in full, e.g. the interval's lower bound ``retention_lo>=0.85``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sim.core.errors import InvalidConfig, UnknownName
from sim.sweep.compare import METRICS

#: Short names where more is better; every other metric is better lower.
HIGHER_IS_BETTER = frozenset(
    {"retention", "retention_r0", "retention_r1", "retention_r2plus", "success", "cache_hit", "completed"}
)
DEFAULT_OBJECTIVE = "cost_usd"
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==|>|<)\s*(\S+)\s*$")
_SUFFIXES = ("_mean", "_lo", "_hi", "_diff", "_diff_lo", "_diff_hi")


@dataclass(frozen=True)
class Constraint:
    """``column op threshold`` on a summary column (``retention_mean >= 0.9``); ``text`` as the user wrote it."""

    column: str
    op: str
    threshold: float
    text: str

    def holds(self, values: pd.Series) -> pd.Series:
        test = _OPS[self.op]
        return values.map(lambda v: bool(pd.notna(v) and test(float(v), self.threshold))).astype("bool")


def short_names() -> list[str]:
    return list(METRICS.values())


def column_of(name: str, what: str = "column") -> str:
    """The summary column a user's name means: a short name or runs column -> its ``_mean``; a full summary column
    (``retention_lo``) as given. Unknown names raise :class:`UnknownName` with the closest suggestion."""
    if name in METRICS:
        return f"{METRICS[name]}_mean"
    if name in METRICS.values():
        return f"{name}_mean"
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in METRICS.values():
            return name
    raise UnknownName(what, name, [*short_names(), *(f"{s}_lo" for s in ("retention", "success"))])


def metric_of(column: str) -> str:
    """The short name of a summary column (``retention_lo`` -> ``retention``)."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if column.endswith(suffix):
            return column[: -len(suffix)]
    return column


def higher_is_better(column: str) -> bool:
    """True when a larger value of this column (a short name or summary column) is the better one."""
    return metric_of(column_of(column)) in HIGHER_IS_BETTER


def parse_constraint(text: str) -> Constraint:
    """``"retention>=0.9"`` -> Constraint; a malformed text or unknown column is an error that says what to write."""
    m = _CONSTRAINT.match(text)
    if not m:
        raise InvalidConfig(
            f"--require {text!r} is not COLUMN OP NUMBER (OP one of >= <= > < ==), e.g. --require retention>=0.9 "
            "or --require overflows==0"
        )
    name, op, number = m.groups()
    column = column_of(name, "column for --require")
    try:
        threshold = float(number)
    except ValueError:
        raise InvalidConfig(
            f"--require {text!r}: {number!r} is not a number; write COLUMN OP NUMBER, e.g. retention>=0.9"
        ) from None
    if not np.isfinite(threshold):
        raise InvalidConfig(f"--require {text!r}: the threshold must be a finite number")
    return Constraint(column, op, threshold, text.strip())


def pareto_mask(x: np.ndarray, y: np.ndarray, x_higher: bool = False, y_higher: bool = True) -> np.ndarray:
    """True where a point is not dominated on (x, y) in the given directions; points with a NaN are False."""
    a = np.asarray(x, dtype="float64") * (-1.0 if x_higher else 1.0)  # both axes: lower is better
    b = np.asarray(y, dtype="float64") * (-1.0 if y_higher else 1.0)
    ok = ~(np.isnan(a) | np.isnan(b))
    out = np.zeros(len(a), dtype=bool)
    for i in np.flatnonzero(ok):
        dominated = ok & (a <= a[i]) & (b <= b[i]) & ((a < a[i]) | (b < b[i]))
        out[i] = not dominated.any()
    return out


def frontier_axes(objective: str, constraints: Sequence[Constraint] = ()) -> tuple[str, str]:
    """The two summary columns the frontier is drawn on (see the module docstring)."""
    obj = column_of(objective)
    if constraints and constraints[0].column != obj:
        return obj, constraints[0].column
    return obj, ("cost_usd_mean" if metric_of(obj) == "retention" else "retention_mean")


def rank(
    table: pd.DataFrame,
    objective: str = DEFAULT_OBJECTIVE,
    constraints: Sequence[Constraint] = (),
    group: Sequence[str] = (),
    label: str = "config",
) -> pd.DataFrame:
    """The table ranked by ``objective`` within each ``group``; adds rank, feasible, frontier, recommended."""
    obj = column_of(objective, "column to rank by")
    for c in {obj, *(k.column for k in constraints)}:
        if c not in table.columns:
            raise InvalidConfig(f"the summary has no column {c!r} to rank or constrain on")
    x_col, y_col = frontier_axes(objective, constraints)
    higher = metric_of(obj) in HIGHER_IS_BETTER
    parts = []
    for _, grp in table.groupby(list(group), sort=True) if group else [((), table)]:
        key = grp[obj].astype("float64") * (-1.0 if higher else 1.0)
        other = grp[y_col].astype("float64") * (-1.0 if metric_of(y_col) in HIGHER_IS_BETTER else 1.0)
        order = pd.DataFrame(
            {
                "missing": key.isna(),
                "key": key.fillna(0.0),
                "other": other.fillna(np.inf),
                "label": grp[label].astype(str),
            }
        )
        grp = grp.loc[order.sort_values(["missing", "key", "other", "label"], kind="mergesort").index].copy()
        grp["rank"] = np.arange(1, len(grp) + 1, dtype="int64")
        feasible = pd.Series(True, index=grp.index)
        for k in constraints:
            feasible &= k.holds(grp[k.column])
        grp["feasible"] = feasible.astype("bool")
        grp["frontier"] = pareto_mask(
            grp[x_col].to_numpy(dtype="float64"),
            grp[y_col].to_numpy(dtype="float64"),
            metric_of(x_col) in HIGHER_IS_BETTER,
            metric_of(y_col) in HIGHER_IS_BETTER,
        )
        grp["recommended"] = False
        pick = grp.index[grp["frontier"] & grp["feasible"] & grp[obj].notna()]
        if len(pick):
            grp.loc[pick[0], "recommended"] = True  # sorted best first: the first is the best
        parts.append(grp)
    return pd.concat(parts) if parts else table.assign(rank=[], feasible=[], frontier=[], recommended=[])
