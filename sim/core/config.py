"""The run configuration and its one schema: ``csim run`` flags and a sweep spec's ``[run]`` keys alike.

Every option is a field of :class:`RunConfig` or of the configs it holds (:class:`~sim.core.model.ModelConfig`,
:class:`~sim.core.budgets.Budgets`, :class:`~sim.core.agent.AgentConfig`), declared with
``metadata={"flag": ..., "help": ...}``: the flag's name, its
help, its type, choices (a ``Literal``) and default all come from the field, so the command line, the spec
format and the dataclasses cannot drift apart. Two options are tables rather than fields: ``summariser``
(``-R NAME=VALUE``, the retention model's parameters) and ``calibration`` (a fit's file, matched to each
source when a run starts). The command line's flags are made from the same fields (:mod:`sim.cli.options`).

Light on purpose (no numpy, no engine): ``csim --help`` imports it.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, Literal

from sim.core.agent import AgentConfig
from sim.core.anchors import Anchors
from sim.core.budgets import Budgets
from sim.core.counting import Calibration
from sim.core.errors import InvalidConfig, UnknownName
from sim.core.model import ModelConfig
from sim.core.params import format_value, make_config, parse_kv
from sim.core.retention import SummariserConfig


@dataclass(frozen=True)
class RunConfig:
    """Everything about a run except the policy and the conversation."""

    model: ModelConfig = field(default_factory=ModelConfig)
    budgets: Budgets = field(default_factory=Budgets)
    summariser: SummariserConfig = field(default_factory=SummariserConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    tokenizer: str = field(
        default="cl100k_base", metadata={"flag": "tokenizer", "help": "cl100k_base (exact, offline) or chars4"}
    )
    run_status: Literal["auto", "appended", "off"] = field(
        default="auto",
        metadata={"flag": "run-status", "help": "append the run-status line: auto = as the policy's system does"},
    )
    cache: Literal["provider", "off"] = field(
        default="provider",
        metadata={
            "flag": "cache",
            "help": "prompt caching: provider = the model's provider's cache rules (sim.core.cache), off = every "
            "prompt token priced uncached",
        },
    )
    cache_ttl: Literal["policy", "5m", "1h"] = field(
        default="policy",
        metadata={
            "flag": "cache-ttl",
            "help": "TTL of the client's Anthropic cache breakpoints: policy = as the modelled client places them "
            "(claude-code 1h, others 5m), or 5m / 1h for all",
        },
    )
    seed: int = field(default=0, metadata={"flag": "seed", "help": "the run's one integer seed"})
    strict: bool = field(default=False, metadata={"flag": "strict", "help": "stop at the first invariant violation"})
    deep_checks: bool = False
    #: Fitted map from the engine's prompt count to the provider's (``csim calibrate``); None = raw counts.
    calibration: Calibration | None = None
    accounting: Literal["anchored", "counted"] = field(
        default="anchored",
        metadata={
            "flag": "accounting",
            "help": "anchored = a recording's messages at the sizes its recorded usage gives them, the rest "
            "estimated (with --calibration, else counted); counted = every message counted by the tokenizer "
            "(and --calibration applied to whole requests)",
        },
    )
    #: Provider-counted sizes of the messages (sim.core.anchors), given explicitly; None = derived from the
    #: recording when ``accounting`` is ``anchored``.
    anchors: Anchors | None = None

    def __post_init__(self) -> None:
        if self.run_status not in ("auto", "appended", "off"):
            raise InvalidConfig(f"run_status={self.run_status!r} must be 'auto', 'appended' or 'off'")
        if self.cache not in ("provider", "off"):
            raise InvalidConfig(f"cache={self.cache!r} must be 'provider' or 'off'")
        if self.accounting not in ("anchored", "counted"):
            raise InvalidConfig(f"accounting={self.accounting!r} must be 'anchored' or 'counted'")
        if self.cache_ttl not in ("policy", "5m", "1h"):
            raise InvalidConfig(f"cache_ttl={self.cache_ttl!r} must be 'policy', '5m' or '1h'")
        if not 0 <= self.seed < 2**63:
            raise InvalidConfig(f"seed={self.seed!r} must be a non-negative integer below 2**63")


@dataclass(frozen=True)
class RunOption:
    """One run option: its flag (``--window``) and key (``window``), where it lives in :class:`RunConfig`,
    its type and choices, default and help."""

    flag: str
    path: tuple[str, ...]
    kind: type
    optional: bool
    choices: tuple[str, ...] | None
    default: Any
    help: str
    group: str

    @property
    def key(self) -> str:
        return self.flag.replace("-", "_")


_GROUPS: tuple[tuple[tuple[str, ...], type, str], ...] = (
    ((), RunConfig, "model and run"),
    (("model",), ModelConfig, "model and run"),
    (("budgets",), Budgets, "budgets (unset = unlimited)"),
    (("agent",), AgentConfig, "closed-loop agent (sim.core.agent)"),
)


def _field_type(cls: type, f: Field[Any]) -> tuple[type, bool, tuple[str, ...] | None]:
    """(scalar type, optional, choices) of a field's annotation, resolved in its module."""
    tp = eval(f.type, vars(sys.modules[cls.__module__])) if isinstance(f.type, str) else f.type  # noqa: S307
    args = typing.get_args(tp)
    optional = type(None) in args
    if optional:
        (tp,) = [a for a in args if a is not type(None)]
    if typing.get_origin(tp) is Literal:
        return str, optional, tuple(typing.get_args(tp))
    return tp, optional, None


