"""The retention model fitted on real summaries (``csim calibrate PATH --retention``), checked held out by session.

Each recorded summary (:mod:`sim.calibration.survival`) is an experiment: ``n`` probes of a kind in its span, a
summary of ``S`` tokens, ``k`` of the probes in it verbatim. A kind with at least :data:`MIN_OBSERVATIONS`
recorded probes is fitted in the ``slots`` form of :class:`sim.core.retention.KindRate` (``k`` drawn from ``n``
with ``1 - exp(-rate * S / n)`` each) by maximum likelihood, with a bootstrap interval (summaries resampled, and
the probes within each); a kind with fewer takes the published figure in :data:`PUBLISHED`, its source named.
The typical summary length is the median of the recorded ones.

Held out by session: each session's summaries are predicted by the model fitted on the other sessions (the
predicted share kept of a kind is the mean keep probability of its probes), beside what they kept.

Why this form. Both shared Claude Code summaries are about 3,500 tokens long and kept a similar *number* of
artifacts (65 and 75) from spans of very different sizes (165 and 272), so a fixed share per kind, fitted on one,
misses the other by 12 points; a summary with room for a number of mentions does not. The form was chosen after
looking at both sessions (say so when quoting it); its one parameter per kind is fitted held out. Age (how long
before the summary a probe appeared) is measured and reported (:func:`_notes`), not modelled: in both sessions the
older half of the span kept more artifacts than the newer, but by margins too different (72% against 14%, 33%
against 23%) for one factor fitted on one session to predict the other's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

import numpy as np

from sim.calibration.survival import Survived, observed_survival, summaries_of
from sim.core.conversation import FACT_KINDS, Conversation
from sim.core.retention import KindRate, RetentionModel

#: Fewest recorded probes of a kind for it to be fitted rather than taken from a publication.
MIN_OBSERVATIONS = 20
BOOTSTRAP = 200

#: The published figures for kinds the recordings hold too few of (``reference/field-2026.md``, §1a, §1b and
#: ``evaluation-literature.md`` §2), as (first, later, source).
PUBLISHED: dict[str, tuple[float, float, str]] = {
    "constraint": (
        0.53,
        round((0.10 / 0.53) ** 0.25, 4),
        "published: Claude Code /compact kept 53% of safety rules after one round and 10% after five (The "
        "Compaction Cliff, arXiv 2608.22752, read through summaries); later = (0.10/0.53)^(1/4)",
    ),
    "decision": (
        0.77,
        0.77,
        "published: decisions survived about 77% of 43 real Claude Code compactions (vshulcz/deja-vu #543)",
    ),
    "artifact": (
        0.098,
        0.098,
        "published: file paths survived 9.8% of 43 real Claude Code compactions (vshulcz/deja-vu #543)",
    ),
    "continuation": (
        0.75,
        0.75,
        "published: Factory's continuity score (3.80 + 3.67 + 3.77) / 3 / 5 over three summarisers (Evaluating "
        "context compression for AI agents, Dec 2025)",
    ),
    "recall": (
        0.75,
        0.75,
        "published: Factory's accuracy score (4.04 + 3.74 + 3.43) / 3 / 5 over three summarisers (Evaluating "
        "context compression for AI agents, Dec 2025)",
    ),
}


@dataclass(frozen=True)
class Recorded:
    """One recorded summary: its session, its length in tokens and the probes of its span."""

    session: str
    summary: str
    tokens: int
    rows: tuple[Survived, ...]

    def of(self, kind: str) -> list[Survived]:
        return [r for r in self.rows if r.kind == kind]


def recorded_summaries(convs: Iterable[Conversation], count: Callable[[str], int]) -> list[Recorded]:
    """Every recorded summary of ``convs`` with the probes of its span (those with none are left out)."""
    out = []
    for conv in convs:
        rows = observed_survival(conv)
        for i in summaries_of(conv):
            mine = tuple(r for r in rows if r.summary == conv.messages[i].id)
            if mine:
                out.append(Recorded(conv.id, conv.messages[i].id, count(conv.messages[i].text), mine))
    return out


def _loglik_slope(rate: float, xs: np.ndarray, ks: np.ndarray, ns: np.ndarray) -> float:
    """d/d rate of the log likelihood of ``ks`` kept of ``ns`` with ``1 - exp(-rate * x)`` each."""
    e = np.exp(-rate * xs)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.where(ks > 0, ks * xs * e / np.maximum(1.0 - e, 1e-300), 0.0)
    return float(kept.sum() - ((ns - ks) * xs).sum())


def fit_rate(experiments: Sequence[tuple[float, int, int]]) -> float:
    """The maximum-likelihood ``rate`` from (summary tokens, candidates, kept) triples; the slope is decreasing
    in the rate, so bisection finds its zero (0 when nothing was kept; a large finite rate when all was)."""
    xs = np.array([s / n for s, n, _ in experiments], dtype=float)
    ns = np.array([n for _, n, _ in experiments], dtype=float)
    ks = np.array([k for _, _, k in experiments], dtype=float)
    if ks.sum() == 0:
        return 0.0
    hi = 1.0
    while _loglik_slope(hi, xs, ks, ns) > 0 and hi < 1e6:
        hi *= 2
    lo = 0.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if _loglik_slope(mid, xs, ks, ns) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _experiments(summaries: Sequence[Recorded], kind: str) -> list[tuple[float, int, int]]:
    out = []
    for s in summaries:
        rows = s.of(kind)
        if rows:
            out.append((float(s.tokens), len(rows), sum(r.kept for r in rows)))
    return out


def _bootstrap(summaries: Sequence[Recorded], kind: str, seed: int) -> tuple[float, float]:
    """A 95% percentile interval of the rate: the summaries resampled, and the probes within each."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, FACT_KINDS.index(kind)]))
    per = [(s.tokens, np.array([r.kept for r in s.of(kind)], dtype=int)) for s in summaries if s.of(kind)]
    rates = []
    for _ in range(BOOTSTRAP):
        picks = rng.integers(0, len(per), len(per))
        exps = []
        for j in picks:
            tokens, kept = per[j]
            exps.append((float(tokens), len(kept), int(rng.choice(kept, len(kept)).sum())))
        rates.append(fit_rate(exps))
    lo, hi = np.percentile(rates, [2.5, 97.5])
    return float(lo), float(hi)


