"""Synthetic scenarios: seeded, parameterised generators of conversations, registered by name.

A scenario is a function ``generate(seed: int, **params) -> Conversation``. Its default parameters
live in a spec file under ``datasets/scenarios/NAME.toml`` (data only) and are mirrored by the
generator's keyword defaults, so the package works without the data folder too. Randomness comes
only from ``numpy.random.default_rng(numpy.random.SeedSequence([seed, ...]))``; the same seed and
parameters give the same conversation, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.core.conversation import Conversation
from sim.core.registry import Registry

Generator = Callable[..., Conversation]
SCENARIOS: Registry[Generator] = Registry("scenario")


def generate(name: str, seed: int, **params: Any) -> Conversation:
    """Build scenario ``name`` with ``seed`` and any parameter overrides."""
    _load()
    return SCENARIOS.get(name)(seed, **params)


def _load() -> None:
    from sim.scenarios import coding_agent, research_agent, support_chat  # noqa: F401


__all__ = ["SCENARIOS", "generate"]
