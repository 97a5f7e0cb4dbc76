"""``csim calibrate`` (fit the provider-token model) and ``csim fidelity`` (replay against real usage)."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig

if TYPE_CHECKING:
    from sim.core.retention import RetentionModel


def load_source(
    source: str, fmt: str | None, cache: str | None = None, lenient: bool = False
) -> tuple[list[tuple[str, list[Conversation]]], str, str]:
    """Conversations grouped by format, a name for ``fitted_on`` and a checksum of the inputs.

    ``source`` is a fetched dataset's name, or a path (file or folder) read with ``fmt`` (default ``auto``)
    as ``csim import`` reads it: a folder's other files are passed over and listed on stderr.
    """
    from sim.calibration.files import checksum_of
    from sim.formats import datasets, read
    from sim.formats.importing import import_paths

    path = Path(source)
    if not path.exists():
        manifest = datasets.load_manifest()
        if source not in manifest and ("/" in source or "." in source):
            raise InvalidConfig(f"{source!r} is neither a dataset name (csim datasets list) nor an existing path")
        ds = datasets.get_dataset(source)
        by_format: dict[str, list[Conversation]] = {}
        files = datasets.dataset_files(source, cache)
        for f, p in files:
            by_format.setdefault(f.format, []).extend(read(p, f.format, lenient=lenient).conversations)
        digest = hashlib.sha256("".join(f.sha256 for f, _ in files).encode()).hexdigest()
        return sorted(by_format.items()), f"dataset {ds.name}", digest
    report = import_paths([path], fmt or "auto", lenient)
    for line in report.notes():
        print(line, file=sys.stderr)
    by_format = {}
    for got in report.read_files:
        if got.conversations:
            by_format.setdefault(got.format, []).extend(got.conversations)
    used = [got.path for got in report.read_files if got.conversations]
    return sorted(by_format.items()), str(path), checksum_of(used)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from sim.calibration import files
    from sim.calibration import fit as cal

    groups, fitted_on, digest = load_source(args.source, args.format, args.cache, args.lenient)
    if args.retention:
        return _calibrate_retention(groups, fitted_on, args)
    rows = []
    notes = []
    for fmt, convs in groups:
        rows.extend(cal.samples(convs, fmt, args.tokenizer))
        linked = sum("continues" in c.meta for c in convs)
        anchored = sum("chain" in c.meta for c in convs)
        if linked:
            notes.append(
                f"{fmt}: {linked} calls re-send an earlier call's prompt with more appended; {anchored} show all "
                f"they hold as text and are anchored on their run's first call, the other {linked - anchored} hold "
                "images, documents, thinking, server-side blocks or hosted tools and count as whole prompts"
            )
    calibrations = cal.calibrate(rows, tokenizer=args.tokenizer, fitted_on=fitted_on, checksum=digest, split=args.split)
    if args.group:
        calibrations = [c for c in calibrations if c.key == args.group]
        if not calibrations:
            raise InvalidConfig(f"--group {args.group!r} matched no fitted group")
    print(f"{fitted_on}: {len(rows)} recorded requests with usage")
    for line in notes:
        print(line)
    print(files.Report(calibrations).render())
    if args.out:
        print(f"wrote {files.save(calibrations, args.out)}")
    return 0


def _calibrate_retention(groups: list[tuple[str, list[Conversation]]], fitted_on: str, args: argparse.Namespace) -> int:
    """``csim calibrate --retention``: the retention model of the recorded summaries, held out by session."""
    from sim.calibration import retention_fit
    from sim.core.tokenizers import get_tokenizer

    count = get_tokenizer(args.tokenizer).count
    summaries = retention_fit.recorded_summaries((c for _, convs in groups for c in convs), count)
    if not summaries:
        raise InvalidConfig(
            f"{fitted_on}: no recorded summary with probes in its span (a Claude Code isCompactSummary message, "
            "a Codex compacted item, or a message an importer marks compact_summary): nothing to fit"
        )
    model = retention_fit.fit(summaries, fitted_on)
    print(f"{fitted_on}: {len(summaries)} recorded summaries of {len({s.session for s in summaries})} sessions")
    print(retention_fit.render(model))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(model.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {out} (use it with -R retention={out})")
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    from policies import make_policy
    from sim.calibration import fidelity, files, survival
    from sim.core import counting
    from sim.core.model import ModelConfig
    from sim.core.params import parse_kv

    groups, _, _ = load_source(args.path, args.format, args.cache, args.lenient)
    cals = files.load(args.calibration)
    params = parse_kv(args.param)
    if args.policy not in (None, "none"):
        make_policy(args.policy, params)  # a misspelt name or setting fails here, before any replay
    window = ModelConfig(context_window=args.window)
    model, count = None, None
    if args.retention:
        from sim.core.retention import load_model
        from sim.core.tokenizers import get_tokenizer

        model = load_model(None if args.retention == "bundled" else args.retention)
        count = get_tokenizer("cl100k_base").count
    out = Path(args.out) if args.out else None
    summaries = []
    for fmt, convs in groups:
        for conv in convs:
            if not any(m.role == "assistant" and m.usage for m in conv.messages):
                continue
            if counting.agent_of(conv) != "main" and not args.all_agents:
                continue
            c = files.choose(
                cals,
                counting.provider_of(conv, counting.format_provider(fmt)),
                fmt,
                counting.agent_of(conv),
                where=args.calibration,
            )
            policy = args.policy if args.policy is not None else DEFAULT_TRIGGER_POLICY.get(fmt)
            if policy == "none":
                policy = None
            if policy is None and params:
                raise InvalidConfig(
                    f"-P {', '.join(sorted(params))}: no policy to set it on for {conv.id} ({fmt} recordings have no "
                    "default --policy): give --policy NAME"
                )
            res = fidelity.replay(conv, c, args.across_compactions, args.accounting, policy, params, window)
            s = res.summary()
            summaries.append(s)
            line = (
                (
                    f"{conv.id}: {s['requests']} requests, |relative error| median {s['median_abs_relative_error']:.2%}"
                    f" p90 {s['p90_abs_relative_error']:.2%}"
                )
                if s["requests"]
                else f"{conv.id}: no requests"
            )
            if s["estimated_messages"] is not None:
                line += f" (anchored; {s['estimated_messages']} recorded messages estimated: no usage covered them)"
            for k in res.compactions:
                err = "n/a" if k["relative_error"] is None else f"{k['relative_error']:+.2%}"
                line += (
                    f"\n    compaction {k['compaction']} after turn {k['after_turn']}: simulated "
                    f"{k['simulated']:,} vs preTokens {k['pre_tokens']:,} ({err})"
                )
                if k["first_after_relative_error"] is not None:
                    # A trace's summary is a placeholder of the recorded size: that estimate reads the answer.
                    how = "the recorded size, not a prediction" if conv.meta.get("sizes_only") else "estimated"
                    line += (
                        f"; first request after it {k['first_after_simulated']:,} ({how}) vs "
                        f"{k['first_after_recorded']:,} recorded ({k['first_after_relative_error']:+.2%})"
                    )
                if k.get("first_after_predicted_error") is not None:
                    line += (
                        f"; predicted from what came before it (held out) {k['first_after_predicted']:,.0f} "
                        f"({k['first_after_predicted_error']:+.2%})"
                    )
                if policy is not None:
                    line += f"; {k['trigger']}, {_policy_turn(policy, k)}"
            trig = s["policy_trigger"]
            if trig is not None and (trig["automatic"] or trig["unrecorded"]):
                line += f"\n    {policy} on a {trig['window']:,}-token window: {_trigger_figures(trig, 'session')}"
                largest = max((r["recorded"] for r in res.rows), default=0)
                if largest > trig["window"]:
                    line += (
                        f" (the session sent a prompt of {largest:,} tokens, more than that window holds: give its "
                        "window with --window)"
                    )
            cache = s["cache"]
            if cache is not None:
                w_err, c_err = cache["cache_write_relative_error"], cache["cost_relative_error"]
                line += (
                    f"\n    cache: {cache['recorded_misses_predicted']} of {cache['recorded_misses']} recorded misses "
                    f"predicted, {cache['other_requests_predicted_as_misses']} other requests predicted as misses; "
                    f"writes {cache['simulated_cache_write_tokens']:,} vs {cache['recorded_cache_write_tokens']:,} "
                    f"recorded ({'n/a' if w_err is None else f'{w_err:+.1%}'}); cost "
                    f"${cache['simulated_cost_usd']:.2f} vs ${cache['recorded_cost_usd']:.2f} priced from recorded "
                    f"usage ({'n/a' if c_err is None else f'{c_err:+.1%}'})"
                )
            proof = s["provable_cache"]
            if proof is not None:
                share, rel = proof["simulated_share_of_provable"], proof["cost_relative_to_provable"]
                line += (
                    f"\n    cache against the block hashes: reads {proof['simulated_read_tokens']:,} of "
                    f"{proof['provable_read_tokens']:,} provable ({'n/a' if share is None else f'{share:.1%}'}); "
                    f"{proof['requests_reading_beyond_proof']} requests read a block or more beyond the proven prefix; "
                    f"cost ${proof['simulated_cost_usd']:.2f} vs ${proof['provable_cost_usd']:.2f} with the proven "
                    f"prefix read ({'n/a' if rel is None else f'{rel:+.1%}'}); "
                    f"{proof['provable_misses_predicted']} of {proof['provable_misses']} provable misses predicted, "
                    f"{proof['simulated_misses_with_provable_reuse']} predicted misses with most of the prompt provable"
                )
            observed = survival.observed_survival(conv)
            kept = survival.by_kind(observed)
            # what the recorded summaries kept of the probes (issue 28), by kind and by artifact shape
            s["retention"] = {"observed": kept, "observed_artifact_shapes": survival.by_kind(observed, "shape")}
            if kept:
                line += "\n    recorded summaries kept, verbatim, of the probes of their spans: " + ", ".join(
                    f"{kind} {d['kept']}/{d['probes']} "
                    f"({d['kept_needed_after']}/{d['needed_after']} of those needed later)"
                    for kind, d in kept.items()
                )
            if model is not None and count is not None and kept:
                predicted, lines = _predicted(conv, model, count)
                s["retention"]["predicted"] = predicted
                line += "".join(lines)
            print(line)
            if out is not None:
                safe = conv.id.replace("/", "_")
                fidelity.write(res, out / safe)
    checked = [s["policy_trigger"] for s in summaries if s["policy_trigger"] is not None]
    if len(checked) > 1:
        total = {k: sum(t[k] for t in checked) for k in ("automatic", "within_one", "earlier", "later", "unrecorded")}
        names = ", ".join(sorted({t["policy"] for t in checked}))
        print(f"over {len(checked)} sessions, {names}: {_trigger_figures(total, 'sessions')}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summaries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {out}/summary.json and one folder per session (fidelity.csv, compactions.csv)")
    if not summaries:
        raise InvalidConfig(f"{args.path}: no conversation with recorded usage to compare")
    return 0


#: ``csim fidelity``'s ``--policy`` by format: the policy modelled on the client that recorded it.
DEFAULT_TRIGGER_POLICY = {"claude-code": "claude-code", "kv-trace": "claude-code"}


def _trigger_figures(f: dict[str, Any], sessions: str) -> str:
    """A trigger check's counts (:func:`sim.calibration.where_compacts.figures`) in words."""
    return (
        f"within one request of {f['within_one']} of {f['automatic']} automatic compactions, {f['earlier']} earlier, "
        f"{f['later']} later; compacts in {f['unrecorded']} segment(s) the {sessions} did not compact in"
    )


