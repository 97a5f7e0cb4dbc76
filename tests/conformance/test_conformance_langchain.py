"""Our LangChain policies against LangChain's own middlewares, case by case (``conformance/langchain/``).

The golden file holds what ``langchain`` (its version inside) did on each scripted message list: for
``ClearToolUsesEdit`` (through ``ContextEditingMiddleware.wrap_model_call``) whether it triggered and which
results and inputs it cleared with which text; for ``SummarizationMiddleware.before_model`` (with LangChain's
``FakeListChatModel``) whether it triggered, which messages it summarised and kept, the summary message, and
what the summariser was shown. Here the same list becomes a ``Conversation`` (no system prompt: the state's
messages are what both middlewares see) and our policy decides on it.

Every aspect is compared; a case where we knowingly differ is listed in ``KNOWN`` with the reason, and the
test checks that it still differs, so a fix is noticed. ``test_agreement_summary`` prints the tally.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policies.base import Plan
from policies.langchain import (
    SUMMARY_WRAPPER,
    LangChainClearToolUses,
    LangChainClearToolUsesConfig,
    LangChainSummarization,
    LangChainSummarizationConfig,
    approx_tokens,
)
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.tokenizers import Chars4
from sim.core.view import Summary, View, edit_parts
from sim.replay.request import flat_pieces
from tests.builders import Draft, asst, call, conv, state_of, tool, user
from tests.conformance import long

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "langchain.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]
OUTPUT_RESERVE = 1_000

# Where we knowingly differ: case -> (the aspects that differ, why). Every other case agrees on every aspect.
TRIGGER = frozenset({"triggered", "cleared", "kept"})
NOT_SUMMARISED = frozenset({"triggered", "summarized", "kept", "summary", "summariser_input"})
TOO_LONG = frozenset({"summary", "summariser_input"})
KNOWN: dict[str, tuple[frozenset[str], str]] = {
    "clear-parallel-batch-inputs": (
        frozenset({"cleared_inputs"}),
        "keep splits a parallel batch (the 3rd newest result is the batch's 2nd): LangChain clears the input of "
        "the batch's 1st call, whose result it cleared; our inputs edit stops at the assistant message that "
        "issued the kept result (an edit cannot pick calls by id), so no call of that message loses its arguments",
    ),
    "sum-cutoff-inside-parallel-batch": (
        TOO_LONG,
        "trim_messages(start_on='human') finds no human message in the newest 4,000 tokens, so LangChain writes "
        "'Previous conversation was too long to summarize.'; the engine's summariser is shown the newest pieces",
    ),
    "sum-trim-finds-no-human-message": (
        TOO_LONG,
        "as sum-cutoff-inside-parallel-batch: no human message in the newest 4,000 tokens of the span",
    ),
    "sum-trim-reaches-a-human-message": (
        frozenset({"summariser_input"}),
        "trim_messages(start_on='human') starts the summariser's input on the user message inside the window; "
        "the engine keeps the newest pieces within 4,000 tokens, from mid-message",
    ),
}


# -- the same input as a Conversation -------------------------------------------------------------------------
def conversation(msgs: list[dict[str, Any]]) -> tuple[Conversation, bool]:
    """The case's messages (a leading summary message left out: it becomes the view's summary)."""
    drafts: list[Draft] = []
    had_summary = bool(msgs) and msgs[0].get("summary", False)
    for m in msgs[1:] if had_summary else msgs:
        if m["role"] == "user":
            drafts.append(user(m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            calls = [call(c["id"], c["name"], json.dumps(c["args"])) for c in m["calls"]]
            drafts.append(asst(m["text"], calls, id=m["id"]))
        else:
            drafts.append(tool(m["call_id"], m["text"], name=m["name"], id=m["id"]))
    return conv(*drafts), had_summary


def model(settings: dict[str, Any]) -> ModelConfig:
    """A model whose input budget is the profile's ``max_input_tokens`` (200,000 without one)."""
    budget = settings.get("max_input_tokens", 200_000 - OUTPUT_RESERVE)
    return ModelConfig(provider="openai", context_window=budget + OUTPUT_RESERVE, output_reserve=OUTPUT_RESERVE)


