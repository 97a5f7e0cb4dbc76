"""The results a sweep (``csim sweep``, or ``csim run``: a sweep of one configuration) leaves on disk, and
their loader.

Layout of a sweep's results directory::

    RESULTS/manifest.json        {"kind": "sweep", "spec": <normalised spec>, "versions": sim.core.metrics.versions(),
                                  "started": iso, "finished": iso or null, "total_runs": N}
    RESULTS/parts/<id>/          one finished task (all runs of one conversation and seed): runs.parquet,
                                  requests.parquet, facts.parquet, compactions.parquet, violations.parquet,
                                  and logs.parquet when the sweep keeps its runs' logs (csim run does)
    RESULTS/summary.parquet      the ``csim compare`` table (and summary.csv), once compare has run

A part is written into a temporary directory and renamed into ``parts/`` in one ``os.replace``, so a
part either exists whole or not at all: a run is finished exactly when its row is in a part. The part's
name is a hash of the run keys it holds, so the same runs always land in the same part.

:func:`load_results` reads that directory into :class:`Results`, every frame sorted by run key then by
the order of requests within the run, so results compare equal whichever executor made them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from sim.core.config import format_value
from sim.core.errors import InvalidConfig
from sim.core.metrics import FACT_COLUMNS, REQUEST_COLUMNS, SUMMARY_COLUMNS

#: Identity columns of a run, before the summary numbers.
RUN_ID_COLUMNS: dict[str, str] = {
    "run_key": "string",
    "config": "string",
    "policy": "string",
    "params": "string",
    "source_kind": "string",
    "source": "string",
    "conversation": "string",
    "conversation_checksum": "string",
    "seed": "int64",
}
_SUMMARY_DTYPES: dict[str, str] = {
    "run_id": "string",
    "params_hash": "string",
    "finish_reason": "string",
    "exhausted": "string",
    "agent_requests": "int64",
    "peak_context_tokens": "int64",
    "cumulative_input_tokens": "int64",
    "cumulative_output_tokens": "int64",
    "total_cost_usd": "float64",
    "cache_read_tokens": "int64",
    "cache_write_tokens": "int64",
    "cache_hit_share": "float64",
    "summariser_cost_usd": "float64",
    "cost_input_usd": "float64",
    "cost_cache_read_usd": "float64",
    "cost_cache_write_usd": "float64",
    "cost_output_usd": "float64",
    "compaction_cost_usd": "float64",
    "compaction_count": "int64",
    "overflows": "int64",
    "facts_needed": "int64",
    "facts_visible": "int64",
    "retention_recall": "float64",
    "violation_count": "int64",
}
#: One row per run: identity, then the sim.core.metrics summary columns not already named.
RUN_COLUMNS: dict[str, str] = {
    **RUN_ID_COLUMNS,
    **{c: _SUMMARY_DTYPES[c] for c in SUMMARY_COLUMNS if c not in RUN_ID_COLUMNS},
}
SWEEP_REQUEST_COLUMNS: dict[str, str] = {"run_key": "string", "config": "string", **REQUEST_COLUMNS}
SWEEP_FACT_COLUMNS: dict[str, str] = {"run_key": "string", "config": "string", **FACT_COLUMNS}
#: The fields of ``RunResult.compactions`` dicts (see sim.replay.engine), flattened.
COMPACTION_COLUMNS: dict[str, str] = {
    "run_key": "string",
    "config": "string",
    "conversation": "string",
    "seed": "int64",
    "compaction_id": "string",
    "turn": "int64",
    "trigger": "string",
    "mode": "string",
    "tokens_before": "int64",
    "tokens_after": "int64",
    "start": "int64",
    "cleared_through": "int64",
    "summary_facts": "int64",
    "facts_lost": "string",
    "cost_usd": "float64",
    "payback_requests": "Int64",
}
VIOLATION_COLUMNS: dict[str, str] = {
    "run_key": "string",
    "config": "string",
    "conversation": "string",
    "seed": "int64",
    "turn": "int64",
    "invariant": "string",
    "request_kind": "string",
    "detail": "string",
}
#: A part's run logs, kept when the sweep asks (``csim run`` does): the run key and its log as JSON lines.
LOGS = "logs"
LOG_COLUMNS: dict[str, str] = {"run_key": "string", "log": "string"}
#: Table name -> its columns and dtypes; also the file names inside a part.
TABLES: dict[str, dict[str, str]] = {
    "runs": RUN_COLUMNS,
    "requests": SWEEP_REQUEST_COLUMNS,
    "facts": SWEEP_FACT_COLUMNS,
    "compactions": COMPACTION_COLUMNS,
    "violations": VIOLATION_COLUMNS,
}

MANIFEST = "manifest.json"
PARTS = "parts"
SUMMARY = "summary.parquet"


@dataclass(frozen=True)
class Results:
    """Everything a sweep or a run produced, as tidy frames keyed by ``run_key`` and labelled by ``config``."""

    kind: Literal["sweep"]
    manifest: dict[str, Any]
    runs: pd.DataFrame
    requests: pd.DataFrame
    facts: pd.DataFrame
    compactions: pd.DataFrame
    violations: pd.DataFrame
    summary: pd.DataFrame | None

    @property
    def configs(self) -> list[str]:
        """Configuration labels in first-seen order of the sorted runs."""
        return list(dict.fromkeys(self.runs["config"].tolist()))


# -- building the frames -------------------------------------------------------------------------------
def typed(rows: Sequence[Mapping[str, Any]] | pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    """A frame with exactly ``columns`` in order and their dtypes, even when there are no rows."""
    if isinstance(rows, pd.DataFrame):
        return rows.reindex(columns=list(columns)).astype(dict(columns)).reset_index(drop=True)
    # Column by column, each built at its dtype: a third of the time of a frame of dicts then astype.
    return pd.DataFrame({c: pd.array([r.get(c) for r in rows], dtype=d) for c, d in columns.items()})


def sort_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Sort by run key, keeping the order of rows within a run (a stable sort): the order they happened."""
    return frame.sort_values("run_key", kind="mergesort").reset_index(drop=True)