def run_options() -> tuple[RunOption, ...]:
    """Every option with a flag, in declaration order (the seed first)."""
    out = []
    for path, cls, group in _GROUPS:
        for f in fields(cls):
            flag = f.metadata.get("flag")
            if not flag:
                continue
            kind, optional, choices = _field_type(cls, f)
            out.append(RunOption(flag, (*path, f.name), kind, optional, choices, f.default, f.metadata["help"], group))
    return tuple(out)


def run_option_defaults() -> dict[str, Any]:
    """Every ``[run]`` key but the seed, with its default (what a sweep's run key holds)."""
    out: dict[str, Any] = {o.key: o.default for o in run_options() if o.key != "seed"}
    out["summariser"] = {}
    out["calibration"] = None
    return out


def _checked(o: RunOption, key: str, value: Any, where: str) -> Any:
    """A ``[run]`` value (TOML-typed, or a flag argparse typed) checked against its option: its type and choices."""
    if value is None and (o.optional or o.default is None):
        return None
    if o.kind is bool:
        if isinstance(value, bool):
            return value
        raise InvalidConfig(f"{where}: run option {key}={value!r} must be true or false")
    try:
        out = o.kind(value) if not isinstance(value, bool) else value
    except (TypeError, ValueError):
        raise InvalidConfig(f"{where}: run option {key}={value!r} is not a valid {o.kind.__name__}") from None
    if o.choices is not None and out not in o.choices:
        raise InvalidConfig(f"{where}: run option {key}={value!r} must be one of {', '.join(o.choices)}")
    return out


def normalise_run(raw: Mapping[str, Any], where: str) -> tuple[tuple[str, Any], ...]:
    """A ``[run]`` table (or parsed flags) checked against the schema, defaults filled in, sorted by key."""
    options = {o.key: o for o in run_options() if o.key != "seed"}
    out = run_option_defaults()
    for key, value in raw.items():
        dest = key.replace("-", "_")
        if dest == "seed":
            raise InvalidConfig(f"{where}: the run seed comes from the sweep's seeds, not [run] seed")
        if dest == "summariser":
            if not isinstance(value, Mapping):
                raise InvalidConfig(f"{where}: summariser must be a table, e.g. summariser = {{ keep_recall = 0.3 }}")
            out[dest] = {str(k): format_value(v) for k, v in sorted(value.items())}
        elif dest == "calibration":
            out[dest] = None if value is None else str(value)
        elif dest in options:
            out[dest] = _checked(options[dest], key, value, where)
        else:
            raise UnknownName(f"run option in {where}", key, [*options, "summariser", "calibration"])
    return tuple(sorted(out.items()))


def run_config(values: Mapping[str, Any], seed: int | None = None) -> RunConfig:
    """A :class:`RunConfig` from option values by key (flags parsed by argparse, or a normalised ``[run]``
    table); missing keys take their defaults. ``summariser``: ``NAME=VALUE`` strings or a mapping.
    ``calibration`` is not read here: a fit is matched to each source (``sim.calibration.files.load_for_source``)."""

    parts: dict[tuple[str, ...], dict[str, Any]] = {(): {}, ("model",): {}, ("budgets",): {}, ("agent",): {}}
    for o in run_options():
        if o.key in values and values[o.key] is not None:
            parts[o.path[:-1]][o.path[-1]] = values[o.key]
    if seed is not None:
        parts[()]["seed"] = seed
    raw = values.get("summariser") or {}
    kv = dict(raw) if isinstance(raw, Mapping) else parse_kv(list(raw), "-R")
    return RunConfig(
        model=ModelConfig(**parts[("model",)]),
        budgets=Budgets(**parts[("budgets",)]),
        agent=AgentConfig(**parts[("agent",)]),
        summariser=make_config(SummariserConfig, kv, "the summariser (-R)"),
        **parts[()],
    )


__all__ = [
    "RunConfig",
    "RunOption",
    "normalise_run",
    "run_config",
    "run_option_defaults",
    "run_options",
]
