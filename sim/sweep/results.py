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
name is a hash of the run keys it holds, so the same runs always land in the same part. Each part lists
its tables in ``part.json`` (rows, bytes and SHA-256 of each file): a part damaged since (a truncated or
deleted table, an emptied folder) fails :func:`check_part`, which a rerun asks of every part before it
counts its runs as done, and which :func:`load_results` turns into an error that says how to redo it.

:func:`load_results` reads that directory into :class:`Results`, every frame sorted by run key then by
the order of requests within the run, so results compare equal whichever executor made them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from sim.core.errors import InvalidConfig
from sim.core.log import decode_log
from sim.core.metrics import FACT_COLUMNS, REQUEST_COLUMNS, SUMMARY_COLUMNS, write_parquet

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
#: One row per run: identity, then the sim.core.metrics summary columns not already named.
RUN_COLUMNS: dict[str, str] = {
    **RUN_ID_COLUMNS,
    **{c: dtype for c, dtype in SUMMARY_COLUMNS.items() if c not in RUN_ID_COLUMNS},
    #: Of ``violation_count``, those the policy declares (``known_deviations``); the rest are undeclared.
    "declared_violations": "Int64",
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
    #: A background compaction's (``Policy.timing``): the turn its summary was made at, the messages and tokens that
    #: came after and stay verbatim, the seconds the agent waited for it. Null for one made at once.
    "started_turn": "Int64",
    "stale_messages": "Int64",
    "stale_tokens": "Int64",
    "waited_seconds": "Float64",
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
    #: The policy declares the invariant in ``known_deviations``: the modelled system breaks it by design.
    "declared": "boolean",
    #: Why (the policy's ``deviation_reasons``); empty for an undeclared violation.
    "reason": "string",
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
#: Inside each part: its tables' rows, bytes and SHA-256, written last, before the part is renamed into place.
PART_MANIFEST = "part.json"


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
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise InvalidConfig(f"{root / MANIFEST}: cannot read the sweep manifest: {exc}") from None
    if not isinstance(manifest, dict):
        raise InvalidConfig(f"{root / MANIFEST}: the sweep manifest is {type(manifest).__name__}, not an object")
    return manifest


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
        raise InvalidConfig(f"{f}: cannot be read ({_first_line(exc)}); run csim compare {root} again") from None


# -- the parts' own manifests ------------------------------------------------------------------------------------
def write_part_tables(folder: Path, frames: Mapping[str, pd.DataFrame]) -> None:
    """Write ``frames`` as ``<table>.parquet`` files into ``folder``, then ``part.json`` listing each one."""
    listing: dict[str, dict[str, Any]] = {}
    for table, frame in frames.items():
        path = folder / f"{table}.parquet"
        write_parquet(frame, path)
        data = path.read_bytes()
        listing[table] = {"rows": len(frame), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    text = json.dumps({"tables": listing}, indent=1, sort_keys=True) + "\n"
    (folder / PART_MANIFEST).write_text(text, encoding="utf-8")


def part_listing(part: Path) -> dict[str, dict[str, Any]]:
    """``part.json``'s tables: name -> rows, bytes, sha256. Raises DamagedPart when it is missing or unreadable."""
    try:
        listing = json.loads((part / PART_MANIFEST).read_text(encoding="utf-8"))["tables"]
    except FileNotFoundError:
        names = sorted(f.name for f in part.iterdir()) if part.is_dir() else []
        raise DamagedPart(part, f"has no {PART_MANIFEST}" + ("" if names else " (the folder is empty)")) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedPart(part, f"{PART_MANIFEST} cannot be read ({_first_line(exc)})") from None
    if not isinstance(listing, dict) or not all(isinstance(v, dict) for v in listing.values()):
        raise DamagedPart(part, f"{PART_MANIFEST} does not list tables")
    return listing


class DamagedPart(InvalidConfig):
    """A part of a results folder is not as it was written: a table is missing, unreadable or changed."""

    def __init__(self, part: Path, reason: str) -> None:
        self.part, self.reason = part, reason
        root = part.parent.parent
        super().__init__(
            f"{part}: {reason}; run the same csim sweep (or csim run) again with --out {root}: "
            "it checks every part and redoes the damaged ones"
        )


def read_table(part: Path, table: str) -> pd.DataFrame:
    """One table of a part, checked against the part's listing (bytes, SHA-256, rows); DamagedPart if not.

    A part written before parts had a listing is read as it is; only a file that does not parse fails."""
    path = part / f"{table}.parquet"
    listing = part_listing(part) if (part / PART_MANIFEST).exists() or not path.exists() else None
    data = _table_bytes(part, table, listing)
    try:
        frame = read_parquet_bytes(data)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError and others for damage
        raise DamagedPart(part, f"{table}.parquet cannot be read ({_first_line(exc)})") from None
    entry = None if listing is None else listing[table]
    if entry is not None and len(frame) != entry.get("rows"):
        raise DamagedPart(part, f"{table}.parquet has {len(frame)} rows, its listing {entry.get('rows')}")
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


def _table_bytes(part: Path, table: str, listing: dict[str, dict[str, Any]] | None) -> bytes:
    """The bytes of one table, the same the listing (when there is one) says were written."""
    entry = None if listing is None else listing.get(table)
    if listing is not None and entry is None:
        raise DamagedPart(part, f"{PART_MANIFEST} does not list {table}.parquet")
    try:
        data = (part / f"{table}.parquet").read_bytes()
    except FileNotFoundError:
        raise DamagedPart(part, f"{table}.parquet is missing") from None
    except OSError as exc:
        raise DamagedPart(part, f"{table}.parquet cannot be read ({exc.strerror or exc})") from None
    if entry is not None and (
        len(data) != entry.get("bytes") or hashlib.sha256(data).hexdigest() != entry.get("sha256")
    ):
        raise DamagedPart(
            part,
            f"{table}.parquet is not the file that was written ({len(data):,} bytes, "
            f"{entry.get('bytes'):,} written; or its SHA-256 differs)",
        )
    return data


def check_part(part: Path) -> str | None:
    """Why ``part`` cannot be counted as done, or None when it is whole: its listing names the five tables of
    :data:`TABLES` at least, and every table it names is there with the bytes written (size and SHA-256) and
    a Parquet footer that gives the rows listed. The bytes are what was written, so they read; no table is
    decoded, which keeps a rerun's check at the cost of hashing the parts."""
    import pyarrow.parquet as pq

    try:
        listing = part_listing(part)
        for table in sorted(set(TABLES) | set(listing)):
            data = _table_bytes(part, table, listing)
            try:
                rows = pq.read_metadata(arrow_bytes(data)).num_rows
            except Exception as exc:  # noqa: BLE001 - a footer pyarrow cannot parse, whatever it raises
                raise DamagedPart(part, f"{table}.parquet cannot be read ({_first_line(exc)})") from None
            if rows != listing[table].get("rows"):
                raise DamagedPart(part, f"{table}.parquet has {rows} rows, its listing {listing[table].get('rows')}")
    except DamagedPart as exc:
        return exc.reason
    return None


# -- one sweep at a time -----------------------------------------------------------------------------------------
LOCK = ".lock"


class ResultsInUse(InvalidConfig):
    """Another process is writing into the same results folder."""


@contextmanager
def results_lock(root: Path) -> Iterator[None]:
    """Hold ``root/.lock`` (an advisory ``flock``) while a sweep writes into ``root``; a second sweep on the
    same folder is refused instead of deleting the first one's part in progress. The kernel drops the lock
    when its process ends, a kill -9 included, so a stale lock never blocks the next run."""
    if root.exists() and not root.is_dir():
        raise InvalidConfig(f"--out {root} is a file; results go into a folder: give a folder's path")
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, as before
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "another process"
                raise ResultsInUse(
                    f"{root} is in use by another csim sweep or run (process {holder}); wait for it to finish, "
                    "or give another --out"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def kept_log_keys(root: str | Path) -> set[str]:
    """Keys of the runs whose logs the results kept (``logs.parquet`` of each part)."""
    keys: set[str] = set()
    for d in finished_parts(Path(root)):
        if (d / f"{LOGS}.parquet").is_file():
            keys.update(read_table(d, LOGS)["run_key"].tolist())
    return keys


def stored_log(root: str | Path, run_key: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The log of run ``run_key`` as a sweep kept it (``logs.parquet`` in its part; ``csim run`` keeps them),
    as :func:`sim.core.log.decode_log` reads it: a header and the events; None when the sweep kept no logs."""
    for d in finished_parts(Path(root)):
        path = d / f"{LOGS}.parquet"
        if not path.is_file():
            continue
        frame = read_table(d, LOGS)
        hit = frame[frame["run_key"] == run_key]
        if len(hit):
            header, events = decode_log(str(hit["log"].iloc[0]), f"{path} (run {run_key})")
            return {**header, "source": str(path)}, events
    return None


def declared_counts(violations: pd.DataFrame) -> dict[str, int]:
    """Declared violations by invariant (the ``declared`` rows of a violations frame), most frequent first."""
    if violations.empty or "declared" not in violations.columns:
        return {}
    counts = violations[violations["declared"].fillna(False).astype(bool)]["invariant"].value_counts()
    return {str(k): int(v) for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def violations_text(violations: pd.DataFrame) -> str:
    """A run's (or a configuration's) violations in one phrase: the undeclared ones, then the declared ones
    apart, by invariant: ``0 violations (71 declared: live-turn)``."""
    declared = declared_counts(violations)
    n = len(violations) - sum(declared.values())
    text = f"{n} violation{'s' if n != 1 else ''}"
    if declared:
        total = sum(declared.values())
        kinds = ", ".join(k if len(declared) == 1 else f"{v} {k}" for k, v in declared.items())
        text += f" ({total} declared: {kinds})"
    return text


def declared_reasons(violations: pd.DataFrame) -> list[str]:
    """One line per declared invariant seen: ``71 live-turn, declared: Claude Code summarises the live turn``."""
    if violations.empty or "declared" not in violations.columns:
        return []
    rows = violations[violations["declared"].fillna(False).astype(bool)]
    counts = declared_counts(violations)
    reasons = rows.groupby("invariant")["reason"].first()
    return [f"{n} {inv}, declared: {reasons.get(inv, '')}" for inv, n in counts.items()]


#: What the run seed draws on a recording, whose messages and times are recorded (the rest of a run is fixed).
SEED_ON_RECORDINGS = (
    "a recording fixes the messages and their times; the seed only draws which facts a summary keeps, the "
    "summariser's failures (-R failure_rate, -R empty_rate) and, with --agent reactive, the agent's errors"
)


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


def params_json(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=str)
