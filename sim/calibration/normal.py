"""Least squares from sums: each conversation's weighted normal equations, and batched solves of many fits.

A fit on all but a few conversations needs only the sums ``sum w^2 x x^T`` of the others' requests: summed once per
conversation (:func:`per_conversation`), leaving conversations out is a subtraction, and the fits of every choice
are solved together (:func:`solve`). :mod:`sim.calibration.fit` makes its choices (framing, a ratio per kind) so.
"""

from __future__ import annotations

import numpy as np


def per_conversation(x: np.ndarray, y: np.ndarray, conv: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each conversation's sums ``sum w^2 x x^T`` over its rows of ``x`` (weights ``w = 1 / y``: the relative
    error is what the fit minimises), and how many of its values in each column are not zero (a column of zeros is
    left out of a fit, as ``lstsq``'s least-norm solution gives it 0)."""
    z = x / y[:, None]
    gram = np.zeros((n, x.shape[1], x.shape[1]))
    np.add.at(gram, conv, z[:, :, None] * z[:, None, :])
    nonzero = np.zeros((n, x.shape[1]), dtype=np.int64)
    np.add.at(nonzero, conv, x != 0)
    return gram, nonzero


#: An eigenvalue of a system scaled to a unit diagonal below this share of its largest is taken for zero: columns
#: that move together (messages and tokens that grow in step within one conversation). Rounding leaves such an
#: eigenvalue near 1e-16; two columns of real requests stay far above.
RANK_TOL = 1e-12


def solve(a: np.ndarray, b: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Batched least squares from normal equations ``a x = b`` (``a``: k x k per fit): ``lstsq``'s solution, the
    one of least norm where columns move together; a column not ``active`` (no value that is not zero) gets 0.

    Each system is scaled to a unit diagonal first (the columns are messages and tens of thousands of tokens), so
    that which columns move together is judged on their shapes, not their units.
    """
    k = a.shape[-1]
    active = active & (np.diagonal(a, axis1=1, axis2=2) > 0)  # (what a subtraction left of a column's sum)
    both = active[:, :, None] & active[:, None, :]
    a = np.where(both, a, 0.0) + np.where(~active[:, :, None] & np.eye(k, dtype=bool), 1.0, 0.0)
    d = 1.0 / np.sqrt(np.diagonal(a, axis1=1, axis2=2))
    s = a * d[:, :, None] * d[:, None, :]
    rhs = np.where(active, b, 0.0) * d
    lam, v = np.linalg.eigh(s)
    kept = lam > RANK_TOL * lam.max(axis=1, keepdims=True)
    inv = np.where(kept, 1.0 / np.where(kept, lam, 1.0), 0.0)
    vt = np.swapaxes(v, 1, 2)
    x = d * (v @ (inv * (vt @ rhs[:, :, None])[:, :, 0])[:, :, None])[:, :, 0]
    for i in np.flatnonzero(~kept.all(axis=1)):  # of the solutions, lstsq's is the one of least norm in x itself
        null = d[i][:, None] * v[i][:, ~kept[i]]
        x[i] -= null @ np.linalg.solve(null.T @ null, null.T @ x[i])
    out: np.ndarray = x
    return out