def fit(summaries: Sequence[Recorded], fitted_on: str = "", seed: int = 0, held_out: bool = True) -> RetentionModel:
    """The retention model of ``summaries`` (see the module docstring); with ``held_out``, each session's
    summaries are also predicted by a fit on the others (:func:`held_out_rows`)."""
    kinds = []
    for kind in FACT_KINDS:
        exps = _experiments(summaries, kind)
        n = sum(e[1] for e in exps)
        if n >= MIN_OBSERVATIONS:
            sessions = len({s.session for s in summaries if s.of(kind)})
            kinds.append(
                KindRate(
                    kind,
                    "slots",
                    rate=round(fit_rate(exps), 8),
                    interval=tuple(round(x, 8) for x in _bootstrap(summaries, kind, seed)),  # type: ignore[arg-type]
                    observations=n,
                    source=f"fitted: {n} probes in {len(exps)} recorded summaries of {sessions} sessions ({fitted_on})",
                )
            )
        else:
            first, later, source = PUBLISHED[kind]
            kinds.append(
                KindRate(
                    kind,
                    "share",
                    first=first,
                    later=later,
                    observations=n,
                    source=f"{source}; the recordings hold {n} (fewer than {MIN_OBSERVATIONS})",
                )
            )
    length = round(median(s.tokens for s in summaries)) if summaries else 3500
    model = RetentionModel(tuple(sorted(kinds, key=lambda k: k.kind)), length, fitted_on, _notes(summaries))
    if held_out:
        model = RetentionModel(model.kinds, model.summary_tokens, fitted_on, model.notes, held_out_rows(summaries))
    return model


def predict(model: RetentionModel, summary: Recorded, kind: str) -> float | None:
    """The predicted share of ``summary``'s probes of ``kind`` that it keeps (None: it has none)."""
    rows = summary.of(kind)
    if not rows:
        return None
    rate = model.rate(kind)
    return sum(rate.keep(summary.tokens, len(rows), r.round) for r in rows) / len(rows)


