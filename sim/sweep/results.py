"""The results a sweep (``csim sweep``, or ``csim run``: a sweep of one configuration) leaves on disk, read into
typed pandas frames.

The folder's layout and its parts are :mod:`sim.sweep.parts` (written and read there without pandas); this reads
every part's tables into :class:`Results`, every frame sorted by run key then by the order of requests within the
run, so results compare equal whichever executor made them. A part written before JSON tables (``<table>.parquet``)
is read too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from sim.core.errors import InvalidConfig
from sim.core.log import decode_log
from sim.sweep.parts import (
    ALL_TABLES,
    LEGACY_SUFFIX,
    LOGS,
    MANIFEST,
    PART_MANIFEST,
    SEED_ON_RECORDINGS,
    SUFFIX,
    TABLES,
    Columns,
    DamagedPart,
    decode_table,
    finished_parts,
    first_line,
    part_listing,
    read_manifest,
    table_bytes,
)

#: The ``csim compare`` table, beside the parts.
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
#: The dtype an integer or boolean column takes where it has nulls: a part written before the column existed has
#: none of its values (:func:`sim.sweep.parts.decode_table`), and numpy's int64 and bool cannot hold a null.
NULLABLE = {"int64": "Int64", "bool": "boolean"}


def _array(values: Sequence[Any], dtype: str) -> Any:
    """``values`` as a pandas array of ``dtype``, or of its nullable dtype where a value is missing."""
    if dtype in NULLABLE and any(v is None for v in values):
        return pd.array(values, dtype=NULLABLE[dtype])
    return pd.array(values, dtype=dtype)


def typed(rows: Sequence[Mapping[str, Any]] | Columns | pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    """A frame with exactly ``columns`` in order and their dtypes, even when there are no rows: from rows (one
    mapping per row), a table's columns as :mod:`sim.sweep.parts` reads them, or a frame. An integer or boolean
    column with missing values (results an older csim wrote, before the column existed) is nullable
    (:data:`NULLABLE`): a missing flag reads as unknown, not as False."""
    if isinstance(rows, pd.DataFrame):
        frame = rows.reindex(columns=list(columns))
        dtypes = {c: NULLABLE[d] if d in NULLABLE and frame[c].isna().any() else d for c, d in columns.items()}
        return frame.astype(dtypes).reset_index(drop=True)
    if isinstance(rows, dict):
        n = len(next(iter(rows.values()), []))
        return pd.DataFrame({c: _array(rows.get(c, [None] * n), d) for c, d in columns.items()})
    # Column by column, each built at its dtype: a third of the time of a frame of dicts then astype.
    return pd.DataFrame({c: _array([r.get(c) for r in rows], d) for c, d in columns.items()})


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as plain mappings, a null (NA, NaN, None) as None: what :mod:`sim.sweep.parts`' functions
    over rows take."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")  # type: ignore[no-any-return]


def sort_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Sort by run key, keeping the order of rows within a run (a stable sort): the order they happened."""
    return frame.sort_values("run_key", kind="mergesort").reset_index(drop=True)


