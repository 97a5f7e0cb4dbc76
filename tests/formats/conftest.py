"""Fixtures of the importer tests: where the golden files and the real recordings are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "formats"


def recorded_root() -> Path:
    """``$CSIM_RECORDED``, else ``../shared/recorded`` next to the project checkout."""
    env = os.environ.get("CSIM_RECORDED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "recorded"


@pytest.fixture
def golden() -> Path:
    return GOLDEN


@pytest.fixture
def recorded() -> Path:
    """The folder of real recordings; tests that need it skip, saying why, when it is absent."""
    root = recorded_root()
    if not root.is_dir():
        pytest.skip(f"recorded sample not found at {root} (set CSIM_RECORDED to its folder)")
    return root
