"""Reading a text clause by clause (:func:`read_clauses`): whom each clause is about, and what it says.

A clause with the user as subject ("I", "we", "me and my X") is read past its modality by its verb
(:func:`memory.extraction.reader.predicate.read_predicate`); "I'd …" is a wish or a request. A clause
without one (:func:`_subjectless`) may have the user's things as subject ("my job is …", "our team uses
…", "my laptop's a …"), their kin or pets ("my son has a tournament on Saturday"), a thing called their
jam or not their thing; or open with a verb whose subject is left out (it continues the sentence's
subject, or opens the message in the telegraphic style: "Moved back to Glasgow"; a base form, which reads
as a command, only after a comma); or be a bare phrase continuing a list about the user ("34, software
tester at Ericsson", ", some Python", ", more of a dog person"), or an event without a verb. A clause
about someone else is not read.

Every reading is judged by :class:`memory.extraction.guards.Guard` at its clause: questions, requests,
hypotheticals, reported and quoted speech still teach nothing; a clause with its own first-person subject
after a comma is not governed by a request that opened the sentence ("pls keep it brief, I prefer bullet
points"), but one after a colon is ("Translate: I have two brothers").
"""

from __future__ import annotations

import re

from memory.extraction.guards import Guard
from memory.extraction.reader.clauses import (
    FILLERS,
    HOUSEHOLD_SUBJECT,
    OTHER_SUBJECT,
    PRONOUN_NEXT,
    SUBJECT,
    Clause,
    Sentence,
    clauses,
    skip_space,
)
from memory.extraction.reader.household import read_event_phrase, read_household_event, read_pair
from memory.extraction.reader.lexicon import FORMS, LIKING_VERBS, WORD
from memory.extraction.reader.modality import MODIFIER, read_modality
from memory.extraction.reader.phrases import (
    POINTER_OBJECT,
    TECH_WORD,
    list_items,
    looks_like_tool,
    place_span,
    thing_span,
)
from memory.extraction.reader.predicate import read_predicate
from memory.extraction.reader.readings import Reading, read_tools, reading
from memory.extraction.reader.tastes import read_subject_taste

__all__ = ["MAX_READ_LENGTH", "read_clauses"]

# What a user tells about themself fits in a message's last few thousand characters; a long text (an LLM
# answer, a pasted document) is read by the rules alone past that, which bounds the cost on 64 KiB.
MAX_READ_LENGTH = 4096


def read_clauses(text: str, scanned: str, guard: Guard) -> list[Reading]:
    """The readings of the clauses of ``text`` (``scanned`` is its scan text), in text order: of its last
    :data:`MAX_READ_LENGTH` characters only."""
    found: list[Reading] = []
    state = Sentence(-1)
    for clause in clauses(scanned, max(0, len(scanned) - MAX_READ_LENGTH)):
        if clause.sentence != state.start:
            state = Sentence(clause.sentence)
        readings = _read(text, scanned, guard, clause, state)
        found.extend(readings)
        state.last = readings[-1].category if readings else ""
        object_ = _preference_object(scanned, clause)
        if object_ is not None:
            state.antecedent = object_
    return found


