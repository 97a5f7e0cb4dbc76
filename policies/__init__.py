"""Bundled compaction policies, one module per modelled system, each registered by name in ``POLICIES``, and the
registry's loader: :func:`make_policy` and :func:`load_policy_class` build a policy from a registered name or a
user's ``package.module:Class``.

Every module of this package other than the contract (``base``) and its ``helpers`` is imported here, so
a new policy module registers itself by being added to the folder; sorted by name, so the registry's
order (and ``csim list policies``) does not depend on the file system.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from policies.base import POLICIES, Plan, Policy, register
from sim.core.errors import InvalidConfig
from sim.core.params import make_config

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name not in {"base", "helpers"}:
        importlib.import_module(f"{__name__}.{_info.name}")


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


__all__ = ["POLICIES", "Plan", "Policy", "load_policy_class", "make_policy", "register"]
