"""What the synthetic scenarios share, in one import: seeding, parameter checks, a message builder, sizes
and filler.

The generators and their session modules use most of these helpers, so they import them from here rather
than from five modules. The code itself lives where its subject does:

- :mod:`sim.scenarios._rng`: the seeded stream, and the choices, coin flips, orders and sizes drawn from it;
- :mod:`sim.scenarios._params`: parameter ranges, the check on every call, the conversation id;
- :mod:`sim.scenarios._builder`: parts, tools and the builder that numbers messages and records facts;
- :mod:`sim.scenarios._filler`: filler text of a given size, from line banks built of the words in
  :mod:`sim.scenarios._prose_words` and :mod:`sim.scenarios._code_words`.
"""

from __future__ import annotations

from sim.scenarios._builder import ScenarioBuilder, call, result, text, thinking, tool
from sim.scenarios._filler import CHARS_PER_TOKEN, STYLES, embed, filler
from sim.scenarios._params import Param, conversation_id, defaults_of, validated
from sim.scenarios._prose_words import SUPPORT_LINES
from sim.scenarios._rng import (
    Rng,
    chance,
    check_seed,
    lognormal_int,
    pick,
    result_tokens,
    scenario_rng,
    shuffled,
    stable_key,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "STYLES",
    "SUPPORT_LINES",
    "Param",
    "Rng",
    "ScenarioBuilder",
    "call",
    "chance",
    "check_seed",
    "conversation_id",
    "defaults_of",
    "embed",
    "filler",
    "lognormal_int",
    "pick",
    "result",
    "result_tokens",
    "scenario_rng",
    "shuffled",
    "stable_key",
    "text",
    "thinking",
    "tool",
    "validated",
]
