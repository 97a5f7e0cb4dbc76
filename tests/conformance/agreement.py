"""How a conformance case is judged, the same for every package: a case listed in the module's ``KNOWN`` (with
why we knowingly differ) must still differ, so a fix is noticed and the entry dropped; every other case must
agree exactly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def judge(name: str, ours: Any, expected: Any, known: Mapping[str, str]) -> None:
    if name in known:
        assert ours != expected, f"{name} now agrees: drop it from KNOWN"
    else:
        assert ours == expected
