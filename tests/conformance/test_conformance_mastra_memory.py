"""Our ``mastra-observational-memory`` against Mastra's own ``ObservationalMemory`` (npm ``@mastra/memory``), decision
by decision (``conformance/mastra-memory/``).

The golden file holds, for each scripted run and each long conversation, what Mastra decided before every model call:
its count of the unobserved messages and its threshold (``getStatus``), whether it observed (``observe``), which
messages, and whether its Reflector ran after. Here our policy decides on the same messages, in the state Mastra was
in (the messages Mastra had observed before that call left the view, its observations standing in for them), so one
difference does not carry on to the next call. A Mastra message holds its tool calls' results, so a tool message counts
as the assistant message that called it.

Each decision agrees, or differs for one of the declared reasons (:func:`classify`):

* ``tokenizer``: the same messages (the unobserved ones, the live turn included) counted on either side of the
  threshold, the two counts within a quarter of each other: Mastra estimates with ``tokenx``, the engine with its own
  tokenizer (chars/4 here), so near the threshold one observes and the other not.
* ``not-shrinking``: Mastra observes and we do not, because our summary would not shrink the view (``plan_shrinks``:
  the engine's smallest summary is longer than the few messages observed; Mastra writes it anyway).

Where Mastra observes at a turn's first step, the user's message is observed with the rest and stays in that step's
prompt; ours keeps it in the view as the tail's start and counts it observed (``MastraObservationalMemory.cut``), so
the observed sets compare equal.

The Reflector is not separately modelled (the Observer's prompt asks to condense grown observations): its trigger is
checked on Mastra's own record, that it ran exactly when the observations after an observation reached
``observationTokens`` (``>=``, ``ReflectorRunner.maybeReflect``), the rule the policy's docstring states.

The golden file's ``turns`` section is the agent loop's path (``turns.mjs``: ``ObservationStep.prepare`` before every
call), the Reflector out of reach. Without buffering it decides as the standalone calls do, and is compared the same
way. With buffering (Mastra's default) each call has two decisions, compared on Mastra's state
(:func:`replay_buffered`): whether a buffer starts (Mastra: a chunk; ours: the one buffer, at ``buffer_activation`` of
the threshold) and whether buffered observations are activated (Mastra: chunks swapped in, or a synchronous observation;
ours: the buffer landing, :meth:`must_wait`), and with which messages. An activation agrees, or is one of:

* ``tokenizer``: as above, the counts on either side of the threshold.
* ``activation-boundary``: both activate the oldest unobserved messages at the same call, up to different messages:
  Mastra's boundary falls between its chunks, chosen to keep its retention floor raw; ours where the count stood when
  the one buffer started.
* ``no-buffer-yet``: Mastra activates chunks it made earlier (or observes at once, having none); ours has no buffer
  under way, its count having passed ``buffer_activation`` of the threshold and the threshold at once, or its buffer
  having landed at the call before (the engine starts none at the call one lands): it starts one now.
* ``not-shrinking``: as above.

A start agrees, or is ``chunks`` (Mastra makes a chunk of the newest messages while ours is under way or not yet due,
or ours takes at once what Mastra's earlier chunks hold) or ``no-buffer-yet`` (ours starts where Mastra activates or
observes instead).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies._tail import message_tokens
from policies.helpers import plan_shrinks
from policies.mastra import WRAPPER, MastraObservationalMemory, MastraObservationalMemoryConfig
from sim.core.conversation import Conversation
from sim.core.state import RunState
from sim.core.view import Summary, View
from tests.builders import state_of
from tests.conformance import long

ROOT = Path(__file__).parents[2]
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "mastra-memory.json"
DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
CASES: list[dict[str, Any]] = DOC["cases"]
LONG: list[dict[str, Any]] = DOC["long"]
CLASSES = ("agree", "tokenizer", "not-shrinking")


def owners(c: Conversation) -> list[str]:
    """Each message's Mastra id: a tool message is the assistant message whose calls it answers."""
    out: list[str] = []
    for m in c.messages:
        out.append(out[-1] if m.role == "tool" and out else m.id)
    return out