def held_out_rows(summaries: Sequence[Recorded]) -> tuple[dict[str, Any], ...]:
    """Per session, summary and kind: observed and predicted (by a fit on the other sessions) share kept."""
    out = []
    sessions = sorted({s.session for s in summaries})
    if len(sessions) < 2:
        return ()
    for session in sessions:
        train = [s for s in summaries if s.session != session]
        model = fit(train, held_out=False)
        for s in summaries:
            if s.session != session:
                continue
            for kind in FACT_KINDS:
                rows = s.of(kind)
                if not rows:
                    continue
                pred = predict(model, s, kind)
                observed = sum(r.kept for r in rows) / len(rows)
                out.append(
                    {
                        "session": session,
                        "summary": s.summary,
                        "kind": kind,
                        "observations": len(rows),
                        "observed": round(observed, 4),
                        "predicted": round(float(pred), 4) if pred is not None else None,
                        "form": model.rate(kind).form,
                    }
                )
    return tuple(out)


def _notes(summaries: Sequence[Recorded]) -> tuple[str, ...]:
    """What the recordings say of age: the share kept of each kind's older and newer halves of each span."""
    notes = []
    for kind in FACT_KINDS:
        parts = []
        for s in summaries:
            rows = s.of(kind)
            if len(rows) < MIN_OBSERVATIONS:
                continue
            mid = median(r.age_messages for r in rows)
            old = [r.kept for r in rows if r.age_messages > mid]
            new = [r.kept for r in rows if r.age_messages <= mid]
            if old and new:
                parts.append(f"{s.session[:8]}: older half {sum(old)}/{len(old)}, newer half {sum(new)}/{len(new)}")
        if parts:
            notes.append(f"age ({kind}): " + "; ".join(parts) + " (reported, not used by the model)")
    return tuple(notes)


def render(model: RetentionModel) -> str:
    """The model and its held-out check as text tables."""
    lines = [
        f"retention model fitted on {model.fitted_on or '(unnamed)'}: typical summary {model.summary_tokens:,} tokens"
    ]
    lines.append(f"  {'kind':<13}{'form':<7}{'figure':<34}{'n':>6}  source")
    for k in sorted(model.kinds, key=lambda k: k.kind):
        if k.form == "slots":
            iv = f" [{k.interval[0]:.4f}, {k.interval[1]:.4f}]" if k.interval else ""
            fig = f"rate {k.rate:.4f}{iv}"
        else:
            fig = f"first {k.first:.2f}, later {k.later:.2f}"
        lines.append(f"  {k.kind:<13}{k.form:<7}{fig:<34}{k.observations:>6}  {k.source}")
    lines.extend(f"  {n}" for n in model.notes)
    if model.held_out:
        lines.append("held out by session (each predicted by a fit on the others):")
        lines.append(f"  {'session':<10}{'kind':<13}{'n':>5}{'observed':>10}{'predicted':>11}{'diff':>8}")
        for r in model.held_out:
            d = None if r["predicted"] is None else r["predicted"] - r["observed"]
            lines.append(
                f"  {r['session'][:8]:<10}{r['kind']:<13}{r['observations']:>5}{r['observed']:>10.1%}"
                f"{r['predicted']:>11.1%}{'' if d is None else f'{d * 100:+.1f}':>8}"
                + ("" if r["observations"] >= MIN_OBSERVATIONS else "  (few)")
            )
    else:
        lines.append("held out: needs summaries from two sessions or more")
    return "\n".join(lines)


def max_error(model: RetentionModel) -> float | None:
    """The largest |predicted - observed| held out over kinds with at least MIN_OBSERVATIONS probes."""
    errs = [
        abs(r["predicted"] - r["observed"])
        for r in model.held_out
        if r["observations"] >= MIN_OBSERVATIONS and r["predicted"] is not None
    ]
    return max(errs) if errs else None


__all__ = [
    "MIN_OBSERVATIONS",
    "PUBLISHED",
    "Recorded",
    "fit",
    "fit_rate",
    "held_out_rows",
    "max_error",
    "predict",
    "recorded_summaries",
    "render",
]
