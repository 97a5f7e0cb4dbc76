"""The wording of the ``research-agent`` scenario: its topics, the sites, regions and people its sources
name, the quotes they carry, the user's later requests and the agent's "next:" notes.

Kept apart from the session code (:mod:`sim.scenarios.research_agent`) because it is data, and reads best
on its own. Order matters: entries are picked by index with the scenario's generator.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    """A research question, the metrics a finding about it reports, their unit, and who gets quoted."""

    title: str
    question: str
    metrics: tuple[str, ...]
    unit: str
    speakers: tuple[str, ...]


TOPICS = (
    Topic(
        "heat pumps in cold climates",
        "how well do air-source heat pumps perform below -15 °C, and at what cost",
        ("the seasonal coefficient of performance", "the installed cost per home", "the share of backup heating"),
        "",
        ("a field engineer at the utility", "the trial's lead researcher", "a housing association manager"),
    ),
    Topic(
        "four-day work week trials",
        "what the large trials found about productivity, retention and wellbeing",
        ("the change in revenue", "the drop in sick days", "the share of firms that kept the policy"),
        "%",
        ("the programme director", "an HR lead at a participating firm", "a labour economist"),
    ),
    Topic(
        "battery recycling",
        "how much lithium, nickel and cobalt current plants recover, and at what cost",
        ("the lithium recovery rate", "the processing cost per tonne", "the nickel recovery rate"),
        "",
        ("the plant's chief engineer", "a materials scientist", "an industry analyst"),
    ),
    Topic(
        "microplastics in drinking water",
        "how much is found in treated tap water and what removes it",
        (
            "the median particle count per litre",
            "the removal rate of sand filtration",
            "the share of samples above the limit",
        ),
        "",
        ("the study's first author", "a water utility chemist", "a regulator's spokesperson"),
    ),
    Topic(
        "remote work and city centres",
        "how hybrid work changed office occupancy and city-centre spending",
        ("the average office occupancy", "the change in weekday footfall", "the vacancy rate"),
        "%",
        ("a commercial property analyst", "the city's chief economist", "a retail association director"),
    ),
)

SITES = (
    "energy.gov",
    "iea.org",
    "nature.com",
    "sciencedirect.com",
    "ons.gov.uk",
    "oecd.org",
    "nrel.gov",
    "fraunhofer.de",
    "arxiv.org",
    "bbc.co.uk",
    "ft.com",
    "ec.europa.eu",
    "statcan.gc.ca",
    "vendorinsights.com",
    "greentechmedia.com",
    "theguardian.com",
    "mdpi.com",
    "brookings.edu",
)
REGIONS = (
    "Norway",
    "Ontario",
    "Bavaria",
    "Hokkaido",
    "Scotland",
    "Quebec",
    "Minnesota",
    "Lombardy",
    "Tasmania",
    "Finland",
    "Colorado",
    "Saxony",
    "Iceland",
    "Manitoba",
)
SURNAMES = (
    "Halvorsen",
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Castellanos",
    "Brennan",
    "Kowalski",
    "Achterberg",
    "Nakamura",
    "Oduya",
    "Petrakis",
    "Salvesen",
    "Whitfield",
)
QUOTES = (
    "We expected a drop in the coldest weeks, and it was smaller than anyone modelled",
    "The numbers held up once we corrected for the weather, which surprised the sceptics",
    "Cost is the barrier now, not the technology",
    "Most of the gain came in the first six months and then it plateaued",
    "Nobody should read a single winter as the final word",
    "The variance between sites was bigger than the average effect",
)
LATER_REQUESTS = (
    ("Please also cover the costs, not just performance.", "include at least one government or agency source"),
    ("Could you add a short section on what is still uncertain?", "keep the report under 1,500 words"),
    ("I'd like a comparison across regions if the data allows.", "do not use vendor marketing material as evidence"),
)
TITLE_STARTS = ("Field results on", "A review of", "What we learned from", "New data on", "The state of")
NEXT_NOTES = (
    "next: look for the follow-up study from {region} to see if {metric} held",
    "next: check whether {site} published newer figures than {year}",
    "next: find an independent source for {metric} in {region}",
)
