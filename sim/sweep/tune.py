"""``csim tune``: search each policy's settings for the cheapest that keep what matters, then check the answer on
conversations the search never saw.

How a tune runs (the numbers are :mod:`sim.sweep.tunestats`, the spaces :mod:`sim.sweep.space`):

1. The conversations (scenarios x seeds, recordings under the first seed) are planned as a sweep plans them
   (:func:`sim.sweep.grid.plan`) and split, deterministically by a hash of each conversation and the tune's seed,
   into a *tuning* set and a *held-out* set: per scenario, and across all recordings together, a ``holdout`` share
   (at least one, when there are two or more) is held out.
2. Per policy (and per context window with ``--by window``), the default settings are measured on the tuning set,
   then an Optuna study proposes settings: every one of a small space (a grid that fits the trial budget), else a
   seeded TPE sampler that reads each trial's constraints (``Trial.set_constraint``). A trial's value is the
   objective's mean over the tuning set; its constraints are bounds of paired bootstrap intervals against the
   default's.
3. Every run is a sweep run: the same run key (:func:`sim.core.identity.run_key`), the same worker function
   (:func:`sim.sweep.grid.run_task`) on the same executors, written as the same atomic parts into ``OUT/store``.
   A run whose key is in the store is read, never run again; a tune stopped at any point and started again
   replays its sampler over the stored runs (same seed, same values, so the same proposals) and runs only what
   is missing.
4. The best feasible trial of each policy, if it beats the default on the tuning set, is measured on the held-out
   set beside the default: the answer, with the gap between the saving found and the saving held out.

Determinism: the trials, their values and the printed answer depend on the inputs, the seed and the number of
trials only. ``--budget 10m`` bounds the wall time, which decides how many trials run: two such tunes can differ
in their trial count, never in what a given trial measured.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from sim.core.config import RunConfig, normalise_run
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.identity import run_key
from sim.sweep.driver import done_run_keys, write_part
from sim.sweep.executors import ExecutorSpec, run_all
from sim.sweep.grid import PlannedRun, Setting, Task, Unit, key_config, package_version, plan, run_task, settings
from sim.sweep.parts import RUN_COLUMNS, finished_parts
from sim.sweep.results import read_table, typed
from sim.sweep.space import Dim, check_overrides, grid_size, policy_space, suggest
from sim.sweep.spec import PolicyGrid, Source, SweepSpec
from sim.sweep.tunestats import DEFAULT_CONSTRAINTS, Constraint, column_of, frontier, interval, resamples

TUNE_MANIFEST = "tune.json"
STORE = "store"


@dataclass(frozen=True)
class TuneSpec:
    """What to tune, on what, against what. The trial budget is not part of it: a tune resumed with a larger
    budget continues the same search."""

    policies: tuple[str, ...]
    sources: tuple[Source, ...]
    seeds: tuple[int, ...] = (0,)
    run: tuple[tuple[str, Any], ...] = ()
    objective: str = "cost"
    direction: Literal["minimize", "maximize"] = "minimize"
    constraints: tuple[str, ...] = DEFAULT_CONSTRAINTS
    space: tuple[str, ...] = ()
    holdout: float = 0.3
    seed: int = 0
    windows: tuple[int, ...] = ()
    sampler: Literal["auto", "grid", "tpe"] = "auto"
    #: Trials proposed together and run together (TPE with a constant liar): fixed, so the executor and its
    #: worker count never change the proposals.
    batch: int = 4

    def __post_init__(self) -> None:
        if not self.policies:
            raise InvalidConfig("csim tune needs at least one --policy (a name, module:Class, or 'all')")
        if not self.sources:
            raise InvalidConfig("csim tune needs conversations: --scenario NAME and/or --conversation PATH")
        if self.batch < 1:
            raise InvalidConfig(f"--batch {self.batch} must be at least 1")
        if not 0 <= self.holdout < 1:
            raise InvalidConfig(f"--holdout {self.holdout} must be a share in [0, 1), e.g. 0.3")
        if self.direction not in ("minimize", "maximize"):
            raise InvalidConfig(f"--direction {self.direction!r} must be minimize or maximize")
        column_of(self.objective)
        for c in self.constraints:
            Constraint.parse(c)
        check_overrides(self.policies, self.space)
        for ref in self.policies:  # an unknown policy, or one with no space, fails before anything runs
            policy_space(ref, self.space)
        for w in self.windows:
            if w < 1000:
                raise InvalidConfig(f"--windows {w}: a context window is in tokens, e.g. 200000")

    def normalised(self) -> dict[str, Any]:
        return {
            "policies": list(self.policies),
            "sources": [s.plain() for s in self.sources],
            "seeds": list(self.seeds),
            "run": dict(self.run),
            "objective": self.objective,
            "direction": self.direction,
            "constraints": list(self.constraints),
            "space": list(self.space),
            "holdout": self.holdout,
            "seed": self.seed,
            "windows": list(self.windows),
            "sampler": self.sampler,
            "batch": self.batch,
        }


@dataclass(frozen=True)
class Budget:
    """Trials per policy (and window), and/or seconds per policy; a grid never runs more than its size."""

    trials: int | None = 20
    seconds: float | None = None


# -- conversations and their split --------------------------------------------------------------------------------
@dataclass(frozen=True)
class UnitRun:
    """One conversation and seed, and the run config it is replayed under (its run-key form too)."""

    unit: Unit
    config: RunConfig
    config_key: str  # the RunConfig as sorted JSON, as run keys take it


def plan_units(spec: TuneSpec, window: int | None) -> tuple[list[UnitRun], dict[str, Conversation], str]:
    """The tune's units (recordings under the first seed only), the conversations by key, and the code version."""
    run = dict(spec.run)
    if window:
        run["window"] = window
    sweep = SweepSpec(tuple(PolicyGrid(p) for p in spec.policies), spec.sources, spec.seeds, normalise_run(run, "tune"))
    tasks, shared, _ = plan(sweep)
    units = []
    for t in tasks:
        if t.unit.source_kind != "scenario" and t.unit.seed != spec.seeds[0]:
            continue
        as_json = json.dumps(key_config(t.run_config), sort_keys=True)
        units.append(UnitRun(t.unit, t.run_config, as_json))
    units.sort(key=lambda u: (u.unit.source, u.unit.conversation, u.unit.seed))
    return units, shared, package_version(spec.policies)