# Subjects that are the user's own things: "home is …", "my job is …", "my laptop's a …", "our team uses …".
_POSSESSION = re.compile(
    r"(?:my\s+)?(?P<home>home)\s+(?:is|['’]s)\s+"
    r"|my\s+(?P<job>job|work|day\s+job|role|career)\s+(?:is|['’]s)\s+(?:mostly\s+|basically\s+|just\s+|mainly\s+)?"
    r"|my\s+(?:(?:new|old|work|main|personal|home|current)\s+)?(?P<device>laptop|phone|computer|pc|desktop|"
    r"machine|tablet|watch|camera|keyboard|daily\s+driver)(?:['’]s|\s+is)\s+"
    r"|(?:our|my|the\s+whole|the\s+entire)\s+(?P<org>team|company|startup|org|lab|department|shop|office|job|work)\s+"
    r"(?:mostly\s+|also\s+|all\s+|now\s+|still\s+)?(?:uses|use|runs\s+on|is\s+on|is\s+all\s+in\s+on|works\s+in|lives\s+in)\s+"
    r"|my\s+(?P<choice>editor|ide|os|browser|language|distro|shell|terminal|laptop|phone)\s+of\s+choice\s+(?:is|['’]s)\s+"
    # What the user's software is made with: "our backend is written in Go", "our CI runs on GitHub Actions".
    r"|(?:our|my)\s+(?:[a-z-]+\s+)?(?P<built>backend|frontend|app|apps|site|website|api|ci|infra|infrastructure|"
    r"codebase|product|platform|service|services|server|servers|database|db|blog|pipeline|pipelines|stack|"
    r"monorepo|repo|cluster|builds)\s+(?:(?:is|are)\s+(?:all\s+|mostly\s+|entirely\s+)?(?:written|built|coded|made|"
    r"developed|hosted|deployed|running|done)\s+(?:in|with|on|using)|(?:runs?|lives?)\s+on|(?:is|are)\s+on)\s+"
)
# "Notion is my daily driver", "Vim is my go-to editor": the tool the user relies on, as the subject.
_RELIED_ON = re.compile(
    r"(?P<tool>[a-z0-9][a-z0-9'’ .+#-]{0,30}?)\s+(?:is|are|['’]s)\s+(?:still\s+|now\s+|basically\s+)?my\s+"
    r"(?:daily\s+driver|main\s+(?:machine|tool|editor|language|os|app|browser|laptop|phone|ide|stack)|"
    r"go-to\s+(?:tool|editor|app|language|ide|browser|framework|stack|os|distro|note-taking\s+app))(?![a-z])"
)
# "…, more of a dog person": the other side of a contrast the clause before drew.
_CONTRAST = re.compile(
    r"(?:more|rather|but)\s+(?:of\s+)?(?:an?\s+)(?P<thing>[a-z-]+(?:\s+[a-z-]+)?)\s+(?:person|fan|guy|girl|lover|type)(?![a-z])"
)
# A line of work written without a subject, in a list about the user ("34, software tester at Ericsson").
_ROLE_NOUN = (
    r"engineer|developer|dev|designer|tester|manager|analyst|consultant|nurse|teacher|scientist|researcher|"
    r"architect|admin|administrator|intern|writer|editor|chef|cook|accountant|lawyer|attorney|doctor|physician|"
    r"pm|sre|officer|director|founder|co-?founder|barista|cashier|driver|technician|mechanic|electrician|"
    r"plumber|pharmacist|therapist|paramedic|surgeon|dentist|vet|programmer|coder|marketer|recruiter|"
    r"librarian|professor|lecturer|student|freelancer|contractor|photographer|illustrator|translator|"
    r"journalist|producer|carpenter|baker|waiter|waitress|bartender|pilot|firefighter|paralegal|clerk|"
    r"specialist|coordinator|assistant|lead|cto|ceo|cfo"
)
_TELEGRAPHIC_ROLE = re.compile(
    rf"(?:an?\s+)?(?P<role>(?:[a-z-]+\s+){{0,3}}?(?:{_ROLE_NOUN}))(?:\s+(?:at|for|with)\s+(?P<employer>[^,;]+?))?"
    r"(?:\s+in\s+(?P<place>[^,;]+?))?\s*$"
)
# More of a list of tools: ", some Python", ", mostly in TypeScript".
_MORE_TOOLS = re.compile(
    r"(?:(?:and|also|plus|some|a\s+bit\s+of|a\s+little|mostly|mainly|occasionally|sometimes)\s+)*"
    r"(?P<prep>(?:in|with|using|on)\s+)?(?P<list>[^,;]+?)\s*$"
)


