"""The beats of a ``support-chat`` conversation: the opening where the customer says who they are and sets
their rules, the issues (a damaged item, a late parcel, an upgrade, a warranty claim), the two personal
notes (a move, a trip), small talk and lookups between them, and the closing questions that need what the
opening established.

A beat is one customer message and what the agent does about it. Each issue is a list of beats that the
loop in :mod:`sim.scenarios.support_chat` plays in order, with other beats in between; a promised
follow-up is scheduled as a beat for a later turn. The scenario's docstring there says which facts the
chat establishes and where it needs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sim.scenarios._common import (
    SUPPORT_LINES,
    Rng,
    ScenarioBuilder,
    call,
    chance,
    embed,
    filler,
    lognormal_int,
    pick,
    shuffled,
    text,
)
from sim.scenarios._support_wording import CARRIERS, CHATTER, FRUSTRATION, ITEMS, OPENERS, PLACES, SHOP, UPGRADES


@dataclass
class _Order:
    number: str
    item: str
    price: float
    detail: int | None = None  # recall fact: what the lookup showed
    number_fact: int | None = None


@dataclass
class _Customer:
    """What the customer said about themselves at the start, and what the chat has produced since."""

    name: str
    account: str
    account_fact: int | None = None
    email_fact: int | None = None
    budget: int = 0
    budget_fact: int | None = None
    away_fact: int | None = None
    refunds: list[int] = field(default_factory=list)
    decisions: list[int] = field(default_factory=list)
    promises: list[int] = field(default_factory=list)  # continuation facts not yet honoured
    tracking: list[int] = field(default_factory=list)
    upgrade_fact: int | None = None
    address_fact: int | None = None


class Chat:
    """One generated support chat: the builder, the customer, their orders, and the follow-ups promised for
    later turns."""

    def __init__(self, rng: Rng, tool_prob: float, total: int) -> None:
        self.rng = rng
        self.total = total
        self.b = ScenarioBuilder(rng)
        self.tool_prob = tool_prob
        self.turns = 0
        first = pick(rng, ("Maya", "Jonas", "Priya", "Tomasz", "Aisha", "Liam", "Sofia", "Kenji"))
        self.c = _Customer(first, f"ACC-{self.b.number(10000, 99999)}-{pick(rng, ('KX', 'QT', 'RB', 'MZ', 'LP'))}")
        self.orders: list[_Order] = []
        self.later: list[tuple[int, Callable[[], None]]] = []  # (turn due, beat) for promised follow-ups

    # -- plumbing -------------------------------------------------------------------------------------
    def user(self, *lines: str, mood: bool = False) -> str:
        """A customer message; when ``mood``, sometimes with a line of frustration."""
        self.turns += 1
        extra = pick(self.rng, FRUSTRATION) if mood and chance(self.rng, 0.4) else ""
        return self.b.add("user", text(" ".join(x for x in (*lines, extra) if x)))

    def reply(self, *lines: str) -> str:
        """The agent's answer: the specific lines wrapped in one to four lines of ordinary support talk."""
        rng = self.rng
        before = [pick(rng, SUPPORT_LINES) for _ in range(rng.randint(0, 2))]
        after = [pick(rng, SUPPORT_LINES) for _ in range(rng.randint(0, 2))]
        return self.b.add("assistant", text(" ".join([*before, *lines, *after])))

    def use_tool(self) -> bool:
        return chance(self.rng, self.tool_prob)

    def order(self) -> _Order:
        item, price = pick(self.rng, ITEMS)
        o = _Order(f"NW-{self.b.number(100000, 999999)}", item, price)
        self.orders.append(o)
        return o

    def lookup(self, o: _Order, detail: str) -> str:
        """A lookup_order call and its result, with ``detail`` somewhere in the record; the result's id."""
        rng, b = self.rng, self.b
        c = call(b.call_id(), "lookup_order", {"order_id": o.number, "account_id": self.c.account})
        b.add("assistant", text("Let me pull that order up."), c)
        head = (
            f'{{\n  "order_id": "{o.number}",\n  "account_id": "{self.c.account}",\n  "item": "{o.item}",\n'
            f'  "price": {o.price:.2f},'
        )
        body = filler(rng, "record", lognormal_int(rng, 300, 0.6, 60, 2500))
        body = embed(rng, body, f'  "note": "{detail}",')
        (rid,) = b.add_results([c], [f"{head}\n{body}\n}}"])
        return rid

    # -- the opening: who the customer is and the rules they set -----------------------------------------
    def opening(self) -> None:
        b, c, rng = self.b, self.c, self.rng
        mid = self.user(
            f"Hi, this is {c.name}. My account is {c.account}.",
            "I have a few problems with recent orders, so bear with me.",
        )
        c.account_fact = b.fact("artifact", c.account, mid)
        self.reply(
            f"Hello {c.name}, thanks for reaching out to {SHOP}. I have your account open.",
            "Tell me about the first problem and we'll go through them one by one.",
        )
        if self.turns_left() <= 0:
            return
        rule = "contact me only by email"
        mid = self.user(f"Before we start: please {rule}. I can't take calls at work.")
        c.email_fact = b.fact("constraint", rule, mid)
        self.reply("Understood, I've set your contact preference on the account.")
        if self.turns_left() <= 0:
            return
        c.budget = int(pick(rng, (150, 200, 250, 300)))
        cap = f"keep anything new under ${c.budget}"
        mid = self.user(f"And if we end up replacing or upgrading anything, {cap} in total. Money is tight.")
        c.budget_fact = b.fact("constraint", cap, mid)
        self.reply(f"Noted: a ${c.budget} limit for anything new. I'll keep every option inside that.")

    def turns_left(self) -> int:
        return self.total - self.turns

    # -- issues ---------------------------------------------------------------------------------------
    def damaged(self) -> list[Callable[[], None]]:
        o = self.order()
        c = self.c
        state: dict[str, float] = {}

        def report() -> None:
            mid = self.user(
                f"{pick(self.rng, OPENERS)} order {o.number} arrived today, and there's damage to the {o.item}.",
                mood=True,
            )
            o.number_fact = self.b.fact("artifact", o.number, mid)
            where = f"delivered {self.rng.randint(2, 28)} days ago to {pick(self.rng, PLACES)}"
            o_detail = f"{o.item} {where}"
            if self.use_tool():
                rid = self.lookup(o, o_detail)
                o.detail = self.b.fact("recall", o_detail, rid)
                self.reply(f"I see it: the {o.item}, ${o.price:.2f}, {where}. I'm sorry it arrived like that.")
            else:
                mid = self.reply(f"I can see the order: {o_detail}. I'm sorry it arrived like that.")
                o.detail = self.b.fact("recall", o_detail, mid)

        def clarify() -> None:
            part = pick(self.rng, ("zip", "strap", "lid", "buckle", "seam", "casing", "hinge"))
            self.user(f"It's the {part} that's broken. Everything else looks fine. Do you need photos?")
            self.reply("A photo would help for our records, but I don't need it to sort this out for you.")

        def offer() -> None:
            self.user("So can you replace it, or do I have to send it back?")
            self.b.need(o.detail)
            amount = round(o.price * float(pick(self.rng, (0.2, 0.25, 0.3, 0.4))), 2)
            state["amount"] = amount
            decision = f"I'll refund ${amount:.2f} of the ${o.price:.2f} and you keep the {o.item}"
            mid = self.reply(f"Since it still works, here is what I can do: {decision}, no return needed.")
            state["decision"] = self.b.fact("decision", decision, mid)
            c.decisions.append(int(state["decision"]))

        def accept() -> None:
            self.user("Fine, please go ahead with that.")
            for h in (c.account_fact, o.number_fact, int(state["decision"])):
                self.b.need(h)
            self.refund(o, state["amount"], "damaged on arrival")

        return [report, clarify, offer, accept]

    def refund(self, o: _Order, amount: float, reason: str) -> None:
        c, b = self.c, self.b
        rf = f"RF-{b.number(100000, 999999)}"
        if self.use_tool():
            k = call(
                b.call_id(),
                "refund",
                {"order_id": o.number, "amount": amount, "account_id": c.account, "reason": reason},
            )
            b.add("assistant", text("Issuing the refund now."), k)
            (rid,) = b.add_results(
                [k],
                [
                    (
                        f"Refund {rf} of ${amount:.2f} for {o.number} accepted; "
                        "expected on the statement in 5-7 business days."
                    )
                ],
            )
            c.refunds.append(b.fact("artifact", rf, rid))
            self.reply(f"Done: the refund reference is {rf}.")
        else:
            mid = self.reply(f"Done: refund {rf} of ${amount:.2f} is on its way to your card.")
            c.refunds.append(b.fact("artifact", rf, mid))

    def late(self) -> list[Callable[[], None]]:
        o = self.order()
        c = self.c
        carrier = pick(self.rng, CARRIERS)

        def report() -> None:
            mid = self.user(
                f"{pick(self.rng, OPENERS)} order {o.number}, the {o.item}, was due last week and never came.",
                mood=True,
            )
            o.number_fact = self.b.fact("artifact", o.number, mid)
            tracking = f"{carrier} tracking {self.b.tag(8).upper()}"
            if self.use_tool():
                rid = self.lookup(o, f"{tracking}, last scan at the regional depot")
                c.tracking.append(self.b.fact("recall", tracking, rid))
                self.reply(f"The record shows {tracking}, last scanned at the regional depot four days ago.")
            else:
                mid = self.reply(f"It went out with {tracking} and was last scanned at the regional depot.")
                c.tracking.append(self.b.fact("recall", tracking, mid))

        def chase() -> None:
            self.user("Can you chase it? I need it before the weekend.")
            self.b.need(c.away_fact)
            self.b.need(c.tracking[-1])
            promise = f"I'll check the {carrier} trace tomorrow morning and email you what they say"
            mid = self.reply(f"I've opened a trace with {carrier}. {promise}.")
            h = self.b.fact("continuation", promise, mid)
            c.promises.append(h)
            tracking = c.tracking[-1]
            self.later.append((self.turns + self.rng.randint(4, 20), lambda: news(h, tracking)))

        def compensate() -> None:
            self.user("Will I get anything back for the hassle? I paid for faster shipping.")
            fee = float(pick(self.rng, (7.95, 9.5, 12.0, 14.95)))
            decision = f"I'll refund the ${fee:.2f} shipping fee on {o.number}"
            mid = self.reply(f"That's fair. {decision[:1].upper()}{decision[1:]} as soon as it is delivered.")
            h = self.b.fact("decision", decision, mid)
            c.decisions.append(h)
            self.later.append((self.turns + self.rng.randint(6, 25), lambda: arrived(h, fee)))

        def news(h: int, tracking: int) -> None:
            self.user(f"Any news from {carrier} about the late parcel?")
            self.b.need(h)
            self.b.need(tracking)
            if h in c.promises:
                c.promises.remove(h)
            self.reply(
                f"Yes: {carrier} found it at the depot; it goes out again today. I've emailed you the details as well."
            )

        def arrived(h: int, fee: float) -> None:
            self.user(f"By the way, the {o.item} finally arrived.")
            for x in (h, o.number_fact, c.account_fact):
                self.b.need(x)
            self.refund(o, fee, "late delivery, shipping fee")

        return [report, chase, compensate]

    def upgrade(self) -> list[Callable[[], None]]:
        c = self.c
        budget = c.budget or 150
        item, price = pick(self.rng, [x for x in ITEMS if x[1] * 1.25 <= budget])
        model = f"{item} {pick(self.rng, UPGRADES)}"

        def ask() -> None:
            self.user(f"Separate question: I'm thinking of getting a better {item}. What would you suggest?")
            self.b.need(c.budget_fact)
            decision = f"I'd suggest the {model} at ${price * 1.25:.2f}"
            mid = self.reply(f"Keeping to your limit, {decision}; the premium one would go over.")
            c.upgrade_fact = self.b.fact("decision", decision, mid)
            c.decisions.append(c.upgrade_fact)

        def think() -> None:
            self.user("Does it come with the same warranty as the one I have?")
            self.reply("Yes, two years on parts and labour, the same as everything we sell.")

        def order_it() -> None:
            self.user("OK, please order it for me on my account.")
            for h in (c.upgrade_fact, c.budget_fact, c.account_fact, c.address_fact, c.away_fact):
                self.b.need(h)
            number = f"NW-{self.b.number(100000, 999999)}"
            mid = self.reply(f"Ordered: {model}, order {number}. You'll get the confirmation by email.")
            c.refunds.append(self.b.fact("artifact", number, mid))

        return [ask, think, order_it]

    def warranty(self) -> list[Callable[[], None]]:
        c = self.c
        item = pick(self.rng, ITEMS)[0]

        def report() -> None:
            self.user(
                f"{pick(self.rng, OPENERS)} my {item} from last winter has stopped working completely.", mood=True
            )
            promise = "once you send a photo of the serial label, I'll file the warranty claim"
            mid = self.reply(f"That should be covered, and {promise}.")
            h = self.b.fact("continuation", promise, mid)
            c.promises.append(h)
            self.later.append((self.turns + self.rng.randint(4, 15), lambda: photo(h)))

        def photo(h: int) -> None:
            serial = f"SN-{self.b.tag(6).upper()}"
            self.user(f"Sorry for the delay, here is the photo of the serial label. It reads {serial}.")
            self.b.need(h)
            if h in c.promises:
                c.promises.remove(h)
            claim = f"WC-{self.b.number(10000, 99999)}"
            mid = self.reply(f"Thank you. I've filed warranty claim {claim} for serial {serial}.")
            c.refunds.append(self.b.fact("artifact", claim, mid))

        return [report]

    def moved(self) -> list[Callable[[], None]]:
        c = self.c

        def tell() -> None:
            street = pick(self.rng, ("Harbour Lane", "Mill Road", "Quarry Street", "Linden Avenue", "Kiln Walk"))
            address = f"{self.rng.randint(2, 180)} {street}"
            mid = self.user(f"Also, I moved last month. Anything new should go to {address}, not the old address.")
            c.address_fact = self.b.fact("recall", address, mid)
            self.reply("Thanks, I've updated the delivery address on the account.")

        return [tell] if c.address_fact is None else []

    def away(self) -> list[Callable[[], None]]:
        c = self.c

        def tell() -> None:
            day = self.rng.randint(10, 28)
            rule = f"don't ship anything before the {day}th"
            mid = self.user(f"Oh, and I'm travelling, so {rule}. Nobody will be home.")
            c.away_fact = self.b.fact("constraint", rule, mid)
            self.reply("Thanks for telling me; I've put a hold note on the account for new shipments.")

        return [tell] if c.away_fact is None else []

    def chatter(self) -> None:
        self.user(pick(self.rng, CHATTER))
        self.reply(pick(self.rng, SUPPORT_LINES))

    def extra_lookup(self) -> None:
        """A turn where the customer asks about an order already discussed and the agent checks again."""
        o = pick(self.rng, self.orders)
        mid = self.user(f"Can you double-check the status of {o.number} for me?")
        self.b.need(o.number_fact, mid)
        self.lookup(o, f"status checked again, no change since yesterday ({self.b.tag()})")
        self.reply("Nothing has changed since we last looked.")

    # -- the end: questions that need what was said at the start ----------------------------------------
    def closing(self) -> list[Callable[[], None]]:
        c = self.c

        def summary() -> None:
            self.user("Can you send me a summary of everything we did today?")
            for h in [c.email_fact, c.account_fact, *c.refunds, *c.decisions]:
                self.b.need(h)
            self.reply("Of course: I'll email the summary, with every reference number, to the address on the account.")

        def account() -> None:
            self.user("What's my account number again? I don't have it to hand.")
            self.b.need(c.account_fact)
            self.reply(f"It's {c.account}.")

        def budget() -> None:
            self.user("With shipping, does what you suggested still fit my budget?")
            for h in (c.budget_fact, c.upgrade_fact):
                self.b.need(h)
            self.reply(f"Yes, shipping is free on that one, so it stays under ${c.budget}.")

        def follow_up() -> None:
            self.user("Is there anything still open that you're going to get back to me about?")
            for h in c.promises + c.tracking[-1:] + [c.email_fact]:
                self.b.need(h)
            open_items = "; ".join(self.b.fact_text(h) for h in c.promises) or "nothing beyond the refunds"
            self.reply(f"Yes: {open_items}. All by email, as you asked.")

        def shipping() -> None:
            self.user("If the replacement is ready, when will you send it?")
            for h in (c.away_fact, c.address_fact, c.email_fact):
                self.b.need(h)
            self.reply("I'll hold it until the date you gave me and email the tracking once it leaves.")

        def bye() -> None:
            self.user("That's everything, thanks for your help.")
            self.reply(f"You're welcome, {c.name}. Everything we agreed is on the account. Have a good day.")

        def budget_if_upgraded() -> None:
            (budget if c.upgrade_fact is not None else account)()

        beats = shuffled(self.rng, [summary, account, budget_if_upgraded, follow_up, shipping])
        return [*beats[: self.rng.randint(3, 6)], bye]
