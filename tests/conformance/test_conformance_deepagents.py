"""Our Deep Agents policy against ``deepagents``' own ``SummarizationMiddleware``, case by case
(``conformance/deepagents/``).

The golden file holds what ``deepagents`` (its version inside) sent the model from ``wrap_model_call`` on each
scripted state, with a fake chat model whose profile gives the case's ``max_input_tokens`` and the middleware built
with ``compute_summarization_defaults`` for it: the messages, in order (``SUMMARY`` for the summary message, ``*`` on
an assistant message whose tool arguments were truncated), whether it summarised, and the history file's folder. Here
the same list becomes a ``Conversation`` after the system prompt, on a model whose input budget is that
``max_input_tokens``; our policy decides once and the view is compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.deep_agents import HISTORY_PATH, SUMMARY_WRAPPER, DeepAgents, DeepAgentsConfig
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.view import Messages, Summary, View, layout
from tests.builders import case_conversation, state_of
from tests.conformance import long

GOLDEN_PATH = Path(__file__).parents[1] / "golden" / "conformance" / "deepagents.json"
GOLDEN: dict[str, Any] = json.loads(GOLDEN_PATH.read_text())
CASES: list[dict[str, Any]] = GOLDEN["cases"]
# compute_summarization_defaults for a model without a profile.
NO_PROFILE = DeepAgentsConfig(
    trigger="tokens:170000",
    keep="messages:6",
    truncate_trigger="messages:20",
    truncate_keep="messages:20",
    keep_last_user=False,
)
# Deep Agents' own cut: our default keeps a last user message the cut passes (test_the_default_keeps_the_task).
OWN_CUT = DeepAgentsConfig(keep_last_user=False)

# Where we knowingly differ: case -> why. Every other case sends exactly what Deep Agents sends.
KNOWN: dict[str, str] = {
    "mixed-write-file-arguments": "write_file calls with short arguments before the keep window: Deep Agents leaves "
    "them; the engine edits every write_file/edit_file call before the bound once one has arguments over max_length",
}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    return case_conversation(msgs, GOLDEN["system"])


def run_case(case: dict[str, Any], config: DeepAgentsConfig = OWN_CUT) -> dict[str, Any]:
    limit = case["settings"]["max_input_tokens"]
    policy = DeepAgents(config) if limit else DeepAgents(NO_PROFILE)
    model = ModelConfig(context_window=limit + 1_000, output_reserve=1_000) if limit else ModelConfig()
    c = conversation(case["input"])
    state = state_of(policy, c, model)
    plan = policy.decide(state, "auto")
    after = plan.view_from(state.view) if plan is not None else state.view
    rule = policy.truncate_rule()
    sent: list[str] = ["SUMMARY"] if plan is not None and plan.summarize else []  # first (summary_slot 0)
    for item in layout(after, len(c.messages), True):
        if isinstance(item, Messages):
            for i in range(item.a, item.b):
                if i == 0:
                    continue
                m = c.messages[i]
                touched = rule in item.rules and any(rule.selects(p) for p in m.calls)
                sent.append(m.id + ("*" if touched else ""))
        else:
            sent.append("SUMMARY")
    folder = None
    if plan is not None and plan.summarize:
        folder = HISTORY_PATH.format(session=DeepAgents.session(state)).rsplit("/", 1)[0]
    return {"view": sent, "summarised": plan is not None and plan.summarize, "history_folder": folder}


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return {k: case["expected"][k] for k in ("view", "summarised", "history_folder")}


def test_golden_file_names_the_package_and_version() -> None:
    assert GOLDEN["package"] == "deepagents" and GOLDEN["version"].count(".") == 2
    assert len(CASES) >= 10
    assert {c["expected"]["summarised"] for c in CASES} == {True, False}


def test_the_defaults_are_compute_summarization_defaults() -> None:
    """With a profile: fractions 0.85 and 0.10 for both; without: 170,000 tokens, 6 messages, and 20/20 messages."""
    with_profile = next(c for c in CASES if c["settings"]["max_input_tokens"])["expected"]["defaults"]
    assert "('fraction', 0.85)" in with_profile and "('fraction', 0.1)" in with_profile
    without = next(c for c in CASES if not c["settings"]["max_input_tokens"])["expected"]["defaults"]
    assert "('tokens', 170000)" in without and "('messages', 6)" in without and "('messages', 20)" in without
    cfg = DeepAgents().config
    assert (cfg.trigger, cfg.keep) == ("fraction:0.85", "fraction:0.1")


def test_the_default_keeps_the_task() -> None:
    """Our difference (``keep_last_user``, on by default): the task the cut passes stays in view after the summary."""
    case = next(c for c in CASES if c["name"] == "over-the-trigger-keeps-a-tenth")
    ours = run_case(case, DeepAgentsConfig())
    assert ours["view"][:2] == ["SUMMARY", "task"] and ours["view"][2:] == case["expected"]["view"][1:]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    if case["name"] in KNOWN:
        assert ours != expected(case), f"{case['name']} now agrees: drop it from KNOWN"
    else:
        assert ours == expected(case)


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases sending what Deep Agents sends (printed with ``-s``)."""
    agree = sum(1 for c in CASES if run_case(c) == expected(c))
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\ndeep-agents: {agree}/{len(CASES)} cases agree")


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG: list[dict[str, Any]] = GOLDEN["long"]


