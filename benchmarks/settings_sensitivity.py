"""Does each policy's trigger setting change what it does on the shared recordings? (issue 34)

Why: a trigger parameter that gives the same runs at every setting is either a bug (the policy or the engine never
lets it act: a mid-turn compaction refused, a setting read from the wrong field) or a true property of the modelled
system on this data (its trigger counts something the sessions never reach, it acts on a tool they never used).
The results alone do not say which, so this runs, for every bundled policy with a trigger parameter (a ratio,
percent, threshold, token limit, message count or keep-recent field of its ``Config``), two or three settings on
the two long shared Claude Code sessions (``claude-code/fa812bfe…``, ``258c7280…``) and compares the runs' rows:
compactions, the requests they came at, peak context and cost. Each policy's settings replay in lockstep (one
``sim.api.run_spec`` per policy and session); ``--jobs`` of those run at once.

    python benchmarks/settings_sensitivity.py [--jobs 2] [--policy NAME ...] [--record FILE] [--markdown FILE]

Prints one line per policy as it finishes, then the table. With ``--record FILE`` each finished (policy, session)
is kept as a JSON line and skipped next time (a run with other settings or at another commit redoes it). With
``--markdown FILE`` the table is written as markdown, with the command and the commit (the committed copy is
``benchmarks/results/settings-sensitivity.md``). Policies whose settings all give the same rows carry the reason
found by reading the policy and the modelled system (:data:`REASONS`); one without a reason is printed as
``unexplained``. Policies without a trigger parameter are listed with why (:data:`UNSWEPT`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO.parent / "shared" / "recorded"
SESSIONS = (
    "claude-code/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
)

# The sessions peak at 191,948 and 192,388 prompt tokens under ``none`` (both overflow the 191,808-token input
# budget of the default 200K window; a whole replay leaves Claude Code's own summary out), with 3 and 5 user
# messages and 157 and 152 replies: a ratio of 0.4-0.8 of
# the window (80K-160K tokens) and an absolute trigger of 60K-140K tokens are all passed, so each setting should
# act at its own request. Counts of messages or events are set around the sessions' 344-358 messages.
RATIOS = (0.4, 0.6, 0.8)
TOKENS = (60_000, 100_000, 140_000)
FRACTIONS = tuple(f"fraction:{r}" for r in RATIOS)

#: policy -> (parameter, the settings tried). Every registered policy is here or in :data:`UNSWEPT`.
TRIALS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "adk-sliding": ("compaction_interval", (1, 2, 3)),
    "adk-token": ("token_threshold", TOKENS),
    "aider": ("max_chat_history_tokens", (1024, 8192, 65_536)),
    "anthropic-clear-thinking": ("keep_turns", (1, 3, 10)),
    "anthropic-clear-tool-uses": ("trigger_tokens", TOKENS),
    "anthropic-background-compaction": ("trigger_tokens", TOKENS),
    "anthropic-compaction": ("trigger_tokens", TOKENS),
    "anthropic-on-demand-compaction": ("trigger_tokens", TOKENS),
    "anthropic-sdk-compaction": ("context_token_threshold", TOKENS),
    "autogen-buffered": ("buffer_size", (5, 20, 50)),
    "autogen-head-and-tail": ("tail_size", (5, 20, 50)),
    "autogen-token-limited": ("token_limit", TOKENS),
    "claude-code": ("autocompact_pct", (50, 70, 85)),
    "claude-code-microcompact": ("keep_recent", (2, 5, 20)),
    "cline": ("max_input_tokens", TOKENS),
    "cline-legacy": ("max_allowed_size", TOKENS),
    "cloudflare-os": ("trigger_ratio", RATIOS),
    "coder": ("compression_threshold", (40, 60, 80)),
    "codex": ("auto_compact_ratio", RATIOS),
    "codex-remote": ("auto_compact_ratio", RATIOS),
    "copilot-infinite-sessions": ("background_compaction_threshold", RATIOS),
    "crewai": ("usable_window_tokens", (20_000, 60_000, 170_000)),
    "deep-agents": ("trigger", FRACTIONS),
    "docker-agent": ("compaction_threshold", RATIOS),
    "effect-agent": ("context_token_limit", TOKENS),
    "gemini-cli": ("compression_threshold", (0.3, 0.5, 0.7)),
    "goose": ("threshold", RATIOS),
    "hermes-agent": ("threshold_percent", (0.5, 0.75, 0.85)),
    "inspect-auto": ("threshold", RATIOS),
    "inspect-edit": ("threshold", RATIOS),
    "inspect-summary": ("threshold", RATIOS),
    "inspect-trim": ("threshold", RATIOS),
    "jetbrains-hybrid": ("n", (10, 21, 43)),
    "jetbrains-summary": ("n", (10, 21, 43)),
    "kimi-cli": ("compaction_trigger_ratio", (0.5, 0.65, 0.8)),
    "langchain-clear-tool-uses": ("trigger", TOKENS),
    "langchain-summarization": ("trigger", FRACTIONS),
    "langmem": ("max_tokens", TOKENS),
    "letta": ("force_proactive", (False, True)),
    "llamaindex-summary-buffer": ("token_limit_ratio", (0.3, 0.5, 0.75)),
    "mastra-observational-memory": ("message_tokens", (10_000, 30_000, 60_000)),
    "nexau-summary": ("threshold", (0.4, 0.6, 0.75)),
    "nexau-tool-result-compaction": ("threshold", (0.4, 0.6, 0.75)),
    "openai-agents-local-compaction": ("window_size", (20, 50, 100)),
    "openai-agents-session": ("compaction_threshold", (5, 10, 40)),
    "openai-responses-compaction": ("compact_threshold", TOKENS),
    "opencode": ("reserved", (20_000, 60_000, 100_000)),
    "openhands-browser-output": ("attention_window", (1, 3)),
    "openhands-default": ("max_size", (40, 80, 120)),
    "openhands-masking": ("attention_window", (10, 50, 100)),
    "openhands-summarizing": ("max_size", (60, 120, 240)),
    "pi": ("reserve_tokens", (16_384, 60_000, 100_000)),
    "qwen-code": ("compression_threshold", (0.3, 0.5, 0.7)),
    "roo-code": ("auto_condense_context_percent", (40, 60, 80)),
    "semantic-kernel-summarization": ("target_count", (10, 30, 100)),
    "semantic-kernel-truncation": ("target_count", (10, 30, 100)),
    "sliding-window": ("trigger_ratio", (0.6, 0.7, 0.85)),  # above its target_ratio, 0.5
    "smolagents": ("max_length", (5_000, 20_000, 50_000)),
    "strands-sliding-window": ("window_size", (20, 40, 100)),
    "strands-summarizing": ("proactive_compression", RATIOS),
    "swe-agent-masking": ("n", (2, 5, 20)),
    "vercel-prune-messages": ("tool_calls", ("before-last-2-messages", "before-last-10-messages", "none")),
}

#: Policies without a trigger parameter, and why.
UNSWEPT: dict[str, str] = {
    "none": "never compacts; no parameters",
    "openhands-window": "acts only on a context-window error; its parameters are the retry count and a clip",
    "vscode-copilot-chat": "no parameters: its budget is the model's prompt budget (window less output reserve)",
}

#: Why a policy's settings give identical rows on the shared sessions, found by reading the policy and the system
#: it models (``shared/reference/policy-catalogue.md``).
REASONS: dict[str, str] = {
    "openhands-browser-output": (
        "true property: it masks only the results of the browser tools (`browser`, `web_read`), and no shared "
        "recording calls one (the Claude Code sessions use Bash, Edit, Read, Write, Grep, Glob, Task; a search of "
        "every file under `shared/recorded` finds no browser call), so at every setting nothing is masked and the "
        "run is `none`'s"
    ),
    "llamaindex-summary-buffer": (
        "true property: the buffer is asked only at a run's start and end (a user turn's) and counts message content "
        "at 4 characters a token (call arguments left out); at the user messages before the sessions' long live "
        "turns (from message 108 of fa812bfe…, 78 to 338 of 258c7280…) no limit is passed, and those turns pass "
        "the window before they end, so no setting compacts before the overflow. 0.3 compacted at Claude Code's "
        "recorded summary while the replay sent it as a user message"
    ),
}

#: What the table shows of settings that agree among themselves while others differ, and of earlier findings.
NOTES: dict[str, str] = {
    "aider": (
        "1,024 and 8,192 (Aider's default range) agree: at each user message the finished exchanges hold 50K+ tokens, "
        "past any default, and the tail of half the budget cannot start after an assistant message on tool loops, "
        "so everything is summarised alike; 65,536 is not passed at the first user message"
    ),
    "cloudflare-os": (
        "0.6 and 0.8 agree: Workshop checks once per turn, before the agent loop, and the sessions have 4 and 6 user "
        "messages: both thresholds are first passed before the same one"
    ),
    "crewai": (
        "its summarising trigger is fixed (0.85 of the window, by characters / 4, below the provider's count on "
        "these sessions: it fires only on the overflow); `usable_window_tokens` sets the deferral of results over a "
        "quarter of it: at 20,000 results over 5,000 tokens go to a file and the run never overflows; no result "
        "reaches 15,000 tokens, so 60,000 and 170,000 agree. Identical before the anchored-size fix"
    ),
    "smolagents": (
        "identical before the anchored-size fix: a result bounded on entry kept the size the provider recorded for "
        "the whole result; now 5,000 characters keeps the run under the window"
    ),
    "deep-agents": (
        "0.6 and 0.8 fire at the same request: LangChain counts the messages at characters / 4 (the tools and "
        "Claude Code's hidden system prompt not counted, JSON at about 3 characters a token), so 0.6 of the input "
        "is passed only at the jump to the overflow, where 0.8 compacts reactively"
    ),
    "hermes-agent": "0.5 and 0.75 agree: under a 512K window Hermes raises the threshold to at least 0.75 (PR #66249)",
    "letta": (
        "force_proactive (0.9 of the window, 180,000) differs on 258c7280 only: fa812bfe jumps from 167,045 to past "
        "the window in one request, so both compact on the overflow"
    ),
    "mastra-observational-memory": (
        "10,000 and 30,000 agree: it observes only the messages before the live turn, and each earlier turn of these "
        "sessions is over 30,000 tokens"
    ),
    "strands-sliding-window": (
        "20 and 40 agree: the window is applied after each invocation and must start at a user message; with 4 and 6 "
        "user messages both keep from the same one"
    ),
    "openai-agents-session": "5, 10 and 40 agree on fa812bfe: each finished user turn there holds over 40 items",
    "langmem": "140,000 never acts: LangMem counts characters / 4, below the provider's count on these sessions",
    "langchain-clear-tool-uses": "140,000 never acts: LangChain counts characters / 4, below the provider's count",
}

#: What the first run of this script found and what was done about it (the table above is after the fix).
FINDINGS = """What the first runs of this script found, and what was done (the table above is after the fixes):

