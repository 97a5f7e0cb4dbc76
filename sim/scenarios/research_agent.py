"""``research-agent``: a long search-and-read loop that ends in a written report.

This is the shape that makes compaction hardest on retention: a hundred and more turns of large
results (search listings, whole fetched pages, now and then a huge one), where the few sentences that
matter (a number, a quote, a source's address) are buried in thousands of tokens, and are all needed
again at the very end, when the report is drafted and written. The user sets a rule at the start
("cite only sources published after 2019") that decides which sources may be used, and adds a request
or two on the way; the agent decides which sources to trust or drop, and leaves itself "next:" notes
that it picks up a few turns later.

Turns are assistant messages. Most call one tool (web_search, fetch_page or take_note), some fetch
two or three pages at once; the last several draft the report's sections as notes, and the final one
is the report itself.

The topics and the wording the session draws from are in :mod:`sim.scenarios._research_wording`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.core.conversation import Conversation, FactKind, Part
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
    tool,
    validated,
)
from sim.scenarios._research_wording import (
    LATER_REQUESTS,
    NEXT_NOTES,
    QUOTES,
    REGIONS,
    SITES,
    SURNAMES,
    TITLE_STARTS,
    TOPICS,
    Topic,
)

NAME = "research-agent"

RANGES = {
    "turns": Param(int, 1, 20000),
    "result_tokens_median": Param(int, 50, 200_000),
    "huge_prob": Param(float, 0.0, 1.0),
    "huge_tokens": Param(int, 100, 1_000_000),
}

TOOLS = (
    tool(
        "web_search",
        "Search the web. Returns up to ten results with title, address, date and a snippet.",
        {"query": {"type": "string"}, "max_results": {"type": "integer"}},
        ["query"],
    ),
    tool(
        "fetch_page",
        "Fetch a web page or PDF and return its text, with its address, title and date.",
        {"url": {"type": "string"}},
        ["url"],
    ),
    tool(
        "take_note",
        "Save a note to the research notebook; notes survive between sessions.",
        {"text": {"type": "string"}, "section": {"type": "string"}},
        ["text"],
    ),
)


@dataclass
class _Source:
    url: str
    title: str
    year: int
    month: int
    dated: bool = True  # whether the search listing showed the date
    listed_in: str = ""  # the search result that listed it


@dataclass
class _Research:
    """What the session has gathered: sources to read, findings to cite, notes to follow up."""

    queue: list[_Source] = field(default_factory=list)
    findings: list[int] = field(default_factory=list)  # recall and artifact facts the report cites
    decisions: list[int] = field(default_factory=list)
    constraints: list[int] = field(default_factory=list)
    notes_due: list[tuple[int, int, str]] = field(default_factory=list)  # (turn due, fact, query)
    notes_open: list[int] = field(default_factory=list)
    saved_notes: int = 0


class _Session:
    """One generated research session: the builder, the topic and what has been gathered so far."""

    def __init__(self, rng: Rng, median: int, huge_prob: float, huge_tokens: int) -> None:
        self.rng = rng
        self.b = ScenarioBuilder(rng)
        self.topic: Topic = pick(rng, TOPICS)
        self.r = _Research()
        self.turn = 0
        self.median, self.huge_prob, self.huge_tokens = median, huge_prob, huge_tokens
        self.old_sources: list[_Source] = []  # read, then found to be from before the cutoff

    def assistant(self, *parts: Part) -> str:
        self.turn += 1
        return self.b.add("assistant", *parts)

    # -- makers --------------------------------------------------------------------------------------
    def source(self) -> _Source:
        rng, b = self.rng, self.b
        site = pick(rng, SITES)
        slug = "-".join(self.topic.title.split()[:3])
        year = rng.randint(2020, 2025) if chance(rng, 0.6) else rng.randint(2010, 2020)
        url = f"https://www.{site}/{year}/{slug}-{b.tag(6)}"
        title = f"{pick(rng, TITLE_STARTS)} {self.topic.title} in {pick(rng, REGIONS)}"
        return _Source(url, title, year, rng.randint(1, 13), dated=chance(rng, 0.8))

    def value(self) -> str:
        """A number in the topic's unit, unique in the conversation."""
        n = self.b.number(1000, 99999)
        if self.topic.unit == "%":
            return f"{n / 1000:.1f}%"
        return f"{n / 100:,.2f}"

    # -- turns ---------------------------------------------------------------------------------------
    def search(self) -> None:
        rng, b, r = self.rng, self.b, self.r
        due = [x for x in r.notes_due if x[0] <= self.turn]
        if due:
            r.notes_due.remove(due[0])
            _, note, query = due[0]
            b.need(note)  # the agent acts on its own note
            r.notes_open.remove(note)
            lead = "Following up my earlier note."
        else:
            query = f"{self.topic.title} {pick(rng, self.topic.metrics).split(' ', 1)[1]} {pick(rng, REGIONS)}"
            lead = "Searching for more sources."
        c = call(b.call_id(), "web_search", {"query": query, "max_results": 10})
        self.assistant(text(lead), c)
        lines = []
        found: list[_Source] = []
        for i in range(rng.randint(6, 11)):
            src = self.source()
            found.append(src)
            snippet = filler(rng, "web", lognormal_int(rng, 60, 0.5, 15, 300)).replace("\n", " ")
            date = f"Published {src.year}-{src.month:02d}" if src.dated else "Date unknown"
            lines.append(f"{i + 1}. {src.title}\n   {src.url}\n   {date} · {snippet}")
        (rid,) = b.add_results([c], ["\n\n".join(lines)])
        # the agent reads two or three of these, skipping what the listing shows to be too old; an
        # undated one may turn out to be too old once fetched
        usable = [src for src in found if src.year > 2019 or not src.dated]
        for src in usable[: rng.randint(2, 4)]:
            src.listed_in = rid
            r.queue.append(src)

    def fetch(self, parallel: bool) -> None:
        rng, b, r = self.rng, self.b, self.r
        k = min(len(r.queue), rng.randint(2, 4) if parallel else 1)
        picked = [r.queue.pop(0) for _ in range(k)]
        for src in picked:
            if chance(rng, 0.4):  # the address has to be carried from the listing to the fetch
                b.need(b.fact("artifact", src.url, src.listed_in))
        calls = [call(b.call_id(), "fetch_page", {"url": src.url}) for src in picked]
        self.assistant(text("Reading these pages." if k > 1 else "Reading this one in full."), *calls)
        pages: list[tuple[_Source, list[tuple[FactKind, str]]]] = []
        bodies = []
        for src in picked:
            body, found = self.page(src)
            bodies.append(body)
            pages.append((src, found))
        ids = b.add_results(calls, bodies)
        for (src, found), rid in zip(pages, ids, strict=True):
            if src.year <= 2019:
                self.old_sources.append(src)  # nothing from it may be cited
                continue
            for kind, fact_text in found:
                r.findings.append(b.fact(kind, fact_text, rid))

    def page(self, src: _Source) -> tuple[str, list[tuple[FactKind, str]]]:
        """A fetched page and the findings in it (kind, verbatim text)."""
        rng = self.rng
        n, _ = result_tokens(rng, self.median, 0.8, self.huge_prob, self.huge_tokens, lo=80)
        body = filler(rng, "web", n)
        found: list[tuple[FactKind, str]] = []
        published = f"{src.year}-{src.month:02d}-{rng.randint(1, 29):02d}"
        header = f"URL: {src.url}\nTitle: {src.title}\nPublished: {published}\n\n"
        if not chance(rng, 0.6):
            return header + body, found  # read in full, nothing worth citing
        region = pick(rng, REGIONS)
        metric = pick(rng, self.topic.metrics)
        number = f"{metric} was {self.value()} in {region}"
        body = embed(rng, body, f"Across the sites we studied, {number}, against a national figure of {self.value()}.")
        found.append(("recall", number))
        if chance(rng, 0.3):
            quote = pick(rng, QUOTES)
            speaker = f"{pick(rng, SURNAMES)}, {pick(rng, self.topic.speakers)}"
            said = f'"{quote}," said {speaker}'
            body = embed(rng, body, f"{said}.")
            found.append(("recall", said))
        if chance(rng, 0.5):
            found.append(("artifact", src.url))
        if chance(rng, 0.25):
            doi = f"doi:10.{rng.randint(1000, 9999)}/{self.b.tag(6)}"
            body = embed(rng, body, f"Data and code: {doi} (open access).")
            found.append(("artifact", doi))
        return header + body, found

    def judge(self) -> bool:
        """A decision about sources: drop one from before the cutoff, or prefer one over another."""
        rng, b, r = self.rng, self.b, self.r
        if self.old_sources and chance(rng, 0.6):
            src = self.old_sources.pop(0)
            for h in r.constraints[:1]:
                b.need(h)
            decision = f"I'll leave out {src.url}: it was published in {src.year}, before the cutoff"
        elif len(r.findings) >= 2 and chance(rng, 0.3):
            decision = (
                f"I'll trust the {pick(rng, REGIONS)} field measurements over the vendor figures, "
                f"which cover only the vendor's own installations"
            )
        else:
            return False
        note = f"{decision}."
        c = call(b.call_id(), "take_note", {"text": note, "section": "sources"})
        mid = self.assistant(text(f"{decision}. Noting that."), c)
        r.decisions.append(b.fact("decision", decision, mid))
        r.saved_notes += 1
        b.add_results([c], [f"Saved note {r.saved_notes} ({len(note)} chars) in section 'sources'."])
        return True

    def note(self) -> None:
        """A research note, often with a "next:" line the agent will act on a few turns later."""
        rng, b, r = self.rng, self.b, self.r
        parts: list[Part] = []
        summary = filler(rng, "prose", lognormal_int(rng, 80, 0.6, 20, 400))
        if chance(rng, 0.6):
            region, metric = pick(rng, REGIONS), pick(rng, self.topic.metrics)
            nxt = pick(rng, NEXT_NOTES).format(
                region=region, metric=metric, site=pick(rng, SITES), year=rng.randint(2019, 2024)
            )
            parts.append(text(f"Noted. {nxt[:1].upper()}{nxt[1:]}."))
            query = f"{self.topic.title} {metric} {region} follow-up"
        else:
            nxt = ""
            parts.append(text("Saving what I have so far."))
        c = call(b.call_id(), "take_note", {"text": summary, "section": "findings"})
        mid = self.assistant(*parts, c)
        if nxt:
            h = b.fact("continuation", nxt[:1].upper() + nxt[1:], mid)
            r.notes_open.append(h)
            r.notes_due.append((self.turn + rng.randint(2, 12), h, query))
        r.saved_notes += 1
        b.add_results([c], [f"Saved note {r.saved_notes} ({len(summary)} chars) in section 'findings'."])

    def user_request(self, k: int) -> None:
        rng, b = self.rng, self.b
        ask, rule = LATER_REQUESTS[k % len(LATER_REQUESTS)]
        if chance(rng, 0.7):
            mid = b.add("user", text(f"{ask} And please {rule}."))
            self.r.constraints.append(b.fact("constraint", rule, mid))
        else:
            b.add("user", text(ask))

    def check_in(self) -> None:
        """The user asks for the strongest numbers so far; the answer is a turn that needs them."""
        b, r = self.b, self.r
        b.add("user", text("Quick check before you go on: what are the strongest numbers so far?"))
        kinds = set(b.facts_of("recall"))
        recalls = [h for h in r.findings if h in kinds][-3:]
        for h in recalls:
            b.need(h)
        listed = "; ".join(b.fact_text(h) for h in recalls) or "nothing solid yet"
        self.assistant(text(f"So far: {listed}. I'll keep going and check these against independent sources."))
        b.add("user", text("Great, carry on."))

    def draft(self, section: int, share: list[int]) -> None:
        """A section of the report drafted as a note, citing some of the findings."""
        b, r = self.b, self.r
        for h in share:
            b.need(h)
        for h in r.constraints:
            b.need(h)
        cited = " ".join(f"{b.fact_text(h)}." for h in share)
        body = f"{cited}\n{filler(self.rng, 'prose', lognormal_int(self.rng, 250, 0.4, 60, 900))}"
        c = call(b.call_id(), "take_note", {"text": body, "section": f"draft-{section}"})
        self.assistant(text(f"Drafting section {section}."), c)
        r.saved_notes += 1
        b.add_results([c], [f"Saved note {r.saved_notes} ({len(body)} chars) in section 'draft-{section}'."])

    def report(self) -> None:
        b, r = self.b, self.r
        cite = r.findings + r.decisions + r.constraints + r.notes_open
        for h in cite:
            b.need(h)
        lines = [f"# {self.topic.title.capitalize()}: what the evidence says", ""]
        lines += [f"- {b.fact_text(h)}" for h in r.findings]
        lines += ["", "Sources and judgement calls:"] + [f"- {b.fact_text(h)}." for h in r.decisions]
        if r.notes_open:
            lines += ["", "Open questions:"] + [f"- {b.fact_text(h)}" for h in r.notes_open]
        lines += ["", filler(self.rng, "prose", lognormal_int(self.rng, 900, 0.3, 300, 3000))]
        self.assistant(text("\n".join(lines)))


