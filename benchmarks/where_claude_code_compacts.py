"""Where Claude Code compacts, measured on the recorded sessions (issue 30, item 4).

For every recorded compaction in the shared token traces (``kv-cache-traces``, format ``kv-trace``: a compaction
is found from the hash chain, its size before is the last prompt and reply before it) and in the Claude Code text
sessions (``compact_boundary`` records with their ``preTokens``), the size at which the session compacted, per
model, against the trigger ``claude-code`` computes for that model's window with its defaults (200K window:
180,000 effective less the 13,000 buffer, 167,000). A trace records no trigger; what it does show is whether the
compaction came while a tool call of the agent was open (the importer answers that call with a synthetic
``compacted`` result before the summary): mid-turn, where only Claude Code's automatic compaction runs (``/compact``
is a command typed between turns). For those, the largest prompt the session sent since its previous compaction
says which fixed trigger on the provider's count could have fired there: one above that prompt.

    python benchmarks/where_claude_code_compacts.py [--recorded ../shared/recorded] [--out FILE.md]

Prints a markdown report (and writes it with ``--out``). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies import make_policy  # noqa: E402
from sim.core.model import ModelConfig  # noqa: E402
from sim.formats.importing import recorded_conversations  # noqa: E402
from tests.builders import state_of  # noqa: E402


def _trigger(window: int) -> int:
    """``claude-code``'s automatic trigger, in tokens, for a window (its defaults)."""
    policy = make_policy("claude-code")
    from sim.core.conversation import Conversation, Message, Part

    conv = Conversation("x", (Message("m0", "system", (Part("text", "s"),)),))
    return int(policy.threshold(state_of(policy, conv, ModelConfig(context_window=window))))  # type: ignore[attr-defined]


def _compactions(path: Path, fmt: str) -> list[tuple[str, str, int, str]]:
    """(conversation, model, tokens before, trigger) for each recorded compaction of the recordings in ``path``;
    a trace's mid-turn compaction has the trigger ``mid-turn`` (see the module docstring)."""
    return [row[:4] for row in _compaction_rows(path, fmt)]


def _compaction_rows(path: Path, fmt: str) -> list[tuple[str, str, int, str, int]]:
    """:func:`_compactions`' rows and, last, the largest prompt a reply of the segment before it was sent with."""
    convs, _ = recorded_conversations(path, fmt)
    out = []
    for c in convs:
        start = 0
        for i, m in enumerate(c.messages):
            b = m.meta.get("compact_boundary")
            if not b:
                continue
            model = next((x.meta["model"] for x in reversed(c.messages[:i]) if x.meta.get("model")), "unknown")
            pre = b.get("pre_tokens") if "pre_tokens" in b else b.get("preTokens")
            seg = [x.usage.prompt_tokens for x in c.messages[start:i] if x.role == "assistant" and x.usage]
            start = i
            if pre is None:
                continue
            trigger = b.get("trigger") or ("mid-turn" if c.messages[i - 1].meta.get("synthetic") == "compacted" else "")
            out.append((c.id, str(model), int(pre), str(trigger or "not recorded"), max(seg, default=0)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recorded", default=str(ROOT.parent / "shared" / "recorded"))
    ap.add_argument("--out", help="also write the report to this markdown file")
    args = ap.parse_args()
    rec = Path(args.recorded)
    full = [("kv-trace", *r) for r in _compaction_rows(rec / "kv-cache-traces", "kv-trace")]
    for p in sorted((rec / "claude-code").glob("*.jsonl")):
        full += [("claude-code", *r) for r in _compaction_rows(p, "claude-code")]
    rows = [r[:5] for r in full]
    trigger = _trigger(200_000)
    lines = [
        "# Where Claude Code compacts",
        "",
        "`python benchmarks/where_claude_code_compacts.py --out benchmarks/results/where-claude-code-compacts.md`",
        "",
        f"`claude-code`'s automatic trigger at a 200,000-token window (its defaults): {trigger:,} tokens.",
        "",
        "| source | model | compactions | sessions | min | p10 | median | p90 | max | at or over the trigger "
        "| trigger |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[tuple[str, str, int, str]]] = defaultdict(list)
    for source, conv, model, pre, trig in rows:
        groups[source, model].append((conv, model, pre, trig))
    for (source, model), g in sorted(groups.items()):
        sizes = sorted(p for _, _, p, _ in g)
        p10 = p90 = "–"  # deciles of fewer than ten sizes would be extrapolated
        if len(sizes) >= 10:
            deciles = statistics.quantiles(sizes, n=10)
            p10, p90 = f"{deciles[0]:,.0f}", f"{deciles[-1]:,.0f}"
        over = sum(p >= trigger for p in sizes)
        triggers = ", ".join(sorted({t for *_, t in g}))
        lines.append(
            f"| {source} | {model} | {len(sizes)} | {len({c for c, *_ in g})} | {sizes[0]:,} | {p10} | "
            f"{statistics.median(sizes):,.0f} | {p90} | {sizes[-1]:,} | {over} | {triggers} |"
        )
    text_sizes = [p for src, _, _, p, t in rows if src == "claude-code" and t == "auto"]
    trace_sizes = sorted(p for src, _, _, p, _ in rows if src == "kv-trace")
    if text_sizes:
        far = max(abs(p - trigger) for p in text_sizes)
        lines += ["", f"The {len(text_sizes)} automatic compactions of the text sessions came within {far:,} tokens "]
        lines[-1] += "of the trigger."
    if trace_sizes:
        below = sum(p < trigger for p in trace_sizes)
        mid = [(pre, seen) for src, _, _, pre, t, seen in full if src == "kv-trace" and t == "mid-turn"]
        if mid:
            lowest, smallest = max(seen for _, seen in mid), min(pre for pre, _ in mid)
            fits = sum(seen < trigger for _, seen in mid)
            lines += textwrap.wrap(
                f"In the traces, {below} of the {len(trace_sizes)} compactions came below it (median "
                f"{statistics.median(trace_sizes):,.0f}). {len(mid)} came mid-turn, with a tool call of the agent "
                "open: Claude Code's automatic compaction (`/compact` is typed between turns). A fixed trigger on the "
                "provider's count fires before the first prompt over it (the prompt that crosses it, with a tool "
                "result the trace does not show, is never sent), so it lies above every prompt a session sent before "
                f"compacting. {fits} of the {len(mid)} sent none at or over {trigger:,} first (consistent with the "
                "policy's trigger when the unseen result carried them over it); the others sent prompts up to "
                f"{lowest:,} without compacting. One trigger for all would have to exceed {lowest:,}, and the "
                f"smallest compaction, at {smallest:,}, would then need an unseen tool result of "
                f"{lowest - smallest + 1:,} tokens: these sessions do not follow one threshold on the provider's "
                "count (a client estimate other than the provider's, or another Claude Code's setting, may set it), "
                "so they give no figure to revise the policy's documented trigger by; the text sessions, which record "
                "theirs, stay the evidence for it.",
                width=110,
            )
        else:
            lines.append(f"In the traces, {below} of the {len(trace_sizes)} compactions came below it.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
