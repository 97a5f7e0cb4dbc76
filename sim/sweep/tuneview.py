"""``csim tune``'s printed answer: per window, each policy's best feasible settings beside its default, the held-out
check with the gap, the settings in the real system's terms, the overall answer, the frontier and, with several
windows, the threshold advisor. Text in, text out: the same ``tune.json`` always prints the same bytes, and no
line is wider than 120 characters."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from sim.sweep.space import format_number
from sim.sweep.tunestats import Constraint, column_of

WIDTH = 120


def _num(v: Any, col: str) -> str:
    if v is None:
        return "n/a"
    if col.endswith("_usd"):
        return f"${v:,.4f}"
    if isinstance(v, float) and abs(v) < 10:
        return f"{v:.3f}"
    return f"{v:,.0f}" if isinstance(v, (int, float)) else str(v)


def _pct(new: float | None, old: float | None) -> str:
    if new is None or old is None or old == 0:
        return ""
    pct = (new - old) / abs(old) * 100
    # One decimal, or as many as show that a change is not nil (a saving of one cent in $49 reads -0.03%, not -0.0%).
    digits = 1 if abs(pct) >= 0.05 or new == old else 2 if abs(pct) >= 0.005 else 3
    return f"{pct:+.{digits}f}%"


def _params(p: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items()) or "(default)"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _wrap(text: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False)


def render(result: Mapping[str, Any]) -> str:
    """The answer ``csim tune`` prints (and writes as ``OUT/answer.txt``)."""
    spec = result["spec"]
    col = column_of(spec["objective"])
    better = "lower" if spec["direction"] == "minimize" else "higher"
    cons = [Constraint.parse(c) for c in spec["constraints"]]
    out = [
        f"csim tune: {len(spec['policies'])} policies; objective {spec['objective']} (mean {col} per conversation, "
        f"{better} is better)",
    ]
    if cons:
        said = "; ".join(f"{c.text} on the {'lower' if c.bound == 'lo' else 'upper'} bound" for c in cons)
        out += _wrap(f"constraints, on 95% paired bootstrap intervals over conversations: {said}", "")
    for w in result["windows"]:
        out.append("")
        where = f"window {w['window']:,} tokens: " if w["window"] else ""
        out += _wrap(
            f"{where}{len(w['tuning'])} conversations tune, {len(w['held_out'])} held out (by session, seed "
            f"{spec['seed']}): {', '.join(w['held_out']) or 'none'}",
            "",
        )
        rows = [["policy", "search", "default", "best found [95% interval]", "change"]]
        for s in w["policies"]:
            d = s["default"]["stats"][col]["mean"]
            n = f"{len(s['trials'])} trials, {s['sampler'].split(' (')[0]}"
            if s["improves"]:
                b = s["best"]["objective"]
                shown = f"{_num(b['mean'], col)} [{_num(b['lo'], col)}, {_num(b['hi'], col)}]"
                rows.append([s["policy"], n, _num(d, col), shown, _pct(b["mean"], d)])
            else:
                why = "none feasible" if s["best"] is None else "nothing cheaper"
                rows.append([s["policy"], n, _num(d, col), f"= default ({why})", ""])
        out += _table(rows)
        for s in w["policies"]:
            out += _policy_lines(s, col)
        ov = w["overall"]
        if ov:
            out += _wrap(
                f"overall (cheapest on the tuning set, each policy against its own default): {ov['policy']} "
                f"{_params(ov['params'])} at {_num(ov['objective']['mean'], col)}",
                "",
            )
        if w["front"] and cons:
            c = cons[0]
            out.append(
                f"frontier ({spec['objective']} against {c.column}'s {'lower' if c.bound == 'lo' else 'upper'} "
                "bound, tuning set, trials meeting the other constraints):"
            )
            fr = [["  policy", "settings", spec["objective"], f"{c.column} {'lo' if c.bound == 'lo' else 'hi'}"]]
            for t in w["front"][:12]:
                bound = t["constraints"][c.text]["bound"]
                fr.append(
                    ["  " + t["policy"], _params(t["params"]), _num(t["objective"]["mean"], col), _num(bound, "")]
                )
            out += _table(fr)
            if len(w["front"]) > 12:
                out.append(f"  ... {len(w['front']) - 12} more in tune.json")
    if len(result["windows"]) > 1:
        out += ["", *advisor(result)]
    return "\n".join(line[:WIDTH] for line in out)


def verdict(s: Mapping[str, Any]) -> str:
    """``cheaper and kept``, ``cheaper, constraints missed``, ``not cheaper`` on the held-out set, or why not judged."""
    h = s.get("holdout")
    if not s["improves"]:
        return "default kept"
    if h is None:
        return "not checked (nothing held out)"
    cheaper = h["difference"]["mean"] < 0
    return ("cheaper" if cheaper else "not cheaper") + (
        ", constraints met" if h["feasible"] else ", constraints missed"
    )


def _policy_lines(s: Mapping[str, Any], col: str) -> list[str]:
    if not s["improves"]:
        return []
    lines = _wrap(f"{s['policy']}: {_params(s['recommend'])}", "  ")
    if s["native"]:
        lines += _wrap(f"in its own terms: {'; '.join(s['native'])}", "    ")
    h = s["holdout"]
    if h is None:
        return lines + _wrap("no held-out conversation (give more seeds or sessions): not checked", "    ")
    d, b, diff = h["default"][col], h["best"][col], h["difference"]
    tuned = _pct(s["best"]["objective"]["mean"], s["default"]["stats"][col]["mean"])
    held = _pct(b["mean"], d["mean"])
    kept = "; ".join(
        f"{t}: {_num(v['bound'], '')} vs {_num(v['limit'], '')} {'met' if v['violation'] <= 0 else 'MISSED'}"
        for t, v in h["constraints"].items()
    )
    return lines + _wrap(
        f"held out ({h['units']} conversation{'' if h['units'] == 1 else 's'}): "
        f"{_num(d['mean'], col)} -> {_num(b['mean'], col)} ({held}; paired "
        f"difference {_num(diff['mean'], col)} [{_num(diff['lo'], col)}, {_num(diff['hi'], col)}]); gap to the tuning "
        f"set's {tuned}: {_gap(tuned, held)}; {kept}. Held out: {verdict(s)}",
        "    ",
    )


def _gap(tuned: str, held: str) -> str:
    try:
        return f"{float(held.rstrip('%')) - float(tuned.rstrip('%')):+.1f} points"
    except ValueError:
        return "n/a"


def advisor(result: Mapping[str, Any]) -> list[str]:
    """The threshold advisor: per window and policy, the recommended trigger and the trigger values the data
    cannot tell from it (feasible trials whose objective lies inside the best one's 95% interval)."""
    col = column_of(result["spec"]["objective"])
    rows = [["window", "policy", "trigger", "recommended", "interval (as good)", result["spec"]["objective"], "change"]]
    for w in result["windows"]:
        for s in w["policies"]:
            field = s["trigger"]
            d = s["default"]["stats"][col]["mean"]
            near = s["near_best"].get(field) or []
            if s["improves"]:
                rec = s["recommend"][field]
                cost, change = _num(s["best"]["objective"]["mean"], col), _pct(s["best"]["objective"]["mean"], d)
            else:  # the default stands; the interval: the tried values as good as it
                rec, cost, change = f"{s['defaults'][field]} (default)", _num(d, col), ""
            span = f"{near[0]} .. {near[-1]}" if len(near) > 1 else (near[0] if near else "")
            rows.append([f"{w['window']:,}" if w["window"] else "run's", s["policy"], field, rec, span, cost, change])
    head = (
        "threshold advisor: per context window, the trigger of the best feasible settings (ties: the later trigger; "
        "the default when nothing feasible beats it) and the trigger values tried whose cost lies inside its 95% "
        "interval:"
    )
    return [*_wrap(head, ""), *_table(rows)]


__all__ = ["advisor", "format_number", "render", "verdict"]
