"""What identifies a run and its parts, all in one place, each for its own job:

- :func:`spec_hash` (``params_hash``): a policy's name and full config, as its ``spec()`` gives them; the same
  policy settings, whatever they run on.
- :func:`config_label` (``config``): the policy and the parameters a sweep gave, for people to read; unique
  within a sweep.
- :func:`run_id` (``run_id``): one run of the engine: policy spec, conversation id, seed and the whole run
  config; what the engine's own tables carry.
- :func:`run_key` (``run_key``): one run of a sweep: the run id's inputs plus the conversation's content
  (:func:`conversation_checksum`) and the code's version, so a sweep never reuses a run made from other
  content or other code; what a results folder is keyed by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from sim.core.conversation import Conversation
from sim.core.log import to_plain
from sim.core.params import format_value


def spec_hash(spec: Mapping[str, Any]) -> str:
    """A policy's identity: SHA-256 of its spec (name and full config), 12 hex digits."""
    blob = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def run_id(spec: Mapping[str, Any], conversation: str, seed: int, settings: Mapping[str, Any]) -> str:
    """A stable id of one engine run from the policy spec, the conversation id, the seed and the run config's
    fields (``settings``, :func:`dataclasses.asdict` of it): same inputs, same id. 16 hex digits."""
    blob = json.dumps([spec, conversation, seed, settings], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def run_key(
    policy_spec: Mapping[str, Any],
    conversation: str,
    checksum: str,
    seed: int,
    version: str,
    run_config: Mapping[str, Any],
) -> str:
    """SHA-256 of what determines a run's outcome: policy spec, conversation id and content, seed, package
    version and the whole RunConfig (so a changed window or model never reuses a stale run)."""
    blob = json.dumps(
        [policy_spec, conversation, checksum, seed, version, run_config],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def config_label(policy: str, params: Mapping[str, Any]) -> str:
    """``cloudflare-os trigger_ratio=0.8``: the policy and its given parameters, sorted by name."""
    return " ".join([policy, *(f"{k}={format_value(params[k])}" for k in sorted(params))])


def conversation_checksum(conv: Conversation) -> str:
    """SHA-256 of the conversation's canonical JSON: identifies its content, whatever its id."""
    blob = json.dumps(to_plain(conv), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


__all__ = ["config_label", "conversation_checksum", "run_id", "run_key", "spec_hash"]
