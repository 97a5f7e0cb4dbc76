"""The ``log-append-only`` invariant, and the deep checks ``deep_checks`` runs at every request.

The log is the record of a run: every message appended once and never replaced, every event chained by digest
(:meth:`sim.core.log.RunLog.verify`). A policy that edits the log behind the engine's back breaks the chain or
replaces a message; the engine checks the whole log once when a run ends, and with ``deep_checks`` at every request
also that the view folded from the log is the engine's and that the whole request re-validates from scratch.
"""

from __future__ import annotations

from sim.core.errors import InvalidRequest
from sim.core.log import MessageAppended, RunLog
from sim.core.model import Provider
from sim.core.state import Ledger, RunState
from sim.replay import model as wire
from sim.replay.request import RequestBuilder


def log_problem(log: RunLog, ledger: Ledger, incremental: bool = False) -> str | None:
    """What is wrong with the log, if anything: its digest chain broken, or a message replaced after it was
    appended. ``incremental``: only what was appended since the last incremental check (at each request of a
    deep-checked run); the check a run ends with is whole."""
    start = log.verified if incremental else 0
    problem = log.verify(incremental)
    if problem:
        return problem
    if log.messages_appended != len(ledger.messages):
        return f"{len(ledger.messages)} messages in the log's list but {log.messages_appended} were appended"
    for i in range(start, len(log)):
        e = log[i]
        if isinstance(e, MessageAppended) and ledger.messages[e.index] is not e.message:
            return f"message {e.index} ({e.message.id!r}) was replaced after it was appended"
    return None


def deep_problems(
    log: RunLog, ledger: Ledger, state: RunState, requests: RequestBuilder, provider: Provider
) -> list[tuple[str, str]]:
    """``(invariant, detail)`` for each deep check the current request fails (see the module docstring)."""
    out = []
    problem = log_problem(log, ledger, incremental=True)
    if problem:
        out.append(("log-append-only", problem))
    if log.newest_view(state.checkpoints[0]) != state.view:  # fold(log, ...), reading what was appended since
        out.append(("log-append-only", "the view folded from the log differs from the engine's view"))
    full = requests.render(state.view)
    try:
        (wire.validate_anthropic if provider == "anthropic" else wire.validate_openai)(full)
    except InvalidRequest as exc:
        out.append(("tool-pairing", f"full re-validation: {exc}"))
    return out


__all__ = ["deep_problems", "log_problem"]
