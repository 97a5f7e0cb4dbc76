"""Our smolagents policy's bounding against smolagents' own ``truncate_content``, case by case
(``conformance/smolagents/``).

The golden file holds what ``smolagents`` (its version inside) returned from ``truncate_content`` on each scripted
output: the result's length, its SHA-256 and its ends. Here the same output becomes a tool result, our policy's
``bound_tool_result`` bounds it as it enters the log, and the text is compared (by its hash: the texts run to
hundreds of kilobytes). A case's input is a recipe, built into text by :func:`build` as ``cases.py`` builds it.
The ``long`` section's runs are compared model call by model call (:func:`test_long_decisions`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from policies.smolagents import Smolagents, SmolagentsConfig
from sim.core.conversation import Part
from tests.builders import state_of
from tests.conformance import long
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


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["long"]


def long_decisions(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Before every model call of a long conversation, what our policy's view sends: per earlier model call with
    results, one observation (the results that followed it, in one tool message or several, as the engine bounded
    them on entry, joined by newlines as the generator's memory joins a step's outputs), how many results were
    bounded, and a SHA-256 of the observations in order. The policy never compacts: its decision is None every
    time."""
    conv_ = long.by_name(entry["conversation"])
    c = long.to_conversation(conv_)
    original = {r["call_id"]: r["text"] for m in conv_["messages"] for r in m.get("results", ())}
    policy = Smolagents(SmolagentsConfig(max_length=entry["max_length"]))
    out = []
    for i, prefix in long.prefixes(c):
        st = state_of(policy, prefix)
        assert policy.decide(st, "auto") is None
        steps: list[list[Part]] = []  # per model call, the results that followed it (in one tool message or more)
        for k, m in enumerate(st.messages):
            if not st.view.shows(k):
                continue
            if m.role == "assistant":
                steps.append([])
            elif m.role == "tool":
                steps[-1] += m.results
        observations = ["\n".join(p.text for p in step) for step in steps if step]
        truncated = sum(1 for step in steps for p in step if p.text != original[p.call_id])
        digest = hashlib.sha256("\x00".join(observations).encode("utf-8")).hexdigest()
        out.append(
            {"at": c.messages[i].id, "observations": len(observations), "truncated": truncated, "sha256": digest}
        )
    return out


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['run']}-{e['conversation']}" for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long conversation: the same observations sent, bounded the same way, as the smolagents
    agent's memory sends (nothing is ever dropped on either side)."""
    ours = long_decisions(entry)
    share = long.agreement(ours, entry["decisions"])
    truncated = entry["decisions"][-1]["truncated"]
    with capsys.disabled():
        print(
            f"\nsmolagents {entry['run']} {entry['conversation']} (max_length {entry['max_length']:,}, {truncated} "
            f"results truncated): {share:.1%} of {len(ours)} model calls agree"
        )
    assert ours == entry["decisions"]
