"""Property tests: generated conversations are valid and stressful, every bundled policy passes
``check_policy``, every declared deviation really happens, and deliberately broken policies are
caught with a small counterexample.

Bugs these checks find in the engine or the bundled policies, while open, are listed in
``broken_policies.OPEN_ISSUES``: the per-policy checks tolerate exactly those invariants for
exactly those policies, and each is pinned by an ``xfail(strict=True)`` repro at the end of this
module, which fails loudly once the bug is fixed. Fixed ones stay there as plain regression tests
(none is open today).

The per-policy checks run on the exact ``cl100k_base`` tokenizer (what ``csim check`` uses); the
broken-policy and determinism checks use ``chars4``, which is enough to break an invariant and
keeps the suite fast.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from broken_policies import (
    BROKEN,
    OPEN_ISSUES,
    ClearsPendingResults,
    DropsLastUser,
    DropsPendingTurn,
    GrowsView,
    RewritesLog,
)
from hypothesis import HealthCheck, Phase, find, given, settings

from policies import POLICIES, load_policy_class, make_policy
from policies.base import Plan, Policy
from sim.core.conversation import Conversation, Message, Part, validate
from sim.core.invariants import NAMES as INVARIANTS
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay.checker import CheckReport, check_policy, effective_params, generated
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import conversations, small_model
from tests.builders import state_of
from tests.policies.reverts import revert_after_compaction
from tests.policies.test_adk import adk_sliding_grows, adk_token_grows
from tests.policies.test_autogen import token_limited_drops_live_turn
from tests.policies.test_cline import sdk_summarises_the_task
from tests.policies.test_goose import compact_drops_live_turn
from tests.policies.test_inspect_ai import trim_drops_live_turn
from tests.policies.test_kimi_cli import kept_pair_over_trigger
from tests.policies.test_letta import sliding_window_summarises_the_task
from tests.policies.test_nexau import (
    kept_iterations_over_the_threshold,
    large_results_after_thinking,
    pending_turns_resolved_one_by_one,
    texts_over_the_threshold,
)
from tests.policies.test_swe_agent import released_backlog

WINDOW = 8_000
EXAMPLES = 60
# effect-agent never compacts without a limit, and its 20K kept tail and 50 KiB bound are sized for
# a 200K window; scaled to the 8K test window: compact at 60%, keep a quarter, bound results at 4 KiB.
POLICY_PARAMS: dict[str, dict[str, str]] = {
    "effect-agent": {"context_token_limit": "4800", "keep_recent_tokens": "2000", "max_bytes": "4096"},
}
NAMES = POLICIES.names()
QUICK = settings(
    max_examples=150,
    phases=[Phase.generate],
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@functools.cache
def corpus() -> tuple[Conversation, ...]:
    """The generated conversations every bundled policy is checked on: drawn once per worker, not once per policy
    (drawing them is about a third of a check)."""
    return generated(EXAMPLES, window=WINDOW)


@functools.cache
def report_for(name: str) -> CheckReport:
    """One check per bundled policy, shared by the pass test and the deviation tests."""
    return check_policy(
        name,
        POLICY_PARAMS.get(name, {}),
        examples=EXAMPLES,
        window=WINDOW,
        allow=OPEN_ISSUES.get(name, {}),
        corpus=corpus(),
    )


def ref(cls: type[Policy]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


class Shown:
    """A conversation with a short repr: ``find`` builds the repr of what it found (and warns, which
    this suite turns into an error, when that passes 30 kB)."""

    def __init__(self, conversation: Conversation) -> None:
        self.c = conversation

    def __repr__(self) -> str:
        return f"<conversation of {len(self.c.messages)} messages>"


def search(predicate, max_examples: int = 150) -> Conversation:  # type: ignore[no-untyped-def]
    """The first generated conversation that satisfies ``predicate`` (no shrinking: any will do)."""
    found = find(
        conversations(window=WINDOW).map(Shown),
        lambda s: predicate(s.c),
        settings=settings(QUICK, max_examples=max_examples),
    )
    return found.c


# -- hand-built conversations ----------------------------------------------------------------------
CFG = RunConfig(model=small_model(WINDOW), tokenizer="chars4", deep_checks=True)


def _s() -> Message:
    return Message("m0", "system", (Part("text", "sys"),))


def _u(i: int, text: str, *extra: Part, **kw: object) -> Message:
    return Message(f"m{i}", "user", (Part("text", text), *extra), **kw)  # type: ignore[arg-type]


def _a(i: int, text: str = "", calls: tuple[str, ...] = (), extra: tuple[Part, ...] = (), **kw: object) -> Message:
    parts = (
        ([Part("text", text)] if text else [])
        + list(extra)
        + [Part("tool_call", call_id=c, name="read", args="{}") for c in calls]
    )
    return Message(f"m{i}", "assistant", tuple(parts), **kw)  # type: ignore[arg-type]


def _t(i: int, call: str, chars: int) -> Message:
    return Message(f"m{i}", "tool", (Part("tool_result", "x " * (chars // 2), call_id=call, name="read"),))


def _cmd(i: int) -> Message:
    return Message(f"m{i}", "user", (Part("command", name="compact"),))


def _violations(policy: Policy | str, *messages: Message, **params: str) -> list[str]:
    p = make_policy(policy, params) if isinstance(policy, str) else policy
    result = Engine(p, Conversation("repro", messages), CFG).run()
    return [str(v) for v in result.violations]


def _change(change_id: str) -> Part:
    return Part("change", "edit a.py", ref=change_id)


def _revert(change_id: str) -> Part:
    return Part("revert", "undo", ref=change_id)


# -- the generator ----------------------------------------------------------------------------------
def unit_tokens(conv: Conversation) -> list[int]:
    """Exact (cl100k) prompt tokens of each atomic unit, as the engine counts and groups them."""
    engine = Engine(make_policy("none"), conv, RunConfig(model=ModelConfig(context_window=10**7)))
    engine.run()
    led = engine.ledger
    sizes: dict[int, int] = {}
    for i in range(len(led.messages)):
        u = led.unit_start[i]
        sizes[u] = sizes.get(u, 0) + led.tokens_prefix[i + 1] - led.tokens_prefix[i]
    return list(sizes.values())


@settings(max_examples=40, deadline=None)  # the first example pays for loading the cl100k encoding
@given(conversations(window=WINDOW))
def test_generated_conversations_are_valid_and_every_unit_fits(conv: Conversation) -> None:
    assert validate(conv) == []
    assert max(unit_tokens(conv)) < 0.4 * WINDOW
    pos = conv.index()
    for f in conv.facts:
        src = conv.messages[pos[f.source]]
        assert any(f.text in p.text for p in src.parts), f"fact {f.id} is not verbatim in {f.source}"
        assert all(pos[n] > pos[f.source] for n in f.needed_at)


def _has_thinking_loop(c: Conversation) -> bool:
    """A thinking assistant message with calls whose results are followed by another assistant message:
    one atomic unit of several requests."""
    ms = c.messages
    for i, m in enumerate(ms):
        if m.role == "assistant" and m.calls and any(p.kind == "thinking" for p in m.parts):
            j = i + 1
            while j < len(ms) and ms[j].role == "tool":
                j += 1
            if j < len(ms) and ms[j].role == "assistant":
                return True
    return False


def _unresolved_pending(c: Conversation) -> bool:
    resolved = {r for m in c.messages for r in m.resolves}
    return any(m.pending and m.id not in resolved for m in c.messages)


FEATURES = {
    "parallel batch": lambda c: any(len(m.calls) >= 3 for m in c.messages),
    "results split over tool messages": lambda c: any(
        a.role == b.role == "tool" for a, b in zip(c.messages, c.messages[1:], strict=False)
    ),
    "thinking tool loop": _has_thinking_loop,
    "huge tool result": lambda c: any(len(p.text) > 0.15 * WINDOW * 4 for m in c.messages for p in m.results),
    "error result": lambda c: any(p.is_error for m in c.messages for p in m.results),
    "revert of an earlier change": lambda c: any(p.kind == "revert" for m in c.messages for p in m.parts),
    "pending resolved later": lambda c: any(m.resolves for m in c.messages),
    "pending never resolved": _unresolved_pending,
    "/compact": lambda c: any(m.command == "compact" for m in c.messages),
    "fact needed later": lambda c: any(f.needed_at for f in c.facts),
    "over the input budget": lambda c: sum(unit_tokens(c)) > small_model(WINDOW).input_budget,
}


@pytest.mark.parametrize("feature", FEATURES, ids=list(FEATURES))
def test_generator_reaches(feature: str) -> None:
    search(FEATURES[feature])


# -- every bundled policy passes ------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES, ids=NAMES)
def test_bundled_policy_passes_check(name: str) -> None:
    """No violation beyond the policy's known deviations and its open issues (each pinned below)."""
    report = report_for(name)
    assert report.passed, report.render()
    assert report.examples >= EXAMPLES
    last = report.render().splitlines()[-1]
    assert last.startswith(f"PASS {name}: {report.examples} examples, no violation")


