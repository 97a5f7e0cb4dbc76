"""``support-chat``: a long customer-support conversation, mostly talk, with a few tool calls.

Where the coding and research scenarios are dominated by tool output, this one is dominated by many
small messages. What it tests is whether a compacted conversation still remembers what the customer
said at the start: the account id, how they want to be contacted, how much they are willing to spend,
when they are away. Those come up again near the end ("send me a summary", "is that within my budget?",
"what was my account number?"), sixty or more turns later.

The customer raises several issues in turn (a damaged item, a late parcel, an upgrade, a warranty
claim), with small talk and policy questions between. The agent looks orders up and issues refunds with
its tools: a turn about an order (a new problem, a refund, a status question between issues) is
answered with a tool call with probability ``tool_prob``; otherwise the same details appear in the
agent's own reply, as when it reads them off a CRM sidebar. Order details are recall facts, order,
refund and claim ids artifacts, the agent's offers decisions, and a promise to act once the customer
sends something is a continuation.

A turn is one user message and the agent's answer (a tool call and its result, then a reply).

Length: a turn adds about 75 tokens, so the default of 2,500 turns (a support thread kept open for
days) grows the prompt to 180-200K tokens (cl100k, seeds 0-5), past the 0.85 trigger of a 200K window
(about 163K tokens of input budget) some 200-300 turns before the closing questions that need the
opening's facts. At the 80 turns of earlier versions the chat never reached any policy's trigger in a
200K window, which left the question the scenario asks unasked; pass ``turns=80`` for a quick chat.

This module holds the scenario's parameters, its tools, the loop that picks each turn's beat and the
system prompt; the beats are in :mod:`sim.scenarios._support_dialogue`, and the wording they draw from in
:mod:`sim.scenarios._support_wording`.
"""

from __future__ import annotations

from collections.abc import Callable

from sim.core.conversation import Conversation
from sim.scenarios import SCENARIOS
from sim.scenarios._common import (
    Param,
    chance,
    conversation_id,
    defaults_of,
    pick,
    scenario_rng,
    shuffled,
    text,
    tool,
    validated,
)
from sim.scenarios._support_dialogue import Chat
from sim.scenarios._support_wording import SHOP

NAME = "support-chat"

RANGES = {
    "turns": Param(int, 1, 20000),
    "tool_prob": Param(float, 0.0, 1.0),
}

TOOLS = (
    tool(
        "lookup_order",
        "Look up an order by its number: items, prices, shipping status, tracking and history.",
        {"order_id": {"type": "string"}, "account_id": {"type": "string"}},
        ["order_id"],
    ),
    tool(
        "refund",
        "Refund all or part of an order to the original payment method.",
        {
            "order_id": {"type": "string"},
            "amount": {"type": "number"},
            "account_id": {"type": "string"},
            "reason": {"type": "string"},
        },
        ["order_id", "amount", "account_id"],
    ),
)


@SCENARIOS.register(
    NAME,
    "a long customer-support dialogue with few tool calls; the account id, contact preference and budget "
    "stated early are needed at the end",
    defaults="turns=2500, tool_prob=0.15",
)
@validated(NAME, RANGES)
def generate(seed: int, turns: int = 2500, tool_prob: float = 0.15) -> Conversation:
    """Generate a support chat of ``turns`` user messages, each answered by the agent."""
    params = {"turns": turns, "tool_prob": tool_prob}
    rng = scenario_rng(NAME, seed)
    chat = Chat(rng, tool_prob, turns)
    b = chat.b
    b.add("system", text(_system_prompt()))
    chat.opening()
    closing = chat.closing()
    queue: list[Callable[[], None]] = []
    issues: list[Callable[[], list[Callable[[], None]]]] = []
    while chat.turns_left() > len(closing):
        due = [x for x in chat.later if x[0] <= chat.turns]
        if due:
            chat.later.remove(due[0])
            due[0][1]()
        elif queue and not chance(rng, 0.2):
            queue.pop(0)()
        elif not queue and not chance(rng, 0.25):
            # every kind of issue once before any comes round again; the two personal notes once each
            if chance(rng, 0.15):
                queue.extend(pick(rng, (chat.moved, chat.away))())
            else:
                if not issues:
                    issues.extend(shuffled(rng, [chat.damaged, chat.late, chat.upgrade, chat.warranty]))
                queue.extend(issues.pop(0)())
        elif chat.orders and chance(rng, tool_prob):
            chat.extra_lookup()
        else:
            chat.chatter()
    for beat in closing[-chat.turns_left() :] if chat.turns_left() > 0 else []:
        beat()
    return b.build(
        conversation_id(NAME, seed, params, defaults_of(generate)),
        TOOLS,
        {"scenario": NAME, "seed": seed, "params": params},
    )


def _system_prompt() -> str:
    return f"""You are the customer support assistant for {SHOP}, an online outdoor-equipment shop.

Your job is to solve the customer's problems in this chat, accurately and kindly, and to leave the account
in a state where anyone picking it up later can see what was agreed.

Tools: lookup_order shows an order's items, prices, shipping status and tracking; refund returns money to
the original payment method. Look an order up before you make promises about it. Never refund more than
was paid for the items concerned, and always state the refund reference to the customer.

Policies you apply:
- Damaged on arrival: replacement, full refund on return, or a partial refund if the customer keeps the
  item. Offer what fits the customer's situation; do not make them argue for it.
- Late parcels: open a carrier trace after three working days past the estimate and tell the customer
  when you will report back. Keep that promise.
- Warranty: two years on parts and labour. A claim needs a photo of the serial label.
- Upgrades and replacements: suggest options within any budget the customer has given you, and say so.

The customer's own instructions (how to contact them, budget limits, dates they are away, which account
to use) override your defaults for the whole conversation, however long it gets. Confirm them once and
then follow them without being reminded. If a summary of earlier messages replaces them, it must keep those
instructions and every reference number.

Tone: plain, warm, brief. One question at a time. No invented facts: if you do not know, look it up or
say you will find out."""
