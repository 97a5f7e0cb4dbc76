"""The model a run talks to, as the core knows it: its name for pricing, its wire format, its window and output
reserve, and how a provider frames what it is sent (the per-message, per-part and per-request overheads).

These are values, not the mock provider: the policies read the limits (``RunState.model``), the engine's
measuring and the calibration read the overheads, and :mod:`sim.replay.model` (the mock provider) renders and
validates requests against them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sim.core.errors import InvalidConfig

Provider = Literal["anthropic", "openai"]

# Framing tokens: what the wire format adds around content. These follow OpenAI's published
# counting recipe for chat messages (about 3 tokens per message, plus the reply primer) and are
# applied to both formats until calibration (a later issue) fits them per provider.
MESSAGE_OVERHEAD = 4
PART_OVERHEAD = 3
REQUEST_OVERHEAD = 3


#: The model priced when neither the run nor the recording names one.
DEFAULT_MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class ModelConfig:
    """The simulated model: name for pricing, wire format, window and output reserve.

    ``name`` None: each request is priced, and cached, as the model the recording names for its reply (Claude
    Code sessions mix models), else as :data:`DEFAULT_MODEL`; the window stays ``context_window`` either way.

    Defaults: a Claude Sonnet model with a 200,000-token window (Anthropic's published window for
    Sonnet 4.5) and an output reserve of 8,192 tokens (the effect-agent seed sizes its own
    completion reserve at 4,096; real agents reserve more, Claude Code up to 20,000).
    """

    name: str | None = field(
        default=None,
        metadata={
            "flag": "model",
            "help": "model for prices and cache rules (genai-prices name); default: the model a recording names "
            f"for each reply, else {DEFAULT_MODEL}",
        },
    )
    price_provider: str = field(
        default="anthropic", metadata={"flag": "price-provider", "help": "provider id in the price table"}
    )
    provider: Provider = field(
        default="anthropic",
        metadata={"flag": "provider", "help": "wire format the mock provider renders and validates"},
    )
    context_window: int = field(default=200_000, metadata={"flag": "window", "help": "context window in tokens"})
    output_reserve: int = field(
        default=8_192, metadata={"flag": "output-reserve", "help": "tokens reserved for output"}
    )

    def __post_init__(self) -> None:
        if self.provider not in ("anthropic", "openai"):
            raise InvalidConfig(f"provider {self.provider!r} must be 'anthropic' or 'openai'")
        if self.context_window < 1_000:
            raise InvalidConfig(f"context_window {self.context_window!r} must be at least 1000")
        if not 0 <= self.output_reserve < self.context_window:
            raise InvalidConfig(
                f"output_reserve {self.output_reserve!r} must be between 0 and the window ({self.context_window})"
            )

    @property
    def input_budget(self) -> int:
        """Window minus output reserve: the most a prompt may hold."""
        return self.context_window - self.output_reserve


def fits_window(prompt_tokens: int, config: ModelConfig, max_output: int | None = None) -> bool:
    """Whether the prompt plus the output cap fits the window."""
    reserve = config.output_reserve if max_output is None else max_output
    return prompt_tokens + reserve <= config.context_window


__all__ = [
    "DEFAULT_MODEL",
    "MESSAGE_OVERHEAD",
    "PART_OVERHEAD",
    "REQUEST_OVERHEAD",
    "ModelConfig",
    "Provider",
    "fits_window",
]
