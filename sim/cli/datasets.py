"""``csim datasets list`` and ``csim datasets fetch NAME [--from DIR] [--cache DIR]``."""

from __future__ import annotations

import argparse

from sim.core.errors import InvalidConfig


def cmd_datasets(args: argparse.Namespace) -> int:
    from sim.formats import datasets as ds

    if args.action == "list":
        if args.name:
            raise InvalidConfig("csim datasets list takes no NAME")
        rows = []
        for d in ds.load_manifest().values():
            registered = "yes" if ds.format_registered(d.format) else "NOT REGISTERED"
            fetched = "fetched" if ds.is_fetched(d.name, args.cache) else "not fetched"
            rows.append(
                (d.name, f"{len(d.data_files)} files", f"format {d.format} ({registered})", d.licence, fetched, d.repo)
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))] if rows else []
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        return 0
    if not args.name:
        raise InvalidConfig("csim datasets fetch needs NAME (see csim datasets list)")
    root = ds.fetch(args.name, from_dir=args.from_dir, cache=args.cache)
    n = len(ds.get_dataset(args.name).files)
    print(f"{args.name}: {n} files verified (SHA-256) in {root}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "datasets",
        help="list the public recorded datasets, or fetch one (checksums verified)",
        description="List the public recorded datasets of datasets/manifest.toml, or fetch one into "
        "the cache ($CSIM_CACHE or ~/.cache/csim/datasets/NAME), verifying every SHA-256. "
        "Without network, copy from a local mirror with --from DIR.",
    )
    p.add_argument("action", choices=("list", "fetch"))
    p.add_argument("name", nargs="?", help="dataset name (fetch)")
    p.add_argument(
        "--from",
        dest="from_dir",
        metavar="DIR",
        help="copy from this folder (laid out like ../shared/recorded) instead of downloading",
    )
    p.add_argument("--cache", metavar="DIR", help="cache folder (default $CSIM_CACHE or ~/.cache/csim/datasets)")
    p.set_defaults(func=cmd_datasets)
