"""``coding-agent``: a coding agent's tool loop on a repository, the case compaction was invented for.

The session is a run of *episodes*. Each starts with a user request and goes the way such work goes:
look around (grep, list a folder, read files, sometimes several at once), reproduce the failure with
the tests, decide on a fix, edit (every edit carries a change id), test again, report and propose what
comes next. Over the top of that come the events that break naive compaction: a parallel batch whose
results must stay with their calls, an occasional huge result (a whole log or generated file), thinking
that binds a tool loop into one unit, reverts that need the change they undo, a ``/compact`` from the
user, and now and then an edit that waits for the user's approval (a pending message).

Facts are placed where a real session establishes them and needed where it relies on them: a path
found by grep is needed when the file is read or edited, the test error when the fix is written, the
user's constraints before edits and at the end, a decision when it is carried out, and a "next:" note
when the work it names is picked up, or at the end if it never is. After ``/compact`` the current
episode's facts are needed at once, which is what a summary must carry.

This module holds the scenario's parameters, its tools, the loop that decides each turn and the system
prompt. The session's episode work is in :mod:`sim.scenarios._coding_session`, the interruptions in
:mod:`sim.scenarios._coding_interruptions` and the wording both draw from in
:mod:`sim.scenarios._coding_wording`.
"""

from __future__ import annotations

from typing import Any

from sim.core.conversation import Conversation
from sim.scenarios import SCENARIOS
from sim.scenarios._coding_interruptions import CodingSession
from sim.scenarios._common import (
    Param,
    conversation_id,
    defaults_of,
    scenario_rng,
    text,
    tool,
    validated,
)

NAME = "coding-agent"

RANGES = {
    "turns": Param(int, 1, 20000),
    "parallel_prob": Param(float, 0.0, 1.0),
    "huge_prob": Param(float, 0.0, 1.0),
    "huge_tokens": Param(int, 100, 1_000_000),
    "revert_prob": Param(float, 0.0, 1.0),
    "compact_at": Param(float, 0.0, 1.0, also=(-1.0,)),
    "pending_prob": Param(float, 0.0, 1.0),
    "thinking_prob": Param(float, 0.0, 1.0),
    "explore_max": Param(int, 3, 200),
}

TOOLS = (
    tool(
        "read_file",
        "Read a file of the repository. Long files are returned whole unless a line range is given.",
        {
            "path": {"type": "string", "description": "path relative to the repository root"},
            "offset": {"type": "integer", "description": "first line to return, 1-based"},
            "limit": {"type": "integer", "description": "how many lines to return"},
        },
        ["path"],
    ),
    tool(
        "grep",
        "Search file contents with a regular expression; prints path:line:text for each match.",
        {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "folder to search"},
            "glob": {"type": "string", "description": "only files matching this glob, e.g. *.py"},
        },
        ["pattern"],
    ),
    tool(
        "run_tests",
        "Run the test suite or part of it with pytest and return its output.",
        {
            "target": {"type": "string", "description": "test file, folder or node id"},
            "args": {"type": "string", "description": "extra pytest arguments"},
        },
        ["target"],
    ),
    tool(
        "edit_file",
        "Replace an exact snippet of a file with new text. Edits to protected paths need the "
        "user's approval and are not applied until it is given.",
        {"path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}},
        ["path", "old_string", "new_string"],
    ),
    tool(
        "list_dir",
        "List a folder, with file sizes.",
        {"path": {"type": "string"}, "depth": {"type": "integer", "description": "levels to descend"}},
        ["path"],
    ),
)


@SCENARIOS.register(
    NAME,
    "a coding agent's tool loop: parallel reads, heavy-tailed and huge results, edits with change ids, "
    "reverts, thinking, a /compact and approvals that pin a turn",
    defaults="turns=60, parallel_prob=0.25, huge_prob=0.03, huge_tokens=40000, revert_prob=0.08, "
    "compact_at=0.5, pending_prob=0.03, thinking_prob=0.3, explore_max=6",
)
@validated(NAME, RANGES)
def generate(
    seed: int,
    turns: int = 60,
    parallel_prob: float = 0.25,
    huge_prob: float = 0.03,
    huge_tokens: int = 40000,
    revert_prob: float = 0.08,
    compact_at: float = 0.5,
    pending_prob: float = 0.03,
    thinking_prob: float = 0.3,
    explore_max: int = 6,
) -> Conversation:
    """Generate a coding-agent session of ``turns`` assistant messages, the last a plain answer."""
    params: dict[str, Any] = {
        "turns": turns,
        "parallel_prob": parallel_prob,
        "huge_prob": huge_prob,
        "huge_tokens": huge_tokens,
        "revert_prob": revert_prob,
        "compact_at": compact_at,
        "pending_prob": pending_prob,
        "thinking_prob": thinking_prob,
        "explore_max": explore_max,
    }
    rng = scenario_rng(NAME, seed)
    s = CodingSession(rng, params)
    b = s.b
    b.add("system", text(_system_prompt(s.repo)))
    s.start_episode(first=True)
    compact_turn = -1 if compact_at < 0 else min(max(round(compact_at * turns), 1), turns - 1)
    while s.turn < turns - 1:
        if s.turn == compact_turn and not s.compacted:
            s.compact_command()
        s.maybe_resolve_approval()
        s.maybe_correction()
        if s.ep is None:
            s.start_episode(first=False)
        ep = s.ep
        assert ep is not None
        if s.approved_edit and not s.pending:
            s.approved()
        elif s.maybe_request_approval() or s.maybe_revert():
            pass
        elif ep.steps[:1] == ["wrap"] and s.turn == turns - 2:
            # the final answer is the report; a last test run keeps two assistant texts from meeting
            s.run_tests(ep)
        else:
            s.step()
    if s.turn == compact_turn and not s.compacted:
        s.compact_command()
    if s.pending:
        s.pending_wait = 0
        s.maybe_resolve_approval()
    s.final()
    return b.build(
        conversation_id(NAME, seed, params, defaults_of(generate)),
        TOOLS,
        {"scenario": NAME, "seed": seed, "params": params},
    )


def _system_prompt(repo: str) -> str:
    return f"""You are a coding agent working in the {repo} repository on the user's machine.

How to work:
- Understand before you change. Search and read the relevant code first, and reproduce a failure with the
  tests before fixing it. Prefer small, reviewable edits that solve the actual problem.
- Use the tools. read_file reads a file, grep searches contents, list_dir shows a folder, run_tests runs
  pytest, and edit_file replaces an exact snippet. Independent reads may be issued together in one turn.
- Every edit is recorded as a change with an id (chg-1, chg-2, ...). If a change turns out to be wrong,
  revert it explicitly by its id rather than editing around it, and say which change you reverted.
- Some paths are protected (production configuration, secrets, CI release workflows). An edit to them only
  requests approval; wait for the user's answer before relying on it, and respect a refusal.
- Follow the user's rules for the session exactly, even when they are inconvenient, and mention them when
  they constrain a fix. If a rule blocks the task, stop and ask.
- Keep the test suite green. Run the affected tests after each fix and the wider suite before you report
  that a task is done. Never delete or skip a failing test to make the suite pass.
- Be brief in messages to the user: what you found, what you changed (with change ids), what is left. When
  you finish a piece of work and something obviously follows from it, say what you would do next.
- When the conversation is compacted, the summary replaces earlier messages; carry forward the files you
  are working on, the errors still open, the decisions taken and the user's rules.

Style: Python 3.11, type hints, pytest fixtures over setup methods, no new dependencies without asking,
no drive-by reformatting of code you did not need to touch."""
