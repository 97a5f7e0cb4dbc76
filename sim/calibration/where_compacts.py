"""Where a policy's automatic compaction fires on a recorded session, against where the session compacted.

A replay that prices the bill right but compacts at another request than the client did tells the user little about
what their agent would lose, so ``csim fidelity --policy NAME`` checks the trigger on its own. Each segment of the
recording (cut at its recorded compactions, :func:`sim.core.counting.segments`) is replayed alone under the
policy, usage-anchored (the recorded messages at the sizes the provider counted them at) on the given window. A
segment a recorded compaction ends gets the request the client sent that compaction in place of (a reply to
everything before it, as :func:`sim.calibration.features.replay_counts` probes it) and the smallest request that
could have followed it (a one-word user message and its reply), so a trigger that fires one request late shows.
In each segment the policy's first automatic compaction (its trigger, or a prompt over the window) is set against
the recorded one, both numbered as ``csim run``'s compactions table numbers them: by the replies sent before it in
the session. Within one request is the bar this is read against (issue 30).

How the recording says a compaction was triggered (:func:`recorded_trigger`): Claude Code's ``compact_boundary``
records ``auto`` or ``manual``. A token-level trace records none, but a compaction that came while a tool call of
the agent was open (the importer answers that call with a ``compacted`` result of no size) is ``mid-turn``: the
automatic compaction runs there, ``/compact`` is typed between turns (a user who interrupted the call to type it
would look the same in a trace, which keeps no text). The tool result that carried such a
session over its trigger is not in the trace, so a replay cannot see it either: a trigger on the provider's count
fires at the recorded request only when the prompt before it and its reply already reach it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from policies import make_policy
from sim.calibration.features import counting_config, with_probe
from sim.core.anchors import Anchors
from sim.core.conversation import Conversation, Message, Part
from sim.core.counting import Calibration, compaction_cuts, segments
from sim.core.model import ModelConfig
from sim.replay.engine import run

#: Recorded triggers that count as automatic compactions (:func:`recorded_trigger`).
AUTOMATIC = frozenset({"auto", "mid-turn"})
#: The policy's compactions that count as where it compacts on its own (``/compact`` and rollbacks do not).
POLICY_TRIGGERS = frozenset({"auto", "overflow"})


def recorded_trigger(conv: Conversation, index: int) -> str:
    """How the compaction whose summary is message ``index`` of ``conv`` was triggered: the recording's ``auto``
    or ``manual``, else ``mid-turn`` when it came with a tool call of the agent open (the importer's ``compacted``
    result before the summary), else ``not recorded``."""
    boundary = conv.messages[index].meta.get("compact_boundary") or {}
    said = boundary.get("trigger") if isinstance(boundary, Mapping) else None
    if said:
        return str(said)
    if index > 0 and conv.messages[index - 1].meta.get("synthetic") == "compacted":
        return "mid-turn"
    return "not recorded"


def continued(seg: Conversation) -> Conversation:
    """``seg`` with the request its compaction replaced (:func:`~sim.calibration.features.with_probe`) and the
    smallest one after it: a one-word user message and a reply."""
    probed = with_probe(seg)
    nxt = (
        Message(f"{seg.id}~next", "user", (Part("text", "next"),)),
        Message(f"{seg.id}~next-reply", "assistant", (Part("text", "(probe)"),)),
    )
    return Conversation(probed.id, (*probed.messages, *nxt), (), probed.tools, probed.meta)


@dataclass(frozen=True)
class TriggerCheck:
    """One segment of a recording: where it compacted and where the policy did.

    Attributes:
        segment: the segment (0 for the session's start); compaction ``segment + 1`` ends it, if any.
        recorded: the replies the session sent before its compaction (None: the segment ends without one).
        trigger: how the recording says that compaction was triggered (:func:`recorded_trigger`; "" without one).
        policy: the replies sent before the policy's first automatic compaction in the segment, the request after
            the recorded compaction included (None: none by then).
    """

    segment: int
    recorded: int | None
    trigger: str
    policy: int | None

    @property
    def offset(self) -> int | None:
        """Requests from the recorded compaction to the policy's (negative: the policy's came first)."""
        return None if self.recorded is None or self.policy is None else self.policy - self.recorded

    @property
    def automatic(self) -> bool:
        return self.recorded is not None and self.trigger in AUTOMATIC


def check(
    conv: Conversation,
    policy: str,
    params: Mapping[str, Any] | None = None,
    model: ModelConfig | None = None,
    calibration: Calibration | None = None,
    anchors: Anchors | None = None,
) -> list[TriggerCheck]:
    """One :class:`TriggerCheck` per segment of ``conv``, each segment replayed under ``policy`` (see the module
    docstring) on ``model`` (default: a 200K window). ``anchors``: the recording's, as
    :func:`sim.replay.anchoring.anchors_for` makes them (without, the messages are counted with ``calibration``)."""
    window = model or ModelConfig()
    tokenizer = calibration.tokenizer if calibration is not None else "cl100k_base"
    segs = segments(conv)
    cuts = compaction_cuts(conv)
    out: list[TriggerCheck] = []
    before = 0  # replies of the earlier segments
    for k, seg in enumerate(segs):
        ends = k < len(cuts)
        seg_anchors = anchors.for_segment(k) if anchors is not None else None
        config = replace(counting_config(tokenizer, calibration, anchors=seg_anchors, cache="off"), model=window)
        compactions = run(make_policy(policy, params), continued(seg) if ends else seg, config).compactions
        fired = next(
            (int(c["turn"]) for c in compactions if c["trigger"] in POLICY_TRIGGERS and c["mode"] != "rollback"), None
        )
        replies = sum(m.role == "assistant" for m in seg.messages)
        out.append(
            TriggerCheck(
                segment=k,
                recorded=before + replies if ends else None,
                trigger=recorded_trigger(conv, cuts[k]) if ends else "",
                policy=None if fired is None else before + fired,
            )
        )
        before += replies
    return out


def figures(checks: Sequence[TriggerCheck]) -> dict[str, int | float | None]:
    """Over the automatic recorded compactions: how many, the policy's within one request of them, more than one
    request before them, and not by the request after them (it would compact later, if at all); and the segments
    that end without a compaction where the policy compacts (``unrecorded``)."""
    auto = [c for c in checks if c.automatic]
    within = sum(1 for c in auto if c.offset is not None and abs(c.offset) <= 1)
    return {
        "automatic": len(auto),
        "within_one": within,
        "within_one_share": round(within / len(auto), 6) if auto else None,
        "earlier": sum(1 for c in auto if c.offset is not None and c.offset < -1),
        "later": sum(1 for c in auto if c.policy is None),
        "unrecorded": sum(1 for c in checks if c.recorded is None and c.policy is not None),
    }


__all__ = ["AUTOMATIC", "TriggerCheck", "check", "figures", "recorded_trigger"]
