"""Fidelity: does the simulator, calibrated, report the prompt tokens the provider recorded?

A recorded session (Claude Code transcripts hold per-reply usage and their real compactions) is
replayed through the engine under the ``none`` policy with a :class:`~sim.calibration.fit.Calibration` in
the run config, so each agent request's ``context_tokens`` is the calibrated count the engine itself
reports. Two comparisons come out:

- the error curve: at every recorded request with usage, the simulated context tokens against the
  recorded prompt tokens (``input + cache_read + cache_write``), with the relative error;
- at every recorded compaction, the simulated tokens just before it (a request holding everything
  before the boundary: one synthetic reply is appended to the segment to make that request) against
  the ``preTokens`` Claude Code logged when it compacted.

``across`` says what happens at a recorded compaction:

- ``continue`` (default): the session is cut at each ``compact_boundary`` into segments (see
  :func:`sim.calibration.fit.segments`); each later segment starts with the recorded summary message the
  importer keeps (``meta["compact_summary"]``, ``meta["compact_boundary"]``) and is replayed on its
  own, because after a compaction the provider's prompt is the summary and what follows, not the old
  history. The engine's ``none`` policy would otherwise keep the whole history in view. A segment that
  opens with a summary gets the calibration's ``after_compaction`` term.
- ``stop``: only the first segment is replayed; the curve ends at the first recorded compaction.

The replay window is huge (:data:`sim.calibration.fit.REPLAY_WINDOW`) so no recorded request is rejected:
this measures counting, not overflow behaviour. When the calibration was fitted on the same session,
the curve is in-sample; fit on other sessions (``csim calibrate`` on a folder without it) for an
out-of-sample curve.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sim.calibration.fit import Calibration, opens_with_summary, replay_counts, segments
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig

Across = Literal["continue", "stop"]


@dataclass
class Fidelity:
    """The error curve of one session and its compactions."""

    conversation: str
    across: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)

    def errors(self) -> np.ndarray:
        return np.array([abs(r["relative_error"]) for r in self.rows], dtype=float)

    def summary(self) -> dict[str, Any]:
        e = self.errors()
        return {
            "conversation": self.conversation,
            "across": self.across,
            "requests": int(e.size),
            "median_abs_relative_error": float(np.median(e)) if e.size else None,
            "p90_abs_relative_error": float(np.percentile(e, 90)) if e.size else None,
            "compactions": self.compactions,
        }


def replay(conv: Conversation, calibration: Calibration, across: Across = "continue") -> Fidelity:
    """The calibrated replay of one recorded session; see the module docstring."""
    if across not in ("continue", "stop"):
        raise InvalidConfig(f"across={across!r} must be 'continue' or 'stop'")
    segs = segments(conv)
    if across == "stop":
        segs = segs[:1]
    boundaries = [m.meta["compact_boundary"] for m in conv.messages[1:] if "compact_boundary" in m.meta]
    out = Fidelity(conv.id, across)
    turn = 0
    for k, seg in enumerate(segs):
        has_next = k < len(boundaries)
        rows = replay_counts(seg, calibration.tokenizer, calibration, probe_end=has_next)
        replies = [m for m in seg.messages if m.role == "assistant"]
        for m, row in zip(replies, rows, strict=False):
            turn += 1
            if m.usage is None or m.usage.prompt_tokens <= 0 or m.meta.get("api_id_repeated"):
                continue
            recorded, simulated = m.usage.prompt_tokens, row["context_tokens"]
            out.rows.append(
                {
                    "turn": turn,
                    "segment": k,
                    "message_id": m.id,
                    "recorded": recorded,
                    "simulated": simulated,
                    "relative_error": (simulated - recorded) / recorded,
                    "summarised": opens_with_summary(seg),
                }
            )
        if has_next:
            pre = boundaries[k].get("pre_tokens")
            sim_pre = rows[-1]["context_tokens"]
            out.compactions.append(
                {
                    "compaction": k + 1,
                    "after_turn": turn,
                    "trigger": boundaries[k].get("trigger"),
                    "pre_tokens": pre,
                    "simulated": sim_pre,
                    "relative_error": (sim_pre - pre) / pre if isinstance(pre, int) and pre > 0 else None,
                }
            )
    return out


def write(result: Fidelity, out: str | Path) -> tuple[Path, Path]:
    """``OUT/fidelity.csv`` (the curve) and ``OUT/compactions.csv``; stable bytes."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    curve, comp = d / "fidelity.csv", d / "compactions.csv"
    _write_csv(
        curve, ["turn", "segment", "message_id", "recorded", "simulated", "relative_error", "summarised"], result.rows
    )
    _write_csv(
        comp, ["compaction", "after_turn", "trigger", "pre_tokens", "simulated", "relative_error"], result.compactions
    )
    return curve, comp


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, columns, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in r.items()})
