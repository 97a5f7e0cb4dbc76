"""The long conversations the conformance generators replay (``conformance/long/conversations.json``) are what the
bundled scenarios generate now: regenerated in memory and compared byte for byte, so a change to a scenario is
noticed here (then run ``python conformance/long/export.py`` and ``make conformance``)."""

from __future__ import annotations

import importlib.util

from tests.conformance.long import LONG


def test_export_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("conformance_long_export", LONG / "export.py")
    assert spec is not None and spec.loader is not None
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    assert (LONG / "conversations.json").read_text() == export.text(export.build())


def test_every_conversation_is_long_and_tool_heavy_enough() -> None:
    """Past each generator's triggers (set at a quarter or a third of each conversation's size) there are dozens of
    model calls, and the coding and research ones are tool-heavy."""
    from tests.conformance.long import conversations

    convs = {c["name"]: c for c in conversations()}
    for c in convs.values():
        assert sum(1 for m in c["messages"] if m["role"] == "assistant") >= 40
    for name in ("coding-0", "coding-1-parallel", "research-0"):
        tool_chars = sum(len(r["text"]) for m in convs[name]["messages"] for r in m.get("results", ()))
        assert tool_chars > 0.6 * sum(len(str(m)) for m in convs[name]["messages"])
