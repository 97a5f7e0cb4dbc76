"""General views on hand-built scripts: each kind of edit as both providers receive it, injected messages in
their slots, token counts that agree with what is rendered, classic views rendered as before, and a policy
that edits and injects, end to end."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.base import Plan, Policy
from policies.baselines import NoCompaction
from sim.core.conversation import PART_KINDS, Conversation, Message, Part
from sim.core.errors import InvalidRequest
from sim.core.model import MESSAGE_OVERHEAD, ModelConfig
from sim.core.state import RunState
from sim.core.view import (
    DEFAULT_MARKER,
    Edit,
    Injected,
    Rule,
    Summary,
    View,
    edit_parts,
    edited,
    edited_chars,
    spans_of,
)
from sim.replay import model as wire
from sim.replay.engine import Engine, RunConfig, run
from sim.replay.strategies import TOOL_NAMES, conversations
from tests.builders import Draft, asst, call, conv, fact, run_capture, sys, tool, tool_contents, user

PROVIDERS = ("anthropic", "openai")
LONG = " ".join(f"line{i} of the file says something" for i in range(40))  # ~1,400 chars, ASCII


def script() -> Conversation:
    batch = Draft(
        "tool",
        (
            Part("tool_result", "READ app.py: " + LONG, call_id="c1", name="read_file"),
            Part("tool_result", "GREP hit main.py:7", call_id="c2", name="grep"),
        ),
    )
    return conv(
        sys("You are a coding agent."),  # 0
        user("Fix the bug in app.py."),  # 1
        asst(
            "Looking.", [call("c1", "read_file", '{"path": "app.py"}'), call("c2", "grep", '{"pattern": "def main"}')]
        ),  # 2
        batch,  # 3
        asst(calls=[call("c3", "read_file", '{"path": "util.py"}')], thinking="THINK " + LONG),  # 4
        tool("c3", "READ util.py: " + LONG, name="read_file"),  # 5
        user("Now run the tests. " + LONG),  # 6
        asst("Done."),  # 7
    )


def engine(provider: str, tokenizer: str = "chars4", c: Conversation | None = None) -> Engine:
    c = c or script()
    eng = Engine(NoCompaction(), c, RunConfig(model=ModelConfig(provider=provider), tokenizer=tokenizer))  # type: ignore[arg-type]
    for m in c.messages:
        eng.append(m)
    return eng


def render(eng: Engine, view: View) -> list[dict[str, Any]]:
    """The request for ``view``, after checking that the engine's validation (from scratch) and the full
    validator of the provider both accept it."""
    out = eng.requests.render(view)
    eng.requests.reset()
    eng.requests.validate(view, None)
    (wire.validate_anthropic if eng.model.provider == "anthropic" else wire.validate_openai)(out)
    return out


def calls_of(rendered: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """``{call_id: (tool name, input)}`` of every tool call in a rendered request, in either wire format."""
    out: dict[str, tuple[str, Any]] = {}
    for msg in rendered:
        for c in msg.get("tool_calls", ()):
            out[c["id"]] = (c["function"]["name"], c["function"]["arguments"])
        if isinstance(msg.get("content"), list):
            out.update({b["id"]: (b["name"], b["input"]) for b in msg["content"] if b["type"] == "tool_use"})
    return out


def view_with(*edits: Edit) -> View:
    return View(edits=edits)


ORIGINAL = {"c1": "READ app.py: " + LONG, "c2": "GREP hit main.py:7", "c3": "READ util.py: " + LONG}
INPUTS = {"c1": '{"path": "app.py"}', "c2": '{"pattern": "def main"}', "c3": '{"path": "util.py"}'}


# -- 1. each kind of edit, as both providers receive it ------------------------------------------------------
@pytest.mark.parametrize("provider", PROVIDERS)
def test_results_placeholder_tools_and_exclude_tools(provider: str) -> None:
    eng = engine(provider)
    assert tool_contents(render(eng, View())) == ORIGINAL
    every = render(eng, view_with(Edit(Rule(text="[gone]"), 8)))
    assert tool_contents(every) == {"c1": "[gone]", "c2": "[gone]", "c3": "[gone]"}
    assert calls_of(every) == {k: (n, INPUTS[k]) for k, n in (("c1", "read_file"), ("c2", "grep"), ("c3", "read_file"))}
    kept = render(eng, view_with(Edit(Rule(text="[gone]", exclude_tools=frozenset({"grep"})), 8)))
    assert tool_contents(kept) == {**ORIGINAL, "c1": "[gone]", "c3": "[gone]"}
    only = render(eng, view_with(Edit(Rule(text="[gone]", tools=frozenset({"grep"})), 8)))
    assert tool_contents(only) == {**ORIGINAL, "c2": "[gone]"}
    # edits reach only the messages before their bound: message 5 (c3) is past 4
    bounded = render(eng, view_with(Edit(Rule(text="[gone]"), 4)))
    assert tool_contents(bounded) == {**ORIGINAL, "c1": "[gone]", "c2": "[gone]"}
    # the first rule that selects a part wins
    first = render(eng, view_with(Edit(Rule(text="[A]", tools=frozenset({"grep"})), 8), Edit(Rule(text="[B]"), 8)))
    assert tool_contents(first) == {"c1": "[B]", "c2": "[A]", "c3": "[B]"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_clearing_tool_inputs_keeps_call_ids_and_names(provider: str) -> None:
    eng = engine(provider)
    out = render(
        eng,
        view_with(
            Edit(Rule(kinds=frozenset({"tool_call"}), text="[input cleared]", exclude_tools=frozenset({"grep"})), 8)
        ),
    )
    assert calls_of(out) == {
        "c1": ("read_file", "[input cleared]"),
        "c2": ("grep", INPUTS["c2"]),
        "c3": ("read_file", "[input cleared]"),
    }
    assert tool_contents(out) == ORIGINAL


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dropping_thinking(provider: str) -> None:
    eng = engine(provider)
    full = render(eng, View())
    out = render(eng, view_with(Edit(Rule(kinds=frozenset({"thinking"}), action="drop"), 8)))
    if provider == "anthropic":

        def thinking_blocks(r: list[dict[str, Any]]) -> list[str]:
            return [b["thinking"] for m in r for b in m["content"] if b["type"] == "thinking"]

        assert thinking_blocks(full) == ["THINK " + LONG] and thinking_blocks(out) == []
        assert len(out) == len(full)  # the assistant message keeps its tool call
    else:
        assert out == full  # OpenAI never receives thinking
    assert calls_of(out) == calls_of(full)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("tokenizer", ["chars4", "cl100k_base"])
def test_truncation_keeps_max_tokens_around_the_marker(provider: str, tokenizer: str) -> None:
    eng = engine(provider, tokenizer)
    rule = Rule(
        kinds=frozenset({"text", "tool_result"}), action="truncate", max_tokens=12, head_share=0.25, text="<<{n} cut>>"
    )
    out = render(eng, view_with(Edit(rule, 7)))
    count = eng.tok.count
    texts = {**tool_contents(out), "u": wire_text(out[6 if provider == "anthropic" else 7])}
    originals = {**ORIGINAL, "u": "Now run the tests. " + LONG}
    for key, orig in originals.items():
        got = texts[key]
        if count(orig) <= 12:
            assert got == orig
            continue
        head, marker, tail = split_marker(got)
        assert orig.startswith(head) and orig.endswith(tail) and head and tail
        assert count(head) + count(tail) <= 12
        assert marker == f"<<{count(orig) - 12 if tokenizer != 'chars4' else math.ceil((len(orig) - 48) / 4)} cut>>"
        if tokenizer == "chars4":
            assert (len(head), len(tail)) == (12, 36)
    assert texts["c2"] == ORIGINAL["c2"]  # short enough already
    assert "Done." in wire_text(out[-1])  # message 7 is past the bound (and short)


def wire_text(msg: dict[str, Any]) -> str:
    c = msg["content"]
    return c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c)


def split_marker(text: str) -> tuple[str, str, str]:
    a = text.index("<<")
    b = text.index("cut>>", a) + len("cut>>")
    return text[:a], text[a:b], text[b:]


def plain(provider: str, role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}] if provider == "anthropic" else text}


def wire_of(provider: str, m: Any) -> list[dict[str, Any]]:
    return [wire.render_message_anthropic(m)] if provider == "anthropic" else wire.render_message_openai(m)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_injected_messages_and_summary_at_their_slots(provider: str) -> None:
    eng = engine(provider)
    msgs = eng.ledger.messages
    view = View(
        start=4,
        spans=((1, 2),),
        summary=Summary("SUMMARY", role="assistant"),
        summary_slot=1,
        injected=(
            Injected("INJ-A", role="assistant", slot=0),
            Injected("INJ-B", before_summary=True),
            Injected("INJ-C"),
            Injected("INJ-D", role="assistant", slot=0, before_summary=True),
        ),
    )
    want = [
        *wire_of(provider, msgs[0]),
        plain(provider, "assistant", "INJ-D"),
        plain(provider, "assistant", "INJ-A"),
        *wire_of(provider, msgs[1]),
        plain(provider, "user", "INJ-B"),
        plain(provider, "assistant", "SUMMARY"),
        plain(provider, "user", "INJ-C"),
        *(w for m in msgs[4:] for w in wire_of(provider, m)),
    ]
    assert render(eng, view) == want
    # the summary before the first span, an injected message before the tail
    moved = replace(view, summary_slot=0, injected=(Injected("INJ-E", role="assistant"),))
    want = [
        *wire_of(provider, msgs[0]),
        plain(provider, "assistant", "SUMMARY"),
        *wire_of(provider, msgs[1]),
        plain(provider, "assistant", "INJ-E"),
        *(w for m in msgs[4:] for w in wire_of(provider, m)),
    ]
    assert render(eng, moved) == want


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "rule",
    [
        Rule(kinds=frozenset({"tool_result"}), tools=frozenset({"grep"}), action="drop"),
        Rule(kinds=frozenset({"tool_result"}), action="drop"),
    ],
)
def test_dropping_results_without_their_calls_is_rejected(provider: str, rule: Rule) -> None:
    eng = engine(provider)
    view = view_with(Edit(rule, 4))
    out = eng.requests.render(view)
    with pytest.raises(InvalidRequest):
        eng.requests.validate(view, None)
    with pytest.raises(InvalidRequest):
        (wire.validate_anthropic if provider == "anthropic" else wire.validate_openai)(out)
    # dropping the calls too is a consistent request
    both = replace(rule, kinds=frozenset({"tool_result", "tool_call"}))
    out = render(engine(provider), view_with(Edit(both, 4)))
    assert "c2" not in calls_of(out) and "c2" not in tool_contents(out)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_ending_with_a_call_whose_result_was_dropped_is_rejected(provider: str) -> None:
    full = script()
    eng = engine(provider, c=replace(full, messages=full.messages[:6]))  # ends with c3's result (message 5)
    view = View(start=4, edits=(Edit(Rule(action="drop"), 6),))
    assert eng.requests.render(view)[-1]["role"] == "assistant"  # message 5 is not sent at all
    with pytest.raises(InvalidRequest):
        eng.requests.validate(view, None)
    render(eng, View(start=4))  # the same request with the result is fine


# -- 2. token counts agree with what is rendered -------------------------------------------------------------
def direct_size(eng: Engine, view: View) -> tuple[int, int]:
    """Tokens and messages of ``view`` counted message by message, without layout() or the ledger."""
    tokens = sent = 0
    for i, m in enumerate(eng.ledger.messages):
        if i == 0 and eng.has_system:
            rules: tuple[Rule, ...] = ()
        elif view.shows(i):
            rules = view.rules_at(i)
        else:
            continue
        e = edited(m, rules, eng.tok.truncate)
        if e is not None:
            tokens, sent = tokens + MESSAGE_OVERHEAD + sum(eng.measure.part_tokens(p) for p in e.parts), sent + 1
    extra = [*([view.summary] if view.summary else []), *view.injected]
    return tokens + sum(MESSAGE_OVERHEAD + eng.tok.count(x.text) for x in extra), sent + len(extra)


def direct_chars(eng: Engine, view: View) -> int:
    """Characters of ``view`` message by message with sim.core.view.edited_chars (the engine sums them its own way)."""
    shown = [i for i in range(len(eng.ledger.messages)) if (i == 0 and eng.has_system) or view.shows(i)]
    chars = sum(
        edited_chars(eng.ledger.messages[i], () if i == 0 and eng.has_system else view.rules_at(i), eng.tok.truncate)
        for i in shown
    )
    return chars + sum(len(x.text) for x in [*([view.summary] if view.summary else []), *view.injected])


@pytest.mark.parametrize("tokenizer", ["chars4", "cl100k_base"])
def test_view_size_of_edited_views_is_the_direct_count(tokenizer: str) -> None:
    eng = engine("anthropic", tokenizer)
    view = View(
        start=4,
        spans=((1, 2),),
        summary=Summary("a summary", compaction_id="x"),
        edits=(
            Edit(Rule(kinds=frozenset({"tool_call"}), text="[in]"), 5),
            Edit(Rule(kinds=frozenset({"thinking"}), action="drop"), 6),
            Edit(Rule(kinds=frozenset({"tool_result", "text"}), action="truncate", max_tokens=9), 7),
        ),
        injected=(Injected("re-attached util.py", slot=0),),
    )
    size = eng.view_size(view)
    assert size == direct_size(eng, view)
    assert size[1] == len(render(eng, view)) == 8  # system, injected, span, summary, messages 4..7
    assert size[0] < eng.view_size(View())[0]


@st.composite
def rules(draw: st.DrawFn) -> Rule:
    action = draw(st.sampled_from(["placeholder", "drop", "truncate"]))
    return Rule(
        kinds=frozenset(draw(st.sets(st.sampled_from(PART_KINDS), min_size=1))),
        tools=draw(st.none() | st.frozensets(st.sampled_from(TOOL_NAMES))),
        exclude_tools=draw(st.frozensets(st.sampled_from(TOOL_NAMES), max_size=2)),
        action=action,
        text=draw(st.sampled_from(["", "[x]", "[... {n} cut ...]"])),
        max_tokens=draw(st.integers(1, 40)) if action == "truncate" else 0,
        head_share=draw(st.sampled_from([0.0, 0.3, 0.5, 1.0])),
    )


@st.composite
def views(draw: st.DrawFn, n: int) -> View:
    start = draw(st.integers(0, n))
    spans = spans_of(draw(st.sets(st.integers(0, start - 1), max_size=6))) if start else ()
    slot = st.none() | st.integers(0, len(spans))
    summary = draw(
        st.none()
        | st.builds(
            Summary,
            st.sampled_from(["s", "a longer summary text"]),
            compaction_id=st.just("c"),
            role=st.sampled_from(["user", "assistant"]),
        )
    )
    injected = draw(
        st.lists(
            st.builds(
                Injected,
                st.sampled_from(["file", "re-attached file body " * 3]),
                role=st.sampled_from(["user", "assistant"]),
                slot=slot,
                before_summary=st.booleans(),
            ),
            max_size=3,
        )
    )
    edits = draw(st.lists(st.builds(Edit, rules(), st.integers(0, n)), max_size=4))
    return View(
        start=start, spans=spans, summary=summary, summary_slot=draw(slot), edits=tuple(edits), injected=tuple(injected)
    )


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversations(max_turns=6), st.data(), st.sampled_from(["chars4", "cl100k_base"]))
def test_view_size_equals_the_direct_count_for_random_edits(
    c: Conversation, data: st.DataObject, tokenizer: str
) -> None:
    eng = engine("anthropic", tokenizer, c)
    view = data.draw(views(len(c.messages)))
    tokens, sent = eng.view_size(view)
    assert (tokens, sent) == direct_size(eng, view)
    assert sent == len(eng.requests.render(view))  # Anthropic: one wire message per message sent
    assert eng.state.chars_in_view(view) == direct_chars(eng, view)
    later = Message("later", "user", (Part("text", "one more message " * 5),))
    eng.append(later)  # past every bound, in the tail: the edited prefix sums extend by its plain size
    assert eng.view_size(view) == direct_size(eng, view) == (tokens + eng.measure.sizes(later).tokens, sent + 1)
    assert eng.state.chars_in_view(view) == direct_chars(eng, view)


# -- 3. classic views render as before ------------------------------------------------------------------------
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("start, cleared, pinned", [(4, 5, 1), (2, 5, 1), (3, 4, 2), (6, 6, 1)])
def test_classic_view_renders_the_classic_order(provider: str, start: int, cleared: int, pinned: int) -> None:
    eng = engine(provider)
    msgs = eng.ledger.messages
    summary = Summary("the summary so far", compaction_id="c1")
    view = View.of(start=start, cleared_through=cleared, pinned=(pinned,), summary=summary, placeholder="[cleared]")

    def shown(i: int) -> Any:
        m = msgs[i]
        if i >= cleared or m.role != "tool":
            return m
        return replace(m, parts=tuple(replace(p, text="[cleared]") for p in m.parts))

    want = [
        *wire_of(provider, msgs[0]),
        *(wire_of(provider, shown(pinned)) if pinned < start else []),
        plain(provider, "user", summary.text),
        *(w for i in range(start, len(msgs)) for w in wire_of(provider, shown(i))),
    ]
    out = eng.requests.render(view)
    assert out == want
    assert view.cleared_through == cleared and view.pinned == ((pinned,) if pinned < start else ())
    if start <= 3 < cleared:
        assert set(tool_contents(out).values()) >= {"[cleared]"}


# -- 4. a policy that edits and injects, end to end -----------------------------------------------------------
@dataclass(frozen=True)
class ClearAndReattachConfig:
    trigger_tokens: int = 900


class ClearAndReattach(Policy):
    """Once over the trigger: clear tool results and inputs (grep's kept), re-attach app.py."""

    Config = ClearAndReattachConfig

    def decide(self, state: RunState, trigger: str) -> Plan | None:  # type: ignore[override]
        if state.view.edits or state.estimated_context_tokens() < self.config.trigger_tokens:
            return None
        rule = Rule(kinds=frozenset({"tool_result", "tool_call"}), exclude_tools=frozenset({"grep"}))
        newest = state.unit_start(len(state) - 1)  # the call and results the next reply answers stay
        return Plan(
            start=state.view.start,
            edits=(Edit(rule, newest),),
            mode="clear",
            injected=(Injected("re-attached file app.py: SECRET_LINE=42", facts=frozenset({"f-inj"})),),
        )


def long_script() -> Conversation:
    batch = (
        Part("tool_result", "app.py: SECRET_LINE=42 " + LONG, call_id="c0", name="read_file"),
        Part("tool_result", "hit main.py:7", call_id="g0", name="grep"),
    )
    drafts = [
        sys("You are a coding agent."),
        user("Fix the failing test.", id="u0"),
        asst("Looking.", [call("c0", "read_file", '{"path": "app.py"}'), call("g0", "grep")]),
        Draft("tool", batch, id="t0"),
    ]
    for k in range(1, 5):
        drafts += [
            asst(f"step {k}", [call(f"c{k}", "read_file", f'{{"path": "f{k}.py"}}')]),
            tool(f"c{k}", f"f{k}.py: HELPER_{k}=xyz " + LONG, name="read_file", id=f"t{k}"),
        ]
    drafts += [user("What were SECRET_LINE, HELPER_1 and the main hit?", id="u1"), asst("42, xyz, main.py:7")]
    facts = [
        fact(f, "recall", text, source, ["u1"])
        for f, text, source in [
            ("f-inj", "SECRET_LINE=42", "t0"),
            ("f-lost", "HELPER_1=xyz", "t1"),
            ("f-grep", "main.py:7", "t0"),
        ]
    ]
    return conv(*drafts, facts=facts)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_policy_that_clears_and_reattaches_end_to_end(provider: str) -> None:
    config = RunConfig(
        model=ModelConfig(provider=provider, context_window=2_000, output_reserve=200),  # type: ignore[arg-type]
        tokenizer="chars4",
        deep_checks=True,
    )
    c = long_script()
    res, captured, _ = run_capture(ClearAndReattach(), c, config)
    assert res.violations == []
    assert res.summary["finish_reason"] == "completed"
    assert len(res.compactions) == 1
    comp = res.compactions[0]
    assert comp["tokens_after"] < comp["tokens_before"]
    assert "f-lost" in comp["facts_lost"].split(",") and "f-inj" not in comp["facts_lost"]
    visible = {r["fact"]: r["visible"] for r in res.fact_rows}
    assert visible == {"f-inj": True, "f-lost": False, "f-grep": True}
    last = captured[-1].rendered
    assert wire_text(last[1]) == "re-attached file app.py: SECRET_LINE=42" and last[1]["role"] == "user"
    results = tool_contents(last)
    assert results["g0"] == "hit main.py:7"
    (edit,) = captured[-1].view.edits
    # the policy cleared what was in the log at the trigger, but for the newest call and result (live-turn)
    assert edit.before == 6 == c.index()["t2"] - 1
    placeholder = "[tool result cleared by compaction]"
    for k in range(5):
        cleared = c.index()[f"t{k}"] < edit.before
        assert (results[f"c{k}"] == placeholder) is cleared and (calls_of(last)[f"c{k}"][1] == placeholder) is cleared
    assert calls_of(last)["g0"] == ("grep", "{}")
    # without the policy the run overflows: the edits are what kept it going
    assert run(NoCompaction(), c, config).summary["finish_reason"] == "context-overflow"


def test_a_truncate_rule_marks_the_cut_not_a_clearing() -> None:
    m = Message("t", "tool", (Part("tool_result", "x" * 100, call_id="c", name="read"),))
    out = edited(m, (Rule(action="truncate", max_tokens=4),))
    assert out is not None
    assert out.parts[0].text == "x" * 8 + DEFAULT_MARKER.replace("{n}", "21") + "x" * 8


def test_a_plan_with_its_own_edits_keeps_the_clearing_bound() -> None:
    drop_thinking = Edit(Rule(kinds=frozenset({"thinking"}), action="drop"), 6)
    after = Plan(start=0, edits=(drop_thinking,)).view_from(View.of(cleared_through=5))
    assert after.cleared_through == 5 and after.edits[1:] == (drop_thinking,)
    assert Plan(start=0, cleared_through=0).view_from(after).edits == (drop_thinking,)


def test_a_placeholder_can_say_how_many_lines_it_replaced() -> None:
    # SWE-agent's "Old environment output: (N lines omitted)": {lines} is the replaced text's line count, in the
    # rendered request and in every size the engine keeps.
    rule = Rule(frozenset({"tool_result"}), text="Old environment output: ({lines} lines omitted)")
    m = Message("m", "tool", (Part("tool_result", "a\nb\nc", call_id="c1", name="bash"),))
    (part,) = edit_parts(m, (rule,))
    assert part is not None and part.text == "Old environment output: (3 lines omitted)"
    assert edited_chars(m, (rule,)) == len(part.text)