DEVIATIONS = [(n, d) for n in NAMES for d in sorted(load_policy_class(n).known_deviations)]


def _effect_agent_live_turn() -> Conversation:
    """A live turn whose assistant text alone outgrows the kept tail: the summary takes its opening."""
    return Conversation(
        "live-turn",
        (
            _s(),
            _u(1, "task"),
            _a(2, "x " * 3500, ("c1",)),
            _t(3, "c1", 20),
            _a(4, "y " * 3500, ("c2",)),
            _t(5, "c2", 20),
            _a(6, "z " * 3500, ("c3",)),
            _t(7, "c3", 20),
            _a(8, "ok"),
        ),
    )


def _effect_agent_prunes_every_turn() -> Conversation:
    """``prune`` mode (``HAND_BUILT_PARAMS``): the assistant's own text fills the limit, so clearing one more result
    before every call never brings the view under it (issue 35: declared ``compaction-loop``)."""
    msgs: list[Message] = [_s(), _u(1, "task")]
    for k in range(12):
        msgs += [_a(2 + 2 * k, "x" * 2800, (f"c{k}",)), _t(3 + 2 * k, f"c{k}", 1200)]
    return Conversation("compaction-loop", (*msgs, _a(26, "ok")))


def _clears_the_newest_batch(old_size: int, batch_size: int) -> Conversation:
    """Four parallel calls, one result each, and 3 kept: the batch's first result is cleared as it is answered."""
    old = (_a(2, calls=("c1",)), _t(3, "c1", old_size), _a(4, calls=("c2",)), _t(5, "c2", old_size))
    batch = (_a(6, calls=("b1", "b2", "b3", "b4")), *(_t(7 + k, f"b{k + 1}", batch_size) for k in range(4)))
    return Conversation("live-turn", (_s(), _u(1, "task"), *old, *batch, _a(11, "ok")))


def _cloudflare_live_turn() -> Conversation:
    """/compact keeps only the last record (issue 11, item 1); a reply with no new user message follows it."""
    say = "words " * 200
    return Conversation(
        "live-turn",
        (_s(), _u(1, say), _a(2, say, ("c1",)), _t(3, "c1", 1200), _a(4, say), _cmd(5), _a(6, "more")),
    )


def _revert_after_a_summary(steps: int = 40) -> Conversation:
    """A change in the first step, ``steps`` tool steps, then its revert: the change is long summarised."""
    msgs: list[Message] = [_s(), _u(1, "task"), _a(2, "edit", ("c0",), (_change("ch1"),)), _t(3, "c0", 40)]
    for k in range(1, steps + 1):
        msgs += [_a(2 + 2 * k, "step", (f"c{k}",)), _t(3 + 2 * k, f"c{k}", 40)]
    i = 4 + 2 * steps
    msgs += [_a(i, "undo", (f"c{steps + 1}",), (_revert("ch1"),)), _t(i + 1, f"c{steps + 1}", 40), _a(i + 2, "ok")]
    return Conversation("revert-after-summary", tuple(msgs))


