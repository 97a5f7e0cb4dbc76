"""The ``compaction-loop`` invariant: automatic compactions on consecutive turns, each made over the policy's
trigger, that each leave the view over it (compacting every turn without progress; Claude Code's "autocompact
thrash loop").

One made under the trigger (housekeeping, such as clearing a result as it ages out) is no link. Right after a
compaction the policy's own count may be a fallback estimate (chars / 4 until the next request reports), so
"leaves it over" is only a claim until the request after it: :meth:`LoopWatch.settle` judges it then, by the
policy's count once the provider has counted the compacted prompt. A claim no request settles (the run ended
first) is dropped, and a rollback resets the chain: what it brings back is new to compact.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LoopWatch:
    """The chain of automatic compactions that may be a loop."""

    last_link_turn: int = -10  # the turn of the last link of a loop
    claim: tuple[str, int] | None = None  # an automatic compaction that may be one, and its turn

    def compacted(self, cid: str, turn: int, over: bool) -> None:
        """Automatic compaction ``cid`` at ``turn`` was made; ``over``: it was made over the policy's trigger and
        leaves the view over it by the policy's count now (a claim to settle)."""
        self.claim = None
        if over:
            self.claim = (cid, turn)
        else:
            self.last_link_turn = -10

    def reset(self) -> None:
        """A rollback: what it brings back is new to compact."""
        self.last_link_turn, self.claim = -10, None

    def pending(self) -> bool:
        """Whether a claim waits to be settled."""
        return self.claim is not None

    def settle(self, over: bool, reported: int | None) -> str | None:
        """Judge the pending claim once the request after it has reported its prompt (``reported`` tokens) and the
        policy says whether it is still over its trigger (``over``): the violation's detail when it is the second
        link on consecutive turns, else None."""
        claim, self.claim = self.claim, None
        if claim is None:
            return None
        cid, turn = claim
        detail = None
        if over and self.last_link_turn == turn - 1 and turn > 0:
            detail = (
                f"compaction {cid} at turn {turn} leaves the view over the policy's trigger (its request reported "
                f"{reported} tokens), as the automatic compaction of turn {turn - 1} did: no progress"
            )
        self.last_link_turn = turn if over else -10
        return detail


__all__ = ["LoopWatch"]