def _read(text: str, scanned: str, guard: Guard, clause: Clause, state: Sentence) -> list[Reading]:
    start, end = clause.start, clause.end
    fillers = FILLERS.match(scanned, start, end)
    position = skip_space(scanned, fillers.end() if fillers else start, end)
    from_now_on = re.match(r"from\s+now\s+on[\s,]*", scanned[position:end])
    if from_now_on:
        position = skip_space(scanned, position + from_now_on.end(), end)
    if position >= end:
        return []
    subject = SUBJECT.match(scanned, position, end)
    if subject is None:
        return _subjectless(text, scanned, guard, clause, state, position)
    kind = subject.lastgroup or "i"
    state.subject = kind
    written = subject.group()
    if re.fullmatch(r"(?:i|we)['’]d", written):
        return []  # "I'd like a summary", "I'd prefer if you…": a wish or a request
    # After a colon, the rest of the sentence is what a request opening it asks for ("Translate: I
    # live in Oslo and I love cats"): no clause there stands on its own.
    independent = clause.boundary in ("comma", "conjunction") and ":" not in scanned[clause.sentence : start]
    if not guard.allows_clause(position, start, independent=independent):
        return []
    head = read_modality(scanned, subject.end(), end, kind, dropped=False)
    if head.blocked:
        return []
    head.copula = head.copula or bool(re.match(r"(?:i['’]m|im|i\s+am|we['’]re|we\s+are)$", written))
    head.plan = head.plan or bool(re.fullmatch(r"(?:i|we)(?:['’]ll|\s+will)", written))
    readings: list[Reading] = []
    if kind == "pair":
        readings.extend(read_pair(scanned, clause, subject))
    readings.extend(read_predicate(text, scanned, clause, head, state, from_now_on is not None))
    return readings


def _subjectless(
    text: str, scanned: str, guard: Guard, clause: Clause, state: Sentence, position: int
) -> list[Reading]:
    """A clause without "I" or "we": the user's things, kin or pets as subject, a verb whose subject is
    left out, or a bare phrase continuing a list about the user."""
    end = clause.end
    mine = state.subject in ("", "i", "we", "pair")
    possession = _POSSESSION.match(scanned, position, end)
    if possession:
        if not guard.allows(position):
            return []
        return _possession(text, scanned, clause, possession)
    household = HOUSEHOLD_SUBJECT.match(scanned, position, end)
    if household:
        state.subject = "-" if state.subject == "" else state.subject
        return read_household_event(text, scanned, clause, household.end()) if guard.allows(position) else []
    relied = _RELIED_ON.match(scanned, position, end)
    if relied and looks_like_tool(text, *relied.span("tool")) and guard.allows(position):
        return [reading("tool", relied.span("tool"), "Uses {}", clause)]
    taste = read_subject_taste(text, scanned, clause, position)
    if taste:
        return taste if guard.allows(position) else []
    word = WORD.match(scanned, position, end)
    if word is None:
        return []
    form = FORMS.get(word.group())
    if word.group() in ("been", "gonna"):
        form = (word.group(), "past")
    if form is None:
        if (
            mine
            and MODIFIER.match(scanned, position, end)
            and word.group() not in ("do", "does", "is", "are")
        ):
            # "not really a fan of jazz", "currently unemployed", "been single for years": the subject
            # and its verb "be" are left out.
            if not guard.allows(position):
                return []
            head = read_modality(scanned, position, end, state.subject or "i", dropped=True)
            if head.blocked:
                return []
            head.copula = True
            return read_predicate(text, scanned, clause, head, state, False)
        if mine and clause.boundary in ("comma", "colon", "conjunction"):
            bare = _bare_phrase(text, scanned, guard, clause, state, position)
            if bare:
                return bare
        if mine and clause.boundary in ("text", "sentence"):
            event = read_event_phrase(text, scanned, guard, clause, position)
            if event:
                return event
        if OTHER_SUBJECT.match(scanned, position, end):
            state.subject = "-"
        return []
    if not mine or (form[1] == "base" and clause.boundary not in ("comma", "conjunction")):
        return []
    # A verb opening its sentence is judged as the statement it is ("Had my defense last Friday"), not
    # as an inverted question ("had I…"), unless a subject follows it.
    inverted = form[1] == "base" or bool(PRONOUN_NEXT.match(scanned, word.end(), end))
    if not guard.allows_clause(position, clause.start, independent=not inverted, opening=inverted):
        return []
    head = read_modality(scanned, position, end, state.subject or "i", dropped=True)
    if head.blocked:
        return []
    return read_predicate(text, scanned, clause, head, state, False)


