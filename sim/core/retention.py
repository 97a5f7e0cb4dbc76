"""The mock summariser's retention model, as a value: which facts a summary keeps, by kind, and how often the
summariser call fails. :mod:`sim.replay.summariser` carries it out; a run's config holds it (``-R NAME=VALUE``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import InvalidConfig


@dataclass(frozen=True)
class SummariserConfig:
    """Parameters of the retention model.

    The per-kind keep probabilities are grounded in Factory.ai's probe evaluation of context compression
    ("Evaluating context compression for AI agents", Dec 2025; ``reference/policy-catalogue.md`` §D4 and
    ``reference/evaluation-literature.md`` §2): a judge scored, 0 to 5, what each summarising method (Factory's
    anchored summaries, the Anthropic SDK's, OpenAI's ``/responses/compact``) kept at hundreds of compression
    points. Each default is the mean over the three methods of the dimension closest to the fact kind, divided
    by 5 (a score read as the share kept, a mapping of ours):

    * ``recall`` (a detail looked up; Factory's recall probe, "what was the original error?"): *accuracy*,
      (4.04 + 3.74 + 3.43) / 3 / 5 = 0.75;
    * ``decision`` (what was decided and why): *context*, (4.01 + 3.56 + 3.64) / 3 / 5 = 0.75;
    * ``continuation`` (what to do next): *continuity*, (3.80 + 3.67 + 3.77) / 3 / 5 = 0.75;
    * ``artifact`` (which files changed, and how): *artifact*, (2.45 + 2.33 + 2.19) / 3 / 5 = 0.46, the worst
      for every method, as Factory reports;
    * ``constraint`` (the user's rules): *instruction*, (4.99 + 4.95 + 4.92) / 3 / 5 = 0.99.

    ``failure_rate`` and ``empty_rate`` are 0 (this project's choice: failures are opt-in).
    """

    keep_constraint: float = 0.99
    keep_decision: float = 0.75
    keep_continuation: float = 0.75
    keep_artifact: float = 0.46
    keep_recall: float = 0.75
    max_output_tokens: int | None = None
    failure_rate: float = 0.0
    empty_rate: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "keep_constraint",
            "keep_decision",
            "keep_continuation",
            "keep_artifact",
            "keep_recall",
            "failure_rate",
            "empty_rate",
        ):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise InvalidConfig(f"summariser {name}={v!r} must be a probability in [0, 1]")
        if self.max_output_tokens is not None and self.max_output_tokens < 64:
            raise InvalidConfig(f"summariser max_output_tokens={self.max_output_tokens!r} must be at least 64")

    def keep(self, kind: str) -> float:
        return float(getattr(self, f"keep_{kind}"))


__all__ = ["SummariserConfig"]
