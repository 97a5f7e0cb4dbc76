"""Saved calibrations: the JSON file ``csim calibrate --out`` writes, reading it back, choosing the fit for a
run, and the report ``csim calibrate`` prints. The fit itself is :mod:`sim.calibration.fit`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sim.core.counting import Calibration, Coefficients, HeldOut
from sim.core.errors import InvalidConfig
from sim.core.kinds import KINDS
from sim.formats.datasets import get_dataset, sha256_of


def save(calibrations: Sequence[Calibration], path: str | Path) -> Path:
    """Write calibrations as JSON (sorted keys, stable bytes)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    body = {"calibrations": [asdict(c) for c in calibrations]}
    p.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return p


def load(path: str | Path) -> list[Calibration]:
    """Calibrations saved by :func:`save`."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        items = raw["calibrations"]
        return [
            Calibration(**{**d, "coefficients": _coefficients(d["coefficients"]), "errors": HeldOut(**d["errors"])})
            for d in items
        ]
    except OSError as exc:
        raise InvalidConfig(f"calibration file {str(p)!r} cannot be read: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidConfig(f"{p}: not a calibration file written by csim calibrate ({exc})") from None


def _coefficients(d: dict[str, Any]) -> Coefficients:
    if "per_tool_block" in d:
        raise ValueError(
            "it frames tool calls per block, as csim before the framing by call ids did: run csim calibrate again"
        )
    kinds = d.get("kind_scales")
    return Coefficients(**{**d, "kind_scales": None if kinds is None else tuple(kinds)})


def choose(
    calibrations: Sequence[Calibration],
    provider: str | None = None,
    fmt: str | None = None,
    agent: str = "main",
    where: str = "the calibration file",
) -> Calibration:
    """The one calibration for a run: the only one, else the one matching provider, format and agent."""
    if len(calibrations) == 1:
        return calibrations[0]
    pick = [
        c
        for c in calibrations
        if c.agent == agent and (provider is None or c.provider == provider) and (fmt is None or c.format == fmt)
    ]
    if len(pick) == 1:
        return pick[0]
    keys = ", ".join(c.key for c in calibrations) or "(none)"
    raise InvalidConfig(
        f"{where} holds {len(calibrations)} calibrations ({keys}); {len(pick)} match provider "
        f"{provider!r}, format {fmt!r}, agent {agent!r}: keep one group in the file "
        "(csim calibrate --group) or pass the run's --provider/--format to match exactly one"
    )


def load_for_run(path: str | Path, provider: str | None = None, fmt: str | None = None) -> Calibration:
    return choose(load(path), provider, fmt, where=str(path))


def load_for_source(
    path: str | Path, provider: str | None, kind: str, name: str = "", fmt: str = "auto"
) -> Calibration:
    """The fit in ``path`` for runs over one source (``csim run`` and ``csim sweep`` alike): matched to the
    provider and the source's format: a dataset's own, a recording's when given (any when detected),
    any for a synthetic scenario."""
    source_format: str | None = None
    if kind == "dataset":
        source_format = get_dataset(name).format
    elif kind == "conversation" and fmt != "auto":
        source_format = fmt
    return load_for_run(path, provider, source_format)


def checksum_of(paths: Iterable[Path]) -> str:
    """SHA-256 over the files' own SHA-256 digests, in sorted path order."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(f"{p.name}:{sha256_of(p)}\n".encode())
    return h.hexdigest()


@dataclass
class Report:
    """What ``csim calibrate`` prints and saves."""

    calibrations: list[Calibration] = field(default_factory=list)

    def render(self) -> str:
        lines = []
        for c in self.calibrations:
            e, k = c.errors, c.coefficients
            what = "estimated text (anchored on each segment's first request)" if e.anchored else "whole prompts"
            line = (
                f"{c.key} [{c.tokenizer}]: n fit {c.n}, n held out {e.n_held_out} (split {e.split}); {what}: "
                f"calibrated median {e.median:.2%} p90 {e.p90:.2%}"
            )
            if e.one_ratio_median is not None and e.one_ratio_p90 is not None:
                line += f"; one ratio median {e.one_ratio_median:.2%} p90 {e.one_ratio_p90:.2%}"
            line += f"; chars baseline median {e.baseline_median:.2%} p90 {e.baseline_p90:.2%}"
            if e.anchored and e.absolute_median is not None and e.absolute_p90 is not None:
                line += f"\n    whole prompts: median {e.absolute_median:.2%} p90 {e.absolute_p90:.2%}"
            line += (
                f"\n    fixed {k.fixed:,.0f} + "
                + (
                    f"{k.per_call_id_token:.2f} x call-id tokens"
                    if k.per_call_id_token
                    else f"{k.per_message:.2f}/message"
                )
                + f" + {k.scale:.4f} x tokens + "
                f"{k.after_compaction:,.0f} after a compaction"
            )
            if k.kind_scales is not None:
                line += (
                    " (by kind: " + ", ".join(f"{n} {r:.4f}" for n, r in zip(KINDS, k.kind_scales, strict=True)) + ")"
                )
            lines.append(line)
        if not lines:
            lines.append("no group had 3 or more recorded requests with usage: nothing to fit")
        return "\n".join(lines)