def long_decisions(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Our policy before every model call of a long conversation (Deep Agents' own cut: ``keep_last_user`` off), on a
    model whose input budget is the profile's ``max_input_tokens``, each decision made on Deep Agents' state: its
    summary (the fake model's, or LangChain's too-long fallback) and the messages from the cut its previous
    summarisation left, so one difference does not cascade. Per call: our count, whether we summarise and where the
    kept messages start, whether we truncate arguments."""
    c = long.to_conversation(long.by_name(entry["conversation"]), one_result_per_message=True)
    limit = entry["max_input_tokens"]
    model = ModelConfig(context_window=limit + 1_000, output_reserve=1_000)
    policy, view, out = DeepAgents(OWN_CUT), View(), []
    index = {m.id: k for k, m in enumerate(c.messages)}
    theirs = {d["at"]: d for d in entry["decisions"]}
    for i, prefix in long.prefixes(c):
        state = state_of(policy, prefix, model, view=view)
        plan = policy.decide(state, "auto")
        summarised = plan is not None and plan.summarize
        kept = prefix.messages[plan.start].id if plan is not None and plan.start < len(prefix.messages) else None
        at = c.messages[i].id
        out.append(
            {
                "at": at,
                "tokens": policy.count(state),
                "summarised": summarised,
                "kept_from": kept if summarised else None,
                "truncated": plan is not None and plan.edits != state.view.edits,
            }
        )
        if theirs[at]["summarised"]:
            start = index[theirs[at]["kept_from"]]
            text = SUMMARY_WRAPPER.replace("{path}", HISTORY_PATH.format(session=DeepAgents.session(state)))
            summary = Summary(text.replace("{summary}", theirs[at]["summary"]), through=start)
            view = View(start=start, summary=summary, summary_slot=0)
    return out


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long conversation: the same count (``count_tokens_approximately`` of the system prompt and
    the messages) and the same decision as Deep Agents' ``wrap_model_call`` (summarised, and where the kept messages
    start; arguments truncated: never, on either side, as no ``write_file``/``edit_file`` string argument in these
    conversations is over 2,000 characters); no tail result offloaded (``_clip_overflow_tail``). No difference is
    documented: every decision must agree."""
    ours = long_decisions(entry)
    theirs = [
        {**{k: d[k] for k in ("at", "tokens", "summarised", "kept_from")}, "truncated": bool(d["truncated"])}
        for d in entry["decisions"]
    ]
    assert not any(d["replaced"] for d in entry["decisions"])
    assert sum(d["summarised"] for d in theirs) >= 3
    share = long.agreement(ours, theirs)
    with capsys.disabled():
        print(f"\ndeepagents {entry['conversation']}: {share:.1%} of {len(ours)} model calls agree")
    differ = [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]
    assert not differ, f"{len(differ)} differences (ours, theirs): {differ[:3]}"
