"""Project-wide test settings: Hypothesis profiles, and draws that do not depend on what a worker imported.

``ci`` (the default) is derandomized and keeps no example database, so a run in CI draws the same
examples every time and a failure there reproduces locally from the printed blob. ``dev`` runs
fewer examples for a quick edit-test loop. Choose with ``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from sim.replay.strategies import fixed_constants

settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None, max_examples=60)
settings.register_profile("dev", max_examples=30)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def _draws_independent_of_imports() -> Iterator[None]:
    """Every Hypothesis test draws as in a fresh process, whatever the worker imported before
    (:func:`sim.replay.strategies.fixed_constants`): otherwise a derandomised search depends on which test
    modules and policies its worker happened to load first."""
    with fixed_constants():
        yield
