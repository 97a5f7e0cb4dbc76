"""Bundled compaction policies, one module per modelled system, each registered by name in ``POLICIES``.

Every module of this package other than the contract (``base``) and its ``helpers`` is imported here, so
a new policy module registers itself by being added to the folder; sorted by name, so the registry's
order (and ``csim list policies``) does not depend on the file system.
"""

import importlib
import pkgutil

from policies.base import POLICIES, Plan, Policy, make_policy, register

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name not in {"base", "helpers"}:
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["POLICIES", "Plan", "Policy", "make_policy", "register"]
