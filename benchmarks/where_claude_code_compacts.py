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
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies import make_policy  # noqa: E402
from sim.calibration import files, where_compacts  # noqa: E402
from sim.calibration.where_compacts import recorded_trigger  # noqa: E402
from sim.core.anchors import Anchors  # noqa: E402
from sim.core.conversation import Conversation  # noqa: E402
from sim.core.counting import Calibration, agent_of  # noqa: E402
from sim.core.model import ModelConfig  # noqa: E402
from sim.formats import read  # noqa: E402
from sim.formats.importing import recorded_conversations  # noqa: E402
from sim.replay.anchoring import anchors_for  # noqa: E402
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
            out.append((c.id, str(model), int(pre), recorded_trigger(c, i), max(seg, default=0)))
    return out


#: The ``autocompact_pct`` settings walked (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``): it only lowers the trigger, and at
#: 93 and over it is the default's (180,000 x 0.93 > 167,000).
PCTS = tuple(range(60, 94))
#: The windows walked for the in-sample ceilings: ``claude-code``'s trigger is the window less 33,000 at its
#: defaults, so these put it at every 1,000 tokens from 117,000 to 207,000, over every size the sample compacted at.
WINDOWS = tuple(range(150_000, 240_001, 1_000))


def _sessions(rec: Path, tmp: Path) -> list[tuple[str, Conversation, Anchors, Calibration | None]]:
    """Every main-agent session of the traces and the text recordings that compact, with its anchors and
    calibration: a trace's from its sizes (no calibration), a transcript's with one fitted on the other transcripts
    (held out)."""
    out = []
    for p in sorted((rec / "kv-cache-traces").glob("*.json")):
        convs = read(p, "kv-trace").conversations
        out += [("kv-trace", c, anchors_for(c, None), None) for c in convs if agent_of(c) == "main"]
    texts = sorted((rec / "claude-code").glob("*.jsonl"))
    for p in texts:
        others = tmp / f"without-{p.stem}"
        others.mkdir()
        for q in texts:
            if q != p:
                shutil.copyfile(q, others / q.name)  # a folder's links outside it are not followed
        cmd = [sys.executable, "-m", "sim.cli.main", "calibrate", str(others), "--format", "claude-code"]
        cmd += ["--out", str(tmp / f"{p.stem}.json")]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cal = files.choose(files.load(tmp / f"{p.stem}.json"), "anthropic", "claude-code", "main")
        for c in read(p, "claude-code").conversations:
            if agent_of(c) == "main" and any("compact_boundary" in m.meta for m in c.messages):
                out.append(("claude-code", c, anchors_for(c, cal), cal))
    return out