def split(units: Sequence[UnitRun], holdout: float, seed: int) -> tuple[list[UnitRun], list[UnitRun]]:
    """Tuning and held-out units: per scenario, and across the recordings together, the ``holdout`` share of units
    first by a hash of (seed, conversation checksum, seed of the run) is held out; at least one of two or more."""
    groups: dict[str, list[UnitRun]] = {}
    for u in units:
        groups.setdefault(u.unit.source if u.unit.source_kind == "scenario" else "recorded", []).append(u)
    tune: list[UnitRun] = []
    held: list[UnitRun] = []
    for members in groups.values():
        ranked = sorted(
            members,
            key=lambda u: hashlib.sha256(f"{seed}|{u.unit.checksum}|{u.unit.seed}".encode()).hexdigest(),
        )
        n = len(ranked)
        k = int(np.floor(holdout * n + 0.5))
        k = min(max(k, 1 if n >= 2 and holdout > 0 else 0), n - 1) if n else 0
        held.extend(ranked[:k])
        tune.extend(ranked[k:])
    order = {id(u): i for i, u in enumerate(units)}
    return sorted(tune, key=lambda u: order[id(u)]), sorted(held, key=lambda u: order[id(u)])


# -- the store: sweep parts, looked up by run key -----------------------------------------------------------------
class Store:
    """``OUT/store``: the sweep parts of every run a tune made; a run in it is read, never rerun."""

    def __init__(self, root: Path, shared: Mapping[str, Conversation], executor: ExecutorSpec) -> None:
        self.root, self.shared, self.executor = root, shared, executor
        self.rows: dict[str, dict[str, Any]] = {}
        self.ran: list[str] = []  # run keys run by this process, in order
        self.notes: list[str] = []
        done_run_keys(root, self.notes)  # removes a damaged part, so its runs run again
        for part in finished_parts(root):
            self._add(read_table(part, "runs"))

    def _add(self, frame: Any) -> None:
        for row in frame.to_dict("records"):
            row["undeclared_violations"] = (row.get("violation_count") or 0) - (row.get("declared_violations") or 0)
            self.rows[str(row["run_key"])] = row

    def measure(
        self, setts: Sequence[Setting], units: Sequence[UnitRun], version: str, refs: tuple[str, ...]
    ) -> list[list[dict[str, Any]]]:
        """The runs rows of each setting on each unit, running those not stored: one task per unit with every
        missing setting (replayed together while they agree, as a sweep's task is), in parallel on the executor."""
        keys = [
            [
                run_key(
                    json.loads(s.spec),
                    u.unit.conversation,
                    u.unit.checksum,
                    u.unit.seed,
                    version,
                    json.loads(u.config_key),
                )
                for u in units
            ]
            for s in setts
        ]
        todo = []
        for j, u in enumerate(units):
            runs: dict[str, PlannedRun] = {}
            for s, ks in zip(setts, keys, strict=True):
                if ks[j] not in self.rows:
                    runs.setdefault(ks[j], PlannedRun(ks[j], s.label, s.policy, s.params))
            if runs:
                todo.append((u.unit.key, Task(u.unit, tuple(runs.values()), u.config, version, refs)))
        for rows in run_all(run_task, todo, self.shared, self.executor):
            write_part(self.root, rows)
            self._add(typed(rows["runs"], RUN_COLUMNS))
            self.ran.extend(r["run_key"] for r in rows["runs"])
        return [[self.rows[k] for k in ks] for ks in keys]


