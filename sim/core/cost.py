"""Cost of a request from the maintained ``genai-prices`` table.

``genai-prices`` computes in Decimal with tier handling; that is exact but costs ~0.3 ms a call,
which a sweep of a million requests cannot afford. :class:`Pricer` therefore reads the model's
rates once and, for requests below the first price tier (every request of a 200K-window model on
Sonnet's 200K tier), multiplies directly; above a tier it defers to the library. A test checks the
fast path against ``genai_prices.calc_price`` on random usages.

Input tokens here are the total prompt, cached or not, as ``genai-prices`` counts them; cache reads
and writes (5-minute and 1-hour, :mod:`sim.core.cache`) are subsets priced at their own rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Any

from sim.core.errors import UnknownName

#: The date a request without a date of its own is priced at: every request of a synthetic scenario or of a
#: scripted conversation (no timestamps), and of a trace whose clock starts at the Unix epoch. A recorded request is
#: priced at its own time (``at``; :mod:`sim.replay.billing` says which), as the provider billed it: the table's
#: price of a model changes over time (Claude Opus 4.6 lost its long-context tier on 2026-03-13). A constant, so
#: results never depend on the day they were computed.
PRICE_DATE = datetime(2026, 12, 1, tzinfo=UTC)


def _rate(price: Any) -> tuple[float, float]:
    """(base $/MTok, token count where the first tier starts; inf when untiered)."""
    if price is None:
        return 0.0, float("inf")
    if isinstance(price, (Decimal, int, float)):
        return float(price), float("inf")
    tiers = getattr(price, "tiers", None) or []
    start = min((t.start for t in tiers), default=float("inf"))
    return float(price.base), float(start)


@dataclass(frozen=True)
class Pricer:
    """Prices requests for one model."""

    model: str
    provider: str

    def __post_init__(self) -> None:
        _model_info(self.model, self.provider)  # fail early with a clear error

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read: int = 0,
        cache_write: int = 0,
        cache_write_1h: int = 0,
        at: datetime | None = None,
    ) -> float:
        """USD for one request made at ``at`` (None: :data:`PRICE_DATE`). ``input_tokens`` is the whole prompt; of
        it, ``cache_read`` tokens were read from the cache, ``cache_write`` written at the standard (5-minute)
        write rate and ``cache_write_1h`` at the 1-hour rate (the standard write rate where the table has none)."""
        at = at or PRICE_DATE
        r_in, r_out, r_cr, r_cw, r_cw1h, first_tier = _rates(
            self.model, self.provider, _active(self.model, self.provider, at)
        )
        if input_tokens < first_tier:
            uncached = input_tokens - cache_read - cache_write - cache_write_1h
            return (
                uncached * r_in
                + output_tokens * r_out
                + cache_read * r_cr
                + cache_write * r_cw
                + cache_write_1h * r_cw1h
            ) / 1e6
        return _exact(
            self.model, self.provider, input_tokens, output_tokens, cache_read, cache_write, cache_write_1h, at
        )

    def split(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read: int = 0,
        cache_write: int = 0,
        cache_write_1h: int = 0,
        at: datetime | None = None,
    ) -> tuple[float, float, float, float]:
        """USD of one request (made at ``at``) by component: uncached input, cache reads, cache writes (both
        TTLs), output.

        They sum to :meth:`cost`: below the first price tier each is its tokens at the base rate; above it the
        library's exact total is shared out in the proportions of the base rates."""
        at = at or PRICE_DATE
        r_in, r_out, r_cr, r_cw, r_cw1h, first_tier = _rates(
            self.model, self.provider, _active(self.model, self.provider, at)
        )
        uncached = input_tokens - cache_read - cache_write - cache_write_1h
        parts = (
            uncached * r_in / 1e6,
            cache_read * r_cr / 1e6,
            (cache_write * r_cw + cache_write_1h * r_cw1h) / 1e6,
            output_tokens * r_out / 1e6,
        )
        if input_tokens < first_tier:
            return parts
        total, base = self.cost(input_tokens, output_tokens, cache_read, cache_write, cache_write_1h, at), sum(parts)
        return tuple(x * total / base for x in parts) if base else parts  # type: ignore[return-value]

    def rates(self, at: datetime | None = None) -> tuple[float, float, float, float, float]:
        """Base $/MTok at ``at`` (None: :data:`PRICE_DATE`): input, output, cache read, cache write (5 minutes),
        cache write (1 hour)."""
        return _rates(self.model, self.provider, _active(self.model, self.provider, at or PRICE_DATE))[:5]


def _active(model: str, provider: str, at: datetime) -> int:
    """Which of the model's prices the table applies at ``at``: the index of its last price whose constraint (a
    start date, a time of day) holds then, as ``genai_prices`` ``ModelInfo.get_prices`` chooses it (the first
    when none holds); -1 when the model has one price for all time."""
    prices = _model_info(model, provider).prices
    if not isinstance(prices, list):
        return -1
    for i in range(len(prices) - 1, -1, -1):
        constraint = prices[i].constraint
        if constraint is None or constraint.active(at):
            return i
    return 0


@cache
def _rates(model: str, provider: str, active: int) -> tuple[float, float, float, float, float, float]:
    """Base $/MTok for input, output, cache read, cache write and 1-hour cache write, and where the first price
    tier starts, of the model's price number ``active`` (:func:`_active`)."""
    prices = _model_info(model, provider).prices
    mp = prices if active < 0 else prices[active].prices
    (r_in, t1), (r_out, t2), (r_cr, t3), (r_cw, t4) = (
        _rate(mp.input_mtok),
        _rate(mp.output_mtok),
        _rate(mp.cache_read_mtok),
        _rate(mp.cache_write_mtok),
    )
    one_hour = getattr(mp, "cache_write_1h_mtok", None)
    r_cw1h, t5 = _rate(one_hour) if one_hour is not None else (r_cw, t4)
    return r_in, r_out, r_cr, r_cw, r_cw1h, min(t1, t2, t3, t4, t5)


@cache
def _model_info(model: str, provider: str) -> Any:
    """The table's entry for ``model`` at ``provider`` (``genai_prices`` ``ModelInfo``), prices for all dates."""
    from genai_prices import data_snapshot

    snap = data_snapshot.get_snapshot()
    try:
        prov, found = snap.find_provider_model(model, None, provider, None)
    except LookupError:
        prov, found = None, None
    if found is None:
        raise UnknownName(
            "model in the genai-prices table",
            f"{provider}:{model}",
            [m.id for m in prov.models] if prov is not None else _models_of(snap, provider),
        )
    return found


def _models_of(snap: Any, provider: str) -> list[str]:
    """The model ids the table has for ``provider`` (all when the provider is unknown too), for the error."""
    found = [p for p in snap.providers if p.id == provider]
    return sorted(m.id for p in found for m in p.models) or sorted(p.id for p in snap.providers)


def _exact(
    model: str, provider: str, i: int, o: int, cr: int, cw: int, cw1h: int = 0, at: datetime = PRICE_DATE
) -> float:
    from genai_prices import Usage, calc_price

    writes: dict[str, int] = {"cache_write_tokens": cw + cw1h}
    if cw1h:
        writes["cache_write_1h_tokens"] = cw1h
    usage = Usage(input_tokens=i, output_tokens=o, cache_read_tokens=cr, **writes)
    return float(calc_price(usage, model_ref=model, provider_id=provider, genai_request_timestamp=at).total_price)
