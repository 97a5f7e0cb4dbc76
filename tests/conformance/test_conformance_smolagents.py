"""Our smolagents policy's bounding against smolagents' own ``truncate_content``, case by case
(``conformance/smolagents/``).

The golden file holds what ``smolagents`` (its version inside) returned from ``truncate_content`` on each scripted
output: the result's length, its SHA-256 and its ends. Here the same output becomes a tool result, our policy's
``bound_tool_result`` bounds it as it enters the log, and the text is compared (by its hash: the texts run to
hundreds of kilobytes). A case's input is a recipe, built into text by :func:`build` as ``cases.py`` builds it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from policies.smolagents import Smolagents, SmolagentsConfig
from sim.core.conversation import Part
from tests.conformance.agreement import judge

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "smolagents.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]

# Where we knowingly differ: case -> why. Every other case bounds exactly as smolagents does.
KNOWN: dict[str, str] = {}


def build(recipe: dict[str, Any]) -> str:
    """``cases.py``'s ``build``: numbered 50-character lines, or ``chars`` characters of ``fill`` repeated."""
    if "lines" in recipe:
        return "".join(f"line {i:06d} ".ljust(49, "-") + "\n" for i in range(recipe["lines"]))
    fill = recipe.get("fill", "abcdefghij")
    n = recipe["chars"]
    return (fill * (n // len(fill) + 1))[:n]


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    source = build(case["input"])
    policy = Smolagents(SmolagentsConfig(max_length=case["settings"]["max_length"]))
    part = policy.bound_tool_result(Part("tool_result", source, call_id="c1", name="python_interpreter"))
    text = part.text
    return {
        "truncated": text != source,
        "length": len(text),
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "head": text[:120],
        "tail": text[-120:],
    }


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "smolagents" and golden["version"].count(".") == 2
    assert len(CASES) >= 10
    assert {c["expected"]["truncated"] for c in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    judge(case["name"], ours, case["expected"], KNOWN)


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases bounded as smolagents bounds them (printed with ``-s``)."""
    agree = sum(1 for c in CASES if run_case(c) == c["expected"])
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\nsmolagents: {agree}/{len(CASES)} cases agree")
