"""The parts of a results folder, written and read with the standard library alone.

A sweep (``csim sweep``, or ``csim run``: a sweep of one configuration) leaves::

    RESULTS/manifest.json        {"kind": "sweep", "spec": <normalised spec>, "versions": sim.core.metrics.versions(),
                                  "started": iso, "finished": iso or null, "total_runs": N}
    RESULTS/parts/<id>/          one finished task (all runs of one conversation and seed): runs, requests, facts,
                                  compactions, violations, and logs when the sweep keeps its runs' logs (csim run
                                  does), each ``<table>.json.gz``, and ``part.json`` listing them
    RESULTS/summary.parquet      the ``csim compare`` table (and summary.csv), once compare has run

A table is one gzip-compressed JSON object, column name to the list of its values, the columns in the order
:data:`TABLES` gives them (``pandas.DataFrame(json.load(gzip.open(path)))`` reads one). Writing them needs no
pandas or pyarrow, so a replay (``csim run``) pays for neither; :mod:`sim.sweep.results` reads them into typed
frames. Folders written before this (``<table>.parquet``) are still read there. Floats are written as
``repr`` writes them, so a value reads back equal; a missing one is ``null``, a NaN ``NaN``.

A part is written into a temporary directory and renamed into ``parts/`` in one ``os.replace``, so a part either
exists whole or not at all: a run is finished exactly when its row is in a part. The part's name is a hash of the
run keys it holds, so the same runs always land in the same part. ``part.json`` lists each table's file, rows,
bytes and SHA-256: a part damaged since (a truncated or deleted table, an emptied folder) fails
:func:`check_part`, which a rerun asks of every part before it counts its runs as done.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
#: Table name -> its columns and dtypes (pandas' names, which :mod:`sim.sweep.results` reads them as).
TABLES: dict[str, dict[str, str]] = {
    "runs": RUN_COLUMNS,
    "requests": SWEEP_REQUEST_COLUMNS,
    "facts": SWEEP_FACT_COLUMNS,
    "compactions": COMPACTION_COLUMNS,
    "violations": VIOLATION_COLUMNS,
}
#: Every table a part can hold, with its columns.
ALL_TABLES: dict[str, dict[str, str]] = {**TABLES, LOGS: LOG_COLUMNS}

MANIFEST = "manifest.json"
PARTS = "parts"
#: Inside each part: its tables' files, rows, bytes and SHA-256, written last, before the part is renamed into place.
PART_MANIFEST = "part.json"
#: A table's file in a part, and the one folders written before JSON parts hold instead.
SUFFIX, LEGACY_SUFFIX = ".json.gz", ".parquet"

#: A part's tables as rows: table name -> one mapping per row (a column missing from a row is null).
Rows = Mapping[str, Sequence[Mapping[str, Any]]]
#: A table as read back: column name -> its values, every column of the table present.
Columns = dict[str, list[Any]]


def part_name(run_keys: Iterable[str]) -> str:
    """A part's directory name: a hash of its sorted run keys (the same runs always make the same part)."""
    return hashlib.sha256("\n".join(sorted(run_keys)).encode()).hexdigest()[:24]


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


# -- writing --------------------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (json writes those); anything else is a mistake to name."""
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"a results table cannot hold {type(value).__name__} {value!r}")


def encode_table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> bytes:
    """``rows`` as a table file's bytes: the JSON object of ``columns`` (in their order) to their values, gzipped
    with no time stamp, so the same rows always give the same bytes."""
    table = {c: [r.get(c) for r in rows] for c in columns}
    text = json.dumps(table, ensure_ascii=False, separators=(",", ":"), default=_plain)
    return gzip.compress(text.encode("utf-8"), compresslevel=1, mtime=0)  # a third of level 6's time, 1.2x its bytes


