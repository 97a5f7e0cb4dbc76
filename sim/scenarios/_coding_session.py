"""The ``coding-agent`` session's state and its episode work: a user request, exploring, testing, editing,
reporting, and the closing answer.

The events laid over that work (corrections, reverts, approvals, ``/compact``) are in
:mod:`sim.scenarios._coding_interruptions`, which extends :class:`Session`; the scenario's docstring, in
:mod:`sim.scenarios.coding_agent`, says where each fact is established and needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.core.conversation import Part
from sim.scenarios._coding_wording import (
    CONSTRAINTS,
    CONTINUATIONS,
    DECISIONS,
    ERRORS,
    NOUNS,
    PACKAGES,
    REPOS,
    REQUESTS,
    STEMS,
    VERBS,
)
from sim.scenarios._common import (
    Rng,
    ScenarioBuilder,
    call,
    chance,
    embed,
    filler,
    lognormal_int,
    pick,
    result_tokens,
    text,
    thinking,
)


@dataclass
class Episode:
    """The work on one user request: its target file, its test, what the steps have established."""

    pkg: str
    func: str
    path: str
    test: str
    steps: list[str]
    path_fact: int | None = None
    error_fact: int | None = None
    decision_fact: int | None = None
    read_facts: list[int] = field(default_factory=list)
    failing: bool = True
    edited: bool = False
    changes: list[str] = field(default_factory=list)


class Session:
    """One generated session: the builder plus the running state the episodes share."""

    def __init__(self, rng: Rng, p: dict[str, Any]) -> None:
        self.rng = rng
        self.p = p
        self.b = ScenarioBuilder(rng)
        self.turn = 0
        self.repo = pick(rng, REPOS)
        self.constraints: list[int] = []
        self.constraint_pool = list(range(len(CONSTRAINTS)))
        self.decisions: list[int] = []
        self.open_continuations: list[tuple[int, str]] = []  # (fact, path it points at)
        self.changes: list[tuple[str, str]] = []  # live (change id, path)
        self.pending: str | None = None
        self.pending_wait = 0
        self.pending_path = ""
        self.denied: set[str] = set()
        self.approved_edit: str | None = None
        self.ep: Episode | None = None
        self.compacted = False

    # -- small makers -------------------------------------------------------------------------------
    def func(self) -> str:
        return f"{pick(self.rng, VERBS)}_{pick(self.rng, NOUNS)}"

    def new_path(self, pkg: str) -> str:
        return f"src/{pkg}/{pick(self.rng, STEMS)}_{self.b.tag()}.py"

    def assistant(self, *parts: Part, pending: bool = False) -> str:
        self.turn += 1
        return self.b.add("assistant", *parts, pending=pending)

    def maybe_thinking(self, about: str) -> list[Part]:
        if not chance(self.rng, self.p["thinking_prob"]):
            return []
        n = lognormal_int(self.rng, 120, 0.8, 20, 1500)
        return [thinking(f"{about}\n{filler(self.rng, 'prose', n)}")]

    def result_size(self, median: float) -> int:
        n, _ = result_tokens(self.rng, median, 1.0, self.p["huge_prob"], self.p["huge_tokens"], lo=30)
        return n

    def constraint_text(self, pkg: str) -> str | None:
        if not self.constraint_pool:
            return None
        k = self.constraint_pool.pop(self.rng.randint(len(self.constraint_pool)))
        return CONSTRAINTS[k].format(func=self.func(), helper=f"{pick(self.rng, VERBS)}_helper", pkg=pkg)

    def need_all(self, handles: list[int]) -> None:
        for h in handles:
            self.b.need(h)

    # -- episodes -----------------------------------------------------------------------------------
    def start_episode(self, first: bool) -> None:
        """A user request, possibly carrying a constraint, possibly resuming a "next:" note."""
        rng, b = self.rng, self.b
        pkg = pick(rng, PACKAGES)
        resumed: tuple[int, str] | None = None
        just_proposed = (
            b.last_role == "assistant"
            and bool(self.open_continuations)
            and self.open_continuations[-1][0] in b.facts_from(b.last_id)
        )
        if not first and self.open_continuations and chance(rng, 0.5):
            # the note just proposed, or else the oldest one still open
            resumed = self.open_continuations.pop(-1 if just_proposed else 0)
        path = resumed[1] if resumed and resumed[1] else self.new_path(pkg)
        if resumed and resumed[1]:
            pkg = path.split("/")[1]
        steps = ["explore"] * rng.randint(2, self.p["explore_max"]) + ["test"] + ["edit"] * rng.randint(1, 4) + ["test"]
        if chance(rng, 0.4):
            steps += ["edit", "test"]
        steps.append("wrap")
        self.ep = Episode(pkg, self.func(), path, f"tests/{pkg}/test_{path.rsplit('/', 1)[1]}", steps)
        if first:
            request = pick(rng, REQUESTS).format(pkg=pkg)
            constraint = self.constraint_text(pkg) or ""
            body = (
                f"We're working in the {self.repo} repository. {request}\n\n"
                f"Ground rules for this session: {constraint}. Run the tests before you tell me it's done."
            )
        elif resumed:
            body = (
                "Looks good. Go ahead with the next step you proposed."
                if just_proposed
                else "Good. Now let's get back to the follow-up you suggested earlier."
            )
            constraint = ""
        else:
            request = pick(rng, REQUESTS).format(pkg=pkg)
            constraint = (self.constraint_text(pkg) or "") if chance(rng, 0.4) else ""
            body = f"Thanks. New task: {request}" + (f" Also, {constraint}." if constraint else "")
        mid = b.add("user", text(body))
        if constraint:
            self.constraints.append(b.fact("constraint", constraint, mid))
        if resumed:
            b.need(resumed[0])
        if resumed and resumed[1]:
            # the note named the file: it is already known, so the first step can read it
            self.ep.path_fact = resumed[0]

    def step(self) -> None:
        """One assistant turn of the current episode (plus its results)."""
        ep = self.ep
        assert ep is not None
        kind = ep.steps.pop(0) if ep.steps else "wrap"
        if kind == "explore":
            self.explore(ep)
        elif kind == "test":
            self.run_tests(ep)
        elif kind == "edit":
            self.edit(ep)
        else:
            self.wrap(ep)

    def explore(self, ep: Episode) -> None:
        rng, b = self.rng, self.b
        if ep.path_fact is None:
            # first look: grep for the function, which reveals the target file
            cid = b.call_id()
            c = call(cid, "grep", {"pattern": f"def {ep.func}", "path": "src/"})
            self.assistant(
                *self.maybe_thinking(f"Start by finding where {ep.func} lives."),
                text(f"Let me find where `{ep.func}` is defined."),
                c,
            )
            body = filler(rng, "grep", self.result_size(400))
            body = embed(rng, body, f"{ep.path}:{rng.randint(20, 600)}:def {ep.func}(tenant_id, period):")
            (rid,) = b.add_results([c], [body])
            ep.path_fact = b.fact("artifact", ep.path, rid)
            return
        if chance(rng, self.p["parallel_prob"]):
            self.parallel_explore(ep)
            return
        cid = b.call_id()
        which = rng.randint(3)
        if which == 0:
            b.need(ep.path_fact)
            c = call(cid, "read_file", {"path": ep.path})
            self.assistant(
                *self.maybe_thinking(f"Read {ep.path} to see the code path."),
                text("Reading the file to follow the code path."),
                c,
            )
            body, line = self.read_body(ep.path)
            (rid,) = b.add_results([c], [body])
            if line:
                ep.read_facts.append(b.fact("recall", line, rid))
        elif which == 1:
            folder = f"src/{ep.pkg}/"
            c = call(cid, "list_dir", {"path": folder, "depth": 2})
            self.assistant(
                *self.maybe_thinking("What else is in this package?"),
                text(f"Listing {folder} to see what else is there."),
                c,
            )
            other = self.new_path(ep.pkg)
            body = embed(rng, filler(rng, "listing", self.result_size(250)), f"-rw-r--r--    4211  {other}")
            (rid,) = b.add_results([c], [body])
            if chance(rng, 0.5):
                ep.read_facts.append(b.fact("artifact", other, rid))
        else:
            c = call(cid, "grep", {"pattern": f"{ep.func}\\(", "path": "."})
            self.assistant(*self.maybe_thinking("Who calls this?"), text(f"Looking for callers of `{ep.func}`."), c)
            b.add_results([c], [filler(rng, "grep", self.result_size(450))])

    def read_body(self, path: str) -> tuple[str, str]:
        """A file's text, and the line worth remembering in it (a limit the fix must respect), if any."""
        rng, b = self.rng, self.b
        body = f"# {path}\n" + filler(rng, "code", self.result_size(900))
        if not chance(rng, 0.6):
            return body, ""
        line = f"{pick(rng, NOUNS).upper()}_LIMIT = {b.number(10, 5000)}"
        return embed(rng, body, line), line

    def parallel_explore(self, ep: Episode) -> None:
        """2-4 independent reads and searches in one message, one tool message per result."""
        rng, b = self.rng, self.b
        k = rng.randint(2, 5)
        calls: list[Part] = []
        bodies: list[str] = []
        for i in range(k):
            cid = b.call_id()
            if i == 0 and ep.path_fact is not None:
                b.need(ep.path_fact)
                calls.append(call(cid, "read_file", {"path": ep.path}))
                bodies.append(f"# {ep.path}\n" + filler(rng, "code", self.result_size(900)))
            elif chance(rng, 0.5):
                other = self.new_path(ep.pkg)
                calls.append(call(cid, "read_file", {"path": other}))
                bodies.append(f"# {other}\n" + filler(rng, "code", self.result_size(900)))
            else:
                calls.append(call(cid, "grep", {"pattern": pick(rng, NOUNS), "path": f"src/{ep.pkg}/"}))
                bodies.append(filler(rng, "grep", self.result_size(400)))
        self.assistant(
            *self.maybe_thinking("These lookups are independent; batch them."),
            text("Reading a few related files at once."),
            *calls,
        )
        b.add_results(calls, bodies)

    def run_tests(self, ep: Episode) -> None:
        rng, b = self.rng, self.b
        cid = b.call_id()
        c = call(cid, "run_tests", {"target": ep.test, "args": "-q"})
        self.assistant(
            *self.maybe_thinking("Reproduce before changing anything, or confirm the fix."),
            text(f"Running {ep.test}."),
            c,
        )
        body = filler(rng, "log", self.result_size(700))
        passed = rng.randint(40, 400)
        if not ep.edited or (ep.failing and chance(rng, 0.3)):
            err = pick(rng, ERRORS).format(n=b.number(1000, 9999), pkg=ep.pkg, tag=b.tag())
            body = embed(rng, body, f"FAILED {ep.test}::test_{ep.func} - {err}")
            body += f"\n=== 1 failed, {passed} passed in {rng.uniform(2, 60):.1f}s ==="
            (rid,) = b.add_results([c], [(body, True)])  # exit status 1: an error result, as agents report one
            ep.error_fact = b.fact("recall", err, rid)
            ep.failing = True
            if ep.steps and ep.steps[0] == "wrap":
                ep.steps[:0] = ["edit", "test"]  # still red: one more round before reporting
        else:
            body += f"\n=== {passed + 1} passed in {rng.uniform(2, 60):.1f}s ==="
            b.add_results([c], [body])
            ep.failing = False

    def edit(self, ep: Episode) -> None:
        rng, b = self.rng, self.b
        parts: list[Part] = list(self.maybe_thinking("Plan the edit."))
        # the edit relies on where the file is, what broke, what was read, and the rules
        if ep.path_fact is not None:
            b.need(ep.path_fact)
        if ep.error_fact is not None:
            b.need(ep.error_fact)
        for h in ep.read_facts:
            b.need(h)
        if self.constraints and chance(rng, 0.5):
            b.need(int(pick(rng, self.constraints)))
        if ep.decision_fact is None:
            decision = pick(rng, DECISIONS).format(func=ep.func, path=ep.path)
            parts.append(text(f"{decision}. That keeps the change small and easy to review."))
        else:
            b.need(ep.decision_fact)
            decision = ""
            parts.append(text(f"Continuing with the fix in {ep.path}."))
        chg = b.change_id()
        parts.append(Part("change", f"edit {ep.path}: {ep.func}", ref=chg))
        cid = b.call_id()
        c = call(
            cid,
            "edit_file",
            {
                "path": ep.path,
                "old_string": filler(rng, "code", lognormal_int(rng, 60, 0.7, 5, 600)),
                "new_string": filler(rng, "code", lognormal_int(rng, 90, 0.7, 5, 900)),
            },
        )
        parts.append(c)
        mid = self.assistant(*parts)
        if decision:
            h = b.fact("decision", decision, mid)
            ep.decision_fact = h
            self.decisions.append(h)
        hunks = rng.randint(1, 4)
        b.add_results(
            [c], [(f"Applied {chg} to {ep.path}: {hunks} hunk(s), +{rng.randint(1, 40)} -{rng.randint(0, 20)} lines.")]
        )
        self.changes.append((chg, ep.path))
        ep.changes.append(chg)
        ep.edited = True

    def wrap(self, ep: Episode) -> None:
        """The report at the end of an episode; often names what should come next."""
        rng, b = self.rng, self.b
        status = "The tests pass." if not ep.failing else "One test still fails; I stopped to check with you."
        body = f"Done with this part: the fix is in {ep.path}. {status}"
        note = ""
        target = ""
        if chance(rng, 0.7) or not b.facts_of("continuation"):  # the first report always proposes one
            target = self.new_path(pick(rng, PACKAGES))
            note = pick(rng, CONTINUATIONS).format(path=target, pkg=ep.pkg, func=ep.func)
            if target not in note:
                target = ""
            body += f" Remaining work, {note}."
        mid = self.assistant(text(body))
        if note:
            self.open_continuations.append((b.fact("continuation", note, mid), target))
        self.ep = None

    def final(self) -> None:
        """The closing answer: what changed, what rules were kept, what is left."""
        b = self.b
        self.need_all(self.constraints)
        self.need_all(self.decisions)
        self.need_all([h for h, _ in self.open_continuations])
        live = ", ".join(f"{c} ({p})" for c, p in self.changes[-6:]) or "none"
        left = "; ".join(b.fact_text(h) for h, _ in self.open_continuations) or "nothing"
        self.assistant(
            text(
                f"Summary of the session. Changes in place: {live}. I followed the rules you set "
                f"and ran the tests after each fix. Still open: {left}."
            )
        )
