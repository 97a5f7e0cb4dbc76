"""The report of a ``csim tune`` folder: the optimisation history, the frontier, parameter importance and the
held-out check, as one self-contained HTML page (``csim report TUNE_DIR --out OUT`` writes ``OUT/tune.html``).

It reads ``tune.json`` only (every trial's settings and intervals are there), draws with the compare report's
helpers (:mod:`sim.report.figures`: one colour per policy, PNGs without metadata, so the same tune gives the same
bytes), and computes importance with Optuna's PED-ANOVA evaluator (deterministic, no scikit-learn) over the trials
rebuilt as an Optuna study.
Values are shown relative to each policy's default (the change in percent), so policies of different costs share
one axis.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from sim.core.errors import InvalidConfig
from sim.report.figures import Html, colours, note, show, table
from sim.sweep.space import Dim, policy_space
from sim.sweep.tune import TUNE_MANIFEST, quiet_optuna
from sim.sweep.tunestats import column_of
from sim.sweep.tuneview import render, verdict

#: PED-ANOVA's share of the best trials it compares with all of them.
TARGET_QUANTILE = 0.25


def load_tune(path: str | Path) -> dict[str, Any]:
    """A finished tune's ``tune.json``; a clear error for a folder that is not one, or a tune not finished."""
    f = Path(path) / TUNE_MANIFEST
    if not f.is_file():
        raise InvalidConfig(f"{path} holds no {TUNE_MANIFEST}: not the output of csim tune")
    try:
        result: dict[str, Any] = json.loads(f.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidConfig(f"{f}: cannot be read ({exc}); run csim tune again into the same folder") from None
    if not result.get("finished"):
        raise InvalidConfig(f"{path}: the tune did not finish; run the same csim tune again to resume it")
    return result


def _change(value: float | None, base: float | None) -> float:
    if value is None or base is None or base == 0:
        return float("nan")
    return (value - base) / abs(base) * 100


def _studies(result: Mapping[str, Any]) -> list[tuple[Any, Mapping[str, Any]]]:
    return [(w["window"], s) for w in result["windows"] for s in w["policies"]]


def history(result: Mapping[str, Any]) -> Figure:
    """Per policy, each trial's objective as a change from the default (infeasible trials hollow), and the best
    feasible so far as a step line."""
    col = column_of(result["spec"]["objective"])
    sign = 1 if result["spec"]["direction"] == "minimize" else -1
    studies = _studies(result)
    palette = colours(f"{s['policy']} @ {w}" if w else s["policy"] for w, s in studies)
    fig = Figure(figsize=(10, 5))
    ax = fig.subplots()
    for w, s in studies:
        label = f"{s['policy']} @ {w}" if w else s["policy"]
        base = s["default"]["stats"][col]["mean"]
        xs = [t["number"] + 1 for t in s["trials"]]
        ys = [_change(t["objective"]["mean"], base) for t in s["trials"]]
        ok = [t["feasible"] for t in s["trials"]]
        c = palette[label]
        ax.scatter(
            [x for x, f in zip(xs, ok, strict=True) if f], [y for y, f in zip(ys, ok, strict=True) if f], color=c, s=18
        )
        ax.scatter(
            [x for x, f in zip(xs, ok, strict=True) if not f],
            [y for y, f in zip(ys, ok, strict=True) if not f],
            facecolors="none",
            edgecolors=c,
            s=18,
        )
        best, line = 0.0, []
        for y, f in zip(ys, ok, strict=True):
            if f and not np.isnan(y) and sign * y < sign * best:
                best = y
            line.append(best)
        ax.step(xs, line, where="post", color=c, label=label, linewidth=1.5)
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_xlabel("trial")
    ax.set_ylabel(f"{result['spec']['objective']}: change from the default (%)")
    ax.set_title("Optimisation history (filled: feasible; line: best feasible so far)")
    ax.legend(fontsize=7, ncol=2, loc="best")
    return fig


def frontier_figure(result: Mapping[str, Any]) -> Figure | None:
    """Every trial meeting the other constraints: the objective's change against the margin by which the first
    constraint's bound meets its limit (the default's bound, for ``>=default``); the frontier's trials ringed."""
    cons = result["spec"]["constraints"]
    if not cons:
        return None
    col = column_of(result["spec"]["objective"])
    first = cons[0]
    studies = _studies(result)
    palette = colours(f"{s['policy']} @ {w}" if w else s["policy"] for w, s in studies)
    fig = Figure(figsize=(10, 5.5))
    ax = fig.subplots()
    for w, s in studies:
        label = f"{s['policy']} @ {w}" if w else s["policy"]
        base = s["default"]["stats"][col]["mean"]
        front = set(s["front"])
        pts = []
        for t in s["trials"]:
            others = [v for k, v in t["constraints"].items() if k != first]
            if any(v["violation"] > 0 for v in others):
                continue
            c = t["constraints"][first]
            if c["violation"] is None:
                continue
            pts.append((_change(t["objective"]["mean"], base), -c["violation"], t["number"] in front))
        if not pts:
            continue
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=palette[label], s=16, label=label)
        ringed = [p for p in pts if p[2]]
        ax.scatter([p[0] for p in ringed], [p[1] for p in ringed], facecolors="none", edgecolors="black", s=60)
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.axvline(0, color="#888", linewidth=0.8)
    ax.set_xlabel(f"{result['spec']['objective']}: change from the default (%)")
    ax.set_ylabel(f"{first}: margin of its bound (>= 0 meets it)")
    ax.set_title("Frontier: each policy's trials (ringed: on its frontier)")
    ax.legend(fontsize=7, ncol=2, loc="best")
    return fig


