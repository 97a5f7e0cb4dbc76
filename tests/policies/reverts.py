"""A conversation that shows a policy's declared ``revert-resolution``: a change made early, compacted away by a
system that knows nothing of reverts, then reverted in the live turn (for the 2026 catalogue's tests)."""

from __future__ import annotations

from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from tests.builders import asst, call, change, conv, request_turn, revert, sys, tool, user

SMALL = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")


def revert_after_compaction(turns: int = 30, size: int = 1_600) -> Conversation:
    """An edit carrying change ``ch1`` in the first turn, ``turns`` turns of ``size``-character results, then a user
    message that reverts ``ch1``."""
    return conv(
        sys("You are a coding agent.", id="sys"),
        user("edit it", change("ch1", "edit a.py"), id="u0"),
        asst("edited", [call("c0")], id="a0"),
        tool("c0", "e" * size, id="t0"),
        asst("ok", id="d0"),
        *(d for k in range(1, turns + 1) for d in request_turn(k, size)),
        user("undo that first edit", revert("ch1"), id="undo"),
        asst("undone"),
    )


def shows_revert_resolution(policy: object, config: RunConfig = SMALL) -> bool:
    res = Engine(policy, revert_after_compaction(), config).run()  # type: ignore[arg-type]
    return "revert-resolution" in res.summary["violations_by_invariant"]
