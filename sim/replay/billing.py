"""Billing: which model serves each request, what it costs, and what each compaction cost and saved.

A run prices every request as the run's model (``--model``), else as the model the recording names for the reply
(Claude Code sessions mix models), else :data:`~sim.core.model.DEFAULT_MODEL`. A recorded model the price table
does not know is priced as the default and named in the run's ``unpriced_models``.

A compaction's cost (:meth:`Billing.compaction_costs`) is its summariser calls plus the cache rewrite it caused:
the cache writes of the first agent request after it, priced at what writing costs over reading (had the prompt
not changed, the cache would have read those tokens; new messages written at that request are counted too, a
small overstatement). It pays that back after the agent requests whose removed tokens, priced as the prompt would
have billed them (the cache-read rate with caching, else the input rate), add up to it.

Every request is priced at the moment it was made: a recording's requests at their own times (the recording's
first timestamp, ``meta["timestamp"]``, plus the request's start on the run's clock, :mod:`sim.replay.timing`: when
the message before it was complete), as the provider billed them on the day; a conversation without dates (a
synthetic scenario, a scripted conversation, a trace on a clock from the Unix epoch) at the fixed
:data:`~sim.core.cost.PRICE_DATE`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sim.core.budgets import BudgetTracker
from sim.core.cache import CacheUsage
from sim.core.conversation import Conversation, Message
from sim.core.cost import PRICE_DATE, Pricer
from sim.core.errors import UnknownName
from sim.core.invariants import Violation
from sim.core.log import CompactionCreated, RequestSent, RunLog
from sim.core.model import DEFAULT_MODEL, ModelConfig
from sim.core.tokenizers import Memo, memoised

if TYPE_CHECKING:
    from sim.replay.engine import Engine


class Billing:
    """The pricers of one run and the model of its latest request."""

    def __init__(self, model: ModelConfig, conversation: Conversation, memo: Memo) -> None:
        self.config = model
        self._pricers: dict[str, Pricer] = {}
        self.unpriced: set[str] = set()  # recorded models the price table does not know (priced as the default)
        # A reply the recording names no model for was served by the recording's (most frequent) model.
        self._recorded: str | None = memoised(memo, conversation, "recorded-model", recorded_model)
        self.model_name = model.name or DEFAULT_MODEL  # the model of the latest request
        self.pricer = self.pricer_for(self.model_name)
        #: When the conversation began, if it has dates (:func:`price_epoch`): requests are priced at their own time.
        self.epoch: datetime | None = memoised(memo, conversation, "price-epoch", price_epoch)

    def when(self, seconds: float) -> datetime:
        """The date a request starting ``seconds`` into the run is priced at (see the module docstring)."""
        return price_time(self.epoch, seconds)

    def copy(self) -> Billing:
        other = Billing.__new__(Billing)
        other.__dict__.update(self.__dict__)
        other._pricers, other.unpriced = dict(self._pricers), set(self.unpriced)
        return other

    def pricer_for(self, name: str) -> Pricer:
        """The pricer of model ``name``: the run's model (an unknown one is the user's error), or a recorded
        model looked up at the run's price provider, then at any provider, then without a routing prefix
        (``litellm_proxy/claude-...``); one the table does not know is priced as :data:`DEFAULT_MODEL`."""
        hit = self._pricers.get(name)
        if hit is not None:
            return hit
        provider = self.config.price_provider
        if self.config.name is not None or name == DEFAULT_MODEL:
            hit = Pricer(name, provider)
        else:
            short = name.rsplit("/", 1)[-1]
            for model, prov in ((name, provider), (name, None), (short, provider), (short, None)):
                try:
                    hit = Pricer(model, prov)  # type: ignore[arg-type]
                    break
                except UnknownName:
                    continue
            if hit is None:
                self.unpriced.add(name)
                hit = self.pricer_for(DEFAULT_MODEL)
        self._pricers[name] = hit
        return hit

    def use_model(self, reply: Message) -> None:
        """The model serving the request ``reply`` answers: the run's, else the one the recording names."""
        if self.config.name is None:
            recorded = reply.meta.get("model") or self._recorded
            if isinstance(recorded, str) and recorded:
                self.model_name = recorded
                self.pricer = self.pricer_for(recorded)

    def charge(
        self, tracker: BudgetTracker, input_tokens: int, output_tokens: int, usage: CacheUsage, at: float = 0.0
    ) -> float:
        """The cost of one request at the current model, made ``at`` seconds into the run (its ``time_seconds``),
        added to ``tracker``'s token and cost budgets."""
        when = self.when(at)
        cost = self.pricer.cost(input_tokens, output_tokens, usage.read, usage.write_5m, usage.write_1h, when)
        tracker.tokens += input_tokens + output_tokens
        tracker.cost += cost
        return cost

    def cost_parts(self, rows: Sequence[dict[str, Any]]) -> list[float]:
        """Uncached input, cache reads, cache writes and output of the billed ``rows``, in USD."""
        parts = [0.0, 0.0, 0.0, 0.0]
        for r in rows:
            if r["billed"]:
                split = self.pricer_for(r["model"]).split(*usage_of(r), self.when(r["time_seconds"]))
                parts = [a + b for a, b in zip(parts, split, strict=True)]
        return parts

    def compaction_costs(self, log: RunLog, compactions: list[dict[str, Any]], cached: bool) -> list[dict[str, Any]]:
        """Each compaction row with what it cost (``cost_usd``) and after how many agent requests it paid that
        back (``payback_requests``; None when that does not happen within the run, or it removed nothing): see
        the module docstring. ``cached``: the run bills through the provider's prompt cache."""
        if not compactions:
            return compactions
        summariser: dict[str, float] = {}
        first_after: dict[str, dict[str, Any]] = {}
        later: dict[str, int] = {}  # agent requests after each compaction
        pending: list[str] = []
        for ev in log:
            if isinstance(ev, CompactionCreated):
                pending.append(ev.id)
                later[ev.id] = 0
            elif isinstance(ev, RequestSent) and ev.billed:
                if ev.request_kind == "summariser":
                    summariser[ev.compaction_id] = summariser.get(ev.compaction_id, 0.0) + ev.cost_usd
                    continue
                for cid in pending:
                    first_after[cid] = ev.row()
                pending = []
                for cid in later:
                    later[cid] += 1
        out = []
        for c in compactions:
            cid = c["compaction_id"]
            first = first_after.get(cid)
            rewrite, unit = 0.0, 0.0
            if first is not None:
                r_in, _, r_cr, r_cw, r_cw1h = self.pricer_for(first["model"]).rates(self.when(first["time_seconds"]))
                unit = (r_cr if cached else r_in) / 1e6
                rewrite = (
                    first["cache_write_5m_tokens"] * (r_cw - r_cr) + first["cache_write_1h_tokens"] * (r_cw1h - r_cr)
                ) / 1e6
            cost = summariser.get(cid, 0.0) + max(rewrite, 0.0)
            saved = (c["tokens_before"] - c["tokens_after"]) * unit
            k = math.ceil(cost / saved) if saved > 0 else None
            payback = k if k is not None and k <= later.get(cid, 0) else None
            out.append({**c, "cost_usd": round(cost, 10), "payback_requests": payback})
        return out


