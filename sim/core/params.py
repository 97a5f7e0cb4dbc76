"""Parameters parsed from strings: the one place a command line's or a spec's text becomes a typed value.

``-P name=value`` (a policy), ``-R name=value`` (the summariser), ``-S name=value`` (a scenario), a sweep spec's
tables and seeds all come here: :func:`parse_kv` splits the pairs, :func:`coerce` parses one value by the type
its field declares, :func:`make_config` builds a frozen config from them with a "did you mean" for a misspelt
name, and :func:`format_value` writes a value back as a label shows it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from sim.core.errors import InvalidConfig, UnknownName


def parse_kv(items: Iterable[str] | None, what: str = "-P") -> dict[str, str]:
    """``["a=1", "b=x"]`` to ``{"a": "1", "b": "x"}``; a malformed item names the flag and the fix."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidConfig(f"{what} {item!r} is not name=value (e.g. {what} trigger_ratio=0.8)")
        out[key.strip()] = value.strip()
    return out


def coerce(name: str, raw: Any, tp: Any) -> Any:
    """``raw`` as a value of type ``tp`` (a field's annotation): a string is parsed (``"0.8"``, ``"150_000"``,
    ``"true"``, ``"unset"`` for an optional, ``"Read,Grep"`` for a tuple of names); any other value is taken as it
    is. A string that does not parse names the parameter and the type."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (tuple, frozenset) and args[:1] == (str,) and isinstance(raw, (str, list, tuple)):
        # A list of names: "-P exclude_tools=Read,Grep" or a TOML list; "" is none.
        items = [s.strip() for s in raw.split(",") if s.strip()] if isinstance(raw, str) else list(raw)
        return tuple(items) if origin is tuple else frozenset(items)
    if not isinstance(raw, str):
        return raw
    if origin in (typing.Union, types.UnionType):
        if raw.lower() in ("none", "null", "unset", "") and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return coerce(name, raw, inner[0]) if len(inner) == 1 else raw
    if origin is Literal:
        if raw not in args:
            raise InvalidConfig(f"parameter {name}={raw!r} must be one of {', '.join(map(repr, args))}")
        return raw
    try:
        if tp is bool:
            if raw.lower() in ("true", "1", "yes", "on"):
                return True
            if raw.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError(raw)
        if tp is int:
            return int(raw.replace("_", ""))
        if tp is float:
            return float(raw)
    except ValueError:
        raise InvalidConfig(f"parameter {name}={raw!r} is not a valid {tp.__name__}") from None
    return raw


def make_config(cfg_cls: type, params: Mapping[str, Any], owner: str = "") -> Any:
    """Build a frozen config from ``name -> value`` (strings are coerced by the field's type)."""
    hints = typing.get_type_hints(cfg_cls)
    known = {f.name for f in dataclasses.fields(cfg_cls)}
    kwargs = {}
    for k, v in params.items():
        if k not in known:
            raise UnknownName(f"parameter of {owner or cfg_cls.__name__}", k, known)
        kwargs[k] = coerce(k, v, hints[k])
    try:
        return cfg_cls(**kwargs)
    except TypeError as exc:
        raise InvalidConfig(f"bad parameters {dict(params)!r}: {exc}") from None


def format_value(v: Any) -> str:
    """A parameter value as a label shows it: ``0.8``, ``150000``, ``true``, ``unset``."""
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def parse_seeds(value: Any) -> tuple[int, ...]:
    """``"0-19"``, ``"0,3,7-9"``, an int, or a list of ints: the sorted distinct seeds."""
    if isinstance(value, bool):
        raise InvalidConfig(f"seeds {value!r} must be like 0-19, 0,3,5 or a list of integers")
    if isinstance(value, int):
        return (value,)
    items: list[Any]
    if isinstance(value, str):
        items = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise InvalidConfig(f"seeds {value!r} must be like 0-19, 0,3,5 or a list of integers")
    out: set[int] = set()
    for item in items:
        try:
            if isinstance(item, int) and not isinstance(item, bool):
                out.add(item)
            elif isinstance(item, str) and "-" in item.strip("-"):
                lo, _, hi = item.partition("-")
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError(item)
                out.update(range(a, b + 1))
            else:
                out.add(int(item))
        except ValueError:
            raise InvalidConfig(f"seeds {value!r}: {item!r} is not an integer or a range like 0-19") from None
    if any(s < 0 for s in out):
        raise InvalidConfig(f"seeds {value!r} must be non-negative")
    return tuple(sorted(out))


def parse_values(raw: Any) -> tuple[str, ...]:
    """A parameter's values: a TOML list or scalar, or a flag's comma-separated string."""
    if isinstance(raw, str):
        vals = [v.strip() for v in raw.split(",")]
    elif isinstance(raw, (list, tuple)):
        vals = [format_value(v) for v in raw]
    else:
        vals = [format_value(raw)]
    if not vals or any(v == "" for v in vals):
        raise InvalidConfig(f"parameter values {raw!r}: an empty value (write name=a,b,c with no empty items)")
    return tuple(dict.fromkeys(vals))


__all__ = ["coerce", "format_value", "make_config", "parse_kv", "parse_seeds", "parse_values"]
