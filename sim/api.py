"""The Python API, for notebooks and scripts: run policies, run sweeps, load and compare results.

Everything returns :class:`~sim.sweep.results.Results`: the same tidy pandas DataFrames a sweep writes (``runs``,
``requests``, ``facts``, ``compactions``, ``violations``), keyed by ``run_key`` and labelled by ``config``, so
a notebook needs no command line and no files for a quick look, and reads a saved sweep the same way::

    from sim import api

    r = api.run("cloudflare-os", {"trigger_ratio": 0.8}, scenario="coding-agent", seeds=range(3))
    r.runs[["config", "seed", "total_cost_usd", "retention_recall"]]

    s = api.sweep(
        policies={"none": {}, "sliding-window": {"trigger_ratio": [0.6, 0.85]}},
        scenarios={"research-agent": {}},
        seeds="0-4",
        out="results/quick",
    )
    api.compare(s, baseline="none")

    p = api.compact("session.jsonl", "claude-code", window=60_000)  # one compaction, as csim preview shows it
    p.lost_by_kind(), p.context

Arguments mirror the sweep spec (``datasets/FORMAT-sweep.md``) and ``csim`` flags: run options by their
``[run]`` key (``window=60_000``, ``tokenizer="chars4"``, ``summariser={"keep_recall": 0.3}``). A policy is a
registered name or ``"package.module:Class"``; a policy class of your own may be passed as the class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from policies.base import Policy
    from sim.core.conversation import Conversation, Message
    from sim.replay.preview import Preview
    from sim.sweep.results import Results
    from sim.sweep.spec import SweepSpec


def _policy_ref(policy: str | type[Policy[Any]]) -> str:
    if isinstance(policy, str):
        return policy
    return f"{policy.__module__}:{policy.__qualname__}"


def _seeds(seeds: int | str | Iterable[int]) -> int | str | list[int]:
    return seeds if isinstance(seeds, (int, str)) else [int(s) for s in seeds]


def _named(items: str | Mapping[str, Mapping[str, Any]] | Sequence[str] | None) -> list[tuple[str, dict[str, Any]]]:
    if items is None:
        return []
    if isinstance(items, str):
        return [(items, {})]
    if isinstance(items, Mapping):
        return [(str(k), dict(v or {})) for k, v in items.items()]
    return [(str(k), {}) for k in items]


def spec(
    policies: str | type[Policy[Any]] | Mapping[str, Mapping[str, Any]] | Sequence[str],
    *,
    scenarios: str | Mapping[str, Mapping[str, Any]] | Sequence[str] | None = None,
    conversations: str | Path | Sequence[str | Path] | None = None,
    format: str = "auto",
    lenient: bool = False,
    datasets: str | Sequence[str] | None = None,
    seeds: int | str | Iterable[int] = 0,
    name: str = "",
    probes: bool = True,
    **run: Any,
) -> SweepSpec:
    """A sweep spec from arguments, checked as a spec file is: ``policies`` maps a name to its parameters (a
    list of values is a grid axis); ``scenarios`` likewise; ``conversations`` are recorded files, which get probes
    mined from them unless ``probes=False`` (:mod:`sim.formats.probes`)."""
    from sim.sweep.spec import spec_from_dict

    grid = [(_policy_ref(policies), {})] if isinstance(policies, (str, type)) else _named(policies)
    files = [conversations] if isinstance(conversations, (str, Path)) else list(conversations or [])
    data: dict[str, Any] = {
        "sweep": {"name": name, "seeds": _seeds(seeds)},
        "run": run,
        "policies": [{"policy": p, "params": params} for p, params in grid],
        "scenarios": [{"name": s, "params": params} for s, params in _named(scenarios)],
        "datasets": [
            {"name": d, **({"lenient": True} if lenient else {}), **({} if probes else {"probes": False})}
            for d in ([datasets] if isinstance(datasets, str) else list(datasets or []))
        ],
        "conversations": [
            {"path": str(f), "format": format, "lenient": lenient, **({} if probes else {"probes": False})}
            for f in files
        ],
    }
    return spec_from_dict(data, Path.cwd(), "the arguments of sim.api")


def run(
    policy: str | type[Policy[Any]],
    params: Mapping[str, Any] | None = None,
    *,
    scenario: str | None = None,
    scenario_params: Mapping[str, Any] | None = None,
    conversation: str | Path | None = None,
    format: str = "auto",
    lenient: bool = False,
    dataset: str | None = None,
    seeds: int | str | Iterable[int] = 0,
    probes: bool = True,
    **run_options: Any,
) -> Results:
    """One policy with fixed parameters on a scenario, a recording or a dataset, for each seed; in memory.

    The runs are exactly those of a one-configuration ``csim sweep`` (same tables, same run keys), without a
    results directory. Give one of ``scenario``, ``conversation`` or ``dataset``."""
    from sim.core.errors import InvalidConfig

    if sum(x is not None for x in (scenario, conversation, dataset)) != 1:
        raise InvalidConfig("sim.api.run: give exactly one of scenario=, conversation= or dataset=")
    for k, v in (params or {}).items():
        if isinstance(v, (list, tuple)):
            raise InvalidConfig(f"sim.api.run: parameter {k}={v!r} is a list; use sim.api.sweep for a grid")
    s = spec(
        {_policy_ref(policy): dict(params or {})},
        scenarios={scenario: dict(scenario_params or {})} if scenario else None,
        conversations=conversation,
        format=format,
        lenient=lenient,
        datasets=dataset,
        seeds=seeds,
        probes=probes,
        **run_options,
    )
    return run_spec(s)


def run_spec(spec: SweepSpec) -> Results:
    """Every run of ``spec`` in this process, in memory: the tables a sweep directory would hold."""
    from sim.core.metrics import versions
    from sim.sweep.grid import package_version, plan, run_task
    from sim.sweep.parts import TABLES
    from sim.sweep.results import Results, concat, typed

    tasks, shared, _ = plan(spec)
    parts = [run_task(shared[t.unit.key], t) for t in tasks]
    tables = {name: concat((typed(p[name], cols) for p in parts), cols) for name, cols in TABLES.items()}
    manifest = {
        "kind": "sweep",
        "spec": spec.normalised(),
        "versions": versions(),
        "code": package_version(g.policy for g in spec.policies),
    }
    return Results(
        "sweep",
        manifest,
        tables["runs"],
        tables["requests"],
        tables["facts"],
        tables["compactions"],
        tables["violations"],
        None,
    )


def sweep(
    spec_file: str | Path | None = None,
    *,
    out: str | Path,
    policies: str | type[Policy[Any]] | Mapping[str, Mapping[str, Any]] | Sequence[str] | None = None,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    keep_logs: bool = False,
    **grid: Any,
) -> Results:
    """Run a sweep into ``out`` (resumable, as ``csim sweep``) from a spec file or from :func:`spec`'s
    arguments, and load its results. ``keep_logs``: each run's log is kept too (as ``csim sweep
    --keep-logs``), for :func:`log` and the report's run page."""
    from sim.core.errors import InvalidConfig
    from sim.sweep.driver import run_sweep
    from sim.sweep.results import load_results
    from sim.sweep.spec import load_spec

    if (spec_file is None) == (policies is None):
        raise InvalidConfig("sim.api.sweep: give a spec file or policies= (and the rest of the grid), not both")
    s = load_spec(spec_file) if spec_file is not None else spec(policies, **grid)  # type: ignore[arg-type]
    run_sweep(s, out, executor=executor, workers=workers, scheduler=scheduler, progress=progress, logs=keep_logs)
    return load_results(out)


