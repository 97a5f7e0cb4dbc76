"""The wording of the ``support-chat`` scenario: the shop, its items, carriers, delivery places and
upgrade names, and the customer's small talk, openers and complaints.

Kept apart from the dialogue code (:mod:`sim.scenarios._support_dialogue`) because it is data, and reads
best on its own. Order matters: entries are picked by index with the scenario's generator.
"""

from __future__ import annotations

SHOP = "Northwind Outfitters"
ITEMS = (
    ("rain shell", 189.0),
    ("trail runners", 142.5),
    ("down vest", 118.0),
    ("camp stove", 96.0),
    ("headlamp", 44.9),
    ("hiking poles", 79.0),
    ("sleeping pad", 129.0),
    ("wireless headphones", 159.0),
    ("water filter", 64.5),
    ("travel backpack", 174.0),
)
CARRIERS = ("UPS", "DHL", "FedEx", "Royal Mail", "PostNord")
PLACES = ("the parcel locker on Elm Street", "the front desk", "a neighbour at number 12", "the back porch")
UPGRADES = ("Pro", "Plus", "2024 edition", "Ultralight", "XT")

CHATTER = (
    "How long do refunds usually take to show up?",
    "Is there any way to change the delivery address on an order that already shipped?",
    "Do you price match if I find it cheaper somewhere else?",
    "Sorry, my connection dropped for a moment. Are you still there?",
    "Out of curiosity, where do you ship from?",
    "Does store credit expire?",
    "Can I return something I bought in a physical store through this chat?",
    "What happens if the carrier loses the parcel completely?",
    "Do you have a loyalty programme? I buy from you quite often.",
    "Can I use two discount codes on one order?",
    "Is it possible to get a paper invoice for my records?",
    "Are your prices the same in the app and on the website?",
    "Someone in your shop told me something different last month, which is right?",
    "Do you recycle old equipment if I send it in?",
)
OPENERS = ("First one:", "Next problem:", "Another thing:", "There's also this:", "Something else went wrong:")
FRUSTRATION = (
    "Honestly this is the third time something has gone wrong with an order this year.",
    "I've been a customer for a long time and I'd like this sorted properly.",
    "I don't want to spend my whole afternoon on this, but I do want it fixed.",
    "I'm not angry with you, it's just been a frustrating week.",
)
