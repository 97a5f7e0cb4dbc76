"""Shared check of the golden tests: an importer's output, written natively, equals the stored expected file."""

from __future__ import annotations

import os
from pathlib import Path

from sim.core.conversation import validate
from sim.formats import ImportResult, read
from sim.formats.native import dumps


def check_golden(sample: Path, fmt: str) -> ImportResult:
    """Import ``sample`` strictly and compare with ``<stem>.expected.jsonl`` (``CSIM_UPDATE_GOLDEN=1`` rewrites it)."""
    result = read(sample, fmt)
    assert result.conversations
    for conv in result.conversations:
        assert validate(conv) == []
    produced = "".join(dumps(c) for c in result.conversations).encode("utf-8")
    expected = sample.with_name(sample.name.split(".")[0] + ".expected.jsonl")
    if os.environ.get("CSIM_UPDATE_GOLDEN") == "1":
        expected.write_bytes(produced)
    assert expected.exists(), f"{expected} is missing; run with CSIM_UPDATE_GOLDEN=1 to create it"
    assert produced == expected.read_bytes(), (
        f"{sample.name} no longer imports to {expected.name}; if intended, rerun with CSIM_UPDATE_GOLDEN=1"
    )
    back = read(expected, "native")
    assert back.conversations == result.conversations
    return result