def _policy_turn(policy: str, k: dict[str, Any]) -> str:
    """Where ``policy`` compacted in the segment compaction ``k`` ends, said against the recorded turn."""
    at, off = k.get("policy_after_turn"), k.get("policy_offset")
    if at is None or off is None:
        return f"{policy} does not compact by the request after it"
    when = "the same request" if off == 0 else f"{off:+d} request{'' if abs(off) == 1 else 's'}"
    return f"{policy} compacts after turn {at} ({when})"


def _predicted(
    conv: Conversation, model: RetentionModel, count: Callable[[str], int]
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Per kind over ``conv``'s recorded summaries: the probes, how many ``model`` predicts kept, and its share;
    and a line per recorded compaction, observed beside predicted."""
    from sim.calibration import retention_fit

    out: dict[str, dict[str, float]] = {}
    lines = []
    for rec in retention_fit.recorded_summaries([conv], count):
        parts = []
        for kind in sorted({r.kind for r in rec.rows}):
            rows = rec.of(kind)
            share = retention_fit.predict(model, rec, kind) or 0.0
            kept = sum(r.kept for r in rows)
            d = out.setdefault(kind, {"probes": 0, "kept": 0, "predicted_kept": 0.0})
            d["probes"] += len(rows)
            d["kept"] += kept
            d["predicted_kept"] += share * len(rows)
            parts.append(f"{kind} {kept / len(rows):.1%} vs {share:.1%} ({len(rows)})")
        head = f"\n    summary {rec.summary[:12]} ({rec.tokens:,} tokens): observed vs predicted "
        lines.append(head + ", ".join(parts))
    for d in out.values():
        d["predicted_kept"] = round(d["predicted_kept"], 3)
        d["predicted_share"] = round(d["predicted_kept"] / d["probes"], 4)
        d["kept_share"] = round(d["kept"] / d["probes"], 4)
    return dict(sorted(out.items())), lines


def _source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        help="format of a path (csim list formats; default auto); a dataset uses its manifest's formats. In a "
        "folder, files that are not recordings of it are skipped and listed",
    )
    p.add_argument("--cache", metavar="DIR", help="dataset cache (default $CSIM_CACHE or ~/.cache/csim/datasets)")
    p.add_argument("--lenient", action="store_true", help="skip malformed records")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "calibrate",
        help="fit provider tokens per engine token (by content kind), per message, and the hidden overhead",
        description="Fit, per provider/format/agent, the map from the engine's prompt count to the provider's "
        "recorded prompt tokens (input + cache read + cache write), with weighted least squares on "
        "relative error. Where conversations hold several requests, the ratios (one per content kind: prose, "
        "code, JSON, where that predicts better) are fitted on what each request added since the first of its "
        "segment, so no session's hidden overhead enters them; the fixed overhead and what comes back after a "
        "compaction are what the first requests leave over. Prints n fit, n held out, and the held-out median "
        "and p90 relative error of the estimated text (each request predicted from its segment's first), of "
        "one ratio for all kinds, of a chars baseline, and of whole prompts. --out saves the fit for csim run "
        "--calibration.",
    )
    p.add_argument("source", metavar="DATASET", help="a fetched dataset name, or a path to recordings (with --format)")
    p.add_argument("--tokenizer", default="cl100k_base", help="tokenizer of the engine (default cl100k_base)")
    p.add_argument(
        "--split",
        choices=("conversation", "alternate"),
        default="conversation",
        help="held-out split: leave one conversation out (default) or alternate requests",
    )
    p.add_argument("--group", help="keep only this group, e.g. anthropic/claude-code/main")
    p.add_argument(
        "--retention",
        action="store_true",
        help="fit the mock summariser's retention model instead: per fact kind, what the recorded summaries kept "
        "of the probes of their spans (a kind with fewer than 20 takes its published figure), held out by "
        "session; --out writes it for -R retention=FILE",
    )
    p.add_argument("--out", metavar="FILE", help="write the calibrations (or, with --retention, the model) as JSON")
    _source_args(p)
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser(
        "fidelity",
        help="replay recorded sessions calibrated; simulated vs recorded prompt tokens",
        description="Replay each recorded session under the none policy with a calibration and compare, at every "
        "recorded request, simulated context tokens with recorded prompt tokens, and at each recorded "
        "compaction the simulated tokens just before it with its preTokens. Where the recording carries cache "
        "usage, also simulated against recorded cache reads and writes (the prompt cache on the recorded "
        "timestamps, each request priced as the recorded model), misses, and the session's cost. With --policy "
        "(claude-code by default for Claude Code recordings), also where that policy's trigger fires against each "
        "recorded compaction.",
    )
    p.add_argument("path", metavar="PATH", help="a recording (file or folder, with --format) or a fetched dataset")
    p.add_argument("--calibration", required=True, metavar="FILE", help="written by csim calibrate --out")
    p.add_argument(
        "--across-compactions",
        choices=("continue", "stop"),
        default="continue",
        help="continue from each recorded summary (default) or stop at the first compaction",
    )
    p.add_argument(
        "--accounting",
        choices=("anchored", "calibrated"),
        default="anchored",
        help="anchored (default): recorded messages at the sizes the recorded usage gives them, the rest estimated "
        "with the calibration; calibrated: every request estimated with the calibration",
    )
    p.add_argument("--all-agents", action="store_true", help="also replay subagent and compaction transcripts")
    p.add_argument(
        "--retention",
        metavar="FILE",
        help="a retention model (csim calibrate --retention --out FILE, or 'bundled' for the one csim ships): "
        "print, per recorded compaction, the share of its span's probes it kept beside the model's prediction, and "
        "write both to summary.json (retention.observed, retention.predicted)",
    )
    p.add_argument(
        "--policy",
        metavar="NAME",
        help="also replay each segment under this policy on --window and report, per recorded compaction, the "
        "request where the policy compacts against the recorded one (within one request, earlier, later). "
        "Default: claude-code for Claude Code recordings (formats claude-code and kv-trace), else none; 'none' "
        "turns it off",
    )
    p.add_argument("-P", "--param", action="append", metavar="NAME=VALUE", help="--policy's parameter, repeatable")
    p.add_argument(
        "--window", type=int, default=200_000, help="context window for --policy, in tokens (default 200000)"
    )
    p.add_argument("--out", metavar="DIR", help="write DIR/<session>/fidelity.csv, compactions.csv, DIR/summary.json")
    _source_args(p)
    p.set_defaults(func=cmd_fidelity)
