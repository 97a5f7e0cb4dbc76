"""Running a whole ``csim tune`` into a folder: every policy (per window), each one's answer and held-out check,
the frontier, ``OUT/tune.json``, and the progress line. The search itself is :mod:`sim.sweep.tune`."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from policies import load_policy_class
from sim.core.errors import InvalidConfig
from sim.core.metrics import versions
from sim.sweep.executors import ExecutorSpec
from sim.sweep.parts import results_lock
from sim.sweep.space import format_number, native_terms
from sim.sweep.tune import STORE, TUNE_MANIFEST, Budget, Store, Study, Tuner, TuneSpec, UnitRun, plan_units, split


# -- the whole tune ---------------------------------------------------------------------------------------------
def run_tune(
    spec: TuneSpec,
    out: str | Path,
    budget: Budget | None = None,
    *,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    on_trial: Callable[[Study, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Tune every policy (per window) into ``out``; returns (and writes as ``out/tune.json``) the answer.
    Running it again on the same folder reuses every stored run; another spec in the same folder is refused."""
    budget = budget or Budget()
    root = Path(out)
    ex = ExecutorSpec(executor, workers, scheduler)
    normalised = json.loads(json.dumps(spec.normalised(), default=str))
    with results_lock(root):
        if (root / TUNE_MANIFEST).exists():
            try:
                old = json.loads((root / TUNE_MANIFEST).read_text(encoding="utf-8"))
            except ValueError:
                old = {"spec": None}
            if old.get("spec") != normalised:
                raise InvalidConfig(
                    f"{root} holds another tune (its {TUNE_MANIFEST} has a different spec); use a new --out, or "
                    "delete the old one to start afresh"
                )
        elif root.exists() and any(p.name not in (".lock",) for p in root.iterdir()):
            raise InvalidConfig(f"{root} is not empty and holds no {TUNE_MANIFEST}; give a new or empty --out")
        else:  # the spec first, so a tune stopped before its answer is recognised and resumed
            _write(root, {"kind": "tune", "spec": normalised, "finished": False})
        bar = Progress(spec, budget, enabled=progress)

        def seen(st: Study, trial: dict[str, Any]) -> None:
            bar.trial(st, trial, tuner)
            if on_trial is not None:
                on_trial(st, trial)

        tuner = Tuner(spec, root, ex, seen)
        result: dict[str, Any] = {"kind": "tune", "spec": normalised, "versions": versions(), "windows": []}
        for window in spec.windows or (None,):
            units, shared, version = plan_units(spec, window)
            tuning, held = split(units, spec.holdout, spec.seed)
            if not tuning:
                raise InvalidConfig("no conversation is left to tune on: give more seeds or a smaller --holdout")
            if tuner.store is None:
                tuner.store = Store(root / STORE, shared, ex)
            tuner.store.shared = shared
            studies = []
            for ref in spec.policies:
                bar.start(ref, window)
                studies.append(_answer(tuner, tuner.study(ref, window, tuning, version, budget), held, version))
            result["windows"].append(
                {
                    "window": window,
                    "tuning": [_unit_label(u) for u in tuning],
                    "held_out": [_unit_label(u) for u in held],
                    "policies": studies,
                    "overall": _overall(tuner, studies),
                    "front": [_brief(t) for t in tuner.front([t for s in studies for t in s["trials"]])],
                }
            )
        bar.close()
        assert tuner.store is not None
        result["runs"] = {"stored": len(tuner.store.rows), "ran": len(tuner.store.ran)}
        result["finished"] = True
        _write(root, result)
    return result


def _write(root: Path, result: Mapping[str, Any]) -> None:
    """``tune.json``, written whole or not at all (a temporary file renamed into place)."""
    tmp = root / f".{TUNE_MANIFEST}.tmp"
    tmp.write_text(json.dumps(_plain(result), indent=1) + "\n", encoding="utf-8")
    tmp.replace(root / TUNE_MANIFEST)


def _unit_label(u: UnitRun) -> str:
    return u.unit.conversation if u.unit.source_kind == "scenario" else f"{u.unit.source}:{u.unit.conversation[:8]}"


def _brief(t: Mapping[str, Any]) -> dict[str, Any]:
    return {k: t[k] for k in ("policy", "window", "number", "params", "objective", "constraints", "feasible")}