# -- ClearToolUsesEdit ------------------------------------------------------------------------------------
def run_clear(case: dict[str, Any]) -> dict[str, Any]:
    s = case["settings"]
    cfg = LangChainClearToolUsesConfig(
        trigger=s["trigger"],
        clear_at_least=s.get("clear_at_least", 0),
        keep=s.get("keep", 3),
        clear_tool_inputs=s.get("clear_tool_inputs", False),
        exclude_tools=tuple(s.get("exclude_tools", ())),
        placeholder=s.get("placeholder", "[cleared]"),
    )
    policy = LangChainClearToolUses(cfg)
    c, _ = conversation(case["input"])
    state = state_of(policy, c, model(s))
    tokens = approx_tokens(state, state.view)
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    cleared, inputs, kept = [], [], []
    for i, m in enumerate(state.messages):
        after = edit_parts(m, view.rules_at(i))
        for before, p in zip(m.parts, after, strict=True):
            if p is None:
                continue
            if p.kind == "tool_result":
                (cleared if p.text == cfg.placeholder != before.text else kept).append(m.id)
            elif p.kind == "tool_call" and p.args != before.args:
                assert p.args == "{}"
                inputs.append(p.call_id)
    return {
        "triggered": tokens > cfg.trigger,
        "tokens": tokens,
        "cleared": cleared,
        "cleared_text": cfg.placeholder,
        "cleared_inputs": inputs,
        "kept": kept,
    }


# -- SummarizationMiddleware -----------------------------------------------------------------------------
def _spec(value: Any) -> str | None:
    """LangChain's trigger or keep value in our notation: ``kind:value``, ``&`` within a clause, ``|`` between."""
    if value is None:
        return None
    if isinstance(value, dict):
        return "&".join(f"{k}:{v}" for k, v in value.items())
    if value and isinstance(value[0], str):
        return f"{value[0]}:{value[1]}"
    return "|".join(str(_spec(v)) for v in value)


def summarization(case: dict[str, Any], **overrides: Any) -> tuple[LangChainSummarization, RunState, bool]:
    s = case["settings"]
    params: dict[str, Any] = {
        "trigger": _spec(s["trigger"]),
        "keep": _spec(s.get("keep", ["messages", 20])) or "messages:20",
        "chars_per_token": 4.0,  # the fake chat model is not an Anthropic one
        "keep_last_user": False,  # LangChain's own cut; the default keeps the last user message (KNOWN_DEFAULT)
    }
    cfg = LangChainSummarizationConfig(**{**params, **overrides})
    policy = LangChainSummarization(cfg)
    c, had_summary = conversation(case["input"])
    first = case["input"][0]
    view = View(summary=Summary(first["text"], through=0)) if had_summary else None
    return policy, state_of(policy, c, model(s), view=view), had_summary


def summariser_input(state: RunState, plan: Plan, had_summary: bool) -> list[str]:
    """The messages of the span whose text reaches the engine's summariser: the newest pieces within
    ``summary_input_newest_tokens`` (``sim.replay.engine``'s trimming, with the chars4 tokenizer), and the
    previous summary, which the engine always shows the summariser."""
    tok = Chars4()
    owners: list[str] = []
    pieces: list[str] = []
    for m in state.messages[: plan.start]:
        if pieces:
            pieces.append("\n\n")
            owners.append(m.id)
        for p in flat_pieces(m):
            pieces.append(p)
            owners.append(m.id)
    budget, k = plan.summary_request.input_newest_tokens or 10**9, len(pieces)
    while k > 0 and budget - tok.count(pieces[k - 1]) >= 0:
        k -= 1
        budget -= tok.count(pieces[k])
    seen = list(dict.fromkeys(owners[k:]))
    return (["summary"] if had_summary else []) + seen


