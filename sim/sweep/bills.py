"""The recorded bill of a recorded conversation: its own recorded usage, priced.

A recorded conversation (a Claude Code transcript, a cassette) carries per-reply provider usage: prompt tokens
with cache reads and writes, and output tokens. Priced request by request, that is what the session cost
when it was recorded (at list prices: the price table's, for the model each reply names, at the reply's own
date), the number a user quotes as "what Claude Code cost". A simulated cost in ``csim compare`` is what the
same conversation would cost replayed under a policy by the simulator; the two are different numbers, and
``csim compare`` prints the recorded one beside the simulated ones so neither is quoted as the other.

It is priced the way :mod:`sim.calibration.fidelity` prices recorded usage (the 1-hour share of the writes from
``meta["cache_write_1h"]``, replies whose API id repeats skipped as double-counted, an unknown model priced as
the default), except that each reply is priced at its own recorded timestamp instead of the replay's clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from sim.core.conversation import Conversation
from sim.core.cost import Pricer
from sim.core.errors import CsimError, UnknownName
from sim.core.model import DEFAULT_MODEL
from sim.replay.billing import price_epoch, recorded_model
from sim.sweep.grid import conversations_of  # the sweep's own reader, so the ids match the runs table
from sim.sweep.spec import Source

BILL_COLUMNS = ["source", "conversation", "recorded_requests", "recorded_cost_usd"]


def _pricer(model: str, memo: dict[str, Pricer]) -> Pricer:
    if model not in memo:
        try:
            memo[model] = Pricer(model, "anthropic")
        except UnknownName:
            memo[model] = Pricer(DEFAULT_MODEL, "anthropic")
    return memo[model]


def _when(stamp: Any, fallback: datetime | None) -> datetime | None:
    if isinstance(stamp, str) and stamp.strip():
        try:
            dt = datetime.fromisoformat(stamp.strip().replace("Z", "+00:00"))
        except ValueError:
            return fallback
        return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)
    return stamp if isinstance(stamp, datetime) else fallback


def recorded_bill(conv: Conversation) -> tuple[int, float] | None:
    """(priced requests, USD) of the conversation's recorded usage; None when no reply carries usage."""
    epoch = price_epoch(conv)
    default = recorded_model(conv) or DEFAULT_MODEL
    memo: dict[str, Pricer] = {}
    total, n = 0.0, 0
    for m in conv.messages:
        u = m.usage
        if m.role != "assistant" or u is None or u.prompt_tokens <= 0 or m.meta.get("api_id_repeated"):
            continue
        one_hour = min(int(m.meta.get("cache_write_1h", 0) or 0), u.cache_write_tokens)
        model = m.meta.get("model")
        pricer = _pricer(model if isinstance(model, str) and model else default, memo)
        at = _when(m.meta.get("timestamp"), epoch) if epoch is not None else None
        total += pricer.cost(
            u.prompt_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens - one_hour, one_hour, at
        )
        n += 1
    return (n, total) if n else None


def recorded_bills(sources: Iterable[dict[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """One row per recorded conversation with usage in the sweep's sources (the manifest's ``spec.sources``),
    and notes for sources that could not be read again (moved, deleted): their bill is left out, said why."""
    rows, notes = [], []
    for plain in sources:
        if plain.get("kind") == "scenario":
            continue
        try:
            src = Source(
                plain["kind"],
                plain["name"],
                format=plain.get("format", "auto"),
                lenient=bool(plain.get("lenient", False)),
            )
            for _, conv in conversations_of(replace(src, probes=False), ()):
                bill = recorded_bill(conv)
                if bill is not None:
                    rows.append(
                        {
                            "source": src.label,
                            "conversation": conv.id,
                            "recorded_requests": bill[0],
                            "recorded_cost_usd": bill[1],
                        }
                    )
        except (CsimError, OSError, KeyError) as e:
            notes.append(f"recorded bill of {plain.get('name')!r} not shown: {e}")
    return pd.DataFrame(rows, columns=BILL_COLUMNS), notes
