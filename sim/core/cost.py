"""Cost of a request from the maintained ``genai-prices`` table.

``genai-prices`` computes in Decimal with tier handling; that is exact but costs ~0.3 ms a call,
which a sweep of a million requests cannot afford. :class:`Pricer` therefore reads the model's
rates once and, for requests below the first price tier (every request of a 200K-window model on
Sonnet's 200K tier), multiplies directly; above a tier it defers to the library. A test checks the
fast path against ``genai_prices.calc_price`` on random usages.

What it reads of a model (which table entry a name finds, each of its prices' base rates, first tier and the
date or time of day from which the table applies it) is kept between processes in a small JSON file per installed
``genai-prices`` version (:func:`price_cache`: in ``$CSIM_CACHE``, else ``~/.cache/csim``, where fetched datasets
go too), because importing the table costs 0.15-0.22 s of CPU (``import genai_prices.data_snapshot`` against
``pass`` in fresh processes), a third or more of a replay of the largest shared session (0.45 s). Only what the
library itself gave is kept, and the version in the file's name means an
upgraded table is read afresh; a test holds the kept choice of price at a date to the library's own
(``ModelInfo.get_prices``) for every dated model of the table. A folder that cannot be written only costs the time.

Input tokens here are the total prompt, cached or not, as ``genai-prices`` counts them; cache reads
and writes (5-minute and 1-hour, :mod:`sim.core.cache`) are subsets priced at their own rates.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import cache
from pathlib import Path
from typing import Any

from sim.core.errors import UnknownName
from sim.core.metrics import installed_version

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
    if not hasattr(price, "base"):  # a plain number (the table's Decimal, an int): untiered
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
        _entry(self.model, self.provider)  # fail early with a clear error

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
    return _choose(_entry(model, provider), at)


def _choose(entry: _Entry, at: datetime) -> int:
    if not entry.dated:
        return -1
    for i in range(len(entry.periods) - 1, -1, -1):
        holds = entry.periods[i].holds
        if holds is None or holds(at):
            return i
    return 0


def _rates(model: str, provider: str, active: int) -> tuple[float, float, float, float, float, float]:
    """Base $/MTok for input, output, cache read, cache write and 1-hour cache write, and where the first price
    tier starts, of the model's price number ``active`` (:func:`_active`)."""
    return _entry(model, provider).periods[max(active, 0)].rates


# -- what is read of a model, and kept between processes ------------------------------------------------------
@dataclass(frozen=True)
class _Period:
    """One price of a model: its rates (:func:`_rates`), and from when the table applies it (None: always), kept
    as JSON (``when``) and as the test of a request's time (``holds``)."""

    rates: tuple[float, float, float, float, float, float]
    when: tuple[str, ...] | None = None
    holds: Callable[[datetime], bool] | None = None


@dataclass(frozen=True)
class _Entry:
    periods: tuple[_Period, ...]
    dated: bool  # the table lists prices by date (or time of day); otherwise one price for all time
    keep: bool = True  # every constraint is one this module can write down (a new kind is asked of the library)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _from_date(start: date) -> Callable[[datetime], bool]:
    """``StartDateConstraint``: from the UTC day ``start`` on (a naive time is UTC)."""
    return lambda at: _utc(at).date() >= start


def _time_of_day(start: time, end: time) -> Callable[[datetime], bool]:
    """``TimeOfDateConstraint``: from ``start`` until ``end`` every day, both as UTC times of day (naive: UTC);
    an interval that crosses midnight holds on either side of it."""
    day = date(1970, 1, 1)
    lo, hi = (
        datetime.combine(day, t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC).timetz() for t in (start, end)
    )

    def holds(at: datetime) -> bool:
        now = _utc(at).timetz()
        return (now >= lo or now < hi) if hi < lo else lo <= now < hi

    return holds


