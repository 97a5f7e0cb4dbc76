"""Claude Code (the CLI agent): auto-compact, ``/compact``, reactive compaction, and microcompact.

Claude Code is closed source. Everything here comes from ``shared/reference/policy-catalogue.md`` §B1,
which cites the official changelog (``anthropics/claude-code@5cfc0a19:CHANGELOG.md``, up to v2.1.239),
the docs page "context window" (what survives compaction), and third-party readings of the code that
agree with each other (issue anthropics/claude-code#31806 quoting the threshold function; the
"harness engineering" book's chapters on ``services/compact/autoCompact.ts`` and micro-compaction), and
from the two recorded sessions in ``shared/recorded/claude-code`` (the summary message's wrapper, and
where they compacted: ``compactMetadata.preTokens`` 167,094 and 167,117, the threshold below).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from policies._tail import client_estimate
from policies.base import Plan, Policy, SummaryCall, SummaryRequest, Trigger, register
from policies.helpers import (
    end_cut,
    floor_index,
    keep_newest_bound,
    keep_reverts,
    plan_shrinks,
    rollback_target,
    unit_floor,
)
from sim.core.cache import CachePlacement
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Rule

# The text the recorded sessions show around the summary (the user message after ``compact_boundary``,
# ``isCompactSummary``): a fixed opening and a fixed instruction to carry on. The transcript path the real
# message also names is left out: the simulator has none.
SUMMARY_WRAPPER = (
    "This session is being continued from a previous conversation that ran out of context. The summary "
    "below covers the earlier portion of the conversation.\n\n{summary}\n\nPlease continue the conversation "
    "from where we left off without asking the user any further questions. Continue with the last task that "
    "you were asked to work on."
)
# Our wording of what the compaction prompt asks for: the nine sections the catalogue lists (§B1 "Summarised").
SUMMARY_PROMPT = (
    "Summarise this conversation so that the same coding agent can continue it. Think it through first, then "
    "write the summary in nine sections: the user's primary request and intent; key technical concepts; files "
    "and code sections with the important snippets; errors and how they were fixed; problem solving; every "
    "user message (not tool results); pending tasks; the current work, in detail; and the next step, if any, "
    "in line with the user's latest request. Keep any sensitive instructions the user gave."
)
# Tools whose results microcompact may clear (§B1 "Microcompact family", time-based microcompact).
COMPACTABLE_TOOLS = ("Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write")
MICROCOMPACT_PLACEHOLDER = "[Old tool result content cleared]"
# Tools that read or change a file, and the argument naming it (Claude Code's ``file_path``; the bundled
# scenarios' ``path``): what "recently read or edited files" are made of.
FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "read_file", "edit_file", "write_file"})
READ_TOOLS = frozenset({"Read", "read_file"})
WRITE_TOOLS = frozenset({"Write", "write_file"})
PATH_KEYS = ("file_path", "path", "notebook_path")
# An absolute token count, sized for a 200K window: ``csim check`` scales it to its small window.
TOKENS = {"tokens": True}


@dataclass(frozen=True)
class ClaudeCodeConfig:
    """Parameters, named after the constants the catalogue (§B1) reports.

    Attributes:
        buffer_tokens: ``AUTOCOMPACT_BUFFER_TOKENS`` = 13,000: auto-compact fires this far below the
            effective window.
        summary_reserve: ``MAX_OUTPUT_TOKENS_FOR_SUMMARY`` = 20,000: the effective window is the context
            window minus min(the client's max output tokens, this); also the summary call's output cap.
        max_output_tokens: the client's max output tokens for the model, 32,000 (the catalogue's note that
            older builds reserved "the full max output: 32k => 45k buffer"); with the defaults the threshold
            is 200,000 - 20,000 - 13,000 = 167,000 on a 200K window, where the recorded sessions compacted.
        autocompact_pct: ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` (0 < p <= 100), unset by default; it can only lower
            the threshold (to p% of the effective window).
        restore_files: ``POST_COMPACT_MAX_FILES_TO_RESTORE`` = 5 recently read or edited files re-attached.
        restore_file_tokens: ``POST_COMPACT_MAX_TOKENS_PER_FILE`` = 5,000; a bigger file comes back as its
            path only.
        restore_budget_tokens: ``POST_COMPACT_TOKEN_BUDGET`` = 50,000 for everything re-attached.
        failure_breaker: auto-compact stops after this many consecutive failures (3; changelog 2.1.76).
        memory_text: the project's memory (CLAUDE.md, auto-memory) that Claude Code re-reads from disk after
            a compaction; empty by default because a replay has no disk (the recordings carry none).
        unseen_reattached_tokens: about this many tokens of content re-attached after every full compaction that
            the replayed recording cannot show, as one placeholder message after the files (0 by default). A
            token-level trace has no text: no file contents, memory, plan or todo list to re-attach, so without it
            the request after a compaction is the system prompt, the tools and the mock summary alone. On the
            shared trace sample what followed the system prompt and tools there was 11K to 108K tokens, 33K by
            the bundled post-compaction model (``sim/calibration/after_compaction_fit.json``, the ``constant``
            form; ``benchmarks/results/after-compaction.md``), of which the mock summary is about 3.5K. Set from
            that model fitted without each session, the 15 compacting traces replayed whole come to -1.6% of their
            recorded prompt tokens against -9.5% without, but the per-session |error| median rises from 4.0% to
            7.7% (``benchmarks/after_compaction.py --replay``): so it is not on by default.
    """

    buffer_tokens: int = field(default=13_000, metadata=TOKENS)
    summary_reserve: int = field(default=20_000, metadata=TOKENS)
    max_output_tokens: int = field(default=32_000, metadata=TOKENS)
    autocompact_pct: float | None = None
    restore_files: int = 5
    restore_file_tokens: int = field(default=5_000, metadata=TOKENS)
    restore_budget_tokens: int = field(default=50_000, metadata=TOKENS)
    failure_breaker: int = 3
    memory_text: str = ""
    unseen_reattached_tokens: int = field(default=0, metadata=TOKENS)

    def __post_init__(self) -> None:
        for name in (
            "buffer_tokens",
            "summary_reserve",
            "max_output_tokens",
            "restore_file_tokens",
            "unseen_reattached_tokens",
        ):
            if getattr(self, name) < 0:
                raise InvalidConfig(f"{name}={getattr(self, name)!r} must be 0 or more")
        if self.restore_files < 0 or self.restore_budget_tokens < 0:
            raise InvalidConfig("restore_files and restore_budget_tokens must be 0 or more")
        if self.failure_breaker < 1:
            raise InvalidConfig(f"failure_breaker={self.failure_breaker!r} must be at least 1")
        if self.autocompact_pct is not None and not 0 < self.autocompact_pct <= 100:
            raise InvalidConfig(f"autocompact_pct={self.autocompact_pct!r} must be in (0, 100], or unset")


def reattached_files(messages: Sequence[Message], start: int, cfg: ClaudeCodeConfig) -> tuple[Injected, ...]:
    """What Claude Code re-attaches after a compaction of ``messages[start:]``: the memory text, then the
    ``restore_files`` most recently read, edited or written files, newest first, each with its newest known
    content (a read's result, a write's content) when that fits ``restore_file_tokens`` and what is left of
    ``restore_budget_tokens``, else its path only. Claude Code 2.1.39 reads each from disk with a per-file token
    limit and drops what the limit or budget refuses (``cli.js``: the five newest entries of its read-file state,
    ``fileReadingLimits: {maxTokens: 5000}``, a 50,000 budget); a replay has no disk, so the newest content the
    conversation shows stands in for it. Used by the policy and by ``csim fidelity`` to estimate the first
    request after a recorded compaction."""
    out = [Injected(cfg.memory_text, label="memory")] if cfg.memory_text else []
    budget = cfg.restore_budget_tokens - len(cfg.memory_text) // 4
    paths: list[str] = []
    newest: dict[str, str] = {}
    calls: dict[str, str] = {}  # call id -> result text, of calls whose result is still to come in the walk back
    for i in range(len(messages) - 1, start - 1, -1):
        for p in messages[i].parts:
            if p.kind == "tool_result" and p.call_id:
                calls[p.call_id] = p.text
            elif p.kind == "tool_call" and p.name in FILE_TOOLS:
                path = _path_of(p.args)
                result = calls.pop(p.call_id or "", None)
                if path is None:
                    continue
                if path not in paths and len(paths) < cfg.restore_files:
                    paths.append(path)
                if path not in newest:
                    if p.name in READ_TOOLS and result is not None:
                        newest[path] = result
                    elif p.name in WRITE_TOOLS:
                        written = _content_of(p.args)
                        if written is not None:
                            newest[path] = written
        if len(paths) >= cfg.restore_files and all(q in newest for q in paths):
            break
    for path in paths:
        text = newest.get(path)
        tokens = -(-len(text) // 4) if text is not None else 0
        if text is None or tokens > cfg.restore_file_tokens or tokens > budget:
            note = f"{path} was read or edited before the compaction; read it again if you need it."
            out.append(Injected(note, label=f"file-path:{path}"))
            continue
        budget -= tokens
        out.append(Injected(f"Contents of {path} (re-attached after compaction):\n{text}", label=f"file:{path}"))
    if cfg.unseen_reattached_tokens:
        out.append(Injected(UNSEEN_HEAD + UNSEEN_FILLER * cfg.unseen_reattached_tokens, label="unseen"))
    return tuple(out)


#: ``MAX_PTL_RETRIES`` in ``compact.ts``: the compact call sent again on less of the conversation when the provider
#: rejects it as too long, up to 3 times (write-ups of the 2.1 source; :attr:`SummaryRequest.overflow_retries`).
PTL_RETRIES = 3
#: :attr:`ClaudeCodeConfig.unseen_reattached_tokens`' placeholder: a head, then one filler a token (cl100k_base,
#: chars4), the filler of :func:`sim.formats.kv_trace.placeholder`.
UNSEEN_HEAD = "[content re-attached after compaction that the recording does not show]"
UNSEEN_FILLER = " pad"


def _content_of(args: str | None) -> str | None:
    """A write call's file content (``content``), or None."""
    try:
        parsed = json.loads(args or "")
    except ValueError:
        return None
    content = parsed.get("content") if isinstance(parsed, dict) else None
    return content if isinstance(content, str) else None


def _path_of(args: str | None) -> str | None:
    try:
        parsed = json.loads(args or "")
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    return next((str(parsed[k]) for k in PATH_KEYS if isinstance(parsed.get(k), str)), None)


@register("claude-code")
class ClaudeCode(Policy[ClaudeCodeConfig]):
    """Claude Code's auto-compact: the whole conversation becomes one summary, and recent files come back.

    * **Trigger** (§B1, "Trigger"): before every model request, when Claude Code's estimate (§B1, "Token
      counting": ``tokenCountWithEstimation``, the last response's usage, input and output, plus chars/4 of the
      messages appended after it: :func:`policies._tail.client_estimate`) reaches
      ``window - min(max_output_tokens, summary_reserve) - buffer_tokens`` (167,000 on a 200K window),
      lowered by ``autocompact_pct`` when set. ``/compact`` compacts at once. A prompt the provider rejects
      as too long is compacted and retried once (reactive compaction). After ``failure_breaker``
      consecutive failed summaries, auto-compact stops (``/compact`` still works).
    * **View after** (§B1, "Kept / re-injected"): the system prompt, then one user message holding the
      nine-section summary in the wrapper the recordings show (placed where ``compact_boundary`` is), then
      re-attached content: the memory text when configured, and up to 5 recently read or edited files, each
      at most 5,000 tokens (a bigger one as its path only) within 50,000 in all (estimated at chars/4). No
      raw message is kept: the summary stands for everything, the live turn included.
    * **Summary**: regenerated from the boundary on, so the previous summary is folded into the next; when the
      conversation is too long for the compact call itself, its newest messages that fit are summarised, and a
      compact call the provider rejects as too long is sent again on less, up to 3 times (``PTL_RETRIES``).

    Departures: the thrash guard (stop after three compactions that refill at once, 2.1.89), hooks, partial
    "summarize up to here", skills and plan re-injection are not modelled; a re-attached file is the newest
    result the log holds for that path (Claude Code re-reads the disk), and an edited file with no read
    result comes back as its path. A revert of a change the summary swallowed rolls the view back to the
    newest checkpoint where it resolves (the harness's contract; Claude Code's rewind restores files, not
    the conversation), and a compaction that would not shrink the view is skipped.

    Known deviation: ``live-turn``. The last user message is summarised with everything else; the
    recordings show the session continuing from the summary alone.

    Prompt caching (``cache_placement``): breakpoints on the system prompt and on the last block of each
    request, both with the 1-hour TTL. The recordings show that TTL: every one of the 299 requests of session
    258c7280 (Claude Code 2.1.39) that wrote to the cache wrote ``ephemeral_1h_input_tokens`` and none wrote
    5-minute tokens, and each request's uncached input is a handful of tokens (3 on the first), so the last
    breakpoint sits at the end of the prompt. The system breakpoint is tentative: the recordings cannot show
    where the earlier breakpoints are, only that after a compaction the system prefix is still read.

    Summariser request (``summary_call`` ``fork``): the compaction call is the agent's request with the summary
    instruction appended, so it reads the conversation's cached prefix. Claude Code's documentation, "How Claude
    Code uses prompt caching" (https://code.claude.com/docs/en/prompt-caching, section "Compacting the
    conversation", quoted in anthropics/claude-code#88755): "Claude Code sends a separate request with the same
    system prompt, tools, and history as your conversation, plus a summarization instruction appended as a final
    user message. While the cache is warm, that request reads your prefix from the cache". The catalogue (§B1
    "Cache": a fork of the same messages, changelog 2.1.70 and 2.1.128) says the same, and so does the 2.1.39
    bundle the recordings come from: its compaction forks the main loop's request parameters
    (``cacheSafeParams``: system prompt, tools, messages) with the summary request as the one new message, behind
    the flag ``tengu_compact_cache_prefix`` (its in-bundle default is off; the flag is served remotely), and
    falls back to a request with a system prompt of its own (no shared prefix) when the fork fails. Here it falls
    back likewise when the fork's prompt does not fit the window (a reactive compaction). The instruction is billed
    after the last breakpoint, uncached: later builds keep the fork's breakpoint off it (``skipCacheWrite`` in
    ``compact.ts``, as a write-up of that source has it:
    https://wiki.coder.dog/wiki-kb/wiki/sources/claude-code-compaction-prompt-cache/); 2.1.39 writes it too, a few
    hundred tokens.
    """

    TUNABLE = {
        "autocompact_pct": "40:100:5",
    }
    TUNABLE_NATIVE = {
        "autocompact_pct": "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={value} (environment variable)",
    }

    Config = ClaudeCodeConfig
    known_deviations: ClassVar[frozenset[str]] = frozenset({"live-turn"})
    deviation_reasons = {
        "live-turn": "Claude Code summarises the live turn, its last user message included",
    }
    cache_placement: ClassVar[CachePlacement] = CachePlacement(system="1h", last="1h")
    summary_call: ClassVar[SummaryCall] = "fork"

    @property
    def retry_on_overflow(self) -> int:
        return 1

    def threshold(self, state: RunState) -> int:
        """Tokens at which auto-compact fires (``autocompact_threshold`` in §B1)."""
        cfg = self.config
        effective = state.model.context_window - min(cfg.max_output_tokens, cfg.summary_reserve)
        threshold = effective - cfg.buffer_tokens
        if cfg.autocompact_pct is not None:
            threshold = min(int(effective * cfg.autocompact_pct / 100), threshold)
        return threshold

    def over_trigger(self, state: RunState) -> bool:
        return client_estimate(state) >= self.threshold(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "overflow":
            target = rollback_target(state)
            if target is not None:
                return Plan(start=target.start, mode="rollback", restore=target)
        if trigger == "auto" and (state.failed_in_a_row >= self.config.failure_breaker or not self.over_trigger(state)):
            return None
        return self.full_compaction(state)

    def full_compaction(self, state: RunState) -> Plan | None:
        """Everything since the boundary into one summary, followed by what Claude Code re-attaches."""
        pf = state.protected_from
        cut = keep_reverts(state, unit_floor(state, end_cut(state) if pf is None else min(pf, end_cut(state))))
        if cut <= floor_index(state):
            return None
        plan = Plan(
            start=cut,
            summarize=True,
            injected=self.reattached(state),
            summary_request=SummaryRequest(
                prompt=SUMMARY_PROMPT,
                wrapper=SUMMARY_WRAPPER,
                max_tokens=self.config.summary_reserve,
                input_newest_tokens=max(1, state.model.input_budget - self.config.buffer_tokens),
                overflow_retries=PTL_RETRIES,
            ),
            # A conversation that jumped past the window in one step cannot be summarised whole: the compact
            # call keeps the newest messages that fit, and is sent again on less when the provider still rejects
            # it (Claude Code's truncateHeadForPTLRetry, up to MAX_PTL_RETRIES; changelog 2.1.142 seeds the
            # first attempt from the overflow's size).
        )
        # A conversation shorter than a summary and the files is left as it is (Claude Code would
        # summarise it anyway; the harness holds every compaction to shrinking the view).
        return plan if plan_shrinks(state, plan) else None

    def reattached(self, state: RunState) -> tuple[Injected, ...]:
        """The memory text, then the most recently read or edited files, newest first, within the budgets."""
        return reattached_files(state.messages[: len(state)], floor_index(state), self.config)


@dataclass(frozen=True)
class MicrocompactConfig(ClaudeCodeConfig):
    """:class:`ClaudeCodeConfig` plus microcompact's.

    Attributes:
        keep_recent: ``keepRecent`` = 5 newest results of the compactable tools stay (at least 1).
        tools: the compactable tools (§B1: Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit, Write).
    """

    keep_recent: int = 5
    tools: tuple[str, ...] = COMPACTABLE_TOOLS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.keep_recent < 1:
            raise InvalidConfig(f"keep_recent={self.keep_recent!r} must be at least 1 (Claude Code keeps one)")
        if not self.tools:
            raise InvalidConfig("tools is empty: name the tools whose results may be cleared")


@register("claude-code-microcompact")
class ClaudeCodeMicrocompact(ClaudeCode):
    """Claude Code with microcompact: old results of the compactable tools cleared, the newest 5 kept.

    Before auto-compact, the results of the compactable tools older than the newest ``keep_recent`` (5)
    are cleared to ``[Old tool result content cleared]``; the calls stay.

    Source: §B1 "Microcompact family" (third-party readings of ``timeBasedMCConfig.ts`` and the book's
    micro-compaction chapter). The real time-based variant fires only after a gap of 60 minutes since the
    last assistant message (the cache is cold by then), and a cached variant clears by count through the
    API's cache edits without breaking the cached prefix; until the simulator has a clock, this one clears
    whenever a new result passes out of the newest ``keep_recent`` (the count-based reading). The query
    loop runs microcompact before auto-compact, so a request over the threshold is compacted in full, by the
    same forked summariser request as ``claude-code`` (``summary_call`` ``fork``, inherited).

    Known deviations: ``live-turn`` (as ``claude-code``) and ``compaction-loop``: Claude Code compacts before every
    request its estimate puts over the threshold, however little the previous compaction left room for, so when
    what a compaction must keep leaves the prompt over (a summary held back by a pending turn or an unresolved
    revert, then a microcompact that clears too little), it compacts again on the next turn. That is the
    "autocompact thrash loop" of the changelog (2.1.89), which since then stops after three compactions in a row
    that refill at once (the guard is not modelled). The 10,000-example check shows it here, not for
    ``claude-code`` alone.
    """

    Config = MicrocompactConfig
    known_deviations: ClassVar[frozenset[str]] = ClaudeCode.known_deviations | {"compaction-loop"}
    deviation_reasons = {
        "live-turn": "Claude Code summarises the live turn, its last user message included",
        "compaction-loop": (
            "Claude Code compacts again before each request it estimates over the threshold, even when what it must "
            "keep leaves it over"
        ),
    }

    def rule(self) -> Rule:
        cfg = self.config
        assert isinstance(cfg, MicrocompactConfig)
        # Names match in either case: other clients' recordings and csim check's conversations say "read", "bash".
        names = frozenset({*cfg.tools, *(name.lower() for name in cfg.tools)})
        return Rule(frozenset({"tool_result"}), tools=names, text=MICROCOMPACT_PLACEHOLDER)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        full = super().decide(state, trigger)
        if full is not None or trigger != "auto":
            return full
        cfg = self.config
        assert isinstance(cfg, MicrocompactConfig)
        rule = self.rule()
        current = next((e.before for e in state.view.edits if e.rule == rule), 0)
        bound = keep_newest_bound(state, rule, cfg.keep_recent)
        if bound <= max(current, state.view.start):
            return None
        edits = tuple(e for e in state.view.edits if e.rule != rule) + (Edit(rule, bound),)
        plan = Plan(start=state.view.start, edits=edits, mode="microcompact")
        return plan if plan_shrinks(state, plan) else None
