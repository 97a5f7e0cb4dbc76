"""The events laid over a ``coding-agent`` session's episode work: a user's correction mid-loop (a new
rule), reverts that need the change they undo, edits to protected paths that wait for the user's approval
(a pending message), and ``/compact`` from the user.

Apart from :mod:`sim.scenarios._coding_session` because these interrupt an episode rather than being one
of its steps; :class:`CodingSession` is that session with them added.
"""

from __future__ import annotations

from sim.core.conversation import Part
from sim.scenarios._coding_session import Session
from sim.scenarios._coding_wording import CORRECTIONS, PROTECTED
from sim.scenarios._common import call, chance, filler, pick, text


class CodingSession(Session):
    """A generated session with its interruptions; the scenario's ``generate`` decides at each turn which
    of them may happen."""

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
