"""Our ``cloudflare-os`` against Workshop's own TypeScript, decision by decision (``conformance/cloudflare-os/``).

The golden file holds what the real functions of ``agent-compaction.ts`` (cloudflare/cloudflare-os at the commit
inside, run under node) returned on the project's own inputs:

* ``projectionMessageWeight`` of the model messages the replay makes of each message shape, and of summary messages;
* every decision the port made on generated conversations (the pre-turn check of each turn, the check again after an
  automatic compaction, each ``/compact``), the real functions deciding on the same state: the context
  (``runAgent``'s estimate from the last step's total and ``estimateProjectionTokens``), ``shouldCompactChat``, and
  the boundary of ``findCompactionBoundary`` (with ``findProtectedFromSequence``) after ``protectRetainedReverts``.

A decision where the port differs must be one its docstring declares (:func:`declared`); agreement must reach 99% of
the automatic decisions and 95% of the ``/compact`` ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policies.cloudflare_os import SPAN_MARGIN, SUMMARY_WRAPPER, TIMESTAMP, CloudflareOS, projection_weight
from policies.helpers import floor_index
from sim.core.conversation import Conversation, Message, Part
from sim.core.model import ModelConfig
from sim.core.view import Summary, View
from sim.replay.engine import Engine, RunConfig
from tests.conformance.seed_cases import load, message

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "cloudflare-os.json"


def golden(path: Path = GOLDEN) -> dict[str, Any]:
    return load(path)


def test_the_cases_use_our_constants() -> None:
    g = golden()
    assert g["timestamp"] == TIMESTAMP
    assert g["model"] == {"api": "anthropic-messages", "provider": "anthropic", "id": "claude-sonnet-4-5"}


def test_weights_are_projection_message_weight() -> None:
    """``projectionMessageWeight``: ``JSON.stringify(message).length`` of each model message (a record's assistant
    message with its tool results; a slash command none), JavaScript's length: the astral character counts two."""
    model = golden()["model"]
    for case in golden()["weights"]:
        msgs = [message(m) for m in case["messages"]]
        ours = [projection_weight(m, model["api"], model["provider"], model["id"]) for m in msgs]
        # the real weighs each record: an assistant message together with the results after it
        grouped: list[int] = []
        for m, w in zip(msgs, ours, strict=True):
            if m.role == "tool":
                grouped[-1] += w
            else:
                grouped.append(w)
        assert grouped == case["expected"]
    for case in golden()["summary_weights"]:
        assert CloudflareOS._summary_weight(_summary_state(case["text"])) == case["expected"]


def _summary_state(text: str):  # type: ignore[no-untyped-def]
    log = [Message("s", "system", (Part("text", "s"),)), Message("u", "user", (Part("text", "u"),))]
    eng = Engine(CloudflareOS(), Conversation("w", tuple(log)), RunConfig())
    for m in log:
        eng.append(m)
    eng.state.view = View(start=1, summary=Summary(text, through=1))
    return eng.state


def states(g: dict[str, Any]) -> Iterator[tuple[dict[str, Any], CloudflareOS, Engine]]:
    logs = [[message(m) for m in c] for c in g["conversations"]]
    engine: Engine | None = None
    key: tuple[int, int] | None = None
    for d in g["decisions"]:
        policy = CloudflareOS()
        log = logs[d["conversation"]]
        if key != (d["conversation"], d["window"]) or engine is None or len(engine.state) > d["n"]:
            model = ModelConfig(context_window=d["window"], output_reserve=g["reserve"])
            key, engine = (
                (d["conversation"], d["window"]),
                Engine(policy, Conversation("g", tuple(log)), RunConfig(model=model)),
            )
        eng = engine
        while len(eng.state) < d["n"]:
            eng.append(log[len(eng.state)])
        st = eng.state
        summary = None if "summary" not in d else Summary(g["summaries"][d["summary"]], through=d["start"])
        st.view = View(start=d["start"], summary=summary)
        anchored = "last_request_at" in d
        st.last_input_tokens = d["last_input"] if anchored else None
        st.last_output_tokens = d["last_output"] if anchored else None
        st.messages_at_last_request = d.get("last_request_at", 0)
        st.view_at_last_request = st.view if anchored else None
        yield d, policy, eng


def ours(d: dict[str, Any], policy: CloudflareOS, eng: Engine) -> dict[str, Any]:
    st = eng.state
    context = CloudflareOS.context_tokens(st)
    out: dict[str, Any] = {"context_tokens": context}
    out["triggered"] = d["trigger"] == "manual" or context >= st.model.input_budget * policy.config.trigger_ratio
    if out["triggered"]:
        plan = policy.decide(st, d["trigger"])
        out["boundary"] = None if plan is None else plan.start
    return out


def same(mine: dict[str, Any], real: dict[str, Any]) -> bool:
    keys = ("context_tokens", "triggered", "boundary")
    return all(mine.get(k) == real.get(k) for k in keys)


def declared(d: dict[str, Any], policy: CloudflareOS, eng: Engine, mine: dict[str, Any]) -> str | None:
    """Which declared difference explains this one, or None."""
    st, real = eng.state, d["expected"]
    if mine["context_tokens"] != real["context_tokens"] or mine["triggered"] != real["triggered"]:
        return None
    b = real.get("boundary")
    if b is None:
        return None
    floor = floor_index(st)
    if mine["boundary"] is None and (
        b <= floor or policy._span_chars(st, floor, b) < SPAN_MARGIN * policy._smallest_handoff_chars(st)
    ):
        return "short-span"  # a span shorter than the smallest hand-off is not summarised
    return None


def agreement(path: Path = GOLDEN) -> tuple[Counter[tuple[str, str]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    counts: Counter[tuple[str, str]] = Counter()
    undeclared = []
    for d, policy, eng in states(golden(path)):
        mine = ours(d, policy, eng)
        if same(mine, d["expected"]):
            counts[(d["trigger"], "agree")] += 1
            continue
        why = declared(d, policy, eng, mine)
        counts[(d["trigger"], why or "undeclared")] += 1
        if why is None:
            undeclared.append((d, mine))
    return counts, undeclared


@pytest.mark.parametrize(("trigger", "floor"), [("auto", 0.99), ("manual", 0.95)])
def test_decisions_agree_but_for_declared_differences(trigger: str, floor: float) -> None:
    counts, undeclared = agreement()
    assert not undeclared, f"{len(undeclared)} undeclared differences, the first: {undeclared[0]}"
    total = sum(v for (t, _), v in counts.items() if t == trigger)
    assert total and counts[(trigger, "agree")] / total >= floor, dict(counts)


def test_the_summary_wrapper_is_the_real_length() -> None:
    """``runAgent`` wraps the summary in ``<prior_conversation note="...">`` with a 138-character note."""
    head = SUMMARY_WRAPPER.split("{summary}")[0]
    assert head.startswith('<prior_conversation note="') and len(head) == len('<prior_conversation note="">\n') + 138