def mastra_state(pol: MastraObservationalMemory, prefix: Conversation, observed: set[str], text: str) -> RunState:
    """The state Mastra decided in: the messages it had observed out of the view, its observations before the rest."""
    ids = owners(prefix)
    start = 1
    while start < len(ids) and ids[start] in observed:
        start += 1
    view = (
        View(start=start, summary=Summary(WRAPPER.format(summary=text), through=start, role="user")) if text else None
    )
    return state_of(pol, prefix, view=view)


def classify(st: RunState, pol: MastraObservationalMemory, d: dict[str, Any]) -> tuple[str, list[str]]:
    """Our decision on ``st`` against Mastra's ``d``: the class, and the messages we observed (Mastra ids)."""
    plan = pol.decide(st, "auto")
    ids = owners(Conversation("c", st.messages))
    end = pol.observed_end(st)
    if plan is not None:  # the kept tail starts where the observed messages end, or at a first step's user message
        assert plan.start in (end, st.last_user_index), (plan.start, end)
    ours = list(dict.fromkeys(ids[i] for i in range(pol.counted_from(st), end))) if plan else []
    theirs: list[str] = d.get("observed", [])
    if bool(plan) == d["observe"] and ours == theirs:
        return "agree", ours
    threshold, counted = d["threshold"], pol.unobserved_tokens(st)
    near = abs(counted - d["pending"]) <= 0.25 * d["pending"] + 10
    if near and (counted >= threshold) != (d["pending"] >= threshold):
        return "tokenizer", ours
    raw = pol.observation(st)
    if d["observe"] and counted >= threshold and raw is not None and not plan_shrinks(st, raw):
        return "not-shrinking", [ids[i] for i in range(pol.counted_from(st), end)]
    return "undeclared", ours


def replay(c: Conversation, settings: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, int]:
    """Every decision of one run, counted by class; asserts Mastra's Reflector rule on the way."""
    pol = policy(settings, buffering=False)
    index = {m.id: i for i, m in enumerate(c.messages)}
    observed: set[str] = set()
    text = ""
    counts = dict.fromkeys((*CLASSES, "undeclared"), 0)
    for d in decisions:
        prefix = Conversation(c.id, c.messages[: index[d["at"]]])
        kind, _ = classify(mastra_state(pol, prefix, observed, text), pol, d)
        counts[kind] += 1
        if d["observe"]:
            if "reflect_asked_at" in d:  # the standalone runs (observe.mjs) record what the Reflector was asked
                assert d["reflected"] == (d["reflect_asked_at"] >= settings["observationTokens"]), d["at"]
            observed |= set(d["observed"])
            text = d.get("observations", text)
    return counts


def policy(settings: dict[str, Any], *, buffering: bool) -> MastraObservationalMemory:
    cfg = MastraObservationalMemoryConfig(settings["messageTokens"], settings["observationTokens"], buffering=buffering)
    return MastraObservationalMemory(cfg)


def run_conversation(entry: dict[str, Any]) -> Conversation:
    return long.to_conversation({"system": "You are a coding agent.", "messages": entry["messages"]})