def load(path: str | Path) -> Results:
    """Results saved by ``csim sweep --out`` (or :func:`sweep`), or a ``csim run --out`` directory."""
    from sim.sweep.results import load_results

    return load_results(path)


def log(path: str | Path, run_key: str) -> list[dict[str, Any]]:
    """The events of run ``run_key`` (a key from ``load(path).runs``) as its sweep kept them, oldest first:
    dicts, each with its ``kind`` (``message``, ``request``, ``compaction``...). ``csim run`` keeps logs always,
    ``csim sweep`` with ``--keep-logs``."""
    from sim.core.errors import InvalidConfig
    from sim.sweep.results import stored_log

    found = stored_log(path, run_key)
    if found is None:
        raise InvalidConfig(
            f"{path} keeps no log for run {run_key!r}: run the sweep with --keep-logs (keep_logs=True), "
            "or check the key against load(path).runs['run_key']"
        )
    return found[1]


def compare(results: Results, baseline: str | None = None, by: Sequence[str] = ()) -> pd.DataFrame:
    """``csim compare`` as a frame: per configuration, means and 95% bootstrap CIs over conversations, paired
    differences against ``baseline``, and the Pareto frontier of cost against retention."""
    from sim.sweep.compare import compare as _compare

    return _compare(results, baseline, by)