def usage_of(row: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """A request row's tokens as :meth:`sim.core.cost.Pricer.cost` takes them."""
    return (
        row["context_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
        row["cache_write_5m_tokens"],
        row["cache_write_1h_tokens"],
    )


#: A recording whose first timestamp is older than this has no date (a trace on a clock from the Unix epoch,
#: ``sim.formats.kv_trace``): its requests are priced at PRICE_DATE. The price table has no earlier prices.
DATED_FROM = datetime(2000, 1, 1, tzinfo=UTC)


def price_epoch(conversation: Conversation) -> datetime | None:
    """When the conversation began, as a date its requests are priced from: its first message timestamp
    (``meta["timestamp"]``, ISO 8601; naive means UTC), the same one the run's clock counts seconds from
    (:func:`sim.core.clock.recorded_times`). None when it has none, or none that is a date (:data:`DATED_FROM`)."""
    for m in conversation.messages:
        stamp = m.meta.get("timestamp")
        if isinstance(stamp, datetime):
            dt = stamp
        elif isinstance(stamp, str) and stamp.strip():
            try:
                dt = datetime.fromisoformat(stamp.strip().replace("Z", "+00:00"))
            except ValueError:
                return None  # the clock refuses it with an error naming the record
        else:
            continue
        dt = dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)
        return dt if dt >= DATED_FROM else None
    return None


def price_time(epoch: datetime | None, seconds: float) -> datetime:
    """When a request made ``seconds`` after ``epoch`` (:func:`price_epoch`) is priced: then, or at
    :data:`~sim.core.cost.PRICE_DATE` when the conversation has no date."""
    return PRICE_DATE if epoch is None else epoch + timedelta(seconds=seconds)


def recorded_model(conversation: Conversation) -> str | None:
    """The model a recording names most often for its replies (ties: the first in name order); None if none."""
    counts = Counter(
        n for m in conversation.messages if m.role == "assistant" and isinstance(n := m.meta.get("model"), str) and n
    )
    return max(sorted(counts), key=counts.__getitem__) if counts else None


def record_request(
    e: Engine,
    kind: str,
    context: int,
    output: int,
    in_view: int,
    *,
    error: str | None = None,
    compaction_id: str | None = None,
    needed: int = 0,
    visible: int = 0,
    violations: Iterable[Violation] = (),
    billed: bool | None = None,
    usage: CacheUsage | None = None,
    at: float | None = None,
) -> None:
    """Log one request and bill it. ``usage``: how the prompt cache bills its prompt (None: all uncached, as a
    ``separate`` summariser call is: its transcript is a prompt of its own that shares no prefix with the
    agent's). ``at``: when it started (None: when the current request starts). ``e``: the run it is part of."""
    # A rejected request (400) is not billed; a call that answered, even with nothing, is.
    billed = error is None if billed is None else billed
    usage = usage or CacheUsage(uncached=context)
    at = e.clock.now if at is None else at
    cost = e.billing.charge(e.tracker, context, output, usage, at) if billed else 0.0
    summary = e.state.view.summary
    e.log.append(
        RequestSent(
            e.state.turn,
            kind,
            context,
            output,
            in_view,
            error,
            cost,
            billed,
            compaction_id or (summary.compaction_id if summary else ""),
            e.state.compactions,
            needed,
            visible,
            "; ".join(v.invariant for v in violations),
            usage.read if billed else 0,
            usage.write_5m if billed else 0,
            usage.write_1h if billed else 0,
            at,
            e.billing.model_name,
        )
    )


__all__ = ["DATED_FROM", "Billing", "price_epoch", "price_time", "record_request", "recorded_model", "usage_of"]