def test_golden_file_names_the_package_and_version() -> None:
    pinned = json.loads((ROOT / "conformance" / "mastra-memory" / "package.json").read_text())["dependencies"]
    assert DOC["package"] == "@mastra/memory" and DOC["version"] == pinned["@mastra/memory"] == "1.31.0"
    assert DOC["core"] == pinned["@mastra/core"]
    assert len(CASES) >= 10 and len(LONG) == 4


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    counts = replay(run_conversation(case), case["settings"], case["expected"]["decisions"])
    assert counts["undeclared"] == 0, counts


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Before every model call of a long conversation (Observer at a quarter of its size, Reflector at 200 tokens)."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    counts = replay(c, entry["settings"], entry["decisions"])
    n = sum(counts.values())
    with capsys.disabled():
        print(f"\nmastra-memory {entry['conversation']}: {counts['agree'] / n:.1%} of {n} calls agree, {counts}")
    assert counts["undeclared"] == 0, counts


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Every decision of every run, by class (printed with ``-s``); each declared class is seen, none undeclared."""
    total = dict.fromkeys((*CLASSES, "undeclared"), 0)
    runs = [(run_conversation(c), c["settings"], c["expected"]["decisions"]) for c in CASES]
    runs += [(long.to_conversation(long.by_name(e["conversation"])), e["settings"], e["decisions"]) for e in LONG]
    observed = sum(d["observe"] for _, _, ds in runs for d in ds)
    reflected = sum(d.get("reflected", False) for _, _, ds in runs for d in ds)
    for c, settings, decisions in runs:
        for k, v in replay(c, settings, decisions).items():
            total[k] += v
    n = sum(total.values())
    with capsys.disabled():
        print(f"\nmastra-memory: {total['agree']}/{n} agree, {total}; observed {observed}, reflected {reflected}")
    assert total["undeclared"] == 0 and all(total[k] for k in CLASSES) and reflected > 0


# -- the agent loop's path (turns.mjs): buffering on, Mastra's default, and off --------------------------------------
TURNS: dict[str, list[dict[str, Any]]] = DOC["turns"]
#: What one buffered call's activation is, and what its buffer start is (:func:`replay_buffered`).
ACTIVATION_CLASSES = ("agree", "tokenizer", "activation-boundary", "no-buffer-yet", "not-shrinking")
START_CLASSES = ("agree", "chunks", "no-buffer-yet")


def turns_conversation(name: str) -> Conversation:
    case = next((c for c in CASES if c["name"] == name), None)
    return run_conversation(case) if case else long.to_conversation(long.by_name(name))


def sync_decisions(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The step path's decisions (buffering off) in the standalone runs' shape: an observation is what was observed,
    the observations a text of their length (the stub's text is not recorded)."""
    out = []
    for d in decisions:
        e = {**d, "observe": bool(d["observed"] or d["activated"]), "observed": d["activated"] + d["observed"]}
        if "observation_chars" in d:
            e["observations"] = "x" * d["observation_chars"]
        out.append(e)
    return out


