"""A growing conversation, stepped through the engine under every bundled policy.

Each rule appends what an agent session appends (a user message, a tool turn with a parallel batch, a
revert, a ``/compact``, an approval asked and later answered) and feeds the new messages to one live
engine per bundled policy with ``Engine.step``. What must hold after every rule:

* no violation beyond the policy's known deviations (and the open issues pinned in
  ``test_properties.py``);
* the view folded from the log is the engine's view, and the view the newest compaction recorded
  (the log is the checkpoint);
* the log's messages are the script's, in order, indices ``0..n-1``;

and at the end, the stepped run finishes with the same summary and the same log, byte for byte, as a
replay of the whole conversation with ``run()``.
"""

from __future__ import annotations

from collections import Counter

from broken_policies import OPEN_ISSUES
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from policies import POLICIES, load_policy_class, make_policy
from sim.core.conversation import Conversation, Message, Part, validate
from sim.core.log import CompactionCreated, MessageAppended, encode_event
from sim.core.view import fold
from sim.replay.checker import effective_params
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model

WINDOW = 8_000
# Each policy's absolute token defaults scaled to the small window, as csim check scales them (effective_params).
GIVEN = {"effect-agent": {"context_token_limit": "4800", "keep_recent_tokens": "2000", "max_bytes": "4096"}}
PARAMS = {n: effective_params(load_policy_class(n), GIVEN.get(n, {}), WINDOW)[0] for n in POLICIES.names()}
# No deep checks: the machine's own invariant re-folds every view from the log after each rule and compares the
# appended messages with the script, and teardown compares the stepped run with a whole run (deep checks there
# re-verified the same at every request, a third of the test's time; tests/test_properties.py keeps them on).
CONFIG = RunConfig(model=small_model(WINDOW), tokenizer="chars4", deep_checks=False)
# Tool results of one turn stay under a third of the window (chars/4), so every unit fits.
RESULT_CHARS = st.integers(1, int(WINDOW * 4 / 3 / 3))
COMPACTIONS: Counter[str] = Counter()  # per policy, over the whole test: the machine must reach compaction


def _unskipped(messages: list[Message], failed_turns: list[int]) -> list[str]:
    """The ids of the script's messages a run appends: all, but for a turn that failed
    (``Policy.overflow_fails_turn``) nothing from its failed reply up to the next user message."""
    failed, out, skipping = set(failed_turns), [], False
    for i, m in enumerate(messages):
        skipping = i in failed or (skipping and m.role != "user")
        if not skipping:
            out.append(m.id)
    return out