def _request_section(rec: Path) -> list[str]:
    """``claude-code``'s compaction request against each recorded automatic compaction (``csim fidelity``'s
    ``--policy`` check, :mod:`sim.calibration.where_compacts`): at its defaults, and with the ``autocompact_pct``
    that does best on the other sessions, held out by session."""
    with tempfile.TemporaryDirectory() as tmp:
        sessions = _sessions(rec, Path(tmp))
        settings: list[int | None] = [None, *PCTS]
        walked = []
        for pct in tqdm(settings, desc="autocompact_pct", unit="setting", file=sys.stderr):
            params = {} if pct is None else {"autocompact_pct": str(pct)}
            walked.append(
                {c.id: where_compacts.check(c, "claude-code", params, None, cal, a) for _, c, a, cal in sessions}
            )
        by_window = []
        for window in tqdm(WINDOWS, desc="trigger (in sample)", unit="setting", file=sys.stderr):
            model = ModelConfig(context_window=window)
            by_window.append(
                {c.id: where_compacts.check(c, "claude-code", None, model, cal, a) for _, c, a, cal in sessions}
            )
    source = {c.id: src for src, c, _, _ in sessions}

    def within(checks: dict[str, list[where_compacts.TriggerCheck]], ids: set[str]) -> int:
        return sum(int(where_compacts.figures(checks[i])["within_one"] or 0) for i in ids)

    # held out: each session under the setting that is within one request of the most compactions of the others
    def best(ids: set[str]) -> int:
        return max(range(len(settings)), key=lambda j: (within(walked[j], ids), j == 0, -j))

    held = {sid: best(set(source) - {sid}) for sid in sorted(source)}
    in_sample = best(set(source))
    lines = [
        "",
        "## claude-code's compaction request against the recorded ones",
        "",
        *textwrap.wrap(
            "Each segment replayed alone under `claude-code` on a 200,000-token window, usage-anchored, with the "
            "request the compaction replaced and the smallest one after it (`csim fidelity`'s `--policy` check, "
            "`sim/calibration/where_compacts.py`); a transcript's messages no usage covers estimated with a "
            "calibration fitted on the other transcripts. Held out: each session under the `autocompact_pct` of "
            f"{settings[1]}-{settings[-1]}, or the default, that is within one request of the most automatic "
            "compactions of the other sessions. The bar: 90% within one request.",
            width=110,
        ),
        "",
        "| source | setting | automatic compactions | within one request | earlier | later | segments the policy "
        "compacts in and the session did not |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = (
        ("defaults", lambda sid: 0),
        ("held out (" + ", ".join(sorted({str(settings[j] or "default") for j in held.values()})) + ")", held.get),
        (f"{settings[in_sample] or 'default'}, the best in sample", lambda sid: in_sample),
    )
    for src in ("kv-trace", "claude-code"):
        ids = sorted(i for i, s in source.items() if s == src)
        for label, pick in rows:
            f = where_compacts.figures([k for i in ids for k in walked[pick(i)][i]])
            lines.append(
                f"| {src} | {label} | {f['automatic']} | {f['within_one']} | {f['earlier']} | {f['later']} | "
                f"{f['unrecorded']} |"
            )
    hits = sum(within(walked[held[sid]], {sid}) for sid in source)
    total = sum(int(where_compacts.figures(walked[0][sid])["automatic"] or 0) for sid in source)
    lines += [
        "",
        f"Held out, over both: within one request of {hits} of {total} automatic compactions ({hits / total:.0%}).",
        "",
        *_ceilings(by_window, source, total, within),
    ]
    return lines


def _ceilings(
    by_window: list[dict[str, list[where_compacts.TriggerCheck]]],
    source: dict[str, str],
    total: int,
    within: Callable[[dict[str, list[where_compacts.TriggerCheck]], set[str]], int],
) -> list[str]:
    """What a trigger chosen on the answers reaches (in sample, not a setting to use): one trigger for every
    session, and each session its own, walked over :data:`WINDOWS`."""
    reserve = WINDOWS[0] - _trigger(WINDOWS[0])  # the trigger is the window less this, at every window walked
    trigger = [w - reserve for w in WINDOWS]
    one = max(range(len(WINDOWS)), key=lambda j: (within(by_window[j], set(source)), -j))
    own = {sid: max(range(len(WINDOWS)), key=lambda j: (within(by_window[j], {sid}), -j)) for sid in source}
    reach_one = within(by_window[one], set(source))
    reach_own = sum(within(by_window[own[sid]], {sid}) for sid in source)
    return textwrap.wrap(
        f"The ceiling, in sample (a trigger chosen on the very compactions it is scored on, walked from "
        f"{trigger[0]:,} to {trigger[-1]:,} tokens by 1,000 through the window): one trigger for all "
        f"the sessions, the best at {trigger[one]:,}, is within one request of {reach_one} of {total} "
        f"({reach_one / total:.0%}); each session its own best trigger, {reach_own} of {total} "
        f"({reach_own / total:.0%}). Neither reaches 90%: one session's compactions come at sizes further apart than "
        "one trigger on the sizes a trace shows can follow, so the bar needs what a trace does not record (the tool "
        "result each compaction replaced, the client's own estimate and its settings).",
        width=110,
    )


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
    lines += _request_section(rec)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
