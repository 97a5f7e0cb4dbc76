"""Whether two results folders (``csim sweep`` / ``csim demo`` output) hold the same results, table by table.

A refactor must not change a number. Run keys include a digest of the code (``sim.sweep.grid.package_version``),
so two folders made by different commits differ in their ``run_key`` columns and their part names even when every
result is equal; this compares everything else: every table of every part, with the run keys replaced by the run's
configuration, conversation and seed, rows in their stored order within a run, every column's values and dtypes.

    python benchmarks/same_results.py OLD_RESULTS NEW_RESULTS

Prints one line per table and exits 1 at the first difference it finds (naming the table, the run and the column).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from sim.sweep.parts import TABLES, finished_parts
from sim.sweep.results import read_table


def _table(root: Path, name: str) -> pd.DataFrame:
    frames = [read_table(d, name) for d in finished_parts(root)]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _keyed(root: Path) -> dict[str, pd.DataFrame]:
    """Every table with its run key replaced by (config, conversation, seed), sorted by that and then row order."""
    runs = _table(root, "runs")
    ident = runs.set_index("run_key")[["config", "conversation", "seed"]]
    out = {}
    for name in TABLES:
        t = _table(root, name)
        if t.empty:
            out[name] = t
            continue
        t = t.copy()
        t["_order"] = range(len(t))
        if "run_key" in t:
            key = ident.loc[t["run_key"]].reset_index(drop=True)
            for col in ("config", "conversation", "seed"):
                t[col] = key[col].to_numpy() if col not in t else t[col]
            t = t.drop(columns=["run_key"])
        if name == "logs":  # the log's own header names the run key
            t["log"] = t["log"].str.replace(r'"run_key": ?"[0-9a-f]+"', '"run_key":""', regex=True)
        t = t.sort_values(["config", "conversation", "seed", "_order"], kind="stable").reset_index(drop=True)
        out[name] = t.drop(columns=["_order"])
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    args = p.parse_args()
    old, new = _keyed(args.old), _keyed(args.new)
    for name in TABLES:
        a, b = old[name], new[name]
        if list(a.columns) != list(b.columns) or list(a.dtypes) != list(b.dtypes):
            print(f"{name}: columns or dtypes differ: {list(a.columns)} vs {list(b.columns)}")
            return 1
        if len(a) != len(b):
            print(f"{name}: {len(a)} rows against {len(b)}")
            return 1
        for col in a.columns:
            same = (a[col] == b[col]) | (a[col].isna() & b[col].isna())
            if not bool(same.all()):
                i = int((~same).to_numpy().argmax())
                where = f"run {a.loc[i, 'config']!r} on {a.loc[i, 'conversation']!r}"
                print(f"{name}: column {col!r} differs first at {where}")
                print(f"  old: {a.loc[i, col]!r}\n  new: {b.loc[i, col]!r}")
                return 1
        print(f"{name}: {len(a)} rows, all {len(a.columns)} columns equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
