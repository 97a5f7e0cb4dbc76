"""Fuzz every importer with corrupted recordings, strict and lenient, with a timeout per input.

Not part of ``make test``: a long run for the figures in issue 12 ("fuzzing at the scale we promise").
Each input is made from a file of the shared recordings (``$CSIM_RECORDED``, else ``../shared/recorded``
next to the checkout; read only, never copied into the repository): a slice of it (a window of lines of a
JSONL session, a few records of a JSON list, one YAML cassette), then one to three corruptions, at the
byte level (truncated, bytes flipped, invalid UTF-8, a NUL, a BOM, a line dropped, doubled or swapped) or
at the record level (a value given the wrong type, a key removed, a list item dropped or doubled, a lone
surrogate, a huge string or number, deep nesting, a YAML alias bomb). Input ``i`` depends only on ``--seed``
and ``i`` (a ``random.Random`` of its own, no global state), so a run is repeatable and any input can be
rebuilt with ``--show I``.

Each input is read as ``csim import`` reads it (``import_paths`` then ``write_native`` into a scratch folder)
by the importer of the format it came from, or, one input in three, by another registered importer or
``--format auto`` (so the six formats without a recording of their own are fuzzed too), once strict and once
lenient. Outcomes, counted per read and per importer:

* ``ok``: read (lenient: maybe with skips) and written;
* ``clear error``: a ``FormatError`` (strict), or the file reported as not read (lenient);
* ``uncaught``: any other exception, grouped by class: exception type and the innermost frame in ``sim``;
* ``hang``: no answer within ``--timeout`` seconds (the worker is killed and replaced), grouped by corruption.

Workers are forked processes with an address-space limit (``--memory-mb``), so an expansion bomb ends in
``MemoryError`` (counted as uncaught) rather than swapping the shared machine.

    python benchmarks/fuzz_importers.py --inputs 10000 --jobs 2 [--timeout 10] [--seed 0]
    python benchmarks/fuzz_importers.py --show 1234        # what input 1234 is, and its first bytes
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.core.errors import FormatError  # noqa: E402
from sim.formats import FORMATS, detect  # noqa: E402
from sim.formats import _load as load_formats  # noqa: E402
from sim.formats.importing import RECORDING_SUFFIXES, import_paths, write_native  # noqa: E402

WRONG: list[Any] = [42, "x", None, [], {}, True, 1.5, -1, "", [[]], {"": None}]
MAX_BASE_BYTES = 256 * 1024
OTHER_SHARE = 3  # one input in OTHER_SHARE is read by another importer or auto


def recorded_root() -> Path:
    env = os.environ.get("CSIM_RECORDED")
    return Path(env) if env else REPO.parent / "shared" / "recorded"


# -- bases: slices of the recordings ----------------------------------------------------------------
def load_bases(root: Path) -> list[tuple[str, str, str, bytes]]:
    """(name, format, suffix, bytes) for every recording ``--format auto`` recognises; big files are kept whole
    here and sliced per input."""
    load_formats()
    out = []
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.suffix.lower() not in RECORDING_SUFFIXES:
            continue
        try:
            fmt = detect(f)
        except FormatError:
            continue
        out.append(
            (
                str(f.relative_to(root)),
                fmt,
                "".join(f.suffixes[-2:]) if f.name.endswith(".traj.json") else f.suffix,
                f.read_bytes(),
            )
        )
    return out


def slice_base(rng: random.Random, data: bytes, suffix: str) -> bytes:
    """A piece of a big recording that is still a valid file of its format: a window of JSONL lines, or a few
    records of a top-level JSON list; other documents whole (cut later by the byte corruptions if huge)."""
    if len(data) <= MAX_BASE_BYTES:
        return data
    if suffix == ".jsonl":
        lines = data.splitlines(keepends=True)
        n = rng.randint(5, 200)
        lo = rng.randrange(max(1, len(lines) - n))
        return b"".join(lines[lo : lo + n])
    if suffix == ".json":
        try:
            doc = json.loads(data)
        except ValueError:
            return data[:MAX_BASE_BYTES]
        if isinstance(doc, list) and doc:
            k = rng.randint(1, min(5, len(doc)))
            lo = rng.randrange(len(doc) - k + 1)
            return json.dumps(doc[lo : lo + k]).encode()
    return data


# -- corruptions ------------------------------------------------------------------------------------
def _nodes(doc: Any, path: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    out = [path]
    if depth > 12:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_nodes(v, (*path, k), depth + 1))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_nodes(v, (*path, i), depth + 1))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def mutate_doc(rng: random.Random, doc: Any) -> tuple[Any, str]:
    """One record-level change of a parsed document; returns it and its name."""
    nodes = _nodes(doc)
    path = rng.choice(nodes)
    op = rng.choice(
        [
            "wrong-type",
            "drop-key",
            "drop-item",
            "dup-item",
            "swap-items",
            "surrogate",
            "huge-string",
            "big-number",
            "deep-nesting",
            "empty-container",
            "odd-string",
        ]
    )
    if not path and op not in ("drop-item", "dup-item", "swap-items", "drop-key"):
        return (rng.choice(WRONG), "root-" + op) if op == "wrong-type" else (doc, "noop")
    parent = _get(doc, path[:-1]) if path else None
    key = path[-1] if path else None
    target = _get(doc, path)
    if op == "wrong-type" and parent is not None:
        parent[key] = rng.choice(WRONG)
    elif op == "drop-key":
        d = target if isinstance(target, dict) and target else parent
        if isinstance(d, dict) and d:
            del d[rng.choice(list(d))]
    elif op in ("drop-item", "dup-item", "swap-items"):
        lst = target if isinstance(target, list) and target else parent
        if isinstance(lst, list) and lst:
            i = rng.randrange(len(lst))
            if op == "drop-item":
                del lst[i]
            elif op == "dup-item":
                lst.insert(i, json.loads(json.dumps(lst[i])))
            else:
                j = rng.randrange(len(lst))
                lst[i], lst[j] = lst[j], lst[i]
    elif op == "surrogate" and parent is not None:
        parent[key] = rng.choice(["\ud800", "a\udfffb", "\udc00" * 3])
    elif op == "huge-string" and parent is not None:
        parent[key] = "x" * rng.choice([10_000, 1_000_000, 5_000_000])
    elif op == "big-number" and parent is not None:
        parent[key] = rng.choice([10**400, -(10**30), 2**63, -1, 0, float("1e308")])
    elif op == "deep-nesting" and parent is not None:
        nested: Any = "x"
        for _ in range(rng.choice([100, 5_000])):
            nested = [nested]
        parent[key] = nested
    elif op == "empty-container" and parent is not None:
        parent[key] = rng.choice([[], {}, ""])
    elif op == "odd-string" and parent is not None:
        parent[key] = rng.choice(
            ["\x00", "\u202e", "\ufeff", "💥" * 50, "\r\n", "{{x}}", "%s%n", "a" * 300 + "\n" * 50]
        )
    return doc, op


def mutate_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    op = rng.choice(
        ["truncate", "flip", "bad-utf8", "nul", "bom", "drop-line", "dup-line", "swap-lines", "crlf", "empty"]
    )
    if op == "truncate":
        return data[: rng.randrange(len(data) + 1)], op
    if op == "flip" and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b), op
    if op in ("bad-utf8", "nul"):
        at = rng.randrange(len(data) + 1)
        junk = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80"]) if op == "bad-utf8" else b"\x00"
        return data[:at] + junk + data[at:], op
    if op == "bom":
        return b"\xef\xbb\xbf" + data, op
    if op == "crlf":
        return data.replace(b"\n", b"\r\n"), op
    if op == "empty":
        return b"", op
    lines = data.splitlines(keepends=True)
    if not lines:
        return data, "noop"
    i = rng.randrange(len(lines))
    if op == "drop-line":
        del lines[i]
    elif op == "dup-line":
        lines.insert(i, lines[i])
    else:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines), op


ALIAS_BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
)


def make_input(bases: list[tuple[str, str, str, bytes]], seed: int, i: int) -> tuple[str, str, str, bytes, str]:
    """Input ``i``: (base name, its format, the importer to read it with, bytes, corruptions applied)."""
    rng = random.Random(f"{seed}:{i}")
    fmt = rng.choice(sorted({b[1] for b in bases}))  # each format alike, whatever its number of files
    name, fmt, suffix, data = rng.choice([b for b in bases if b[1] == fmt])
    data = slice_base(rng, data, suffix)
    ops: list[str] = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if rng.random() < 0.55 and suffix in (".json", ".jsonl", ".yaml", ".yml", ".traj"):
            data, op = mutate_structured(rng, data, suffix)
        else:
            data, op = mutate_bytes(rng, data)
        ops.append(op)
    importers = [*sorted(FORMATS.names()), "auto"]
    reader = fmt if rng.randrange(OTHER_SHARE) else rng.choice(importers)
    return name, fmt, reader, data, "+".join(ops)


def mutate_structured(rng: random.Random, data: bytes, suffix: str) -> tuple[bytes, str]:
    try:
        if suffix == ".jsonl":
            lines = data.splitlines()
            if not lines:
                return data, "noop"
            k = rng.randrange(len(lines))
            doc, op = mutate_doc(rng, json.loads(lines[k]))
            lines[k] = json.dumps(doc).encode()
            return b"\n".join(lines) + b"\n", op
        if suffix in (".yaml", ".yml"):
            if b"&a0" in data:  # already a bomb: loading it here would expand it
                return mutate_bytes(rng, data)
            doc = yaml.safe_load(data)
            if rng.random() < 0.15 and isinstance(doc, dict):
                # A value the importer reads becomes a reference to nine levels of nested aliases (9**10 leaves
                # once expanded), defined ahead of it as top-level keys; the rest of the cassette is unchanged.
                path = rng.choice(_nodes(doc)[1:] or [()])
                if path:
                    _get(doc, path[:-1])[path[-1]] = "BOMB-HERE"
                text = yaml.safe_dump(doc, allow_unicode=False).replace("BOMB-HERE", "*a9", 1)
                return (ALIAS_BOMB + text).encode(), "alias-bomb"
            doc, op = mutate_doc(rng, doc)
            return yaml.safe_dump(doc, allow_unicode=False).encode(errors="surrogatepass"), op
        doc, op = mutate_doc(rng, json.loads(data))
        return json.dumps(doc).encode(), op
    except (ValueError, yaml.YAMLError, RecursionError, UnicodeError):
        return mutate_bytes(rng, data)  # already damaged at the byte level: stay there


# -- one read ---------------------------------------------------------------------------------------
def read_once(path: Path, reader: str, lenient: bool, out: Path) -> tuple[str, str]:
    """(outcome, class) of one read as ``csim import`` does it."""
    try:
        report = import_paths([path], reader, lenient=lenient)
        write_native(report, out)
    except FormatError as exc:
        text = str(exc)
        if path.name not in text:
            return "uncaught", f"FormatError without the file name: {text[:80]}"
        return "clear error", ""
    except RecursionError:
        return "uncaught", "RecursionError " + _where(sys.exc_info()[2])
    except BaseException as exc:  # noqa: BLE001 - every escape is a finding
        return "uncaught", f"{type(exc).__name__} {_where(exc.__traceback__)}"
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if lenient and any(f.error is not None for f in report.files):
        return "clear error", ""
    return "ok", ""


def _where(tb: Any) -> str:
    """The innermost frame in the project's code (``sim/``), as file:function."""
    where = "?"
    for frame in traceback.extract_tb(tb):
        if "/sim/" in frame.filename:
            where = f"{frame.filename.split('/sim/', 1)[1]}:{frame.name}"
    return f"at sim/{where}"


