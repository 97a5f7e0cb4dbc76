"""Bundled compaction policies, one module per modelled system, each registered by name in ``POLICIES``, and the
registry's loader: :func:`make_policy` and :func:`load_policy_class` build a policy from a registered name or a
user's ``package.module:Class``.

A new policy module registers itself by being added to the folder: its ``@register("name")`` lines are read from
the sources here (:func:`registered_in_sources`), so asking for a name imports only the module that registers it (a
run of one policy does not import the other sixty modules: 0.09 s of CPU, a fifth of a replay of the largest shared
session, measured as ``POLICIES.get("none")`` against ``POLICIES.names()`` in fresh processes), and listing the
registry, or a name no source registers, imports every module (sorted by name, so the registry's order, and
``csim list policies``, does not depend on the file system). A test holds the names read from the sources to the
names the modules register when imported.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policies.base import POLICIES, Plan, Policy, register
from sim.core.errors import InvalidConfig
from sim.core.params import make_config

#: A policy registration as the sources write it: ``@register("name")`` at the start of a line.
_REGISTERS = re.compile(r'^@register\("([^"]+)"\)', re.MULTILINE)


def _modules() -> list[str]:
    return sorted(i.name for i in pkgutil.iter_modules(__path__) if i.name not in {"base", "helpers"})


@functools.cache
def _registers(module: str) -> tuple[str, ...]:
    """The policy names the source of ``module`` (a module of this package) registers."""
    source = Path(__path__[0], f"{module}.py")
    return tuple(_REGISTERS.findall(source.read_text(encoding="utf-8"))) if source.is_file() else ()


def registered_in_sources() -> dict[str, str]:
    """Policy name -> the module whose source registers it."""
    return {name: f"{__name__}.{module}" for module in _modules() for name in _registers(module)}


def _discover(name: str | None) -> None:
    """Import the module that registers ``name``; every module for None (or a name no source registers). The
    sources are read the likeliest first: a module whose name begins the policy's (``claude_code`` for
    ``claude-code-microcompact``), so a run reads one or two files, not sixty."""
    if name is not None:
        key = name.replace("-", "_")
        modules = _modules()
        for module in sorted(modules, key=lambda m: (not key.startswith(m), -len(m) if key.startswith(m) else 0)):
            if name in _registers(module):
                importlib.import_module(f"{__name__}.{module}")
                return
    for module in _modules():
        importlib.import_module(f"{__name__}.{module}")


POLICIES.discover_with(_discover)


def load_policy_class(ref: str) -> type[Policy[Any]]:
    """A registered name, or ``package.module:attr`` naming a user's Policy subclass."""
    if ":" not in ref:
        return POLICIES.get(ref)
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidConfig(f"cannot import {module_name!r} for policy {ref!r}: {exc}. Is it on PYTHONPATH?") from None
    obj = getattr(module, attr, None)
    if not (isinstance(obj, type) and issubclass(obj, Policy)):
        raise InvalidConfig(f"{ref!r} is not a subclass of policies.base.Policy (got {obj!r})")
    if not obj.name:
        obj.name = ref
    return obj


def make_policy(ref: str, params: Mapping[str, Any] | None = None) -> Policy[Any]:
    """Build a policy from a registered name (or ``module:attr``) and parameters."""
    cls = load_policy_class(ref)
    return cls(make_config(cls.Config, params or {}, f"policy {cls.name or ref!r}"))


__all__ = ["POLICIES", "Plan", "Policy", "load_policy_class", "make_policy", "register", "registered_in_sources"]