def replay_buffered(c: Conversation, settings: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """Every call of one buffered run, on Mastra's own state (its activated and observed messages out of the view): our
    policy's one buffer, started when :meth:`over_trigger` says so and none is under way, and landed when
    :meth:`must_wait` says so, against Mastra's chunks and activations. Counts the activation decision and the start
    decision of every call by class, and the tokens between the two activation boundaries where they differ.

    Our buffer is carried along our own timeline (started, then landed), its messages those Mastra has not activated
    yet; Mastra's state is the one decided on, so a difference does not carry on."""
    pol = policy(settings, buffering=True)
    index = {m.id: i for i, m in enumerate(c.messages)}
    observed: set[str] = set()
    chars = 0
    ours: list[str] | None = None  # our buffer under way: the messages it observes
    out: dict[str, Any] = {"activation": dict.fromkeys((*ACTIVATION_CLASSES, "undeclared"), 0)}
    out["start"] = dict.fromkeys((*START_CLASSES, "undeclared"), 0)
    out |= {"boundary_tokens": [], "mastra_chunks": 0, "our_buffers": 0, "activations": 0, "same_activations": 0}
    for d in decisions:
        prefix = Conversation(c.id, c.messages[: index[d["at"]]])
        st = mastra_state(pol, prefix, observed, "x" * chars)
        ids = owners(Conversation("c", st.messages))
        a, end = pol.counted_from(st), pol.observed_end(st)
        unobserved = list(dict.fromkeys(ids[i] for i in range(a, end)))
        if ours is not None:
            ours = [i for i in ours if i in set(unobserved)] or None  # Mastra activated them
        was_under, landed, started = ours is not None, None, None
        if ours is not None and pol.must_wait(st):
            landed, ours = ours, None
        elif ours is None and pol.decide(st, "auto") is not None:
            started = ours = unobserved
        theirs = d["activated"] + d["observed"]
        chunk = d["buffered"][0]["ids"] if d["buffered"] else None
        threshold, counted = d["threshold"], pol.unobserved_tokens(st)
        near = abs(counted - d["pending"]) <= 0.25 * d["pending"] + 10
        oldest = set(theirs) == set(unobserved[: len(theirs)])  # Mastra activates the oldest unobserved messages
        if bool(theirs) == bool(landed) and (not theirs or set(theirs) == set(landed or ())):
            kind = "agree"
        elif theirs and landed and oldest and set(landed) == set(unobserved[: len(landed)]):
            kind = "activation-boundary"  # both take the oldest messages; the boundary differs
            span = set(unobserved[min(len(theirs), len(landed)) : max(len(theirs), len(landed))])
            out["boundary_tokens"].append(sum(message_tokens(st, i, i + 1) for i in range(a, end) if ids[i] in span))
        elif near and (counted >= threshold) != (d["pending"] >= threshold):
            kind = "tokenizer"
        elif theirs and not was_under and started is not None and oldest:
            kind = "no-buffer-yet"  # Mastra activates earlier chunks (or observes at once); ours starts only now
        elif theirs and ours is None and (raw := pol.observation(st)) is not None and not plan_shrinks(st, raw):
            kind = "not-shrinking"  # as in the synchronous runs: our summary would not shrink the view
        else:
            kind = "undeclared"
        out["activation"][kind] += 1
        if chunk == started:
            start = "agree"  # both none, or the same messages
        elif chunk is None and kind in ("no-buffer-yet", "not-shrinking"):
            start = "no-buffer-yet"  # Mastra activates or observes at once; ours starts its buffer
        elif chunk is None and started is not None and d["chunks"] > 0:
            start = "chunks"  # Mastra's earlier chunks hold the older messages; ours takes them all now
        elif chunk is not None and (ours is not None or counted < pol.config.buffer_activation * threshold or near):
            start = "chunks"  # Mastra buffers the newest messages again; ours is under way or not yet started
        elif chunk is not None and started is not None and set(chunk) <= set(started):
            start = "chunks"  # the same call, Mastra's chunk the newest part of ours
        else:
            start = "undeclared"
        out["start"][start] += 1
        out["mastra_chunks"] += len(d["buffered"])
        out["our_buffers"] += started is not None
        out["activations"] += bool(theirs)
        out["same_activations"] += bool(theirs) and kind == "agree"
        observed |= set(theirs)
        chars = d.get("observation_chars", chars)
    return out


@pytest.mark.parametrize("run", TURNS["sync"], ids=[r["name"] for r in TURNS["sync"]])
def test_turns_without_buffering(run: dict[str, Any]) -> None:
    """The agent loop's path with ``bufferTokens: false``: decided as the standalone calls decide (the same counts and
    observations), so the same classes."""
    counts = replay(turns_conversation(run["name"]), run["settings"], sync_decisions(run["decisions"]))
    assert counts["undeclared"] == 0, counts


@pytest.mark.parametrize("run", TURNS["buffered"], ids=[r["name"] for r in TURNS["buffered"]])
def test_turns_with_buffering(run: dict[str, Any]) -> None:
    res = replay_buffered(turns_conversation(run["name"]), run["settings"], run["decisions"])
    assert res["activation"]["undeclared"] == 0 and res["start"]["undeclared"] == 0, res


def test_turns_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Every call of the step path, both modes, by class (printed with ``-s``)."""
    sync = dict.fromkeys((*CLASSES, "undeclared"), 0)
    for r in TURNS["sync"]:
        for k, v in replay(turns_conversation(r["name"]), r["settings"], sync_decisions(r["decisions"])).items():
            sync[k] += v
    act = dict.fromkeys((*ACTIVATION_CLASSES, "undeclared"), 0)
    start = dict.fromkeys((*START_CLASSES, "undeclared"), 0)
    tally = {"mastra_chunks": 0, "our_buffers": 0, "activations": 0, "same_activations": 0}
    boundary: list[int] = []
    for r in TURNS["buffered"]:
        res = replay_buffered(turns_conversation(r["name"]), r["settings"], r["decisions"])
        for k, v in res["activation"].items():
            act[k] += v
        for k, v in res["start"].items():
            start[k] += v
        for k in tally:
            tally[k] += res[k]
        boundary += res["boundary_tokens"]
    boundary.sort()
    with capsys.disabled():
        print(f"\nmastra-memory turns, buffering off: {sync}")
        print(f"mastra-memory turns, buffering on: activations {act}; starts {start}; {tally}")
        median = boundary[len(boundary) // 2]
        print(f"  activation boundaries {boundary[0]}-{boundary[-1]} tokens apart, median {median}")
    assert sync["undeclared"] == act["undeclared"] == start["undeclared"] == 0
    assert all(act[k] for k in ACTIVATION_CLASSES) and all(start[k] for k in START_CLASSES)