def _live_thinking_loop(steps: int = 30, size: int = 1_200) -> Conversation:
    """One user task answered by a long tool loop whose first reply alone thinks (no interleaved thinking): a cut
    inside it that drops that reply leaves the later ones opening the request's final turn without thinking."""
    msgs: list[Message] = [_s(), _u(1, "task")]
    for k in range(steps):
        a = _a(2 + 2 * k, "step", (f"c{k}",))
        if k == 0:
            a = Message(a.id, "assistant", (Part("thinking", "plan the work " * 20), *a.parts))
        msgs += [a, _t(3 + 2 * k, f"c{k}", size)]
    return Conversation("live-thinking-loop", (*msgs, _a(2 + 2 * steps, "done")))


def _live_thinking_loop_with_replies(steps: int = 8) -> Conversation:
    """One user task answered by a tool loop whose first reply alone thinks, each step followed by a short text
    reply: a reducer whose cut starts a chain of calls and results may cut after a reply and drop the first step."""
    msgs: list[Message] = [_s(), _u(1, "task")]
    for k in range(steps):
        i = 2 + 3 * k
        a = _a(i, "", (f"c{k}",))
        if k == 0:
            a = Message(a.id, "assistant", (Part("thinking", "plan the work " * 20), *a.parts))
        msgs += [a, _t(i + 1, f"c{k}", 800), _a(i + 2, f"done step {k}")]
    return Conversation("live-thinking-loop-with-replies", tuple(msgs))


# Hand-built fallbacks, for deviations the policy's 60 generated examples happen not to show.
HAND_BUILT = {
    ("cline", "atomic-units"): _live_thinking_loop,
    ("semantic-kernel-summarization", "atomic-units"): _live_thinking_loop_with_replies,
    ("inspect-trim", "atomic-units"): _live_thinking_loop,
    ("langchain-summarization", "atomic-units"): _live_thinking_loop,
    ("cline-legacy", "atomic-units"): _live_thinking_loop,
    ("strands-sliding-window", "revert-resolution"): revert_after_compaction,
    ("strands-summarizing", "revert-resolution"): revert_after_compaction,
    ("letta", "atomic-units"): _live_thinking_loop,
    ("kimi-cli", "atomic-units"): _live_thinking_loop,
    ("opencode", "atomic-units"): _live_thinking_loop,
    ("roo-code", "atomic-units"): _live_thinking_loop,
    ("deep-agents", "atomic-units"): _live_thinking_loop,
    ("docker-agent", "atomic-units"): _live_thinking_loop,
    ("mastra-observational-memory", "revert-resolution"): revert_after_compaction,
    ("mastra-observational-memory", "live-turn"): _live_thinking_loop,
    ("effect-agent", "atomic-units"): _live_thinking_loop,
    ("jetbrains-summary", "atomic-units"): lambda: _live_thinking_loop(steps=40, size=200),
    ("jetbrains-hybrid", "atomic-units"): lambda: _live_thinking_loop(steps=60, size=200),
    ("langchain-clear-tool-uses", "live-turn"): lambda: _clears_the_newest_batch(9000, 40),
    ("inspect-edit", "live-turn"): lambda: _clears_the_newest_batch(13000, 400),  # over 0.9 of the window
    ("cloudflare-os", "live-turn"): _cloudflare_live_turn,
    ("effect-agent", "live-turn"): _effect_agent_live_turn,
    ("effect-agent", "compaction-loop"): _effect_agent_prunes_every_turn,
    ("inspect-trim", "live-turn"): trim_drops_live_turn,
    ("autogen-token-limited", "live-turn"): token_limited_drops_live_turn,
    ("jetbrains-summary", "revert-resolution"): _revert_after_a_summary,
    ("cline", "live-turn"): sdk_summarises_the_task,
    ("letta", "live-turn"): sliding_window_summarises_the_task,
    ("adk-token", "compaction-shrinks"): adk_token_grows,
    ("adk-sliding", "compaction-shrinks"): adk_sliding_grows,
    ("goose", "live-turn"): compact_drops_live_turn,
    ("kimi-cli", "compaction-loop"): kept_pair_over_trigger,
    ("nexau-tool-result-compaction", "compaction-loop"): texts_over_the_threshold,
    ("nexau-summary", "compaction-loop"): kept_iterations_over_the_threshold,
    # what the harness keeps whole (an unresolved pending turn) holds the view over: no guard stops the next one
    ("anthropic-on-demand-compaction", "compaction-loop"): pending_turns_resolved_one_by_one,
    ("coder", "compaction-loop"): pending_turns_resolved_one_by_one,
    ("aider", "compaction-loop"): pending_turns_resolved_one_by_one,
    ("deep-agents", "compaction-loop"): pending_turns_resolved_one_by_one,
    ("nexau-summary", "atomic-units"): large_results_after_thinking,
    ("nexau-tool-result-compaction", "atomic-units"): large_results_after_thinking,
    ("claude-code-microcompact", "compaction-loop"): lambda: _golden("claude-code-microcompact-refills-at-once"),
    ("jetbrains-summary", "compaction-loop"): released_backlog,
    ("jetbrains-hybrid", "compaction-loop"): released_backlog,
}
#: Parameters a hand-built case sets beyond the check's (a deviation of one mode only).
HAND_BUILT_PARAMS = {
    ("effect-agent", "compaction-loop"): {"mode": "prune"},
    ("adk-sliding", "compaction-shrinks"): {"compaction_interval": "3", "overlap_size": "0"},
}
#: Hand-built cases counted with the run's default tokenizer, not chars4 (a golden counterexample of csim check).
COUNTED = {("claude-code-microcompact", "compaction-loop")}


def _golden(name: str) -> Conversation:
    from pathlib import Path

    from sim.formats.native import read as read_native

    [conv] = read_native(Path(__file__).parent / "golden" / "counterexamples" / f"{name}.jsonl").conversations
    return conv


