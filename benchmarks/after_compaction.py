"""How well the first request after a compaction can be predicted from what the recording shows before it (issue 30,
item 3), held out by session: each form of :mod:`sim.calibration.after_compaction`, fitted on the other sessions.

Reads the shared token-level traces (``kv-cache-traces``) and Claude Code transcripts (``claude-code``) under
``--recorded``, calibrates the transcripts with ``csim calibrate`` (their anchored overhead and the estimates of
their summaries and re-attached files need one), and prints per form the median and p90 of
``|predicted - recorded| / recorded`` of the whole first request (system and tools included, as ``csim fidelity``
compares), over the traces, over the transcripts, and over both; per regime (one fit for traces, one for transcripts)
and pooled (one fit for both). ``today`` is what csim estimated before: the calibration's ``after_compaction`` beside
what the transcript shows (a trace shows nothing); ``transcripts unread`` predicts the transcripts' summaries and
files too, as for a trace (known = 0). ``--write`` refreshes the bundled
``sim/calibration/after_compaction_fit.json`` (the observations, the form, what they came from).

    python benchmarks/after_compaction.py [--recorded ../shared/recorded] [--write] [--rows] [--replay] [--out FILE]

Nothing here is a test: it reads the shared recordings, which tests may not have.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies import make_policy  # noqa: E402
from sim.calibration import after_compaction as ac  # noqa: E402
from sim.calibration import files  # noqa: E402
from sim.core.counting import agent_of, compaction_cuts  # noqa: E402
from sim.core.retention import load_model  # noqa: E402
from sim.formats import read  # noqa: E402
from sim.formats.datasets import sha256_of  # noqa: E402
from sim.replay.anchoring import anchors_for  # noqa: E402
from sim.replay.engine import RunConfig, run  # noqa: E402

TRACES, TRANSCRIPTS = "kv-cache-traces", "claude-code"


def _calibrate(folder: Path, fmt: str, out: Path) -> Path:
    cmd = [sys.executable, "-m", "sim.cli.main", "calibrate", str(folder), "--format", fmt, "--out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def collect(recorded: Path, tmp: Path) -> tuple[list[ac.Observation], dict[str, object], dict[str, float]]:
    """The observations of every main-agent session that compacts, what they came from, and each calibration's
    ``after_compaction`` (for the ``today`` row)."""
    rows: list[ac.Observation] = []
    fitted_on: dict[str, object] = {}
    today: dict[str, float] = {}
    for sub, fmt in ((TRACES, "kv-trace"), (TRANSCRIPTS, "claude-code")):
        folder = recorded / sub
        cal = files.choose(files.load(_calibrate(folder, fmt, tmp / f"{fmt}.json")), "anthropic", fmt, "main")
        today["sizes" if fmt == "kv-trace" else "text"] = cal.coefficients.after_compaction
        used = []
        for path in sorted(folder.iterdir()):
            if path.suffix not in (".json", ".jsonl"):
                continue
            found = []
            for conv in read(path, fmt).conversations:
                if agent_of(conv) != "main":
                    continue
                anchors = None if ac.sizes_only(conv) else anchors_for(conv, cal)
                found += ac.observations(conv, anchors)
            if found:
                used.append({"file": path.name, "sha256": sha256_of(path), "compactions": len(found)})
                rows += found
        fitted_on[sub] = used
    fitted_on["note"] = (
        "the transcripts' known part (summary, re-attached files) is estimated with csim calibrate on "
        f"{TRANSCRIPTS}/ itself (its ratios are fitted on what requests added, not on these first requests)"
    )
    return rows, fitted_on, today


def replay_traces(folder: Path, rows: list[ac.Observation]) -> list[str]:
    """Each trace that compacts replayed whole under ``claude-code`` (usage-anchored, its defaults), and again with
    ``unseen_reattached_tokens`` = the bundled form's ``left`` fitted without the session less the mock summary's
    typical length: the sum of the agent requests' prompt tokens against the recorded sum, per session and in all;
    and how many of the recorded compactions the replay at the defaults compacted within one request of."""
    typical = load_model(None).summary_tokens
    lines = [
        "",
        f"claude-code replaying each trace, prompt tokens against the recorded (unseen: held-out left - {typical:,})",
    ]
    totals = [0, 0, 0]
    errors: tuple[list[float], list[float]] = ([], [])
    met = recorded_compactions = 0
    for path in sorted(folder.glob("*.json")):
        for conv in read(path, "kv-trace").conversations:
            mine = [o for o in rows if o.session == conv.id]
            if agent_of(conv) != "main" or not mine:
                continue
            fitted = ac.fit([o for o in rows if o.session != conv.id], ac.BUNDLED_FORM)
            unseen = max(0, round(fitted.left(mine[0])) - typical)
            recorded = sum(m.usage.prompt_tokens for m in conv.messages if m.role == "assistant" and m.usage)
            sent, ends = [], []
            for params in ({}, {"unseen_reattached_tokens": str(unseen)}):
                result = run(make_policy("claude-code", params), conv, RunConfig())
                sent.append(sum(r["context_tokens"] for r in result.rows if r["request_kind"] == "agent"))
                ends.append(str(result.summary["finish_reason"]))
                if not params:
                    ours = [c["turn"] for c in result.compactions if c["trigger"] in ("auto", "overflow")]
                    theirs = [sum(m.role == "assistant" for m in conv.messages[:i]) for i in compaction_cuts(conv)]
                    met += sum(1 for t in theirs if any(abs(t - o) <= 1 for o in ours))
                    recorded_compactions += len(theirs)
            totals = [totals[0] + recorded, totals[1] + sent[0], totals[2] + sent[1]]
            for kept, n in zip(errors, sent, strict=True):
                kept.append(abs(n / recorded - 1))
            lines.append(
                f"  {conv.id}: recorded {recorded:,}; defaults {sent[0] / recorded - 1:+.1%} ({ends[0]}); unseen "
                f"{unseen:,}: {sent[1] / recorded - 1:+.1%} ({ends[1]})"
            )
    lines.append(
        f"  all: recorded {totals[0]:,}; defaults {totals[1] / totals[0] - 1:+.1%}; with unseen "
        f"{totals[2] / totals[0] - 1:+.1%}; per session |error| median {statistics.median(errors[0]):.1%} and "
        f"{statistics.median(errors[1]):.1%}"
    )
    lines.append(f"  at the defaults, a compaction within one request of {met} of the {recorded_compactions} recorded")
    return lines


def ceilings(rows: list[ac.Observation]) -> list[tuple[str, list[int]]]:
    """Two predictions that see the answers (in sample, not models): what no fit of their kind could beat.

    ``best one number``: the single ``left`` that gives the traces (and, apart, the transcripts) their smallest median
    error, chosen on the very compactions it is scored on; ``the session's own median``: each compaction predicted
    with the median ``left`` of its own session's compactions, itself included (a session with one compaction is
    predicted exactly). A form fitted on other sessions can do no better than the first on features that do not
    vary within a session, and a target under the second needs what changes from one compaction of a session to
    the next."""
    best: dict[str, int] = {}
    for regime in {o.regime for o in rows}:
        mine = [o for o in rows if o.regime == regime]

        def median_error(c: int, mine: list[ac.Observation] = mine) -> float:
            return float(np.median([abs(o.base + o.known + c - o.recorded) / o.recorded for o in mine]))

        best[regime] = min(sorted({o.left for o in mine}), key=median_error)
    own = {s: int(np.median([o.left for o in rows if o.session == s])) for s in {o.session for o in rows}}
    return [
        ("in sample: best one number", [o.base + o.known + best[o.regime] for o in rows]),
        ("in sample: the session's median", [o.base + o.known + own[o.session] for o in rows]),
    ]


def _line(label: str, rows: list[ac.Observation], predicted: list[int]) -> str:
    parts = []
    for name, keep in (("traces", "sizes"), ("transcripts", "text"), ("all", None)):
        pick = [(o, p) for o, p in zip(rows, predicted, strict=True) if keep is None or o.regime == keep]
        f = ac.figures(ac.errors([o for o, _ in pick], [p for _, p in pick]))
        if f["n"]:
            parts.append(
                f"{name} median {f['median']:.1%} p90 {f['p90']:.1%} mean {f['mean']:.1%} "
                f"(signed {f['signed_mean']:+.1%}, {f['within_5pct']:.0%} within 5%)"
            )
    return f"{label:32s} " + "; ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recorded", default=os.environ.get("CSIM_RECORDED") or str(ROOT.parent / "shared" / "recorded"))
    ap.add_argument("--write", action="store_true", help="refresh sim/calibration/after_compaction_fit.json")
    ap.add_argument("--rows", action="store_true", help="print each compaction and its held-out predictions")
    ap.add_argument(
        "--replay",
        action="store_true",
        help="also replay each compacting trace under claude-code, with and without unseen_reattached_tokens set from "
        "the model fitted on the other sessions, and print its prompt tokens against the recorded ones",
    )
    ap.add_argument("--out", help="also write what is printed to this file, under the command that made it")
    args = ap.parse_args()
    printed: list[str] = []

    def say(line: str) -> None:
        printed.append(line)
        print(line)

    with tempfile.TemporaryDirectory() as tmp:
        rows, fitted_on, today = collect(Path(args.recorded), Path(tmp))
    sessions = len({o.session for o in rows})
    say(f"{len(rows)} compactions in {sessions} sessions ({sum(o.regime == 'sizes' for o in rows)} in traces)")
    base = [max(o.base, round(o.base + o.known + today[o.regime])) for o in rows]
    say(_line("today (after_compaction)", rows, base))
    held: dict[str, object] = {}
    table = {}
    for name in ac.FORMS:
        for pooled in (False, True):
            predicted = ac.held_out(rows, name, pooled)
            label = f"{name}{' (pooled)' if pooled else ''}"
            table[label] = predicted
            say(_line(label, rows, predicted))
            if not pooled:
                held[name] = {
                    regime: ac.figures(
                        ac.errors(
                            *zip(
                                *[(o, p) for o, p in zip(rows, predicted, strict=True) if o.regime == regime],
                                strict=True,
                            )
                        )
                    )
                    for regime in ("sizes", "text")
                }
    # the transcripts as if they had no text: what is left is the summary and the files too (one number held out)
    blind = [o if o.regime == "sizes" else replace(o, known=0) for o in rows]
    say(_line("constant, transcripts unread", blind, ac.held_out(blind, "constant")))
    for label, predicted in ceilings(rows):
        say(_line(label, rows, predicted))
    if args.rows:
        for i, o in enumerate(rows):
            preds = " ".join(f"{k}={table[k][i]:,}" for k in ("constant", "previous", "recent"))
            say(
                f"  {o.session} #{o.compaction}: recorded {o.recorded:,} (base {o.base:,}, known {o.known:,}, "
                f"left {o.left:,}); pre {o.pre_prompt:,}; {preds}"
            )
    if args.replay:
        for line in replay_traces(Path(args.recorded) / TRACES, rows):
            say(line)
    if args.out:
        command = "python benchmarks/after_compaction.py" + (" --rows" if args.rows else "")
        command += " --replay" if args.replay else ""
        Path(args.out).write_text("\n".join([f"`{command}`", "", "```", *printed, "```"]) + "\n", encoding="utf-8")
    if args.write:
        model = ac.Model(ac.BUNDLED_FORM, tuple(rows), fitted_on)
        out = ROOT / "sim" / "calibration" / ac.BUNDLED
        body = model.to_json({"form": ac.BUNDLED_FORM, "by_regime": held[ac.BUNDLED_FORM], "all_forms": held})
        out.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
