"""Scenario parameters: their allowed ranges, the check every generator call goes through, and the
conversation id that tells parameter settings apart.

Apart from the drawing in :mod:`sim.scenarios._rng` because this is where a caller's values are checked,
before anything is drawn: a bad value raises InvalidConfig naming the parameter and what it allows.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.scenarios._rng import check_seed

F = TypeVar("F", bound=Callable[..., Conversation])


@dataclass(frozen=True)
class Param:
    """The allowed values of one scenario parameter: a closed range, plus isolated extra values
    (``compact_at=-1`` meaning "never")."""

    kind: type  # int or float
    lo: float
    hi: float
    also: tuple[float, ...] = ()

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        extra = "".join(f" or {x:g}" for x in self.also)
        return f"{what} in [{self.lo:g}, {self.hi:g}]{extra}"

    def coerce(self, scenario: str, name: str, value: object) -> int | float:
        """``value`` as this parameter's type, or InvalidConfig naming the parameter and its range."""
        bad = InvalidConfig(
            f"scenario {scenario!r}: parameter {name}={value!r} is out of range; allowed: {self.describe()}"
        )
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise bad
        if self.kind is int:
            if not isinstance(value, numbers.Integral) and not float(value).is_integer():
                raise bad
            v: int | float = int(value) if isinstance(value, numbers.Integral) else int(float(value))
        else:
            v = float(value)
            if not math.isfinite(v):
                raise bad
        if v in self.also or self.lo <= v <= self.hi:
            return v
        raise bad


def validated(scenario: str, specs: Mapping[str, Param]) -> Callable[[F], F]:
    """Wrap a generator so every call checks the seed and each parameter before any drawing.

    The wrapper keeps the generator's signature (``inspect.signature`` follows ``__wrapped__``), which is
    where the CLI reads defaults and their types. Checking the specs against the signature here turns a
    forgotten range into an import error rather than a silently unchecked parameter.
    """

    def deco(fn: F) -> F:
        sig = inspect.signature(fn)
        names = [n for n in sig.parameters if n != "seed"]
        if set(names) != set(specs):
            raise RuntimeError(f"scenario {scenario!r}: ranges {sorted(specs)} do not match parameters {names}")
        for n in names:
            specs[n].coerce(scenario, n, sig.parameters[n].default)

        @functools.wraps(fn)
        def wrapper(seed: int, **params: Any) -> Conversation:
            unknown = sorted(set(params) - set(specs))
            if unknown:
                raise InvalidConfig(
                    f"scenario {scenario!r} has no parameter {unknown[0]!r}; its parameters are "
                    + ", ".join(f"{n} ({specs[n].describe()})" for n in names)
                )
            check_seed(seed)
            typed = {k: specs[k].coerce(scenario, k, v) for k, v in params.items()}
            return fn(int(seed), **typed)

        return wrapper  # type: ignore[return-value]

    return deco


def defaults_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """A generator's keyword defaults (what the spec file must repeat)."""
    return {n: p.default for n, p in inspect.signature(fn).parameters.items() if n != "seed"}


def conversation_id(name: str, seed: int, params: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    """``NAME-seedN``, plus a short digest of the overrides when some parameter is not its default, so
    runs over a parameter grid get distinct run ids."""
    overrides = {k: v for k, v in sorted(params.items()) if defaults.get(k) != v}
    base = f"{name}-seed{seed}"
    if not overrides:
        return base
    digest = hashlib.sha256(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:8]
    return f"{base}-{digest}"