def _distribution(d: Dim) -> Any:
    import optuna

    if d.choices:
        return optuna.distributions.CategoricalDistribution(list(d.choices))
    assert d.low is not None and d.high is not None
    if d.integer:
        return optuna.distributions.IntDistribution(int(d.low), int(d.high), log=d.log, step=int(d.step or 1))
    return optuna.distributions.FloatDistribution(d.low, d.high, log=d.log, step=d.step)


def importance(result: Mapping[str, Any]) -> pd.DataFrame:
    """Per policy (and window) with two or more tuned fields and four or more distinct settings tried: Optuna's
    PED-ANOVA importance of each field for the objective (deterministic), over the trials rebuilt as a study."""
    import warnings

    import optuna

    rows = []
    for w, s in _studies(result):
        # From tune.json, never from the policy: reading a folder imports no code it names (a module:Class policy).
        # A tune.json from before "dims" has the space of a bundled policy rebuilt from its declaration.
        if "dims" in s:
            space = {d["name"]: Dim(**{**d, "choices": tuple(d["choices"])}) for d in s["dims"]}
        elif ":" not in s["policy"]:
            space = policy_space(s["policy"], tuple(result["spec"].get("space", ())))
        else:
            continue
        distinct = {json.dumps(t["params"], sort_keys=True) for t in s["trials"]}
        if len(space) < 2 or len(distinct) < 4:
            continue
        dists = {k: _distribution(d) for k, d in space.items()}
        with quiet_optuna():
            study = optuna.create_study(direction=result["spec"]["direction"])
        for t in s["trials"]:
            value = t["objective"]["mean"]
            if value is None:
                continue
            params = {k: _typed(v, space[k]) for k, v in t["params"].items()}
            study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # PED-ANOVA: Optuna's evaluator that needs no scikit-learn (fANOVA does) and no seed (it is deterministic);
            # the best quarter of the trials against all, so a few trials are enough.
            evaluator = optuna.importance.PedAnovaImportanceEvaluator(target_quantile=TARGET_QUANTILE)
            got = optuna.importance.get_param_importances(study, evaluator=evaluator)
        for name, share in got.items():
            rows.append({"window": w or "", "policy": s["policy"], "field": name, "importance": round(float(share), 3)})
    return pd.DataFrame(rows, columns=["window", "policy", "field", "importance"])


def _typed(value: str, d: Dim) -> Any:
    if d.choices:
        return value
    return int(float(value)) if d.integer else float(value)


def holdout(result: Mapping[str, Any]) -> pd.DataFrame:
    """Per policy (and window): the settings, the change found on the tuning set and the change held out, the gap,
    the paired difference's interval, and the verdict."""
    col = column_of(result["spec"]["objective"])
    rows = []
    for w, s in _studies(result):
        h = s.get("holdout")
        tuned = _change(s["best"]["objective"]["mean"], s["default"]["stats"][col]["mean"]) if s["improves"] else None
        held = _change(h["best"][col]["mean"], h["default"][col]["mean"]) if h else None
        rows.append(
            {
                "window": w or "",
                "policy": s["policy"],
                "settings": " ".join(f"{k}={v}" for k, v in s["recommend"].items()) or "(default)",
                "tuning change %": None if tuned is None else round(tuned, 1),
                "held-out change %": None if held is None else round(held, 1),
                "gap (points)": None if tuned is None or held is None else round(held - tuned, 1),
                "held-out difference [95%]": (
                    f"{h['difference']['mean']:.4g} [{h['difference']['lo']:.4g}, {h['difference']['hi']:.4g}]"
                    if h
                    else ""
                ),
                "verdict": verdict(s),
            }
        )
    return pd.DataFrame(rows)


def write_tune_report(path: str | Path, out: str | Path) -> Path:
    """``OUT/tune.html`` for the tune folder at ``path``."""
    result = load_tune(path)
    parts: list[Html] = [show(history(result), "tune-history", "Optimisation history per policy")]
    fr = frontier_figure(result)
    parts.append(show(fr, "tune-frontier", "Frontier of cost against the constraint") if fr else note("No constraint."))
    imp = importance(result)
    parts.append(
        table(imp, "tune-importance", "Parameter importance (Optuna PED-ANOVA; policies with two or more fields)")
        if len(imp)
        else note("No policy had two or more tuned fields and four distinct settings: no importance to compute.")
    )
    parts.append(table(holdout(result), "tune-holdout", "Held-out check: the change found and the change held out"))
    body = "".join(p.text for p in parts)
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>csim tune report</title></head>"
        "<body style='font-family:sans-serif;max-width:1100px;margin:2em auto'>"
        f"<h1>csim tune: {html.escape(str(path))}</h1><pre style='font-size:0.8em'>{html.escape(render(result))}</pre>"
        f"{body}</body></html>\n"
    )
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "tune.html").write_text(page, encoding="utf-8")
    return target / "tune.html"


__all__ = ["frontier_figure", "history", "holdout", "importance", "load_tune", "write_tune_report"]
