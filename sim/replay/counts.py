"""The prompt sizes of a replay under ``none``, and nothing else: what a calibration fits on.

``csim calibrate`` needs, for each recorded reply, the engine's count of the request it answers: its turn, prompt
tokens and messages in view. :func:`request_counts` takes a conversation through an
:class:`~sim.replay.engine.Engine` under the ``none`` policy as :meth:`Engine.run` would (every message appended
with its sizes, each reply's request validated as the mock provider validates it, the turn and the assistant-turn
openers kept as the engine keeps them), without what a calibration never reads: billing, timing, the prompt
cache, retention, the log and the invariant checks of a run: ``csim calibrate`` on 150 generated trajectories went
from 3.40 to 3.13 times ``csim import`` of them with it (``benchmarks/bench_scale.py --only calibrate``), 2.91 with
the thinking rule skipped where nothing thinks. A test holds its rows to the full replay's on every shared
recording, the scenarios and a refused request.
"""

from __future__ import annotations

from typing import Any

from policies import make_policy
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Message
from sim.core.errors import InvalidRequest, PromptTooLong
from sim.replay import model as wire
from sim.replay.engine import Engine


def request_counts(conversation: Conversation, config: RunConfig) -> list[dict[str, Any]]:
    """One row per agent request of ``conversation`` replayed under ``none`` with ``config``: ``turn``,
    ``context_tokens``, ``messages_in_view``, and ``error`` (empty; the provider's refusal for the last row of a
    replay the provider stops, as the full replay's row says it)."""
    e = Engine(make_policy("none"), conversation, config)
    st, ledger, measure = e.state, e.ledger, e.measure
    # Anthropic's thinking rule is all the assistant-turn openers are kept for: a conversation without thinking
    # never meets it (RequestBuilder.thinking_problem), so neither is asked.
    thinking = e.model.provider == "anthropic" and any(p.kind == "thinking" for m in e.script for p in m.parts)

    def append(m: Message) -> None:
        sz = measure.sizes(m)
        ledger.append(m, sz.chars, sz.tokens, sz.calls)

    rows: list[dict[str, Any]] = []
    for m in e.script:
        if m.role != "assistant":
            append(m)
            continue
        view = st.view
        status, tokens, in_view = e._request_size(view, False)
        error = ""
        try:
            e.requests.validate(view, status)
        except InvalidRequest as exc:
            error = f"invalid-request: {exc}"
        problem = e.requests.thinking_problem(view) if thinking and not error else None
        if problem is not None:
            error = f"invalid-request: {problem}"
        if not error:
            try:
                wire.check_window(tokens, e.model)
            except PromptTooLong as exc:
                error = f"prompt-too-long: {exc}"
        rows.append({"turn": st.turn, "context_tokens": tokens, "messages_in_view": in_view, "error": error})
        if error:
            break
        st.turn += 1
        if thinking and e.requests.final_turn(view).fresh:  # the reply opens an assistant turn afresh
            ledger.openers.add(len(ledger.messages))
        append(m)
    return rows


__all__ = ["request_counts"]