def compact(
    conversation: Conversation | Sequence[Message] | str | Path | None,
    policy: str | type[Policy[Any]] | Policy[Any],
    params: Mapping[str, Any] | None = None,
    *,
    at: int | None = None,
    manual: bool = False,
    scenario: str | None = None,
    scenario_params: Mapping[str, Any] | None = None,
    format: str = "auto",
    lenient: bool = False,
    conversation_id: str | None = None,
    seed: int = 0,
    **run_options: Any,
) -> Preview:
    """What ``policy`` does at its next compaction of ``conversation`` (``csim preview``): the conversation replayed
    under it as :func:`run` replays it, stopped at the first compaction at or after agent request ``at`` (the
    first at all when None): a :class:`~sim.replay.preview.Preview` with the view before and after, the kept,
    summarised, dropped and cleared messages, the tokens, the later-needed facts it loses, and ``context``: the
    compacted list of messages the model is then sent (``request_messages``: the same in the wire format).

    ``manual``: instead, the policy's manual compaction, as if the user typed ``/compact`` at the first turn
    boundary at or after request ``at`` (``csim preview --manual``).

    ``conversation``: a :class:`~sim.core.conversation.Conversation`, a list of
    :class:`~sim.core.conversation.Message` (an outside harness's turns), or a recording's path (``format``,
    ``lenient``; ``conversation_id`` picks one when the file holds several, else the first); None with
    ``scenario=``. ``policy``: a registered name, ``"package.module:Class"``, a policy class, or a policy
    object (then ``params`` must be empty). Run options by their ``[run]`` key, as :func:`run` takes them.
    Raises :class:`~sim.replay.preview.NoCompaction` (a :class:`~sim.core.errors.CsimError`) when the replay
    ends without one, saying where the context peaked against the trigger."""
    from dataclasses import replace

    from policies import make_policy
    from policies.base import Policy as PolicyBase
    from sim.core.config import normalise_run, run_config
    from sim.core.conversation import Conversation as Conv
    from sim.core.errors import InvalidConfig
    from sim.replay.preview import preview

    if (conversation is None) == (scenario is None):
        raise InvalidConfig("sim.api.compact: give a conversation (or a recording's path) or scenario=, not both")
    if isinstance(policy, PolicyBase):
        if params:
            raise InvalidConfig(
                "sim.api.compact: a policy object carries its parameters; give params= with a name only"
            )
        chosen: Policy[Any] = policy
    else:
        chosen = make_policy(_policy_ref(policy), dict(params or {}))
    if isinstance(conversation, Conv) or (
        isinstance(conversation, Sequence) and not isinstance(conversation, (str, bytes))
    ):
        conv = conversation if isinstance(conversation, Conv) else Conv("conversation", tuple(conversation))
        config = replace(run_config(dict(normalise_run(run_options, "sim.api.compact"))), seed=seed)
        calibration = run_options.get("calibration")
        if calibration:
            from sim.calibration.files import load_for_source

            config = replace(config, calibration=load_for_source(calibration, config.model.provider, "conversation"))
        return preview(chosen, conv, config, at=at, manual=manual)
    conv, config, note = one_conversation(
        scenario=scenario,
        scenario_params=scenario_params,
        path=conversation,
        format=format,
        lenient=lenient,
        conversation_id=conversation_id,
        seed=seed,
        run_options=run_options,
    )
    if note:
        import warnings

        warnings.warn(f"{note}; choose another with conversation_id=", stacklevel=2)
    return preview(chosen, conv, config, at=at, manual=manual)


def one_conversation(
    *,
    scenario: str | None,
    scenario_params: Mapping[str, Any] | None,
    path: str | Path | None,
    format: str,
    lenient: bool,
    conversation_id: str | None,
    seed: int,
    run_options: Mapping[str, Any],
) -> tuple[Conversation, Any, str]:
    """One conversation of a scenario or a recording, with the run config :func:`run` would give it (the same
    plan: calibration matched to the source), and a note when the recording holds others."""
    from sim.core.errors import InvalidConfig
    from sim.sweep.grid import plan

    s = spec(
        "none",  # only the source and the run options matter here; the policy is given
        scenarios={scenario: dict(scenario_params or {})} if scenario else None,
        conversations=str(Path(path).expanduser().resolve()) if path is not None else None,
        format=format,
        lenient=lenient,
        seeds=seed,
        **run_options,
    )
    tasks, shared, _ = plan(s)
    ids = [t.unit.conversation for t in tasks]
    if conversation_id is not None:
        if conversation_id not in ids:
            from sim.core.errors import UnknownName

            raise UnknownName(f"conversation id (in {path})", conversation_id, ids)
        task = tasks[ids.index(conversation_id)]
    elif tasks:
        task = tasks[0]
    else:
        raise InvalidConfig(f"{path or scenario}: no conversation to preview")
    note = ""
    if len(tasks) > 1 and conversation_id is None:
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        note = f"{path} holds {len(ids)} conversations ({shown}); previewing the first, {ids[0]!r}"
    return shared[task.unit.key], task.run_config, note


__all__ = ["compact", "compare", "load", "log", "run", "run_spec", "spec", "sweep"]