def setting_of(ref: str, params: Mapping[str, str]) -> Setting:
    """The sweep's :class:`Setting` (label, policy spec) for a policy with these parameters."""
    grid = PolicyGrid(ref, tuple((k, (v,)) for k, v in params.items()))
    return settings(SweepSpec((grid,), (Source("scenario", "-"),)))[0]


def column(rows: Sequence[Mapping[str, Any]], col: str) -> np.ndarray:
    """One column of the runs rows as floats, NaN where a run has no figure (pandas' NA, None)."""
    return np.array([np.nan if pd.isna(r.get(col)) else float(r[col]) for r in rows], dtype="float64")


# -- one study ------------------------------------------------------------------------------------------------------
@dataclass
class Study:
    """The trials of one policy (in one window) and what they found."""

    policy: str
    window: int | None
    space: dict[str, Dim]
    sampler: str
    default: dict[str, Any]
    trials: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)  # proposals the Config refused


class Tuner:
    """Runs the studies of a tune over one store; ``on_trial`` (for tests and the progress bar) sees each trial."""

    def __init__(
        self,
        spec: TuneSpec,
        out: Path,
        executor: ExecutorSpec,
        on_trial: Callable[[Study, dict[str, Any]], None] | None = None,
    ) -> None:
        self.spec, self.out, self.executor, self.on_trial = spec, out, executor, on_trial
        self.objective = column_of(spec.objective)
        self.constraints = [Constraint.parse(c) for c in spec.constraints]
        self.columns = list(dict.fromkeys([self.objective, *(c.column for c in self.constraints)]))
        self.sign = 1.0 if spec.direction == "minimize" else -1.0
        self.store: Store | None = None

    def stats(self, rows: Sequence[Mapping[str, Any]], draws: np.ndarray) -> dict[str, dict[str, float]]:
        return {c: interval(column(rows, c), draws) for c in self.columns}

    def judge(
        self, stats: Mapping[str, Mapping[str, float]], default: Mapping[str, Mapping[str, float]]
    ) -> dict[str, Any]:
        """Each constraint's bound, limit and violation (<= 0: met), and whether all are met."""
        out = {}
        for c in self.constraints:
            got, base = stats[c.column], default[c.column]
            limit = c.limit(base)
            out[c.text] = {"bound": got[c.bound], "limit": limit, "violation": c.violation(got, base)}
        return {"constraints": out, "feasible": all(v["violation"] <= 0 for v in out.values())}

    def study(self, ref: str, window: int | None, units: list[UnitRun], version: str, budget: Budget) -> Study:
        """One policy's search on the tuning units: trials asked ``batch`` at a time (a fixed number, so the
        proposals do not depend on the executor), their runs made together, then told."""
        import itertools

        import optuna

        assert self.store is not None
        refs = tuple(sorted(set(self.spec.policies)))
        space = policy_space(ref, self.spec.space)
        draws = resamples(len(units))
        default_rows = self.store.measure([setting_of(ref, {})], units, version, refs)[0]
        default = self.stats(default_rows, draws)
        size = grid_size(space)
        if self.spec.sampler == "grid" and size is None:
            raise InvalidConfig(f"--sampler grid: {ref}'s space has a continuous range; give a step (LOW:HIGH:STEP)")
        use_grid = self.spec.sampler == "grid" or (
            self.spec.sampler == "auto" and size is not None and size <= (budget.trials or 50)
        )
        seed = int(hashlib.sha256(f"{self.spec.seed}|{ref}|{window}".encode()).hexdigest()[:8], 16)
        n = budget.trials
        with quiet_optuna():
            if use_grid:  # every setting, in the grid's order: each one enqueued, so no sampler is asked
                sampler: optuna.samplers.BaseSampler = optuna.samplers.RandomSampler(seed=seed)
                label = f"grid ({size} settings)"
                n = size if n is None else min(n, size or 0)
            else:
                startup = max(3, min(10, (budget.trials or 40) // 4))
                sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, constant_liar=True)
                label = f"TPE (seed {seed}, {startup} random first, {self.spec.batch} a batch)"
            study = optuna.create_study(direction=self.spec.direction, sampler=sampler)
            if use_grid:
                names = list(space)
                for combo in itertools.product(*(space[k].grid() for k in names)):
                    study.enqueue_trial(dict(zip(names, combo, strict=True)))
        st = Study(ref, window, space, label, {"stats": default, "rows": len(default_rows)})
        deadline = None if budget.seconds is None else time.perf_counter() + budget.seconds
        done = 0
        while n is None or done < n:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            k = self.spec.batch if n is None else min(self.spec.batch, n - done)
            with quiet_optuna():
                asked = [study.ask() for _ in range(k)]
            self._batch(st, study, asked, units, version, refs, draws, default)
            done += k
        return st

    def _batch(
        self,
        st: Study,
        study: Any,
        asked: Sequence[Any],
        units: Sequence[UnitRun],
        version: str,
        refs: tuple[str, ...],
        draws: np.ndarray,
        default: Mapping[str, Mapping[str, float]],
    ) -> None:
        assert self.store is not None
        proposals = [suggest(t, st.space) for t in asked]
        valid: list[tuple[Any, dict[str, str], Setting]] = []
        for trial, params in zip(asked, proposals, strict=True):
            try:
                valid.append((trial, params, setting_of(st.policy, params)))
            except InvalidConfig as exc:  # a combination the Config refuses (a tail above its trigger): infeasible
                for c in self.constraints:
                    trial.set_constraint(c.text, 1e9)
                st.invalid.append({"number": trial.number, "params": params, "invalid": str(exc)})
                with quiet_optuna():
                    study.tell(trial, float("inf") * self.sign)
        before = len(self.store.ran)
        measured = self.store.measure([v[2] for v in valid], units, version, refs)
        ran = len(self.store.ran) - before
        for (trial, params, _), rows in zip(valid, measured, strict=True):
            stats = self.stats(rows, draws)
            verdict = self.judge(stats, default)
            for text, v in verdict["constraints"].items():
                trial.set_constraint(text, v["violation"])
            value = stats[self.objective]["mean"]
            record = {
                "policy": st.policy,
                "window": st.window,
                "number": trial.number,
                "params": params,
                "objective": stats[self.objective],
                "stats": stats,
                **verdict,
                "ran": ran,
            }
            ran = 0  # the batch's runs, counted on its first trial
            st.trials.append(record)
            with quiet_optuna():
                study.tell(trial, float("inf") * self.sign if np.isnan(value) else value)
            if self.on_trial is not None:
                self.on_trial(st, record)

    def best(self, st: Study) -> dict[str, Any] | None:
        """The feasible trial with the best objective mean. Ties (a trigger never reached costs the same wherever it
        is): the better bound of the first constraint, then the higher trigger (the first field: compact later, keep
        more), then the earlier trial."""
        ok = [t for t in st.trials if t["feasible"] and not np.isnan(t["objective"]["mean"])]
        if not ok:
            return None
        first = self.constraints[0] if self.constraints else None

        trigger = next(iter(st.space))

        def key(t: dict[str, Any]) -> tuple[float, float, float, int]:
            tie = 0.0
            if first is not None:
                b = t["stats"][first.column][first.bound]
                tie = -b if first.op == ">=" else b
                tie = 0.0 if np.isnan(tie) else tie
            try:
                later = -float(t["params"][trigger])
            except ValueError:  # a choice, not a number: no order
                later = 0.0
            return (self.sign * t["objective"]["mean"], tie, later, t["number"])

        return min(ok, key=key)

    def front(self, trials: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The trials on the frontier of the objective against the first constraint's bound, among those that meet
        the other constraints."""
        if not self.constraints:
            return []
        first, rest = self.constraints[0], self.constraints[1:]
        ok = [t for t in trials if all(t["constraints"][c.text]["violation"] <= 0 for c in rest)]
        pts = [(self.sign * t["objective"]["mean"], t["stats"][first.column][first.bound]) for t in ok]
        return [ok[i] for i in frontier(pts, higher_is_better=first.op == ">=")]

    def check(self, ref: str, params: Mapping[str, str], held: list[UnitRun], version: str) -> dict[str, Any] | None:
        """The held-out measure of ``params`` beside the default's: both intervals, the paired difference, and the
        constraints judged against the default's bounds on the held-out set."""
        assert self.store is not None
        if not held:
            return None
        refs = tuple(sorted(set(self.spec.policies)))
        draws = resamples(len(held))
        base_rows, rows = self.store.measure([setting_of(ref, {}), setting_of(ref, params)], held, version, refs)
        base, got = self.stats(base_rows, draws), self.stats(rows, draws)
        diff = interval(column(rows, self.objective) - column(base_rows, self.objective), draws)
        return {"units": len(held), "default": base, "best": got, "difference": diff, **self.judge(got, base)}


class quiet_optuna:
    """Optuna's per-trial INFO lines and experimental warnings off, for the study's duration only."""

    def __enter__(self) -> None:
        import warnings

        import optuna

        self.level = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.warnings = warnings.catch_warnings()
        self.warnings.__enter__()
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)

    def __exit__(self, *exc: Any) -> None:
        import optuna

        self.warnings.__exit__(*exc)
        optuna.logging.set_verbosity(self.level)


__all__ = [
    "STORE",
    "quiet_optuna",
    "TUNE_MANIFEST",
    "Budget",
    "Store",
    "Study",
    "TuneSpec",
    "Tuner",
    "UnitRun",
    "plan_units",
    "setting_of",
    "split",
]
