"""Synthetic scenarios: seeded, parameterised generators of conversations, registered by name.

A scenario is a function ``generate(seed: int, **params) -> Conversation``. Its default parameters
live in a spec file under ``datasets/scenarios/NAME.toml`` (data only) and are mirrored by the
generator's keyword defaults, so the package works without the data folder too. Randomness comes
only from ``numpy.random.default_rng(numpy.random.SeedSequence([seed, ...]))``; the same seed and
parameters give the same conversation, byte for byte.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from sim.core.conversation import Conversation
from sim.core.errors import UnknownName
from sim.core.params import coerce
from sim.core.registry import Registry

Generator = Callable[..., Conversation]
SCENARIOS: Registry[Generator] = Registry("scenario")

#: The generator modules; importing one registers its scenario. The registry's loader imports them by name when a
#: scenario is first asked for, so importing this package stays light.
SCENARIO_MODULES = ("sim.scenarios.coding_agent", "sim.scenarios.research_agent", "sim.scenarios.support_chat")


def generate(name: str, seed: int, **params: Any) -> Conversation:
    """Build scenario ``name`` with ``seed`` and any parameter overrides."""
    _load()
    return SCENARIOS.get(name)(seed, **params)


def scenario_conversation(name: str, seed: int, params: Mapping[str, str]) -> Conversation:
    """Build scenario ``name`` from string parameters (``-S turns=40``, a spec's table), each parsed to the type
    of the generator's default (:func:`sim.core.params.coerce`); a misspelt name gets a "did you mean"."""
    _load()
    defaults = {k: p.default for k, p in inspect.signature(SCENARIOS.get(name)).parameters.items() if k != "seed"}
    typed: dict[str, Any] = {}
    for k, v in params.items():
        if k not in defaults:
            raise UnknownName(f"parameter of scenario {name!r}", k, defaults)
        typed[k] = coerce(k, v, type(defaults[k]))
    return generate(name, seed, **typed)


def _load() -> None:
    for module in SCENARIO_MODULES:
        importlib.import_module(module)


def scenario_names() -> list[str]:
    """The registered scenarios' names (their modules loaded first: the registry fills as they are imported)."""
    _load()
    return SCENARIOS.names()


__all__ = ["SCENARIOS", "Generator", "generate", "scenario_conversation", "scenario_names"]
