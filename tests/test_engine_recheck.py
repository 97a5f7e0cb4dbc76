"""Three general engine seams the seed policies need (issue 11): asking again after an automatic compaction
(``Policy.recheck_after_compaction``), what the last request's reply was (``RunState.last_output_tokens``,
``RunState.messages_at_last_request``), and a summariser input that keeps both ends
(``Plan.summary_request.input_keep = "ends"``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from policies.base import Plan, Policy, SummaryRequest, Trigger
from policies.helpers import cut_ceiling, floor_index
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.log import CompactionCreated, RequestSent
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay.engine import RunConfig, run
from sim.replay.summary_input import ends_within as _ends_within


def chat(turns: int, words: int = 40) -> Conversation:
    msgs = [Message("s", "system", (Part("text", "You are terse."),))]
    for t in range(turns):
        msgs.append(Message(f"u{t}", "user", (Part("text", f"question {t} " + "word " * words),)))
        msgs.append(Message(f"a{t}", "assistant", (Part("text", f"answer {t} " + "word " * words),)))
    return Conversation("chat", tuple(msgs))


@dataclass(frozen=True)
class _NoConfig:
    pass


class DropOneMessage(Policy[_NoConfig]):
    """Drops the oldest visible message while more than four are visible: one step per decision."""

    Config = _NoConfig

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cut = floor_index(state) + 1
        if len(state) - floor_index(state) <= 4 or cut > cut_ceiling(state):
            return None
        return Plan(start=cut, mode="drop")


class DropOneMessageRechecking(DropOneMessage):
    recheck_after_compaction: ClassVar[bool] = True


def test_recheck_asks_again_until_the_policy_declines() -> None:
    """Without the re-check one step is taken per request; with it, steps repeat before the same request until
    the policy declines, so every request sees at most four messages besides the system prompt."""
    once = run(DropOneMessage(), chat(6), RunConfig())
    again = run(DropOneMessageRechecking(), chat(6), RunConfig())
    per_turn_once = [e.turn for e in once.log if isinstance(e, CompactionCreated)]
    per_turn_again = [e.turn for e in again.log if isinstance(e, CompactionCreated)]
    assert len(per_turn_once) == len(set(per_turn_once))  # one compaction per request at most
    assert len(per_turn_again) > len(set(per_turn_again))  # several before one request
    sent = [e.messages_in_view for e in again.log if isinstance(e, RequestSent) and e.request_kind == "agent"]
    assert max(sent) <= 5
    assert max(e.messages_in_view for e in once.log if isinstance(e, RequestSent) and e.request_kind == "agent") > 5


class Recorder(Policy[_NoConfig]):
    """Records what the state says of the last request each time it is asked."""

    Config = _NoConfig
    seen: ClassVar[list[tuple[int | None, int, int]]] = []

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        Recorder.seen.append((state.last_output_tokens, state.messages_at_last_request, len(state)))
        return None


def test_state_knows_the_last_reply_and_where_it_sits() -> None:
    """After a request the state holds its reply's tokens and the log's length when it was sent, so the reply
    is the message at that index."""
    Recorder.seen = []
    res = run(Recorder(), chat(3), RunConfig())
    assert Recorder.seen[0] == (None, 0, 2)
    replies = [r for r in res.rows if r["request_kind"] == "agent"]
    for (out, at, _n), row in zip(Recorder.seen[1:], replies, strict=False):
        assert out == row["output_tokens"]
        assert res.log is not None
        assert at % 2 == 0 and at > 0  # the assistant replies sit at even indices 2, 4, ...


def test_ends_within_keeps_the_oldest_up_to_half_then_the_newest() -> None:
    """Whole blocks: the oldest while they fit in half the budget, then the newest in what is left."""
    assert _ends_within([10, 10, 10], 100) is None
    # budget 40, half 20: one 10-block (+2) in the head; the tail takes blocks while head + tail <= 40.
    assert _ends_within([10] * 10, 40) == (1, 7, 2)
    # a block too large for the half leaves the head empty
    assert _ends_within([30, 5, 5], 30) == (0, 1, 2)


@dataclass(frozen=True)
class _Ends:
    keep: str = "ends"


class SummariseAllButLast(Policy[_Ends]):
    """Summarises everything before the last user message once, with a small input cap."""

    Config = _Ends

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cut = cut_ceiling(state)
        if state.view.summary is not None or len(state) < 20:
            return None
        return Plan(
            start=cut,
            summarize=True,
            summary_request=SummaryRequest(prompt="Summarise.", input_max_chars=1_200, input_keep=self.config.keep),
        )


def test_an_ends_input_keeps_the_oldest_and_newest_messages_and_a_marker() -> None:
    """The oldest message's fact reaches the summariser with ``ends`` and not with ``newest`` (which keeps only
    the newest characters); the summariser's input is no larger than with ``newest`` plus the marker."""
    c = chat(12, words=30)
    facts = (Fact("f-old", "recall", "answer 0", "a0", ("u11",)),)
    c = Conversation(c.id, c.messages, facts)
    cfg = RunConfig(model=ModelConfig(context_window=200_000), summariser=RunConfig().summariser)
    ends = run(SummariseAllButLast(_Ends("ends")), c, cfg)
    newest = run(SummariseAllButLast(_Ends("newest")), c, cfg)
    s_ends = [r for r in ends.rows if r["request_kind"] == "summariser"]
    s_new = [r for r in newest.rows if r["request_kind"] == "summariser"]
    assert s_ends and s_new
    assert s_ends[0]["context_tokens"] <= s_new[0]["context_tokens"] + 20
    # What each summary could retain: the oldest message is in the ends input only.
    ends_summary = next(e for e in ends.log if isinstance(e, CompactionCreated)).view.summary
    new_summary = next(e for e in newest.log if isinstance(e, CompactionCreated)).view.summary
    assert ends_summary is not None and new_summary is not None
    assert "f-old" not in new_summary.facts
    cfg_keep_all = RunConfig(model=ModelConfig(context_window=200_000), summariser=_keep_all(cfg))
    ends_all = run(SummariseAllButLast(_Ends("ends")), c, cfg_keep_all)
    summary = next(e for e in ends_all.log if isinstance(e, CompactionCreated)).view.summary
    assert summary is not None and "f-old" in summary.facts


def _keep_all(cfg: RunConfig):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return replace(cfg.summariser, keep_recall=1.0)
