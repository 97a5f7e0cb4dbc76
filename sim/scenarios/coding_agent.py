"""``coding-agent``: a coding agent's tool loop on a repository, the case compaction was invented for.

One module because it is one script: the episode's phases, their wording and their facts belong together.

The session is a run of *episodes*. Each starts with a user request and goes the way such work goes:
look around (grep, list a folder, read files, sometimes several at once), reproduce the failure with
the tests, decide on a fix, edit (every edit carries a change id), test again, report and propose what
comes next. Over the top of that come the events that break naive compaction: a parallel batch whose
results must stay with their calls, an occasional huge result (a whole log or generated file), thinking
that binds a tool loop into one unit, reverts that need the change they undo, a ``/compact`` from the
user, and now and then an edit that waits for the user's approval (a pending message).

Facts are placed where a real session establishes them and needed where it relies on them: a path
found by grep is needed when the file is read or edited, the test error when the fix is written, the
user's constraints before edits and at the end, a decision when it is carried out, and a "next:" note
when the work it names is picked up, or at the end if it never is. After ``/compact`` the current
episode's facts are needed at once, which is what a summary must carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.core.conversation import Conversation, Part
from sim.scenarios import SCENARIOS
from sim.scenarios._common import (
    Param,
    Rng,
    ScenarioBuilder,
    call,
    chance,
    conversation_id,
    defaults_of,
    embed,
    filler,
    lognormal_int,
    pick,
    result_tokens,
    scenario_rng,
    text,
    thinking,
    tool,
    validated,
)

NAME = "coding-agent"

RANGES = {
    "turns": Param(int, 1, 20000),
    "parallel_prob": Param(float, 0.0, 1.0),
    "huge_prob": Param(float, 0.0, 1.0),
    "huge_tokens": Param(int, 100, 1_000_000),
    "revert_prob": Param(float, 0.0, 1.0),
    "compact_at": Param(float, 0.0, 1.0, also=(-1.0,)),
    "pending_prob": Param(float, 0.0, 1.0),
    "thinking_prob": Param(float, 0.0, 1.0),
    "explore_max": Param(int, 3, 200),
}

TOOLS = (
    tool(
        "read_file",
        "Read a file of the repository. Long files are returned whole unless a line range is given.",
        {
            "path": {"type": "string", "description": "path relative to the repository root"},
            "offset": {"type": "integer", "description": "first line to return, 1-based"},
            "limit": {"type": "integer", "description": "how many lines to return"},
        },
        ["path"],
    ),
    tool(
        "grep",
        "Search file contents with a regular expression; prints path:line:text for each match.",
        {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "folder to search"},
            "glob": {"type": "string", "description": "only files matching this glob, e.g. *.py"},
        },
        ["pattern"],
    ),
    tool(
        "run_tests",
        "Run the test suite or part of it with pytest and return its output.",
        {
            "target": {"type": "string", "description": "test file, folder or node id"},
            "args": {"type": "string", "description": "extra pytest arguments"},
        },
        ["target"],
    ),
    tool(
        "edit_file",
        "Replace an exact snippet of a file with new text. Edits to protected paths need the "
        "user's approval and are not applied until it is given.",
        {"path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}},
        ["path", "old_string", "new_string"],
    ),
    tool(
        "list_dir",
        "List a folder, with file sizes.",
        {"path": {"type": "string"}, "depth": {"type": "integer", "description": "levels to descend"}},
        ["path"],
    ),
)

REPOS = ("ledgerline", "harbor-sync", "quillstack", "tallyhouse", "parcel-api", "meridian-jobs", "fernwood-crm")
PACKAGES = ("billing", "export", "tenants", "reports", "auth", "jobs", "storage", "notify", "ledger", "search")
STEMS = (
    "invoice",
    "serializer",
    "handlers",
    "models",
    "client",
    "tasks",
    "schema",
    "views",
    "rounding",
    "currency",
    "writer",
    "retry",
    "scheduler",
    "mapper",
)
VERBS = ("export", "compute", "load", "render", "sync", "resolve", "apply", "build", "flush", "normalize")
NOUNS = ("rows", "total", "invoice", "batch", "tenant", "ledger", "report", "schedule", "payload", "summary")

REQUESTS = (
    "The nightly {pkg} job crashes for some tenants. Find the cause and fix it, with a regression test.",
    "Totals produced by the {pkg} module are off by a cent for some currencies. Please track it down.",
    "Make the {pkg} worker retry transient storage errors instead of failing the whole batch.",
    "The {pkg} tests are flaky on CI, maybe one run in ten. Figure out why and make them deterministic.",
    "Add a dry-run option to the {pkg} sync so we can see what it would change without writing anything.",
    "Customers report that the {pkg} report is empty when the date range crosses a month boundary. Fix it.",
)
CONSTRAINTS = (
    "never touch the migrations folder",
    "do not add any new dependencies",
    "don't modify anything under vendor/",
    "keep the public signature of `{func}` unchanged",
    "use the existing `{helper}` helper instead of writing a new one",
    "keep all new tests under tests/{pkg}/",
    "amounts must stay Decimal end to end, never float",
)
DECISIONS = (
    "I'll fix this in `{func}` by falling back to the tenant's default settings instead of raising",
    "I'll handle the missing value at the boundary in {path}, not deep inside the serializer",
    "I'll switch `{func}` to Decimal with ROUND_HALF_EVEN rather than patching each call site",
    "I'll wrap `{func}` in a bounded retry (3 attempts, exponential backoff) instead of raising the timeout",
    "I'll inject a fixed clock into `{func}` rather than adding sleeps to the tests",
    "I'll compute the month boundaries in UTC inside `{func}` and leave the callers alone",
)
CONTINUATIONS = (
    "next: update the CSV exporter in {path} to use the same fix",
    "next: add a regression test for the {pkg} retry path",
    "next: remove the deprecated `{func}` shim once its callers are migrated",
    "next: run the slow integration suite under tests/integration/{pkg} before merging",
    "next: document the new behaviour of `{func}` in docs/{pkg}.md",
)
ERRORS = (
    "KeyError: 'tenant_{n}'",
    "AssertionError: assert Decimal('{n}.37') == Decimal('{n}.38')",
    "TimeoutError: {pkg} batch {n} exceeded 30.0s",
    "AttributeError: 'NoneType' object has no attribute 'settings_{tag}'",
    "ValueError: period end {n} is before period start",
)
CORRECTIONS = (
    "Wait, before you go further: {constraint}.",
    "One more thing for this task: {constraint}. Other services depend on it.",
    "Please note: {constraint}.",
)
PROTECTED = (
    "config/production.toml",
    "deploy/secrets.enc.yaml",
    "infra/terraform/main.tf",
    ".github/workflows/release.yml",
)


@dataclass
class _Episode:
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


class _Session:
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
        self.ep: _Episode | None = None
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
        self.ep = _Episode(pkg, self.func(), path, f"tests/{pkg}/test_{path.rsplit('/', 1)[1]}", steps)
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

    def explore(self, ep: _Episode) -> None:
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

    def parallel_explore(self, ep: _Episode) -> None:
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

    def run_tests(self, ep: _Episode) -> None:
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

    def edit(self, ep: _Episode) -> None:
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

    def wrap(self, ep: _Episode) -> None:
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

    # -- interruptions ------------------------------------------------------------------------------
    def maybe_correction(self) -> None:
        """A user message mid-loop adding a constraint (queued while the agent worked)."""
        ep = self.ep
        if ep is None or self.b.last_role != "tool" or not chance(self.rng, 0.05):
            return
        c = self.constraint_text(ep.pkg)
        if not c:
            return
        mid = self.b.add("user", text(pick(self.rng, CORRECTIONS).format(constraint=c)))
        self.constraints.append(self.b.fact("constraint", c, mid))

    def maybe_revert(self) -> bool:
        """Undo an earlier change, asked for by the user or decided by the agent; True if a turn was used."""
        rng, b = self.rng, self.b
        ep = self.ep
        if not self.changes or ep is None or not chance(rng, self.p["revert_prob"]):
            return False
        # the user may take back any live change; the agent only its own in this episode, after a red run
        by_user = b.last_role == "tool" and chance(rng, 0.5)
        live = [i for i, (c, _) in enumerate(self.changes) if by_user or (ep.failing and c in ep.changes)]
        if not live:
            return False
        chg, path = self.changes.pop(live[rng.randint(len(live))])
        cid = b.call_id()
        c = call(
            cid,
            "edit_file",
            {"path": path, "old_string": filler(rng, "code", 40), "new_string": filler(rng, "code", 30)},
        )
        if by_user:
            b.add(
                "user",
                text(f"Please revert {chg} (the change to {path}); it broke the staging deploy."),
                Part("revert", f"revert {chg}", ref=chg),
            )
            self.assistant(text(f"Reverting {chg} as you asked."), c)
        else:
            self.assistant(
                *self.maybe_thinking(f"{chg} was the wrong approach."),
                text(f"Reverting {chg}: it made things worse, so I'm restoring {path} first."),
                Part("revert", f"revert {chg}", ref=chg),
                c,
            )
        b.add_results([c], [f"Restored {path} to its state before {chg}."])
        return True

    def maybe_request_approval(self) -> bool:
        """An edit to a protected path: the call only asks for approval; the turn waits on the user."""
        rng, b = self.rng, self.b
        ep = self.ep
        if self.pending or ep is None or not chance(rng, self.p["pending_prob"]):
            return False
        if ep.error_fact is None and not ep.edited:
            return False  # too early: nothing found yet that would need the protected file
        allowed = [x for x in PROTECTED if x not in self.denied]
        if not allowed:
            return False
        path = pick(rng, allowed)
        cid = b.call_id()
        c = call(
            cid,
            "edit_file",
            {"path": path, "old_string": filler(rng, "code", 20), "new_string": filler(rng, "code", 25)},
        )
        mid = self.assistant(
            text(
                f"The fix also needs a setting in {path}, which is protected, so I'm "
                "asking for approval before touching it."
            ),
            c,
            pending=True,
        )
        b.add_results(
            [c], [(f"approval requested: editing {path} needs the user's confirmation; nothing was changed.")]
        )
        self.pending, self.pending_path = mid, path
        self.pending_wait = rng.randint(0, 3)
        return True

    def maybe_resolve_approval(self) -> None:
        """The user's answer, after the agent did up to two more turns of other work (never across the
        end of the episode: the report waits for it)."""
        rng, b = self.rng, self.b
        if not self.pending:
            return
        if self.pending_wait > 0 and self.ep is not None and self.ep.steps[:1] != ["wrap"]:
            self.pending_wait -= 1
            return
        if chance(rng, 0.7):
            b.add("user", text(f"Approved, go ahead with the change to {self.pending_path}."), resolves=(self.pending,))
            self.approved_edit = self.pending_path
        else:
            rule = f"never edit {self.pending_path}"
            self.denied.add(self.pending_path)
            mid = b.add("user", text(f"No, {rule}; find another way to pass the setting in."), resolves=(self.pending,))
            self.constraints.append(b.fact("constraint", rule, mid))
        self.pending = None

    def approved(self) -> None:
        """The edit the user allowed, now applied for real."""
        rng, b = self.rng, self.b
        path, self.approved_edit = self.approved_edit or "", None
        chg = b.change_id()
        cid = b.call_id()
        c = call(
            cid,
            "edit_file",
            {"path": path, "old_string": filler(rng, "code", 20), "new_string": filler(rng, "code", 25)},
        )
        self.assistant(
            text(f"Thanks, applying the approved edit to {path}."), Part("change", f"edit {path}", ref=chg), c
        )
        b.add_results([c], [f"Applied {chg} to {path}: 1 hunk(s), +2 -1 lines."])
        self.changes.append((chg, path))

    def compact_command(self) -> None:
        """``/compact`` from the user; what the current work relies on is needed right after it."""
        b = self.b
        b.add("user", Part("command", "", name="compact"))
        self.compacted = True
        self.need_all(self.constraints)
        ep = self.ep
        if ep is not None:
            for h in (ep.path_fact, ep.error_fact if ep.failing else None, ep.decision_fact):
                if h is not None:
                    b.need(h)
        self.need_all([h for h, _ in self.open_continuations])

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


@SCENARIOS.register(
    NAME,
    "a coding agent's tool loop: parallel reads, heavy-tailed and huge results, edits with change ids, "
    "reverts, thinking, a /compact and approvals that pin a turn",
    defaults="turns=60, parallel_prob=0.25, huge_prob=0.03, huge_tokens=40000, revert_prob=0.08, "
    "compact_at=0.5, pending_prob=0.03, thinking_prob=0.3, explore_max=6",
)
@validated(NAME, RANGES)
def generate(
    seed: int,
    turns: int = 60,
    parallel_prob: float = 0.25,
    huge_prob: float = 0.03,
    huge_tokens: int = 40000,
    revert_prob: float = 0.08,
    compact_at: float = 0.5,
    pending_prob: float = 0.03,
    thinking_prob: float = 0.3,
    explore_max: int = 6,
) -> Conversation:
    """Generate a coding-agent session of ``turns`` assistant messages, the last a plain answer."""
    params: dict[str, Any] = {
        "turns": turns,
        "parallel_prob": parallel_prob,
        "huge_prob": huge_prob,
        "huge_tokens": huge_tokens,
        "revert_prob": revert_prob,
        "compact_at": compact_at,
        "pending_prob": pending_prob,
        "thinking_prob": thinking_prob,
        "explore_max": explore_max,
    }
    rng = scenario_rng(NAME, seed)
    s = _Session(rng, params)
    b = s.b
    b.add("system", text(_system_prompt(s.repo)))
    s.start_episode(first=True)
    compact_turn = -1 if compact_at < 0 else min(max(round(compact_at * turns), 1), turns - 1)
    while s.turn < turns - 1:
        if s.turn == compact_turn and not s.compacted:
            s.compact_command()
        s.maybe_resolve_approval()
        s.maybe_correction()
        if s.ep is None:
            s.start_episode(first=False)
        ep = s.ep
        assert ep is not None
        if s.approved_edit and not s.pending:
            s.approved()
        elif s.maybe_request_approval() or s.maybe_revert():
            pass
        elif ep.steps[:1] == ["wrap"] and s.turn == turns - 2:
            # the final answer is the report; a last test run keeps two assistant texts from meeting
            s.run_tests(ep)
        else:
            s.step()
    if s.turn == compact_turn and not s.compacted:
        s.compact_command()
    if s.pending:
        s.pending_wait = 0
        s.maybe_resolve_approval()
    s.final()
    return b.build(
        conversation_id(NAME, seed, params, defaults_of(generate)),
        TOOLS,
        {"scenario": NAME, "seed": seed, "params": params},
    )


def _system_prompt(repo: str) -> str:
    return f"""You are a coding agent working in the {repo} repository on the user's machine.