def _golden_engine(name: str, golden: str) -> tuple[Policy[Any], Engine]:
    """Policy ``name`` as ``csim check`` configures it, and an engine (deep checks) over a golden counterexample."""
    from sim.core.params import make_config

    cls = POLICIES.get(name)
    params, _ = effective_params(cls, POLICY_PARAMS.get(name, {}), WINDOW)
    policy = cls(make_config(cls.Config, params))
    return policy, Engine(policy, _golden(golden), RunConfig(model=small_model(WINDOW), deep_checks=True))


@pytest.mark.parametrize(("name", "deviation"), DEVIATIONS, ids=[f"{n}:{d}" for n, d in DEVIATIONS])
def test_declared_deviation_really_happens(name: str, deviation: str) -> None:
    """A declaration in ``known_deviations`` must not hide nothing: show the deviation on a generated
    conversation (the policy's own check, else a further search) or on a hand-built one."""
    if report_for(name).deviations.get(deviation):
        return
    cls = load_policy_class(name)
    params, _ = effective_params(cls, POLICY_PARAMS.get(name, {}), WINDOW)
    counted = (name, deviation) in COUNTED
    config = RunConfig(model=small_model(WINDOW), tokenizer=RunConfig().tokenizer if counted else "chars4")

    def shows_it(conv: Conversation) -> bool:
        result = Engine(make_policy(name, params), conv, config).run()
        return any(v.invariant == deviation for v in result.violations)

    if (name, deviation) in HAND_BUILT:
        params = {**params, **HAND_BUILT_PARAMS.get((name, deviation), {})}
        assert shows_it(HAND_BUILT[name, deviation]())
    else:
        search(shows_it, max_examples=400)


# -- broken policies are caught ---------------------------------------------------------------------
#: Every broken policy shows within scripts of six turns, which keeps the search and the shrink short; one that
#: needs a pending turn (a reply asking for an approval, one turn in six) gets more examples to find one.
BROKEN_TURNS = 6
BROKEN_EXAMPLES = {ClearsPendingResults: 200, DropsPendingTurn: 200}
#: Small, not minimal: Hypothesis's shrink is heuristic and its derandomised search is seeded by the checker's own
#: source, so an edit there can move a shrink by a message or two (a reformat took ForgetsReverts from 8 to 9).
#: Twelve messages still read at a glance; the listing test below checks what the report shows of them.
MAX_COUNTEREXAMPLE = 12


def test_every_invariant_has_a_broken_policy() -> None:
    assert len(BROKEN) >= 30
    assert set(INVARIANTS) <= set(BROKEN.values())


@pytest.mark.parametrize("cls", list(BROKEN), ids=[c.__name__ for c in BROKEN])
def test_broken_policy_is_caught_by_its_own_invariant(cls: type[Policy]) -> None:
    """Every other invariant is tolerated (``allow``), so the invariant the policy breaks must catch it alone,
    whatever the sizes: not through a side effect such as a placeholder longer than what it replaced."""
    target = BROKEN[cls]
    report = check_policy(
        ref(cls),
        {},
        examples=BROKEN_EXAMPLES.get(cls, EXAMPLES),
        window=WINDOW,
        tokenizer="chars4",
        max_turns=BROKEN_TURNS,
        allow=set(INVARIANTS) - {target},
    )
    assert not report.passed, report.render()
    ce = report.counterexample
    assert ce is not None
    assert ce.invariants() == [target], report.render()
    assert len(ce.conversation.messages) <= MAX_COUNTEREXAMPLE, report.render()
    text = report.render()
    assert text.startswith(f"FAIL {ref(cls)}: {target} ")
    assert f"conversation ({len(ce.conversation.messages)} messages" in text
    for i, m in enumerate(ce.conversation.messages):  # one line per message: index, id, role
        assert re.search(rf"^\s*{i} {m.id}\s+{m.role}\b", text, re.M)
    if target == "exception":
        assert "policy bug" in text or "AttributeError" in text
    else:
        assert f"[{target}]" in text


def test_a_corpus_that_fails_is_searched_and_shrunk() -> None:
    """Checked over a shared corpus, a broken policy is still reported by Hypothesis's shrunk counterexample, not by
    the corpus conversation that first failed."""
    cls = DropsLastUser
    report = check_policy(
        ref(cls),
        {},
        window=WINDOW,
        tokenizer="chars4",
        max_turns=BROKEN_TURNS,
        allow=set(INVARIANTS) - {BROKEN[cls]},
        corpus=corpus(),
    )
    ce = report.counterexample
    assert not report.passed and ce is not None
    assert ce.invariants() == [BROKEN[cls]]
    assert len(ce.conversation.messages) <= MAX_COUNTEREXAMPLE
    assert ce.conversation not in corpus()  # the search's own, shrunk


def test_counterexample_shows_the_conversation_as_generated() -> None:
    """A policy that edits the log in place must not make its own counterexample look innocent."""
    report = check_policy(ref(RewritesLog), {}, examples=EXAMPLES, window=WINDOW, tokenizer="chars4")
    assert report.counterexample is not None
    assert "[edited]" not in report.counterexample.listing


# -- determinism ------------------------------------------------------------------------------------
_IMPORTS_BETWEEN = """
import sys
from pathlib import Path
from sim.replay.checker import check_policy
def report():
    return check_policy("sliding-window", {}, examples=15, window=8000, tokenizer="chars4").render()
first = report()
folder = Path(sys.argv[1])
numbers = ", ".join(str(i) for i in range(0, 4000, 7))
words = ", ".join(repr(f"w{i}") for i in range(300))
(folder / "many_constants.py").write_text(f"VALUES = ({numbers})\\nWORDS = ({words})\\n")
sys.path.insert(0, str(folder))
import many_constants  # a local module: Hypothesis would draw from its constants
print("same" if report() == first else "different")
"""


