"""Provider usage objects as :class:`~sim.core.conversation.Usage`: one reader per shape, shared by the importers.

Ours keeps four non-negative counts that add up to the prompt: uncached input, cache reads, cache
writes, and output. The shapes differ in what ``input`` means:

- Anthropic Messages: ``input_tokens`` is already uncached; ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens`` are apart.
- OpenAI Responses: ``input_tokens`` includes ``input_tokens_details.cached_tokens``.
- OpenAI chat completions and LiteLLM: ``prompt_tokens`` is the whole prompt. Cache reads come from
  ``cache_read_input_tokens`` (Anthropic through LiteLLM), else ``prompt_tokens_details.cached_tokens``
  (OpenAI), else ``prompt_cache_hit_tokens`` (DeepSeek); cache writes from ``cache_creation_input_tokens``.
  In the OpenHands event sample an Anthropic reply shows ``prompt_tokens`` 4646 = 3482 read + 1158
  written + 6 uncached. An older LiteLLM left cache writes out of ``prompt_tokens``; where the parts
  exceed the total, the writes are taken as extra.

A malformed object raises :class:`~sim.formats._common.BadRecord` naming the field.
"""

from __future__ import annotations

from typing import Any, cast

from sim.core.conversation import Usage
from sim.formats._common import BadRecord, check, get


def _count(raw: dict[str, Any], key: str, what: str) -> int:
    value = get(raw, key, int, what, 0)
    if value < 0:
        raise BadRecord(f"{what} {key!r} is negative ({value})")
    return cast(int, value)


def anthropic_usage(raw: Any, what: str) -> Usage | None:
    """Anthropic Messages usage (``input_tokens`` already uncached); None when there is none."""
    if raw is None:
        return None
    what = f"{what} usage"
    check(raw, dict, what)
    return Usage(
        input_tokens=_count(raw, "input_tokens", what),
        output_tokens=_count(raw, "output_tokens", what),
        cache_read_tokens=_count(raw, "cache_read_input_tokens", what),
        cache_write_tokens=_count(raw, "cache_creation_input_tokens", what),
    )


def responses_usage(raw: Any, what: str) -> Usage | None:
    """OpenAI Responses usage: the cached tokens are taken out of ``input_tokens``."""
    if raw is None:
        return None
    what = f"{what} usage"
    check(raw, dict, what)
    total_in = _count(raw, "input_tokens", what)
    cached = _count(get(raw, "input_tokens_details", dict, what, {}), "cached_tokens", f"{what} input_tokens_details")
    if cached > total_in:
        raise BadRecord(f"{what} has cached_tokens {cached} above input_tokens {total_in}")
    return Usage(
        input_tokens=total_in - cached, output_tokens=_count(raw, "output_tokens", what), cache_read_tokens=cached
    )


def chat_usage(raw: Any, what: str) -> Usage | None:
    """OpenAI chat-completions (or LiteLLM) usage: cache reads and writes are taken out of ``prompt_tokens``."""
    if raw is None:
        return None
    what = f"{what} usage"
    check(raw, dict, what)
    prompt = _count(raw, "prompt_tokens", what)
    details = get(raw, "prompt_tokens_details", dict, what, {})
    if raw.get("cache_read_input_tokens") is not None:
        read = _count(raw, "cache_read_input_tokens", what)
    elif details.get("cached_tokens") is not None:
        read = _count(details, "cached_tokens", f"{what} prompt_tokens_details")
    else:
        read = _count(raw, "prompt_cache_hit_tokens", what)
    if read > prompt:
        raise BadRecord(f"{what} has {read} cached tokens above prompt_tokens {prompt}")
    write = _count(raw, "cache_creation_input_tokens", what)
    uncached = prompt - read - write if prompt - read - write >= 0 else prompt - read
    return Usage(
        input_tokens=uncached,
        output_tokens=_count(raw, "completion_tokens", what),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def any_usage(raw: Any, what: str) -> Usage | None:
    """Whichever of the three shapes ``raw`` is (LiteLLM passes any of them through)."""
    if raw is None:
        return None
    check(raw, dict, f"{what} usage")
    if "prompt_tokens" not in raw and "input_tokens" in raw:
        return responses_usage(raw, what) if "input_tokens_details" in raw else anthropic_usage(raw, what)
    return chat_usage(raw, what)
