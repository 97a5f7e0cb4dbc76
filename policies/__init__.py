"""Bundled compaction policies, one module per family, each registered by name in ``POLICIES``."""

from policies import baselines, cloudflare_os, effect_agent  # noqa: F401  (registration)
from policies.base import POLICIES, Plan, Policy, make_policy, register

__all__ = ["POLICIES", "Plan", "Policy", "make_policy", "register"]