- Engine: under anchored accounting (the default on a recording with usage) a tool result the policy bounds on entry
  (`Policy.bound_tool_result`: smolagents' and Codex's truncation, CrewAI's deferral to a file) kept the size the
  provider had recorded for the whole result, so a bound changed the characters sent but no token of the prompt:
  smolagents' `max_length` gave identical rows at every setting, and so did CrewAI's `usable_window_tokens`.
  `sim/replay/measure.py` now sizes a bounded result at the recorded message's own ratio of provider tokens to the
  engine's count, applied to what is sent (`tests/test_anchor.py`, `tests/test_recorded_settings.py`). Codex's rows
  moved too (its 10,000-byte truncation now counts).
- `swe-agent-masking` (and `jetbrains-hybrid`'s masking) elided the oldest results of a parallel batch whose
  results came in more tool messages than `n` (`live-turn`, at `n` 2 and 5): the results the next reply answers
  are now never elided (`tests/policies/test_swe_agent.py`).
- `jetbrains-hybrid` said it was over its trigger (turns not yet summarised) while the summary was held back inside
  the live turn, so each masking step read as a compaction that left it over (`compaction-loop`, 17 and 47 a run):
  its trigger is now a summary that can be made.
- `effect-agent` (a tail sized in tokens starting inside the live thinking loop) and `jetbrains-summary` /
  `jetbrains-hybrid` (an assistant checkpoint merged with the first kept step) end in a request Anthropic rejects
  (`atomic-units`, then `provider-error`) as the real systems would: now declared, with hand-built cases in
  `tests/test_properties.py`. The runs above that end in `provider-error` are all of this kind (a cut inside the
  sessions' long live tool loops; each of those policies declares `atomic-units`), but `autogen-token-limited`'s,
  whose middle-out pops split a call from its result (`tool-pairing`, declared too).
- Once a whole replay left Claude Code's recorded summary out (it had been sent as a user message, on top of the
  history it replaced), the sessions' long live turns run on through it: `jetbrains-summary` and `jetbrains-hybrid`
  at `n` = 21 then catch the backlog the live turn held back up `n` turns a query once the next user message comes,
  each checkpoint leaving it over `n + keep_last_m_turns` (`compaction-loop` on 258c7280, twice): as the study's
  processor would on that backlog, so declared, with a hand-built case (`tests/policies/test_swe_agent.py`)."""

FIELDS = ("compactions", "at_requests", "peak_context_tokens", "total_cost_usd", "finish_reason")


def _row(runs: Any, comps: Any, config: str) -> dict[str, Any]:
    run = runs[runs["config"] == config].iloc[0]
    mine = comps[comps["config"] == config]
    return {
        "compactions": int(run["compaction_count"]),
        "at_requests": [int(t) for t in mine["turn"]],
        "modes": sorted({str(m) for m in mine["mode"]}),
        "peak_context_tokens": int(run["peak_context_tokens"]),
        "total_cost_usd": round(float(run["total_cost_usd"]), 6),
        "finish_reason": str(run["finish_reason"]),
        "agent_requests": int(run["agent_requests"]),
        "undeclared_violations": int(run["violation_count"]) - int(run["declared_violations"]),
    }


def _same(held: Any, given: Any) -> bool:
    """Whether a run's parameter value (as its config holds it: 50 may read 50.0) is the setting given."""
    return bool(held == given or str(held) == str(given))


def measure(policy: str, session: str, recorded: str) -> dict[str, Any]:
    """One policy's settings on one session, in lockstep: a row per setting."""
    from sim import api

    param, values = TRIALS[policy]
    t0 = time.perf_counter()
    r = api.run_spec(api.spec({policy: {param: list(values)}}, conversations=str(Path(recorded) / session)))
    # In the order the settings were given (the results are sorted by run key): each run's value of ``param``.
    held = [json.loads(p).get(param) for p in r.runs["params"]]
    order = sorted(range(len(held)), key=lambda i: [_same(held[i], v) for v in values].index(True))
    # A list, not a mapping: the record is written with sorted keys, which would put "=65536" before "=8192".
    rows = [{"config": str(r.runs["config"].iloc[i]), **_row(r.runs, r.compactions, str(r.runs["config"].iloc[i]))}
            for i in order]  # fmt: skip
    return {"policy": policy, "session": session, "param": param, "values": list(values), "rows": rows,
            "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip


def differs(records: list[dict[str, Any]]) -> bool:
    """Whether the settings give different rows on at least one session."""
    for rec in records:
        seen = {json.dumps({k: row[k] for k in FIELDS}, sort_keys=True) for row in rec["rows"]}
        if len(seen) > 1:
            return True
    return False


def summary(records: list[dict[str, Any]]) -> str:
    """Per session, each setting's compactions (the first request one came at) and peak, in the settings' order."""
    parts = []
    for rec in sorted(records, key=lambda r: r["session"]):
        cells = []
        for row in rec["rows"]:
            first = f"@{row['at_requests'][0]}" if row["at_requests"] else ""
            end = "" if row["finish_reason"] == "completed" else f", {row['finish_reason']}"
            if row.get("undeclared_violations"):
                end += f", {row['undeclared_violations']} undeclared violations"
            cells.append(f"{row['compactions']}{first} / {row['peak_context_tokens'] // 1000}K{end}")
        parts.append(f"{Path(rec['session']).name[:8]}: " + "; ".join(cells))
    return "<br>".join(parts)


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "sim", "policies"], cwd=REPO,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
    except OSError:
        return "unknown"
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def table(by_policy: dict[str, list[dict[str, Any]]], command: str) -> str:
    lines = [
        "# Settings sensitivity on the shared Claude Code sessions",
        "",
        f"Produced by `{command}` at commit {commit()} (`benchmarks/settings_sensitivity.py`; issue 34).",
        "Each policy's settings replay in lockstep on the two long shared Claude Code sessions",
        "(`fa812bfe…`, 358 messages, and `258c7280…`, 344) in the default 200K window. *Differs* compares the",
        "runs' compactions, the requests they came at, peak context, cost and how the run ended. The *runs* column",
        "gives, per session and setting in the order tried, `compactions@first request / peak context`.",
        "",
        "| policy | parameter: settings tried | differs | runs | reason (when identical), or a note |",
        "| --- | --- | --- | --- | --- |",
    ]
    for policy in sorted(by_policy):
        recs = by_policy[policy]
        param, values = recs[0]["param"], recs[0]["values"]
        d = differs(recs)
        reason = NOTES.get(policy, "") if d else REASONS.get(policy, "unexplained")
        tried = f"`{param}`: " + ", ".join(str(v) for v in values)
        lines.append(f"| `{policy}` | {tried} | {'yes' if d else 'no'} | {summary(recs)} | {reason} |")
    lines += ["", "Policies without a trigger parameter (not swept):", ""]
    lines += [f"- `{p}`: {why}" for p, why in sorted(UNSWEPT.items())]
    undeclared = [
        f"- `{row['config']}` on {Path(rec['session']).name[:8]}: {row['undeclared_violations']}"
        for policy in sorted(by_policy)
        for rec in sorted(by_policy[policy], key=lambda r: r["session"])
        for row in rec["rows"]
        if row.get("undeclared_violations")
    ]
    if undeclared:
        head = "Runs with violations their policy does not declare (`violation_count - declared_violations`):"
        lines += ["", head, ""]
        lines += undeclared
    else:
        lines += ["", "No run breaks an invariant its policy does not declare."]
    lines += ["", FINDINGS]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--policy", action="append", help="only this policy (repeat)")
    ap.add_argument("--recorded", default=str(RECORDED), help="the shared recordings (default ../shared/recorded)")
    ap.add_argument("--record", help="keep finished (policy, session) results here as JSON lines; skip them next time")
    ap.add_argument("--markdown", help="write the table here as markdown")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(REPO))
    from policies import POLICIES

    registered = set(POLICIES.names())
    missing = registered - set(TRIALS) - set(UNSWEPT)
    if missing:
        print(f"policies with no settings to try: {sorted(missing)}; add them to TRIALS or UNSWEPT", file=sys.stderr)
        return 2
    recorded = Path(args.recorded)
    if not all((recorded / s).exists() for s in SESSIONS):
        print(f"the shared Claude Code sessions are not under {recorded}: give --recorded", file=sys.stderr)
        return 2
    wanted = sorted(args.policy or TRIALS)
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if args.record and Path(args.record).exists():
        for line in Path(args.record).read_text().splitlines():
            rec = json.loads(line)
            if rec.get("commit") == commit() and rec["policy"] in TRIALS and isinstance(rec.get("rows"), list):
                param, values = TRIALS[rec["policy"]]
                if rec["param"] == param and rec["values"] == list(values):
                    done[(rec["policy"], rec["session"])] = rec
    jobs = [(p, s) for p in wanted for s in SESSIONS if (p, s) not in done]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(measure, p, s, str(recorded)): (p, s) for p, s in jobs}
        for fut in as_completed(futures):
            p, s = futures[fut]
            try:
                rec = fut.result()
            except Exception as exc:  # a policy that fails on a session is a finding too: say which and go on
                print(f"{p} on {Path(s).name}: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            rec["commit"] = commit()
            done[(p, s)] = rec
            if args.record:
                with open(args.record, "a") as fh:
                    fh.write(json.dumps(rec, sort_keys=True) + "\n")
            print(f"{p} on {Path(s).name[:8]} ({rec['seconds']} s): {summary([rec])}", flush=True)
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for (p, _), rec in sorted(done.items()):
        if p in wanted:
            by_policy.setdefault(p, []).append(rec)
    command = "python benchmarks/settings_sensitivity.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = table(by_policy, command.strip())
    print(text)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
