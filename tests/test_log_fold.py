"""Deep checks fold the log incrementally: ``RunLog.newest_view`` is ``fold`` of the whole log, at every request.

Folding the whole log at each request made a deep-checked run (``csim check``) quadratic in its length; the view of
the newest compaction record only changes where a record is appended, so each request folds what was appended
since the last. A view changed behind the engine's back is still caught at that request; an earlier record
rewritten is the digest chain's to catch, in the whole verification a run ends with.
"""

from __future__ import annotations

import dataclasses

from policies import make_policy
from sim.core.log import CompactionCreated, request_rows
from sim.core.view import View, fold
from sim.replay.engine import Engine, RunConfig
from sim.scenarios import scenario_conversation


def _engine() -> Engine:
    conv = scenario_conversation("coding-agent", 0, {"turns": "40"})
    config = RunConfig(model=dataclasses.replace(RunConfig().model, context_window=20_000), deep_checks=True)
    return Engine(make_policy("sliding-window"), conv, config)


def test_the_newest_view_is_the_fold_of_the_whole_log_after_every_step() -> None:
    eng = _engine()
    first = eng.state.checkpoints[0]
    compactions = 0
    while eng.step():
        assert eng.log.newest_view(first) == fold(eng.log, first) == eng.state.view
        copy = eng.log.copy()  # a lockstep fork carries what was folded
        assert copy.newest_view(first) == fold(copy, first)
        compactions = sum(isinstance(e, CompactionCreated) for e in eng.log)
    assert compactions >= 2  # the window made it compact, so the view moved more than once
    assert not eng.finish().violations


def test_a_view_changed_behind_the_engine_is_caught_at_the_next_request() -> None:
    eng = _engine()
    while eng.step() and not any(isinstance(e, CompactionCreated) for e in eng.log):
        pass
    eng.state.view = dataclasses.replace(eng.state.view, placeholder="[changed]")  # no compaction record says so
    requests = len(request_rows(eng.log))
    while len(request_rows(eng.log)) == requests and eng.step():
        pass
    assert any("folded from the log differs" in v.detail for v in eng.violations)


def test_another_initial_view_folds_from_the_start() -> None:
    eng = _engine()
    for _ in range(6):
        eng.step()
    eng.log.newest_view(eng.state.checkpoints[0])
    other = View(start=1)
    assert eng.log.newest_view(other) == fold(eng.log, other)