def worker(conn: Connection, bases: list[tuple[str, str, str, bytes]], seed: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    sys.setrecursionlimit(3000)
    scratch = Path(tempfile.mkdtemp(prefix="csim-fuzz-"))
    try:
        while True:
            i = conn.recv()
            if i is None:
                return
            try:
                name, fmt, reader, data, ops = make_input(bases, seed, i)
            except (MemoryError, RecursionError) as exc:  # the generator's own limits: say so, count nothing
                conn.send(("skip", i, f"{type(exc).__name__} while making input {i}"))
                continue
            sfx = ".traj.json" if name.endswith(".traj.json") else Path(name).suffix
            path = scratch / f"input{i}{sfx}"
            path.write_bytes(data)
            for lenient in (False, True):
                conn.send(("start", i, lenient, f"{reader} <- {name} [{ops}]"))
                outcome, cls = read_once(path, reader, lenient, scratch / "out")
                conn.send(("done", i, lenient, outcome, cls, reader, ops))
            path.unlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the pool with a timeout per read ----------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per read before it counts as a hang")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first input index (to continue a run)")
    ap.add_argument("--memory-mb", type=int, default=2048)
    ap.add_argument("--show", type=int, default=None, help="print what input SHOW is and exit")
    args = ap.parse_args()
    root = recorded_root()
    if not root.is_dir():
        sys.exit(f"no recordings at {root} (set CSIM_RECORDED)")
    bases = load_bases(root)
    if args.show is not None:
        name, fmt, reader, data, ops = make_input(bases, args.seed, args.show)
        print(f"input {args.show}: {reader} <- {name} ({fmt}) [{ops}], {len(data)} bytes")
        print(data[:2000].decode(errors="replace"))
        return
    print(
        f"{len(bases)} recordings under {root}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(Counter(b[1] for b in bases).items()))
    )
    ctx = mp.get_context("fork")
    todo = list(range(args.start, args.start + args.inputs))
    outcomes: Counter[str] = Counter()
    by_reader: dict[str, Counter[str]] = {}
    classes: Counter[str] = Counter()
    examples: dict[str, str] = {}
    skipped: list[int] = []
    t0 = time.perf_counter()
    workers: dict[Connection, tuple[Any, list[Any]]] = {}  # conn -> (process, [current (i, lenient, desc, deadline)])

    def spawn() -> None:
        parent, child = ctx.Pipe()
        p = ctx.Process(target=worker, args=(child, bases, args.seed, args.memory_mb), daemon=True)
        p.start()
        child.close()
        workers[parent] = (p, [None])
        feed(parent)

    def feed(conn: Connection) -> None:
        if todo:
            conn.send(todo.pop(0))
            workers[conn][1][0] = ("queued", time.monotonic() + args.timeout * 3)
        else:
            conn.send(None)
            workers[conn][1][0] = None

    def record(outcome: str, cls: str, reader: str, mode: str, desc: str) -> None:
        outcomes[outcome] += 1
        by_reader.setdefault(reader, Counter())[outcome] += 1
        if cls:
            key = f"{outcome}: {cls}"
            if key not in examples:  # said at once, so a run stopped early still names what it found
                print(f"  new class: {key} (e.g. {mode} {desc})", flush=True)
            classes[key] += 1
            examples.setdefault(key, f"{mode} {desc}")

    for _ in range(args.jobs):
        spawn()
    done_inputs = 0
    while workers:
        now = time.monotonic()
        deadlines = [cur[0][-1] for _, cur in workers.values() if cur[0] is not None]
        ready = wait(list(workers), timeout=max(0.0, min(deadlines) - now) if deadlines else 1.0)
        for conn in ready:
            proc, cur = workers[conn]
            try:
                msg = conn.recv()
            except EOFError:  # died (a hard crash): count the read it was on, replace it
                state = cur[0]
                if state is not None and state[0] == "read":
                    _, i, lenient, desc, _ = state
                    record(
                        "uncaught",
                        "worker died " + desc.split(" [")[1].rstrip("]"),
                        desc.split(" <- ")[0],
                        "lenient" if lenient else "strict",
                        f"#{i} {desc}",
                    )
                del workers[conn]
                proc.join()
                if todo:
                    spawn()
                continue
            if msg[0] == "skip":
                print(f"  skipped: {msg[2]}", flush=True)
                skipped.append(msg[1])
                feed(conn)
                continue
            if msg[0] == "start":
                _, i, lenient, desc = msg
                cur[0] = ("read", i, lenient, desc, time.monotonic() + args.timeout)
            else:
                _, i, lenient, outcome, cls, reader, ops = msg
                record(outcome, cls, reader, "lenient" if lenient else "strict", f"#{i} {reader} [{ops}]")
                if lenient:
                    done_inputs += 1
                    if done_inputs % 500 == 0:
                        rate = done_inputs / (time.perf_counter() - t0)
                        print(f"  {done_inputs} inputs, {rate:.1f}/s, {dict(outcomes)}", flush=True)
                    feed(conn)
        now = time.monotonic()
        for conn, (proc, cur) in list(workers.items()):
            state = cur[0]
            if state is not None and state[0] == "read" and now > state[-1]:
                _, i, lenient, desc, _ = state
                proc.kill()
                proc.join()
                del workers[conn]
                ops = desc.split(" [")[1].rstrip("]")
                ops = "alias-bomb" if "alias-bomb" in ops else ops  # the corruption that hangs, not its company
                record("hang", ops, desc.split(" <- ")[0], "lenient" if lenient else "strict", f"#{i} {desc}")
                if not lenient:  # the lenient read of the same input is not tried: count it as a hang too
                    record("hang", ops, desc.split(" <- ")[0], "lenient", f"#{i} {desc}")
                done_inputs += 1
                spawn()
    elapsed = time.perf_counter() - t0
    print(
        f"{args.inputs} inputs (seed {args.seed}, from {args.start}), {sum(outcomes.values())} reads "
        f"(strict and lenient) in {elapsed:.0f} s ({args.inputs / elapsed:.1f} inputs/s, {args.jobs} workers)"
    )
    for k in ("ok", "clear error", "uncaught", "hang"):
        print(f"  {k:12} {outcomes.get(k, 0)}")
    if skipped:
        print(f"  (inputs the generator could not make, not counted: {len(skipped)})")
    print("by importer:")
    for reader, c in sorted(by_reader.items()):
        print(f"  {reader:20} " + ", ".join(f"{k} {c[k]}" for k in ("ok", "clear error", "uncaught", "hang") if c[k]))
    if classes:
        print("classes (count, first example):")
        for cls, n in classes.most_common():
            print(f"  {n:6}  {cls}\n          e.g. {examples[cls]}")


if __name__ == "__main__":
    main()