How to work:
- Understand before you change. Search and read the relevant code first, and reproduce a failure with the
  tests before fixing it. Prefer small, reviewable edits that solve the actual problem.
- Use the tools. read_file reads a file, grep searches contents, list_dir shows a folder, run_tests runs
  pytest, and edit_file replaces an exact snippet. Independent reads may be issued together in one turn.
- Every edit is recorded as a change with an id (chg-1, chg-2, ...). If a change turns out to be wrong,
  revert it explicitly by its id rather than editing around it, and say which change you reverted.
- Some paths are protected (production configuration, secrets, CI release workflows). An edit to them only
  requests approval; wait for the user's answer before relying on it, and respect a refusal.
- Follow the user's rules for the session exactly, even when they are inconvenient, and mention them when
  they constrain a fix. If a rule blocks the task, stop and ask.
- Keep the test suite green. Run the affected tests after each fix and the wider suite before you report
  that a task is done. Never delete or skip a failing test to make the suite pass.
- Be brief in messages to the user: what you found, what you changed (with change ids), what is left. When
  you finish a piece of work and something obviously follows from it, say what you would do next.
- When the conversation is compacted, the summary replaces earlier messages; carry forward the files you
  are working on, the errors still open, the decisions taken and the user's rules.

Style: Python 3.11, type hints, pytest fixtures over setup methods, no new dependencies without asking,
no drive-by reformatting of code you did not need to touch."""
