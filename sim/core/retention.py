"""The mock summariser's retention model, as values: which facts a summary keeps, and how often the call fails.

Two values. :class:`RetentionModel` says how likely a summary is to keep a fact of each kind, fitted on real
summaries (``csim calibrate PATH --retention``, :mod:`sim.calibration.retention_fit`) or read from published
figures where the recordings hold too few; :class:`SummariserConfig` is a run's summariser (``-R NAME=VALUE``):
which model file, a custom instruction, kinds it pins, its output cap, its failure rates, and per-kind overrides.
:mod:`sim.replay.summariser` carries them out.

A kind's keep probability takes one of two forms:

* ``slots``: a summary of ``S`` tokens has room for ``rate * S`` mentions of the kind, each falling on one of the
  ``n`` candidates of that kind at random, so a candidate is kept with ``1 - exp(-rate * S / n)``. The share kept
  falls as a span holds more facts of the kind and rises with the summary's length, and a summary of a handful of
  facts keeps nearly all of them. It is the form fitted where recordings hold enough facts of a kind.
* ``share``: a fixed share for a fact's first summary (``first``) and another for each later one (``later``: the
  chance that a fact a summary kept survives the next summary of it), the form of the published figures.

A fact goes through every summary of it again (a summary of a summary), so its survival compounds over rounds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from sim.core.conversation import FACT_KINDS
from sim.core.errors import InvalidConfig

#: The version of the retention file format, checked on load.
FORMAT = "csim-retention/1"

#: The bundled fit, made by ``csim calibrate ../shared/recorded/claude-code --retention --out`` this path.
BUNDLED = "retention_fit.json"


@dataclass(frozen=True)
class KindRate:
    """How likely a summary is to keep a fact of one kind (see the module docstring for the two forms)."""

    kind: str
    form: Literal["slots", "share"]
    rate: float = 0.0  # slots: mentions per summary token
    first: float = 0.0  # share: kept by a fact's first summary
    later: float = 0.0  # share: kept again by each later summary
    interval: tuple[float, float] | None = None  # a bootstrap interval of rate (slots) or first (share)
    observations: int = 0  # recorded candidates the figure rests on
    source: str = ""  # where the figure comes from

    def __post_init__(self) -> None:
        if self.kind not in FACT_KINDS:
            raise InvalidConfig(f"retention kind {self.kind!r} is not one of {', '.join(FACT_KINDS)}")
        if self.form == "slots" and not (self.rate >= 0 and math.isfinite(self.rate)):
            raise InvalidConfig(f"retention {self.kind}: rate {self.rate!r} must be a finite number ≥ 0")
        if self.form == "share" and not (0 <= self.first <= 1 and 0 <= self.later <= 1):
            raise InvalidConfig(f"retention {self.kind}: first and later must be probabilities in [0, 1]")
        if self.form not in ("slots", "share"):
            raise InvalidConfig(f"retention {self.kind}: form {self.form!r} must be slots or share")

    def keep(self, summary_tokens: float, candidates: int, round: int = 1) -> float:
        """The keep probability of one candidate among ``candidates`` of its kind in a summary of
        ``summary_tokens``, at its ``round``-th summary."""
        if self.form == "share":
            return self.first if round <= 1 else self.later
        if candidates <= 0:
            return 1.0
        return 1.0 - math.exp(-self.rate * max(summary_tokens, 0.0) / candidates)


@dataclass(frozen=True)
class RetentionModel:
    """Per-kind keep probabilities, the typical length of a summary, and where each figure comes from."""

    kinds: tuple[KindRate, ...]
    summary_tokens: int  # a summary's length when nothing bounds it: the median of the recorded ones
    fitted_on: str = ""
    notes: tuple[str, ...] = ()
    held_out: tuple[dict[str, Any], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        missing = sorted(set(FACT_KINDS) - {k.kind for k in self.kinds})
        if missing:
            raise InvalidConfig(f"retention model has no rate for {', '.join(missing)}: every fact kind needs one")
        if self.summary_tokens < 1:
            raise InvalidConfig(f"retention model summary_tokens={self.summary_tokens!r} must be at least 1")

    def rate(self, kind: str) -> KindRate:
        return next(k for k in self.kinds if k.kind == kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "fitted_on": self.fitted_on,
            "summary_tokens": self.summary_tokens,
            "notes": list(self.notes),
            "kinds": {
                k.kind: {
                    "form": k.form,
                    **({"rate": k.rate} if k.form == "slots" else {"first": k.first, "later": k.later}),
                    "interval": list(k.interval) if k.interval else None,
                    "observations": k.observations,
                    "source": k.source,
                }
                for k in sorted(self.kinds, key=lambda k: k.kind)
            },
            "held_out": list(self.held_out),
        }

    @classmethod
    def from_json(cls, raw: Any, where: str) -> RetentionModel:
        """A model from its JSON, every mistake named with ``where`` (the file) and what was expected."""
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            got = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
            raise InvalidConfig(
                f"{where}: not a retention file (format {got!r}, expected {FORMAT!r}); write one with "
                "csim calibrate PATH --retention --out FILE"
            )
        try:
            kinds = tuple(
                KindRate(
                    kind=name,
                    form=body["form"],
                    rate=float(body.get("rate", 0.0)),
                    first=float(body.get("first", 0.0)),
                    later=float(body.get("later", 0.0)),
                    interval=(float(body["interval"][0]), float(body["interval"][1])) if body.get("interval") else None,
                    observations=int(body.get("observations", 0)),
                    source=str(body.get("source", "")),
                )
                for name, body in raw["kinds"].items()
            )
            return cls(
                kinds,
                int(raw["summary_tokens"]),
                str(raw.get("fitted_on", "")),
                tuple(raw.get("notes", ())),
                tuple(raw.get("held_out", ())),
            )
        except InvalidConfig as exc:
            raise InvalidConfig(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidConfig(f"{where}: malformed retention file ({type(exc).__name__}: {exc})") from None


@lru_cache(maxsize=16)
def load_model(path: str | None) -> RetentionModel:
    """The model in ``path``, or the bundled fit when ``path`` is None or empty. Read once per process."""
    if not path:
        text = (Path(__file__).parent / BUNDLED).read_text(encoding="utf-8")  # package data, beside this module
        return RetentionModel.from_json(json.loads(text), f"the bundled sim/core/{BUNDLED}")
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidConfig(f"retention file {path}: no such file (csim calibrate --retention writes one)") from None
    except json.JSONDecodeError as exc:
        raise InvalidConfig(f"retention file {path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    return RetentionModel.from_json(raw, f"retention file {path}")


@dataclass(frozen=True)
class SummariserConfig:
    """A run's mock summariser (``-R NAME=VALUE``).

    * ``retention``: a retention file (``csim calibrate --retention --out``); unset, the bundled fit
      (``sim/core/retention_fit.json``: fitted on the shared Claude Code recordings where they hold 20 or more
      facts of a kind, published figures for the other kinds, each with its source in the file).
    * ``keep_constraint`` ... ``keep_recall``: a fixed keep probability for a kind, in place of the model's.
    * ``instruction``: a custom instruction sent with the summary request (Claude Code's ``/compact <focus>``, the
      Anthropic API's ``instructions``); counted in the request, and a kind it names (rules or constraints;
      decisions; next steps or todos; files, paths, commands or identifiers; errors or details) loses half as
      much. The direction is what the 2026 studies report (an explicit constraint extractor raises constraint
      survival from 17% to over 90%, "Lost in Compaction", arXiv 2608.11242); the size, a half, is ours.
    * ``pin``: kinds the summary restates verbatim every time (type-aware retention lanes, "The Compaction
      Cliff", arXiv 2608.22752; constraint pinning, arXiv 2606.22528): kept whenever the output cap allows.
    * ``max_output_tokens``: the summary's cap (default the model's output reserve, as both seeds call their run's
      own model); a summary is also no longer than the model's typical one or than what it summarises.
    * ``failure_rate``, ``empty_rate``: the call fails, or returns nothing (0: failures are opt-in).
    """

    retention: str | None = None
    keep_constraint: float | None = None
    keep_decision: float | None = None
    keep_continuation: float | None = None
    keep_artifact: float | None = None
    keep_recall: float | None = None
    instruction: str = ""
    pin: tuple[str, ...] = ()
    max_output_tokens: int | None = None
    failure_rate: float = 0.0
    empty_rate: float = 0.0

    def __post_init__(self) -> None:
        for name in ("failure_rate", "empty_rate", *(f"keep_{k}" for k in FACT_KINDS)):
            v = getattr(self, name)
            if v is not None and not 0.0 <= v <= 1.0:
                raise InvalidConfig(f"summariser {name}={v!r} must be a probability in [0, 1]")
        if self.max_output_tokens is not None and self.max_output_tokens < 64:
            raise InvalidConfig(f"summariser max_output_tokens={self.max_output_tokens!r} must be at least 64")
        bad = [k for k in self.pin if k not in FACT_KINDS]
        if bad:
            raise InvalidConfig(f"summariser pin={','.join(bad)}: pin takes fact kinds ({', '.join(FACT_KINDS)})")
        self.model  # noqa: B018  (a missing or malformed file is the config's error, before any run starts)

    @property
    def model(self) -> RetentionModel:
        return load_model(self.retention)

    def rate(self, kind: str) -> KindRate:
        """The kind's rate: the override when one is set, else the model's."""
        fixed = getattr(self, f"keep_{kind}")
        if fixed is not None:
            return KindRate(kind, "share", first=fixed, later=fixed, source=f"-R keep_{kind}")
        return self.model.rate(kind)

    def keep(self, kind: str) -> float:
        """A kind's keep probability at a fact's first summary where it does not depend on the span (a share);
        for a ``slots`` kind, its value for a summary of the typical length over one candidate."""
        r = self.rate(kind)
        return r.keep(self.model.summary_tokens, 1)


__all__ = ["FORMAT", "KindRate", "RetentionModel", "SummariserConfig", "load_model"]
