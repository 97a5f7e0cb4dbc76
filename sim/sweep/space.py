"""``csim tune``'s search spaces: which fields of a policy's Config are tuned, over what, and their real names.

A policy declares its space next to its Config, as two plain class attributes (no import needed in the policy):

* ``TUNABLE``: field -> range, in the same text a user gives on the command line (``--space FIELD=SPEC``);
  the first field is the policy's *trigger* (when it compacts), which ``csim tune --by window`` recommends;
* ``TUNABLE_NATIVE``: field -> how the real system spells that setting (an environment variable, a config key, a
  constructor argument), with ``{value}`` where the value goes; taken from the Config's docstring, which cites it.

A range is ``LOW:HIGH`` (floats if either has a point, else integers), ``LOW:HIGH:STEP`` (a grid step) or
``LOW:HIGH:log`` (sampled on a log scale); a list ``A,B,C`` is a set of choices (strings, coerced by the Config as
``-P`` values are). A space whose every field is countable (choices, integer ranges, stepped floats) and whose
grid fits the trial budget is searched exhaustively; otherwise it is sampled (:mod:`sim.sweep.tune`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies import load_policy_class
from sim.core.errors import InvalidConfig, UnknownName


@dataclass(frozen=True)
class Dim:
    """One tuned field: a numeric range (``low``..``high``, optional ``step`` or ``log``) or ``choices``."""

    name: str
    low: float | None = None
    high: float | None = None
    integer: bool = False
    step: float | None = None
    log: bool = False
    choices: tuple[str, ...] = ()
    native: str = ""

    @property
    def countable(self) -> bool:
        return bool(self.choices) or self.integer or self.step is not None

    def grid(self) -> list[Any]:
        """Every value of a countable dimension, in order."""
        if self.choices:
            return list(self.choices)
        assert self.low is not None and self.high is not None
        step = self.step or 1
        n = int(math.floor((self.high - self.low) / step + 1e-9)) + 1
        values = [self.low + i * step for i in range(n)]
        return [int(round(v)) for v in values] if self.integer else [round(v, 10) for v in values]

    def size(self) -> int:
        return len(self.grid()) if self.countable else 0

    def describe(self) -> str:
        if self.choices:
            return f"{self.name} in {{{', '.join(self.choices)}}}"
        extra = " (log)" if self.log else f" step {format_number(self.step)}" if self.step else ""
        return f"{self.name} in [{format_number(self.low)}, {format_number(self.high)}]{extra}"


def format_number(v: Any) -> str:
    """A value as ``-P`` takes it: integers plainly, floats with up to 6 significant digits."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 1000):
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def parse_dim(name: str, text: str, native: str = "", where: str = "--space") -> Dim:
    """``LOW:HIGH``, ``LOW:HIGH:STEP``, ``LOW:HIGH:log`` or ``A,B,C`` as a :class:`Dim`."""
    text = text.strip()
    if ":" not in text or "," in text:  # a list (its items may hold colons: fraction:0.8)
        choices = tuple(s.strip() for s in text.split(",") if s.strip())
        if not choices:
            raise InvalidConfig(f"{where} {name}={text!r}: give LOW:HIGH, LOW:HIGH:STEP, LOW:HIGH:log or A,B,C")
        return Dim(name, choices=choices, native=native)
    bits = [b.strip() for b in text.split(":")]
    if len(bits) not in (2, 3):
        raise InvalidConfig(f"{where} {name}={text!r}: a range is LOW:HIGH, LOW:HIGH:STEP or LOW:HIGH:log")
    integer = not any("." in b or "e" in b.lower() for b in bits[:2])
    try:
        low, high = (float(b.replace("_", "")) for b in bits[:2])
    except ValueError:
        raise InvalidConfig(f"{where} {name}={text!r}: LOW and HIGH must be numbers (e.g. {name}=0.5:0.95)") from None
    if not low < high:
        raise InvalidConfig(f"{where} {name}={text!r}: LOW must be below HIGH")
    step: float | None = None
    log = False
    if len(bits) == 3:
        if bits[2].lower() == "log":
            if low <= 0:
                raise InvalidConfig(f"{where} {name}={text!r}: a log range needs LOW > 0")
            log = True
        else:
            try:
                step = float(bits[2].replace("_", ""))
            except ValueError:
                raise InvalidConfig(f"{where} {name}={text!r}: the third part is a step or 'log'") from None
            if step <= 0:
                raise InvalidConfig(f"{where} {name}={text!r}: the step must be positive")
            integer = integer and step.is_integer()
    return Dim(name, low, high, integer, step, log, native=native)