def run_summarize(case: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    policy, state, had_summary = summarization(case, **overrides)
    tokens = approx_tokens(state, chars_per_token=4.0)
    triggered = policy.over_trigger(state)
    plan = policy.decide(state, "auto")
    if plan is None:
        return {"triggered": triggered, "tokens": tokens, "summarized": None}
    ids = [m.id for m in state.messages]
    fake = case["expected"].get("summary", {}).get("fake_summary", "FAKE SUMMARY")
    pinned = [ids[i] for a, b in plan.spans for i in range(a, b)] + [ids[i] for i in plan.pinned]
    return {
        "triggered": triggered,
        "tokens": tokens,
        "pinned": pinned,
        "summarized": (["summary"] if had_summary else []) + [i for i in ids[: plan.start] if i not in pinned],
        "kept": ids[plan.start :],
        "summary": {
            "role": "human" if plan.summary_request.role == "user" else plan.summary_request.role,
            "text": plan.summary_request.wrapper.replace("{summary}", fake),
            "fake_summary": fake,
        },
        "summariser_input": summariser_input(state, plan, had_summary),
        "summary_too_long_fallback": False,
    }


# -- comparing ----------------------------------------------------------------------------------------------
ASPECTS = {
    "clear": ("triggered", "cleared", "cleared_text", "cleared_inputs", "kept"),
    "summarize": ("triggered", "summarized", "kept", "summary", "summariser_input", "summary_too_long_fallback"),
}


def differences(case: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Aspect -> (LangChain's, ours) for every aspect that differs."""
    ours = run_clear(case) if case["kind"] == "clear" else run_summarize(case)
    theirs = case["expected"]
    out = {}
    for aspect in ASPECTS[case["kind"]]:
        if case["kind"] == "summarize" and theirs["summarized"] is None and aspect not in ("triggered", "summarized"):
            continue  # nothing was summarised: nothing more to compare
        a, b = theirs.get(aspect), ours.get(aspect)
        if aspect == "summariser_input" and a is not None and b is not None:
            a, b = a[:1], b[:1]  # where the summariser's input starts
            if theirs["summary_too_long_fallback"]:
                a = ["(nothing: too long to summarize)"]
        if aspect == "summary_too_long_fallback":
            continue  # folded into summariser_input
        if a != b:
            out[aspect] = (a, b)
    return out


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "langchain" and golden["version"].count(".") == 2
    assert len(CASES) >= 12
    assert {c["kind"] for c in CASES} == {"clear", "summarize"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    diff = differences(case)
    if case["name"] in KNOWN:
        aspects, reason = KNOWN[case["name"]]
        assert set(diff) == aspects, f"{case['name']} differs on {sorted(diff)}, expected {sorted(aspects)}: {reason}"
    else:
        assert diff == {}, diff


@pytest.mark.parametrize("kind", ["clear", "summarize"])
def test_token_count_is_close_to_langchains(kind: str) -> None:
    """Our count from prefix sums (characters plus role and tool-call framing) is within 2% of
    ``count_tokens_approximately`` on every case: triggers agree except right at the boundary."""
    for case in (c for c in CASES if c["kind"] == kind):
        ours = (run_clear(case) if kind == "clear" else run_summarize(case))["tokens"]
        theirs = case["expected"]["tokens"]
        assert abs(ours - theirs) <= 0.02 * theirs, (case["name"], ours, theirs)


def test_the_default_pins_the_last_user_message_that_langchain_summarises() -> None:
    """With ``keep_last_user`` on (our default, the harness's live-turn contract) every case summarises what
    LangChain summarised except the last user message when the cut passes it: that one stays, pinned, right
    after the summary. In an agent run with one task, that is the task; in ``sum-long-live-turn`` the user
    message inside the live turn."""
    passed = 0
    for case in CASES:
        if case["kind"] != "summarize" or not case["expected"]["summarized"] or case["name"] in KNOWN:
            continue
        ours = run_summarize(case, keep_last_user=True)
        theirs = case["expected"]
        last_user = [m["id"] for m in case["input"] if m["role"] == "user" and not m.get("summary")][-1]
        if last_user in theirs["summarized"]:
            passed += 1
            assert ours["summarized"] == [i for i in theirs["summarized"] if i != last_user], case["name"]
            assert ours["pinned"] == [last_user], case["name"]
        else:
            assert ours["summarized"] == theirs["summarized"], case["name"]
    assert passed >= 5


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases agreeing on every aspect, per policy (printed with ``-s``)."""
    lines = []
    for kind, policy in (("clear", "langchain-clear-tool-uses"), ("summarize", "langchain-summarization")):
        cases = [c for c in CASES if c["kind"] == kind]
        agree = sum(1 for c in cases if not differences(c))
        lines.append(f"{policy}: {agree}/{len(cases)} cases agree on every aspect")
        assert agree + sum(1 for c in cases if c["name"] in KNOWN) == len(cases)
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG = json.loads(GOLDEN.read_text())["long"]


@pytest.mark.parametrize("entry", LONG["counts"], ids=[e["conversation"] for e in LONG["counts"]])
def test_long_counts(entry: dict[str, Any]) -> None:
    """``count_tokens_approximately`` of the history before every model call of a long, tool-heavy conversation, with
    the scenarios' call ids and with Claude Code's 30-character ones: ours equal to the token (well within 1%)."""
    c = long.to_conversation(long.by_name(entry["conversation"]), system=False, one_result_per_message=True)
    pol = LangChainSummarization()
    ours = [approx_tokens(state_of(pol, prefix), chars_per_token=4.0) for _, prefix in long.prefixes(c)]
    worst = max(abs(a - b) / b for a, b in zip(ours, entry["counts"], strict=True) if b)
    assert worst <= 0.01
    assert ours == entry["counts"]


def long_summarization(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our SummarizationMiddleware over the long conversation's model calls, the view carried from call to call, each
    summary the generator's fake one; with ``keep_last_user`` off, as LangChain keeps no last user message. Also
    each decision's class of difference (``""`` where none is documented): ``not-shrinking`` where LangChain
    summarises and we do not only because the summary would not shrink the view (our plan_shrinks; the cut is
    LangChain's); ``summary-only`` where LangChain, its kept messages still over the trigger, summarises the previous
    summary alone again (the ``compaction-loop`` we declare) and we have nothing new to summarise."""
    c = long.to_conversation(long.by_name(entry["conversation"]), system=False, one_result_per_message=True)
    cfg = LangChainSummarizationConfig(trigger=f"tokens:{entry['trigger']}", chars_per_token=4.0, keep_last_user=False)
    policy, view, out, classes = LangChainSummarization(cfg), View(), [], []
    theirs = {d["at"]: d["kept_from"] for d in entry["decisions"]}
    index = {m.id: k for k, m in enumerate(c.messages)}
    summary = Summary(SUMMARY_WRAPPER.format(summary="FAKE SUMMARY"))
    for i, prefix in long.prefixes(c):
        state = state_of(policy, prefix, view=view)
        plan = policy.decide(state, "auto")
        kept = None
        if plan is not None:
            kept = prefix.messages[plan.start].id if plan.start < len(prefix.messages) else None
        at = c.messages[i].id
        out.append({"at": at, "kept_from": kept})
        cut = policy._cutoff(state) if plan is None and policy.over_trigger(state) else None
        same_cut = cut is not None and cut < len(prefix.messages) and prefix.messages[cut].id == theirs[at]
        only_summary = plan is None and view.summary is not None and theirs[at] == prefix.messages[view.start].id
        classes.append("not-shrinking" if same_cut else "summary-only" if only_summary else "")
        # The next decision is made on LangChain's state, so each decision is compared on the same history.
        if theirs[at] is not None:
            view = replace(view, start=index[theirs[at]], spans=(), summary=summary, summary_slot=0)
    return out, classes


def long_clear(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Our ClearToolUsesEdit over the long conversation's model calls (the view carried): results cleared."""
    c = long.to_conversation(long.by_name(entry["conversation"]), system=False, one_result_per_message=True)
    policy, view, out = LangChainClearToolUses(LangChainClearToolUsesConfig(trigger=entry["trigger"])), View(), []
    for i, prefix in long.prefixes(c):
        state = state_of(policy, prefix, view=view)
        plan = policy.decide(state, "auto")
        if plan is not None:
            view = plan.view_from(view)
        cleared = sum(
            1
            for k, m in enumerate(prefix.messages)
            for p in edit_parts(m, view.rules_at(k))
            if p is not None and p.kind == "tool_result" and p.text == CLEARED_TEXT
        )
        out.append({"at": c.messages[i].id, "cleared": cleared})
    return out


CLEARED_TEXT = "[cleared]"


@pytest.mark.parametrize(
    ("kind", "entry"),
    [("summarization", e) for e in LONG["summarization"]] + [("clear", e) for e in LONG["clear_tool_uses"]],
    ids=[f"sum-{e['conversation']}" for e in LONG["summarization"]]
    + [f"clear-{e['conversation']}" for e in LONG["clear_tool_uses"]],
)
def test_long_decisions(kind: str, entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long conversation: the same decision as LangChain's middleware (summarised, and where the
    kept messages start; results cleared)."""
    if kind == "summarization":
        ours, classes = long_summarization(entry)
    else:
        ours, classes = long_clear(entry), [""] * len(entry["decisions"])
    share = long.agreement(ours, entry["decisions"])
    differ = [k for k, (a, b) in enumerate(zip(ours, entry["decisions"], strict=True)) if a != b]
    undocumented = [ours[k]["at"] for k in differ if not classes[k]]
    counted = 1 - len(undocumented) / len(ours)
    with capsys.disabled():
        print(
            f"\nlangchain {kind} {entry['conversation']}: {share:.1%} of {len(ours)} model calls agree, "
            f"{counted:.1%} with documented differences ({', '.join(classes[k] for k in differ) or 'none'})"
        )
    assert not undocumented, f"undocumented differences at {undocumented}"