def _answer(tuner: Tuner, st: Study, held: list[UnitRun], version: str) -> dict[str, Any]:
    """One study's answer: the best feasible trial if it beats the default, its held-out check, the frontier."""
    best = tuner.best(st)
    default_mean = st.default["stats"][tuner.objective]["mean"]
    improves = best is not None and tuner.sign * best["objective"]["mean"] < tuner.sign * default_mean
    params = best["params"] if improves and best is not None else {}
    return {
        "policy": st.policy,
        "window": st.window,
        "sampler": st.sampler,
        "space": [d.describe() for d in st.space.values()],
        "dims": [dataclasses.asdict(d) for d in st.space.values()],  # the report rebuilds the space from these
        "trigger": next(iter(st.space)),
        "default": st.default,
        "trials": st.trials,
        "invalid": st.invalid,
        "best": _brief(best) if best is not None else None,
        "improves": improves,
        "recommend": params,
        "native": native_terms(st.space, params),
        "near_best": _near_best(tuner, st, best if improves else None),
        "defaults": _defaults(st.policy, list(st.space)),
        "holdout": tuner.check(st.policy, params, held, version) if improves else None,
        "front": [t["number"] for t in tuner.front(st.trials)],
    }


def _near_best(tuner: Tuner, st: Study, best: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Per field, the values of the feasible trials whose objective mean lies inside the 95% interval of the answer
    (the best trial when it beats the default, else the default): the settings the data cannot tell from it (the
    trigger's interval that ``--by window`` prints)."""
    ref = best["objective"] if best is not None else st.default["stats"][tuner.objective]
    edge = ref["hi"] if tuner.sign > 0 else ref["lo"]
    close = [t for t in st.trials if t["feasible"] and tuner.sign * t["objective"]["mean"] <= tuner.sign * edge]
    out: dict[str, list[str]] = {}
    for name, d in st.space.items():
        values = sorted({t["params"][name] for t in close}, key=lambda v: (float(v) if not d.choices else 0.0, v))
        out[name] = values
    return out


def _defaults(ref: str, names: Sequence[str]) -> dict[str, str]:
    """The default value of each tuned field, as ``-P`` writes it (``unset`` for None: the policy derives it)."""
    config = load_policy_class(ref).Config()
    return {n: "unset" if getattr(config, n) is None else format_number(getattr(config, n)) for n in names}


def _overall(tuner: Tuner, studies: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The cheapest answer across policies on the tuning set (each feasible against its own default)."""
    ok = [s for s in studies if s["improves"]]
    if not ok:
        return None
    best = min(ok, key=lambda s: (tuner.sign * s["best"]["objective"]["mean"], s["policy"]))
    return {"policy": best["policy"], "params": best["recommend"], "objective": best["best"]["objective"]}


def _plain(x: Any) -> Any:
    """NaN as null, tuples as lists: strict JSON."""
    if isinstance(x, float):
        return None if np.isnan(x) else x
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        return _plain(x.item())
    return x


class Progress:
    """Trials done per study with the best feasible value so far: a tqdm bar on a terminal, else one line a trial."""

    def __init__(self, spec: TuneSpec, budget: Budget, enabled: bool = True, stream: Any = None) -> None:
        import sys

        self.stream = stream or sys.stderr
        self.enabled, self.budget = enabled, budget
        self.bar: Any = None
        self.best: float | None = None
        self.t0 = time.perf_counter()
        self.where = ""

    def start(self, ref: str, window: int | None) -> None:
        self.close()
        self.best, self.where = None, ref + (f" @ {window:,}" if window else "")
        if self.enabled and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=self.budget.trials, unit="trial", desc=f"tune {self.where}", file=self.stream)

    def trial(self, st: Study, trial: Mapping[str, Any], tuner: Tuner) -> None:
        value = trial["objective"]["mean"]
        if (
            trial["feasible"]
            and not np.isnan(value)
            and (self.best is None or tuner.sign * value < tuner.sign * self.best)
        ):
            self.best = value
        best = "none feasible yet" if self.best is None else f"best {format_number(self.best)}"
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(best)
            self.bar.update(1)
            return
        params = " ".join(f"{k}={v}" for k, v in trial["params"].items())
        total = f"/{self.budget.trials}" if self.budget.trials else ""
        print(
            f"tune {self.where}: trial {len(st.trials)}{total} {params}: {format_number(value)}"
            f"{'' if trial['feasible'] else ' (infeasible)'}, {best}; {trial['ran']} runs run, "
            f"{time.perf_counter() - self.t0:.0f} s",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


__all__ = ["Progress", "run_tune"]