def _bare_phrase(
    text: str, scanned: str, guard: Guard, clause: Clause, state: Sentence, position: int
) -> list[Reading]:
    end = clause.end
    if not guard.allows(position):
        return []
    contrast = _CONTRAST.match(scanned, position, end)
    if contrast and state.subject in ("i", "we"):
        return [reading("preference", contrast.span("thing"), "Prefers {}", clause, "positive")]
    role = _TELEGRAPHIC_ROLE.match(scanned, position, end)
    if role and not FORMS.get(scanned[position : role.end("role")].split()[0]):
        readings = [
            reading(
                "job",
                (role.start("role"), role.end("employer") if role.group("employer") else role.end("role")),
                "Is {}",
                clause,
            )
        ]
        if role.group("place"):
            place = place_span(text, scanned, role.start("place"), role.end("place"))
            if place:
                readings.append(reading("residence", place, "Based in {}", clause))
        return readings
    more = _MORE_TOOLS.match(scanned, position, end)
    if more:
        items = list_items(scanned, more.span("list"))
        known = all(TECH_WORD.fullmatch(scanned[a:b]) for a, b in items)
        named = all(looks_like_tool(text, a, b) and len(text[a:b].split()) <= 2 for a, b in items)
        if items and ((state.last == "tool" and named) or (more.group("prep") and known)):
            return [reading("tool", item, "Uses {}", clause) for item in items]
    return []


def _possession(text: str, scanned: str, clause: Clause, match: re.Match[str]) -> list[Reading]:
    end = clause.end
    if match.group("home"):
        place = place_span(text, scanned, match.end(), end)
        if place and text[place[0]].isupper():
            return [reading("residence", place, "Lives in {}", clause)]
        return []
    if match.group("job"):
        span = thing_span(scanned, match.end(), end)
        return [reading("job", span, "Job: {}", clause)] if span else []
    if match.group("device"):
        article = re.match(r"(?:an?|the)\s+", scanned[match.end() : end])
        at = match.end() + (article.end() if article else 0)
        running = re.search(r"\s(?:running|on|with)\s+", scanned[at:end])
        device_end = at + running.start() if running else end
        readings = []
        device = thing_span(scanned, at, device_end)
        if device and looks_like_tool(text, *device):
            readings.append(reading("tool", device, "Uses {}", clause))
        if running:
            system = thing_span(scanned, at + running.end(), end)
            if system and looks_like_tool(text, *system):
                readings.append(reading("tool", system, "Uses {}", clause))
        return readings
    if match.group("built"):
        tools = read_tools(text, scanned, clause, match.end(), end, "Uses {}")
        return [tool for tool in tools if looks_like_tool(text, tool.start, tool.end)]
    if re.search(r"(?:works|lives)\s+in\s+$", match.group()):
        # "the whole team works in Figma", not "… works in London".
        tool = thing_span(scanned, match.end(), end)
        if tool is None or not TECH_WORD.fullmatch(scanned[tool[0] : tool[1]]):
            return []
    tools = read_tools(text, scanned, clause, match.end(), end, "Uses {}")
    if match.group().rstrip().endswith(" on"):
        # "our office is on Main Street": an address, not a platform.
        return [tool for tool in tools if not _ADDRESS.search(scanned, tool.start, tool.end)]
    return tools


# The last word of an address.
_ADDRESS = re.compile(r"(?:street|st|road|rd|avenue|ave|lane|boulevard|blvd|floor|square|way|drive|campus)$")
_REFUSED = re.compile(r"(?:please\s+|pls\s+|and\s+)?no\s+(?:more\s+)?(?=[a-z])")


def _preference_object(scanned: str, clause: Clause) -> tuple[int, int] | None:
    """What the clause likes or dislikes, whoever its subject, or refuses ("please no emojis"): the
    antecedent of a later "it" or "them"."""
    refused = _REFUSED.match(scanned, clause.start, clause.end)
    if refused:
        span = thing_span(scanned, refused.end(), clause.end)
        return span if span and not POINTER_OBJECT.match(scanned, span[0]) else None
    for word in WORD.finditer(scanned, clause.start, clause.end):
        lemma = FORMS.get(word.group(), ("", ""))[0]
        if lemma in LIKING_VERBS:
            span = thing_span(scanned, skip_space(scanned, word.end(), clause.end), clause.end)
            if span and not POINTER_OBJECT.match(scanned, span[0]):
                return span
            return None
    return None