class GrowingConversation(RuleBasedStateMachine):
    """Appends whole steps of a session and steps every policy's engine through them."""

    def __init__(self) -> None:
        super().__init__()
        self.engines: dict[str, Engine] = {}
        self.copies: dict[str, Engine] = {}  # Engine.copy() taken mid-run, stepped alongside its original
        self.fed = 0  # messages given to the engines so far
        self.messages: list[Message] = []
        self.changes: list[str] = []
        self.pending: list[str] = []
        self.calls = 0

    def _next_id(self) -> str:
        return f"m{len(self.messages)}"

    @initialize(chars=st.integers(1, 400), task=st.integers(1, 2000))
    def start(self, chars: int, task: int) -> None:
        """A session opens with its system prompt and the user's task."""
        self.messages.append(Message("m0", "system", (Part("text", "s" * chars),)))
        self.messages.append(Message("m1", "user", (Part("text", "t " * (task // 2) + "t"),)))
        opening = Conversation("growing", tuple(self.messages))
        self.engines = {n: Engine(make_policy(n, PARAMS.get(n, {})), opening, CONFIG) for n in POLICIES.names()}
        self.fed = len(self.messages)
        for engine in self.engines.values():
            while engine.step():
                pass

    @rule(chars=st.integers(1, 3000), change=st.booleans(), resolve=st.booleans())
    def user(self, chars: int, change: bool, resolve: bool) -> None:
        parts = [Part("text", "u " * (chars // 2) + "u")]
        if change:
            self.changes.append(f"ch{len(self.changes) + 1}")
            parts.append(Part("change", "edit", ref=self.changes[-1]))
        resolves = (self.pending.pop(0),) if resolve and self.pending else ()
        self.messages.append(Message(self._next_id(), "user", tuple(parts), resolves=resolves))

    @rule(
        results=st.lists(RESULT_CHARS, min_size=1, max_size=3),
        thinking=st.booleans(),
        change=st.booleans(),
        split=st.booleans(),
        reply=st.integers(0, 600),
        pending=st.booleans(),
    )
    def tool_turn(
        self, results: list[int], thinking: bool, change: bool, split: bool, reply: int, pending: bool
    ) -> None:
        parts: list[Part] = [Part("thinking", "hmm")] if thinking else []
        if change:
            self.changes.append(f"ch{len(self.changes) + 1}")
            parts.append(Part("change", "edit", ref=self.changes[-1]))
        ids = []
        for _ in results:
            self.calls += 1
            ids.append(f"c{self.calls}")
            parts.append(Part("tool_call", call_id=ids[-1], name="read", args="{}"))
        self.messages.append(Message(self._next_id(), "assistant", tuple(parts)))
        answers = [
            Part("tool_result", "r " * (n // 2) + "r", call_id=c, name="read")
            for c, n in zip(ids, results, strict=True)
        ]
        for batch in ([a] for a in answers) if split else [answers]:
            self.messages.append(Message(self._next_id(), "tool", tuple(batch)))
        if reply or pending:
            rid = self._next_id()
            text = Part("text", "a" * max(reply, 10))
            self.messages.append(Message(rid, "assistant", (text,), pending=pending))
            if pending:
                self.pending.append(rid)

    @precondition(lambda self: bool(self.changes))
    @rule(back=st.integers(0, 4))
    def revert(self, back: int) -> None:
        target = self.changes[-1 - back % len(self.changes)]
        parts = (Part("text", "undo"), Part("revert", "undo", ref=target))
        self.messages.append(Message(self._next_id(), "user", parts))

    @rule()
    def compact(self) -> None:
        self.messages.append(Message(self._next_id(), "user", (Part("command", name="compact"),)))

    @precondition(lambda self: not self.copies)
    @rule()
    def copy_engines(self) -> None:
        """Copy every engine where it stands; from here the copies take the same steps as their originals."""
        self.copies = {name: engine.copy() for name, engine in self.engines.items()}

    @invariant()
    def steps_soundly(self) -> None:
        new, self.fed = self.messages[self.fed :], len(self.messages)
        for m in new:
            for engine in (*self.engines.values(), *self.copies.values()):
                engine.step(m)
        for name, engine in self.engines.items():
            tolerated = load_policy_class(name).known_deviations | OPEN_ISSUES.get(name, {}).keys()
            unexpected = [str(v) for v in engine.violations if v.invariant not in tolerated]
            assert not unexpected, (name, unexpected)
            events = list(engine.log)
            assert fold(events, engine.state.checkpoints[0]) == engine.state.view, name
            compactions = [e for e in events if isinstance(e, CompactionCreated)]
            if compactions:
                assert fold(events) == compactions[-1].view, name
            appended = [e for e in events if isinstance(e, MessageAppended)]
            assert [e.index for e in appended] == list(range(len(appended))), name
            sent = _unskipped(self.messages, engine.failed_turns)
            assert [e.message.id for e in appended] == sent[: len(appended)], name

    def teardown(self) -> None:
        if not self.engines:
            return
        conv = Conversation("growing", tuple(self.messages))
        assert validate(conv) == []
        for name, engine in self.engines.items():
            stepped = engine.finish()
            COMPACTIONS[name] += len(stepped.compactions)
            whole = Engine(make_policy(name, PARAMS.get(name, {})), conv, CONFIG).run()
            assert whole.summary == stepped.summary, name
            assert [encode_event(e) for e in whole.log] == [encode_event(e) for e in stepped.log], name
            if name in self.copies:  # a copy shares nothing mutable with its original: it ends the same
                copied = self.copies[name].finish()
                assert [encode_event(e) for e in copied.log] == [encode_event(e) for e in stepped.log], name


GrowingConversation.TestCase.settings = settings(
    max_examples=40,  # cheap now that the engines step (they used to replay the whole script after every rule)
    stateful_step_count=40,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),  # explain is slow here
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
TestGrowingConversation = GrowingConversation.TestCase


def test_the_machine_reaches_compaction() -> None:
    """Runs after the machine (file order): a walk that never compacted would have proved little."""
    if not COMPACTIONS:
        TestGrowingConversation("runTest").runTest()
    for name in ("sliding-window", "cloudflare-os", "effect-agent"):
        assert COMPACTIONS[name] > 0, dict(COMPACTIONS)


def test_cloudflare_os_rollback_into_a_pending_turn_compacts_nothing() -> None:
    """Found by this state machine after issue 11's cloudflare-os changes: with every user message after the
    task a ``/compact``, a pending turn protects everything from the task on; a revert of a compacted change
    then rolls cloudflare-os back to the initial view. That view lifts the edit hiding old ``/compact``
    commands, and the checker read the lifted edit as a new edit of protected messages (``protected-span``)
    although the rollback only brings messages back. The rollback stays, and nothing is flagged."""
    state = GrowingConversation()

    def compact(times: int) -> None:  # the state machine checks its invariant after every rule
        for _ in range(times):
            state.compact()
            state.steps_soundly()

    state.start(chars=1, task=1283)
    state.steps_soundly()
    compact(2)
    state.copy_engines()
    state.steps_soundly()
    compact(3)
    state.tool_turn(change=True, pending=False, reply=97, results=[1], split=False, thinking=False)
    state.steps_soundly()
    compact(19)
    state.tool_turn(change=False, pending=True, reply=0, results=[1], split=False, thinking=False)
    state.steps_soundly()
    compact(4)
    state.revert(back=0)
    state.steps_soundly()
    compact(1)
    engine = state.engines["cloudflare-os"]
    assert "rollback" in [e.mode for e in engine.log if isinstance(e, CompactionCreated)]
    assert engine.state.view.start == 0 and not engine.state.view.edits
    assert not [v for v in engine.violations if v.invariant == "protected-span"]
