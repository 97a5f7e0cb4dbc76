"""Project-wide test settings: Hypothesis profiles.

``ci`` (the default) is derandomized and keeps no example database, so a run in CI draws the same
examples every time and a failure there reproduces locally from the printed blob. ``dev`` runs
fewer examples for a quick edit-test loop. Choose with ``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None, max_examples=60)
settings.register_profile("dev", max_examples=30)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