def write_part_tables(folder: Path, rows: Rows) -> None:
    """Write each table of ``rows`` as ``<table>.json.gz`` into ``folder``, then ``part.json`` listing each one."""
    listing: dict[str, dict[str, Any]] = {}
    for table, table_rows in rows.items():
        name = f"{table}{SUFFIX}"
        data = encode_table(table_rows, ALL_TABLES[table])
        (folder / name).write_bytes(data)
        listing[table] = {
            "file": name,
            "rows": len(table_rows),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    text = json.dumps({"tables": listing}, indent=1, sort_keys=True) + "\n"
    (folder / PART_MANIFEST).write_text(text, encoding="utf-8")


# -- reading and checking -------------------------------------------------------------------------------------
class DamagedPart(InvalidConfig):
    """A part of a results folder is not as it was written: a table is missing, unreadable or changed."""

    def __init__(self, part: Path, reason: str) -> None:
        self.part, self.reason = part, reason
        root = part.parent.parent
        super().__init__(
            f"{part}: {reason}; run the same csim sweep (or csim run) again with --out {root}: "
            "it checks every part and redoes the damaged ones"
        )


def part_listing(part: Path) -> dict[str, dict[str, Any]]:
    """``part.json``'s tables: name -> file, rows, bytes, sha256. DamagedPart when it is missing or unreadable."""
    try:
        listing = json.loads((part / PART_MANIFEST).read_text(encoding="utf-8"))["tables"]
    except FileNotFoundError:
        names = sorted(f.name for f in part.iterdir()) if part.is_dir() else []
        raise DamagedPart(part, f"has no {PART_MANIFEST}" + ("" if names else " (the folder is empty)")) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedPart(part, f"{PART_MANIFEST} cannot be read ({first_line(exc)})") from None
    if not isinstance(listing, dict) or not all(isinstance(v, dict) for v in listing.values()):
        raise DamagedPart(part, f"{PART_MANIFEST} does not list tables")
    return listing


def table_file(part: Path, table: str, listing: Mapping[str, Mapping[str, Any]] | None) -> str:
    """The file name of ``table`` in ``part``: as its listing names it; a part from before JSON tables (or before
    listings) holds ``<table>.parquet``."""
    entry = None if listing is None else listing.get(table)
    if entry is not None and isinstance(entry.get("file"), str):
        return str(entry["file"])
    if entry is None and (part / f"{table}{SUFFIX}").exists():
        return f"{table}{SUFFIX}"
    return f"{table}{LEGACY_SUFFIX}"


def table_bytes(part: Path, table: str, listing: Mapping[str, Mapping[str, Any]] | None) -> tuple[str, bytes]:
    """The file name and bytes of one table, the same the listing (when there is one) says were written."""
    name = table_file(part, table, listing)
    entry = None if listing is None else listing.get(table)
    if listing is not None and entry is None:
        raise DamagedPart(part, f"{PART_MANIFEST} does not list {table}")
    try:
        data = (part / name).read_bytes()
    except FileNotFoundError:
        raise DamagedPart(part, f"{name} is missing") from None
    except OSError as exc:
        raise DamagedPart(part, f"{name} cannot be read ({exc.strerror or exc})") from None
    if entry is not None and (
        len(data) != entry.get("bytes") or hashlib.sha256(data).hexdigest() != entry.get("sha256")
    ):
        raise DamagedPart(
            part,
            f"{name} is not the file that was written ({len(data):,} bytes, "
            f"{entry.get('bytes'):,} written; or its SHA-256 differs)",
        )
    return name, data


def decode_table(part: Path, name: str, data: bytes, columns: Mapping[str, str]) -> Columns:
    """A JSON table file's bytes as its columns (every one of ``columns``, in order; a column the file lacks, as
    one written before the column existed, is all null). DamagedPart when it does not decode."""
    try:
        table = json.loads(gzip.decompress(data))
        if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
            raise ValueError("not an object of columns")
        n = len(next(iter(table.values()), []))
        if any(len(v) != n for v in table.values()):
            raise ValueError("its columns differ in length")
    except (OSError, EOFError, ValueError) as exc:  # gzip and JSON errors for a damaged file
        raise DamagedPart(part, f"{name} cannot be read ({first_line(exc)})") from None
    return {c: table.get(c, [None] * n) for c in columns}


def read_columns(part: Path, table: str) -> Columns:
    """One JSON table of a part, checked against the part's listing (bytes, SHA-256, rows). A part that holds
    Parquet tables (written before JSON ones) is :mod:`sim.sweep.results`' to read: DamagedPart here."""
    listing = part_listing(part)
    name, data = table_bytes(part, table, listing)
    if not name.endswith(SUFFIX):
        raise DamagedPart(part, f"{name} is a Parquet table of an older csim; read it with load_results")
    columns = decode_table(part, name, data, ALL_TABLES[table])
    n = len(next(iter(columns.values())))
    if n != listing[table].get("rows"):
        raise DamagedPart(part, f"{name} has {n} rows, its listing {listing[table].get('rows')}")
    return columns


def check_part(part: Path) -> str | None:
    """Why ``part`` cannot be counted as done, or None when it is whole: its listing names the five tables of
    :data:`TABLES` at least, and every table it names is there with the bytes written (size and SHA-256). The
    bytes are what was written, so they read; no table is decoded, which keeps a rerun's check at the cost of
    hashing the parts."""
    try:
        listing = part_listing(part)
        for table in sorted(set(TABLES) | set(listing)):
            name, _ = table_bytes(part, table, listing)
            if not name.endswith(SUFFIX):
                raise DamagedPart(part, f"{name} is a table of an older csim")
    except DamagedPart as exc:
        return exc.reason
    return None


def rows_of(columns: Columns) -> list[dict[str, Any]]:
    """A table's columns as one mapping per row."""
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


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


# -- a run's violations in words ----------------------------------------------------------------------------------
def _declared(row: Mapping[str, Any]) -> bool:
    return str(row.get("declared")) == "True"  # True, numpy's True_; never a null (pandas' NA)


def declared_counts(violations: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Declared violations by invariant (the ``declared`` rows), most frequent first."""
    counts: dict[str, int] = {}
    for r in violations:
        if _declared(r):
            counts[str(r["invariant"])] = counts.get(str(r["invariant"]), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def violations_text(violations: Sequence[Mapping[str, Any]]) -> str:
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


def declared_reasons(violations: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per declared invariant seen: ``71 live-turn, declared: Claude Code summarises the live turn``."""
    reasons: dict[str, str] = {}
    for r in violations:
        if _declared(r) and r.get("reason") is not None:
            reasons.setdefault(str(r["invariant"]), str(r["reason"]))
    return [f"{n} {inv}, declared: {reasons.get(inv, '')}" for inv, n in declared_counts(violations).items()]


def params_json(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=str)


#: What the run seed draws on a recording, whose messages and times are recorded (the rest of a run is fixed).
SEED_ON_RECORDINGS = (
    "a recording fixes the messages and their times; the seed only draws which facts a summary keeps, the "
    "summariser's failures (-R failure_rate, -R empty_rate) and, with --agent reactive, the agent's errors"
)