def declared_space(ref: str) -> dict[str, Dim]:
    """The space a policy declares (``TUNABLE`` and ``TUNABLE_NATIVE``); empty when it declares none."""
    cls = load_policy_class(ref)
    tunable = cls.TUNABLE
    native = cls.TUNABLE_NATIVE
    fields = {f.name for f in dataclasses.fields(cls.Config)}
    out: dict[str, Dim] = {}
    for name, text in tunable.items():
        if name not in fields:  # a declaration out of step with its Config: the policy's bug, said plainly
            raise InvalidConfig(f"policy {ref!r} declares TUNABLE field {name!r}, which its Config does not have")
        out[name] = parse_dim(name, text, native.get(name, ""), f"{ref}.TUNABLE")
    return out


def policy_space(ref: str, overrides: Sequence[str] = ()) -> dict[str, Dim]:
    """The declared space with the user's ``FIELD=SPEC`` overrides applied to the fields this policy's Config has
    (an override of a field it lacks is ignored here; :func:`check_overrides` refuses one that fits no policy).
    A field only an override names is added, after the declared ones."""
    cls = load_policy_class(ref)
    fields = {f.name for f in dataclasses.fields(cls.Config)}
    space = declared_space(ref)
    for item in overrides:
        name, _, text = _split(item)
        if name in fields:
            old = space.get(name)
            space[name] = parse_dim(name, text, old.native if old else "")
    if not space:
        raise InvalidConfig(
            f"policy {ref!r} declares no search space (TUNABLE) and no --space names one of its fields "
            f"({', '.join(sorted(fields)) or 'it has none'}); give e.g. --space FIELD=LOW:HIGH"
        )
    return space


def check_overrides(refs: Sequence[str], overrides: Sequence[str]) -> None:
    """Every ``--space`` override names a field of at least one of the policies, with a "did you mean"."""
    fields: set[str] = set()
    for ref in refs:
        fields |= {f.name for f in dataclasses.fields(load_policy_class(ref).Config)}
    for item in overrides:
        name, _, _ = _split(item)
        if name not in fields:
            raise UnknownName("--space field (of the policies tuned)", name, fields)


def _split(item: str) -> tuple[str, str, str]:
    name, sep, text = item.partition("=")
    if not sep or not name.strip() or not text.strip():
        raise InvalidConfig(
            f"--space {item!r} is not FIELD=LOW:HIGH (or FIELD=A,B,C), e.g. --space trigger_ratio=0.5:0.95"
        )
    return name.strip(), sep, text.strip()


def grid_size(space: Mapping[str, Dim]) -> int | None:
    """How many settings an exhaustive search takes; None when a field is a continuous range."""
    if not all(d.countable for d in space.values()):
        return None
    return math.prod(d.size() for d in space.values())


def suggest(trial: Any, space: Mapping[str, Dim]) -> dict[str, str]:
    """Ask an Optuna trial for a value of every field; the values as ``-P`` strings."""
    out: dict[str, str] = {}
    for d in space.values():
        if d.choices:
            v: Any = trial.suggest_categorical(d.name, list(d.choices))
        elif d.integer:
            assert d.low is not None and d.high is not None
            v = trial.suggest_int(d.name, int(d.low), int(d.high), step=int(d.step or 1), log=d.log)
        else:
            assert d.low is not None and d.high is not None
            v = trial.suggest_float(d.name, d.low, d.high, step=d.step, log=d.log)
            if d.step:
                v = round(v, 10)
        out[d.name] = format_number(v)
    return out


def native_terms(space: Mapping[str, Dim], params: Mapping[str, str]) -> list[str]:
    """The settings in the real system's own terms, where the policy names them (``TUNABLE_NATIVE``)."""
    out = []
    for name, value in params.items():
        d = space.get(name)
        if d is not None and d.native:
            out.append(d.native.replace("{value}", value).replace("{pct}", _pct(value)))
    return out


def _pct(value: str) -> str:
    try:
        return format_number(round(float(value) * 100, 4))
    except ValueError:
        return value


__all__ = [
    "Dim",
    "check_overrides",
    "declared_space",
    "format_number",
    "grid_size",
    "native_terms",
    "parse_dim",
    "policy_space",
    "suggest",
]