@SCENARIOS.register(
    NAME,
    "a 100-plus-turn search and read loop with large results; findings, sources and the user's rules are "
    "needed when the final report is written",
    defaults="turns=120, result_tokens_median=2500, huge_prob=0.05, huge_tokens=30000",
)
@validated(NAME, RANGES)
def generate(
    seed: int, turns: int = 120, result_tokens_median: int = 2500, huge_prob: float = 0.05, huge_tokens: int = 30000
) -> Conversation:
    """Generate a research session of ``turns`` assistant messages ending in the report."""
    params = {
        "turns": turns,
        "result_tokens_median": result_tokens_median,
        "huge_prob": huge_prob,
        "huge_tokens": huge_tokens,
    }
    rng = scenario_rng(NAME, seed)
    s = _Session(rng, result_tokens_median, huge_prob, huge_tokens)
    b, r, topic = s.b, s.r, s.topic
    b.add("system", text(_SYSTEM))
    rule = "cite only sources published after 2019"
    mid = b.add(
        "user",
        text(
            f"I need a short research report on {topic.title}: {topic.question}. "
            f"Use numbers where you can and name your sources. Please {rule}, since older "
            "studies used equipment and methods that are no longer representative."
        ),
    )
    r.constraints.append(b.fact("constraint", rule, mid))

    drafts = min(max(turns - 2, 0), round(0.07 * turns))
    research = turns - 1 - drafts
    asks = {round(research * x) for x in (0.3, 0.65)} - {0}
    check_in = round(research * 0.5) if research >= 20 else -1
    k = 0
    while s.turn < research:
        if s.turn in asks and b.last_role == "tool":
            s.user_request(k)
            asks.discard(s.turn)
            k += 1
        if s.turn == check_in and b.last_role == "tool" and s.turn + 1 < research:
            s.check_in()
            continue
        if s.turn == 0 or any(t <= s.turn for t, _, _ in r.notes_due):
            s.search()
        elif not r.queue:
            if chance(rng, 0.25):
                s.note()
            else:
                s.search()
        elif chance(rng, 0.12) and s.judge():
            pass
        elif r.queue and chance(rng, 0.7):
            s.fetch(parallel=chance(rng, 0.15))
        elif chance(rng, 0.5):
            s.note()
        else:
            s.search()
    # the write-up: sections as notes, each citing a share of the findings, then the report
    for i in range(drafts):
        s.draft(i + 1, r.findings[i::drafts])
    s.report()
    return b.build(
        conversation_id(NAME, seed, params, defaults_of(generate)),
        TOOLS,
        {"scenario": NAME, "seed": seed, "params": params, "topic": topic.title},
    )


_SYSTEM = """You are a research assistant. You answer the user's question with a short written report
based on sources you find and read yourself, and you show your evidence.

How to work:
- Search broadly first, then read the most promising sources in full with fetch_page. Search results and
  snippets are not evidence; only a page you have read is.
- Keep a research notebook with take_note: each finding with its number, its source's address and its
  date, and the judgement calls you make about sources. Notes are how your work survives a long session.
- Prefer primary sources: peer-reviewed studies, official statistics, agency reports, datasets. Treat
  vendor material and press releases as claims to check, not as findings.
- Respect the user's rules about which sources may be used, even when a source is otherwise good, and say
  when you exclude one and why.
- When a finding raises a question you cannot answer yet, write down what to look for next, and come back
  to it before you write the report.
- The report: a title, the key findings with their numbers and sources, a short section on what is
  uncertain, and a list of every source cited with its address. Quote people exactly or not at all.
- Be honest about gaps. If the evidence is thin or conflicting, say so rather than smoothing it over.
- When the conversation is compacted, carry forward every finding with its number and address, the
  user's rules, your decisions about sources and your open follow-ups."""
