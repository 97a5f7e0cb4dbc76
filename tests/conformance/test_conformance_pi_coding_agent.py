"""Our ``pi`` against pi's own compaction code, case by case and model call by model call
(``conformance/pi-coding-agent/``).

The golden file holds what ``@earendil-works/pi-coding-agent`` (its version inside) decided on each scripted session:
pi's context estimate at its automatic check (the last reply's usage after a run, plus ``estimateTokens`` of what came
after it before a further call), whether ``shouldCompact`` fired, and what ``prepareCompaction`` returned: the first
kept message and what is summarised (the history and, on a split turn, the turn's opening, which together are what
leaves the view here); also ``estimateTokens`` of every message. Here the same session becomes a ``Conversation``, the
reported usage is set as the last request's (``tests.builders.reported``), our policy decides once and every aspect is
compared. A case where we knowingly differ is listed in ``KNOWN`` with the aspects and the reason, and must still
differ. The long conversations (``conformance/long/``) are replayed model call by model call, each decision on pi's
own state (its compactions carried over), and compared decision by decision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.pi_agent import SUMMARY_WRAPPER, Pi, PiConfig, history_end, pi_tokens
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Summary, View
from sim.replay.engine import RunConfig
from tests.builders import reported, state_of
from tests.conformance import long

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "pi-coding-agent.json"
PACKAGE = "@earendil-works/pi-coding-agent"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]
LONG: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["long"]
FAKE_SUMMARY = "FAKE SUMMARY"
END = "<end>"  # nothing kept: everything summarised (pi keeps only its omitted failed attempt)

# Where we knowingly differ: case -> (the aspects that differ, why). Every other case agrees on every aspect.
DECISION = frozenset({"kept_from", "summarized"})
KNOWN: dict[str, tuple[frozenset[str], str]] = {
    "small-history": (
        DECISION,
        "not-shrinking: pi summarises two short messages and the turn's opening into a checkpoint longer than they "
        "are; the policy skips a summary that would not shrink the view (plan_shrinks)",
    ),
}


# -- the same input as a Conversation -----------------------------------------------------------------------------
def conversation(system: str, msgs: list[dict[str, Any]]) -> Conversation:
    return long.to_conversation({"system": system, "messages": msgs})


def model(settings: dict[str, Any]) -> ModelConfig:
    window = settings["contextWindow"]
    return ModelConfig(context_window=window, output_reserve=min(8_192, window // 10))


def policy(settings: dict[str, Any]) -> Pi:
    return Pi(PiConfig(reserve_tokens=settings["reserveTokens"], keep_recent_tokens=settings["keepRecentTokens"]))


def summary_view(c: Conversation, first_kept: str) -> View:
    start = next(i for i, m in enumerate(c.messages) if m.id == first_kept)
    return View(start=start, summary=Summary(SUMMARY_WRAPPER.format(summary=FAKE_SUMMARY), through=start))


def case_state(case: dict[str, Any]) -> tuple[Pi, Conversation, RunState]:
    """The case's session as the engine's state at the call: the last reply's usage reported, the earlier
    compaction (if any) as the view."""
    pol, c = policy(case["settings"]), conversation(case["system"], case["input"])
    view = summary_view(c, case["compaction"]["first_kept"]) if "compaction" in case else None
    st = state_of(pol, c, model(case["settings"]), view=view)
    replies = [i for i, m in enumerate(c.messages) if m.role == "assistant"]
    if replies:
        usage = case["input"][replies[-1] - 1]["usage"]  # the case's messages follow the system prompt
        reported(st, replies[-1], usage["input"], usage["output"])
    return pol, c, st


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """What our policy decides, in the golden file's terms."""
    pol, c, st = case_state(case)
    auto = case["kind"] == "auto"
    plan = pol.decide(st, case["kind"])
    ids = [m.id for m in c.messages]
    return {
        "tokens": pol.context_tokens(st, history_end(st)) if auto else None,
        "triggered": pol.over_trigger(st) if auto else None,
        "kept_from": None if plan is None else (ids[plan.start] if plan.start < len(ids) else END),
        "summarized": None if plan is None else ids[max(st.view.start, 1) : plan.start],
        "estimates": {m.id: pi_tokens(m) for m in c.messages},  # pi's session holds those before history_end
    }


def theirs(case: dict[str, Any]) -> dict[str, Any]:
    e, prep = case["expected"], case["expected"]["prepared"]
    kept = None if prep is None else prep["first_kept"]
    return {
        "tokens": e["tokens"],
        "triggered": e["triggered"] if e["check"] is not None or case["kind"] != "auto" else False,
        "kept_from": END if kept == "<failed>" else kept,
        "summarized": None if prep is None else prep["summarized"] + prep["turn_prefix"],
        "estimates": {k: v for k, v in e["estimates"].items() if k != "<failed>"},
    }


