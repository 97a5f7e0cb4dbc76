"""``csim preview SESSION --policy X [-P name=value ...] [--at REQUEST] [--json]``: one compaction, shown before it
is committed to (:mod:`sim.replay.preview`): what the policy keeps, summarises, drops and clears, the tokens
before and after, and the facts needed later that it loses, by kind."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sim.cli.options import add_run_options, option_values
from sim.core.errors import FormatError, InvalidConfig

if TYPE_CHECKING:
    from sim.replay.preview import Preview

DESCRIPTION = """\
Replay SESSION (a recording, read as csim run reads it) or --scenario NAME under the policy, exactly as
csim run would, up to its first compaction (or the first at or after agent request --at REQUEST; requests
are numbered from 0, as the requests table's turn), and show that compaction, then stop:

  * what stays in the view, what is summarised or dropped (message index ranges and ids), and which parts
    of kept messages are newly cleared, dropped or truncated;
  * the view's tokens before and after (as the compactions table counts them) and the summary's size;
  * the facts established so far that a later request needs, by kind: how many the view showed before and
    after, and which ones the compaction loses (those the run then reports not visible at their needs).

With --manual, the compaction the policy makes when asked instead: a /compact command is put in the script
where a user could type it (before the first user message at or after request --at), the rest unchanged.

When the replay ends without a compaction, the error says where the context peaked against the window and
the policy's trigger: lower the trigger with -P, give a smaller --window, or --at an earlier request.
With --json, the same as one JSON object (sim.api.compact returns it as a Preview, with the views and the
compacted messages)."""

EPILOG = """examples:
  csim preview --scenario coding-agent --policy cloudflare-os
  csim preview session.jsonl --policy claude-code --window 60000
  csim preview --scenario research-agent --policy sliding-window -P trigger_ratio=0.5 --at 40 --json
  csim preview --scenario coding-agent --policy claude-code --at 20 --manual    # what /compact would do there
"""


def cmd_preview(args: argparse.Namespace) -> int:
    from policies import make_policy
    from sim import api
    from sim.core.params import parse_kv
    from sim.replay.preview import preview

    if (args.session is None) == (args.scenario is None):
        raise InvalidConfig("give exactly one of SESSION (a recording's path) or --scenario NAME")
    options = {k: v for k, v in option_values(args).items() if k != "seed" and v is not None}
    options["summariser"] = parse_kv(options.get("summariser"), "-R")
    if options.get("calibration"):
        options["calibration"] = str(Path(options["calibration"]).expanduser().resolve())
    policy = make_policy(args.policy, parse_kv(args.param))
    try:
        conv, config, note = api.one_conversation(
            scenario=args.scenario,
            scenario_params=parse_kv(args.scenario_param, "-S"),
            path=args.session,
            format=args.format,
            lenient=args.lenient,
            conversation_id=args.id,
            seed=args.seed or 0,
            run_options=options,
        )
    except FormatError as exc:  # as csim run says it: the format that does read the file, when one does
        from sim.cli.main import _format_hint

        hint = _format_hint(exc.path, args.format)
        if hint is None:
            raise
        raise FormatError(exc.path, exc.line, exc.problem, hint) from None
    if note:
        print(f"note: {note}; choose another with --id ID", file=sys.stderr)
    p = preview(policy, conv, config, at=args.at, manual=args.manual)
    if args.json:
        print(json.dumps(p.to_dict(), indent=2, default=str))
    else:
        print("\n".join(render(p, summary=args.summary)))
    return 0


def _spans(p: Preview, spans: Sequence[tuple[int, int]]) -> str:
    """Log ranges as ``a-b (first_id..last_id)``, a single message as ``a (id)``."""
    ids, out = p.message_ids, []
    for a, b in spans:
        last = b - 1
        out.append(f"{a} ({ids[a]})" if last == a else f"{a}-{last} ({ids[a]}..{ids[last]})")
    return ", ".join(out)


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _count(spans: Sequence[tuple[int, int]]) -> int:
    return sum(b - a for a, b in spans)


def render(p: Preview, *, summary: bool = False) -> list[str]:
    """The preview as text, one fact per line where it is lost."""
    settings = ", ".join(f"{k}={v}" for k, v in p.params.items())
    then = f"; then {', '.join(p.then)} before the same request" if p.then else ""
    out = [
        f"{p.policy}" + (f" ({settings})" if settings else "") + f" on {p.conversation}",
        f"compaction {p.compaction_id} before request {p.request} of {p.requests_in_script} "
        f"({p.trigger}, {p.mode}: {p.act}), {p.messages} messages in the log{then}",
    ]
    change = (p.tokens_after - p.tokens_before) / p.tokens_before if p.tokens_before else 0.0
    out.append(f"  tokens      {p.tokens_before:,} -> {p.tokens_after:,} ({change:+.0%})")
    kept = ("system prompt; " if p.system else "") + (
        f"{_n(_count(p.kept), 'message')}: {_spans(p, p.kept)}" if p.kept else "no other message"
    )
    out.append(f"  kept        {kept}")
    if p.removed:
        word = {"summarised": "summarised", "rolled back": "not restored"}.get(p.act, "dropped")
        out.append(f"  {word:<11} {_n(_count(p.removed), 'message')}: {_spans(p, p.removed)}")
    if p.summary is not None:
        out.append(f"  summary     {p.summary_tokens:,} tokens")
    if p.injected:
        out.append(f"  added       {_n(len(p.injected), 'message')} not in the log: {'; '.join(p.injected)}")
    if p.edited:
        groups = Counter((e.action, e.kind, e.tool) for e in p.edited)
        where = sorted({e.index for e in p.edited})
        order = sorted(groups.items(), key=lambda x: (-x[1], x[0][0], x[0][1], x[0][2] or ""))
        what = ", ".join(
            f"{_n(n, kind.replace('_', ' '))}" + (f" ({tool})" if tool else "") + f" {action}"
            for (action, kind, tool), n in order
        )
        span = f"message {where[0]}" if len(where) == 1 else f"{len(where)} kept messages, {where[0]} to {where[-1]}"
        out.append(f"  edited      {what}, in {span}")
    facts = p.facts_by_kind()
    if not facts:
        out.append("  facts       none of the conversation's facts is needed after this point")
    else:
        need = sum(v["needed"] for v in facts.values())
        lost = sum(v["lost"] for v in facts.values())
        out.append(f"  facts       {need} needed later; {lost} lost by this compaction")
        width = max(len(k) for k in facts)
        for kind, v in facts.items():
            ids = p.lost_by_kind().get(kind, ())
            out.append(
                f"    {kind:<{width}}  {v['needed']} needed, visible {v['before']} before, {v['after']} after"
                + (f"; lost: {', '.join(ids)}" if ids else "")
            )
        for f in p.lost:
            out.append(f"    lost {f.id} ({f.kind}): from {f.source}, next needed at {f.needed_at}")
    out.append(f"  context     {len(p.context)} messages sent after it")
    if summary and p.summary is not None:
        out += ["", "summary:", p.summary]
    return out


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "preview",
        help="show what a policy keeps, summarises, clears and loses at its next compaction",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    p.add_argument("session", nargs="?", metavar="SESSION", help="a recording (file or folder), read as csim run does")
    p.add_argument("--policy", required=True, help="registered name (csim list policies) or package.module:Class")
    p.add_argument("-P", "--param", action="append", metavar="NAME=VALUE", help="policy parameter, repeatable")
    p.add_argument(
        "--at",
        type=int,
        metavar="REQUEST",
        help="the first compaction at or after this agent request (from 0, the requests table's turn); "
        "default: the first compaction",
    )
    p.add_argument(
        "--manual",
        action="store_true",
        help="instead, the policy's manual compaction, as if the user typed /compact at the first turn boundary "
        "at or after --at REQUEST",
    )
    src = p.add_argument_group("conversation (SESSION or --scenario)")
    src.add_argument("--scenario", help="bundled synthetic scenario instead of SESSION (csim list scenarios)")
    src.add_argument("-S", "--scenario-param", action="append", metavar="NAME=VALUE", help="scenario parameter")
    src.add_argument("--format", default="auto", help="SESSION's format (csim list formats; default auto)")
    src.add_argument("--lenient", action="store_true", help="skip malformed records and report each one")
    src.add_argument("--id", help="which conversation, when SESSION holds several (default: the first)")
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the preview as one JSON object")
    out.add_argument("--summary", action="store_true", help="print the summary's text too")
    add_run_options(p, calibration=True)
    p.set_defaults(func=cmd_preview)
