"""Run budgets and the run-status line, as the effect-agent seed describes them.

Dimensions: ``turns`` (agent requests), ``tool-calls``, ``tokens`` (cumulative input + output, the
summariser's included), ``cost`` (USD), ``context`` (the last request's prompt against
``context_token_limit``) and ``duration`` (seconds of the run's simulated clock, :mod:`sim.replay.caching`,
when its request starts). Crossing 80% of a limit emits one warning per dimension; exhaustion
resolves through ``on_exhaustion``: ``final-answer`` (one grace turn with no tools) or ``fail``.
Cost and duration breaches always fail, as in the seed ("Duration and cost breaches always fail typed because a
grace call would extend the wall-clock limit or increase the bill").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from sim.core.errors import InvalidConfig

WARN_RATIO = 0.8  # "Past 80% of any dimension it appends a wrap-up warning"
#: The warning effect-agent's ``formatRunStatus`` appends inside the tag (``RUN_STATUS_WARNING``).
RUN_STATUS_WARNING = " · WARNING: approaching limits — converge and deliver your final result now."
DIMENSIONS = ("turns", "tool-calls", "tokens", "cost", "context", "duration")


@dataclass(frozen=True)
class Budgets:
    """Limits of one run; ``None`` means unlimited. Names follow the seed in snake_case."""

    max_turns: int | None = field(default=None, metadata={"flag": "max-turns", "help": "model calls"})
    max_tool_calls: int | None = field(default=None, metadata={"flag": "max-tool-calls", "help": "tool calls"})
    token_budget: int | None = field(
        default=None, metadata={"flag": "token-budget", "help": "cumulative input + output tokens"}
    )
    cost_budget: float | None = field(default=None, metadata={"flag": "cost-budget", "help": "USD"})
    context_token_limit: int | None = field(
        default=None, metadata={"flag": "context-token-limit", "help": "warn at 80%% of this per-request context"}
    )
    max_duration: float | None = field(
        default=None,
        metadata={"flag": "max-duration", "help": "seconds of the simulated clock (the seed's maxDuration)"},
    )
    on_exhaustion: Literal["final-answer", "fail"] = field(
        default="final-answer", metadata={"flag": "on-exhaustion", "help": "one grace turn without tools, or stop"}
    )

    def __post_init__(self) -> None:
        limits = ("max_turns", "max_tool_calls", "token_budget", "cost_budget", "context_token_limit", "max_duration")
        for name in limits:
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise InvalidConfig(f"budget {name}={v!r} must be positive (or unset for no limit)")
        if self.on_exhaustion not in ("final-answer", "fail"):
            raise InvalidConfig(f"on_exhaustion={self.on_exhaustion!r} must be 'final-answer' or 'fail'")

    def limits(self) -> dict[str, float | None]:
        return {
            "turns": self.max_turns,
            "tool-calls": self.max_tool_calls,
            "tokens": self.token_budget,
            "cost": self.cost_budget,
            "context": self.context_token_limit,
            "duration": self.max_duration,
        }


@dataclass
class BudgetTracker:
    """Running usage against :class:`Budgets`."""

    budgets: Budgets
    turns: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    last_context: int = 0
    warned: set[str] = field(default_factory=set)
    #: Seconds of the simulated clock when the current request starts (set by the engine before each agent
    #: request); None while nothing keeps a clock (a tracker used on its own).
    elapsed_seconds: float | None = None

    def used(self) -> dict[str, float]:
        return {
            "turns": self.turns,
            "tool-calls": self.tool_calls,
            "tokens": self.tokens,
            "cost": self.cost,
            "context": self.last_context,
            "duration": self.elapsed_seconds or 0.0,
        }

    def new_warnings(self) -> list[tuple[str, float, float]]:
        """Dimensions that crossed 80% since the last call: (dimension, used, limit), once each."""
        out = []
        used = self.used()
        for dim, limit in self.budgets.limits().items():
            if limit is not None and dim not in self.warned and used[dim] >= WARN_RATIO * limit:
                self.warned.add(dim)
                out.append((dim, used[dim], limit))
        return out

    def exhausted(self) -> str | None:
        """The first exhausted dimension among cost, duration, turns, tool-calls and tokens, or None."""
        b = self.budgets
        if b.cost_budget is not None and self.cost >= b.cost_budget:
            return "cost"
        if b.max_duration is not None and (self.elapsed_seconds or 0.0) >= b.max_duration:
            return "duration"
        if b.max_turns is not None and self.turns >= b.max_turns:
            return "turns"
        # A batch that reaches the tool-call limit exactly is within budget; the one that goes over
        # is "the over-budget batch" the seed settles synthetically.
        if b.max_tool_calls is not None and self.tool_calls > b.max_tool_calls:
            return "tool-calls"
        if b.token_budget is not None and self.tokens >= b.token_budget:
            return "tokens"
        return None

    def status_line(self) -> str:
        """The derived ``<run-status>`` line; never persisted, rebuilt for each request.

        effect-agent's ``formatRunStatus`` (``packages/engine/src/index.ts`` @4629174), the seed's example
        ``<run-status>turn 3/12 · tool-calls 11/24 · tokens 84210/200000 · last-context 23480 · elapsed
        74s/300s</run-status>``: the current turn (1-based), each count over its limit, the seconds elapsed
        (floored, as the real's ``Math.floor``) over ``max_duration``, and, when any of turn, tool calls, tokens or
        elapsed time is at 80% of its limit or more (``consumed * 5 >= limit * 4``), the real's warning inside
        the tag. An unset limit reads ``unbounded``, as the real renders an unset token budget; the real requires
        ``maxTurns``, ``maxToolCalls`` and ``maxDuration``, so it never prints ``unbounded`` for them (declared in
        ``policies/effect_agent.py``). ``elapsed`` is left out only while the tracker keeps no clock
        (``elapsed_seconds`` unset); the engine sets it before every agent request.
        """
        b = self.budgets
        turn = self.turns + 1

        def over(used: float, limit: float | None) -> str:
            return f"{used:.0f}/" + ("unbounded" if limit is None else f"{limit:.0f}")

        def nearing(used: float, limit: float | None) -> bool:
            return limit is not None and used * 5 >= limit * 4

        parts = [
            f"turn {over(turn, b.max_turns)}",
            f"tool-calls {over(self.tool_calls, b.max_tool_calls)}",
            f"tokens {over(self.tokens, b.token_budget)}",
            f"last-context {self.last_context}",
        ]
        if self.elapsed_seconds is not None:
            elapsed = math.floor(self.elapsed_seconds)
            parts.append(f"elapsed {elapsed}s/" + ("unbounded" if b.max_duration is None else f"{b.max_duration:.0f}s"))
        warn = nearing(turn, b.max_turns) or nearing(self.tool_calls, b.max_tool_calls)
        warn = warn or nearing(self.tokens, b.token_budget)
        warn = warn or (self.elapsed_seconds is not None and nearing(math.floor(self.elapsed_seconds), b.max_duration))
        return "<run-status>" + " · ".join(parts) + (RUN_STATUS_WARNING if warn else "") + "</run-status>"