def differences(case: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Aspect -> (pi's, ours) for every aspect that differs."""
    ours, pi = run_case(case), theirs(case)
    ours["estimates"] = {k: v for k, v in ours["estimates"].items() if k in pi["estimates"]}  # in pi's session
    return {k: (pi[k], ours[k]) for k in pi if pi[k] != ours[k]}


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    pinned = json.loads((GOLDEN.parents[3] / "conformance/pi-coding-agent/package.json").read_text())
    assert golden["package"] == PACKAGE and golden["version"] == pinned["dependencies"][PACKAGE]
    assert len(CASES) >= 25 and {c["kind"] for c in CASES} == {"auto", "manual", "overflow"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    diff = differences(case)
    if case["name"] in KNOWN:
        aspects, reason = KNOWN[case["name"]]
        assert set(diff) == aspects, f"{case['name']} differs on {sorted(diff)}, expected {sorted(aspects)}: {reason}"
    else:
        assert diff == {}, diff


def test_the_cases_reach_every_rule() -> None:
    """Compacting and not, after a run and before a further call, split turns and cuts at a user message."""
    prepared = [c["expected"]["prepared"] for c in CASES if c["expected"]["prepared"]]
    assert {c["expected"]["check"] for c in CASES} == {"after-run", "before-call", None}
    assert {p["split_turn"] for p in prepared} == {True, False}
    assert any(c["expected"]["triggered"] is False for c in CASES)


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases agreeing on every aspect (printed with ``-s``)."""
    agree = sum(1 for c in CASES if not differences(c))
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\npi: {agree}/{len(CASES)} cases agree on every aspect")


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
def long_decisions(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our policy at every model call of a long conversation, on pi's state: its compactions carried over (the view
    from pi's first kept message, after the fake summary), the previous reply's usage as pi recorded it. Also each
    decision's class of difference (``""`` where none is documented): ``not-shrinking`` where pi compacts and we do
    not only because the summary would not shrink the view (the cut is pi's)."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    pol, mod = policy(entry["settings"]), model(entry["settings"])
    pi = {d["at"]: d for d in entry["decisions"]}
    view, out, classes, last = View(), [], [], None
    for i, prefix in long.prefixes(c):
        st = state_of(pol, prefix, mod, view=view)
        if last is not None:
            reported(st, last, pi[c.messages[last].id]["usage"]["input"], pi[c.messages[last].id]["usage"]["output"])
        plan = pol.decide(st, "auto")
        end = history_end(st)
        at = c.messages[i].id
        out.append(
            {
                "at": at,
                "tokens": pol.context_tokens(st, end) if last is not None else None,
                "triggered": pol.over_trigger(st),
                "kept_from": None if plan is None else c.messages[plan.start].id,
            }
        )
        kept = pi[at]["kept_from"]
        cut = pol.cut(st, end)
        same_cut = plan is None and kept is not None and c.messages[cut].id == kept
        classes.append("not-shrinking" if same_cut else "")
        if kept is not None:  # the next decision is made on pi's state
            view = summary_view(c, kept)
        last = i
    return out, classes


def test_long_estimates_are_pis() -> None:
    """``estimateTokens`` of every message of every long conversation (pi's toolResult messages summed per tool
    message), equal to ours."""
    for entry in LONG:
        c = long.to_conversation(long.by_name(entry["conversation"]))
        assert {m.id: pi_tokens(m) for m in c.messages} == entry["estimates"], entry["conversation"]


@pytest.mark.parametrize(
    "entry", LONG, ids=[f"{e['conversation']}-keep-{e['settings']['keepRecentTokens']}" for e in LONG]
)
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long conversation: the same estimate, trigger and first kept message as pi."""
    ours, classes = long_decisions(entry)
    keys = ("at", "tokens", "triggered", "kept_from")
    pis = [{k: d[k] for k in keys} for d in entry["decisions"]]
    share = long.agreement(ours, pis)
    differ = [k for k, (a, b) in enumerate(zip(ours, pis, strict=True)) if a != b]
    undocumented = [ours[k]["at"] for k in differ if not classes[k]]
    compactions = sum(1 for d in pis if d["kept_from"] is not None)
    with capsys.disabled():
        print(
            f"\npi {entry['conversation']} keep {entry['settings']['keepRecentTokens']}: {share:.1%} of {len(ours)} "
            f"model calls agree ({compactions} compactions), {1 - len(undocumented) / len(ours):.1%} with documented "
            f"differences ({', '.join(classes[k] for k in differ) or 'none'})"
        )
    assert not undocumented, [(ours[k], pis[k]) for k in differ if not classes[k]]
    assert compactions >= 3


def test_long_runs_reach_both_checks_and_split_turns() -> None:
    decisions = [d for e in LONG for d in e["decisions"] if d["kept_from"] is not None]
    assert {d["check"] for d in decisions} == {"after-run", "before-call"}
    assert {d["split_turn"] for d in decisions} == {True, False}


def test_the_tokenizer_does_not_change_the_decisions() -> None:
    """pi counts with its own estimate: the engine's tokenizer (cl100k here) changes no decision of a long run."""
    entry = LONG[0]
    c = long.to_conversation(long.by_name(entry["conversation"]))
    pol = policy(entry["settings"])
    pi = {d["at"]: d for d in entry["decisions"]}
    view, last = View(), None
    for i, prefix in long.prefixes(c):
        st = state_of(pol, prefix, model(entry["settings"]), view=view, tokenizer=RunConfig().tokenizer)
        if last is not None:
            usage = pi[c.messages[last].id]["usage"]
            reported(st, last, usage["input"], usage["output"])
        plan = pol.decide(st, "auto")
        assert (None if plan is None else c.messages[plan.start].id) == pi[c.messages[i].id]["kept_from"]
        if pi[c.messages[i].id]["kept_from"] is not None:
            view = summary_view(c, pi[c.messages[i].id]["kept_from"])
        last = i
