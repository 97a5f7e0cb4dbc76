"""The run options as command-line flags: made from :mod:`sim.core.config`'s fields (each field's ``flag`` and
``help`` metadata, its type, choices and default), so ``csim run``, ``csim sweep`` and a spec's ``[run]`` table
cannot drift apart."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from sim.core.config import run_options


def add_run_options(p: argparse.ArgumentParser, *, seed: bool = True, calibration: bool = False) -> None:
    """The run options as flags (help from the fields), the ``-R`` summariser table, and optionally the seed
    and ``--calibration``."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for o in run_options():
        if o.key == "seed" and not seed:
            continue
        g = groups.get(o.group) or groups.setdefault(o.group, p.add_argument_group(o.group))
        if o.kind is bool:
            g.add_argument(f"--{o.flag}", action="store_true", help=o.help)
            continue
        shown = "" if o.default is None else f" (default {o.default})"
        g.add_argument(f"--{o.flag}", type=o.kind, choices=o.choices, default=o.default, help=o.help + shown)
    s = p.add_argument_group("mock summariser")
    s.add_argument(
        "--summariser",
        "-R",
        action="append",
        metavar="NAME=VALUE",
        help="mock summariser parameter: -R retention=FILE (csim calibrate --retention), -R pin=constraint, "
        "-R instruction='keep every rule', -R keep_recall=0.3, -R max_output_tokens=2048 (sim/core/retention.py)",
    )
    if calibration:
        add_calibration_option(p)


def add_calibration_option(p: argparse.ArgumentParser) -> None:
    """``--calibration FILE`` (``[run] calibration`` in a spec)."""
    p.add_argument(
        "--calibration",
        metavar="FILE",
        default=None,
        help="apply a fit from csim calibrate --out to every run: context tokens become what the "
        "provider would count (the fit matched to the provider and each source's format)",
    )


def option_values(args: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
    """The run options' values from parsed flags (or a mapping), by key."""
    src = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    keys: Sequence[str] = [o.key for o in run_options()] + ["summariser", "calibration"]
    return {k: src[k] for k in keys if k in src}


__all__ = ["add_calibration_option", "add_run_options", "option_values"]