def _when(saved: Sequence[str] | None) -> Callable[[datetime], bool] | None:
    if saved is None:
        return None
    if saved[0] == "date":
        return _from_date(date.fromisoformat(saved[1]))
    return _time_of_day(time.fromisoformat(saved[1]), time.fromisoformat(saved[2]))


def _period(rates: tuple[float, ...], constraint: Any) -> _Period:
    """A period from the library's price and its constraint (None, a start date, a time of day; any other kind is
    tested by the library's own ``active`` and not kept)."""
    start_date, start_time = getattr(constraint, "start_date", None), getattr(constraint, "start_time", None)
    when: tuple[str, ...] | None
    if constraint is None:
        when = None
    elif isinstance(start_date, date):
        when = ("date", start_date.isoformat())
    elif isinstance(start_time, time):
        when = ("time", start_time.isoformat(), constraint.end_time.isoformat())
    else:
        return _Period(rates, ("library",), constraint.active)  # type: ignore[arg-type]
    return _Period(rates, when, _when(when))  # type: ignore[arg-type]


def _read(info: Any) -> _Entry:
    """What this module uses of the library's ``ModelInfo``."""
    if not isinstance(info.prices, list):
        return _Entry((_Period(_base_rates(info.prices)),), dated=False)
    periods = tuple(_period(_base_rates(p.prices), p.constraint) for p in info.prices)
    return _Entry(periods, dated=True, keep=all(p.when != ("library",) for p in periods))


def _base_rates(mp: Any) -> tuple[float, float, float, float, float, float]:
    (r_in, t1), (r_out, t2), (r_cr, t3), (r_cw, t4) = (
        _rate(mp.input_mtok),
        _rate(mp.output_mtok),
        _rate(mp.cache_read_mtok),
        _rate(mp.cache_write_mtok),
    )
    one_hour = getattr(mp, "cache_write_1h_mtok", None)
    r_cw1h, t5 = _rate(one_hour) if one_hour is not None else (r_cw, t4)
    return r_in, r_out, r_cr, r_cw, r_cw1h, min(t1, t2, t3, t4, t5)


def price_cache() -> Path | None:
    """The file that keeps what was read of each model for the installed ``genai-prices`` (None: not installed)."""
    table = installed_version("genai-prices")
    if table is None:
        return None
    root = os.environ.get("CSIM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "csim")
    return Path(root) / f"prices-genai-prices-{table}-1.json"


def _read_kept(path: Path | None) -> dict[str, Any]:
    try:
        kept = json.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):  # none yet, or unreadable: read the table
        return {}
    return kept if isinstance(kept, dict) else {}


@cache
def _kept() -> dict[str, Any]:
    return _read_kept(price_cache())


@cache
def _entry(model: str, provider: str) -> _Entry:
    """What is used of ``model`` at ``provider``: from the kept file when it has it, else from the library (and
    then kept)."""
    key = f"{provider}:{model}"
    saved = _kept().get(key)
    if isinstance(saved, dict):
        try:
            return _decode(saved)
        except (KeyError, TypeError, ValueError, IndexError):
            pass  # a damaged entry: read the table again
    entry = _read(_model_info(model, provider))
    if entry.keep:
        _keep(key, entry)
    return entry


def _encode(entry: _Entry) -> dict[str, Any]:
    return {"dated": entry.dated, "periods": [{"rates": p.rates, "when": p.when} for p in entry.periods]}


def _decode(saved: dict[str, Any]) -> _Entry:
    periods = tuple(
        _Period(tuple(p["rates"]), p["when"] and tuple(p["when"]), _when(p["when"])) for p in saved["periods"]
    )
    return _Entry(periods, dated=bool(saved["dated"]))


def _keep(key: str, entry: _Entry) -> None:
    """Add ``entry`` to the kept file (read again first: another process may have added to it)."""
    path = price_cache()
    if path is None:
        return
    kept = {
        **_read_kept(path),
        key: {"dated": entry.dated, "periods": [{"rates": p.rates, "when": p.when} for p in entry.periods]},
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(kept, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a folder that cannot be written: the next process reads the table again


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