def test_check_draws_the_same_whatever_the_process_imported(tmp_path: Path) -> None:
    """A local module imported between two checks (a user's, another policy's) does not change what the second
    draws: Hypothesis's pool of local constants is kept out of a check. In a fresh process, where nothing pins it
    (this suite pins it for every test, ``tests/conftest.py``)."""
    out = subprocess.run(
        [sys.executable, "-c", _IMPORTS_BETWEEN, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "same", out.stderr


@pytest.mark.parametrize("policy", ["cloudflare-os", ref(GrowsView)])
def test_check_policy_is_deterministic(policy: str) -> None:
    """Same call, same report text: a pass with its deviation counts, and a shrunk counterexample."""
    kwargs = {
        "examples": 20,
        "window": WINDOW,
        "tokenizer": "chars4",
        "allow": OPEN_ISSUES.get(policy, {}),
        "max_turns": 6 if ":" in policy else 40,
    }  # short scripts: the failing one shrinks in a blink
    first = check_policy(policy, {}, **kwargs).render()  # type: ignore[arg-type]
    assert first == check_policy(policy, {}, **kwargs).render()  # type: ignore[arg-type]


def test_effect_agent_gets_a_limit_when_none_is_given() -> None:
    report = check_policy("effect-agent", {}, examples=5, window=WINDOW, tokenizer="chars4")
    assert report.params["context_token_limit"] == str(int(0.6 * WINDOW))
    assert any("context_token_limit" in n for n in report.notes)
    assert report.render().startswith("note: context_token_limit=4800")
    given_limit = check_policy("effect-agent", {"context_token_limit": "3000"}, examples=5, tokenizer="chars4")
    assert given_limit.params["context_token_limit"] == "3000"
    assert not any("context_token_limit" in n for n in given_limit.notes)


# -- regressions: bugs the checks above found, now fixed ---------------------------------------------
# Each test states the correct behaviour on the smallest conversation that showed the bug. Bugs found
# and not yet fixed are pinned here as ``xfail(strict=True)`` repros and listed in OPEN_ISSUES.
def test_sliding_window_rolls_back_for_a_revert_of_an_already_compacted_change() -> None:
    """sliding-window used to keep a revert whose change it had dropped; it now rolls the view back to
    a checkpoint that still shows the change (Plan.restore), then drops again around it."""
    found = _violations(
        "sliding-window",
        _s(),
        _u(1, "task"),
        _a(2, calls=("c1",), extra=(_change("ch1"),)),
        _t(3, "c1", 12000),
        _a(4, "done"),
        _u(5, "more"),
        _a(6, calls=("c2",)),
        _t(7, "c2", 12000),
        _a(8, "ok"),
        _u(9, "undo that", _revert("ch1")),
        _a(10, "reverted"),
    )
    assert not [v for v in found if "revert-resolution" in v], found
    result = Engine(
        make_policy("sliding-window"),
        Conversation(
            "r",
            (
                _s(),
                _u(1, "task"),
                _a(2, calls=("c1",), extra=(_change("ch1"),)),
                _t(3, "c1", 12000),
                _a(4, "done"),
                _u(5, "more"),
                _a(6, calls=("c2",)),
                _t(7, "c2", 12000),
                _a(8, "ok"),
                _u(9, "undo that", _revert("ch1")),
                _a(10, "reverted"),
            ),
        ),
        CFG,
    ).run()
    assert "rollback" in [c["mode"] for c in result.compactions]


def test_sliding_window_pins_a_reverted_change_instead_of_holding_the_cut_back() -> None:
    """Issue 12, defect 5: a revert in the live turn of a change made early on held sliding-window's cut back
    before the change, so after the rollback it could drop nothing (or, as ``csim check --policy sliding-window
    --examples 2000`` found, little enough that two consecutive compactions stayed over the trigger). It now
    keeps the change's unit as a pinned span and cuts past it: the run completes, under the trigger."""
    msgs = [_s(), _u(1, "task"), _a(2, calls=("c1",), extra=(_change("ch1"),)), _t(3, "c1", 40), _a(4, "done")]
    i = 5
    for k in range(4):
        msgs += [_u(i, f"next {k}"), _a(i + 1, calls=(f"d{k}",)), _t(i + 2, f"d{k}", 9000), _a(i + 3, "ok")]
        i += 4
    msgs += [_u(i, "undo the first edit"), _a(i + 1, calls=("r1",), extra=(_revert("ch1"),)), _t(i + 2, "r1", 2000)]
    msgs += [_a(i + 3, calls=("e1",)), _t(i + 4, "e1", 2000), _a(i + 5, "reverted")]
    result = Engine(make_policy("sliding-window"), Conversation("r", tuple(msgs)), CFG).run()
    assert result.summary["finish_reason"] == "completed"  # was: context-overflow
    assert result.violations == []
    modes = [c["mode"] for c in result.compactions]
    assert modes[-2:] == ["rollback", "drop"], modes
    last = [e for e in result.log if getattr(e, "kind", None) == "compaction"][-1].view
    assert last.spans == ((1, 4),)  # the task, and the change's unit (the call and its result), pinned
    assert last.start > 4


def test_sliding_window_never_drops_only_what_it_pins_back() -> None:
    """The pin above, first cut: a drop just big enough to reach the target, of the very unit a kept revert
    needs, pinned that unit back and dropped nothing (``csim check --examples 2000``: compaction-shrinks at a
    /compact, 2827 to 2827 tokens). A pinned change's unit is counted back, and the cut goes on past it."""
    m4 = Message(
        "m4", "assistant", (Part("thinking", "t" * 47), _revert("ch1"), Part("tool_call", call_id="c2", name="grep"))
    )
    msgs = (_s(), _u(1, "x"), _a(2, calls=("c1",), extra=(_change("ch1"),)), _t(3, "c1", 2), m4, _t(5, "c2", 8000))
    msgs += (_u(6, "u" * 53, _change("ch2")), _a(7, calls=("c3",)), _t(8, "c3", 8000), _cmd(9))
    policy = make_policy("sliding-window")
    model = small_model(WINDOW)
    state = state_of(policy, Conversation("r", msgs), model, context=int(0.5 * model.input_budget) + 2)
    plan = policy.decide(state, "manual")
    assert plan is not None and plan.start == 6 and plan.spans == ()  # was: start 4, (2, 4) pinned back


@pytest.mark.parametrize("policy", ["effect-agent", "cloudflare-os"])
def test_pending_raised_after_the_clear_is_no_breach(policy: str) -> None:
    """A compaction is judged against what was protected when it was made: what was cleared or
    summarised before a later message of the turn asked for approval was not protected then."""
    if policy == "effect-agent":  # a prune clears the turn's results, then the turn asks for approval
        found = _violations(
            "effect-agent",
            _s(),
            _u(1, "deploy it"),
            _a(2, calls=("c1",)),
            _t(3, "c1", 9000),
            _a(4, calls=("c2",)),
            _t(5, "c2", 9000),
            _a(6, calls=("c3",)),
            _t(7, "c3", 4000),
            _a(8, "May I deploy to production?", pending=True),
            _u(9, "status?"),
            _a(10, "waiting"),
            context_token_limit="4800",
            keep_recent_tokens="2000",
        )
    else:  # /compact summarises the task message, then the turn asks for approval
        found = _violations(
            "cloudflare-os",
            _s(),
            _u(1, "task " * 300),
            _cmd(2),
            _a(3, calls=("c1",)),
            _t(4, "c1", 10),
            _a(5, "May I deploy?", pending=True),
            _a(6, calls=("c2",)),
            _t(7, "c2", 10),
            _a(8, "ok"),
        )
    assert not [v for v in found if "protected-span" in v], found


class _ClearsThePendingTurn(Policy):
    """Clears every tool result before each request, pending turn or not."""

    def decide(self, state, trigger):  # type: ignore[no-untyped-def]
        if trigger == "auto" and state.view.cleared_through < len(state):
            return Plan(start=state.view.start, cleared_through=len(state), mode="prune")
        return None


def test_clearing_a_pending_turn_is_still_a_breach() -> None:
    """The per-compaction check still catches a clear made while the turn's approval is pending."""
    found = _violations(
        _ClearsThePendingTurn(),
        _s(),
        _u(1, "deploy it"),
        _a(2, "May I deploy?", pending=True),
        _a(3, calls=("c1",)),
        _t(4, "c1", 100),
        _a(5, "ok"),
    )
    assert [v for v in found if "protected-span" in v], found


def test_no_compaction_loop_after_a_successful_compaction() -> None:
    """Two automatic compactions on consecutive turns are no loop when the first got the view under
    the trigger and the next turn's huge result pushed it over again."""
    found = _violations(
        "sliding-window",
        _s(),
        _u(1, "task"),
        _a(2, calls=("c1",)),
        _t(3, "c1", 11000),
        _a(4, calls=("c2",)),
        _t(5, "c2", 11000),
        _u(6, "next"),
        _a(7, calls=("c3",)),
        _t(8, "c3", 2000),
        _a(9, calls=("c4",)),
        _t(10, "c4", 11000),
        _a(11, "ok"),
    )
    assert not [v for v in found if "compaction-loop" in v], found


def test_a_compaction_held_back_by_a_revert_then_caught_up_is_no_loop() -> None:
    """Found by the cloudflare-os check: revert protection holds the cut at the change (message 9), so
    the first compaction leaves the view over the trigger; the turn checks again (as Workshop reruns the turn
    after an automatic compaction) and the cut catches up, well under the trigger. Two compactions in a row,
    one loop-free run."""

    def call(c: str) -> Part:
        return Part("tool_call", call_id=c, name="read", args='{"p": "abcde"}')

    def result(c: str, chars: int) -> Part:
        return Part("tool_result", ("word " * (chars // 5))[:chars] or "r", call_id=c, name="read")

    def tool(i: int, *res: Part) -> Message:
        return Message(f"m{i}", "tool", res)

    def asst(i: int, *parts: Part) -> Message:
        return Message(f"m{i}", "assistant", parts)

    conv = Conversation(
        "held-back",
        (
            _s(),
            _u(1, "u"),
            _u(2, "u"),
            _u(3, "u"),
            _u(4, "u"),
            asst(5, call("c1"), call("c2")),
            tool(6, result("c1", 1), result("c2", 5170)),
            _u(7, "u"),
            _u(8, "u"),
            asst(9, _change("ch1"), call("c3")),
            tool(10, result("c3", 5720)),
            _u(11, "u"),
            asst(12, call("c4")),
            tool(13, result("c4", 9296)),
            asst(14, call("c5"), call("c6")),
            tool(15, result("c5", 1), result("c6", 3851)),
            asst(16, _revert("ch1"), call("c7")),
            tool(17, result("c7", 1)),
            _u(18, "u"),
            asst(19, call("c8"), call("c9")),
            tool(20, result("c8", 1), result("c9", 9356)),
            _u(21, "u"),
            asst(22, call("c12"), call("c13")),
            tool(23, result("c12", 1407), result("c13", 2217)),
            asst(24, call("c15")),
            tool(25, result("c15", 1)),
        ),
    )
    config = RunConfig(model=small_model(WINDOW), deep_checks=True)  # cl100k, as the check that found it
    result_ = Engine(make_policy("cloudflare-os"), conv, config).run()
    starts = [(c["turn"], c["start"]) for c in result_.compactions]
    # since issue 11 the catch-up comes in the same turn: Workshop checks again after an automatic compaction
    assert len(starts) == 2 and starts[1][0] == starts[0][0] and starts[0][1] == 9 < starts[1][1], starts
    assert result_.compactions[0]["tokens_after"] >= 0.85 * small_model(WINDOW).input_budget * 0.95
    assert not [v for v in result_.violations if v.invariant == "compaction-loop"], result_.violations


class _PinsWholeUnit(Policy):
    """Pins a call and its result (one two-message unit) and drops the rest of the old turn."""

    def decide(self, state, trigger):  # type: ignore[no-untyped-def]
        if len(state) == 7 and state.view.start == 0:
            return Plan(start=4, cleared_through=0, pinned=self.pinned, mode="drop")
        return None

    pinned: tuple[int, ...] = (2, 3)


def test_pinning_a_whole_unit_is_fine() -> None:
    found = _violations(
        _PinsWholeUnit(),
        _s(),
        _u(1, "task"),
        _a(2, calls=("c1",)),
        _t(3, "c1", 100),
        _u(4, "next"),
        _a(5, calls=("c2",)),
        _t(6, "c2", 100),
        _a(7, "ok"),
    )
    assert not [v for v in found if "atomic-units" in v], found


@pytest.mark.parametrize("pinned", [(2,), (3,)], ids=["call-without-result", "result-without-call"])
def test_pinning_part_of_a_unit_is_still_caught(pinned: tuple[int, ...]) -> None:
    policy = _PinsWholeUnit()
    policy.pinned = pinned
    found = _violations(
        policy,
        _s(),
        _u(1, "task"),
        _a(2, calls=("c1",)),
        _t(3, "c1", 100),
        _u(4, "next"),
        _a(5, calls=("c2",)),
        _t(6, "c2", 100),
        _a(7, "ok"),
    )
    assert [v for v in found if "atomic-units" in v], found


def test_sliding_window_compact_with_nothing_to_drop_does_nothing() -> None:
    assert _violations("sliding-window", _s(), _cmd(1)) == []
    result = Engine(make_policy("sliding-window"), Conversation("r", (_s(), _cmd(1))), CFG).run()
    assert result.compactions == []


@pytest.mark.parametrize("case", ["manual", "auto"])
def test_cloudflare_skips_a_span_smaller_than_its_summary(case: str) -> None:
    """Workshop would summarise these spans (a word of chat on /compact; just the task when revert
    protection lowers the cut) into a longer hand-off; the model skips them (cloudflare_os.py,
    "Departures")."""
    if case == "manual":
        conv = (_s(), _u(1, "hi"), _cmd(2))
    else:
        conv = (
            _s(),
            _u(1, "hi"),
            _a(2, calls=("c1",), extra=(_change("ch1"),)),
            _t(3, "c1", 12000),
            _a(4, calls=("c2",)),
            _t(5, "c2", 12000),
            _u(6, "undo that", _revert("ch1")),
            _a(7, "ok"),
        )
    assert not [v for v in _violations("cloudflare-os", *conv) if "compaction-shrinks" in v]
    assert Engine(make_policy("cloudflare-os"), Conversation("r", conv), CFG).run().compactions == []


def test_cloudflare_compact_on_a_longer_chat_still_summarises() -> None:
    conv = (_s(), _u(1, "task " * 300), _a(2, "done"), _u(3, "next"), _cmd(4))
    result = Engine(make_policy("cloudflare-os"), Conversation("r", conv), CFG).run()
    assert [c["mode"] for c in result.compactions] == ["summarize"]
    assert not result.violations


def test_effect_agent_prune_that_would_clear_nothing_is_no_prune() -> None:
    """A pending turn caps the prune bound at its start; with no tool result before it the prune
    would clear nothing, so no prune plan is made."""
    steps = [m for k in range(6) for m in (_a(3 + 2 * k, calls=(f"c{k}",)), _t(4 + 2 * k, f"c{k}", 4000))]
    conv = (_s(), _u(1, "deploy it"), _a(2, "May I deploy?", pending=True), *steps, _a(15, "ok"))
    found = _violations("effect-agent", *conv, **POLICY_PARAMS["effect-agent"])
    assert not [v for v in found if "compaction-shrinks" in v], found
    policy = make_policy("effect-agent", POLICY_PARAMS["effect-agent"])
    assert Engine(policy, Conversation("r", conv), CFG).run().compactions == []  # the pending turn pins all


def test_cloudflare_rolls_back_to_a_view_where_every_revert_resolves() -> None:
    """The rollback target is the newest checkpoint whose every kept revert resolves, not merely the
    newest that shows the reverted change (``rollbackChatCompaction`` guarantees every revert in a
    tail has ``revertFrom >= compactedTo``)."""
    say = "words " * 200  # long enough that each /compact summarises (no skip: cloudflare_os "Departures")
    # A reply after each change: /compact cuts at the last real record, which it keeps (issue 11, item 1), so
    # the change must sit before that record to be summarised.
    conv = (
        _s(),
        _u(1, say),
        _u(2, say, _change("ch1")),
        _a(3, "ok"),
        _cmd(4),
        _u(5, say, _revert("ch1")),
        _cmd(6),
        _u(7, say, _change("ch2")),
        _a(8, "ok"),
        _cmd(9),
        _u(10, say, _revert("ch2")),
        _a(11, "ok"),
    )
    found = _violations("cloudflare-os", *conv)
    assert not [v for v in found if "revert-resolution" in v], found
    result = Engine(make_policy("cloudflare-os"), Conversation("r", conv), CFG).run()
    # /compact at 4 summarises [1, 3); the revert at 5 rolls back to the start at /compact 6; /compact 9
    # summarises [1, 8); the revert at 10 needs message 7: the view of /compact 4 does not show it, and it
    # keeps the revert at 5 without its change at 2, so the rollback goes to the initial view.
    assert [(c["mode"], c["start"]) for c in result.compactions] == [
        ("summarize", 3),
        ("rollback", 0),
        ("summarize", 8),
        ("rollback", 0),
    ]


def test_open_issues_name_existing_tests() -> None:
    """Every tolerated invariant points at a repro test of this module, so none is tolerated blindly."""
    here = globals()
    for name, issues in OPEN_ISSUES.items():
        assert name in NAMES
        for invariant, test in issues.items():
            assert test in here, f"{name}: {invariant} is tolerated for {test}, which does not exist"


def test_check_keeps_no_generated_conversation_alive() -> None:
    """``csim check`` replays thousands of generated conversations in one process: the shared tokenizer's memo of
    per-object values is emptied after each, so memory stays flat (a 10,000-example check grew past 3.5 GB
    before)."""
    from sim.core.tokenizers import get_tokenizer

    tok = get_tokenizer("chars4")
    check_policy("claude-code", {}, examples=5, window=WINDOW, tokenizer="chars4")
    assert tok.derived == {}
    tok.memo.update((f"t{i}", i) for i in range(10))
    tok.trim(max_texts=5)
    assert tok.memo == {}


def test_a_compaction_after_a_rollback_is_no_loop() -> None:
    """Found by ``csim check --policy claude-code`` when its examples changed: a summary at turn 11 left the view
    over the trigger by the policy's chars/4 estimate (the request after it reported it under), then at turn 12 a
    revert of a summarised change rolled the view back to the start and the policy summarised again. What the
    rollback brought back is new to compact, so the two summaries are no loop."""
    from pathlib import Path

    from sim.core.log import CompactionCreated
    from sim.core.params import make_config
    from sim.formats.native import read as read_native

    path = Path(__file__).parent / "golden" / "counterexamples" / "claude-code-rollback-then-compact.jsonl"
    [conv] = read_native(path).conversations
    cls = POLICIES.get("claude-code")
    params, _ = effective_params(cls, POLICY_PARAMS.get("claude-code", {}), WINDOW)
    engine = Engine(cls(make_config(cls.Config, params)), conv, RunConfig(model=small_model(WINDOW), deep_checks=True))
    result = engine.run()
    modes = [(e.turn, e.mode) for e in engine.log if isinstance(e, CompactionCreated)]
    assert modes == [(11, "summarize"), (12, "rollback"), (12, "summarize")]  # the case itself
    assert "compaction-loop" not in {v.invariant for v in result.violations}


def test_a_loop_is_judged_once_the_provider_has_counted_the_compacted_prompt() -> None:
    """Found by ``check_policies.py`` at 10,000 examples (``claude-code-microcompact``, after the fix above): a
    summary at turn 43 held back by a pending turn, then a microcompact at turn 44, both made over the trigger by
    the policy's own count and both, by its chars/4 fallback right after, still over it. The requests after them
    reported 6,674 and 6,551 tokens against a 6,680 threshold: each got under, so the two are no loop. The check
    now judges "leaves the view over" when that request has reported."""
    from sim.core.log import CompactionCreated

    policy, engine = _golden_engine("claude-code-microcompact", "claude-code-microcompact-over-by-the-estimate")
    estimated_over: set[int] = set()  # turns where the policy, counting by its fallback, said it was over
    own = policy.over_trigger

    def watched(state: RunState) -> bool:
        over = own(state)
        if over and state.view_changed_since_request:
            estimated_over.add(state.turn)
        return over

    policy.over_trigger = watched  # type: ignore[method-assign]
    result = engine.run()
    modes = [(e.turn, e.mode) for e in engine.log if isinstance(e, CompactionCreated)]
    assert modes[-2:] == [(43, "summarize"), (44, "microcompact")]  # the case itself
    assert {43, 44} <= estimated_over
    threshold = policy.threshold(engine.state)
    reported = [r["context_tokens"] for r in result.rows if r["request_kind"] == "agent" and r["turn"] in (43, 44)]
    assert len(reported) == 2 and max(reported) < threshold
    assert "compaction-loop" not in {v.invariant for v in result.violations}


def test_claude_code_compacts_again_when_what_it_must_keep_leaves_it_over() -> None:
    """Found by ``check_policies.py`` at 10,000 examples (``claude-code-microcompact``, after the two fixes above): a
    summary at turn 49 held back by a pending turn leaves the prompt over the trigger by the provider's count
    (6,740 against 6,680), and the microcompact of turn 50 clears old results but not enough (6,681). A real loop,
    and Claude Code's own: its changelog's "autocompact thrash loop" (2.1.89), so a known deviation."""
    from sim.core.log import CompactionCreated

    policy, engine = _golden_engine("claude-code-microcompact", "claude-code-microcompact-refills-at-once")
    result = engine.run()
    modes = [(e.turn, e.mode) for e in engine.log if isinstance(e, CompactionCreated)]
    assert modes[-2:] == [(49, "summarize"), (50, "microcompact")]
    threshold = policy.threshold(engine.state)
    reported = [r["context_tokens"] for r in result.rows if r["request_kind"] == "agent" and r["turn"] in (49, 50)]
    assert len(reported) == 2 and min(reported) >= threshold  # over by the provider's count after each
    assert [v.turn for v in result.violations if v.invariant == "compaction-loop"] == [50]
    assert "compaction-loop" in type(policy).known_deviations


def test_a_compaction_made_under_the_trigger_is_no_link_of_a_loop() -> None:
    """Found by ``check_policies.py`` at 10,000 examples (``claude-code-microcompact``): a summary at turn 41 held
    back by a pending turn left the view over the trigger by the policy's chars/4 fallback (the request after it
    reported it under); at turn 42 the policy was under its trigger by its own count and microcompact cleared a
    result that had aged out. That compaction was housekeeping, not a try to get under the trigger, so the two
    are no loop."""
    from pathlib import Path

    from sim.core.log import CompactionCreated
    from sim.core.params import make_config
    from sim.formats.native import read as read_native

    name = "claude-code-microcompact"
    path = (
        Path(__file__).parent / "golden" / "counterexamples" / "claude-code-microcompact-clears-under-its-trigger.jsonl"
    )
    [conv] = read_native(path).conversations
    cls = POLICIES.get(name)
    params, _ = effective_params(cls, POLICY_PARAMS.get(name, {}), WINDOW)
    engine = Engine(cls(make_config(cls.Config, params)), conv, RunConfig(model=small_model(WINDOW), deep_checks=True))
    result = engine.run()
    modes = [(e.turn, e.mode) for e in engine.log if isinstance(e, CompactionCreated)]
    assert modes[-2:] == [(41, "summarize"), (42, "microcompact")]  # the case itself
    assert "compaction-loop" not in {v.invariant for v in result.violations}
