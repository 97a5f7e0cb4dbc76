"""When things happen in a run, in simulated seconds (:mod:`sim.core.clock` says where the times come from).

A request answered by script message ``k`` starts when message ``k - 1`` is complete. A compaction happens once
the script message the engine names is complete (before a request: when it starts; after ``/compact`` or a reply:
once that is complete), else, during a request (on overflow, among the reactive agent's requests), when the
current request starts: what a forked summariser request is billed at.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from sim.core.clock import message_times
from sim.core.conversation import Conversation, Message
from sim.core.tokenizers import Memo, memoised


class RunClock:
    """The times of one run's script, computed lazily, and the moment of the current request."""

    def __init__(
        self, conversation: Conversation, script: list[Message], seed: int, memo: Memo, output: Callable[[Message], int]
    ) -> None:
        self.conversation, self.script, self.seed, self._memo, self._output = conversation, script, seed, memo, output
        # the script as the conversation gives it (its recorded compactions' results left out, counting.stand_ins):
        # its times are memoised per worker
        self._given = len(script)
        self._times: tuple[float, ...] = ()  # when each script message is complete
        self.now = 0.0  # when the current request starts
        #: The script message at whose completion a compaction being made happens (None: when the request starts).
        self.at: int | None = None

    def copy(self, script: list[Message]) -> RunClock:
        """This clock over a copied run's ``script``."""
        other = copy.copy(self)
        other.script = script
        return other

    def start_request(self, k: int) -> float:
        """The request answered by script message ``k`` starts: when message ``k - 1`` is complete."""
        self._ensure(k)
        self.now = self._times[k - 1] if k > 0 else 0.0
        return self.now

    def compaction_time(self) -> float:
        """When the compaction being made happens (see the module docstring)."""
        i = self.at
        if i is None:
            return self.now
        if i < 0:
            return 0.0
        self._ensure(i)
        return self._times[i]

    def _ensure(self, k: int) -> None:
        """Make sure the times reach script message ``k`` (computed once per worker and seed, lazily)."""
        if k >= len(self._times):
            if len(self.script) == self._given:  # the conversation's script, once per worker and seed
                self._times = memoised(self._memo, self.conversation, ("times", self.seed), self._compute)
            else:  # stepped past the conversation: its times are a prefix of these
                self._times = self._compute(self.conversation)

    def _compute(self, _: object) -> tuple[float, ...]:
        return message_times(self.script, self.seed, self._output)


__all__ = ["RunClock"]
