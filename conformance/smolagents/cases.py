"""Scripted tool outputs for smolagents' ``truncate_content`` (``smolagents/utils.py``): plain data, no import of
``sim`` or ``policies``.

Each case: ``name``, ``input`` (a recipe for the output text, ``{"lines": n}`` or ``{"chars": n, "fill": s}``, which
:func:`build` turns into the text: the outputs run to hundreds of kilobytes, the recipes keep the golden file
small) and ``settings`` (``max_length`` when the case passes one; else ``truncate_content``'s default, the 20,000
characters ``CodeAgent`` bounds a snippet's output with).
"""

from __future__ import annotations

from typing import Any


def build(recipe: dict[str, Any]) -> str:
    """The text of a recipe: ``lines``: that many numbered lines of 50 characters (newline included), so head and
    tail are told apart; ``chars``: exactly that many characters of ``fill`` repeated."""
    if "lines" in recipe:
        return "".join(f"line {i:06d} ".ljust(49, "-") + "\n" for i in range(recipe["lines"]))
    fill = recipe.get("fill", "abcdefghij")
    n = recipe["chars"]
    return (fill * (n // len(fill) + 1))[:n]


def lines(n: int) -> dict[str, Any]:
    return {"lines": n}


def chars(n: int, fill: str = "abcdefghij") -> dict[str, Any]:
    return {"chars": n, "fill": fill}


def case(name: str, recipe: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {"name": name, "input": recipe, "settings": settings}


CASES: list[dict[str, Any]] = [
    case("empty", chars(0)),
    case("short", chars(18, "4 passed, 0 failed")),
    case("one-below-the-bound", chars(19_999)),
    case("at-the-bound", chars(20_000)),
    case("one-above-the-bound", chars(20_001)),
    case("lines-above-the-bound", lines(1_000)),
    case("far-above-the-bound", lines(10_000)),
    case("non-ascii", chars(30_000, "héllo wörld ✓ 日本 ")),
    case("emoji", chars(25_001, "🙂🚀x")),
    case("small-even-bound", chars(40), max_length=10),
    case("small-odd-bound", chars(40), max_length=7),
    case("bound-of-one", chars(3), max_length=1),
    case("odd-bound-at-length", chars(7), max_length=7),
    case("big-odd-bound", lines(2_000), max_length=30_001),
]