def concat(frames: Iterable[pd.DataFrame], columns: Mapping[str, str]) -> pd.DataFrame:
    """Concatenate typed frames (skipping empty ones, whose dtypes pandas would otherwise widen), sorted."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return typed([], columns)
    return sort_frame(typed(pd.concat(frames, ignore_index=True), columns))


def part_name(run_keys: Iterable[str]) -> str:
    """A part's directory name: a hash of its sorted run keys (the same runs always make the same part)."""
    return hashlib.sha256("\n".join(sorted(run_keys)).encode()).hexdigest()[:24]


# -- loading ---------------------------------------------------------------------------------------------
def load_results(path: str | Path) -> Results:
    """Load a sweep's results directory or a ``csim run`` output directory."""
    p = Path(path)
    if (p / MANIFEST).is_file():
        return _load_sweep(p)
    if not p.exists():
        raise InvalidConfig(f"results directory {str(p)!r} does not exist")
    if (p / "run.json").is_file():
        raise InvalidConfig(
            f"{p} was written by an older csim run (run.json); run it again: csim run writes a sweep now"
        )
    raise InvalidConfig(f"{str(p)!r} holds no {MANIFEST}: not the output of csim sweep or csim run")


def finished_parts(root: Path) -> list[Path]:
    """The complete part directories under ``root/parts``, in name order (temporaries start with a dot)."""
    parts = root / PARTS
    if not parts.is_dir():
        return []
    return sorted(d for d in parts.iterdir() if d.is_dir() and not d.name.startswith("."))


def read_manifest(root: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((root / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidConfig(f"{root / MANIFEST}: cannot read the sweep manifest: {exc}") from None


def _load_sweep(root: Path) -> Results:
    manifest = read_manifest(root)
    parts = finished_parts(root)
    frames = {
        name: concat((pd.read_parquet(d / f"{name}.parquet") for d in parts), cols) for name, cols in TABLES.items()
    }
    return Results(
        "sweep",
        manifest,
        frames["runs"],
        frames["requests"],
        frames["facts"],
        frames["compactions"],
        frames["violations"],
        _summary(root),
    )


def _summary(root: Path) -> pd.DataFrame | None:
    f = root / SUMMARY
    return pd.read_parquet(f) if f.is_file() else None


def stored_log(root: str | Path, run_key: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The log of run ``run_key`` as a sweep kept it (``logs.parquet`` in its part; ``csim run`` keeps them),
    as :func:`sim.core.log.decode_log` reads it: a header and the events; None when the sweep kept no logs."""
    from sim.core.log import decode_log

    for d in finished_parts(Path(root)):
        path = d / f"{LOGS}.parquet"
        if not path.is_file():
            continue
        frame = pd.read_parquet(path)
        hit = frame[frame["run_key"] == run_key]
        if len(hit):
            header, events = decode_log(str(hit["log"].iloc[0]), f"{path} (run {run_key})")
            return {**header, "source": str(path)}, events
    return None


# -- identity helpers shared with sim.sweep.grid ----------------------------------------------------------------
def run_key(
    policy_spec: Mapping[str, Any],
    conversation: str,
    checksum: str,
    seed: int,
    version: str,
    run_config: Mapping[str, Any],
) -> str:
    """SHA-256 of what determines a run's outcome: policy spec, conversation id and content, seed, package
    version and the whole RunConfig (so a changed window or model never reuses a stale run)."""
    blob = json.dumps(
        [policy_spec, conversation, checksum, seed, version, run_config],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def params_json(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=str)


def config_label(policy: str, params: Mapping[str, Any]) -> str:
    """``cloudflare-os trigger_ratio=0.8``: the policy and its given parameters, sorted by name."""
    return " ".join([policy, *(f"{k}={format_value(params[k])}" for k in sorted(params))])


def non_default_params(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of a policy spec that differ from its class defaults (all of them if it cannot load)."""
    params = dict(spec.get("params", {}))
    try:
        from policies.base import load_policy_class

        defaults = load_policy_class(str(spec.get("policy")))().params()
    except Exception:  # noqa: BLE001 - a label is still useful for a policy this install cannot build
        return params
    return {k: v for k, v in params.items() if defaults.get(k, object()) != v}