def concat(frames: Iterable[pd.DataFrame], columns: Mapping[str, str]) -> pd.DataFrame:
    """Concatenate typed frames (skipping empty ones, whose dtypes pandas would otherwise widen), sorted."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return typed([], columns)
    return sort_frame(typed(pd.concat(frames, ignore_index=True), columns))


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


def read_tables(root: Path, names: Iterable[str] = TABLES) -> dict[str, pd.DataFrame]:
    """The tables ``names`` of every finished part under ``root``, each concatenated (what :func:`load_results`
    holds of them; ``csim run`` reads back only the two it prints)."""
    parts = finished_parts(root)
    return {name: concat((read_table(d, name) for d in parts), TABLES[name]) for name in names}


def _load_sweep(root: Path) -> Results:
    manifest = read_manifest(root)
    frames = read_tables(root)
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
    if not f.is_file():
        return None
    try:
        return read_parquet_bytes(f.read_bytes())
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
        raise InvalidConfig(f"{f}: cannot be read ({first_line(exc)}); run csim compare {root} again") from None


def read_table(part: Path, table: str) -> pd.DataFrame:
    """One table of a part as a typed frame, checked against the part's listing (file, bytes, SHA-256, rows);
    DamagedPart if not. A Parquet table of an older csim is read as it was written; one from before parts had a
    listing is read as it is, and only a file that does not parse fails."""
    unlisted = not (part / PART_MANIFEST).exists() and any(
        (part / f"{table}{suffix}").exists() for suffix in (SUFFIX, LEGACY_SUFFIX)
    )
    listing = None if unlisted else part_listing(part)
    name, data = table_bytes(part, table, listing)
    if name.endswith(LEGACY_SUFFIX):
        try:
            frame = read_parquet_bytes(data)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError and others for damage
            raise DamagedPart(part, f"{name} cannot be read ({first_line(exc)})") from None
    else:
        frame = typed(decode_table(part, name, data, ALL_TABLES[table]), ALL_TABLES[table])
    entry = None if listing is None else listing[table]
    if entry is not None and len(frame) != entry.get("rows"):
        raise DamagedPart(part, f"{name} has {len(frame)} rows, its listing {entry.get('rows')}")
    return frame


def arrow_bytes(data: bytes) -> Any:
    """``data`` copied into memory pyarrow owns, as a file pyarrow can read (``pyarrow.BufferReader``).

    Never hand pyarrow a Python object to read from (``io.BytesIO``, or a buffer over ``bytes``): its reader holds
    that object in C++, and the last reference can be dropped on one of pyarrow's pool threads, in a future's
    continuation that runs after the read has returned. Dropping it takes the GIL; when that thread was
    descheduled until the interpreter is finalising, taking the GIL ends the thread in the middle of a C++
    destructor and the process aborts (``terminate called without an active exception``, exit 134) after all its
    work is done. Issue 33 saw it in 2 of about 175 ``csim run``s on a busy machine; a core dump showed
    ``PyReadableFile::~PyReadableFile`` on a ``ThreadPool`` worker, from ``parquet::SerializedFile``'s destructor,
    inside ``PyGILState_Ensure`` during ``Py_FinalizeEx``. ``benchmarks/exit_aborts.py`` counts such aborts."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    sink.write(data)
    return pa.BufferReader(sink.getvalue())


def read_parquet_bytes(data: bytes) -> pd.DataFrame:
    """A Parquet file's bytes as a frame, read from memory pyarrow owns (:func:`arrow_bytes`: no Python object
    outlives the call on a pyarrow thread) and decoded on this thread (our tables are small)."""
    one_thread = {"use_threads": False}
    return pd.read_parquet(arrow_bytes(data), pre_buffer=False, to_pandas_kwargs=one_thread, **one_thread)


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Parquet without the pandas index, so equal frames give equal bytes (the compare table)."""
    frame.to_parquet(path, index=False, engine="pyarrow", compression="zstd")


def _has_logs(part: Path) -> bool:
    return any((part / f"{LOGS}{suffix}").is_file() for suffix in (SUFFIX, LEGACY_SUFFIX))


def kept_log_keys(root: str | Path) -> set[str]:
    """Keys of the runs whose logs the results kept (the ``logs`` table of each part)."""
    keys: set[str] = set()
    for d in finished_parts(Path(root)):
        if _has_logs(d):
            keys.update(read_table(d, LOGS)["run_key"].tolist())
    return keys


def stored_log(root: str | Path, run_key: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The log of run ``run_key`` as a sweep kept it (the ``logs`` table of its part; ``csim run`` keeps them),
    as :func:`sim.core.log.decode_log` reads it: a header and the events; None when the sweep kept no logs."""
    for d in finished_parts(Path(root)):
        if not _has_logs(d):
            continue
        frame = read_table(d, LOGS)
        hit = frame[frame["run_key"] == run_key]
        if len(hit):
            path = d / LOGS
            header, events = decode_log(str(hit["log"].iloc[0]), f"{path} (run {run_key})")
            return {**header, "source": str(path)}, events
    return None


def seed_note(results: Results) -> str | None:
    """A note when several seeds gave identical runs on recorded conversations (nothing there is seeded but the
    summariser's and the reactive agent's draws, :data:`SEED_ON_RECORDINGS`); None when they differed somewhere,
    or when there was nothing to compare."""
    runs = results.runs
    rec = runs[runs["source_kind"] != "scenario"]
    if rec.empty or rec["seed"].nunique() < 2:
        return None
    cols = [c for c in rec.columns if c not in ("run_key", "run_id", "seed")]  # the ids name the seed
    groups = [g for _, g in rec.groupby(["config", "conversation", "conversation_checksum"], sort=True) if len(g) > 1]
    same = sum(len(g[cols].astype("string").drop_duplicates()) == 1 for g in groups)
    if not groups or same < len(groups):
        return None
    seeds = ", ".join(str(x) for x in sorted(rec["seed"].unique())[:6]) + (", ..." if rec["seed"].nunique() > 6 else "")
    return (
        f"seeds {seeds} gave identical runs for all {len(groups)} recorded (configuration, conversation) pairs: "
        f"{SEED_ON_RECORDINGS}; one seed is enough for them"
    )
