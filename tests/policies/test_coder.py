"""The ``coder`` policy (``policies/coder.py``): coder chat's compaction threshold."""

from __future__ import annotations

from policies.coder import Coder, CoderConfig
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from tests.builders import compaction_records, conv, request_turn, state_of, sys


def chat(turns: int, size: int = 4_000) -> Conversation:
    return conv(sys("You are coder.", id="sys"), *(d for k in range(1, turns + 1) for d in request_turn(k, size)))


def test_threshold_depends_on_the_window() -> None:
    """PR #28899: 70% for 200k and 272k windows, 30% from 500k; an explicit value wins."""
    c = chat(4)
    for window, pct in ((200_000, 70), (272_000, 70), (500_000, 30), (1_000_000, 30)):
        assert Coder().threshold_percent(state_of(Coder(), c, ModelConfig(context_window=window))) == pct
    explicit = Coder(CoderConfig(compression_threshold=50))
    assert explicit.threshold_percent(state_of(explicit, c, ModelConfig(context_window=1_000_000))) == 50


def test_trigger_boundary() -> None:
    model = ModelConfig(context_window=200_000, output_reserve=8_192)
    c = chat(60)
    assert Coder().decide(state_of(Coder(), c, model, context=139_999), "auto") is None
    assert Coder().decide(state_of(Coder(), c, model, context=140_000), "auto") is not None


def test_engine_run() -> None:
    config = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")
    res = Engine(Coder(CoderConfig(keep_recent_tokens=1_500)), chat(40, 1_600), config).run()
    assert compaction_records(res) and not res.violations


def test_known_deviation_revert_resolution() -> None:
    from tests.policies.reverts import shows_revert_resolution

    assert shows_revert_resolution(Coder(CoderConfig(keep_recent_tokens=1_500)))
