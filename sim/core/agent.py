"""How the mock agent acts on what its view lost: the ``agent`` run options (closed loop, issue 17).

``scripted`` (the default) replays the script whatever the view holds: a fact lost to compaction lowers the
retention figure and nothing else happens. ``reactive`` makes lost context change the trajectory, as it does
in real agents (``reference/policy-catalogue.md`` §D1: summaries lengthen SWE-agent trajectories by 15-20%, a
tiny masking window turns 78 turns into 178). At each scripted request that needs facts
(:class:`sim.core.conversation.Fact` ``needed_at``), each needed fact the agent cannot use is acted on
(``sim.replay.reactive``):

* a fact from a tool result (a file read, a search, a command's output) is re-acquired: one extra request
  whose reply calls the same tool again, and a result of the original's size, before the scripted step;
* any other (a user's constraint, a decision, a plan) is recalled wrongly with probability ``wrong_recall``:
  an error, repaired with probability ``repair_rate`` by redoing the work that established it (extra
  requests), else left standing; otherwise its loss repeats work: the agent redoes the exchange that led to
  it (the failed approach tried again);
* a task (the user request the step serves) fails once ``max_unrepaired_errors`` errors stand unrepaired
  in it: its result is wrong. A run that stopped (an overflow, an exhausted budget) did not do the task in
  progress nor any later one. ``task_success`` is the share of the script's tasks done (a recorded or
  generated SWE-style session has one task, a support dialogue one per customer message).

A summary can also drop a "this is not working" signal: a failing tool result (``is_error``: a command that
exited non-zero, a failing test run) in the span it covers survives with the retention model's
``keep_recall``; when it does not, the agent tries the failing step again ``stall_steps`` times before going
on (the Complexity Trap study's account of why summaries lengthen trajectories).

Context use can degrade with length and position (``rot_length``, ``rot_middle``; both 0 by default): a
visible fact is used with probability ``1 - rot_length * L - rot_middle * M``, where ``L`` is the prompt's
share of the model's window and ``M`` is 1 for a fact in the middle of the view and 0 at either end (the
lost-in-the-middle U shape, Liu et al. arXiv 2307.03172; the fall with length, Chroma's "Context Rot",
``reference/evaluation-literature.md``). A fact not used is acted on as if lost, so a shorter view can raise
success, as measured there.

``wrong_recall``, ``repair_rate``, ``repair_steps``, ``stall_steps`` and ``max_unrepaired_errors`` are this harness's
assumptions, not published figures: no study gives them per fact. Each draw is a pure function of the run's
seed, the fact and the request (a hash, no random stream), so a reactive run is the same in any process and
under any executor, and two policies whose views agree draw alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sim.core.errors import InvalidConfig


@dataclass(frozen=True)
class AgentConfig:
    """The closed-loop agent's options (``csim run --agent reactive``; a sweep's ``[run]`` keys)."""

    agent: Literal["scripted", "reactive"] = field(
        default="scripted",
        metadata={
            "flag": "agent",
            "help": "scripted = replay the script whatever the view holds; reactive = re-acquire lost tool results, "
            "recall other lost facts wrongly or redo their work (sim.core.agent)",
        },
    )
    wrong_recall: float = field(
        default=0.5,
        metadata={
            "flag": "wrong-recall",
            "help": "reactive: chance a lost fact that no tool gives back is recalled "
            "wrongly (an error) rather than its work redone",
        },
    )
    repair_rate: float = field(
        default=0.5, metadata={"flag": "repair-rate", "help": "reactive: chance an error is found and repaired"}
    )
    repair_steps: int = field(
        default=2, metadata={"flag": "repair-steps", "help": "reactive: times the work is redone to repair an error"}
    )
    max_unrepaired_errors: int = field(
        default=1,
        metadata={
            "flag": "max-unrepaired-errors",
            "help": "reactive: unrepaired errors at which a task (a user request) fails",
        },
    )
    stall_steps: int = field(
        default=1,
        metadata={
            "flag": "stall-steps",
            "help": "reactive: times a failing step is tried again when a summary dropped its failure",
        },
    )
    rot_length: float = field(
        default=0.0,
        metadata={
            "flag": "rot-length",
            "help": "reactive: fall in the chance of using a visible fact at a full window",
        },
    )
    rot_middle: float = field(
        default=0.0,
        metadata={"flag": "rot-middle", "help": "reactive: further fall for a fact in the middle of the view"},
    )

    def __post_init__(self) -> None:
        if self.agent not in ("scripted", "reactive"):
            raise InvalidConfig(f"agent={self.agent!r} must be 'scripted' or 'reactive'")
        for name in ("wrong_recall", "repair_rate", "rot_length", "rot_middle"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise InvalidConfig(f"{name}={v!r} must be a probability between 0 and 1")
        if self.repair_steps < 1:
            raise InvalidConfig(f"repair_steps={self.repair_steps!r} must be at least 1")
        if self.stall_steps < 0:
            raise InvalidConfig(f"stall_steps={self.stall_steps!r} must be 0 or more")
        if self.max_unrepaired_errors < 1:
            raise InvalidConfig(f"max_unrepaired_errors={self.max_unrepaired_errors!r} must be at least 1")

    @property
    def reactive(self) -> bool:
        return self.agent == "reactive"
